"""--executor ray: a local Ray instance and a real two-node Ray cluster on 127.0.0.1, against
the loopback fake provider. The budget is never exceeded, a killed worker loses nothing,
resume works across executors, and a Ray run's report equals a local run's."""

from __future__ import annotations

import json
import os
import random
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.servers.fake_provider import FakeProvider, extract_prompt

ray = pytest.importorskip("ray", reason="Ray is an optional extra: pip install 'scoreboard[ray]'")

pytestmark = pytest.mark.slow
RAY = Path(sys.executable).with_name("ray")
RETRIES = {"attempts": 4, "base_delay_s": 0.01, "max_delay_s": 0.05}
KEY = "sk-ray-test-9f8e7d6c5b4a"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ray_env(token: str | None = None) -> dict:
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    if token is not None:
        env.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=token)
    return env


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A head and a second node on 127.0.0.1, one CPU each; stopped after the module."""
    temp = tmp_path_factory.mktemp("ray")
    short = Path(f"/tmp/sbray-{os.getpid()}")  # Ray's socket paths must stay short
    short.mkdir(exist_ok=True)
    token = secrets.token_hex(32)
    mark = f"SB_RAY_CLUSTER_{secrets.token_hex(8)}"
    env = {**ray_env(token), "SB_RAY_TEST_KEY": KEY, mark: "1"}
    port = free_port()
    address = f"127.0.0.1:{port}"
    common = ["--node-ip-address", "127.0.0.1", "--num-cpus", "1", "--disable-usage-stats"]
    head = subprocess.run([str(RAY), "start", "--head", "--port", str(port), "--include-dashboard", "false",
                           "--temp-dir", str(short), *common], env=env, capture_output=True, text=True, timeout=180)
    assert head.returncode == 0, head.stderr[-2000:]
    try:
        node = subprocess.run([str(RAY), "start", "--address", address, *common], env=env, capture_output=True,
                              text=True, timeout=180)
        assert node.returncode == 0, node.stderr[-2000:]
        yield {"address": address, "env": env, "temp": short, "work": temp, "mark": mark}
    finally:
        stop_marked(mark)
        shutil.rmtree(short, ignore_errors=True)


def marked(mark: str) -> list[int]:
    """The pids whose environment carries `mark` (every process of a cluster started with it)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and f"{mark}=".encode() in (proc / "environ").read_bytes():
                found.append(int(proc.name))
        except OSError:
            continue
    return found


def stop_marked(mark: str) -> None:
    """Stops this module's cluster only. `ray stop --force` kills every Ray process on the
    machine, the Ray instances other test files' runs started for themselves included (CI: a
    run of tests/test_probe19_scale.py ended before its worker could be found)."""
    for sig, wait in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 10.0)):
        pids = marked(mark)
        for pid in pids:
            try:
                os.kill(pid, sig)
            except OSError:
                pass  # gone already
        deadline = time.monotonic() + wait
        while pids and time.monotonic() < deadline:
            pids = [pid for pid in pids if Path(f"/proc/{pid}").exists()
                    and b"zombie" not in _state(pid)]
            time.sleep(0.1)


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _state(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/status").read_bytes().lower()
    except OSError:
        return b"zombie"


def write_suite(folder: Path, base_url: str, n: int, **settings) -> None:
    cases = "".join(json.dumps({"id": f"c{i:04d}", "input": f"q{i:04d}", "expected": f"q{i:04d}"}) + "\n"
                    for i in range(n))
    (folder / "cases.jsonl").write_text(cases)
    subject = {"type": "openai", "base_url": base_url + "/v1", "model": "m", "retries": RETRIES,
               "api_key_env": "SB_RAY_TEST_KEY"}
    (folder / "suite.json").write_text(json.dumps({"name": "r", "cases": "cases.jsonl", "output_dir": "out",
                                                   "formats": ["json"], "subject": subject, **settings}))


def scoreboard(folder: Path, *args: str, env: dict | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "scoreboard", *args], cwd=folder, capture_output=True, text=True,
                          env={**(env or ray_env()), "SB_RAY_TEST_KEY": KEY}, timeout=timeout)


def report(folder: Path) -> tuple[Path, dict]:
    (path,) = sorted((folder / "out" / "r").glob("*.json"))
    return path, json.loads(path.read_text())


def normalized(data: dict) -> dict:
    """A report without what may differ between two runs of the same inputs: times, ids,
    argv, the executor, latencies."""
    def strip(value):
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in ("latency_ms", "elapsed_ms")}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    out = strip(data)
    for key in ("id", "uid", "started_at", "finished_at", "duration_s", "argv", "executor", "versions"):
        out["run"].pop(key, None)
    return out


