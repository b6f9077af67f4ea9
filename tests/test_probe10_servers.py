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


# --------------------------------------------------------------------------- anthropic: no message


START = event({"type": "message_start", "message": {"model": "m", "usage": {"input_tokens": 3, "output_tokens": 1}}})
BLOCK = event({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})
DELTA = event({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hello"}})
END = event({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 50}})
STOP = event({"type": "message_stop"})


@pytest.mark.parametrize("events", [[STOP], [END], [STOP, START, BLOCK, DELTA, END]],
                         ids=["message_stop-alone", "message_delta-alone", "message_stop-first"])
def test_an_anthropic_stream_that_holds_no_message_is_an_error_not_an_empty_answer(events):
    """A stream of message_stop alone (a gateway that cut the stream and closed it properly),
    or one whose message_stop came first, was a successful attempt answering '' with no stop
    reason: graded as the model's answer (a fail, not an error). openai's subject says 'the
    stream held no answer' for the same; anthropic now says so too, usage unknown."""
    result = ask("anthropic", sse_events(*events, hold=False), stream=True)
    assert isinstance(result, SubjectError), result.output
    assert str(result) == "anthropic: the stream held no answer (no message_start, no content block)"
    assert result.kind == "invalid-response"
    assert result.measurements.requests == 1
    assert result.measurements.input_tokens is None and result.measurements.output_tokens is None


def test_an_anthropic_stream_with_events_out_of_order_keeps_its_text_and_counts():
    """message_start carries a placeholder output count (1); message_delta the final one. A stream
    whose message_delta came before message_start read output_tokens 1 for 50 (cost and budget
    undercounted); a text delta before its content_block_start was dropped by it (answer '')."""
    late_start = ask("anthropic", sse_events(END, START, BLOCK, DELTA, STOP, hold=True), stream=True)
    assert not isinstance(late_start, SubjectError), late_start
    assert late_start.output.text == "hello"
    assert (late_start.measurements.input_tokens, late_start.measurements.output_tokens) == (3, 50)
    late_block = ask("anthropic", sse_events(START, DELTA, BLOCK, END, STOP, hold=True), stream=True)
    assert not isinstance(late_block, SubjectError), late_block
    assert late_block.output.text == "hello"
    assert late_block.output.status == "end_turn"
    assert (late_block.measurements.input_tokens, late_block.measurements.output_tokens) == (3, 50)


# --------------------------------------------------------------------------- a Content-Type that says what came


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_stream_answered_to_a_request_that_did_not_ask_for_one_is_read_as_that_stream(kind):
    """A gateway that streams whatever it is asked (text/event-stream to a request without
    stream: true) sent the whole answer, and it was lost: 'response is not valid JSON'. As a
    JSON body answered to a stream request is read as a body, a stream is read as a stream,
    up to its last event even while the server holds the connection open."""
    result = ask(kind, sse_events(*STREAMS[kind], hold=True))
    assert not isinstance(result, SubjectError), result
    assert result.output.text == "hi"
    assert (result.measurements.input_tokens, result.measurements.output_tokens) == (3, 2)


def test_an_html_page_answered_with_200_says_what_the_server_sent():
    """A proxy's HTML error page with status 200 read 'response is not valid JSON (Expecting
    value: line 1 column 1 (char 0); 62 bytes)': nothing said it was a web page, nor what it
    said. The error now names the Content-Type and the page's first words, on one line."""
    page = b"<html>\n<body><h1>502 Bad Gateway</h1>\x1b[31m upstream down</body></html>\n"
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: %d\r\n\r\n" % len(page)
    result = ask("openai", head + page)
    assert isinstance(result, SubjectError), result.output
    message = str(result)
    assert message.startswith("openai: response is not valid JSON (Expecting value"), message
    assert message.endswith("; the server answered text/html: <html> <body><h1>502 Bad Gateway</h1> upstream "
                            "down</body></html>"), message
    assert result.kind == "invalid-response" and result.measurements.input_tokens is None


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_an_html_page_answered_to_a_stream_request_says_what_the_server_sent(kind):
    """The same page answered to stream: true read 'stream ended before it finished (truncated)':
    nothing was cut, the server sent a web page. An http subject answered with an event stream
    said only 'not valid JSON'. Both now name the Content-Type and the first words."""
    page = b"<html><body>502 Bad Gateway</body></html>"
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n" % len(page)
    result = ask(kind, head + page, stream=True)
    assert isinstance(result, SubjectError), result.output
    assert str(result) == (f"{kind}: stream ended before it finished (truncated); the server answered text/html: "
                           "<html><body>502 Bad Gateway</body></html>")
    streamed = ask("http", sse_events(b'data: {"output": {"text": "hi"}}\n\n', hold=False))
    assert isinstance(streamed, SubjectError), streamed.output
    assert str(streamed).endswith('; the server answered text/event-stream: data: {"output": {"text": "hi"}}'), \
        str(streamed)


# --------------------------------------------------------------------------- a judge that times out after a retry


def test_a_judge_that_times_out_after_a_retry_counts_every_request_it_sent(tmp_path):
    """A judge whose server answered 500, then held the retry unanswered: the judgment timed
    out and its usage said 1 request, though the ledger counted 2 sent (both possibly billed).
    A subject's attempt cut the same way says 2; the judge's grade does too now."""
    import os
    import subprocess
    import sys

    from tests.test_probe8_servers import ROOT, Server
    from tests.test_probe8_servers import answer as whole

    async def handler(n, body, writer):
        if n == 1:
            writer.write(whole(b'{"error": {"message": "upstream failed"}}', "500 Internal Server Error"))
        else:
            await asyncio.sleep(60)  # accepted, never answered

    with Server(handler) as srv:
        judge = {"type": "openai", "base_url": srv.url + "/v1", "model": "j", "params": {"max_tokens": 100},
                 "retries": {"attempts": 3, "base_delay_s": 0.01, "max_delay_s": 0.02}}
        (tmp_path / "cases.jsonl").write_text(json.dumps({"id": "c0", "input": "hi", "expected": "hi"}) + "\n")
        (tmp_path / "suite.yaml").write_text("name: s\ncases: cases.jsonl\nsubject: {type: mock}\njudge: "
                                             + json.dumps(judge) + "\ngraders: [{llm-judge: {rubric: 'says hi'}}]\n")
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "SCOREBOARD_STORE": "none"}
        done = subprocess.run([sys.executable, "-m", "scoreboard", "run", "suite.yaml", "--no-progress", "--format",
                               "json", "--output", "rep", "--timeout", "2000"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=240, check=False)
        seen = len(srv.seen)
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    report = json.loads((tmp_path / "rep.json").read_text())
    [grade] = report["attempts"][0]["grades"]
    assert grade["judge_failure"] is True and grade["reason"] == ("judge failure: judge timed out after 2s (request sent, the "
                                                                "server's answer had not begun (its status line and "
                                                                "headers had not all come))"), grade
    assert seen == 2 and report["requests"]["by_role"] == {"judge": 2}
    assert grade["judge"]["usage"] == {"requests": 2, "input_tokens": None, "output_tokens": None, "cost_usd": None}
    checked = subprocess.run([sys.executable, "-m", "scoreboard", "verify", "rep.json"], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=240, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr


# --------------------------------------------------------------------------- an error event with no type


def test_an_anthropic_stream_error_without_its_type_field_is_the_providers_error():
    """A gateway relaying an Anthropic stream sent `event: error` with data {"error": {...}} and
    no "type": "error" in it. The event was skipped and the attempt said 'stream ended before it
    finished (truncated)': the provider's words were lost, and a quota error did not stop the run
    as the same error said in a 402 or a typed error event does."""
    quota = b'event: error\ndata: {"error": {"type": "insufficient_quota", "message": "You exceeded your quota"}}\n\n'
    result = ask("anthropic", sse_events(START, quota, hold=False), stream=True)
    assert isinstance(result, SubjectError), result.output
    assert str(result) == ("anthropic: provider error: quota or billing limit reached, stopping the run: "
                           "You exceeded your quota"), str(result)
    assert result.kind == "quota" and result.stop_run
    overloaded = b'event: error\ndata: {"error": {"type": "overloaded_error", "message": "Overloaded"}}\n\n'
    result = ask("anthropic", sse_events(START, overloaded, hold=False), stream=True)
    assert isinstance(result, SubjectError), result.output
    assert str(result) == "anthropic: provider error: Overloaded" and result.kind == "server-error"
    assert result.measurements.input_tokens is None


# --------------------------------------------------------------------------- [DONE] with spaces around it


@pytest.mark.parametrize("done", [b"data: [DONE] \n\n", b"data: [DONE]\t\r\n\r\n", b"data:  [DONE]\n\n"],
                         ids=["trailing-space", "trailing-tab-crlf", "two-spaces-before"])
def test_an_openai_stream_ending_with_done_and_spaces_is_answered(done):
    """'data: [DONE] ' (a space after it) was seen as the stream's end, then read as an event
    of JSON: the whole answer was lost as 'response is not valid JSON'. 'data:  [DONE]' (two
    spaces) was not seen as the end at all: a server holding the stream open had the attempt
    wait out its timeout."""
    spaced = [e.replace(b"data: ", b"data:  ") for e in OPENAI_STREAM[:3]] if b"  [" in done else OPENAI_STREAM[:3]
    result = ask("openai", sse_events(*spaced, done, hold=True), stream=True)
    assert not isinstance(result, SubjectError), result
    assert result.output.text == "hi" and result.output.status == "stop"
    assert (result.measurements.input_tokens, result.measurements.output_tokens) == (3, 2)


def test_an_anthropic_stream_with_two_spaces_after_data_held_open_is_answered():
    events = [e.replace(b"data: ", b"data:  ") for e in ANTHROPIC_STREAM]
    result = ask("anthropic", sse_events(*events, hold=True), stream=True)
    assert not isinstance(result, SubjectError), result
    assert result.output.text == "hi" and result.measurements.output_tokens == 2
    spaced = ask("anthropic", sse_events(*ANTHROPIC_STREAM[:-1], b'event: message_stop\ndata: {"type"  :\t"message_stop"}\n\n',
                                         hold=True), stream=True)
    assert not isinstance(spaced, SubjectError), spaced
    assert spaced.output.text == "hi"


# --------------------------------------------------------------------------- a surrogate pair split across events


def test_a_character_split_across_two_stream_events_is_one_character():
    """A server that streams UTF-16 code units (a JavaScript gateway slicing its string) sends an
    emoji as "\\ud83d" in one event and "\\ude00" in the next. Each event was read alone, so the
    joined text held two lone surrogates: the report showed two U+FFFD and said the output was
    repaired (lone_surrogates: 2). The halves of a pair are one character, as they are when both
    escapes come in one JSON body; a half with no partner is still a lone surrogate."""
    openai_events = [b'data: {"model":"m","choices":[{"index":0,"delta":{"content":"a\\ud83d"}}]}\n\n',
                     b'data: {"model":"m","choices":[{"index":0,"delta":{"content":"\\ude00b\\ud800"},'
                     b'"finish_reason":"stop"}]}\n\n', b"data: [DONE]\n\n"]
    result = ask("openai", sse_events(*openai_events, hold=True), stream=True)
    assert not isinstance(result, SubjectError), result
    assert result.output.text == "a\U0001f600b\ud800"
    anthropic_events = [START, BLOCK,
                        event({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "x\ud83d"}}),
                        event({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "\ude00"}}),
                        END, STOP]
    result = ask("anthropic", sse_events(*anthropic_events, hold=True), stream=True)
    assert not isinstance(result, SubjectError), result
    assert result.output.text == "x\U0001f600"


