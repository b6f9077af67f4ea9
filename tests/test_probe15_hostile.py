"""Probe 15: hostile report and record files given back to scoreboard, from the outside.

Each test runs scoreboard's CLI (in-process; the viewer as `python -m scoreboard`) on files in tmp_path (no network, no fixed port) and
checks the answer a user sees: a one-line error naming the file and the field with exit 1, or a
rendering that spells what a terminal would act on; never a traceback, never a refusal of what
scoreboard itself wrote.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.cli_inprocess import run_cli

ROOT = Path(__file__).resolve().parent.parent
ESC_NAME = "v\x1b]0;pwned\x07\u202e"


def sb(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    """`python -m scoreboard ARGS` in-process (what a command says, not the process: each
    subprocess spent about 0.7 s of CPU importing); the viewer below stays a real process."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "SCOREBOARD_STORE": "none"}
    return run_cli(args, cwd, env)


def _suite(folder: Path, variants: dict | None = None) -> Path:
    (folder / "echo.py").write_text("def answer(text):\n    return text\n")
    (folder / "cases.jsonl").write_text('{"id": "a", "input": "hi", "expected": "hi"}\n'
                                        '{"id": "b", "input": "yo", "expected": "hi"}\n')
    suite = {"name": "s", "cases": "cases.jsonl", "subject": "python:echo:answer", "graders": ["contains"],
             "variants": variants or {"v1": {}, "v2": {}}}
    (folder / "suite.json").write_text(json.dumps(suite))
    return folder / "suite.json"


def _run(folder: Path, output: str, variants: dict | None = None) -> Path:
    _suite(folder, variants)
    done = sb(folder, "run", "suite.json", "--no-progress", "--output", output, "--format", "json")
    assert done.returncode == 0, done.stdout + done.stderr
    return folder / f"{output}.json"


def _no_raw_controls(text: str) -> None:
    assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text, text


def test_store_import_takes_a_report_whose_variant_name_scoreboard_itself_accepted(tmp_path):
    """A suite may name a variant with an escape (it is spelt wherever it is printed), and the run
    records it in the store live; `store import` of that same report refused it ('holds a control
    character, which no report scoreboard writes holds'), so the run could not be back-filled."""
    _run(tmp_path, "rep", {ESC_NAME: {}, "plain": {}})
    done = sb(tmp_path, "store", "import", "rep.json", "--store", "h.sqlite")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 stored" in done.stdout
    _no_raw_controls(done.stdout + done.stderr)
    listed = sb(tmp_path, "history", "--store", "h.sqlite")
    assert listed.returncode == 0, listed.stderr
    _no_raw_controls(listed.stdout)
    assert "v\\x1b]0;pwned\\x07\\u202e" in listed.stdout
    verified = sb(tmp_path, "store", "verify", "rep.json", "--store", "h.sqlite")
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_store_import_takes_a_report_whose_run_id_holds_an_escape(tmp_path):
    """`--output NAME` names the run; a name holding ESC was run and written, then refused by
    `store import` as a report scoreboard never writes."""
    _run(tmp_path, "r\x1b[31mx")
    done = sb(tmp_path, "store", "import", "r\x1b[31mx.json", "--store", "h.sqlite")
    assert done.returncode == 0, done.stdout + done.stderr
    _no_raw_controls(done.stdout + done.stderr)


def test_an_error_line_naming_a_variant_spells_its_escapes(tmp_path):
    """`export turns` on a report of two variants lists them in its error: the names reached the
    terminal raw (ESC ] 0 ; ... BEL set the window title, U+202E reversed the rest of the line)."""
    report = _run(tmp_path, "rep", {ESC_NAME: {}, "plain": {}})
    done = sb(tmp_path, "export", "turns", report.name, "--output", "turns.json")
    assert done.returncode == 1, done.stdout + done.stderr
    (line,) = done.stderr.strip().splitlines()
    _no_raw_controls(line)
    assert "field 'variant'" in line and "v\\x1b]0;pwned\\x07\\u202e" in line


