"""Loopback fake of the two provider batch APIs, for driving `batch: true` subjects in tests.

OpenAI (the Batch API, shapes of openai-python's `Batch`, `FileObject` and the output/error
file lines):
    POST /v1/files                      multipart: purpose=batch, file=<JSONL of {custom_id, method,
                                        url, body}>  -> {id, object: "file", bytes, purpose, ...}
    POST /v1/batches                    {input_file_id, endpoint, completion_window, metadata}
    GET  /v1/batches                    ?limit&after -> {object: "list", data, first_id, last_id, has_more}
    GET  /v1/batches/{id}
    POST /v1/batches/{id}/cancel
    GET  /v1/files/{id}/content         output / error files: {id, custom_id, response: {status_code,
                                        request_id, body}, error}
Anthropic (Message Batches, shapes of anthropic-sdk-python's `MessageBatch` and
`MessageBatchIndividualResponse`):
    POST /v1/messages/batches           {requests: [{custom_id, params}]}
    GET  /v1/messages/batches           ?limit&after_id -> {data, has_more, first_id, last_id}, newest first
    GET  /v1/messages/batches/{id}
    POST /v1/messages/batches/{id}/cancel
    GET  /v1/messages/batches/{id}/results

Scripting (attributes of the server object; the server runs in a thread of the test process, so
it outlives the scoreboard processes a test starts, stops and kills):
    polls_to_end: N     a batch ends on its Nth look (a retrieve, or a list page showing it; 0: it
                        has ended when created)
    hold: True          no batch ends until `release()` (or `end(batch_id)`)
    outcome(prompt) -> "ok" | "error" | "expire"    per request: answered, errored (HTTP 400 /
                        errored result), or expired (its batch ended before it ran)
    expire_batches: True    every batch ends expired: requests whose outcome is "ok" are answered
                        only for the first `expire_after` of the batch, the rest expire
    fail_validation: True   OpenAI batches end "failed" with a validation error (nothing runs)
    stall_create: threading.Event   a create makes the batch, then answers only once the event
                        is set (a client killed meanwhile never learns the batch id)
    stall_upload: threading.Event   an OpenAI file upload (or an Anthropic create) answers only
                        once the event is set, and makes nothing (a client killed meanwhile
                        made no batch); `uploading` is set when one arrives
    create_status: N    the next create answers HTTP N without making a batch
    fail_results: N     the next N results downloads (OpenAI files, Anthropic results) answer 503
    reply(body) -> str  the answer text (default: arithmetic "ANSWER: n", else an echo);
                        judge requests (OpenAI json_schema / Anthropic forced tool) get a JSON
                        judgment from `judgment(body)` (default: {"verdict": true, ...})
Results come back in reverse request order (both providers say result order is not request
order): a client must match them by custom id.
Seen by tests: `batches` (id -> state), `submitted` (every request body in submission order,
with its custom id and batch id), `cancels`, `requests` (every HTTP request, as FakeServerBase
records).

    python -m tests.servers.fake_batches --port 0     # out of process; first line "PORT <n>"
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import re
import signal
import threading
import time
from collections.abc import Callable
from datetime import datetime, timezone
from email.parser import BytesParser
from email.policy import HTTP
from typing import Any

from aiohttp import web

from .fake_provider import FakeServerBase, default_reply, extract_prompt, words

TERMINAL_OPENAI = {"completed", "expired", "cancelled", "failed"}


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).isoformat().replace("+00:00", "Z")


def default_judgment(body: dict) -> dict:
    return {"verdict": True, "explanation": "looks right"}


class FakeBatches(FakeServerBase):
    """Both batch APIs over one loopback server (see the module docstring)."""

    PATHS = {"/v1/files": "files", "/v1/batches": "batches", "/v1/messages/batches": "message_batches"}
    PREFIXES = {"/v1/files/": "files", "/v1/batches/": "batches", "/v1/messages/batches/": "message_batches"}

    def __init__(self, **kw: Any):
        super().__init__(**kw)
        self.polls_to_end = 1
        self.hold = False
        self.outcome: Callable[[str], str] = lambda prompt: "ok"
        self.expire_batches = False
        self.expire_after = 0
        self.fail_validation = False
        self.stall_create: threading.Event | None = None
        self.stall_upload: threading.Event | None = None
        self.uploading = threading.Event()
        self.create_status: int | None = None
        self.fail_results = 0
        self.judgment: Callable[[dict], dict] = default_judgment
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict] = {}
        self.submitted: list[dict] = []
        self.cancels: list[str] = []
        self.created = threading.Event()
        self._ids = itertools.count(1)

    # ---- scripting helpers
    def release(self) -> None:
        """Let held batches end (on their next retrieve)."""
        with self._lock:
            self.hold = False

    def end(self, batch_id: str) -> None:
        """End one batch now, whatever `hold` says."""
        with self._lock:
            self._finish(self.batches[batch_id])

    def prompts(self) -> list[str]:
        return [extract_prompt(s["body"]) for s in self.submitted]

    # ---- routes
    def _add_routes(self, app: web.Application) -> None:
        r = app.router
        r.add_post("/v1/files", self._upload)
        r.add_get("/v1/files/{id}/content", self._file_content)
        r.add_post("/v1/batches", self._oa_create)
        r.add_get("/v1/batches", self._oa_list)
        r.add_get("/v1/batches/{id}", self._oa_get)
        r.add_post("/v1/batches/{id}/cancel", self._oa_cancel)
        r.add_post("/v1/messages/batches", self._an_create)
        r.add_get("/v1/messages/batches", self._an_list)
        r.add_get("/v1/messages/batches/{id}", self._an_get)
        r.add_post("/v1/messages/batches/{id}/cancel", self._an_cancel)
        r.add_get("/v1/messages/batches/{id}/results", self._an_results)

    def _new(self, prefix: str) -> str:
        return f"{prefix}_{next(self._ids):04d}"

    # ---- OpenAI
    async def _stalled_upload(self) -> bool:
        """True when this upload stalls (and then makes nothing)."""
        event = self.stall_upload
        if event is None:
            return False
        self.uploading.set()
        while not event.is_set():
            await asyncio.sleep(0.05)
        return True

    async def _upload(self, request: web.Request) -> web.Response:
        if await self._stalled_upload():
            return web.json_response({"error": {"message": "upload abandoned", "type": "server_error"}},
                                     status=500)
        # The recording middleware has read the body already (aiohttp keeps it): parse it here.
        raw = await request.read()
        message = BytesParser(policy=HTTP).parsebytes(
            b"Content-Type: " + request.headers.get("Content-Type", "").encode() + b"\r\n\r\n" + raw)
        purpose, data, name = None, b"", "upload.jsonl"
        for part in message.iter_parts() if message.is_multipart() else ():
            field = part.get_param("name", header="content-disposition")
            if field == "purpose":
                purpose = part.get_payload(decode=True).decode()
            elif field == "file":
                name = part.get_filename() or name
                data = part.get_payload(decode=True)
        if purpose != "batch" or not data:
            return web.json_response({"error": {"message": "purpose must be batch and file given",
                                                "type": "invalid_request_error"}}, status=400)
        file_id = self._new("file")
        with self._lock:
            self.files[file_id] = bytes(data)
        return web.json_response({"id": file_id, "object": "file", "bytes": len(data), "created_at": int(time.time()),
                                  "filename": name, "purpose": "batch"})

    async def _oa_create(self, request: web.Request) -> web.Response:
        body = await request.json()
        if self.create_status:
            status, self.create_status = self.create_status, None
            return web.json_response({"error": {"message": "scripted create failure", "type": "server_error"}},
                                     status=status)
        content = self.files.get(body.get("input_file_id"))
        if content is None or body.get("completion_window") != "24h" or body.get("endpoint") != "/v1/chat/completions":
            return web.json_response({"error": {"message": "bad batch create", "type": "invalid_request_error"}},
                                     status=400)
        requests = []
        for line in content.decode().splitlines():
            item = json.loads(line)
            assert item["method"] == "POST" and item["url"] == "/v1/chat/completions", item
            requests.append((item["custom_id"], item["body"]))
        if len({cid for cid, _ in requests}) != len(requests):
            return web.json_response({"error": {"message": "duplicate custom_id", "type": "invalid_request_error"}},
                                     status=400)
        batch = self._make("openai", requests, body)
        await self._maybe_stall()
        return web.json_response(self._oa_view(batch))

    async def _maybe_stall(self) -> None:
        self.created.set()
        if self.stall_create is not None:
            while not self.stall_create.is_set():
                await asyncio.sleep(0.05)

    def _make(self, provider: str, requests: list, create: dict) -> dict:
        now = time.time()
        batch_id = self._new("batch" if provider == "openai" else "msgbatch")
        batch = {"id": batch_id, "provider": provider, "requests": requests, "created_at": now, "polls": 0,
                 "status": "in_progress", "metadata": create.get("metadata"),
                 "input_file_id": create.get("input_file_id"), "results": None, "cancel": False,
                 "ended_at": None}
        with self._lock:
            self.batches[batch_id] = batch
            for cid, b in requests:
                self.submitted.append({"custom_id": cid, "batch_id": batch_id, "body": b})
            if self.polls_to_end == 0 and not self.hold:
                self._finish(batch)
        return batch

    def _retrieved(self, batch: dict) -> None:
        with self._lock:
            batch["polls"] += 1
            due = not self.hold and batch["polls"] >= self.polls_to_end
            if batch["results"] is None and (batch["cancel"] or due):
                self._finish(batch)

    def _answer(self, provider: str, body: dict) -> dict:
        """A Chat Completion or a Message for one request body."""
        forced = (body.get("response_format") or {}).get("type") == "json_schema" or \
            (body.get("tool_choice") or {}).get("type") == "tool"
        text = json.dumps(self.judgment(body)) if forced else (self.reply(body) if self.reply else default_reply(body))
        n_in, n_out = words(extract_prompt(body)) + 5, max(1, words(text))
        if provider == "openai":
            return {"id": self._new("chatcmpl"), "object": "chat.completion", "model": body.get("model"),
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                 "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": n_in, "completion_tokens": n_out, "total_tokens": n_in + n_out}}
        if forced:
            content = [{"type": "tool_use", "id": self._new("toolu"), "name": body["tool_choice"]["name"],
                        "input": json.loads(text)}]
        else:
            content = [{"type": "text", "text": text}]
        return {"id": self._new("msg"), "type": "message", "role": "assistant", "model": body.get("model"),
                "content": content, "stop_reason": "tool_use" if forced else "end_turn",
                "usage": {"input_tokens": n_in, "output_tokens": n_out}}

    def _finish(self, batch: dict) -> None:
        """Process every request (called with the lock held)."""
        out = []
        provider = batch["provider"]
        for k, (cid, body) in enumerate(batch["requests"]):
            fate = self.outcome(extract_prompt(body))
            if batch["cancel"]:
                fate = "cancel"
            elif self.fail_validation and provider == "openai":
                fate = "failed"
            elif self.expire_batches and fate != "error" and (k >= self.expire_after or fate == "expire"):
                fate = "expire"
            out.append((cid, fate, self._answer(provider, body) if fate == "ok" else None))
        batch["results"] = out
        batch["ended_at"] = time.time()
        if batch["cancel"]:
            batch["status"] = "cancelled"
        elif self.fail_validation and provider == "openai":
            batch["status"] = "failed"
        elif self.expire_batches:
            batch["status"] = "expired"
        else:
            batch["status"] = "completed"

    def _oa_view(self, b: dict) -> dict:
        results = b["results"] or []
        done = sum(1 for _, fate, _ in results if fate == "ok")
        failed = sum(1 for _, fate, _ in results if fate == "error")
        status = b["status"]
        if b["results"] is None and b["cancel"]:
            status = "cancelling"
        view = {"id": b["id"], "object": "batch", "endpoint": "/v1/chat/completions", "errors": None,
                "input_file_id": b["input_file_id"], "completion_window": "24h", "status": status,
                "output_file_id": None, "error_file_id": None, "created_at": int(b["created_at"]),
                "in_progress_at": int(b["created_at"]), "expires_at": int(b["created_at"]) + 86400,
                "request_counts": {"total": len(b["requests"]), "completed": done, "failed": failed},
                "metadata": b["metadata"]}
        if status == "failed":
            view["errors"] = {"object": "list", "data": [{"code": "invalid_request", "line": 1,
                                                           "message": "scripted validation failure",
                                                           "param": "body.model"}]}
        elif b["results"] is not None:
            view["output_file_id"] = f"{b['id']}-output"
            view["error_file_id"] = f"{b['id']}-errors"
            view[f"{status}_at"] = int(b["ended_at"])
        return view

    def _oa_files(self, b: dict) -> tuple[bytes, bytes]:
        ok, bad = [], []
        for cid, fate, answer in reversed(b["results"] or []):  # not in request order, as providers warn
            line = {"id": self._new("batch_req"), "custom_id": cid}
            if fate == "ok":
                ok.append({**line, "response": {"status_code": 200, "request_id": self._new("req"), "body": answer},
                           "error": None})
            elif fate == "error":
                bad.append({**line, "response": {"status_code": 400, "request_id": self._new("req"),
                                                 "body": {"error": {"message": "scripted request error",
                                                                    "type": "invalid_request_error"}}},
                            "error": None})
            elif fate == "expire":
                bad.append({**line, "response": None, "error": {
                    "code": "batch_expired",
                    "message": "This request could not be executed before the completion window expired."}})
            elif fate == "cancel":
                bad.append({**line, "response": None, "error": {
                    "code": "batch_cancelled", "message": "This request was cancelled before it was executed."}})
        enc = lambda rows: "".join(json.dumps(r) + "\n" for r in rows).encode()  # noqa: E731
        return enc(ok), enc(bad)

    def _results_fail(self) -> bool:
        with self._lock:
            if self.fail_results > 0:
                self.fail_results -= 1
                return True
        return False

    async def _file_content(self, request: web.Request) -> web.Response:
        if self._results_fail():
            return web.json_response({"error": {"message": "scripted outage", "type": "server_error"}}, status=503)
        file_id = request.match_info["id"]
        batch_id, _, kind = file_id.rpartition("-")
        with self._lock:
            b = self.batches.get(batch_id)
            if b is None or b["results"] is None or kind not in ("output", "errors"):
                data = self.files.get(file_id)
                if data is None:
                    return web.json_response({"error": {"message": "no such file"}}, status=404)
                return web.Response(body=data)
            ok, bad = self._oa_files(b)
        return web.Response(body=ok if kind == "output" else bad, content_type="application/octet-stream")

    async def _oa_list(self, request: web.Request) -> web.Response:
        limit = int(request.query.get("limit", 20))
        after = request.query.get("after")
        with self._lock:
            mine = [b for b in self.batches.values() if b["provider"] == "openai"][::-1]  # newest first
        for b in mine:
            self._retrieved(b)
        if after:
            ids = [b["id"] for b in mine]
            mine = mine[ids.index(after) + 1:] if after in ids else []
        page = mine[:limit]
        return web.json_response({"object": "list", "data": [self._oa_view(b) for b in page],
                                  "first_id": page[0]["id"] if page else None,
                                  "last_id": page[-1]["id"] if page else None, "has_more": len(mine) > limit})

    def _batch(self, request: web.Request, provider: str) -> dict | None:
        b = self.batches.get(request.match_info["id"])
        return b if b is not None and b["provider"] == provider else None

    async def _oa_get(self, request: web.Request) -> web.Response:
        b = self._batch(request, "openai")
        if b is None:
            return web.json_response({"error": {"message": "no such batch", "type": "invalid_request_error"}},
                                     status=404)
        self._retrieved(b)
        return web.json_response(self._oa_view(b))

    async def _oa_cancel(self, request: web.Request) -> web.Response:
        b = self._batch(request, "openai")
        if b is None:
            return web.json_response({"error": {"message": "no such batch"}}, status=404)
        with self._lock:
            self.cancels.append(b["id"])
            if b["results"] is None:
                b["cancel"] = True
        return web.json_response(self._oa_view(b))

    # ---- Anthropic
    async def _an_create(self, request: web.Request) -> web.Response:
        body = await request.json()
        if await self._stalled_upload():
            return web.json_response({"type": "error", "error": {"type": "api_error", "message": "abandoned"}},
                                     status=500)
        if self.create_status:
            status, self.create_status = self.create_status, None
            return web.json_response({"type": "error", "error": {"type": "api_error", "message": "scripted"}},
                                     status=status)
        reqs = body.get("requests")
        if not isinstance(reqs, list) or not reqs or any(
                not re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", str(r.get("custom_id"))) or "stream" in r.get("params", {})
                for r in reqs):
            return web.json_response({"type": "error", "error": {"type": "invalid_request_error",
                                                                 "message": "bad requests"}}, status=400)
        batch = self._make("anthropic", [(r["custom_id"], r["params"]) for r in reqs], {})
        await self._maybe_stall()
        return web.json_response(self._an_view(batch, request))

    def _an_view(self, b: dict, request: web.Request) -> dict:
        results = b["results"]
        counts = {"processing": len(b["requests"]) if results is None else 0, "succeeded": 0, "errored": 0,
                  "canceled": 0, "expired": 0}
        for _, fate, _ in results or []:
            counts[{"ok": "succeeded", "error": "errored", "cancel": "canceled", "expire": "expired"}[fate]] += 1
        status = "ended" if results is not None else "canceling" if b["cancel"] else "in_progress"
        base = f"http://{request.host}"
        return {"id": b["id"], "type": "message_batch", "processing_status": status, "request_counts": counts,
                "created_at": _iso(b["created_at"]), "expires_at": _iso(b["created_at"] + 86400),
                "ended_at": _iso(b["ended_at"]) if b["ended_at"] else None, "archived_at": None,
                "cancel_initiated_at": _iso(b["created_at"]) if b["cancel"] else None,
                "results_url": f"{base}/v1/messages/batches/{b['id']}/results" if results is not None else None}

    async def _an_list(self, request: web.Request) -> web.Response:
        limit = int(request.query.get("limit", 20))
        after = request.query.get("after_id")
        with self._lock:
            mine = [b for b in self.batches.values() if b["provider"] == "anthropic"][::-1]  # newest first
        for b in mine:
            self._retrieved(b)
        if after:
            ids = [b["id"] for b in mine]
            mine = mine[ids.index(after) + 1:] if after in ids else []
        page = mine[:limit]
        return web.json_response({"data": [self._an_view(b, request) for b in page],
                                  "first_id": page[0]["id"] if page else None,
                                  "last_id": page[-1]["id"] if page else None, "has_more": len(mine) > limit})

    async def _an_get(self, request: web.Request) -> web.Response:
        b = self._batch(request, "anthropic")
        if b is None:
            return web.json_response({"type": "error", "error": {"type": "not_found_error", "message": "no"}},
                                     status=404)
        self._retrieved(b)
        return web.json_response(self._an_view(b, request))

    async def _an_cancel(self, request: web.Request) -> web.Response:
        b = self._batch(request, "anthropic")
        if b is None:
            return web.json_response({"type": "error", "error": {"type": "not_found_error", "message": "no"}},
                                     status=404)
        with self._lock:
            self.cancels.append(b["id"])
            if b["results"] is None:
                b["cancel"] = True
        return web.json_response(self._an_view(b, request))

    async def _an_results(self, request: web.Request) -> web.Response:
        if self._results_fail():
            return web.json_response({"type": "error", "error": {"type": "overloaded_error", "message": "outage"}},
                                     status=503)
        b = self._batch(request, "anthropic")
        if b is None or b["results"] is None:
            return web.json_response({"type": "error", "error": {"type": "not_found_error", "message": "no"}},
                                     status=404)
        rows = []
        for cid, fate, answer in reversed(b["results"]):  # not in request order, as providers warn
            if fate == "ok":
                result = {"type": "succeeded", "message": answer}
            elif fate == "error":
                result = {"type": "errored", "error": {"type": "error", "error": {
                    "type": "invalid_request_error", "message": "scripted request error"}}}
            elif fate == "cancel":
                result = {"type": "canceled"}
            else:
                result = {"type": "expired"}
            rows.append({"custom_id": cid, "result": result})
        return web.Response(body="".join(json.dumps(r) + "\n" for r in rows).encode(),
                            content_type="application/binary")


def main() -> None:  # pragma: no cover - out-of-process use
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--polls-to-end", type=int, default=1)
    args = parser.parse_args()
    srv = FakeBatches(port=args.port)
    srv.polls_to_end = args.polls_to_end
    srv.start()
    print(f"PORT {srv.port}", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    stop.wait()
    srv.stop()


if __name__ == "__main__":  # pragma: no cover
    main()
