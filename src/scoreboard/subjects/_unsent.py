"""Whether a failed HTTP try ever left: a try that failed before any byte of its request was
written (connection refused, a name not resolved, a connect timeout, TLS failing before the
request) cannot have been billed, so the ledger records it as never sent, with no usage.

Two signals must agree. aiohttp raises ClientConnectorError (and its subclasses: DNS, TLS,
proxy), ConnectionTimeoutError and ServerFingerprintMismatch from the connector, before the
request is written. But for an idempotent method it retries once on a reused connection the
server closed, and that first write may have reached the server before the new connection is
refused: so the try also carries a probe, set as soon as the connector hands aiohttp a
connection to write on (before any byte of the request is buffered; a try that gets one is
counted as possibly sent). A probe never set means nothing left.

The probe travels in a context variable (`probing`) to the subject's connector,
not through aiohttp's request tracing: a trace config makes aiohttp build and await a signal for
every stage of every request, about 25-40 us of CPU a request, where this costs well under 1 (`ProbingConnector`)."""

from __future__ import annotations

import asyncio
import errno
from contextvars import ContextVar

import aiohttp


class SentProbe:
    """Set once aiohttp has a connection to write the request on (its headers go first); then
    the answer's status once its headers came, and how many bytes of its body were read (what
    a timeout that cuts the try says it was waiting for: `progress_words`)."""

    __slots__ = ("sent", "status", "read", "stream")

    def __init__(self) -> None:
        self.sent = False
        self.status: int | None = None
        self.read: int | None = None  # None: the body is read in one go (its length was declared)
        self.stream = False


def progress_words(probe: SentProbe | None, waiting: tuple | None = None) -> str:
    """Where a try stood when a timeout cut it, in words: waiting (`waiting`: ("queued", the
    last try's error or None) in the subject's own queue, ("retry", error, seconds) before a
    retry), connecting, sent with no answer's headers yet, or reading the body of an answer
    whose headers came (how much of it)."""
    if waiting is not None:
        err = waiting[1]
        if waiting[0] == "retry":
            return f"waiting {waiting[2]:.3g} s to retry after: {err}"
        return "queued behind the subject's own limits (max_concurrency, requests_per_minute" + \
            (", a rate limit's pause" if getattr(err, "status", None) == 429 else "") + ")" + \
            (f"; the last answer: {err}" if err is not None else "")
    if probe is None or not probe.sent:
        return "connecting to the server, no request sent yet"
    if probe.status is None:
        return "request sent, the server's answer had not begun (its status line and headers had not all come)"
    what = "stream" if probe.stream else "body"
    read = "" if probe.read is None else f": {probe.read:,} bytes read, " + (
        "its last event not seen" if probe.stream else "its end not seen")
    return f"HTTP {probe.status} answer, its {what} still coming{read}"


#: the probe of the try the current task is making (None: no try is being probed)
_PROBE: ContextVar[SentProbe | None] = ContextVar("scoreboard_sent_probe", default=None)


def probing(probe: SentProbe | None) -> None:
    """The current task's next try is probed by `probe` (None: by none). Left set after the try:
    every try through a ProbingConnector sets its own first, and a stale probe is not read."""
    _PROBE.set(probe)


class ProbingConnector(aiohttp.TCPConnector):
    """aiohttp's TCP connector, marking the current try's probe once it has a connection (a
    connection that fails later, such as a kept-alive one the server closed, leaves it set)."""

    async def connect(self, req, traces, timeout):  # type: ignore[override]
        conn = await super().connect(req, traces, timeout)
        probe = _PROBE.get()
        if probe is not None:
            probe.sent = True
        return conn


def never_sent_reason(exc: BaseException, probe: SentProbe | None) -> str | None:
    """Why a try failed before any byte of it was written (None: it may have been sent)."""
    if probe is None or probe.sent:
        return None
    if isinstance(exc, asyncio.CancelledError):
        return "cancelled before sending"
    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        return "connect timed out"
    if isinstance(exc, aiohttp.ServerFingerprintMismatch):
        return "TLS fingerprint mismatch"
    if isinstance(exc, aiohttp.ClientConnectorDNSError):
        return "name not resolved"
    if isinstance(exc, aiohttp.ClientSSLError):
        return "TLS failed"
    if isinstance(exc, aiohttp.ClientConnectorError):
        os_error = exc.os_error
        # one address refused, or every address of the name (aiohttp's "Multiple exceptions: ...")
        if isinstance(os_error, ConnectionRefusedError) or os_error.errno == errno.ECONNREFUSED \
                or f"[Errno {errno.ECONNREFUSED}]" in str(os_error):
            return "connection refused"
        return "could not connect"
    return None