def test_import_comparisons_prints_the_variants_it_made_spelt(tmp_path):
    """The imported variant is named provider/model from the comparisons file: the line saying
    what was imported printed both raw."""
    report = _run(tmp_path, "rep")
    case = json.loads(report.read_text())["plan"]["cases"][0]
    entry = {"case_id": "a", "input_hash": case["input_hash"], "provider": "p\x1b[31m", "model": "m\u202e",
             "model_version": "1", "settings": {}, "output": "hi", "generated_at": "2026-01-01T00:00:00Z"}
    (tmp_path / "comp.json").write_text(json.dumps({"entries": [entry]}))
    done = sb(tmp_path, "import", "comparisons", report.name, "comp.json", "--output", "new.json")
    assert done.returncode == 0, done.stdout + done.stderr
    _no_raw_controls(done.stdout + done.stderr)
    assert "as p\\x1b[31m/m\\u202e;" in done.stdout
    stored = sb(tmp_path, "store", "import", "new.json", "--store", "h.sqlite")
    assert stored.returncode == 0, stored.stdout + stored.stderr


def test_a_whole_number_of_thousands_of_digits_is_named_by_its_field(tmp_path):
    """A latency of 5,000 digits: every command said 'Exceeds the limit (4300 digits) for integer
    string conversion ... use sys.set_int_max_str_digits() to increase the limit', a Python hint
    with no field; now the field and what is wrong."""
    report = _run(tmp_path, "rep")
    text = report.read_text()
    assert '"latency_ms":' in text
    head, tail = text.split('"latency_ms":', 1)
    tail = tail[tail.index(","):]
    (tmp_path / "huge.json").write_text(head + '"latency_ms":' + "9" * 5000 + tail)
    for args in (["verify", "huge.json"], ["report", "huge.json"], ["compare", "huge.json", report.name],
                 ["rescore", "huge.json", "--output", "new.json"],
                 ["store", "import", "huge.json", "--store", "h.sqlite"]):
        done = sb(tmp_path, *args)
        assert done.returncode == 1, (args, done.stdout + done.stderr)
        (line,) = [x for x in (done.stdout + done.stderr).splitlines() if "huge.json" in x and "digits" in x]
        assert "field 'attempts[0].measurements.latency_ms'" in line, line
        assert "5,000 digits" in line and "set_int_max_str_digits" not in line, line
        assert "Traceback" not in done.stderr


def test_compare_refuses_a_score_that_is_not_a_finite_number(tmp_path):
    """`report` refuses NaN or an infinity (no report scoreboard writes holds one); `compare` took
    it and printed 'difference +nan ... could detect differences of nan points', and `--json`
    printed NaN and Infinity, which no JSON reader takes."""
    report = _run(tmp_path, "rep")
    data = json.loads(report.read_text())
    for attempt in data["attempts"]:
        attempt["score"] = 0.5
    (tmp_path / "scored.json").write_text(json.dumps(data))
    for bad in ("NaN", "1e400"):
        data["attempts"][0]["score"] = 0.25
        (tmp_path / "bad.json").write_text(json.dumps(data).replace('"score": 0.25', f'"score": {bad}', 1))
        for args in (["compare", "bad.json", "scored.json"], ["compare", "scored.json", "bad.json", "--json"]):
            done = sb(tmp_path, *args)
            assert done.returncode == 1, (bad, args, done.stdout)
            assert "nan" not in done.stdout.lower() and "Infinity" not in done.stdout, done.stdout
            (line,) = done.stderr.strip().splitlines()
            assert "bad.json" in line and "field 'attempts[0].score'" in line and "not a finite number" in line
    ok = sb(tmp_path, "compare", "scored.json", "scored.json")
    assert ok.returncode == 0, ok.stderr