def test_a_ray_run_reports_what_a_local_run_reports(tmp_path, cluster):
    # on the module's cluster: a run's own local Ray instance is started by the kill -9 test
    # below (and by tests/test_probe19_scale.py's), one Ray start fewer here
    with FakeProvider(latency_ms=5) as srv:
        local, on_ray = tmp_path / "local", tmp_path / "ray"
        for folder in (local, on_ray):
            folder.mkdir()
            write_suite(folder, srv.base_url, 30, runs=2, concurrency=8)
        # Two cases answer wrongly, one errors: the same in both runs (the answers follow the prompt).
        srv.set_default("chat", {"reply": lambda req: "wrong" if extract_prompt(req) in ("q0003", "q0007")
                                 else extract_prompt(req)})
        a = scoreboard(local, "run", "suite.json", "--no-progress")
        b = scoreboard(on_ray, "run", "suite.json", "--no-progress", "--executor", "ray", "--ray-address",
                       cluster["address"], env=cluster["env"])
    assert a.returncode == 0, a.stderr
    assert b.returncode == 0, b.stderr
    (_, ra), (pb, rb) = report(local), report(on_ray)
    assert ra["run"]["executor"] == "local" and rb["run"]["executor"] == "ray"
    assert normalized(ra) == normalized(rb)
    assert rb["summary"]["variants"]["m"]["failed"] == 4  # 2 cases x 2 runs
    assert scoreboard(on_ray, "verify", str(pb)).returncode == 0


def test_a_request_refused_only_by_tries_in_flight_waits_for_them_on_ray(tmp_path, cluster):
    """As on the local executor (engine/ledger_wait.py): --max-requests 1 at concurrency 4
    against a closed port; each try never leaves, so it gives its request back, and the
    attempts refused while it was in flight wait for it instead of stopping the run."""
    write_suite(tmp_path, f"http://127.0.0.1:{free_port()}", 3, concurrency=4, budget={"max_requests": 1})
    done = scoreboard(tmp_path, "run", "suite.json", "--no-progress", "--executor", "ray", "--ray-address",
                      cluster["address"], env=cluster["env"])
    _, data = report(tmp_path)
    assert data["run"]["status"] == "completed", (data["run"], data["requests"], done.stderr[-2000:])
    assert data["requests"]["sent"] == 0 and data["requests"]["never_sent"] == 12, data["requests"]
    assert [a["status"] for a in data["attempts"]] == ["error"] * 3


