"""The egress allowlist of an agent whose network is cut (tasks/network.py): inside its network
namespace the only route out is a forwarder to this HTTP proxy, run by scoreboard for the
attempt, which admits only the declared `host:port`s (the agent's model endpoint when it is not
on loopback, and the hosts the profile or the task lists) and answers everything else 403.

    agent -> HTTPS_PROXY=http://127.0.0.1:P (inside) -> Unix socket DIR/P -> EgressProxy -> host:port

It speaks the two forms an HTTP client uses with a proxy: `CONNECT host:port` (a tunnel, for
https) and an absolute-form request (`GET http://host:port/path`, for plain http; forwarded
with `Connection: close`, one request per connection). Every try is recorded: method, host,
port, allowed or refused, status, bytes each way (and the path of a plain-http request), so the
report shows what the agent tried to reach. The record is bounded (MAX_RECORDS entries; past
it, tries are only counted).

A program that ignores the proxy variables reaches nothing at all (its namespace has no route
out) and leaves no record here: the count is of tries made through the proxy.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from ..subjects.agent_profile import join_host_port, split_host_port

#: the most bytes of a request or response head the proxy reads
MAX_HEAD_BYTES = 64 << 10
#: entries kept in the record (more tries are counted, not listed)
MAX_RECORDS = 500
#: connections open at once (more are closed at once and counted as dropped)
MAX_OPEN = 256
#: seconds a client may take to send its request head, and to connect upstream
HEAD_TIMEOUT_S = 30.0
CONNECT_TIMEOUT_S = 15.0
_PATH_CHARS = 300
#: schemes a client may wrongly send in absolute form, and their default ports
_DEFAULT_PORTS = {"https": 443, "wss": 443, "ws": 80}
#: headers of one hop, never forwarded (RFC 9110 7.6.1)
_HOP = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "proxy-connection", "te",
        "trailer", "upgrade"}


@dataclass
class _Try:
    method: str
    host: str
    port: int
    allowed: bool
    status: int | None = None
    path: str | None = None
    bytes_up: int = 0
    bytes_down: int = 0
    error: str | None = None

    def as_dict(self) -> dict:
        out = {"method": self.method, "host": self.host, "port": self.port, "allowed": self.allowed,
               "status": self.status, "bytes_up": self.bytes_up, "bytes_down": self.bytes_down}
        if self.path is not None:
            out["path"] = self.path
        if self.error:
            out["error"] = self.error
        return out


@dataclass
class EgressProxy:
    """One attempt's allowlisting proxy. `allowed`: {"host:port": why} (why: "model", "profile",
    "task")."""

    allowed: dict[str, str]
    tries: list[_Try] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=lambda: {"allowed": 0, "refused": 0, "unrecorded": 0,
                                                            "dropped": 0, "malformed": 0})
    _server: asyncio.AbstractServer | None = None
    _tasks: set = field(default_factory=set)
    port: int = 0

    def admits(self, host: str, port: int) -> bool:
        return join_host_port(host.lower().rstrip("."), port) in self.allowed

    async def start_unix(self, path: str) -> None:
        """Serve on a Unix socket (the sandbox's forwarder connects to it)."""
        self._server = await asyncio.start_unix_server(self._serve, path=path, limit=MAX_HEAD_BYTES)

    async def start_tcp(self) -> None:
        """Serve on a free port of 127.0.0.1 (`port`)."""
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0, limit=MAX_HEAD_BYTES)
        self.port = self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(BaseException):
                await task

    def record(self) -> dict:
        """What the agent tried to reach: {allowed_hosts, tries, allowed, refused, unrecorded,
        dropped, malformed, bytes_up, bytes_down, refused_hosts}."""
        tries = [t.as_dict() for t in self.tries]
        refused = sorted({join_host_port(t.host, t.port) for t in self.tries if not t.allowed})
        return {"allowed_hosts": [f"{h} ({why})" for h, why in sorted(self.allowed.items())],
                "tries": tries, **self.counts, "refused_hosts": refused,
                "bytes_up": sum(t.bytes_up for t in self.tries), "bytes_down": sum(t.bytes_down for t in self.tries),
                "note": "tries made through the proxy; a program that ignores HTTPS_PROXY reaches nothing "
                        "and is not counted"}

    # ------------------------------------------------------------------ serving

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if len(self._tasks) >= MAX_OPEN:
            self.counts["dropped"] += 1
            writer.close()
            return
        self._tasks.add(task)
        try:
            await self._handle(reader, writer)
        except (OSError, ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError,
                TimeoutError):
            pass
        except asyncio.CancelledError:
            # close() at the end of the attempt: the connection ends here. Ending the handler
            # normally keeps asyncio's server from logging the cancelled task as an error.
            pass
        finally:
            self._tasks.discard(task)
            writer.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        async with asyncio.timeout(HEAD_TIMEOUT_S):
            head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            self.counts["malformed"] += 1
            await _answer(writer, 400, "not an HTTP/1.x proxy request")
            return
        method, target, version = parts
        if method == "CONNECT":
            try:
                host, port = split_host_port(target)
            except ValueError:
                self.counts["malformed"] += 1
                await _answer(writer, 400, "CONNECT needs host:port")
                return
            path = None
        else:
            url = urlsplit(target)
            try:
                port = url.port or 80
            except ValueError:
                port = -1
            if url.scheme != "http" or not url.hostname or port <= 0:
                self.counts["malformed"] += 1
                if url.hostname and url.scheme in _DEFAULT_PORTS:  # https://host/... sent as plain http:
                    # a try at that host all the same, refused and recorded (its path is scanned too)
                    path = (url.path or "/") + (f"?{url.query}" if url.query else "")
                    self._log(method, url.hostname.lower().rstrip("."), url.port if port > 0 and url.port
                              else _DEFAULT_PORTS[url.scheme], path, refuse=True).status = 400
                await _answer(writer, 400, "a proxy request names an absolute http:// URL (https goes by CONNECT)")
                return
            host, path = url.hostname.lower().rstrip("."), (url.path or "/") + (f"?{url.query}" if url.query else "")
        attempt = self._log(method, host, port, path)
        if not attempt.allowed:
            attempt.status = 403
            await _answer(writer, 403, f"scoreboard egress allowlist: {join_host_port(host, port)} is not allowed "
                                       f"(allowed: {', '.join(sorted(self.allowed)) or 'none'})")
            return
        try:
            async with asyncio.timeout(CONNECT_TIMEOUT_S):
                up_reader, up_writer = await asyncio.open_connection(host, port, limit=MAX_HEAD_BYTES)
        except (OSError, TimeoutError) as exc:
            attempt.status, attempt.error = 502, type(exc).__name__
            await _answer(writer, 502, f"could not reach {join_host_port(host, port)}: {type(exc).__name__}")
            return
        try:
            if method == "CONNECT":
                attempt.status = 200
                writer.write(f"{version} 200 Connection established\r\n\r\n".encode())
                await writer.drain()
                await asyncio.gather(pipe(reader, up_writer, attempt, "bytes_up"),
                                     pipe(up_reader, writer, attempt, "bytes_down"))
            else:
                sent = _origin_head(method, path, version, lines[1:])
                attempt.bytes_up += len(sent)
                up_writer.write(sent)
                upload = asyncio.ensure_future(pipe(reader, up_writer, attempt, "bytes_up"))
                try:
                    await _relay_response(up_reader, writer, attempt)
                finally:  # one request per connection: once answered, the client's side is done
                    upload.cancel()
                    with contextlib.suppress(BaseException):
                        await upload
        finally:
            up_writer.close()

    def _log(self, method: str, host: str, port: int, path: str | None, *, refuse: bool = False) -> _Try:
        attempt = _Try(method, host, port, not refuse and self.admits(host, port),
                       path=None if path is None else path[:_PATH_CHARS])
        self.counts["allowed" if attempt.allowed else "refused"] += 1
        if len(self.tries) < MAX_RECORDS:
            self.tries.append(attempt)
        else:
            self.counts["unrecorded"] += 1
        return attempt


