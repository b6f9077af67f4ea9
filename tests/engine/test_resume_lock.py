"""A run holds its run folder while it runs: `run --resume` of a run still going in another
process (or a second resume at once) is refused in one line, before it reads or cuts the attempt
log. Both used to run the same attempts (paid twice) and append to one log, and the resume cut
the live run's last line as 'torn'. A run killed with kill -9 holds nothing: it resumes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

#: each answer takes 0.3 s while the file `hold` beside it exists, none once a test removes it
#: (the rest of a run, or its resume, then takes no time to finish)
SLOW = """import pathlib, time
def answer(input, skill, run, params):
    if pathlib.Path(__file__).with_name("hold").exists():
        time.sleep(0.3)
    return input
"""


def project(tmp_path: Path, n: int = 16) -> Path:
    (tmp_path / "slow.py").write_text(SLOW)
    (tmp_path / "hold").touch()
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "input": f"q{i}", "expected": f"q{i}"})
                                                  + "\n" for i in range(n)))
    (tmp_path / "suite.yaml").write_text('name: held\ncases: cases.jsonl\nsubject: {type: python, function: '
                                         '"slow:answer", thread: true}\ngraders: [exact]\nconcurrency: 1\n')
    return tmp_path


def scoreboard(cwd: Path, *args: str, background: bool = False):
    env = {**os.environ, "SCOREBOARD_STORE": "none"}
    argv = [sys.executable, "-m", "scoreboard", *args]
    if background:
        return subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def wait_for_lines(log: Path, n: int, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if log.exists() and log.read_bytes().count(b"\n") >= n:
            return
        time.sleep(0.05)
    raise AssertionError(f"the run wrote fewer than {n} lines to {log}")


def attempts(log: Path) -> list[str]:
    rows = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    return [r["case_id"] for r in rows if "case_id" in r and r.get("status")]


def test_a_resume_of_a_run_still_running_is_refused_and_takes_nothing(tmp_path):
    # 40 cases of 0.3 s one at a time: the run outlasts the resume's start on a loaded machine
    # (with 16 it ended first once, under 8 test workers)
    work = project(tmp_path, 40)
    first = scoreboard(work, "run", "suite.yaml", "--output", "r.json", "--format", "json", "--no-progress",
                       background=True)
    try:
        wait_for_lines(work / "r" / "attempts.jsonl", 2, first)
        before = (work / "r" / "attempts.jsonl").read_bytes()
        done = scoreboard(work, "run", "--resume", "r")
        assert done.returncode == 1, done.stdout + done.stderr
        (line,) = done.stderr.strip().splitlines()
        assert "still running" in line and "--resume" in line and str(work / "r") in line, line
        # it read nothing into the log and cut nothing off it
        assert (work / "r" / "attempts.jsonl").read_bytes().startswith(before)
    finally:
        (work / "hold").unlink()
        out, err = first.communicate(timeout=120)
    assert first.returncode == 0, out + err
    ids = attempts(work / "r" / "attempts.jsonl")
    assert sorted(ids) == sorted(f"c{i}" for i in range(40))  # each attempt ran once
    report = json.loads((work / "r.json").read_text())
    assert report["summary"]["variants"]["answer"]["passed"] == 40


def test_a_run_killed_with_kill_9_holds_nothing_and_resumes(tmp_path):
    work = project(tmp_path)
    first = scoreboard(work, "run", "suite.yaml", "--output", "r.json", "--format", "json", "--no-progress",
                       background=True)
    wait_for_lines(work / "r" / "attempts.jsonl", 3, first)
    first.send_signal(signal.SIGKILL)
    first.communicate(timeout=60)
    (work / "hold").unlink()
    done = scoreboard(work, "run", "--resume", "r")
    assert done.returncode == 0, done.stdout + done.stderr
    ids = attempts(work / "r" / "attempts.jsonl")
    assert sorted(set(ids)) == sorted(f"c{i}" for i in range(16)) and len(ids) == 16
    # and once it has ended, a resume of the completed run is answered as before
    again = scoreboard(work, "run", "--resume", "r")
    assert again.returncode == 0, again.stdout + again.stderr


def test_a_reader_asking_whether_a_run_is_alive_does_not_refuse_its_resume(tmp_path):
    """`scoreboard history` and the viewer take the lock for an instant to tell a live run from a
    dead one; a resume that starts in that instant waits it out instead of refusing."""
    import fcntl
    import threading

    import pytest

    from scoreboard.errors import ConfigError
    from scoreboard.store.files import RunFolder

    folder = RunFolder(tmp_path / "run")
    folder.stem.mkdir()

    def holding(seconds: float, taken: threading.Event) -> None:
        fd = os.open(folder.log_path, os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        taken.set()
        time.sleep(seconds)
        os.close(fd)

    taken = threading.Event()
    reader = threading.Thread(target=holding, args=(0.15, taken))
    reader.start()
    taken.wait()
    fd = folder.hold()  # the reader lets go within its instant: held, not refused
    assert fd is not None
    os.close(fd)
    reader.join()
    # a holder that keeps it (a live run) is refused, in one line
    taken = threading.Event()
    live = threading.Thread(target=holding, args=(2.5, taken))
    live.start()
    taken.wait()
    with pytest.raises(ConfigError, match="still running in another process"):
        folder.hold()
    live.join()