def _one_long_output(source: Path, target: Path, chars: int) -> None:
    """`source` with its first attempt's output text `chars` characters long (hashes not redone:
    the store keeps what a report says)."""
    text = source.read_text()
    head, tail = text.split('"text":"hi"', 1)
    with open(target, "w") as handle:
        handle.write(head + '"text":"')
        for _ in range(chars >> 20):
            handle.write("a" * (1 << 20))
        handle.write('"' + tail)


def test_store_import_reads_one_long_output_in_few_reads(tmp_path, monkeypatch):
    """A report over 32 MB is streamed; yajl scans the part of a string it holds again with each
    64 KB chunk, so one long output took time squared in its length (64 MB: 47 s, 256 MB: over
    five minutes, a 1 GB output never ended). Chunks now grow while the parser gives nothing back."""
    from scoreboard.store import reportfile
    from scoreboard.store.reportfile import ReportFile

    report = _run(tmp_path, "rep")
    big = tmp_path / "big.json"
    _one_long_output(report, big, 40 << 20)
    assert big.stat().st_size > reportfile.WHOLE_BYTES  # the streamed path
    reads: list[int] = []
    real_open = open

    class Counting:
        def __init__(self, handle):
            self.handle = handle

        def read(self, size=-1):
            data = self.handle.read(size)
            reads.append(len(data))
            return data

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.handle.close()

    monkeypatch.setattr(reportfile, "open", lambda path, mode="r": Counting(real_open(path, mode)), raising=False)
    loaded = ReportFile(big)
    head_reads = len(reads)
    attempts = list(loaded.attempts())
    assert len(attempts[0]["output"]["text"]) == 40 << 20 and len(attempts) == 4
    assert loaded.head["plan"]["cases"][0]["id"] == "a"
    # 40 MB in 64 KB chunks is 640 reads a pass, each scanning the string so far again
    assert head_reads < 40 and len(reads) - head_reads < 40, (head_reads, len(reads))


def test_store_import_of_a_report_too_large_for_memory_is_the_reports_error(tmp_path, monkeypatch, capsys):
    """A report holding more than the memory available (one huge output) was 'the store failed:
    MemoryError: ' with exit 2, blaming the store; it is the file's problem: exit 1, one line."""
    from scoreboard.cli.main import main
    from scoreboard.store.history import HistoryStore

    report = _run(tmp_path, "rep")
    monkeypatch.chdir(tmp_path)

    def exhausted(self, path, **kw):
        raise MemoryError

    monkeypatch.setattr(HistoryStore, "store_report", exhausted)
    assert main(["store", "import", report.name, "--store", "h.sqlite"]) == 1
    err = capsys.readouterr().err
    (line,) = err.strip().splitlines()
    assert "rep.json" in line and "too large to read in the memory available" in line and "store failed" not in line