def _origin_head(method: str, path: str, version: str, headers: list[str]) -> bytes:
    """The request head sent upstream: origin-form, hop-by-hop headers dropped, one request."""
    listed = set()
    for line in headers:
        if line.lower().startswith("connection:"):
            listed |= {t.strip().lower() for t in line.split(":", 1)[1].split(",")}
    kept = [h for h in headers if h and ":" in h and h.split(":", 1)[0].strip().lower() not in _HOP | listed]
    return "\r\n".join([f"{method} {path} {version}", *kept, "Connection: close", "", ""]).encode("latin-1")


async def _relay_response(up: asyncio.StreamReader, writer: asyncio.StreamWriter, attempt: _Try) -> None:
    """The upstream's answer, its head(s) told `Connection: close` (interim 1xx heads pass as they are)."""
    while True:
        head = await up.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = lines[0].split(" ")
        code = int(status[1]) if len(status) > 1 and status[1].isdigit() else None
        if code is not None and 100 <= code < 200 and code != 101:
            writer.write(head)
            attempt.bytes_down += len(head)
            continue
        kept = [h for h in lines[1:] if h and h.split(":", 1)[0].strip().lower() not in
                ("connection", "keep-alive", "proxy-connection")]
        out = "\r\n".join([lines[0], *kept, "Connection: close", "", ""]).encode("latin-1")
        writer.write(out)
        attempt.bytes_down += len(out)
        if code is not None:
            attempt.status = code
        break
    await pipe(up, writer, attempt, "bytes_down")


async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, attempt: _Try | None = None,
               counter: str = "") -> None:
    """Copy `reader` to `writer` until the end (then half-close), counting the bytes into
    `attempt.<counter>` when given; a connection that breaks just ends the copy."""
    try:
        while data := await reader.read(65536):
            if attempt is not None:
                setattr(attempt, counter, getattr(attempt, counter) + len(data))
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (OSError, ConnectionError):
        pass


async def _answer(writer: asyncio.StreamWriter, status: int, text: str) -> None:
    reason = {400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway"}[status]
    body = (text + "\n").encode("utf-8", "replace")
    writer.write(f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n"
                 f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
    with contextlib.suppress(OSError, ConnectionError):
        await writer.drain()
