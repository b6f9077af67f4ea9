"""The command line a report records (`run.argv`) is the one its command was given: `main(argv)`
called in-process (the pytest plugin, a script, a test) records `argv`, never the host process's
own `sys.argv` (a report written through the pytest plugin recorded pytest's arguments, and
`replay` redacted its token from the wrong list)."""

from __future__ import annotations

import contextlib
import io
import json

from scoreboard.cli.main import main


def _suite(folder) -> None:
    (folder / "m.py").write_text("def f(input):\n    return input\n")
    (folder / "cases.jsonl").write_text('{"id": "a", "input": "x", "expected": "x"}\n')
    (folder / "suite.yaml").write_text('cases: cases.jsonl\nsubject: "python:m:f"\ngraders: [exact]\n')


def test_a_report_written_in_process_records_the_arguments_of_its_call(tmp_path, monkeypatch):
    _suite(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SCOREBOARD_STORE", "none")
    monkeypatch.setattr("sys.argv", ["host-program", "--host-flag", "host-secret"])
    given = ["run", "suite.yaml", "--no-progress", "--output", "r.json", "--format", "json"]
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(given) == 0
        assert main(["rescore", "r.json", "--output", "again.json", "--format", "json"]) == 0
    recorded = json.loads((tmp_path / "r.json").read_text())["run"]["argv"]
    assert recorded == given  # as `python -m scoreboard run ...` records its sys.argv[1:]
    again = json.loads((tmp_path / "again.json").read_text())["run"]["argv"]
    assert again == ["rescore", "r.json", "--output", "again.json", "--format", "json"]
