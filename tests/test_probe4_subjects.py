"""Probe 4: the HTTP subjects against loopback servers that answer what a provider should not.

Each case: the attempt ends, its failure (if any) is in words, usage it could not read is
unknown (never 0, never a smaller count), and one bad answer takes nothing from the others."""

from __future__ import annotations

import json

import pytest

from scoreboard.errors import ConfigError, SubjectError
from scoreboard.subjects.registry import build_subject
from tests.subjects import call, call_error, make, req
from tests.test_hostile_servers_2 import RawServer, answer, by_case, case_of, chat, run_suite, sse_events


class At:
    """What `make` needs of a server: its base URL."""

    def __init__(self, srv: RawServer):
        self.base_url = srv.url


def ask(kind: str, handler, **options):
    """One request to a RawServer answering with `handler`: its Result, or its SubjectError."""
    with RawServer(handler) as srv:
        try:
            return call(make(kind, At(srv), **options), req(timeout_s=30))
        except SubjectError as err:
            return err


def replying(raw: bytes):
    async def handler(path, body, writer):
        writer.write(raw)
    return handler


def nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


ANTHROPIC_OK = {"type": "message", "model": "m", "stop_reason": "end_turn",
                "content": [{"type": "text", "text": "hi"}], "usage": {"input_tokens": 3, "output_tokens": 2}}


# --------------------------------------------------------------------------- nesting


def test_an_answer_nested_just_under_the_parsers_limit_is_an_error_of_its_attempt_not_a_crash(tmp_path):
    """orjson reads up to 1024 levels; a tool call's arguments 1015 deep crashed the whole run
    ("internal error: RecursionError" while the report was written) and an http subject's
    output 980 deep escaped as a bare RecursionError with its request uncounted."""
    tool_use = (b'{"type":"message","model":"m","stop_reason":"tool_use","usage":{"input_tokens":3,'
                b'"output_tokens":2},"content":[{"type":"tool_use","id":"t","name":"f","input":{"a":'
                + nested(1015) + b"}}]}")

    async def handler(path, body, writer):
        writer.write(answer(tool_use if case_of(body) == 0 else json.dumps(ANTHROPIC_OK).encode()))

    with RawServer(handler) as srv:
        proc, report = run_suite(tmp_path, {"type": "anthropic", "base_url": srv.url, "model": "m"}, 2)
    attempts = by_case(report)
    assert attempts["c1"]["status"] == "passed"
    assert attempts["c0"]["status"] == "error" and attempts["c0"]["measurements"]["requests"] == 1
    assert attempts["c0"]["error"].startswith("anthropic: response is not valid JSON (nested too deeply")


def test_an_http_output_nested_deep_is_the_subjects_error_with_its_request_counted():
    err = ask("http", replying(answer(b'{"output":{"text":' + nested(980) + b"}}")))
    assert isinstance(err, SubjectError) and err.kind == "invalid-response", err
    assert "nested too deeply" in str(err) and err.measurements.requests == 1


def test_a_tool_call_argument_string_nested_deep_is_kept_as_its_text():
    args = "[" * 1000 + "]" * 1000
    body = {"choices": [{"message": {"content": None, "tool_calls": [
        {"id": "t", "type": "function", "function": {"name": "f", "arguments": args}}]},
        "finish_reason": "tool_calls"}]}
    result = ask("openai", replying(answer(json.dumps(body).encode())))
    assert not isinstance(result, SubjectError), result
    assert result.output.tool_calls[0]["args"] == args


# --------------------------------------------------------------------------- usage


