"""Reading a batch's results file (OpenAI's output and error files, Anthropic's `results_url`):
JSON lines as they arrive, never the whole file at once, and never without end.

A provider's file holds one line per request, each at most an answer. What a broken or hostile
server sends instead is bounded here: a line that is not a JSON object, or longer than the
subject's `max_response_bytes`, is skipped and counted (its request then has no result, and
says why); a file longer than its requests' answers can be is read no further (a
non-retryable "too-large" error); a download that sends nothing for IDLE_S seconds, or breaks
off, is a retryable "connection" error (the batcher reads it again later)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import aiohttp

from ..errors import SubjectError
from ._bounded import read_body
from ._wire import loads_answer

#: the longest a results download may go without a byte (a server that stalls mid-file)
IDLE_S = 120.0
_CHUNK = 1 << 16


@dataclass
class Tally:
    """One reading's bound and what it skipped."""

    #: the most bytes read of one file (None: no bound)
    max_bytes: int | None = None
    #: lines skipped: not JSON objects, or longer than max_response_bytes
    unreadable: int = 0
    #: result lines naming no request of the run (counted by the reader of the results)
    foreign: int = 0
    #: result lines for a request already answered in this file (the first is kept)
    repeats: int = 0
    #: why reading stopped before the end ("" when it did not)
    cut: str = ""
    #: the longest a download may go without a byte, when shorter than IDLE_S (a run's polling
    #: deadline is near: batch_clock.py)
    idle_s: float | None = None

    def explain(self, reason: str) -> str:
        """Why the batch left a request without a result: `reason` (how the batch ended), then
        what its results held instead."""
        n = self.unreadable
        notes = [reason, self.cut]
        if n:
            notes.append(f"{n} line{'s' if n != 1 else ''} of its results could not be read (not a JSON "
                         "object, or longer than max_response_bytes)")
        if self.foreign:
            notes.append(f"{self.foreign} result line(s) named no request of this run")
        return "; ".join(n for n in notes if n)

    def oddities(self) -> list[str]:
        """What the results held besides one answer per request, said whether or not a request
        was left without one (the report's run.batches[].notes)."""
        return ([f"{self.repeats} result line(s) answered a request already answered (the first was kept)"]
                if self.repeats else []) + ([f"{self.foreign} result line(s) named no request of this batch"]
                                            if self.foreign else [])


async def result_lines(subject, url: str, tally: Tally, headers: dict | None = None) -> AsyncIterator[dict]:
    """The JSON objects of a results file at `url`, read with `subject`'s session and headers."""
    session = subject._pool.session(asyncio.get_running_loop(), subject.static_headers)
    limit = subject.max_response_bytes
    idle = IDLE_S if tally.idle_s is None else max(0.01, min(IDLE_S, tally.idle_s))
    # sock_read: no byte for `idle` seconds (headers or body) fails the read
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=idle, sock_read=idle)
    try:
        async with session.get(url, headers=headers, allow_redirects=False, timeout=timeout) as resp:
            if resp.status >= 300:
                raw, _ = await read_body(resp, 1 << 16)
                raise subject.status_error(resp.status, raw, resp.headers)
            rest, skipping, total = b"", False, 0
            while chunk := await resp.content.read(_CHUNK):
                total += len(chunk)
                over = tally.max_bytes is not None and total > tally.max_bytes
                if over:  # the lines whole within the bound are read; then the read stops
                    chunk = chunk[:len(chunk) - (total - tally.max_bytes)]
                *lines, rest = (rest + chunk).split(b"\n")
                for line in lines:
                    if skipping:  # the end of a line too long to keep
                        skipping = False
                    elif line.strip() and (value := _object(line, tally)) is not None:
                        yield value
                if over:
                    raise SubjectError(f"its results are larger than its requests' answers can be "
                                       f"({tally.max_bytes:,} bytes); read stopped there", kind="too-large")
                if len(rest) > limit:
                    if not skipping:
                        tally.unreadable += 1
                    rest, skipping = b"", True
            if rest.strip() and not skipping and (value := _object(rest, tally)) is not None:
                yield value
    except SubjectError:
        raise
    except (aiohttp.ClientError, OSError, TimeoutError) as exc:
        quiet = isinstance(exc, TimeoutError) and not str(exc)
        reason = f"no byte for {idle:g} s" if quiet else f"{type(exc).__name__}: {exc}"
        raise subject.fail(f"reading the batch's results failed ({reason})", kind="connection",
                           retryable=True) from None


def _object(raw: bytes, tally: Tally) -> dict | None:
    """A line as a JSON object; None (counted) when it is not one."""
    try:
        value = loads_answer(raw)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        tally.unreadable += 1
        return None
    return value


def custom_id_of(line: dict) -> str | None:
    """A result line's custom id (None when it has none that is text: matched to no request)."""
    value = line.get("custom_id")
    return value if isinstance(value, str) else None


def error_text(error: Any) -> str:
    """The provider's reason from an error object ({code, message} or {type, error: {...}})."""
    if isinstance(error, dict):
        inner = error.get("error") if isinstance(error.get("error"), dict) else error
        code = inner.get("code") or inner.get("type")
        message = inner.get("message")
        if message:
            return f"{code}: {message}" if code else str(message)
        if code:
            return str(code)
    return str(error)[:500]