def test_the_viewer_answers_a_run_whose_stored_report_path_holds_a_nul(tmp_path):
    """A hand-edited store row naming its report 'r\\x00ep.json': the run's page was a 500 (and
    a traceback on the viewer's terminal) from `stat` refusing the NUL; the report is missing."""
    import re
    import sqlite3
    import urllib.request

    report = _run(tmp_path, "rep")
    assert sb(tmp_path, "store", "import", report.name, "--store", "h.sqlite").returncode == 0
    with sqlite3.connect(tmp_path / "h.sqlite") as conn:
        (key,) = conn.execute("SELECT key FROM runs").fetchone()
        conn.execute("UPDATE runs SET report_path = ?", (str(tmp_path / "r\x00ep.json"),))
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "SCOREBOARD_STORE": "none"}
    server = subprocess.Popen([sys.executable, "-m", "scoreboard", "view", "--store", "h.sqlite", "--port", "0"],
                              cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = re.search(r"http://127\.0\.0\.1:\d+", server.stdout.readline()).group()
        with urllib.request.urlopen(f"{url}/api/runs/{key}", timeout=60) as answer:
            assert answer.status == 200
            run = json.loads(answer.read())
        assert run["report_state"] == "missing", run
    finally:
        server.terminate()
        _, err = server.communicate(timeout=60)
    assert "Traceback" not in err, err


def test_score_refuses_an_export_holding_a_key_twice(tmp_path):
    """A Codex line `{"text": "ok", "text": "dup"}`: the last value was taken in silence (the
    run failed `--expect-contains ok`); JSON readers disagree on which counts, so the export is
    refused naming its line and the key, as a report holding one is."""
    started = '{"type":"thread.started","thread_id":"t"}\n'
    item = '{"type":"item.completed","item":{"id":"i","type":"agent_message","text":"ok","text":"dup"}}\n'
    done_line = '{"type":"turn.completed","usage":{"input_tokens":1,"output_tokens":2}}\n'
    (tmp_path / "run.jsonl").write_text(started + item + done_line)
    claude = {"type": "result", "subtype": "success", "is_error": False, "session_id": "s", "result": "ok",
              "duration_ms": 5, "num_turns": 1, "total_cost_usd": 0.01}
    (tmp_path / "claude.json").write_text(json.dumps(claude)[:-1] + ', "result": "dup"}')
    for name, line, field in (("run.jsonl", "run.jsonl:2", "item.text"), ("claude.json", "claude.json", "result")):
        done = sb(tmp_path, "score", name, "--expect-contains", "ok", "--output-dir", "out")
        assert done.returncode == 1, done.stdout + done.stderr
        (err,) = done.stderr.strip().splitlines()
        assert line in err and f"field '{field}'" in err and "twice" in err, err
        assert not (tmp_path / "out").exists()


def test_paths_with_escapes_are_spelt_where_commands_echo_them(tmp_path):
    """A report file named with ESC ] 0 ; ... BEL (a shared folder, a shell glob over it): `store
    verify RUN` printed the path the store's row names raw, and `report --output`, `rescore` and
    `compare --output` echoed theirs raw."""
    import shutil
    import sqlite3

    report = _run(tmp_path, "rep")
    name = "e\x1b]0;t\x07\u202e"
    shutil.copy(report, tmp_path / f"{name}.json")
    assert sb(tmp_path, "store", "import", f"{name}.json", "--store", "h.sqlite").returncode == 0
    with sqlite3.connect(tmp_path / "h.sqlite") as conn:
        (key,) = conn.execute("SELECT key FROM runs").fetchone()
    runs = [("store", "verify", key, "--store", "h.sqlite"),
            ("report", f"{name}.json", "--output", f"{name}.md"),
            ("rescore", f"{name}.json", "--output", f"r{name}.json"),
            ("compare", f"{name}.json", report.name, "--output", f"c{name}.html")]
    for args in runs:
        done = sb(tmp_path, *args)
        assert done.returncode == 0, (args, done.stdout + done.stderr)
        _no_raw_controls(done.stdout + done.stderr)
        assert "e\\x1b]0;t\\x07\\u202e" in done.stdout, (args, done.stdout)


def test_history_lists_a_running_run_whose_stored_folder_holds_a_nul(tmp_path):
    """A hand-edited store row of a running run on this machine whose folder holds a NUL:
    `history` ended in 'internal error: ValueError: embedded null byte' (exit 2) while asking
    whether the run's folder was still held; whether it runs cannot be told, so it is shown as
    recorded."""
    import socket
    import sqlite3

    report = _run(tmp_path, "rep")
    assert sb(tmp_path, "store", "import", report.name, "--store", "h.sqlite").returncode == 0
    with sqlite3.connect(tmp_path / "h.sqlite") as conn:
        conn.execute("UPDATE runs SET status = 'running', folder = ?, host = ?",
                     (str(tmp_path / "r\x00ep"), socket.gethostname()))
    done = sb(tmp_path, "history", "--store", "h.sqlite", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    (run,) = json.loads(done.stdout)["runs"]
    assert run["status"] == "running" and "recorded_status" not in run