@pytest.mark.parametrize("usage", ['"many"', "[3, 2]", "7", "true"])
def test_a_usage_that_is_not_an_object_is_unknown_and_the_answer_is_kept(usage):
    """Before, `"usage": "many"` made the whole answer an error (AttributeError)."""
    raw = json.dumps(chat()).encode()[:-1] + b',"usage":' + usage.encode() + b"}"
    result = ask("openai", replying(answer(raw)))
    assert not isinstance(result, SubjectError), result
    assert result.output.text == "hi"
    assert (result.measurements.input_tokens, result.measurements.output_tokens) == (None, None)
    body = {**ANTHROPIC_OK, "usage": json.loads(usage)}
    result = ask("anthropic", replying(answer(json.dumps(body).encode())))
    assert not isinstance(result, SubjectError), result
    assert (result.output.text, result.measurements.input_tokens) == ("hi", None)


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_streamed_usage_that_is_not_an_object_is_unknown(kind):
    if kind == "openai":
        events = [b'data: {"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}\n\n',
                  b'data: {"choices":[],"usage":"lots"}\n\n', b"data: [DONE]\n\n"]
    else:
        events = [b'data: {"type":"message_start","message":{"model":"m","usage":[1]}}\n\n',
                  b'data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}\n\n',
                  b'data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":"x"}\n\n',
                  b'data: {"type":"message_stop"}\n\n']
    result = ask(kind, replying(sse_events(*events, hold=False)), stream=True)
    assert not isinstance(result, SubjectError), result
    assert result.output.text == "hi"
    assert (result.measurements.input_tokens, result.measurements.output_tokens) == (None, None)


@pytest.mark.parametrize("cache", [-100, "7", 1.5, True, 1 << 60])
def test_anthropic_cache_tokens_that_are_no_count_make_the_input_unknown(cache):
    """100 input tokens and a cache read of -100 was recorded as 0 input tokens; a cache read
    of "7" as 100: a count that cannot be read leaves the total unknown, never smaller."""
    body = {**ANTHROPIC_OK, "usage": {"input_tokens": 100, "output_tokens": 2, "cache_read_input_tokens": cache}}
    result = ask("anthropic", replying(answer(json.dumps(body).encode())))
    assert not isinstance(result, SubjectError), result
    assert (result.measurements.input_tokens, result.measurements.output_tokens) == (None, 2)


def test_anthropic_cache_tokens_add_to_the_input_and_null_ones_count_nothing():
    usage = {"input_tokens": 100, "output_tokens": 2, "cache_read_input_tokens": 5,
             "cache_creation_input_tokens": None}
    result = ask("anthropic", replying(answer(json.dumps({**ANTHROPIC_OK, "usage": usage}).encode())))
    assert result.measurements.input_tokens == 105


# --------------------------------------------------------------------------- streams


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_server_that_ignores_stream_and_answers_json_is_read(kind):
    """Some compatible servers answer `stream: true` with one JSON body: it was read as a
    stream with no events ("stream ended before it finished (truncated)")."""
    body = (json.dumps(chat(usage={"prompt_tokens": 3, "completion_tokens": 2})) if kind == "openai"
            else json.dumps(ANTHROPIC_OK)).encode()
    result = ask(kind, replying(answer(body)), stream=True)
    assert not isinstance(result, SubjectError), result
    assert result.output.text == "hi" and result.measurements.input_tokens == 3


def test_a_json_error_body_for_a_stream_is_the_providers_error():
    result = ask("openai", replying(answer(b'{"error":{"message":"model overloaded"}}')), stream=True)
    assert isinstance(result, SubjectError) and "model overloaded" in str(result), result


def test_a_stream_of_two_choices_answers_with_the_first_not_both_interleaved():
    """With n: 2 the deltas of both choices were joined into one garbled text; a JSON answer
    gives choice 0, and so does a stream."""
    events = [b'data: {"choices":[{"index":0,"delta":{"content":"he"}}]}\n\n',
              b'data: {"choices":[{"index":1,"delta":{"content":"XX"}}]}\n\n',
              b'data: {"choices":[{"index":0,"delta":{"content":"llo"},"finish_reason":"stop"}]}\n\n',
              b'data: {"choices":[{"index":1,"delta":{"content":"YY"},"finish_reason":"length"}]}\n\n',
              b"data: [DONE]\n\n"]
    result = ask("openai", replying(sse_events(*events, hold=False)), stream=True, params={"n": 2})
    assert not isinstance(result, SubjectError), result
    assert result.output.text == "hello" and result.output.status == "stop"


# --------------------------------------------------------------------------- redirects


@pytest.mark.parametrize("kind", ["openai", "anthropic", "http"])
def test_a_redirect_to_another_host_is_refused_and_names_where_it_pointed(kind):
    seen = []

    async def handler(path, body, writer):
        seen.append(path)
        writer.write(b"HTTP/1.1 307 Temporary Redirect\r\nLocation: http://10.1.2.3/v1/chat/completions\r\n"
                     b"Content-Length: 0\r\n\r\n")

    err = ask(kind, handler)
    assert isinstance(err, SubjectError) and len(seen) == 1, err
    assert "HTTP 307: a redirect (to http://10.1.2.3/v1/chat/completions) is not followed" in str(err), str(err)
    assert "\n" not in str(err)


