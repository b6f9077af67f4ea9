"""JSON in and out of the HTTP subjects: the fast path (orjson) reads and writes exactly what
the stdlib did, including the values orjson refuses or would change."""

from __future__ import annotations

import json
import math

import pytest

from scoreboard.subjects._wire import dumps_body, loads
from tests.subjects import call, call_error, make, req

BIG = 123456789012345678901234567890


@pytest.mark.parametrize("raw", [
    b'{"choices": [{"message": {"content": "ANSWER: 42"}}], "usage": {"prompt_tokens": 11}}',
    b'{"id": 123456789012345678901234567890, "n": -9223372036854775808}',
    b'{"x": 1e-7, "y": 0.1, "z": [true, false, null], "s": "caf\\u00e9 \\ud83d\\ude00"}',
    b'"\\ud800"',  # a lone surrogate: orjson refuses it, the stdlib reads it
    b'{"n": 18446744073709551616}',  # just past 64 bits
])
def test_loads_is_the_stdlibs(raw):
    assert loads(raw) == json.loads(raw)
    assert loads(raw.decode()) == json.loads(raw)
    assert type(loads(raw)) is type(json.loads(raw))


def test_loads_keeps_big_integers_exact_and_nan_as_before():
    assert loads(b'{"id": %d}' % BIG)["id"] == BIG
    assert math.isnan(loads(b"[NaN]")[0])  # not JSON, but what the stdlib always accepted
    with pytest.raises(ValueError):
        loads(b'{"a": ')


@pytest.mark.parametrize("body", [
    {"model": "m", "messages": [{"role": "user", "content": "What is 2+3? ünïcödé 😀"}], "temperature": 0.5},
    {"n": BIG},  # past 64 bits: the stdlib encodes it
    {1: "int key"},  # the stdlib turns it into "1"
])
def test_dumps_body_is_compact_utf8_json(body):
    assert json.loads(dumps_body(body)) == json.loads(json.dumps(body))
    assert b": " not in dumps_body(body) and b", " not in dumps_body(body)


def test_a_big_integer_in_an_answer_arrives_exact(fake_provider):
    fake_provider.push("generic", {"json": {"output": {"value": {"id": BIG}}}})
    result = call(make("http", fake_provider, output_path="output.value"), req("hi"))
    assert result.output.json == {"id": BIG}


def test_a_body_that_is_not_json_is_still_an_invalid_response(fake_provider):
    fake_provider.push("chat", {"malformed": True})
    err = call_error(make("openai", fake_provider))
    assert err.kind == "invalid-response" and "not valid JSON" in str(err)
