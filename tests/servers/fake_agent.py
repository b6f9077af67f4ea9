"""Loopback fake agent server for "live replay" subjects.

    POST /agents/{agent}/invoke   (route name "invoke"; alias "agent")
    Authorization: Bearer <token>  -> 401 JSON error when wrong or missing
    body: {"stream": false, "prompt": ..., "roomId": ..., ...}
    200: {"run": {"id", "status": "completed", "agent", "latency_ms", "estimated_cost",
                  "input_tokens", "output_tokens", "tool_calls": [{"name", "args"}], "output"}}

Modes (constructor `mode=`, settable later as `srv.mode`, or per request as behaviour {"mode": ...}):
    "ok"        the completed run payload
    "slow"      sleeps `slow_s` seconds (default 2.0) then answers like "ok"
    "malformed" 200 with a body that is not JSON
    "missing"   200 JSON {"run": {"id", "status"}} lacking output / tokens / cost / latency / tool_calls

Behaviours (push("invoke", ...)) take the FakeProvider keys (reply, tool_calls, usage, json, status,
retry_after, quota, headers, latency_ms, hang, malformed, truncate) plus:
    run: dict    merged over the run payload
    cost: float  estimated_cost
    mode: str    one of the modes above, for this request only

Out of process:  python -m tests.servers.fake_agent --port 0 --token T --mode ok [--slow-s 2] [--script F]
(first stdout line "PORT <n>").
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from typing import Any, Callable

from aiohttp import web

from tests.servers.fake_provider import (
    RECORD,
    Behaviour,
    FakeServerBase,
    _closed_response,
    _Dropped,
    extract_prompt,
    load_script,
    serve_forever,
)

MODES = ("ok", "slow", "malformed", "missing")
_INVOKE = re.compile(r"^/agents/[^/]+/invoke/?$")


class FakeAgent(FakeServerBase):
    PREFIXES = {"/agents": "invoke"}

    def __init__(self, *, token: str | None = "test-token", run: dict | None = None, mode: str = "ok",
                 slow_s: float = 2.0, port: int = 0, latency_ms: float = 0,
                 script: dict[str, list] | None = None, reply: Callable[[Any], str] | None = None,
                 defaults: dict[str, Any] | None = None):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
        super().__init__(port=port, latency_ms=latency_ms, script=script, reply=reply, defaults=defaults)
        self.token = token
        self.run = dict(run or {})
        self.mode = mode
        self.slow_s = slow_s

    def route_of(self, path_or_name: str) -> str:
        if path_or_name == "agent":
            path_or_name = "invoke"
        return super().route_of(path_or_name)

    def _route_for_request(self, request: web.Request) -> str | None:
        return "invoke" if _INVOKE.match(request.path) else None

    def _add_routes(self, app: web.Application) -> None:
        app.router.add_post("/agents/{agent}/invoke", self._h_invoke)

    def _error_body(self, route: str | None, status: int, b: Behaviour) -> Any:
        if b.get("quota"):
            return {"error": {"code": "insufficient_quota", "message": "quota exhausted", "status": status}}
        code = {400: "bad_request", 401: "unauthorized", 402: "payment_required", 403: "forbidden",
                404: "not_found", 429: "rate_limited"}.get(status, "internal_error")
        return {"error": {"code": code, "message": f"fake agent error {status}", "status": status}}

    def _authorized(self, request: web.Request) -> bool:
        if self.token is None:
            return True
        auth = request.headers.get("Authorization", "")
        scheme, _, value = auth.partition(" ")
        return scheme.lower() == "bearer" and value.strip() == self.token

    async def _h_invoke(self, request: web.Request) -> web.StreamResponse:
        t0 = time.monotonic()
        if not self._authorized(request):
            return web.json_response({"error": {"code": "unauthorized",
                                                "message": "missing or invalid bearer token"}}, status=401)
        b = self._next_behaviour("invoke")
        req = request[RECORD]["json"]
        req = req if isinstance(req, dict) else {}
        mode = b.get("mode", self.mode)
        try:
            early = await self._pre(request, "invoke", b, streaming=False)
            if early is not None:
                return early
            if mode == "slow":
                await self._sleep(float(b.get("slow_s", self.slow_s)) * 1000)
                if self._stopping.is_set():
                    return self._drop(request)
            if mode == "malformed":
                return web.Response(text="<html>502 upstream says no {", status=200,
                                    content_type="application/json", headers=self._headers(b))
            run_id = self._new_id("run_")
            if mode == "missing":
                return await self._json_reply(request, {"run": {"id": run_id, "status": "completed"}}, b)
            text = self._reply_text(req, b)
            tcs = self._tool_calls(b)
            inp, out, extra = self._usage_counts({"prompt": extract_prompt(req)}, text, tcs, b)
            run = {
                "id": run_id,
                "status": "completed",
                "agent": request.match_info.get("agent"),
                "latency_ms": int(round((time.monotonic() - t0) * 1000)),
                "estimated_cost": b.get("cost", 0.0012),
                "input_tokens": inp,
                "output_tokens": out,
                "tool_calls": [{"name": tc["name"], "args": tc["args"]} for tc in tcs],
                "output": text,
                **extra,
            }
            run.update(self.run)
            run.update(b.get("run") or {})
            return await self._json_reply(request, {"run": run}, b)
        except _Dropped:
            return _closed_response()
        except ConnectionError:
            return _closed_response()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.servers.fake_agent",
                                 description="Fake agent server (POST /agents/{agent}/invoke) on 127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--token", default="test-token")
    ap.add_argument("--mode", choices=MODES, default="ok")
    ap.add_argument("--slow-s", type=float, default=2.0)
    ap.add_argument("--latency-ms", type=float, default=0)
    ap.add_argument("--run", help="JSON object merged over the run payload")
    ap.add_argument("--script", help="JSON file: {\"invoke\": [behaviour, ...]}")
    args = ap.parse_args(argv)
    import json
    script = load_script(args.script) or {}
    defaults = script.pop("_defaults", None)
    return serve_forever(FakeAgent(port=args.port, token=args.token, mode=args.mode, slow_s=args.slow_s,
                                   latency_ms=args.latency_ms, run=json.loads(args.run) if args.run else None,
                                   script=script, defaults=defaults))


if __name__ == "__main__":
    sys.exit(main())
