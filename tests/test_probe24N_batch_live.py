"""Probe 24N: provider batch APIs and live runs, through the CLI against loopback fakes of OpenAI's
Batch API and Anthropic's Message Batches (tests/servers/fake_batches.py, scripted further here):
polling that answers 500s, a batch cancelled from outside, results naming unknown or repeated
custom ids, answers without usage, budgets, and kill -9 while polling then --resume."""

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
from aiohttp import web

from tests.cli_inprocess import run_cli
from tests.servers.fake_batches import FakeBatches

CASES = [{"id": f"c{i}", "input": f"What is {i}+1?", "expected": f"ANSWER: {i + 1}", "graders": ["contains"]}
         for i in range(5)]
PRICE = {"input_per_mtok": 2.0, "output_per_mtok": 8.0, "batch_discount": 0.5}
KINDS = ["openai", "anthropic"]


def write_suite(tmp: Path, srv: FakeBatches, kind: str, batch: dict, cases=CASES, **extra) -> None:
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    subject = {"type": kind, "base_url": srv.base_url + ("/v1" if kind == "openai" else ""), "model": "m-1",
               "batch": batch, "price": PRICE, "params": {"max_tokens": 64}}
    suite = {"name": "nightly", "cases": "cases.jsonl", "subject": subject, **extra}
    (tmp / "suite.json").write_text(json.dumps(suite), encoding="utf-8")


def env() -> dict:
    return {**os.environ, "SCOREBOARD_STORE": "none", "OPENAI_API_KEY": "sk-test", "ANTHROPIC_API_KEY": "sk-test"}


def cli(tmp: Path, *args: str) -> subprocess.CompletedProcess:
    """`python -m scoreboard ARGS` in-process (tests/cli_inprocess.py); the kill -9 tests start real processes."""
    extra = ["--no-progress"] if args[0] == "run" else []
    return run_cli([*args, *extra], tmp, env())


def report_path(tmp: Path) -> Path:
    (path,) = (tmp / "out").glob("nightly/*.json")
    return path


def report(tmp: Path) -> dict:
    return json.loads(report_path(tmp).read_text(encoding="utf-8"))


def verified(tmp: Path) -> None:
    out = cli(tmp, "verify", str(report_path(tmp)))
    assert out.returncode == 0, out.stdout + out.stderr


def run_dir(tmp: Path) -> Path:
    (meta,) = (tmp / "out").glob("nightly/*/run.json")
    return meta.parent


class Flaky(FakeBatches):
    """Looks at a batch (GET /batches/{id}, GET /v1/messages/batches/{id}) answer 500 `fail_polls` times."""

    fail_polls = 0

    async def _oa_get(self, request):
        if self._flake():
            return web.json_response({"error": {"message": "boom", "type": "server_error"}}, status=500)
        return await super()._oa_get(request)

    async def _an_get(self, request):
        if self._flake():
            return web.json_response({"type": "error", "error": {"type": "api_error", "message": "boom"}},
                                     status=500)
        return await super()._an_get(request)

    def _flake(self) -> bool:
        with self._lock:
            if self.fail_polls > 0:
                self.fail_polls -= 1
                return True
        return False


@pytest.mark.parametrize("kind", KINDS)
def test_polls_answered_500_are_looked_at_again_and_the_run_completes(tmp_path, kind):
    with Flaky() as srv:
        srv.fail_polls = 3
        write_suite(tmp_path, srv, kind, {"wait_s": 0.1, "poll_s": 0.05, "poll_max_s": 0.1})
        out = cli(tmp_path, "run", "suite.json", "--output-dir", "out")
        assert out.returncode == 0, out.stdout + out.stderr
        assert len(srv.batches) == 1
    rep = report(tmp_path)
    assert Counter(a["status"] for a in rep["attempts"]) == {"passed": 5}
    verified(tmp_path)


