"""kill -9 in the middle of a run leaves an attempt log of complete lines only."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures" / "core"
KEYS = {"case_id", "variant", "run", "status", "grades"}


def test_kill_9_leaves_only_complete_lines(tmp_path):
    shutil.copy(FIXTURES / "core_subjects.py", tmp_path)
    rows = [{"id": f"case-{i:03d}", "input": f"text {i} " + "é" * (i % 7), "expected": f"text {i} " + "é" * (i % 7)}
            for i in range(300)]
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                                          encoding="utf-8")
    (tmp_path / "suite.json").write_text(json.dumps({
        "name": "crash", "cases": "cases.jsonl", "concurrency": 8, "formats": ["json"],
        "variants": {"slow": {"subject": "python:core_subjects:slow"},
                     "jitter": {"subject": "python:core_subjects:jitter"}}}))
    proc = subprocess.Popen([sys.executable, "-m", "scoreboard", "run", "suite.json", "--output-dir", "out",
                             "--no-progress"], cwd=tmp_path, env=dict(os.environ),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        log = None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            found = list((tmp_path / "out").glob("crash/*/attempts.jsonl"))
            if found and found[0].stat().st_size and found[0].read_bytes().count(b"\n") >= 40:
                log = found[0]
                break
            assert proc.poll() is None, f"run ended before it could be killed: {proc.stderr.read()!r}"
            time.sleep(0.01)
        assert log is not None, "the attempt log never reached 40 lines"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL

    data = log.read_bytes()
    assert data.endswith(b"\n"), "torn last line"
    lines = data.decode("utf-8").split("\n")[:-1]
    assert 40 <= len(lines) < 600, len(lines)
    seen = set()
    for line in lines:
        record = json.loads(line)
        assert KEYS <= set(record), record
        assert record["status"] == "passed", record
        assert record["grades"] and record["grades"][0]["passed"] is True
        key = (record["case_id"], record["variant"], record["run"])
        assert key not in seen
        seen.add(key)

    from scoreboard.engine.attemptlog import read_attempt_log

    assert len(read_attempt_log(log)) == len(lines)
