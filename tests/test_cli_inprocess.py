"""tests/cli_inprocess.run_cli behaves as the process it stands for: a user module of the same
name another test left imported does not carry over into a call (CI: test_gates' subject read
its environment once, at import, and a second run under another environment reused it), and a
call made where a loop runs (a module's Playwright browser) runs in a thread of its own."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import sys

from scoreboard.cli.main import main
from tests.cli_inprocess import run_cli

SUBJECT = 'import os\nWRONG = os.environ.get("WRONG", "")\n\ndef answer(text):\n    return "wrong" if text == WRONG else text\n'


def _suite(folder):
    (folder / "subj.py").write_text(SUBJECT)
    (folder / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "input": f"q{i}", "expected": f"q{i}"}) + "\n"
                                                for i in range(4)))


def _rate(folder, out: str, wrong: str) -> float:
    proc = run_cli(["run", "--cases", "cases.jsonl", "--subject", "python:subj:answer", "--name", "g",
                    "--output-dir", out, "--no-progress", "--format", "json"], folder,
                   {**os.environ, "WRONG": wrong, "SCOREBOARD_STORE": "none"})
    assert proc.returncode in (0, 2), proc.stderr
    (path,) = (folder / out / "g").glob("*.json")
    (variant,) = json.loads(path.read_text())["summary"]["variants"].values()
    return variant["pass_rate"]


def test_a_module_of_the_same_name_left_imported_by_another_test_never_carries_over(tmp_path, monkeypatch):
    other = tmp_path / "other"
    other.mkdir()
    _suite(other)
    # another test's in-process run, not through run_cli: its folder's subj.py stays imported
    monkeypatch.setenv("SCOREBOARD_STORE", "none")
    monkeypatch.chdir(other)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(["run", "--cases", "cases.jsonl", "--subject", "python:subj:answer", "--name", "g",
                     "--output-dir", "out", "--no-progress", "--format", "json"]) == 0
    left = sys.modules["subj"]
    here = tmp_path / "here"
    here.mkdir()
    _suite(here)
    assert _rate(here, "none", "") == 1.0
    assert _rate(here, "one", "q0") == 0.75  # read afresh: the environment of this call
    assert _rate(here, "two", "") == 1.0
    assert sys.modules["subj"] is left  # as it was before the calls, as a process would leave it
    sys.modules.pop("subj", None)  # gone, as after the other test's process


def test_a_call_where_a_loop_runs_runs_in_a_thread_of_its_own(tmp_path):
    _suite(tmp_path)

    async def inside_a_loop():
        return _rate(tmp_path, "looped", "q3")  # `run` calls asyncio.run itself

    assert asyncio.run(inside_a_loop()) == 0.75
