"""Loopback fake LLM provider (OpenAI Chat Completions, OpenAI Responses, Anthropic Messages,
and a generic JSON endpoint) for driving real HTTP subjects in tests.

In-process use (the server runs in a background thread with its own event loop)::

    with FakeProvider(latency_ms=0) as srv:
        srv.push("chat", {"status": 429, "retry_after": 1.5}, {"reply": "hi"})
        ... point the subject at srv.base_url + "/v1" ...
        assert srv.requests[0]["json"]["model"] == "gpt-x"

Out-of-process use::

    python -m tests.servers.fake_provider --port 0 --latency-ms 50 --script script.json
    # first stdout line: "PORT <n>"; serves until SIGTERM/SIGINT.

Only ever binds loopback: 127.0.0.1, or another 127.x address a subclass names in `host`.

Routes (push()/set_default() route names in brackets):
    POST /v1/chat/completions  ["chat"]       (also /chat/completions)
    POST /v1/responses         ["responses"]  (also /responses)
    POST /v1/messages          ["messages"]   (also /messages; ?beta=true accepted)
    POST /generic, /generic/*  ["generic"]
    GET  /v1/models, /health, /stats, /requests; POST /push, /reset (control; not recorded)

Behaviours are dicts, consumed in order per route (then from the "*" queue), falling back to
the route default. Keys (combinable where it makes sense):
    reply: str | callable(request_json) -> str   text answer
    tool_calls: [{"name": str, "args": dict, "id"?: str}]   rendered natively per API
    usage: dict     token override; prompt_tokens/input_tokens and completion_tokens/output_tokens
                    are accepted for any API, other keys are merged verbatim into the usage object
    cost: float     (generic only) the "cost" field
    json: any       raw JSON body returned verbatim (with "status" if given, default 200)
    latency_ms: N   delay before answering (replaces the constructor's latency_ms)
    until_in_flight: N   hold the answer until N requests have been in flight at once since the
                    last reset (max_in_flight >= N), at most hold_s seconds (default 10); then
                    latency_ms as usual. Tests of concurrency read max_in_flight afterwards: the
                    peak is then what the client delivered, not what the timing allowed.
    chunk_ms: N     delay between stream events
    status: int     >= 400 gives an API-shaped error body; "body" overrides it
    retry_after: float|str   sets the Retry-After header
    quota: true     with an error status: insufficient-quota / billing error body
    headers: dict   extra response headers
    malformed: true 200 with a body that is not valid JSON (SSE data that is not JSON for streams)
    hang: true      never answers (until the server stops; then the connection is closed); or
                    callable(request_json) -> bool, to hang the requests it picks by content
    truncate: true  stream: some events then the connection closes without the terminal event;
                    non-stream: half the JSON (Content-Length of the whole) then close.
                    With hang: true as well, a stream sends some events then stalls.
A hostile server (tests of bounded answers and secrets):
    echo_credentials: true   answer `status` (default 401) with an error body that repeats the
                    credentials the request carried (Authorization, x-api-key, api-key headers)
    oversize: N     a 200 answer of N bytes, written 1 MiB at a time (never held whole): one JSON
                    body of the route's shape, or SSE chunk events when the request streams; no
                    Content-Length unless declare_length: true
    Under-reported limits: `usage` (above) may report any number of tokens, and `cost` any cost,
    whatever the request's max_tokens said.
A plain string is shorthand for {"reply": s}, a plain int for {"status": n}.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import itertools
import json
import re
import signal
import sys
import threading
import time
import uuid
from typing import Any, Callable

from aiohttp import web

HOST = "127.0.0.1"

# per-request storage key for the recorded request
RECORD: Any = web.RequestKey("record", dict) if hasattr(web, "RequestKey") else "record"

Behaviour = dict[str, Any]

_ARITH = re.compile(r"(-?\d+)\s*([+\-*x×])\s*(-?\d+)")


# --------------------------------------------------------------------------- helpers


def _text_of(content: Any) -> str:
    """Text of a message content: a string, or a list of parts with "text"."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for p in content:
            if isinstance(p, str):
                parts.append(p)
            elif isinstance(p, dict):
                if isinstance(p.get("text"), str):
                    parts.append(p["text"])
                elif isinstance(p.get("content"), (str, list)):
                    parts.append(_text_of(p["content"]))
        return "\n".join(x for x in parts if x)
    if isinstance(content, dict):
        return _text_of(content.get("text") or content.get("content"))
    return str(content)


def extract_prompt(req: Any) -> str:
    """The last user message of a Chat / Responses / Messages / generic / agent request."""
    if not isinstance(req, dict):
        return "" if req is None else str(req)
    msgs = req.get("messages")
    if isinstance(msgs, list):
        for m in reversed(msgs):
            if isinstance(m, dict) and m.get("role", "user") == "user":
                return _text_of(m.get("content"))
    inp = req.get("input")
    if isinstance(inp, str):
        return inp
    if isinstance(inp, list):
        for item in reversed(inp):
            if isinstance(item, dict) and item.get("role", "user") == "user" and item.get("type", "message") == "message":
                return _text_of(item.get("content"))
    if isinstance(inp, dict):
        return extract_prompt(inp) or _text_of(inp)
    for key in ("prompt", "text", "question", "query", "message"):
        v = req.get(key)
        if isinstance(v, (str, list, dict)):
            return _text_of(v)
    return ""