def test_a_redirect_location_is_shown_on_one_line_and_cut():
    async def handler(path, body, writer):
        writer.write(b"HTTP/1.1 302 Found\r\nLocation: http://user:hunter2@x/" + b"a" * 5000 + b"\x1b[2J\r\n"
                     b"Content-Length: 0\r\n\r\n")

    err = ask("openai", handler)
    assert isinstance(err, SubjectError) and len(str(err)) < 400 and "\x1b" not in str(err), str(err)
    assert "hunter2" not in str(err) and "a redirect (to http://x/aaa" in str(err)



# --------------------------------------------------------------------------- agent CLIs


@pytest.mark.parametrize("cache", [-100, "7", 1.5])
def test_claude_cli_cache_tokens_that_are_no_count_make_the_input_unknown(tmp_path, monkeypatch, cache):
    """Claude Code printed 100 input tokens and a cache read of -100: the attempt recorded 100
    (a warning said the cache read was unknown, the total still read as known)."""
    monkeypatch.chdir(tmp_path)
    result = {"type": "result", "subtype": "success", "is_error": False, "result": "fine",
              "usage": {"input_tokens": 100, "output_tokens": 2, "cache_read_input_tokens": cache}}
    cli = tmp_path / "claude"
    cli.write_text(f"#!/bin/sh\ncat <<'EOF'\n{json.dumps(result)}\nEOF\n")
    cli.chmod(0o755)
    got = call(build_subject({"type": "claude-cli", "binary": str(cli)}, tmp_path))
    assert got.output.text == "fine"
    assert (got.measurements.input_tokens, got.measurements.output_tokens) == (None, 2)
    assert "cache_read_input_tokens" in got.extra["warnings"][0]


# --------------------------------------------------------------------------- bodies that cannot be read


def test_a_body_that_is_not_the_encoding_it_claims_is_one_line_and_not_called_truncated():
    """`Content-Encoding: gzip` on a plain body read 'truncated response (400, message:\\n  Can
    not decode content-encoding: gzip)': two lines, and nothing was truncated."""
    err = ask("openai", replying(answer(b"not gzip at all" * 10, headers=("Content-Encoding: gzip",))))
    assert isinstance(err, SubjectError) and err.kind == "invalid-response", err
    assert "\n" not in str(err) and "truncated" not in str(err), repr(str(err))
    assert str(err) == "openai: the response could not be decoded (Can not decode content-encoding: gzip)"


def test_an_error_body_of_control_characters_is_not_copied_into_the_message():
    """A 500 whose body is NUL bytes gave 'HTTP 500: ' and 300 NULs."""
    err = ask("openai", replying(answer(b"\0" * 5000 + b"\x1b[2Jboom\x07", "500 Internal")), retries={"attempts": 1})
    assert isinstance(err, SubjectError) and err.status == 500, err
    assert str(err) == "openai: HTTP 500: boom", repr(str(err))


# --------------------------------------------------------------------------- programs


def test_an_input_with_a_nul_byte_for_a_program_argument_is_the_subjects_error(tmp_path, monkeypatch):
    """No program argument can hold a NUL byte: the attempt read 'ValueError: embedded null
    byte', as if scoreboard had failed. It is now the subject's error, in words, and nothing runs;
    the same input on stdin reaches the program."""
    monkeypatch.chdir(tmp_path)
    nul = req(input="a\0b")
    err = call_error(build_subject({"type": "command", "argv": ["printf", "%s", "{input}"]}, tmp_path), nul)
    assert err.kind == "input" and str(err).startswith("command: the input holds a NUL byte"), str(err)
    piped = call(build_subject({"type": "command", "argv": ["cat"]}, tmp_path), req(input="a\0b"))
    assert piped.output.text == "a\0b"
    cli = tmp_path / "claude"
    cli.write_text("#!/bin/sh\necho never >&2\n")
    cli.chmod(0o755)
    err = call_error(build_subject({"type": "claude-cli", "binary": str(cli)}, tmp_path), req(input="a\0b"))
    assert err.kind == "input" and str(err).startswith("claude-cli: the input holds a NUL byte"), str(err)