# --------------------------------------------------------------------------- an error body held open


@pytest.mark.parametrize("framing", ["chunked", "short-length"])
def test_an_error_answer_whose_body_is_held_open_is_that_error_not_a_timeout(framing):
    """A 503 whose body was sent but never ended (a chunked body with no last chunk, or fewer
    bytes than its Content-Length, the connection held): the attempt waited out its whole
    timeout and said 'timeout', the status and the provider's words lost, never retried. An
    error body the server stops sending is read as far as it came."""
    body = b'{"error": {"message": "overloaded"}}'
    head = b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
    raw = (head + b"Transfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n" % (len(body), body) if framing == "chunked"
           else head + b"Content-Length: %d\r\n\r\n%s" % (len(body) + 100, body))
    result = ask("openai", raw)
    assert isinstance(result, SubjectError), result.output
    assert str(result) == "openai: HTTP 503: overloaded", str(result)
    assert result.kind == "server-error" and result.status == 503
    assert result.measurements.requests == 1 and result.measurements.input_tokens is None


# --------------------------------------------------------------------------- tool-call arguments with a surrogate


def _chunk(data: dict) -> bytes:
    return b"data: " + json.dumps(data).encode() + b"\n\n"


def test_tool_call_arguments_holding_a_surrogate_are_still_parsed():
    """Arguments whose text held a surrogate (an emoji split across two stream events, or one lone
    half) could not be encoded for the JSON parser: the call's args were left as their raw
    string, so every check on an argument failed ('args is not an object'). They are parsed: the
    pair is one character, a lone half stays for the runner to repair and report."""
    def call(args: str, first: bool) -> bytes:
        fn = {"arguments": args, **({"name": "search"} if first else {})}
        return _chunk({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, **({"id": "c1"} if first else {}), "function": fn}]}}]})

    end = [_chunk({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}), b"data: [DONE]\n\n"]
    split = ask("openai", sse_events(call('{"q": "a\ud83d', True), call('\ude00"}', False), *end, hold=True),
                stream=True)
    assert not isinstance(split, SubjectError), split
    assert split.output.tool_calls == [{"name": "search", "args": {"q": "a\U0001f600"}, "id": "c1"}]
    lone = ask("openai", sse_events(call('{"q": "a\ud800"}', True), *end, hold=True), stream=True)
    assert not isinstance(lone, SubjectError), lone
    assert lone.output.tool_calls == [{"name": "search", "args": {"q": "a\ud800"}, "id": "c1"}]
    body = json.dumps({"model": "m", "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "content": None, "tool_calls": [{"id": "c1", "type": "function",
                                         "function": {"name": "search", "arguments": '{"q": "b\ud800"}'}}]}}]}).encode()
    whole = ask("openai", b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body)
                + body)
    assert not isinstance(whole, SubjectError), whole
    assert whole.output.tool_calls[0]["args"] == {"q": "b\ud800"}  # a whole answer's too (it was the raw string)
