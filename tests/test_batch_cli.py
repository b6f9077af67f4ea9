"""`batch: true` end to end through the CLI against the loopback batch APIs: a run that ends after
submitting (status waiting, exit 4) and two resumes (some batches finished, some not), a kill -9
between a batch's creation and its record, Ctrl+C cancelling submitted batches, and `verify` on
every report these leave."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.cli_inprocess import run_cli
from tests.servers.fake_batches import FakeBatches

CASES = [{"id": f"c{i}", "input": f"What is {i}+1?", "expected": f"ANSWER: {i + 1}", "graders": ["contains"]}
         for i in range(7)]
PRICE = {"input_per_mtok": 2.0, "output_per_mtok": 8.0, "batch_discount": 0.5}


@pytest.fixture
def srv():
    with FakeBatches() as server:
        yield server


def base_url(srv: FakeBatches, kind: str) -> str:
    return srv.base_url + ("/v1" if kind == "openai" else "")


def write_suite(tmp: Path, srv: FakeBatches, kind: str, *, batch: dict, cases=CASES, **extra) -> Path:
    (tmp / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    subject = {"type": kind, "base_url": base_url(srv, kind), "model": "m-1", "batch": batch, "price": PRICE}
    suite = {"name": "nightly", "cases": "cases.jsonl", "subject": subject, "formats": ["json", "md", "html", "junit"],
             **extra}
    path = tmp / "suite.json"
    path.write_text(json.dumps(suite), encoding="utf-8")
    return path


def cli(tmp: Path, *args: str) -> subprocess.CompletedProcess:
    """`python -m scoreboard ARGS` in-process (tests/cli_inprocess.py); the kill -9 and SIGINT tests
    start real processes."""
    return run_cli(args, tmp, dict(os.environ))


def run_dir(tmp: Path) -> Path:
    (meta,) = (tmp / "out").glob("nightly/*/run.json")
    return meta.parent


def report(tmp: Path) -> dict:
    (path,) = (tmp / "out").glob("nightly/*.json")
    return json.loads(path.read_text(encoding="utf-8"))


def verified(tmp: Path) -> None:
    (path,) = (tmp / "out").glob("nightly/*.json")
    out = cli(tmp, "verify", str(path))
    assert out.returncode == 0, out.stdout + out.stderr


def statuses(rep: dict) -> Counter:
    return Counter(a["status"] for a in rep["attempts"])


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_waiting_then_two_resumes_never_submit_twice(tmp_path, srv, kind):
    srv.hold = True
    write_suite(tmp_path, srv, kind, batch={"size": 3, "wait_s": 0.2, "poll_s": 0.05, "poll_for_s": 0},
                fail_under=0.9)
    first = cli(tmp_path, "run", "suite.json", "--output-dir", "out", "--no-progress")
    assert first.returncode == 4, first.stderr
    rep = report(tmp_path)
    assert rep["run"]["status"] == "waiting" and statuses(rep) == {"waiting": 7}
    assert rep["gates"] == []  # not judged by its gates while attempts wait
    batches = rep["run"]["batches"]
    assert sorted(b["requests"] for b in batches) == [1, 3, 3] and all(b["state"] == "submitted" for b in batches)
    assert {b["batch_id"] for b in batches} == set(srv.batches)
    for a in rep["attempts"]:  # each waiting attempt names its batch and custom id
        where = a["subject_info"]["batch"]
        assert where["batch_id"] in srv.batches and where["custom_id"].startswith(where["submission"])
        assert a["output"] is None and a["error"] is None and a["grades"] == []
    (summary,) = rep["summary"]["variants"].values()
    assert summary["waiting"] == 7 and summary["pass_rate"] is None and summary["passed"] == 0
    assert rep["requests"]["sent"] == 7 and rep["requests"]["batch_pending"] == 7
    assert rep["requests"]["cost_spent_usd"] is None  # pending usage is unknown, never 0
    assert "waiting on 3 provider batches" in first.stdout and "--resume" in first.stdout
    md = (next((tmp_path / "out").glob("nightly/*.md"))).read_text()
    assert "## Batches" in md and "**Status**: waiting" in md
    junit = (next((tmp_path / "out").glob("nightly/*.junit.xml"))).read_text()
    assert "waiting on a provider batch" in junit
    verified(tmp_path)

    # Resume 1: one batch has ended, the others have not.
    done_first = sorted(srv.batches)[0]
    srv.end(done_first)
    second = cli(tmp_path, "run", "--resume", str(run_dir(tmp_path)), "--no-progress")
    assert second.returncode == 4, second.stderr
    rep = report(tmp_path)
    assert rep["run"]["status"] == "waiting" and statuses(rep) == {"passed": 3, "waiting": 4}
    ended = [b for b in rep["run"]["batches"] if b["state"] == "ended"]
    assert [b["batch_id"] for b in ended] == [done_first]
    assert rep["requests"]["sent"] == 7 and rep["requests"]["completed"] == 3 and rep["requests"]["batch_pending"] == 4
    verified(tmp_path)

    # Resume 2: everything has ended.
    srv.release()
    third = cli(tmp_path, "run", "--resume", str(run_dir(tmp_path)), "--no-progress")
    assert third.returncode == 0, third.stdout + third.stderr
    rep = report(tmp_path)
    assert rep["run"]["status"] == "completed" and statuses(rep) == {"passed": 7}
    assert [g["passed"] for g in rep["gates"]] == [True]
    assert all(b["state"] == "ended" and b["status"] in ("completed", "ended") for b in rep["run"]["batches"])
    # Seven attempts, seven requests submitted, each exactly once, over all three runs.
    assert sorted(srv.prompts()) == sorted(c["input"] for c in CASES)
    assert rep["requests"]["sent"] == 7 and rep["requests"]["completed"] == 7 and "batch_pending" not in rep["requests"]
    # cost at the batch price: half of the listed rates, from the reported usage
    for a in rep["attempts"]:
        m = a["measurements"]
        assert m["cost_usd"] == pytest.approx((m["input_tokens"] * 1.0 + m["output_tokens"] * 4.0) / 1e6)
        assert m["latency_ms"] is None and m["requests"] == 1
    assert rep["requests"]["cost_spent_usd"] == pytest.approx(sum(a["measurements"]["cost_usd"]
                                                                  for a in rep["attempts"]))
    verified(tmp_path)


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_expired_and_partly_failed_batches_are_per_attempt_errors(tmp_path, srv, kind):
    srv.outcome = lambda prompt: "error" if "3+1" in prompt else "ok"
    srv.expire_batches, srv.expire_after = True, 2
    write_suite(tmp_path, srv, kind, batch={"size": 4, "wait_s": 0.2, "poll_s": 0.05})
    out = cli(tmp_path, "run", "suite.json", "--output-dir", "out", "--no-progress")
    assert out.returncode == 2, out.stderr
    rep = report(tmp_path)
    assert rep["run"]["status"] == "completed"
    by_id = {a["case_id"]: a for a in rep["attempts"]}
    # batch 1 holds c0..c3: c0, c1 answered; c2 expired; c3 failed on its own. batch 2: c4, c5 answered, c6 expired
    assert {cid for cid, a in by_id.items() if a["status"] == "passed"} == {"c0", "c1", "c4", "c5"}
    assert "expire" in by_id["c2"]["error"] and "expire" in by_id["c6"]["error"]
    assert "scripted request error" in by_id["c3"]["error"]
    assert all(b["status"] in ("expired", "ended") for b in rep["run"]["batches"])
    verified(tmp_path)


def test_failed_openai_batch_gives_the_providers_reason(tmp_path, srv):
    srv.fail_validation = True
    write_suite(tmp_path, srv, "openai", batch={"size": 10, "wait_s": 0.1, "poll_s": 0.05})
    out = cli(tmp_path, "run", "suite.json", "--output-dir", "out", "--no-progress")
    assert out.returncode == 2
    rep = report(tmp_path)
    assert statuses(rep) == {"error": 7}
    assert all("scripted validation failure" in a["error"] for a in rep["attempts"])
    assert rep["run"]["batches"][0]["status"] == "failed"
    verified(tmp_path)


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_kill_9_between_create_and_record_never_submits_twice(tmp_path, srv, kind):
    import threading

    srv.stall_create = threading.Event()
    srv.polls_to_end = 1
    write_suite(tmp_path, srv, kind, batch={"size": 10, "wait_s": 0.1, "poll_s": 0.05})
    proc = subprocess.Popen([sys.executable, "-m", "scoreboard", "run", "suite.json", "--output-dir", "out",
                             "--no-progress"], cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        assert srv.created.wait(30), "no batch was created"
        os.kill(proc.pid, signal.SIGKILL)  # the batch exists; the run never learned its id
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    srv.stall_create.set()
    log = (run_dir(tmp_path) / "attempts.jsonl").read_text().splitlines()
    events = [json.loads(line) for line in log]
    assert [e.get("event") for e in events if e.get("kind") == "batch"] == ["submitting"]
    assert sum(1 for e in events if e.get("kind") == "request") == 7  # reserved before anything was uploaded
    out = cli(tmp_path, "run", "--resume", str(run_dir(tmp_path)), "--no-progress")
    assert out.returncode == 0, out.stdout + out.stderr
    rep = report(tmp_path)
    # Found again (OpenAI: by the submission id in its metadata; Anthropic: among the batches made
    # since, by the custom ids in its results) and collected, never sent twice.
    assert len(srv.batches) == 1 and sorted(srv.prompts()) == sorted(c["input"] for c in CASES)
    assert statuses(rep) == {"passed": 7}
    assert rep["run"]["batches"][0]["batch_id"] == next(iter(srv.batches))
    assert rep["requests"]["sent"] == 7 and rep["requests"]["completed"] == 7
    verified(tmp_path)


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_kill_9_during_upload_submits_once_on_resume(tmp_path, srv, kind):
    import threading

    srv.stall_upload = threading.Event()
    write_suite(tmp_path, srv, kind, batch={"size": 10, "wait_s": 0.1, "poll_s": 0.05, "settle_s": 0})
    proc = subprocess.Popen([sys.executable, "-m", "scoreboard", "run", "suite.json", "--output-dir", "out",
                             "--no-progress"], cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        assert srv.uploading.wait(30), "nothing was uploaded"
        os.kill(proc.pid, signal.SIGKILL)  # journaled and reserved, nothing created
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    srv.stall_upload, stalled = None, srv.stall_upload
    stalled.set()
    assert not srv.batches
    out = cli(tmp_path, "run", "--resume", str(run_dir(tmp_path)), "--no-progress")
    assert out.returncode == 0, out.stdout + out.stderr
    rep = report(tmp_path)
    assert len(srv.batches) == 1 and sorted(srv.prompts()) == sorted(c["input"] for c in CASES)
    assert statuses(rep) == {"passed": 7}
    ended = [b for b in rep["run"]["batches"] if b["status"] == "not-created"]
    assert len(ended) == 1 and ended[0]["state"] == "ended"  # the first submission, said never created
    # the interrupted submission's reservations were released: 7 requests sent, not 14
    assert rep["requests"]["sent"] == 7 and rep["requests"]["completed"] == 7
    verified(tmp_path)


def interrupt_once_batched(tmp: Path, srv: FakeBatches, batches: int = 2) -> tuple[int, str]:
    """`run suite.json` interrupted (SIGINT) once `batches` batches are submitted: (exit code, stderr)."""
    proc = subprocess.Popen([sys.executable, "-m", "scoreboard", "run", "suite.json", "--output-dir", "out",
                             "--no-progress"], cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while len(srv.batches) < batches and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(srv.batches) == batches
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, stderr


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_sigint_cancels_submitted_batches(tmp_path, srv, kind):
    srv.hold = True
    write_suite(tmp_path, srv, kind, batch={"size": 4, "wait_s": 0.1, "poll_s": 0.05}, grace_seconds=20)
    code, stderr = interrupt_once_batched(tmp_path, srv)
    assert code == 2, stderr
    assert sorted(srv.cancels) == sorted(srv.batches)
    rep = report(tmp_path)
    assert rep["run"]["status"] == "stopped" and statuses(rep) == {"interrupted": 7}  # --resume sends them anew
    assert all("may still be billed" in a["error"] for a in rep["attempts"])
    assert all("may still be billed" in b["cancel"] and b["status"] == "cancelled" for b in rep["run"]["batches"])
    assert len(rep["requests"]["possibly_billed"]) == 7
    verified(tmp_path)


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_batched_judge_waits_and_resumes_without_asking_twice(tmp_path, srv, kind):
    srv.hold = True
    cases = [{"id": f"j{i}", "input": f"Name a colour ({i})", "expected": "a colour",
              "graders": [{"llm-judge": {"rubric": "Any colour is right."}}]} for i in range(4)]
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    judge = {"type": kind, "base_url": base_url(srv, kind), "model": "judge-1", "price": PRICE,
             "batch": {"size": 10, "wait_s": 0.2, "poll_s": 0.05, "poll_for_s": 0}}
    suite = {"name": "nightly", "cases": "cases.jsonl", "subject": {"type": "mock", "default": "blue"},
             "judge": judge, "formats": ["json", "md"]}
    (tmp_path / "suite.json").write_text(json.dumps(suite), encoding="utf-8")
    first = cli(tmp_path, "run", "suite.json", "--output-dir", "out", "--no-progress")
    assert first.returncode == 4, first.stdout + first.stderr
    rep = report(tmp_path)
    assert statuses(rep) == {"waiting": 4}
    assert {a["subject_info"]["batch"]["role"] for a in rep["attempts"]} == {"judge"}
    assert len(srv.submitted) == 4 and rep["requests"]["batch_pending"] == 4
    verified(tmp_path)
    srv.release()
    second = cli(tmp_path, "run", "--resume", str(run_dir(tmp_path)), "--no-progress")
    assert second.returncode == 0, second.stdout + second.stderr
    rep = report(tmp_path)
    assert statuses(rep) == {"passed": 4}
    assert len(srv.submitted) == 4  # the judge was asked once per attempt, over both runs
    forced = [s["body"].get("response_format") or s["body"].get("tool_choice") for s in srv.submitted]
    assert all(forced)  # the judge's structured-output request went into the batch as built
    judges = rep["summary"]["judges"]["variants"]
    (usage,) = [v["usage"] for v in judges.values()]
    assert usage["requests"]["total"] == 4 and usage["cost_usd"]["total"] is not None
    verified(tmp_path)


def test_pairwise_with_a_batched_judge_is_refused(tmp_path, srv):
    path = write_suite(tmp_path, srv, "openai", batch=True,
                       judge={"type": "openai", "base_url": base_url(srv, "openai"), "model": "j", "batch": True},
                       pairwise={"rubric": "better"}, variants=None)
    data = json.loads(path.read_text())
    data.pop("variants")
    data["variants"] = [{"name": "a", "subject": data["subject"]}, {"name": "b", "subject": data["subject"]}]
    data.pop("subject")
    path.write_text(json.dumps(data))
    out = cli(tmp_path, "run", "suite.json", "--output-dir", "out", "--no-progress")
    assert out.returncode == 1 and "pairwise judging does not batch" in out.stderr
    assert not srv.requests and not (tmp_path / "out").exists()


def test_a_conversation_waits_at_its_turn_and_resumes_from_there(tmp_path, srv):
    srv.polls_to_end = 2
    conv = {"id": "birds", "conversation": {"notes": "The survey counted 47 birds."},
            "turns": [{"id": "t1", "question": "How many birds?", "graders": [{"contains": "birds"}]},
                      {"id": "t2", "question": "And the weather?", "graders": [{"contains": "weather"}]}]}
    path = write_suite(tmp_path, srv, "openai", batch={"size": 5, "wait_s": 0.1, "poll_s": 0.05, "poll_for_s": 0},
                       cases=[conv])
    first = cli(tmp_path, "run", str(path), "--output-dir", "out", "--no-progress")
    assert first.returncode == 4, first.stdout + first.stderr
    rep = report(tmp_path)
    turns = {a["case_id"]: a for a in rep["attempts"]}
    assert turns["birds/t1"]["status"] == "waiting" and turns["birds/t2"]["status"] == "not-run"
    assert "waits on a provider batch" in turns["birds/t2"]["error"] and len(srv.submitted) == 1
    verified(tmp_path)
    for expected_waiting in (True, False):  # turn 1 collected, turn 2 submitted (waits), then collected
        out = cli(tmp_path, "run", "--resume", str(run_dir(tmp_path)), "--no-progress")
        assert out.returncode == (4 if expected_waiting else 0), out.stdout + out.stderr
        verified(tmp_path)
    rep = report(tmp_path)
    assert statuses(rep) == {"passed": 2}
    # each turn sent once; turn 2 carries turn 1's actual reply
    assert [m["role"] for m in srv.submitted[1]["body"]["messages"]] == ["user", "assistant", "user"]
    assert len(srv.submitted) == 2
