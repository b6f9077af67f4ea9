"""Probes of provider batches (`batch: true`) and privacy from outside: a loopback fake of both
batch APIs playing a hostile or flaky provider, the CLI on real files, every written byte read
back. (Earlier probes: tests/test_probe_batch_ray.py, tests/test_probe9_unsent.py,
tests/test_probe8_liveness.py.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter

import pytest
from aiohttp import web

from tests.cli_inprocess import run_cli
from tests.servers.fake_batches import FakeBatches
from tests.test_batch_cli import CASES, interrupt_once_batched, report, run_dir, statuses, write_suite


def cli(tmp, *args: str) -> subprocess.CompletedProcess:
    """`python -m scoreboard ARGS` in-process (tests/cli_inprocess.py), for the probes about what a
    run writes and says. The Ctrl+C stays a real process's signal (interrupt_once_batched), and the
    privacy probe runs real processes: what reaches a real terminal is its point."""
    return run_cli(args, cwd=tmp)


def verified(tmp) -> None:
    (path,) = (tmp / "out").glob("nightly/*.json")
    out = cli(tmp, "verify", str(path))
    assert out.returncode == 0, out.stdout + out.stderr


# --------------------------------------------------------------------------- possibly billed, resumed


class FirstBatchGone(FakeBatches):
    """The first batch ends on its first look and its results are gone (404: a file the provider
    no longer keeps); every later batch ends only when released."""

    def _retrieved(self, batch: dict) -> None:
        with self._lock:
            batch["polls"] += 1
            first = batch["id"] == min(self.batches)
            if batch["results"] is None and (first or not self.hold):
                self._finish(batch)

    def _gone(self, batch_id: str) -> bool:
        return batch_id == min(self.batches)

    async def _file_content(self, request: web.Request) -> web.Response:
        if self._gone(request.match_info["id"].rpartition("-")[0]):
            return web.json_response({"error": {"message": "No such File object"}}, status=404)
        return await super()._file_content(request)

    async def _an_results(self, request: web.Request) -> web.Response:
        if self._gone(request.match_info["id"]):
            return web.json_response({"type": "error", "error": {"type": "not_found_error", "message": "gone"}},
                                     status=404)
        return await super()._an_results(request)


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_requests_possibly_billed_stay_listed_after_resume(tmp_path, kind):
    """A batch whose results are refused for good lists its requests in
    `requests.possibly_billed`; the run waits on another batch and is resumed. Before, the
    resumed report's list was empty: the entries lived only in the first process's memory (the
    log said just "failed"), so a run that may have been billed for 3 requests said it was not."""
    with FirstBatchGone() as srv:
        srv.hold = True
        write_suite(tmp_path, srv, kind, batch={"size": 3, "wait_s": 0.2, "poll_s": 0.05, "poll_for_s": 0},
                    cases=CASES[:6])
        first = cli(tmp_path, "run", "suite.json", "--output-dir", "out", "--no-progress")
        assert first.returncode == 4, first.stdout + first.stderr
        rep = report(tmp_path)
        assert statuses(rep) == {"error": 3, "waiting": 3}
        gone = sorted(cid for cid, _ in srv.batches[min(srv.batches)]["requests"])
        billed = rep["requests"]["possibly_billed"]
        assert len(billed) == 3, billed
        verified(tmp_path)
        srv.release()
        second = cli(tmp_path, "run", "--resume", str(run_dir(tmp_path)), "--no-progress")
        assert second.returncode == 2, second.stdout + second.stderr
    rep = report(tmp_path)
    assert statuses(rep) == {"error": 3, "passed": 3}
    assert rep["requests"]["possibly_billed"] == billed, rep["requests"]
    assert sorted(b["custom_id"] for b in billed) == gone
    assert "3 requests possibly billed" in second.stdout
    verified(tmp_path)


# --------------------------------------------------------------------------- a garbled status answer


class GarbledLook(FakeBatches):
    """The first look at a batch answers 200 with something that is no batch (a proxy's error
    page, JSON with no id); the looks after answer as the provider does."""

    garble = b"<html>502 Bad Gateway</html>"
    looks = 0

    async def _garbled(self, request: web.Request, real) -> web.Response:
        self.looks += 1
        if self.looks == 1:
            return web.Response(body=self.garble, content_type="text/html")
        return await real(request)

    async def _oa_get(self, request: web.Request) -> web.Response:
        return await self._garbled(request, super()._oa_get)

    async def _an_get(self, request: web.Request) -> web.Response:
        return await self._garbled(request, super()._an_get)


@pytest.mark.parametrize("garble", [b"<html>502 Bad Gateway</html>", b'{"object": "batch"}', b'{"id": "batch_00'])
@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_one_garbled_status_answer_does_not_abandon_a_running_batch(tmp_path, kind, garble):
    """A status poll answered 200 with an error page (or JSON with no batch id, or JSON cut
    short) is a failed look, polled again like a 503: the batch is collected when it ends.
    Before, that one answer ended every attempt of the batch as an error ("cannot read batch
    ...: batch API answer is not JSON"), listed as possibly billed, while the batch ran on at the
    provider: billed, its answers never read, and not read on --resume either."""
    with GarbledLook() as srv:
        srv.garble, srv.polls_to_end = garble, 2
        write_suite(tmp_path, srv, kind, batch={"size": 10, "wait_s": 0.1, "poll_s": 0.05}, cases=CASES[:3])
        out = cli(tmp_path, "run", "suite.json", "--output-dir", "out", "--no-progress")
        assert out.returncode == 0, out.stdout + out.stderr
        assert len(srv.batches) == 1 and len(srv.submitted) == 3 and srv.looks >= 2
    rep = report(tmp_path)
    assert statuses(rep) == {"passed": 3}
    assert rep["requests"]["possibly_billed"] == [] and rep["requests"]["completed"] == 3
    verified(tmp_path)


# --------------------------------------------------------------------------- Ctrl+C, then --resume


class SlowCancel(FakeBatches):
    """A cancel is taken, but a held batch ends (cancelled) only once released: after the grace
    of the run that cancelled it."""

    def _retrieved(self, batch: dict) -> None:
        with self._lock:
            batch["polls"] += 1
            if batch["results"] is None and not self.hold:
                self._finish(batch)


@pytest.mark.parametrize("slow", [False, True], ids=["cancelled-in-grace", "cancelled-after"])
@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_ctrl_c_cancels_the_batches_and_resume_finishes_the_run(tmp_path, kind, slow):
    """Ctrl+C cancels the submitted batches: their attempts are interrupted, not errors, so
    `--resume` submits the cancelled requests anew and the run completes. Before, requests the
    provider cancelled within the grace were final errors: the resume reused all 6 and said
    `completed` with 6 errors (exit 2), none of the cases ever answered; and a batch cancelled
    after the grace was collected by the resume as 6 errors the same way."""
    with (SlowCancel() if slow else FakeBatches()) as srv:
        srv.hold = True
        write_suite(tmp_path, srv, kind, batch={"size": 3, "wait_s": 0.1, "poll_s": 0.05}, cases=CASES[:6],
                    grace_seconds=1 if slow else 20)
        code, stderr = interrupt_once_batched(tmp_path, srv)
        assert code == 2, stderr
        assert sorted(srv.cancels) == sorted(srv.batches)
        rep = report(tmp_path)
        assert rep["run"]["status"] == "stopped" and statuses(rep) == {"interrupted": 6}
        if not slow:
            assert all("may still be billed" in a["error"] for a in rep["attempts"])
            assert len(rep["requests"]["possibly_billed"]) == 6
        verified(tmp_path)
        srv.release()
        out = cli(tmp_path, "run", "--resume", str(run_dir(tmp_path)), "--no-progress")
        assert out.returncode == 0, out.stdout + out.stderr
        # each case sent twice: once in a batch Ctrl+C cancelled, once more by the resume
        assert Counter(srv.prompts()) == {c["input"]: 2 for c in CASES[:6]}
        assert len(srv.batches) == 4  # two cancelled, two sent by the resume
    rep = report(tmp_path)
    assert rep["run"]["status"] == "completed" and statuses(rep) == {"passed": 6}
    requests = rep["requests"]
    assert requests["sent"] == 12 and requests["completed"] == 6 and requests["failed"] == 6
    assert len(requests["possibly_billed"]) == 6  # the cancelled ones, still listed
    verified(tmp_path)


# --------------------------------------------------------------------------- a provider that is down


def refused_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class UploadFails(FakeBatches):
    """An OpenAI file upload answers 500 (the upload is not a batch: none can exist)."""

    async def _upload(self, request: web.Request) -> web.Response:
        return web.json_response({"error": {"message": "upload failed", "type": "server_error"}}, status=500)


@pytest.mark.parametrize("how", ["openai-refused", "anthropic-refused", "openai-upload-500"])
def test_a_batch_whose_create_never_left_is_not_possibly_billed(tmp_path, how):
    """A batched subject whose provider refuses the connection (or whose OpenAI file upload
    fails: a batch is made only by POST /batches, never sent then): no batch can exist, so its
    requests are errors saying the batch was not created, spent nothing, and are not listed as
    possibly billed. Before, the run asked the provider whether the batch existed (refused too,
    or not found: then it waited settle_s, 300 s) and ended every request with "cannot tell
    whether batch submission ... reached openai ...; not sent again: it may be billed", usage
    unknown and listed in requests.possibly_billed, though nothing had left the machine."""
    kind, _, what = how.partition("-")
    with UploadFails() as srv:
        write_suite(tmp_path, srv, kind, batch={"size": 10, "wait_s": 0.1, "poll_s": 0.05}, cases=CASES[:2])
        if what == "refused":
            path = tmp_path / "suite.json"
            suite = json.loads(path.read_text())
            suite["subject"]["base_url"] = f"http://127.0.0.1:{refused_port()}" + ("/v1" if kind == "openai" else "")
            suite["subject"]["retries"] = {"attempts": 2, "base_delay_s": 0.01, "max_delay_s": 0.02}
            path.write_text(json.dumps(suite))
        out = cli(tmp_path, "run", "suite.json", "--output-dir", "out", "--no-progress")
        assert out.returncode == 2, out.stdout + out.stderr
        assert not srv.batches
    rep = report(tmp_path)
    assert statuses(rep) == {"error": 2}
    for a in rep["attempts"]:
        assert "batch not created" in a["error"] and "may be billed" not in a["error"], a["error"]
    requests = rep["requests"]
    assert requests["possibly_billed"] == [] and requests["cost_spent_usd"] == 0.0, requests
    assert rep["run"]["batches"][0]["status"] == "not-created"
    verified(tmp_path)


# --------------------------------------------------------------------------- privacy: every written byte


KEY = "sk-probe11-SECRET-0123456789abcdef"
HEADER = "probe11-HEADER-SECRET-9876543210"


class Echoes(FakeBatches):
    """Repeats the credentials each request carried: in a 404 for the results, and in every
    answer the batch gives (a model that repeats its key)."""

    def _creds(self, request: web.Request) -> str:
        return " ".join(f"{k}: {v}" for k, v in request.headers.items()
                        if k.lower() in ("authorization", "x-api-key", "x-probe-token"))

    async def _file_content(self, request: web.Request) -> web.Response:
        if request.match_info["id"].endswith("-errors"):
            return web.json_response({"error": {"message": "gone " + self._creds(request)}}, status=404)
        resp = await super()._file_content(request)
        return web.Response(body=resp.body.replace(b"ANSWER", json.dumps(self._creds(request))[1:-1].encode()))

    async def _an_results(self, request: web.Request) -> web.Response:
        resp = await super()._an_results(request)
        return web.Response(body=resp.body.replace(b"ANSWER", json.dumps(self._creds(request))[1:-1].encode()))


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_no_credential_reaches_any_file_a_batched_run_writes(tmp_path, kind):
    """A provider that echoes the API key and a literal credential header in its answers and
    error bodies: no byte of either is in any file the run and its resume wrote (reports in
    every format, attempt log with its batch journal, run.json, history store) or on the
    terminal."""
    with Echoes() as srv:
        srv.hold = True
        path = write_suite(tmp_path, srv, kind, batch={"size": 2, "wait_s": 0.1, "poll_s": 0.05, "poll_for_s": 0},
                           cases=CASES[:3])
        suite = json.loads(path.read_text())
        suite["subject"].update(api_key_env="PROBE11_KEY", headers={"X-Probe-Token": HEADER})
        suite_text = json.dumps(suite)
        path.write_text(suite_text)
        env = {"PROBE11_KEY": KEY}
        first = subprocess.run([sys.executable, "-m", "scoreboard", "run", "suite.json", "--output-dir", "out",
                                "--no-progress", "--verbose"], cwd=tmp_path, capture_output=True, text=True,
                               timeout=60, env={**os.environ, **env})
        assert first.returncode == 4, first.stdout + first.stderr
        srv.release()
        second = subprocess.run([sys.executable, "-m", "scoreboard", "run", "--resume", str(run_dir(tmp_path)),
                                 "--verbose"], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                                env={**os.environ, **env})
        assert second.returncode in (0, 2), second.stdout + second.stderr
        seen = [h for r in srv.requests for h in r["headers"].values()]
        assert any(KEY in h for h in seen) and any(HEADER in h for h in seen)  # they were sent
    (rep_path,) = (tmp_path / "out" / "nightly").glob("*.json")
    assert "***" in rep_path.read_text(), "the echoes were written, masked"
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p != path]
    assert any(p.name == "history.sqlite" for p in written) and any(p.name == "attempts.jsonl" for p in written)
    for secret in (KEY, HEADER, "SECRET-0123456789", "HEADER-SECRET"):
        assert not [p for p in written if secret.encode() in p.read_bytes()], secret
        for out in (first, second):
            assert secret not in out.stdout + out.stderr