@pytest.mark.parametrize("kind", KINDS)
def test_kill_9_while_polling_then_resume_collects_the_same_batch(tmp_path, kind):
    with FakeBatches() as srv:
        srv.hold = True
        write_suite(tmp_path, srv, kind, {"wait_s": 0.1, "poll_s": 0.05, "poll_max_s": 0.1})
        proc = subprocess.Popen([sys.executable, "-m", "scoreboard", "run", "suite.json", "--output-dir", "out",
                                 "--no-progress"], cwd=tmp_path, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, env=env())
        try:
            assert srv.created.wait(60)
            (bid,) = srv.batches
            for _ in range(600):
                if srv.batches[bid]["polls"] >= 3:
                    break
                time.sleep(0.05)
            assert srv.batches[bid]["polls"] >= 3
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(10)
        finally:
            if proc.poll() is None:
                proc.kill()
        srv.release()
        out = cli(tmp_path, "run", "--resume", str(run_dir(tmp_path)))
        assert out.returncode == 0, out.stdout + out.stderr
        assert list(srv.batches) == [bid] and len(srv.submitted) == 5
        rep = report(tmp_path)
        assert Counter(a["status"] for a in rep["attempts"]) == {"passed": 5}
        assert rep["requests"]["sent"] == 5
        verified(tmp_path)


@pytest.mark.parametrize("kind", KINDS)
def test_max_requests_holds_for_batched_requests(tmp_path, kind):
    with FakeBatches() as srv:
        write_suite(tmp_path, srv, kind, {"wait_s": 0.1, "poll_s": 0.05})
        out = cli(tmp_path, "run", "suite.json", "--output-dir", "out", "--max-requests", "3")
        assert out.returncode == 2, out.stdout + out.stderr
        assert len(srv.submitted) == 3
    rep = report(tmp_path)
    assert rep["requests"]["sent"] == 3
    verified(tmp_path)


@pytest.mark.parametrize("kind", KINDS)
def test_max_cost_holds_for_batched_requests(tmp_path, kind):
    with FakeBatches() as srv:
        write_suite(tmp_path, srv, kind, {"wait_s": 0.1, "poll_s": 0.05})
        # each request's bound at the batch price: input bytes + 64 output tokens
        out = cli(tmp_path, "run", "suite.json", "--output-dir", "out", "--max-cost", "0.0009")
        assert out.returncode == 2, out.stdout + out.stderr
        n = len(srv.submitted)
    rep = report(tmp_path)
    assert 0 < n < 5, n
    assert rep["requests"]["cost_spent_usd"] <= 0.0009
    verified(tmp_path)


class NoUsage(FakeBatches):
    """Answers without a usage block: the provider never says what they cost."""

    def _answer(self, provider, body):
        answer = super()._answer(provider, body)
        answer.pop("usage", None)
        return answer


@pytest.mark.parametrize("kind", KINDS)
def test_answers_without_usage_leave_cost_unknown(tmp_path, kind):
    with NoUsage() as srv:
        write_suite(tmp_path, srv, kind, {"wait_s": 0.1, "poll_s": 0.05})
        out = cli(tmp_path, "run", "suite.json", "--output-dir", "out", "--max-cost", "1")
        assert out.returncode == 0, out.stdout + out.stderr
    rep = report(tmp_path)
    assert [(a["status"], a["measurements"]["cost_usd"]) for a in rep["attempts"]] == [("passed", None)] * 5
    req = rep["requests"]
    assert req["unknown_usage"] == 5 and 0 < req["cost_spent_usd"] <= 1  # each counted at its bound
    verified(tmp_path)


class OutsideCancel(FakeBatches):
    """Someone cancels the batch from the provider's console after 2 of its requests ran."""

    def _finish(self, batch):
        batch["cancel"] = True
        super()._finish(batch)
        batch["results"] = [(cid, "ok", self._answer(batch["provider"], body)) if k < 2 else (cid, "cancel", None)
                            for k, (cid, body) in enumerate(batch["requests"])]


