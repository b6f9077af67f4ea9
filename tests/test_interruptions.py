"""Property, from outside: a run interrupted at random moments (kill -9 of its process group,
SIGTERM, Ctrl+C) and resumed each time never sends more requests than its budget (counting
every request the provider saw across all the processes), ends with every planned attempt
exactly once, and leaves a report `verify` accepts. The moments are seeded, so a failure
reproduces."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.servers.fake_provider import FakeProvider

pytestmark = pytest.mark.slow

CASES, RUNS, VARIANTS = 40, 2, ("a", "b")


def _scoreboard(args: list[str], cwd: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "scoreboard", *args], cwd=cwd, env=dict(os.environ, K="dummy"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)


def _log_size(work: Path) -> int:
    return sum(p.stat().st_size for p in (work / "out" / "chaos").glob("*/attempts.jsonl"))


def _interrupt(proc: subprocess.Popen, sig: signal.Signals) -> tuple[int, str]:
    if sig == signal.SIGKILL:
        os.killpg(proc.pid, sig)
    else:
        proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    return proc.returncode, err.decode(errors="replace")


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_a_run_interrupted_and_resumed_again_and_again_keeps_its_budget_and_every_attempt(tmp_path, seed):
    rng = random.Random(seed)
    max_requests = rng.choice([None, 120, 150])
    with FakeProvider(latency_ms=20) as srv:
        (tmp_path / "cases.jsonl").write_text("".join(
            json.dumps({"id": f"c{i}", "input": f"w{i}", "expected": f"w{i}", "grader": "contains"}) + "\n"
            for i in range(CASES)))
        subject = {"type": "openai", "base_url": srv.base_url + "/v1", "model": "m", "api_key_env": "K",
                   "retries": {"attempts": 2, "base_delay_s": 0.01, "max_delay_s": 0.02}}
        (tmp_path / "suite.json").write_text(json.dumps({
            "name": "chaos", "cases": "cases.jsonl", "runs": RUNS, "concurrency": rng.choice([2, 8]),
            "subject": subject, "output_dir": "out", "formats": ["json"],
            "variants": {v: {"params": {"temperature": i}} for i, v in enumerate(VARIANTS)}}))
        first = ["run", "suite.json", "--no-progress"] + (["--max-requests", str(max_requests)] if max_requests else [])
        args, code = first, None
        for _ in range(4):
            before = _log_size(tmp_path)
            proc = _scoreboard(args, tmp_path)
            # interrupt once this process's run is under way: the attempt log grew
            # or, one time in three, while it starts (loading, opening its folder: before its handlers)
            early = rng.random() < 1 / 3
            deadline = time.monotonic() + 60
            while not early and time.monotonic() < deadline and proc.poll() is None \
                    and _log_size(tmp_path) <= before:
                time.sleep(0.01)
            if proc.poll() is not None:  # finished before it could be interrupted
                code = proc.wait()
                break
            time.sleep(rng.uniform(0.0, 0.4))
            sig = rng.choice([signal.SIGKILL, signal.SIGTERM, signal.SIGINT])
            code, err = _interrupt(proc, sig)
            if sig == signal.SIGKILL:
                assert code == -signal.SIGKILL
            elif not early:  # a graceful stop: the report says stopped, exit 2 (or the run had just finished;
                # a signal that lands while the interpreter shuts down, its handlers gone, ends it as the
                # signal's default does: the report is written by then, and a resume finds it complete;
                # a Ctrl+C after the run's handlers are gone and before the command returns: one line, 130)
                assert code in ((0, 2, -sig, 130) if sig == signal.SIGINT else (0, 2, -sig)), (sig, code, err)
            else:  # before the handlers: SIGTERM's default, or one line and 130 for Ctrl+C
                # (or SIGINT's default: before Python's own handler is in place, or in its start-up
                # before scoreboard's code runs; never a crash: test_ctrl_c_at_start.py)
                assert code in ((0, 2, -signal.SIGTERM) if sig == signal.SIGTERM else (0, 1, 2, 130, -signal.SIGINT)), \
                    (sig, code, err)
                assert "Traceback" not in err or code in (1, -signal.SIGINT), err  # Python itself, before scoreboard loaded
            folders = [p for p in (tmp_path / "out" / "chaos").iterdir() if p.is_dir()] \
                if (tmp_path / "out" / "chaos").is_dir() else []
            if not folders or not (folders[0] / "run.json").exists():  # stopped before it started
                for folder in folders:
                    shutil.rmtree(folder)
                args = first
                continue
            args = ["run", "--resume", str(folders[0])]
            code = None
        if code is None:  # the last interruption: finish it
            proc = _scoreboard(args, tmp_path)
            proc.communicate(timeout=300)
            code = proc.returncode
        seen = len(srv.requests_to("chat"))

    assert code in (0, 2), code
    (report_path,) = (tmp_path / "out" / "chaos").glob("*.json")
    report = json.loads(report_path.read_text())
    keys = [(a["case_id"], a["variant"], a["run"]) for a in report["attempts"]]
    assert len(keys) == len(set(keys)) == CASES * RUNS * len(VARIANTS)
    if max_requests is not None:
        assert seen <= max_requests, (seen, max_requests)
        assert report["requests"]["sent"] <= max_requests
    else:
        assert report["run"]["status"] == "completed", report["run"]
        assert {a["status"] for a in report["attempts"]} == {"passed"}
    assert report["requests"]["sent"] >= seen  # a request lost in flight counts as possibly sent, never less
    checked = subprocess.run([sys.executable, "-m", "scoreboard", "verify", str(report_path)], capture_output=True,
                             text=True, timeout=300, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
