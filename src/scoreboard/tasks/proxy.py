"""One attempt's door to a shared fixture: a reverse proxy on its own free loopback port that
forwards every HTTP request to the fixture with the attempt's id in the X-Scoreboard-Attempt
header, and records what the agent sent (method, path and query, the start of the body), so
the canaries are looked for in exactly this attempt's requests, whatever the fixture's own
audit can attribute.

HTTP only: a WebSocket upgrade is refused (501), since it could not be recorded. Bodies pass
through unchanged (no decompression); the response streams back as it arrives (server-sent
events too). What is recorded is bounded: the first RECORD_BODY_BYTES of each body and
RECORD_TOTAL_BYTES in all (past it, requests are only counted).
"""

from __future__ import annotations

import aiohttp
from aiohttp import web
from yarl import URL

from .fixture import ATTEMPT_HEADER

#: the largest request body the proxy carries (a bigger one is answered 413)
MAX_BODY_BYTES = 16 << 20
RECORD_BODY_BYTES = 64 << 10
RECORD_TOTAL_BYTES = 4 << 20
#: headers that belong to one connection, never forwarded (RFC 9110 7.6.1)
_HOP = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "proxy-connection", "te",
        "trailer", "transfer-encoding", "upgrade", "content-length"}


class AttemptProxy:
    """A recording reverse proxy in front of a shared fixture, for one attempt."""

    def __init__(self, upstream: str, attempt_id: str):
        self.upstream, self.attempt_id = upstream.rstrip("/"), attempt_id
        self.port = 0
        #: while True (the agent's turn), requests are recorded; the checks' are not
        self.recording = True
        self.requests: list[dict] = []
        self.received = 0
        self.unrecorded = 0
        self._recorded_bytes = 0
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> None:
        """Listen on a free loopback port."""
        app = web.Application(client_max_size=MAX_BODY_BYTES)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._session = aiohttp.ClientSession(auto_decompress=False, trust_env=False,
                                              timeout=aiohttp.ClientTimeout(total=None, sock_connect=10))
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = self._runner.addresses[0][1]

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._session is not None:
            await self._session.close()
            self._session = None

    def record(self) -> dict:
        """What the attempt sent: {requests, received, unrecorded} (unrecorded: past the cap)."""
        return {"requests": list(self.requests), "received": self.received, "unrecorded": self.unrecorded}

    def _keep(self, method: str, path: str, body: bytes) -> None:
        self.received += 1
        kept = body[:RECORD_BODY_BYTES]
        size = len(path) + len(kept)
        if self._recorded_bytes + size > RECORD_TOTAL_BYTES:
            self.unrecorded += 1
            return
        self._recorded_bytes += size
        self.requests.append({"method": method, "path": path, "body": kept.decode("utf-8", "replace"),
                              "body_bytes": len(body)})

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        if request.headers.get("Upgrade"):
            return web.Response(status=501, text="scoreboard's per-attempt proxy carries plain HTTP only")
        body = await request.read()
        if self.recording:
            self._keep(request.method, request.raw_path, body)
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP}
        headers[ATTEMPT_HEADER] = self.attempt_id
        target = URL(self.upstream + request.raw_path, encoded=True)
        assert self._session is not None
        answer: web.StreamResponse | None = None
        try:
            async with self._session.request(request.method, target, headers=headers, data=body or None,
                                             allow_redirects=False) as upstream:
                answer = web.StreamResponse(status=upstream.status, reason=upstream.reason)
                for name, value in upstream.headers.items():
                    if name.lower() not in _HOP:
                        answer.headers.add(name, value)
                if upstream.content_length is not None and request.method != "HEAD":
                    answer.content_length = upstream.content_length
                await answer.prepare(request)
                async for chunk in upstream.content.iter_any():
                    await answer.write(chunk)
                await answer.write_eof()
                return answer
        except (aiohttp.ClientError, OSError) as exc:
            if answer is not None and answer.prepared:  # cut mid-answer: the client sees it cut
                return answer
            return web.Response(status=502, text=f"the shared fixture did not answer: {type(exc).__name__}")
