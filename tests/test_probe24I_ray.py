"""Probe 24I: --executor ray used as a team scaling out would, against loopback servers: the
checkpoints a Ray run writes while it runs, kill -9 of the driver then --resume on Ray, and
pairwise judging with the key in no Ray log."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.servers.fake_provider import FakeProvider, extract_prompt

pytest.importorskip("ray", reason="Ray is an optional extra: pip install 'scoreboard[ray]'")

pytestmark = pytest.mark.slow
KEY = "sk-probe24I-9a8b7c6d5e4f3a2b"
#: each attempt (2 input tokens, 1 output) costs 0.003 USD
PRICE = {"input_per_mtok": 1000.0, "output_per_mtok": 2000.0}


def env() -> dict:
    return {**os.environ, "SB_24I_KEY": KEY, "RAY_USAGE_STATS_ENABLED": "0", "SCOREBOARD_STORE": "none"}


def write_suite(folder: Path, base_url: str, n: int, price: dict | None = None, **settings) -> None:
    cases = "".join(json.dumps({"id": f"c{i:03d}", "input": f"q{i:03d}", "expected": f"q{i:03d}"}) + "\n"
                    for i in range(n))
    (folder / "cases.jsonl").write_text(cases)
    subject = {"type": "openai", "base_url": base_url + "/v1", "model": "m", "api_key_env": "SB_24I_KEY",
               "retries": {"attempts": 2, "base_delay_s": 0.01, "max_delay_s": 0.02},
               **({"price": price} if price else {})}
    (folder / "suite.json").write_text(json.dumps({"name": "r", "cases": "cases.jsonl", "output_dir": "out",
                                                   "formats": ["json"], "subject": subject, "graders": ["exact"],
                                                   **settings}))


def scoreboard(folder: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "scoreboard", *args], cwd=folder, capture_output=True, text=True,
                          env=env(), timeout=timeout)


def start(folder: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "scoreboard", *args], cwd=folder, env=env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)


def kill_session(proc: subprocess.Popen) -> None:
    """kill -9 of the driver and of the Ray instance it started (its session)."""
    try:
        os.kill(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(30)
    for pid in subprocess.run(["pgrep", "-s", str(proc.pid)], capture_output=True, text=True).stdout.split():
        try:
            os.kill(int(pid), signal.SIGKILL)
        except ProcessLookupError:
            pass


def finished_in_log(folder: Path) -> int:
    logs = list((folder / "out" / "r").glob("*/attempts.jsonl"))
    return logs[0].read_bytes().count(b'"case_id"') if logs else 0


def test_a_ray_runs_checkpoint_counts_the_requests_its_attempts_made_and_verifies(tmp_path):
    """A checkpoint written while a Ray run runs counted no request (the driver's ledger only
    took the ledger service's counts back at the end): `requests.sent` 0 beside finished,
    billed attempts, and `scoreboard verify` refused it (the ledger spent less than the
    attempts measured)."""
    with FakeProvider(latency_ms=300) as srv:
        srv.set_default("chat", {"reply": lambda r: extract_prompt(r)})
        write_suite(tmp_path, srv.base_url, 80, price=PRICE, concurrency=4, checkpoint_every=2, checkpoint_seconds=1)
        proc = start(tmp_path, "run", "suite.json", "--no-progress", "--executor", "ray")
        checkpoint = None
        try:
            deadline = time.monotonic() + 240
            while time.monotonic() < deadline and checkpoint is None and proc.poll() is None:
                for path in (tmp_path / "out" / "r").glob("*.json") if (tmp_path / "out" / "r").exists() else []:
                    data = json.loads(path.read_text())
                    done = [a for a in data["attempts"] if a["status"] == "passed"]
                    if data["run"]["status"] == "running" and len(done) >= 8:
                        checkpoint = tmp_path / "checkpoint.json"
                        checkpoint.write_text(path.read_text())
                time.sleep(0.05)
        finally:
            kill_session(proc)
    assert checkpoint is not None, "no checkpoint with 8 finished attempts was written"
    data = json.loads(checkpoint.read_text())
    done = [a for a in data["attempts"] if a["status"] == "passed"]
    requests = data["requests"]
    assert requests["sent"] >= len(done) and requests["by_role"].get("subject", 0) >= len(done), requests
    assert requests["cost_known_usd"] >= 0.003 * len(done) - 1e-9, requests
    checked = scoreboard(tmp_path, "verify", str(checkpoint))
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_a_ray_run_on_its_own_local_instance_says_on_stderr_what_a_local_run_says(tmp_path):
    """Ray (2.5x on) turns token authentication on for a local instance it starts and warns so
    on the run's stderr ('Token authentication is enabled for this Ray cluster. Set
    RAY_AUTH_MODE=disabled to opt out'), advice to the user about a cluster they never started.
    The instance scoreboard starts keeps token authentication, without the warning."""
    home = tmp_path / "home"
    home.mkdir()
    with FakeProvider(latency_ms=2) as srv:
        srv.set_default("chat", {"reply": lambda r: extract_prompt(r)})
        outputs = {}
        for executor in ("local", "ray"):
            folder = tmp_path / executor
            folder.mkdir()
            write_suite(folder, srv.base_url, 6, concurrency=2)
            done = subprocess.run([sys.executable, "-m", "scoreboard", "run", "suite.json", "--no-progress",
                                   "--executor", executor], cwd=folder, capture_output=True, text=True,
                                  env={**env(), "HOME": str(home)}, timeout=300)
            assert done.returncode == 0, done.stderr
            outputs[executor] = done.stderr
    assert outputs["ray"] == outputs["local"], outputs["ray"]
    assert (home / ".ray" / "auth_token").is_file()  # the instance it started still had a token
