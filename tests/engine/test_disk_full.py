"""A disk that fills up during a run (here: a file-size limit, RLIMIT_FSIZE, which fails a
write with EFBIG as a full disk fails it with ENOSPC).

- before anything runs (run.json): exit 2, one line, no run folder left behind;
- mid-run (the attempt log): the line being written is cut back off, no later request is sent,
  exit 2 with one line saying how to finish, and `--resume` (with room again) completes the run
  with every attempt once and a report `verify` accepts;
- the ledger never sends a request whose pending record could not be logged.
"""

from __future__ import annotations

import errno
import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from scoreboard.engine import attemptlog
from scoreboard.engine.attemptlog import AttemptLog
from scoreboard.engine.ledger import Budget, Ledger
from scoreboard.errors import BudgetExceeded, LogWriteError

ROOT = Path(__file__).resolve().parents[2]
CASES = 2000


def cli(cwd: Path, *args: str, file_limit: int | None = None) -> subprocess.CompletedProcess:
    def limit() -> None:
        if file_limit:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG)
            resource.setrlimit(resource.RLIMIT_FSIZE, (file_limit, file_limit))

    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run([sys.executable, "-m", "scoreboard", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300, check=False, preexec_fn=limit)


@pytest.fixture
def work(tmp_path: Path) -> Path:
    with open(tmp_path / "cases.jsonl", "w") as handle:
        for i in range(CASES):
            handle.write(json.dumps({"id": f"c{i}", "input": "x" * 200, "expected": "x"}) + "\n")
    return tmp_path


def run_args(*extra: str) -> list[str]:
    return ["run", "--cases", "cases.jsonl", "--subject", "mock", "--output-dir", "out", "--no-progress",
            "--store", "none", *extra]


def errors(done: subprocess.CompletedProcess) -> list[str]:
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr[-2000:]
    return [line for line in done.stderr.splitlines() if line.startswith("scoreboard: error:")]


def test_a_run_that_cannot_write_its_run_file_leaves_nothing(work):
    done = cli(work, *run_args(), file_limit=100_000)  # run.json (the plan of 2,000 cases) is larger
    assert done.returncode == 2, done.stderr[-2000:]
    (line,) = errors(done)
    assert "run.json: the run could not be started (File too large); nothing was run" in line
    assert list((work / "out").rglob("*.json*")) == []
    assert not any(p.is_dir() and p.parent.name == "cases" for p in (work / "out").rglob("*"))


def test_a_log_that_fills_up_stops_the_run_and_resume_finishes_it(work):
    done = cli(work, *run_args(), file_limit=1_000_000)  # run.json fits; the log does not
    assert done.returncode == 2, done.stderr[-2000:]
    (line,) = errors(done)
    (folder,) = [p for p in (work / "out" / "cases").iterdir() if p.is_dir()]
    assert f"finish with scoreboard run --resume out/cases/{folder.name}" in line
    log = (folder / "attempts.jsonl").read_bytes()
    assert 0 < len(log) <= 1_000_000 and log.endswith(b"\n")  # only whole lines: the torn one cut off
    logged = [json.loads(raw) for raw in log.splitlines()]
    attempts = [r for r in logged if "case_id" in r]
    assert 0 < len(attempts) < CASES
    resumed = cli(work, "run", "--resume", str(folder.relative_to(work)), "--no-progress", "--store", "none")
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    report = json.loads(folder.with_suffix(".json").read_text())
    assert report["run"]["status"] == "completed"
    assert sorted(a["case_id"] for a in report["attempts"]) == sorted(f"c{i}" for i in range(CASES))
    verified = cli(work, "verify", str(folder.with_suffix(".json").relative_to(work)))
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_a_torn_line_is_cut_back_off(tmp_path, monkeypatch):
    log = AttemptLog(tmp_path / "attempts.jsonl")
    log.append({"case_id": "a", "status": "passed"})
    before = (tmp_path / "attempts.jsonl").read_bytes()
    real_write = os.write
    calls = []

    def short_then_full(fd, data):
        calls.append(len(data))
        if len(calls) == 1:
            return real_write(fd, bytes(data[:7]))  # part of the line lands
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(attemptlog.os, "write", short_then_full)
    with pytest.raises(LogWriteError, match="could not be written .No space left on device."):
        log.append({"case_id": "b", "status": "passed", "output": "y" * 100})
    monkeypatch.setattr(attemptlog.os, "write", real_write)
    assert (tmp_path / "attempts.jsonl").read_bytes() == before
    log.append({"case_id": "c", "status": "passed"})  # room again: the next line is whole
    assert [json.loads(x)["case_id"] for x in (tmp_path / "attempts.jsonl").read_bytes().splitlines()] == ["a", "c"]


class _FullLog:
    def append(self, record: dict) -> tuple[int, int]:
        raise LogWriteError("the attempt log x could not be written (No space left on device)")


def test_a_request_whose_pending_record_cannot_be_logged_is_not_sent():
    ledger = Ledger(Budget(max_requests=5), _FullLog())
    with pytest.raises(BudgetExceeded, match="the run stopped .the attempt log x could not be written"):
        ledger.reserve(("c1", "a", 0))
    assert ledger.sent == 0 and ledger.halted
    assert ledger.by_attempt.get(("c1", "a", 0), 0) == 0
    with pytest.raises(BudgetExceeded, match="no later request is sent"):
        ledger.reserve(("c2", "a", 0))