@pytest.mark.parametrize("kind", KINDS)
def test_a_batch_cancelled_from_outside(tmp_path, kind):
    with OutsideCancel() as srv:
        write_suite(tmp_path, srv, kind, {"wait_s": 0.1, "poll_s": 0.05})
        out = cli(tmp_path, "run", "suite.json", "--output-dir", "out")
        assert out.returncode == 2, out.stdout + out.stderr
    rep = report(tmp_path)
    # not this run's Ctrl+C: errors (not interrupted, not sent again), unbilled, with the reason
    got = sorted((a["status"], a["measurements"]["cost_usd"] == 0.0) for a in rep["attempts"])
    assert got == [("error", True)] * 3 + [("passed", False)] * 2, got
    assert all("cancel" in a["error"] for a in rep["attempts"] if a["status"] == "error")
    assert rep["requests"]["possibly_billed"] == [] and rep["requests"]["failed"] == 3
    assert rep["run"]["batches"][0]["status"] == "cancelled"
    verified(tmp_path)


@pytest.mark.parametrize("kind", KINDS)
def test_polls_answered_500_for_good_wait_for_resume(tmp_path, kind):
    with Flaky() as srv:
        srv.fail_polls = 10 ** 6
        write_suite(tmp_path, srv, kind, {"wait_s": 0.1, "poll_s": 0.05, "poll_max_s": 0.1})
        # each look's GET retried as the subject's requests are, quickly (the default waits
        # 0.5 s, then doubling: 11 s a test at 5 failed looks, for no more checked)
        suite = json.loads((tmp_path / "suite.json").read_text(encoding="utf-8"))
        suite["subject"]["retries"] = {"attempts": 4, "base_delay_s": 0.01, "max_delay_s": 0.05}
        (tmp_path / "suite.json").write_text(json.dumps(suite), encoding="utf-8")
        out = cli(tmp_path, "run", "suite.json", "--output-dir", "out")
        assert out.returncode == 4, out.stdout + out.stderr
        rep = report(tmp_path)
        assert Counter(a["status"] for a in rep["attempts"]) == {"waiting": 5}
        assert rep["requests"]["batch_pending"] == 5 and rep["requests"]["cost_spent_usd"] is None
        verified(tmp_path)
        srv.fail_polls = 0
        out = cli(tmp_path, "run", "--resume", str(run_dir(tmp_path)))
        assert out.returncode == 0, out.stdout + out.stderr
        assert len(srv.batches) == 1 and len(srv.submitted) == 5
    assert Counter(a["status"] for a in report(tmp_path)["attempts"]) == {"passed": 5}
    verified(tmp_path)


class Partial(FakeBatches):
    """Results that lose the last two requests' lines, repeat the first (another answer) and name
    a custom id of no request, while the batch's counts say every request completed."""

    def _oa_files(self, b):
        ok, bad = super()._oa_files(b)
        lines = ok.decode().splitlines()
        first = json.loads(lines[-1])
        dup = json.loads(json.dumps(first))
        dup["response"]["body"]["choices"][0]["message"]["content"] = "ANSWER: wrong"
        foreign = {**first, "custom_id": "not-ours-1"}
        kept = lines[2:] + [json.dumps(dup), json.dumps(foreign)]
        return ("\n".join(kept) + "\n").encode(), bad

    def _oa_view(self, b):
        view = super()._oa_view(b)
        if b["results"] is not None:
            view["request_counts"] = {"total": len(b["requests"]), "completed": len(b["requests"]), "failed": 0}
        return view


def test_partial_results_with_repeats_and_foreign_lines_are_each_accounted_for(tmp_path):
    with Partial() as srv:
        write_suite(tmp_path, srv, "openai", {"wait_s": 0.1, "poll_s": 0.05})
        out = cli(tmp_path, "run", "suite.json", "--output-dir", "out", "--max-cost", "1")
        assert out.returncode == 2, out.stdout + out.stderr
    rep = report(tmp_path)
    by_case = {a["case_id"]: a for a in rep["attempts"]}
    assert [by_case[f"c{i}"]["status"] for i in range(5)] == ["passed"] * 3 + ["error"] * 2
    assert by_case["c0"]["output"]["text"] == "ANSWER: 1"  # the first line of a repeated custom id is kept
    for case in ("c3", "c4"):
        assert by_case[case]["measurements"]["cost_usd"] is None
        assert "counted 5 request(s)" in by_case[case]["error"], by_case[case]["error"]
    assert sorted(e["attempt"][0] for e in rep["requests"]["possibly_billed"]) == ["c3", "c4"]
    notes = " ".join(rep["run"]["batches"][0]["notes"])
    assert "1 result line(s) answered a request already answered" in notes
    assert "1 result line(s) named no request" in notes
    verified(tmp_path)


