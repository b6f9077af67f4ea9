"""Probes of scale-out from the outside (round 3): the Ray executor under a killed worker and a
suite changed under a running run, and the PostgreSQL store (tests/store/pg.py) on loopback.

Every Ray instance here is the one a run starts for itself on 127.0.0.1 (`--executor ray`
without an address), stopped by the run; a worker is found for a kill only among the
processes carrying this test's own marker in their environment."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest

from tests.servers.fake_provider import FakeProvider

pytestmark = pytest.mark.slow


def _env(mark: str, **extra: str) -> dict:
    return {**os.environ, "SB_P19_KEY": "k", "RAY_USAGE_STATS_ENABLED": "0", "SCOREBOARD_STORE": "none",
            mark: "1", **extra}


def _workers(mark: str, actor: str = "AttemptWorker") -> list[int]:
    """The pids of this test's Ray actors of one class (their environment carries `mark`)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if (f"ray::{actor}".encode() in (proc / "cmdline").read_bytes()
                    and mark.encode() in (proc / "environ").read_bytes()):
                found.append(int(proc.name))
        except OSError:
            continue
    return found


def _write_suite(folder: Path, base_url: str, n: int, **settings) -> None:
    (folder / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i:03d}", "input": f"q{i:03d}",
                                                            "expected": "ok"}) + "\n" for i in range(n)))
    subject = {"type": "openai", "base_url": base_url + "/v1", "model": "m", "api_key_env": "SB_P19_KEY",
               "params": {"max_tokens": 50}, "retries": {"attempts": 1}}
    (folder / "suite.json").write_text(json.dumps({"name": "r", "cases": "cases.jsonl", "output_dir": "out",
                                                   "formats": ["json"], "subject": subject, **settings}))


def _report(folder: Path) -> dict:
    (path,) = sorted((folder / "out" / "r").glob("*.json"))
    return json.loads(path.read_text())