def _all_request_text(req: Any) -> str:
    """Everything a model would 'read' from the request, for input token counts."""
    if not isinstance(req, dict):
        return "" if req is None else str(req)
    chunks: list[str] = []
    for key in ("system", "instructions"):
        if req.get(key):
            chunks.append(_text_of(req[key]))
    for key in ("messages", "input"):
        v = req.get(key)
        if isinstance(v, str):
            chunks.append(v)
        elif isinstance(v, list):
            for m in v:
                chunks.append(_text_of(m.get("content") if isinstance(m, dict) and "content" in m else m))
    if not chunks:
        chunks.append(extract_prompt(req))
    return "\n".join(c for c in chunks if c)


def words(text: str | None) -> int:
    return len(text.split()) if text else 0


def default_reply(req: Any) -> str:
    """Echo the last user message; answer "ANSWER: n" if it contains arithmetic like 17+25."""
    prompt = extract_prompt(req)
    m = _ARITH.search(prompt)
    if m:
        a, op, b = int(m.group(1)), m.group(2), int(m.group(3))
        val = a + b if op == "+" else a - b if op == "-" else a * b
        return f"ANSWER: {val}"
    return prompt


def _pieces(text: str) -> list[str]:
    """Split text into stream deltas, keeping whitespace so the concatenation is exact."""
    if not text:
        return []
    parts = re.findall(r"\s*\S+\s*", text)
    return parts if "".join(parts) == text else [text]


def _normalize(b: Any) -> Behaviour:
    if b is None:
        return {}
    if isinstance(b, str):
        return {"reply": b}
    if isinstance(b, bool):
        raise TypeError("behaviour must be a dict, str or int")
    if isinstance(b, int):
        return {"status": b}
    if isinstance(b, dict):
        return dict(b)
    raise TypeError(f"behaviour must be a dict, str or int, not {type(b).__name__}")


def _sse(data: Any, event: str | None = None) -> bytes:
    body = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {body}\n\n".encode()


# --------------------------------------------------------------------------- base server