@pytest.mark.parametrize("kind", KINDS)
def test_a_live_batched_plan_sends_within_its_bounds_and_resumes(tmp_path, kind):
    with FakeBatches() as srv:
        srv.hold = True
        write_suite(tmp_path, srv, kind, {"wait_s": 0.1, "poll_s": 0.05, "poll_for_s": 0}, require_live=True)
        out = cli(tmp_path, "run", "suite.json", "--output-dir", "out", "--case", "c0", "--case", "c1",
                  "--max-requests", "1")
        assert out.returncode == 1 and not srv.submitted, out.stderr
        out = cli(tmp_path, "run", "suite.json", "--output-dir", "out", "--case", "c0", "--case", "c1",
                  "--max-requests", "1", "--live")
        assert out.returncode == 4, out.stdout + out.stderr
        assert len(srv.submitted) == 1
        rep = report(tmp_path)
        assert rep["run"]["live"] is True and rep["run"]["status"] == "waiting"
        assert sorted(a["status"] for a in rep["attempts"]) == ["not-run", "waiting"]
        verified(tmp_path)
        srv.release()
        out = cli(tmp_path, "run", "--resume", str(run_dir(tmp_path)))
        assert out.returncode == 2, out.stdout + out.stderr  # the request budget stays spent
        assert len(srv.submitted) == 1 and len(srv.batches) == 1
        rep = report(tmp_path)
        assert rep["run"]["live"] is True and rep["run"]["status"] == "stopped"
        assert sorted(a["status"] for a in rep["attempts"]) == ["not-run", "passed"]
        assert rep["requests"]["sent"] == 1
    verified(tmp_path)


class SlowResults(FakeBatches):
    """A results download that sends its first two lines, then nothing until `go` is set."""

    def __init__(self, **kw):
        super().__init__(**kw)
        import threading
        self.go = threading.Event()
        self.streaming = threading.Event()

    async def _stream(self, request, body: bytes):
        import asyncio
        resp = web.StreamResponse(headers={"Content-Type": "application/octet-stream"})
        await resp.prepare(request)
        lines = body.splitlines(keepends=True)
        await resp.write(b"".join(lines[:2]))
        self.streaming.set()
        while not self.go.is_set():
            await asyncio.sleep(0.05)
        await resp.write(b"".join(lines[2:]))
        await resp.write_eof()
        return resp

    async def _file_content(self, request):
        file_id = request.match_info["id"]
        batch_id, _, kind = file_id.rpartition("-")
        b = self.batches.get(batch_id)
        if b is None or b["results"] is None or kind != "output":
            return await super()._file_content(request)
        ok, _ = self._oa_files(b)
        return await self._stream(request, ok)

    async def _an_results(self, request):
        resp = await super()._an_results(request)
        if resp.status != 200:
            return resp
        return await self._stream(request, resp.body)


@pytest.mark.parametrize("kind", KINDS)
def test_kill_9_while_reading_results_then_resume_collects_without_resubmitting(tmp_path, kind):
    with SlowResults() as srv:
        write_suite(tmp_path, srv, kind, {"wait_s": 0.1, "poll_s": 0.05, "poll_max_s": 0.1})
        proc = subprocess.Popen([sys.executable, "-m", "scoreboard", "run", "suite.json", "--output-dir", "out",
                                 "--no-progress"], cwd=tmp_path, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, env=env())
        try:
            assert srv.streaming.wait(60)
            time.sleep(0.5)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(10)
        finally:
            if proc.poll() is None:
                proc.kill()
        srv.go.set()
        out = cli(tmp_path, "run", "--resume", str(run_dir(tmp_path)))
        assert out.returncode == 0, out.stdout + out.stderr
        assert len(srv.batches) == 1 and len(srv.submitted) == 5
        rep = report(tmp_path)
        assert Counter(a["status"] for a in rep["attempts"]) == {"passed": 5}
        assert rep["requests"]["sent"] == 5 and rep["requests"]["completed"] == 5, rep["requests"]
        assert rep["requests"]["possibly_billed"] == []
        verified(tmp_path)


