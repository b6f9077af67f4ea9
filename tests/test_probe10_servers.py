"""Probe 10: hostile servers behind the streaming HTTP subjects (openai, anthropic), real loopback
servers writing the bytes a broken provider or gateway writes.

Each answer must be read as the server sent it (no event silently dropped, no count read
smaller than the stream said), a stream that holds no answer is an error of its attempt (not an
empty answer graded as the model's), and a stream held open after its last event is answered,
whatever line ends the server uses (the SSE spec allows CRLF, LF and a lone CR)."""

from __future__ import annotations

import asyncio
import json

import pytest

from scoreboard.errors import SubjectError
from tests.subjects import make, req
from tests.test_hostile_servers_2 import ANTHROPIC_STREAM, OPENAI_STREAM, RawServer, sse_events
from tests.test_probe4_subjects import At

#: a bound on one exchange: reaching it means the attempt hung on a stream it had fully read
HANG_GUARD_S = 20


def ask(kind: str, raw: bytes, **options):
    """One request to a loopback server that writes `raw` and then holds the connection open:
    the Result, or the SubjectError (a TimeoutError if the answer was never seen to end)."""
    async def handler(path, body, writer):
        writer.write(raw)
        await writer.drain()
        await asyncio.sleep(60)  # held open: the answer must end where its last event is

    with RawServer(handler) as srv:
        subject = make(kind, At(srv), retries={"attempts": 1}, **options)

        async def main():
            try:
                async with asyncio.timeout(HANG_GUARD_S):
                    return await subject.run(req(timeout_s=HANG_GUARD_S))
            finally:
                await subject.aclose()

        try:
            return asyncio.run(main())
        except SubjectError as err:
            return err


def event(data: dict) -> bytes:
    return b"event: %s\ndata: %s\n\n" % (data["type"].encode(), json.dumps(data).encode())


STREAMS = {"openai": OPENAI_STREAM, "anthropic": ANTHROPIC_STREAM}


# --------------------------------------------------------------------------- a byte order mark


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_stream_that_begins_with_a_byte_order_mark_keeps_its_first_event(kind):
    """A UTF-8 BOM before the first event (a gateway written on Windows, a proxy re-encoding the
    stream) made the first line 'EF BB BF data: ...', which is no data line: the first event was
    dropped without a word. openai answered 'i' for 'hi'; anthropic lost message_start, its
    model and input tokens. The SSE spec strips one leading BOM."""
    events = list(STREAMS[kind])
    events[0] = b"\xef\xbb\xbf" + events[0]
    result = ask(kind, sse_events(*events, hold=True), stream=True)
    assert not isinstance(result, SubjectError), result
    assert result.output.text == "hi"
    assert result.extra["model"] == "m"
    assert (result.measurements.input_tokens, result.measurements.output_tokens) == (3, 2)


# --------------------------------------------------------------------------- lone CR line ends


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_stream_with_lone_cr_line_ends_held_open_is_answered(kind):
    """SSE lines may end with a lone CR. Such a stream was parsed well once it closed, but its last
    event ([DONE], message_stop) was looked for only before a LF: a server holding the stream open
    after it (as keep-alive gateways do) had the attempt wait out its whole timeout, the answer
    lost."""
    events = [e.replace(b"\n", b"\r") for e in STREAMS[kind]]
    result = ask(kind, sse_events(*events, hold=True), stream=True)
    assert not isinstance(result, SubjectError), result
    assert result.output.text == "hi"
    assert (result.measurements.input_tokens, result.measurements.output_tokens) == (3, 2)