@pytest.mark.parametrize("spec, field", [({"argv": ["echo", "a\0"]}, "subject.argv[1]"),
                                         ({"argv": ["echo"], "env": {"X": "a\0"}}, "subject.env.X")])
def test_a_nul_byte_in_a_commands_spec_is_refused_naming_its_field(tmp_path, spec, field):
    with pytest.raises(ConfigError) as caught:
        build_subject({"type": "command", **spec}, tmp_path)
    assert caught.value.field == field and "NUL byte" in str(caught.value)


# --------------------------------------------------------------------------- latency


@pytest.mark.parametrize("fails", [False, True])
def test_latency_leaves_out_the_wait_for_the_subjects_own_limits(monkeypatch, fails):
    """With max_concurrency: 1 and four attempts at once, every request took 0.5 s and the
    attempts read 0.5, 1.0, 1.5 and 2.0 s: the wait for the subject's own slot is queueing, not
    the provider's latency. A clock that moves only while a slot is awaited shows it exactly."""
    from scoreboard.subjects import _http, _limits

    clock = [0.0]
    monkeypatch.setattr(_http, "_perf", lambda: clock[0])
    acquire = _limits.Limiter.acquire

    async def slow_acquire(self):
        clock[0] += 100.0  # queued behind max_concurrency / requests_per_minute for 100 s
        return await acquire(self)

    monkeypatch.setattr(_limits.Limiter, "acquire", slow_acquire)
    raw = answer(b"{}", "400 Bad Request") if fails else answer(json.dumps(chat()).encode())
    got = ask("openai", replying(raw), max_concurrency=1)
    assert isinstance(got, SubjectError) == fails, got
    assert got.measurements.latency_ms == 0.0 and got.measurements.requests == 1


# --------------------------------------------------------------------------- retries and budgets


def test_a_budget_that_runs_out_between_retries_keeps_the_answer_that_was_being_retried(tmp_path):
    """A 503 storm retried until the request budget ran out: the attempt read only 'budget ran
    out during this attempt: request budget of 2 used up', and the 503s it met were nowhere."""
    async def handler(path, body, writer):
        writer.write(answer(b'{"error":{"message":"overloaded"}}', "503 Busy", ("Retry-After: 0",)))

    with RawServer(handler) as srv:
        subject = {"type": "openai", "base_url": srv.url + "/v1", "model": "m",
                   "retries": {"attempts": 4, "base_delay_s": 0, "max_delay_s": 0}}
        proc, report = run_suite(tmp_path, subject, 1, budget={"max_requests": 2})
    assert proc.returncode == 2, proc.stderr
    [attempt] = report["attempts"]
    assert attempt["error"] == ("budget ran out during this attempt: request budget of 2 used up; the last "
                                "answer, after 2 requests: openai: HTTP 503: overloaded"), attempt["error"]
    # the two requests it sent are its measured requests (they were null: unknown beside "after 2")
    assert attempt["measurements"]["requests"] == 2  # and the report verifies (run_suite checks)


# --------------------------------------------------------------------------- invalid UTF-8


@pytest.mark.parametrize("stream", [False, True])
def test_an_answer_with_invalid_utf8_is_read_repaired_and_says_so(stream):
    """A byte that is not UTF-8 in the answer (a server cutting a character in two) lost the
    whole answer ('response is not valid JSON ('utf-8' codec can't decode byte 0xff ...)');
    as for a command's stdout, each bad sequence is read as U+FFFD and the attempt says how many."""
    if stream:
        raw = sse_events(b'data: {"choices":[{"index":0,"delta":{"content":"h\xffi \xe2\x82"}}]}\n\n',
                         b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n',
                         b"data: [DONE]\n\n", hold=False)
    else:
        raw = answer(b'{"choices":[{"message":{"content":"h\xffi \xe2\x82"},"finish_reason":"stop"}]}')
    result = ask("openai", replying(raw), stream=stream)
    assert not isinstance(result, SubjectError), result
    assert result.output.text == "h\ufffdi \ufffd"
    assert result.extra["output_repaired"] == {"invalid_utf8": 2}


def test_an_answer_in_valid_utf8_says_nothing_was_repaired():
    result = ask("openai", replying(answer(json.dumps(chat(text="h\ufffdi é")).encode())))
    assert result.output.text == "h\ufffdi é" and "output_repaired" not in result.extra