class Huge(FakeBatches):
    """A results file whose answers are followed by far more lines than its requests could
    answer (each naming no request), sent as a stream that never ends on its own."""

    sent_bytes = 0

    async def _stream(self, request, body: bytes):
        resp = web.StreamResponse(headers={"Content-Type": "application/octet-stream"})
        await resp.prepare(request)
        await resp.write(body)
        junk = (json.dumps({"custom_id": "nobody", "result": {"type": "expired"}}) + "\n").encode() * 4096
        try:
            for _ in range(100_000):  # up to ~250 GB: the reader must stop first
                await resp.write(junk)
                self.sent_bytes += len(junk)
        except (ConnectionResetError, RuntimeError):
            pass
        return resp

    async def _file_content(self, request):
        file_id = request.match_info["id"]
        batch_id, _, kind = file_id.rpartition("-")
        b = self.batches.get(batch_id)
        if b is None or b["results"] is None or kind != "output":
            return await super()._file_content(request)
        return await self._stream(request, self._oa_files(b)[0])

    async def _an_results(self, request):
        resp = await super()._an_results(request)
        return resp if resp.status != 200 else await self._stream(request, resp.body)


@pytest.mark.parametrize("kind", KINDS)
def test_a_huge_results_file_is_read_no_further_than_its_answers_can_be(tmp_path, kind):
    with Huge() as srv:
        write_suite(tmp_path, srv, kind, {"wait_s": 0.1, "poll_s": 0.05, "poll_max_s": 0.1})
        out = cli(tmp_path, "run", "suite.json", "--output-dir", "out")
        assert out.returncode == 0, out.stdout + out.stderr
        assert srv.sent_bytes < 200 << 20
    rep = report(tmp_path)
    assert "read stopped there" in " ".join(rep["run"]["batches"][0]["notes"])
    assert Counter(a["status"] for a in rep["attempts"]) == {"passed": 5}
    verified(tmp_path)


class HugeOutputAndErrors(Huge):
    """OpenAI: an output file padded past any bound, and an error file (a separate, sane file)
    with the lines of the requests that failed inside the batch."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.outcome = lambda prompt: "error" if "3+1" in prompt else "expire" if "4+1" in prompt else "ok"
        self.expire_batches = True
        self.expire_after = 10


def test_a_huge_output_file_does_not_lose_the_error_files_lines(tmp_path):
    # OpenAI's output and error files are two files: a hostile or broken output file read no
    # further than its bound stopped the error file from being read at all, so the request that
    # failed inside the batch (HTTP 400) and the one the expired batch never ran (both not billed,
    # a known 0, with the provider's reason) became errors "without a result" of unknown usage.
    with HugeOutputAndErrors() as srv:
        write_suite(tmp_path, srv, "openai", {"wait_s": 0.1, "poll_s": 0.05, "poll_max_s": 0.1})
        out = cli(tmp_path, "run", "suite.json", "--output-dir", "out")
        assert out.returncode == 2, out.stdout + out.stderr  # two attempts are errors
    rep = report(tmp_path)
    by_case = {a["case_id"]: a for a in rep["attempts"]}
    assert [by_case[f"c{i}"]["status"] for i in range(5)] == ["passed"] * 3 + ["error"] * 2
    assert "scripted request error" in by_case["c3"]["error"], by_case["c3"]["error"]
    assert "batch_expired" in by_case["c4"]["error"], by_case["c4"]["error"]
    for case in ("c3", "c4"):
        assert by_case[case]["measurements"]["cost_usd"] == 0.0
    assert rep["requests"]["unknown_usage"] == 0 and rep["requests"]["possibly_billed"] == []
    (batch,) = rep["run"]["batches"]
    assert any("read stopped there" in n for n in batch["notes"]), batch
    verified(tmp_path)
