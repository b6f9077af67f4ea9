"""Probes of provider batches (`batch: true`) from outside: polling deadlines against slow
servers, result files naming requests of other batches, kill -9 of a run mid-download then
--resume. (The Ray probe lives in tests/engine/test_ray_executor.py: every Ray test in one file,
so parallel test workers never run two Ray instances at once.)"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
from aiohttp import web

from scoreboard.errors import BatchPending
from tests.servers.fake_batches import FakeBatches
from tests.subjects import make, req
from tests.test_batch_cli import (
    CASES,
    cli,
    report,
    run_dir,
    statuses,
    verified,
    write_suite,
)

#: a run that hangs fails its test after this long instead
HANG_GUARD_S = 10.0


def ask(subject, n: int) -> list:
    """Cases c0..c{n-1} ("What is i+1?") through `subject` at once: results or exceptions."""

    async def main():
        try:
            return await asyncio.wait_for(asyncio.gather(
                *(subject.run(req(f"What is {i}+1?", case_id=f"c{i}")) for i in range(n)),
                return_exceptions=True), HANG_GUARD_S)
        finally:
            await subject.aclose()

    return asyncio.run(main())


# --------------------------------------------------------------------------- poll_for_s


class SlowRetrieve(FakeBatches):
    """A batch retrieve after the first answers after 30 s, or with a 503 asking to come back
    in 100 s (under the 120 s a management call waits)."""

    mode = "slow"
    looks = 0

    async def _oa_get(self, request: web.Request) -> web.Response:
        self.looks += 1
        if self.looks > 1 and self.mode == "slow":
            await asyncio.sleep(30)
        elif self.looks > 1:
            return web.json_response({"error": {"message": "busy", "type": "server_error"}}, status=503,
                                     headers={"Retry-After": "100"})
        return await super()._oa_get(request)


@pytest.mark.parametrize("mode", ["slow", "retry-after"])
def test_polling_ends_at_poll_for_s_whatever_the_server_does(mode):
    """poll_for_s: 1 against a batch server whose retrieve stalls (or asks for 100 s): the
    attempts wait once the second is up (before, the run sat in the retrieve for its 120 s
    timeout, or the Retry-After, and every retry)."""
    with SlowRetrieve() as srv:
        srv.hold, srv.mode = True, mode
        subject = make("openai", srv, batch={"size": 10, "wait_s": 0.05, "poll_s": 0.2, "poll_for_s": 1.0})
        began = time.monotonic()
        results = ask(subject, 2)
        took = time.monotonic() - began
    assert all(isinstance(r, BatchPending) for r in results), results
    assert took < 4.0, took


# --------------------------------------------------------------------------- results of other batches


class CrossedResults(FakeBatches):
    """The first batch's output file also answers the first request of the second batch, and
    that second batch ends only on its sixth look."""

    def _retrieved(self, batch: dict) -> None:
        with self._lock:
            batch["polls"] += 1
            due = 2 if batch["id"] == min(self.batches) else 6
            if batch["results"] is None and batch["polls"] >= due:
                self._finish(batch)

    async def _file_content(self, request: web.Request) -> web.Response:
        resp = await super()._file_content(request)
        ids = sorted(self.batches)
        if request.match_info["id"] == f"{ids[0]}-output" and len(ids) > 1:
            other = self.batches[ids[1]]["requests"][0][0]
            answer = {"choices": [{"message": {"role": "assistant", "content": "FOREIGN"}, "finish_reason": "stop"}],
                      "usage": {"prompt_tokens": 1, "completion_tokens": 1}}
            line = {"id": "x", "custom_id": other, "response": {"status_code": 200, "body": answer}, "error": None}
            return web.Response(body=resp.body + json.dumps(line).encode() + b"\n")
        return resp


def test_a_result_line_naming_another_batchs_request_is_not_taken_for_it():
    """A results file holding a line for a request of another batch of the same run: that line
    is not this batch's (before, it was recorded as the other request's answer, and that
    request's attempt then waited for ever: its own batch's line was skipped as a repeat)."""
    with CrossedResults() as srv:
        subject = make("openai", srv, batch={"size": 2, "wait_s": 0.05, "poll_s": 0.05, "poll_max_s": 0.1})
        results = ask(subject, 4)
    assert [r.output.text for r in results] == [f"ANSWER: {i + 1}" for i in range(4)], results


# --------------------------------------------------------------------------- kill -9 mid-download


class StalledDownload(FakeBatches):
    """An OpenAI output file sends its first three lines, then nothing until `gate` is set."""

    gate: threading.Event | None = None

    async def _file_content(self, request: web.Request) -> web.StreamResponse:
        resp = await super()._file_content(request)
        if not request.match_info["id"].endswith("-output") or self.gate is None or self.gate.is_set():
            return resp
        out = web.StreamResponse()
        await out.prepare(request)
        await out.write(b"\n".join(resp.body.split(b"\n")[:3]) + b"\n")
        while not self.gate.is_set():
            await asyncio.sleep(0.05)
        return out


@pytest.mark.parametrize("cut", ["as-killed", "between-result-and-request-end"])
def test_kill_9_mid_download_then_resume_pays_and_counts_each_request_once(tmp_path, cut):
    """kill -9 while a batch's results arrive (three recorded), then --resume: every attempt
    passes, nothing is submitted twice, and every request is counted once with its usage. With
    the kill landing between a result's record and its request's end (the log cut there),
    the resumed run ended that request from the recorded answer (before, it stayed pending:
    `batch_pending: 1` and an unknown cost in a completed run)."""
    with StalledDownload() as srv:
        srv.gate = threading.Event()
        write_suite(tmp_path, srv, "openai", batch={"size": 10, "wait_s": 0.1, "poll_s": 0.05})
        proc = subprocess.Popen([sys.executable, "-m", "scoreboard", "run", "suite.json", "--output-dir", "out",
                                 "--no-progress"], cwd=tmp_path, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                logs = list(tmp_path.glob("out/nightly/*/attempts.jsonl"))
                if logs and logs[0].read_text().count('"batch-result"') >= 3:
                    break
                time.sleep(0.05)
            time.sleep(0.2)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(10)
        finally:
            if proc.poll() is None:
                proc.kill()
        srv.gate.set()
        log = run_dir(tmp_path) / "attempts.jsonl"
        lines = log.read_text().splitlines(keepends=True)
        assert sum('"batch-result"' in line for line in lines) == 3, lines
        if cut != "as-killed":
            last = max(i for i, line in enumerate(lines) if '"batch-result"' in line)
            log.write_text("".join(lines[:last + 1]))
        out = cli(tmp_path, "run", "--resume", str(run_dir(tmp_path)), "--no-progress")
        assert out.returncode == 0, out.stdout + out.stderr
        assert len(srv.batches) == 1 and len(srv.submitted) == len(CASES)
    rep = report(tmp_path)
    assert statuses(rep) == {"passed": len(CASES)}
    requests = rep["requests"]
    assert requests["sent"] == requests["completed"] == len(CASES), requests
    assert "batch_pending" not in requests and requests["possibly_billed"] == []
    assert requests["cost_spent_usd"] == pytest.approx(sum(a["measurements"]["cost_usd"] for a in rep["attempts"]))
    verified(tmp_path)