def test_the_budget_holds_on_a_cluster_with_faults_and_a_killed_worker(tmp_path, cluster):
    rng = random.Random(7)
    with FakeProvider(latency_ms=20) as srv:
        faults = []
        for _ in range(3000):
            roll = rng.random()
            # 429s are rare enough that three in a row for one attempt (a rate signal that stops
            # the run before a worker can be killed) is unlikely: 0.015^3 per attempt
            faults.append({"status": 500} if roll < 0.08 else {"status": 429, "retry_after": 0.01} if roll < 0.095
                          else {"hang": True, "latency_ms": 10} if roll < 0.105 else {"reply": "x"})
        srv.push("chat", *faults)
        write_suite(tmp_path, srv.base_url, 500, runs=2, concurrency=32, timeout_ms=2000,
                    budget={"max_requests": 900})
        proc = subprocess.Popen([sys.executable, "-m", "scoreboard", "run", "suite.json", "--no-progress",
                                 "--executor", "ray", "--ray-address", cluster["address"]], cwd=tmp_path,
                                env=cluster["env"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            # Once attempts flow, kill one worker process of the run (kill -9).
            deadline = time.monotonic() + 240
            killed = None
            while time.monotonic() < deadline and killed is None:
                logs = list((tmp_path / "out" / "r").glob("*/attempts.jsonl"))
                if logs and logs[0].read_bytes().count(b'"case_id"') >= 100:
                    # this cluster's workers only: other files' runs have their own
                    pids = [pid for pid in marked(cluster["mark"]) if _cmdline(pid).startswith(b"ray::AttemptWorker")]
                    if pids:
                        killed = int(pids[0])
                        os.kill(killed, signal.SIGKILL)
                assert proc.poll() is None, proc.communicate()
                time.sleep(0.05)
            assert killed is not None, "no worker to kill"
            _, err = proc.communicate(timeout=600)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        received = len(srv.requests)
    assert proc.returncode == 2, err[-3000:]
    assert list((tmp_path / "out" / "r").glob("*.json")), err[:6000]
    path, data = report(tmp_path)
    requests = data["requests"]
    assert requests["sent"] <= 900, requests                     # never exceeded
    # The budget stops it, or (since a 429 that outlasts every retry is a rate signal that stops
    # a run) the rate limit does first: either way, stopped with the budget held.
    reason = data["run"]["stop_reason"] or ""
    assert data["run"]["status"] == "stopped" and ("request budget" in reason or "rate limited" in reason), reason
    # Every request the server saw was reserved first; the ones reserved but never answered
    # (the killed worker's) are possibly billed, never free.
    assert received <= requests["sent"]
    assert requests["completed"] + requests["failed"] == requests["sent"]
    statuses = [a["status"] for a in data["attempts"]]
    assert len(statuses) == 1000 and "not-run" in statuses
    lost = {(a["case_id"], a["variant"], a["run"]) for a in data["attempts"] if a["status"] == "interrupted"}
    # An interrupted attempt is the killed worker's (usage unknown), or one a surviving worker had
    # in a retry wait when the run stopped: told of the stop, as a local run's runner is, it cuts
    # the wait and records the attempt interrupted with the requests it sent, as the ledger counted them.
    for a in data["attempts"]:
        if a["status"] == "interrupted" and "worker lost" not in a["error"]:
            assert a["error"].startswith("the run stopped during this attempt"), a
            assert a["measurements"]["requests"] is not None and a["measurements"]["requests"] >= 1, a
    # A request the killed worker left open is possibly billed, and belongs to an interrupted
    # attempt; so is one a surviving worker had in flight when the run stopped and whose end never
    # reached the ledger (its worker torn down first): its attempt did not finish (not run)
    unfinished = lost | {(a["case_id"], a["variant"], a["run"]) for a in data["attempts"] if a["status"] == "not-run"}
    strays = [b for b in requests["possibly_billed"] if tuple(b["attempt"]) not in unfinished]
    assert not strays, (strays, [a for a in data["attempts"] if [a["case_id"], a["variant"], a["run"]]
                                 in [b["attempt"] for b in strays]])
    assert scoreboard(tmp_path, "verify", str(path)).returncode == 0
    # The key reached the workers through their nodes' environment only: in no record, no Ray log.
    key = KEY
    for file in [*tmp_path.rglob("*"), *cluster["temp"].rglob("*.log"), *cluster["temp"].rglob("*.out"),
                 *cluster["temp"].rglob("*.err")]:
        if file.is_file() and file.stat().st_size < 50_000_000:
            assert key.encode() not in file.read_bytes(), file


def test_the_budget_spent_before_a_resume_counts_on_the_other_executor(tmp_path, cluster):
    with FakeProvider(latency_ms=2) as srv:
        write_suite(tmp_path, srv.base_url, 40, concurrency=4, budget={"max_requests": 15})
        first = scoreboard(tmp_path, "run", "suite.json", "--no-progress", env=cluster["env"])
        assert first.returncode == 2, first.stderr
        (folder,) = [p for p in (tmp_path / "out" / "r").iterdir() if p.is_dir()]
        # Resumed on Ray, the run's 15 requests are already spent: no worker may send one more.
        second = scoreboard(tmp_path, "run", "--resume", str(folder), "--no-progress", "--executor", "ray",
                            "--ray-address", cluster["address"], env=cluster["env"])
        assert second.returncode == 2, second.stderr
        assert len(srv.requests) == 15
        _, data = report(tmp_path)
        assert data["run"]["executor"] == "ray" and data["requests"]["sent"] == 15
        assert data["run"]["status"] == "stopped"


def test_resume_a_ray_run_locally_and_a_local_run_on_ray(tmp_path, cluster):
    with FakeProvider(latency_ms=2) as srv:
        # A run whose subject fails for a while: the first part stops on quota (402), the rest is
        # finished by a resume with the other executor; nothing finished is sent again.
        for first, then in (("ray", "local"), ("local", "ray")):
            folder = tmp_path / f"{first}-{then}"
            folder.mkdir()
            write_suite(folder, srv.base_url, 30, concurrency=2)
            srv.reset()
            srv.push("chat", *([{"reply": "ok"}] * 10), {"status": 402, "quota": True})
            args = ["--executor", "ray", "--ray-address", cluster["address"]] if first == "ray" else []
            stopped = scoreboard(folder, "run", "suite.json", "--no-progress", *args, env=cluster["env"])
            assert stopped.returncode == 2, stopped.stderr
            _, data = report(folder)
            done_before = sum(a["status"] in ("passed", "failed", "error") for a in data["attempts"])
            cut_before = sum(a["status"] == "error" for a in data["attempts"])  # the quota's, and any it cut
            sent_before = data["requests"]["sent"]
            assert data["run"]["status"] == "stopped" and done_before >= 10
            (run_dir,) = [p for p in (folder / "out" / "r").iterdir() if p.is_dir()]
            srv.set_default("chat", {"reply": "ok"})
            args = ["--executor", "ray", "--ray-address", cluster["address"]] if then == "ray" else ["--executor",
                                                                                                    "local"]
            resumed = scoreboard(folder, "run", "--resume", str(run_dir), "--no-progress", *args, env=cluster["env"])
            # the attempts the quota stop cut are logged with it: the resume runs them again
            assert resumed.returncode == 0, resumed.stderr
            path, data = report(folder)
            assert data["run"]["status"] == "completed" and data["run"]["executor"] == then
            statuses = [a["status"] for a in data["attempts"]]
            assert statuses.count("not-run") == 0 and "error" not in statuses and len(statuses) == 30
            assert 1 <= cut_before <= 2  # concurrency 2: the 402's attempt, and at most the one beside it
            # Only the attempts not finished before, and those the stop cut, were sent again.
            assert data["requests"]["sent"] == sent_before + (30 - done_before) + cut_before
            assert scoreboard(folder, "verify", str(path)).returncode == 0


def test_without_ray_the_executor_is_a_one_line_hint(tmp_path):
    (tmp_path / "cases.jsonl").write_text(json.dumps({"id": "a", "input": "x", "expected": "x"}) + "\n")
    code = ("import sys; sys.modules['ray'] = None; from scoreboard.cli.main import main; "
            "sys.exit(main(['run', '--cases', 'cases.jsonl', '--subject', 'mock', '--executor', 'ray', "
            "'--output-dir', 'out']))")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "pip install 'scoreboard[ray]'" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not (tmp_path / "out").exists()


def test_what_ray_cannot_run_is_refused_before_anything_is_written(tmp_path):
    (tmp_path / "cases.jsonl").write_text(json.dumps({"id": "a", "input": "x", "expected": "x"}) + "\n")
    done = scoreboard(tmp_path, "run", "--cases", "cases.jsonl", "--subject", "mock", "--executor", "ray",
                      "--cache", "--output-dir", "out")
    assert done.returncode == 1 and "--cache" in done.stderr and not (tmp_path / "out").exists()
    wrong = scoreboard(tmp_path, "run", "--cases", "cases.jsonl", "--subject", "mock", "--ray-address", "x:1",
                       "--output-dir", "out")
    assert wrong.returncode == 1 and "--executor ray" in wrong.stderr


# --------------------------------------------------------------------------- Ray: kill -9 of the driver


def test_kill_9_of_a_ray_run_then_resume_counts_every_request_the_server_saw(tmp_path):
    """kill -9 of `scoreboard run --executor ray` (its own local Ray instance) mid-run, then
    --resume on the local executor: every request the server received is in the budget, the
    ones in flight at the kill are possibly billed, and the budget holds over both parts."""
    with FakeProvider(latency_ms=150) as srv:
        srv.set_default("chat", {"reply": lambda r: extract_prompt(r)})
        write_suite(tmp_path, srv.base_url, 60, concurrency=6, budget={"max_requests": 45})
        proc = subprocess.Popen([sys.executable, "-m", "scoreboard", "run", "suite.json", "--no-progress",
                                 "--executor", "ray"], cwd=tmp_path, env={**ray_env(), "SB_RAY_TEST_KEY": KEY},
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                logs = list((tmp_path / "out" / "r").glob("*/attempts.jsonl"))
                if logs and logs[0].read_bytes().count(b'"case_id"') >= 10:
                    break
                assert proc.poll() is None
                time.sleep(0.05)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(10)
        finally:
            # the Ray processes this run started (its session) go with it
            session = subprocess.run(["pgrep", "-s", str(proc.pid)], check=False, capture_output=True,
                                     text=True).stdout
            for pid in session.split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except ProcessLookupError:
                    pass
        (folder,) = [p for p in (tmp_path / "out" / "r").iterdir() if p.is_dir()]
        resumed = scoreboard(tmp_path, "run", "--resume", str(folder), "--no-progress", timeout=300)
        received = len(srv.requests)
    assert resumed.returncode == 2, resumed.stderr  # the budget stops it
    _, data = report(tmp_path)
    requests = data["requests"]
    # every request the server saw is counted; a request reserved (counted) just before the kill
    # may never have left the killed worker, and then it is one of the unresolved, possibly billed
    assert requests["sent"] == 45 and received <= 45, (received, requests)
    assert requests["sent"] - received <= requests["pending_unresolved"], (received, requests)
    assert requests["completed"] + requests["failed"] + requests["pending_unresolved"] == 45
    assert len(requests["possibly_billed"]) == requests["pending_unresolved"]
    assert data["run"]["status"] == "stopped" and "request budget" in data["run"]["stop_reason"]