def _run_killing_a_worker(folder: Path, mark: str, before_kill=None, *args: str,
                          actor: str = "AttemptWorker") -> tuple[int, str, int]:
    """`scoreboard run --executor ray` in `folder`; once 4 attempts are logged, `before_kill()`
    then SIGKILL one of its workers. The exit code, stderr, and the pid killed."""
    proc = subprocess.Popen([sys.executable, "-m", "scoreboard", "run", "suite.json", "--no-progress",
                             "--executor", "ray", *args], cwd=folder, env=_env(mark),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    killed = None
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and killed is None and proc.poll() is None:
            logs = list((folder / "out" / "r").glob("*/attempts.jsonl"))
            if logs and logs[0].read_bytes().count(b'"case_id"') >= 4:
                pids = _workers(mark, actor)
                if pids:
                    if before_kill is not None:
                        before_kill()
                    killed = pids[0]
                    os.kill(killed, signal.SIGKILL)
            time.sleep(0.05)
        _, err = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert killed is not None, "no worker to kill"
    return proc.returncode, err, killed


# --------------------------------------------------------------------------- a suite changed mid-run


def test_a_replacement_worker_refusing_a_changed_suite_stops_the_run_saying_why(tmp_path):
    """The suite's cases file changes while a Ray run goes, then a worker is killed: its
    replacement loads the changed suite and refuses it. The run stops at once naming the
    refusal; before, the refusal was taken for a lost worker and replaced 16 times more (each
    refusing alike), the run stopped "17 Ray workers lost", the cause said nowhere (and with a
    second worker alive, the refusals were dropped without a word)."""
    mark = f"SB_P19_{uuid.uuid4().hex}"

    def change() -> None:
        with open(tmp_path / "cases.jsonl", "a") as f:
            f.write(json.dumps({"id": "added", "input": "x", "expected": "ok"}) + "\n")

    with FakeProvider(latency_ms=200) as srv:
        srv.set_default("chat", {"reply": "ok"})
        _write_suite(tmp_path, srv.base_url, 40, concurrency=1)
        code, err, _ = _run_killing_a_worker(tmp_path, mark, change)
        sent = len(srv.requests)
    assert code == 2, err[-3000:]
    data = _report(tmp_path)
    reason = data["run"]["stop_reason"] or ""
    assert data["run"]["status"] == "stopped", data["run"]
    assert "replacement Ray worker could not start" in reason and "different suite" in reason, reason
    assert "workers lost" not in reason
    statuses = Counter(a["status"] for a in data["attempts"])
    assert statuses["passed"] >= 4 and statuses["not-run"] > 0 and len(data["attempts"]) == 40, statuses
    # the killed worker's attempt had sent its request: interrupted, possibly billed, never free
    lost = [a for a in data["attempts"] if a["status"] == "interrupted"]
    assert all("worker lost" in a["error"] and a["measurements"]["cost_usd"] is None for a in lost), lost
    billed = {tuple(b["attempt"]) for b in data["requests"]["possibly_billed"]}
    assert billed <= {(a["case_id"], a["variant"], a["run"]) for a in lost}
    # a request the killed worker reserved may never have reached the server: counted all the same
    requests = data["requests"]
    assert sent <= requests["sent"] <= sent + len(billed) and requests["completed"] + requests["failed"] == requests["sent"]


# --------------------------------------------------------------------------- a lost worker, then --resume


def _verify(folder: Path) -> subprocess.CompletedProcess:
    (path,) = sorted((folder / "out" / "r").glob("*.json"))
    return subprocess.run([sys.executable, "-m", "scoreboard", "verify", str(path)], cwd=folder,
                          capture_output=True, text=True, timeout=120)


def test_a_run_whose_worker_was_lost_is_not_completed_and_resume_finishes_it_locally(tmp_path):
    """A worker killed (SIGKILL) while its request hangs at the provider: the run finishes every
    other attempt, the lost one `interrupted` and its request possibly billed. The run is
    `stopped` saying so (exit 2) and its report verifies; before, it said `completed` with the
    interrupted attempt in it, so `verify` failed on scoreboard's own report and `--resume`
    refused ("already completed: nothing to resume"), leaving the attempt unfinished for good.
    Resumed with the local executor, the attempt runs again, the lost request stays listed as
    possibly billed, and the budget counts both parts."""
    mark = f"SB_P19_{uuid.uuid4().hex}"
    with FakeProvider(latency_ms=20) as srv:
        srv.set_default("chat", {"reply": "ok"})
        srv.push("chat", *(["ok"] * 4), {"hang": True})  # the 5th request never answers
        _write_suite(tmp_path, srv.base_url, 30, concurrency=1, timeout_ms=120000)
        def hanging() -> None:  # the 5th request is at the server, hanging, when the worker dies
            while len(srv.requests) < 5:
                time.sleep(0.02)

        code, err, _ = _run_killing_a_worker(tmp_path, mark, hanging, "--max-requests", "100")
        assert code == 2, err[-3000:]
        first = _report(tmp_path)
        assert first["run"]["status"] == "stopped", first["run"]
        assert "interrupted" in (first["run"]["stop_reason"] or "") and "--resume" in first["run"]["stop_reason"]
        lost = [(a["case_id"], a["variant"], a["run"]) for a in first["attempts"] if a["status"] == "interrupted"]
        assert lost == [("c004", "m", 0)], Counter(a["status"] for a in first["attempts"])
        assert Counter(a["status"] for a in first["attempts"])["passed"] == 29
        billed = first["requests"]["possibly_billed"]
        assert [tuple(b["attempt"]) for b in billed] == lost, billed
        assert first["requests"]["sent"] == 30 == len(srv.requests)
        assert _verify(tmp_path).returncode == 0, _verify(tmp_path).stdout
        (run_dir,) = [p for p in (tmp_path / "out" / "r").iterdir() if p.is_dir()]
        resumed = subprocess.run([sys.executable, "-m", "scoreboard", "run", "--resume", str(run_dir), "--no-progress",
                                  "--executor", "local"], cwd=tmp_path, env=_env(mark), capture_output=True,
                                 text=True, timeout=240)
        assert resumed.returncode == 0, resumed.stderr[-3000:]
        assert len(srv.requests) == 31  # only the interrupted attempt's request again
    data = _report(tmp_path)
    assert data["run"]["status"] == "completed" and data["run"]["executor"] == "local"
    assert Counter(a["status"] for a in data["attempts"]) == {"passed": 30}
    assert data["requests"]["sent"] == 31 and data["requests"]["possibly_billed"] == billed
    assert data["requests"]["budget"]["max_requests"] == 100
    assert _verify(tmp_path).returncode == 0, _verify(tmp_path).stdout


# --------------------------------------------------------------------------- --ray-address


@pytest.mark.parametrize("address, said", [
    ("not an address", "is not a Ray cluster's address: give HOST:PORT"),
    ("http://127.0.0.1:6379", "is not a Ray cluster's address: give HOST:PORT"),
    ("127.0.0.1:99999", "is not a Ray cluster's address: give HOST:PORT"),
    (None, "no Ray cluster answers at 127.0.0.1:"),
])
def test_a_ray_address_that_is_malformed_or_answers_nothing_is_one_line_before_anything_is_written(tmp_path,
                                                                                                address, said):
    """`--ray-address` that is not HOST:PORT was `internal error: ValueError: Invalid address
    format` (exit 2) after the run's folder was made; one where nothing listens (a head not
    started, a wrong port) retried for minutes, printing Ray's log lines, and never ended on
    its own. Both are one line naming the flag, exit 1, nothing written."""
    pytest.importorskip("ray")
    import socket

    _write_suite(tmp_path, "http://127.0.0.1:9", 2)
    with socket.socket() as closed:  # bound, never listening: a connection to it is refused
        closed.bind(("127.0.0.1", 0))
        address = address or f"127.0.0.1:{closed.getsockname()[1]}"
        done = subprocess.run([sys.executable, "-m", "scoreboard", "run", "suite.json", "--no-progress",
                               "--executor", "ray", "--ray-address", address], cwd=tmp_path,
                              env=_env("SB_P19_ADDR"), capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr[-2000:]
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "--ray-address" in lines[0] and said in lines[0], done.stderr[-2000:]
    assert not (tmp_path / "out").exists()


# --------------------------------------------------------------------------- Ctrl+C: the same report as local


def _strip(value):
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in ("latency_ms", "elapsed_ms")}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _interrupted_run(folder: Path, base_url: str, *args: str, wait_for, n: int = 20) -> tuple[int, dict, list]:
    _write_suite(folder, base_url, n, concurrency=2, timeout_ms=120000, grace_seconds=1)
    proc = subprocess.Popen([sys.executable, "-m", "scoreboard", "run", "suite.json", "--no-progress", *args],
                            cwd=folder, env=_env("SB_P19_SIGINT"), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        deadline = time.monotonic() + 90
        while not wait_for() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    (log,) = (folder / "out" / "r").glob("*/attempts.jsonl")
    ends = [json.loads(line) for line in log.read_text().splitlines() if '"state":"failed"' in line]
    assert proc.returncode == 2, err[-3000:]
    return proc.returncode, _report(folder), ends


def test_an_interrupted_ray_run_reports_its_cancelled_requests_as_a_local_run_does(tmp_path):
    """Ctrl+C while two requests hang: once the grace runs out, the local run ends them failed
    ("cancelled", usage unknown, counted at their bound); the Ray run closed them as "worker
    lost mid-attempt" and listed them in `requests.possibly_billed` though no worker was lost,
    so the two reports of the same inputs differed. Field by field, they are the same now
    except timings and run.executor."""
    reports, ends = {}, {}
    with FakeProvider(latency_ms=5) as srv:
        srv.set_default("chat", {"reply": "ok"})
        for name, args in (("local", ()), ("ray", ("--executor", "ray"))):
            folder = tmp_path / name
            folder.mkdir()
            srv.reset()
            # the same two cases hang under both executors, whatever order their requests come in
            # (Ray's workers send them in another order), and every case is sent before the interrupt
            srv.set_default("chat", {"reply": "ok", "hang": lambda req: any(q in json.dumps(req) for q in ("q006", "q007"))})
            _, reports[name], ends[name] = _interrupted_run(folder, srv.base_url, *args, n=8,
                                                            wait_for=lambda: len(srv.requests) >= 8)
    local, on_ray = reports["local"], reports["ray"]
    assert local["run"]["status"] == on_ray["run"]["status"] == "stopped"
    assert [e["error"] for e in ends["ray"]] == [e["error"] for e in ends["local"]] == ["cancelled"] * 2
    assert not any(e.get("possibly_billed") for e in ends["ray"])
    assert on_ray["requests"]["possibly_billed"] == local["requests"]["possibly_billed"] == []
    for key in ("id", "uid", "started_at", "finished_at", "duration_s", "argv", "executor", "versions"):
        local["run"].pop(key, None)
        on_ray["run"].pop(key, None)
    assert _strip(on_ray) == _strip(local)


# --------------------------------------------------------------------------- the ledger service killed


def test_a_killed_ledger_service_stops_the_run_with_a_report_and_resume_finishes_it(tmp_path):
    """The Ray ledger service (the actor every request is reserved in) killed with SIGKILL
    mid-run: before, the run ended `internal error: ActorDiedError` (exit 2) with no report.
    Now no later request is sent, the run ends `stopped` naming the lost service, its report is
    written and verifies, and the requests the service reserved and never ended are counted
    from the attempt log as possibly billed (as after a crash), never free. `--resume` with the
    local executor finishes it."""
    mark = f"SB_P19_{uuid.uuid4().hex}"
    # 30 requests of 400 ms two at a time: a 6 s window to find and kill the service, wide
    # enough on a loaded machine (at 100 ms the run once ended before the service was found)
    with FakeProvider(latency_ms=400) as srv:
        srv.set_default("chat", {"reply": "ok"})
        _write_suite(tmp_path, srv.base_url, 30, concurrency=2)
        code, err, _ = _run_killing_a_worker(tmp_path, mark, None, "--max-requests", "100", actor="LedgerService")
        assert code == 2, err[-3000:]
        assert "internal error" not in err and "Traceback" not in err, err[-3000:]
        first = _report(tmp_path)
        assert first["run"]["status"] == "stopped", first["run"]
        assert "ledger service was lost" in first["run"]["stop_reason"], first["run"]["stop_reason"]
        requests = first["requests"]
        # a request reserved as the service died may never have left: counted, possibly billed
        assert 0 <= requests["sent"] - len(srv.requests) <= requests["pending_unresolved"], (requests, len(srv.requests))
        assert requests["completed"] + requests["failed"] + requests["pending_unresolved"] == requests["sent"]
        assert len(requests["possibly_billed"]) == requests["pending_unresolved"]
        assert Counter(a["status"] for a in first["attempts"])["not-run"] > 0
        assert _verify(tmp_path).returncode == 0, _verify(tmp_path).stdout
        (run_dir,) = [p for p in (tmp_path / "out" / "r").iterdir() if p.is_dir()]
        resumed = subprocess.run([sys.executable, "-m", "scoreboard", "run", "--resume", str(run_dir), "--no-progress",
                                  "--executor", "local"], cwd=tmp_path, env=_env(mark), capture_output=True,
                                 text=True, timeout=240)
        assert resumed.returncode == 0, resumed.stderr[-3000:]
        assert 0 <= _report(tmp_path)["requests"]["sent"] - len(srv.requests) <= requests["pending_unresolved"]
    data = _report(tmp_path)
    assert data["run"]["status"] == "completed"
    assert Counter(a["status"] for a in data["attempts"]) == {"passed": 30}
    assert data["requests"]["possibly_billed"] == requests["possibly_billed"]
    assert _verify(tmp_path).returncode == 0, _verify(tmp_path).stdout
