"""Whether a failed HTTP try ever left: a try that failed before any byte of its request was
written (connection refused, a name not resolved, a connect timeout, TLS failing before the
request) cannot have been billed, so the ledger records it as never sent, with no usage.

Two signals must agree. aiohttp raises ClientConnectorError (and its subclasses: DNS, TLS,
proxy), ConnectionTimeoutError and ServerFingerprintMismatch from the connector, before the
request is written. But for an idempotent method it retries once on a reused connection the
server closed, and that first write may have reached the server before the new connection is
refused: so the try also carries a probe, set by aiohttp's `on_request_headers_sent` trace,
which fires before the request's first byte is buffered. A probe never set means nothing left."""

from __future__ import annotations

import asyncio
import errno

import aiohttp


class SentProbe:
    """Set once aiohttp is about to write the request (its headers go first)."""

    __slots__ = ("sent",)

    def __init__(self) -> None:
        self.sent = False


async def _headers_sent(session, ctx, params) -> None:
    probe = ctx.trace_request_ctx
    if isinstance(probe, SentProbe):
        probe.sent = True


def trace_config() -> aiohttp.TraceConfig:
    """The trace a subject's session carries, so each try's probe learns when it was written."""
    config = aiohttp.TraceConfig()
    config.on_request_headers_sent.append(_headers_sent)
    return config


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