class FakeServerBase:
    """aiohttp app on 127.0.0.1 in a background thread; recording, scripting, clean shutdown."""

    #: path (exact) -> route name
    PATHS: dict[str, str] = {}
    #: path prefix -> route name
    PREFIXES: dict[str, str] = {}
    CONTROL = {"/health", "/stats", "/requests", "/push", "/reset"}
    #: the loopback address it binds (a test of egress through a proxy uses another 127.x one)
    host = HOST
    #: an ssl.SSLContext to serve https (a test of CONNECT tunnels), None for plain http
    ssl_context = None

    def __init__(self, *, port: int = 0, latency_ms: float = 0, chunk_ms: float = 0,
                 script: dict[str, list] | None = None,
                 reply: Callable[[Any], str] | None = None,
                 defaults: dict[str, Any] | None = None):
        self.port = port
        self.latency_ms = latency_ms
        self.chunk_ms = chunk_ms
        self.reply = reply or default_reply
        self._lock = threading.Lock()
        self._queues: dict[str, collections.deque] = collections.defaultdict(collections.deque)
        self._defaults: dict[str, Behaviour] = {}
        self._requests: list[dict] = []
        self._in_flight = 0
        self.max_in_flight = 0
        self._counter = itertools.count(1)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._stopping: asyncio.Event | None = None
        self._started = threading.Event()
        self._start_error: BaseException | None = None
        for route, behaviours in (script or {}).items():
            self.push(route, *behaviours)
        for route, b in (defaults or {}).items():
            self.set_default(route, b)

    # ----------------------------------------------------------------- scripting API

    def route_of(self, path_or_name: str) -> str:
        if path_or_name in self.route_names() or path_or_name == "*":
            return path_or_name
        path = path_or_name.split("?", 1)[0]
        if path in self.PATHS:
            return self.PATHS[path]
        for prefix, name in self.PREFIXES.items():
            if path == prefix or path.startswith(prefix.rstrip("/") + "/"):
                return name
        raise KeyError(f"unknown route {path_or_name!r}; known: {sorted(self.route_names())}")

    def route_names(self) -> set[str]:
        return set(self.PATHS.values()) | set(self.PREFIXES.values())

    def push(self, route: str, *behaviours: Any) -> None:
        """Queue behaviours for the next requests on a route (name, path, or "*" for any)."""
        name = self.route_of(route)
        with self._lock:
            self._queues[name].extend(_normalize(b) for b in behaviours)

    def set_default(self, route: str, behaviour: Any) -> None:
        name = self.route_of(route)
        with self._lock:
            self._defaults[name] = _normalize(behaviour)

    def pending(self, route: str | None = None) -> int:
        with self._lock:
            if route is None:
                return sum(len(q) for q in self._queues.values())
            return len(self._queues[self.route_of(route)])

    def reset(self) -> None:
        """Forget recorded requests, queued behaviours and the in-flight maximum."""
        with self._lock:
            self._requests.clear()
            self._queues.clear()
            self.max_in_flight = self._in_flight

    def _next_behaviour(self, route: str | None) -> Behaviour:
        with self._lock:
            for name in (route, "*"):
                q = self._queues.get(name) if name else None
                if q:
                    return dict(q.popleft())
            return dict(self._defaults.get(route or "", {}))

    @property
    def requests(self) -> list[dict]:
        with self._lock:
            return list(self._requests)

    @property
    def in_flight(self) -> int:
        return self._in_flight

    def requests_to(self, route: str) -> list[dict]:
        name = self.route_of(route)
        return [r for r in self.requests if r.get("route") == name]

    @property
    def base_url(self) -> str:
        return f"{'https' if self.ssl_context is not None else 'http'}://{self.host}:{self.port}"

    @property
    def url(self) -> str:
        return self.base_url

    # ----------------------------------------------------------------- lifecycle

    def start(self) -> "FakeServerBase":
        if self._thread is not None:
            return self
        self._thread = threading.Thread(target=self._thread_main, name=f"{type(self).__name__}-loop",
                                        daemon=True)
        self._thread.start()
        if not self._started.wait(10):
            raise RuntimeError(f"{type(self).__name__} did not start")
        if self._start_error is not None:
            self._thread.join(5)
            self._thread = None
            raise RuntimeError(f"{type(self).__name__} failed to start: {self._start_error}") from self._start_error
        return self

    def stop(self, timeout: float = 5.0) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        if loop.is_running():
            fut = asyncio.run_coroutine_threadsafe(self._shutdown(), loop)
            try:
                fut.result(timeout)
            except Exception:
                pass
            loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout)
        self._thread = None

    close = stop

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def _thread_main(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self._startup())
        except BaseException as e:  # report to start()
            self._start_error = e
            self._started.set()
            loop.close()
            return
        self._started.set()
        try:
            loop.run_forever()
        finally:
            try:
                pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
                for t in pending:
                    t.cancel()
                if pending:
                    loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
                loop.run_until_complete(loop.shutdown_asyncgens())
            finally:
                loop.close()

    async def _startup(self) -> None:
        self._stopping = asyncio.Event()
        app = web.Application(middlewares=[self._middleware], client_max_size=64 * 1024 * 1024)
        app.router.add_get("/health", self._health)
        app.router.add_get("/stats", self._stats)
        app.router.add_get("/requests", self._requests_view)
        app.router.add_post("/push", self._push_view)
        app.router.add_post("/reset", self._reset_view)
        self._add_routes(app)
        app.router.add_route("*", "/{tail:.*}", self._not_found)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5, handle_signals=False)
        await self._runner.setup()
        # backlog: hundreds of clients connecting at once must not wait on SYN retries (aiohttp's
        # default is 128), or a concurrency test would measure the kernel, not the client
        assert self.host.startswith("127."), "fake servers bind loopback only"
        site = web.TCPSite(self._runner, self.host, self.port, reuse_address=True, backlog=1024,
                           ssl_context=self.ssl_context)
        await site.start()
        sockets = getattr(site._server, "sockets", None) or []
        self.port = sockets[0].getsockname()[1]

    async def _shutdown(self) -> None:
        if self._stopping is not None:
            self._stopping.set()
        await asyncio.sleep(0)
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    def _add_routes(self, app: web.Application) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    # ----------------------------------------------------------------- recording

    def _route_for_request(self, request: web.Request) -> str | None:
        try:
            return self.route_of(request.path)
        except KeyError:
            return None

    @web.middleware
    async def _middleware(self, request: web.Request, handler):
        if request.path in self.CONTROL:
            return await handler(request)
        raw = await request.read()
        body = raw.decode("utf-8", "replace")
        try:
            parsed = json.loads(body) if body.strip() else None
        except ValueError:
            parsed = None
        rec = {
            "path": request.path,
            "method": request.method,
            "query": dict(request.query),
            "headers": {k.lower(): v for k, v in request.headers.items()},
            "json": parsed,
            "body": body,
            "t": time.monotonic(),
            "route": self._route_for_request(request),
            "status": None,
            # the client's address and port: one per connection, so tests can count connections
            "peer": list(request.transport.get_extra_info("peername") or ()) if request.transport else None,
        }
        request[RECORD] = rec
        with self._lock:
            self._requests.append(rec)
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
        try:
            resp = await handler(request)
            rec["status"] = getattr(resp, "status", None)
            return resp
        except web.HTTPException as e:
            rec["status"] = e.status
            raise
        finally:
            with self._lock:
                self._in_flight -= 1
            rec["t_done"] = time.monotonic()

    async def _health(self, request: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    async def _stats(self, request: web.Request) -> web.Response:
        reqs = self.requests
        by_route: dict[str, int] = collections.Counter(r["route"] or "unknown" for r in reqs)
        return web.json_response({"requests": len(reqs), "by_route": dict(by_route),
                                  "in_flight": self._in_flight, "max_in_flight": self.max_in_flight,
                                  "pending": self.pending()})

    async def _requests_view(self, request: web.Request) -> web.Response:
        return web.json_response(self.requests)

    async def _push_view(self, request: web.Request) -> web.Response:
        """Body: {"route": name, "behaviours": [...]} or {"route": [behaviours], ...} mapping."""
        data = await request.json()
        try:
            if isinstance(data, dict) and "route" in data:
                self.push(data["route"], *data.get("behaviours", []))
                if "default" in data:
                    self.set_default(data["route"], data["default"])
            else:
                for route, bs in data.items():
                    self.push(route, *bs)
        except (KeyError, TypeError) as e:
            return web.json_response({"error": str(e)}, status=400)
        return web.json_response({"pending": self.pending()})

    async def _reset_view(self, request: web.Request) -> web.Response:
        self.reset()
        return web.json_response({"status": "ok"})

    async def _not_found(self, request: web.Request) -> web.Response:
        return web.json_response({"error": {"message": f"no route {request.method} {request.path}",
                                            "type": "not_found"}}, status=404)

    # ----------------------------------------------------------------- behaviour plumbing

    async def _sleep(self, ms: float) -> None:
        if ms and ms > 0:
            try:
                await asyncio.wait_for(self._stopping.wait(), ms / 1000.0)
            except asyncio.TimeoutError:
                pass

    async def _until_in_flight(self, n: int, hold_s: float) -> None:
        # polled: the count changes under a thread lock (tests read it from another thread)
        deadline = time.monotonic() + hold_s
        while self.max_in_flight < n and time.monotonic() < deadline and not self._stopping.is_set():
            await asyncio.sleep(0.005)

    async def _hang(self, request: web.Request) -> web.StreamResponse:
        """Wait until the server stops or the client goes away, then drop the connection."""
        while not self._stopping.is_set():
            tr = request.transport
            if tr is None or tr.is_closing():
                break
            try:
                await asyncio.wait_for(self._stopping.wait(), 0.05)
            except asyncio.TimeoutError:
                pass
        return self._drop(request)

    def _drop(self, request: web.Request) -> web.StreamResponse:
        """Close the connection abruptly; the client sees a disconnect / incomplete payload."""
        rec = request.get(RECORD)
        if rec is not None:
            rec["dropped"] = True
        tr = request.transport
        if tr is not None:
            tr.close()
        raise _Dropped()

    def _headers(self, b: Behaviour) -> dict[str, str]:
        h = {str(k): str(v) for k, v in (b.get("headers") or {}).items()}
        if b.get("retry_after") is not None:
            ra = b["retry_after"]
            if isinstance(ra, float) and ra.is_integer():
                ra = int(ra)
            h["Retry-After"] = str(ra)
        return h

    def _error_body(self, route: str | None, status: int, b: Behaviour) -> Any:
        return {"error": {"code": status, "message": f"fake error {status}"}}

    async def _pre(self, request: web.Request, route: str | None, b: Behaviour,
                   streaming: bool) -> web.StreamResponse | None:
        """Handle latency / hang / errors / raw json / malformed / non-stream truncate."""
        if b.get("until_in_flight"):
            await self._until_in_flight(int(b["until_in_flight"]), float(b.get("hold_s", 10)))
        await self._sleep(b.get("latency_ms", self.latency_ms))
        if self._stopping.is_set():
            return self._drop(request)
        if b.get("hang") and not (b.get("truncate") and streaming):
            return await self._hang(request)
        if b.get("echo_credentials"):
            h = request.headers
            creds = {k: h[k] for k in ("Authorization", "x-api-key", "api-key") if k in h}
            return web.json_response({"error": {"message": f"invalid credentials {creds}", "type": "auth",
                                                "received": creds}}, status=int(b.get("status", 401)))
        if b.get("oversize"):
            return await self._oversize(request, route, int(b["oversize"]), streaming, b)
        headers = self._headers(b)
        status = int(b.get("status", 200))
        if "json" in b:
            return web.json_response(b["json"], status=status, headers=headers)
        if status >= 400:
            body = b["body"] if "body" in b else self._error_body(route, status, b)
            if isinstance(body, (bytes, str)):
                return web.Response(body=body, status=status, headers=headers,
                                    content_type="application/json")
            return web.json_response(body, status=status, headers=headers)
        if b.get("malformed") and not streaming:
            return web.Response(text='{"id": "broken", "choices": [{"message": {"content": "unterminated',
                                status=200, headers=headers, content_type="application/json")
        return None

    async def _oversize(self, request: web.Request, route: str | None, size: int, streaming: bool,
                        b: Behaviour) -> web.StreamResponse:
        """A `size`-byte answer written a piece at a time; the client may hang up at any point."""
        resp = web.StreamResponse(status=200, headers=self._headers(b))
        resp.content_type = "text/event-stream" if streaming else "application/json"
        piece = b"x" * (1 << 20)
        if streaming:
            head, tail = b'data: {"choices":[{"index":0,"delta":{"content":"', b'"}}]}\n\n'
            events = max(1, size // (len(piece) + len(head) + len(tail)))
            parts = [(head, piece, tail)] * events
        else:
            head, tail = {"messages": (b'{"content":[{"type":"text","text":"', b'"}],"stop_reason":"end_turn"}'),
                          "generic": (b'{"output":{"text":"', b'"}}')}.get(
                route or "", (b'{"choices":[{"message":{"content":"', b'"},"finish_reason":"stop"}]}'))
            body = max(0, size - len(head) - len(tail))
            parts = [(head, b"", b"")] + [(b"", piece, b"")] * (body // len(piece)) + \
                [(b"", piece[: body % len(piece)], tail)]
        if b.get("declare_length"):
            resp.content_length = sum(len(a) + len(m) + len(z) for a, m, z in parts)
        try:
            await resp.prepare(request)
            for a, m, z in parts:
                await resp.write(a + m + z)
            await resp.write_eof()
        except (ConnectionError, RuntimeError):  # the client stopped reading: expected
            return _closed_response()
        return resp

    async def _json_reply(self, request: web.Request, payload: Any, b: Behaviour,
                          status: int = 200) -> web.StreamResponse:
        headers = self._headers(b)
        if not b.get("truncate"):
            return web.json_response(payload, status=status, headers=headers)
        data = json.dumps(payload).encode()
        resp = web.StreamResponse(status=status, headers=headers)
        resp.content_type = "application/json"
        resp.content_length = len(data)
        await resp.prepare(request)
        await resp.write(data[: max(1, len(data) // 2)])
        return self._drop(request)

    async def _stream(self, request: web.Request, events: list[bytes], b: Behaviour,
                      malformed_event: bytes | None = None) -> web.StreamResponse:
        """Send SSE events; truncate/hang/malformed/chunk_ms honoured."""
        resp = web.StreamResponse(status=200, headers=self._headers(b))
        resp.content_type = "text/event-stream"
        resp.headers["Cache-Control"] = "no-cache"
        await resp.prepare(request)
        chunk_ms = b.get("chunk_ms", self.chunk_ms)
        if b.get("malformed"):
            # one valid leading event, then data that is not JSON, then the normal end
            events = events[:1] + [malformed_event or b"data: {not valid json\n\n"] + events[-1:]
        cut = b.get("truncate")
        if cut:
            n = b.get("truncate_after")
            events = events[: int(n) if n is not None else max(1, len(events) // 2)]
        for i, ev in enumerate(events):
            if i and chunk_ms:
                await self._sleep(chunk_ms)
            if self._stopping.is_set():
                return self._drop(request)
            await resp.write(ev)
        if cut:
            if b.get("hang"):
                return await self._hang(request)
            return self._drop(request)
        await resp.write_eof()
        return resp

    def _new_id(self, prefix: str) -> str:
        return f"{prefix}{next(self._counter)}_{uuid.uuid4().hex[:8]}"

    def _reply_text(self, req: Any, b: Behaviour) -> str | None:
        if "reply" in b:
            r = b["reply"]
            return r(req) if callable(r) else (None if r is None else str(r))
        if b.get("tool_calls") and "reply" not in b:
            return None
        return self.reply(req)

    @staticmethod
    def _tool_calls(b: Behaviour) -> list[dict]:
        out = []
        for i, tc in enumerate(b.get("tool_calls") or []):
            name = tc.get("name") or (tc.get("function") or {}).get("name")
            args = tc.get("args", tc.get("arguments", tc.get("input", {})))
            if isinstance(args, str):
                try:
                    args = json.loads(args)
                except ValueError:
                    pass
            out.append({"id": tc.get("id") or f"call_{i}_{uuid.uuid4().hex[:8]}", "name": name, "args": args})
        return out

    @staticmethod
    def _usage_counts(req: Any, text: str | None, tool_calls: list[dict], b: Behaviour) -> tuple[int, int, dict]:
        inp = words(_all_request_text(req))
        out = words(text) + sum(1 + words(json.dumps(tc["args"])) for tc in tool_calls)
        extra: dict = {}
        for k, v in (b.get("usage") or {}).items():
            if k in ("prompt_tokens", "input_tokens"):
                inp = v
            elif k in ("completion_tokens", "output_tokens"):
                out = v
            elif k != "total_tokens":
                extra[k] = v
            else:
                extra[k] = v
        return inp, out, extra


class _Dropped(Exception):
    """Raised after a handler closed its connection on purpose."""


# --------------------------------------------------------------------------- provider


class FakeProvider(FakeServerBase):
    PATHS = {
        "/v1/chat/completions": "chat", "/chat/completions": "chat",
        "/v1/responses": "responses", "/responses": "responses",
        "/v1/messages": "messages", "/messages": "messages",
    }
    PREFIXES = {"/generic": "generic"}
    ALIASES = {"openai": "chat", "chat_completions": "chat", "anthropic": "messages", "codex": "responses"}

    def route_of(self, path_or_name: str) -> str:
        return super().route_of(self.ALIASES.get(path_or_name, path_or_name))

    def _add_routes(self, app: web.Application) -> None:
        for path, name in self.PATHS.items():
            app.router.add_post(path, getattr(self, f"_h_{name}"))
        app.router.add_post("/generic", self._h_generic)
        app.router.add_post("/generic/{tail:.*}", self._h_generic)
        app.router.add_get("/v1/models", self._models)
        app.router.add_get("/models", self._models)

    async def _models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [
            {"id": "fake-model", "object": "model", "created": 0, "owned_by": "fake"}]})

    async def _run(self, request: web.Request, route: str, render) -> web.StreamResponse:
        b = self._next_behaviour(route)
        req = request[RECORD]["json"]
        if callable(b.get("hang")):
            b["hang"] = bool(b["hang"](req))
        streaming = isinstance(req, dict) and bool(req.get("stream"))
        try:
            early = await self._pre(request, route, b, streaming)
            if early is not None:
                return early
            return await render(request, req if isinstance(req, dict) else {}, b, streaming)
        except _Dropped:
            return _closed_response()
        except ConnectionError:  # the client went away mid-answer
            return _closed_response()

    # ----------------------------------------------------------------- errors

    def _error_body(self, route: str | None, status: int, b: Behaviour) -> Any:
        quota = bool(b.get("quota"))
        if route == "messages":
            if quota:
                etype, msg = "billing_error", "Your credit balance is too low to access the Anthropic API."
            else:
                etype, msg = {
                    400: ("invalid_request_error", "Invalid request."),
                    401: ("authentication_error", "invalid x-api-key"),
                    402: ("billing_error", "Your credit balance is too low to access the Anthropic API."),
                    403: ("permission_error", "Permission denied."),
                    404: ("not_found_error", "Not found."),
                    413: ("request_too_large", "Request too large."),
                    429: ("rate_limit_error", "Number of requests has exceeded your rate limit."),
                    529: ("overloaded_error", "Overloaded"),
                }.get(status, ("api_error", "Internal server error"))
            return {"type": "error", "error": {"type": etype, "message": msg}}
        if route == "generic":
            err = {"code": status, "type": "insufficient_quota" if quota else "error",
                   "message": "quota exhausted" if quota else f"fake error {status}"}
            return {"status": "error", "error": err}
        if quota:
            err = {"message": "You exceeded your current quota, please check your plan and billing details.",
                   "type": "insufficient_quota", "param": None, "code": "insufficient_quota"}
        else:
            err = {
                400: {"message": "Invalid request.", "type": "invalid_request_error", "param": None, "code": None},
                401: {"message": "Incorrect API key provided.", "type": "invalid_request_error",
                      "param": None, "code": "invalid_api_key"},
                402: {"message": "Payment required: insufficient credits.", "type": "billing_error",
                      "param": None, "code": "payment_required"},
                403: {"message": "Forbidden.", "type": "invalid_request_error", "param": None,
                      "code": "unsupported_country_region_territory"},
                404: {"message": "The model does not exist.", "type": "invalid_request_error",
                      "param": None, "code": "model_not_found"},
                429: {"message": "Rate limit reached for requests. Please try again later.",
                      "type": "requests", "param": None, "code": "rate_limit_exceeded"},
            }.get(status, {"message": "The server had an error while processing your request.",
                           "type": "server_error", "param": None, "code": None})
        return {"error": err}

    # ----------------------------------------------------------------- chat completions

    async def _h_chat(self, request: web.Request) -> web.StreamResponse:
        return await self._run(request, "chat", self._render_chat)

    async def _render_chat(self, request, req, b, streaming):
        model = req.get("model") or "fake-model"
        text = self._reply_text(req, b)
        tcs = self._tool_calls(b)
        inp, out, extra = self._usage_counts(req, text, tcs, b)
        usage = {"prompt_tokens": inp, "completion_tokens": out, "total_tokens": inp + out, **extra}
        finish = b.get("finish_reason") or ("tool_calls" if tcs else "stop")
        cid, created = self._new_id("chatcmpl-"), int(time.time())
        native_tcs = [{"id": tc["id"], "type": "function",
                       "function": {"name": tc["name"], "arguments": json.dumps(tc["args"])}} for tc in tcs]
        if not streaming:
            msg: dict = {"role": "assistant", "content": text}
            if native_tcs:
                msg["tool_calls"] = native_tcs
            payload = {"id": cid, "object": "chat.completion", "created": created, "model": model,
                       "choices": [{"index": 0, "message": msg, "logprobs": None, "finish_reason": finish}],
                       "usage": usage}
            return await self._json_reply(request, payload, b)

        def chunk(delta, finish_reason=None, **kw):
            d = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
                 "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}]}
            d.update(kw)
            return _sse(d)

        events = [chunk({"role": "assistant", "content": ""})]
        events += [chunk({"content": p}) for p in _pieces(text or "")]
        for i, tc in enumerate(native_tcs):
            events.append(chunk({"tool_calls": [{"index": i, "id": tc["id"], "type": "function",
                                                 "function": {"name": tc["function"]["name"], "arguments": ""}}]}))
            events.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": tc["function"]["arguments"]}}]}))
        events.append(chunk({}, finish))
        if (req.get("stream_options") or {}).get("include_usage"):
            events.append(_sse({"id": cid, "object": "chat.completion.chunk", "created": created,
                                "model": model, "choices": [], "usage": usage}))
        events.append(b"data: [DONE]\n\n")
        return await self._stream(request, events, b)

    # ----------------------------------------------------------------- responses

    async def _h_responses(self, request: web.Request) -> web.StreamResponse:
        return await self._run(request, "responses", self._render_responses)

    async def _render_responses(self, request, req, b, streaming):
        model = req.get("model") or "fake-model"
        text = self._reply_text(req, b)
        tcs = self._tool_calls(b)
        inp, out, extra = self._usage_counts(req, text, tcs, b)
        usage = {"input_tokens": inp, "input_tokens_details": {"cached_tokens": 0},
                 "output_tokens": out, "output_tokens_details": {"reasoning_tokens": 0},
                 "total_tokens": inp + out, **extra}
        rid, created = self._new_id("resp_"), int(time.time())
        items: list[dict] = []
        if text is not None:
            items.append({"id": self._new_id("msg_"), "type": "message", "status": "completed", "role": "assistant",
                          "content": [{"type": "output_text", "text": text, "annotations": []}]})
        for tc in tcs:
            items.append({"id": self._new_id("fc_"), "type": "function_call", "status": "completed",
                          "call_id": tc["id"], "name": tc["name"], "arguments": json.dumps(tc["args"])})

        def response(status, output, with_usage):
            r = {"id": rid, "object": "response", "created_at": created, "status": status, "model": model,
                 "output": output, "error": None, "incomplete_details": None,
                 "instructions": req.get("instructions"), "usage": usage if with_usage else None}
            return r

        if not streaming:
            return await self._json_reply(request, response("completed", items, True), b)

        seq = itertools.count()

        def ev(type_, **fields):
            return _sse({"type": type_, "sequence_number": next(seq), **fields}, event=type_)

        events = [ev("response.created", response=response("in_progress", [], False)),
                  ev("response.in_progress", response=response("in_progress", [], False))]
        for idx, item in enumerate(items):
            if item["type"] == "message":
                t = item["content"][0]["text"]
                events.append(ev("response.output_item.added", output_index=idx,
                                 item={**item, "status": "in_progress", "content": []}))
                events.append(ev("response.content_part.added", item_id=item["id"], output_index=idx,
                                 content_index=0, part={"type": "output_text", "text": "", "annotations": []}))
                for p in _pieces(t):
                    events.append(ev("response.output_text.delta", item_id=item["id"], output_index=idx,
                                     content_index=0, delta=p))
                events.append(ev("response.output_text.done", item_id=item["id"], output_index=idx,
                                 content_index=0, text=t))
                events.append(ev("response.content_part.done", item_id=item["id"], output_index=idx,
                                 content_index=0, part=item["content"][0]))
            else:
                events.append(ev("response.output_item.added", output_index=idx,
                                 item={**item, "status": "in_progress", "arguments": ""}))
                events.append(ev("response.function_call_arguments.delta", item_id=item["id"],
                                 output_index=idx, delta=item["arguments"]))
                events.append(ev("response.function_call_arguments.done", item_id=item["id"],
                                 output_index=idx, arguments=item["arguments"]))
            events.append(ev("response.output_item.done", output_index=idx, item=item))
        events.append(ev("response.completed", response=response("completed", items, True)))
        return await self._stream(request, events, b)

    # ----------------------------------------------------------------- anthropic messages

    async def _h_messages(self, request: web.Request) -> web.StreamResponse:
        return await self._run(request, "messages", self._render_messages)

    async def _render_messages(self, request, req, b, streaming):
        model = req.get("model") or "fake-model"
        text = self._reply_text(req, b)
        tcs = self._tool_calls(b)
        inp, out, extra = self._usage_counts(req, text, tcs, b)
        stop = b.get("stop_reason") or ("tool_use" if tcs else "end_turn")
        mid = self._new_id("msg_")
        blocks: list[dict] = []
        if text is not None:
            blocks.append({"type": "text", "text": text})
        for tc in tcs:
            tid = tc["id"] if tc["id"].startswith("toolu_") else "toolu_" + tc["id"]
            blocks.append({"type": "tool_use", "id": tid, "name": tc["name"], "input": tc["args"]})
        usage = {"input_tokens": inp, "output_tokens": out, **extra}
        if not streaming:
            payload = {"id": mid, "type": "message", "role": "assistant", "model": model, "content": blocks,
                       "stop_reason": stop, "stop_sequence": None, "usage": usage}
            return await self._json_reply(request, payload, b)

        def ev(type_, **fields):
            return _sse({"type": type_, **fields}, event=type_)

        events = [ev("message_start", message={
            "id": mid, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": inp, "output_tokens": 1,
                      **{k: v for k, v in extra.items() if "input" in k}}})]
        for i, blk in enumerate(blocks):
            if blk["type"] == "text":
                events.append(ev("content_block_start", index=i, content_block={"type": "text", "text": ""}))
                events += [ev("content_block_delta", index=i, delta={"type": "text_delta", "text": p})
                           for p in _pieces(blk["text"])]
            else:
                events.append(ev("content_block_start", index=i,
                                 content_block={"type": "tool_use", "id": blk["id"], "name": blk["name"], "input": {}}))
                events.append(ev("content_block_delta", index=i,
                                 delta={"type": "input_json_delta", "partial_json": json.dumps(blk["input"])}))
            events.append(ev("content_block_stop", index=i))
        events.append(ev("message_delta", delta={"stop_reason": stop, "stop_sequence": None},
                         usage={"output_tokens": out, **{k: v for k, v in extra.items() if "input" not in k}}))
        events.append(ev("message_stop"))
        return await self._stream(request, events, b,
                                  malformed_event=b"event: content_block_delta\ndata: {not valid json\n\n")

    # ----------------------------------------------------------------- generic

    async def _h_generic(self, request: web.Request) -> web.StreamResponse:
        return await self._run(request, "generic", self._render_generic)

    async def _render_generic(self, request, req, b, streaming):
        text = self._reply_text(req, b)
        tcs = self._tool_calls(b)
        inp, out, extra = self._usage_counts(req, text, tcs, b)
        output: dict = {"text": text}
        if tcs:
            output["tool_calls"] = [{"name": tc["name"], "args": tc["args"]} for tc in tcs]
        payload = {"output": output, "status": "ok", "usage": {"input_tokens": inp, "output_tokens": out, **extra},
                   "cost": b.get("cost", 0.001)}
        if b.get("malformed"):  # generic endpoint has no stream form
            return web.Response(text='{"output": {"text": "unterminated', content_type="application/json")
        return await self._json_reply(request, payload, b)


def _closed_response() -> web.Response:
    """Placeholder returned after the transport was closed on purpose; never reaches the client."""
    return web.Response(status=499)


# --------------------------------------------------------------------------- CLI


def serve_forever(server: FakeServerBase) -> int:
    """Start `server`, print "PORT <n>" as the first stdout line, serve until SIGTERM/SIGINT."""
    done = threading.Event()

    def _stop(*_):
        done.set()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    server.start()
    sys.stdout.write(f"PORT {server.port}\n")
    sys.stdout.flush()
    try:
        while not done.wait(0.2):
            pass
    finally:
        server.stop()
    return 0


def load_script(path: str | None) -> dict[str, list] | None:
    if not path:
        return None
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    if not isinstance(data, dict):
        raise SystemExit("--script must hold a JSON object mapping route -> list of behaviours")
    return data


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.servers.fake_provider",
                                 description="Fake OpenAI/Anthropic/generic provider on 127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--latency-ms", type=float, default=0)
    ap.add_argument("--chunk-ms", type=float, default=0)
    ap.add_argument("--script", help="JSON file: {route: [behaviour, ...]}; key '_defaults' maps route -> behaviour")
    args = ap.parse_args(argv)
    script = load_script(args.script) or {}
    defaults = script.pop("_defaults", None)
    return serve_forever(FakeProvider(port=args.port, latency_ms=args.latency_ms, chunk_ms=args.chunk_ms,
                                      script=script, defaults=defaults))


if __name__ == "__main__":
    sys.exit(main())


# --------------------------------------------------------------------------- vision judges
# (issue 17, visual work) A scripted judge that scores what it is shown: the screenshots in a
# request (OpenAI image_url data URLs, Anthropic base64 image blocks), measured pixel by pixel.
# Use as a reply callable: srv.set_default("chat", {"reply": VisionJudge()}).

def request_images(req: Any) -> list[bytes]:
    """PNG bytes of every image in a Chat Completions or Messages request, in order."""
    import base64

    out: list[bytes] = []
    for m in (req.get("messages") or []) if isinstance(req, dict) else []:
        content = m.get("content") if isinstance(m, dict) else None
        for part in content if isinstance(content, list) else []:
            if not isinstance(part, dict):
                continue
            if part.get("type") == "image_url":
                url = (part.get("image_url") or {}).get("url", "")
                if url.startswith("data:image/png;base64,"):
                    out.append(base64.b64decode(url.split(",", 1)[1]))
            elif part.get("type") == "image" and (part.get("source") or {}).get("type") == "base64":
                out.append(base64.b64decode(part["source"]["data"]))
    return out


def page_measures(png: bytes) -> list[int]:
    """Three 0-3 measures of a screenshot: spread (share of pixel rows holding anything off the
    background colour), colour (share of strongly saturated pixels), ink (share of dark pixels)."""
    import io

    import numpy as np
    from PIL import Image

    from scoreboard.render.pixels import most_common

    with Image.open(io.BytesIO(png)) as image:
        rgb = np.asarray(image.convert("RGB"), dtype=np.uint8)
    flat = (rgb[..., 0].astype(np.uint32) << 16) | (rgb[..., 1].astype(np.uint32) << 8) | rgb[..., 2]
    rows = float((flat != most_common(flat.ravel())).any(axis=1).mean())
    # per channel, in uint8 (a reduction over an axis of 3 was most of this judge's time)
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    saturated = float((np.maximum(np.maximum(r, g), b) - np.minimum(np.minimum(r, g), b) > 80).mean())
    dark = float((r.astype(np.uint16) + g + b < 3 * 90).mean())  # mean of R, G, B under 90

    def bucket(x, edges):
        return sum(x >= e for e in edges)

    return [bucket(rows, (0.05, 0.3, 0.6)), bucket(saturated, (0.01, 0.08, 0.15)), bucket(dark, (0.002, 0.02, 0.05))]


class VisionJudge:
    """Answers pointwise, pairwise, llm-judge and rubric-score prompts from the screenshots.

    mode "pixels": scores from page_measures (a judge that can tell a page from a worse one);
    "constant": the same middling answer whatever it sees (cannot tell good from degraded);
    "first": measures pointwise, but in pairwise always picks the answer shown first."""

    def __init__(self, mode: str = "pixels"):
        self.mode = mode
        self.calls = 0
        self.images_seen: list[int] = []

    def quality(self, pngs: list[bytes]) -> list[int]:
        if self.mode == "constant" or not pngs:
            return [2, 2, 2]
        per = [page_measures(p) for p in pngs]
        return [min(col) for col in zip(*per)]

    def __call__(self, req: Any) -> str:
        self.calls += 1
        prompt = extract_prompt(req)
        images = request_images(req)
        self.images_seen.append(len(images))
        m = re.search(r"the first (\d+) show ANSWER A, the next (\d+) show ANSWER B", prompt)
        if m:
            na = int(m.group(1))
            if self.mode == "first":
                winner = "A"
            else:
                qa, qb = sum(self.quality(images[:na])), sum(self.quality(images[na:]))
                winner = "A" if qa > qb else "B" if qb > qa else "tie"
            return json.dumps({"winner": winner, "explanation": "measured"})
        q = self.quality(images)
        dims = re.search(r"^DIMENSIONS: (.+)$", prompt, re.M)
        if dims:
            names = [d.strip() for d in dims.group(1).split(",")]
            ranked = sorted(names)  # by name, whatever order the prompt lists them in
            return json.dumps({"scores": {d: q[ranked.index(d) % 3] for d in names}, "explanation": "measured"})
        if '"verdict"' in prompt:
            return json.dumps({"verdict": sum(q) >= 6, "explanation": "measured"})
        scale = re.search(r"from (\d+) \(worst\) to (\d+) \(best\)", prompt)
        low, high = (int(scale.group(1)), int(scale.group(2))) if scale else (1, 5)
        return json.dumps({"score": low + round((high - low) * sum(q) / 9), "explanation": "measured"})
# --------------------------------------------------------------------------- end vision judges
