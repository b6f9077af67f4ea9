"""`openai` subject against the loopback FakeProvider: JSON and SSE, tools, usage, cost, errors."""

from __future__ import annotations

import pytest

from scoreboard.engine.ledger import Ledger
from scoreboard.errors import ConfigError
from scoreboard.subjects.registry import build_subject, parse_subject_spec
from tests.subjects import KEY_ENV, call, call_error, make, req

PRICE = {"input_per_mtok": 2.5, "output_per_mtok": 10.0}


def test_json_reply_usage_cost_and_body(fake_provider, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-test-abcdef123456")
    fake_provider.push("chat", {"reply": "ANSWER: 5", "usage": {"prompt_tokens": 120, "completion_tokens": 7}})
    subject = make("openai", fake_provider, price=PRICE, params={"temperature": 0, "max_tokens": 50, "seed": 1})
    result = call(subject, req("What is 2+3?", skill="Answer briefly.", params={"temperature": 0.5}))
    assert result.output.text == "ANSWER: 5"
    assert result.output.status == "stop"
    m = result.measurements
    assert (m.input_tokens, m.output_tokens, m.requests) == (120, 7, 1)
    assert m.cost_usd == pytest.approx((120 * 2.5 + 7 * 10.0) / 1e6, rel=1e-12)
    assert m.latency_ms is not None and m.latency_ms > 0
    assert result.extra == {"finish_reason": "stop", "model": "fake-model", "retries": 0}
    (sent,) = fake_provider.requests
    assert sent["path"] == "/v1/chat/completions"
    assert sent["headers"]["authorization"] == "Bearer sk-test-abcdef123456"
    # only the skill and the input travel (plus settings): no reference, nothing else
    assert sent["json"] == {"model": "fake-model", "temperature": 0.5, "max_tokens": 50, "seed": 1,
                            "messages": [{"role": "system", "content": "Answer briefly."},
                                         {"role": "user", "content": "What is 2+3?"}]}


def test_no_price_means_unknown_cost_and_no_key_means_no_auth(fake_provider, monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    result = call(make("openai", fake_provider))
    assert result.measurements.cost_usd is None
    assert result.measurements.input_tokens is not None
    assert "authorization" not in fake_provider.requests[0]["headers"]


def test_usage_missing_is_unknown_not_zero(fake_provider):
    fake_provider.push("chat", {"json": {"choices": [{"message": {"role": "assistant", "content": "hi"},
                                                      "finish_reason": "stop"}]}})
    result = call(make("openai", fake_provider, price=PRICE))
    m = result.measurements
    assert (m.input_tokens, m.output_tokens, m.cost_usd) == (None, None, None)
    assert result.output.text == "hi"


def test_price_table_by_model(fake_provider):
    fake_provider.push("chat", {"usage": {"prompt_tokens": 1000, "completion_tokens": 100}})
    table = {"fake-model": {"input_per_mtok": 1, "output_per_mtok": 4}, "other": PRICE}
    result = call(make("openai", fake_provider, price=table))
    assert result.measurements.cost_usd == pytest.approx((1000 * 1 + 100 * 4) / 1e6)


def test_messages_input_sent_as_is_with_skill_first(fake_provider):
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"},
                {"role": "user", "content": "What is 4+4?"}]
    result = call(make("openai", fake_provider), req(messages, skill="SKILL"))
    assert result.output.text == "ANSWER: 8"
    assert fake_provider.requests[0]["json"]["messages"] == [{"role": "system", "content": "SKILL"}, *messages]


def test_tool_calls_parsed(fake_provider):
    tools = [{"type": "function", "function": {"name": "add", "parameters": {"type": "object"}}}]
    fake_provider.push("chat", {"tool_calls": [{"name": "add", "args": {"a": 1, "b": 2}, "id": "call_1"}]})
    result = call(make("openai", fake_provider, tools=tools, tool_choice="auto"))
    assert result.output.tool_calls == [{"name": "add", "args": {"a": 1, "b": 2}, "id": "call_1"}]
    assert result.output.status == "tool_calls"
    assert result.output.text is None
    body = fake_provider.requests[0]["json"]
    assert body["tools"] == tools and body["tool_choice"] == "auto"


def test_tool_call_with_invalid_json_args_keeps_the_raw_string(fake_provider):
    msg = {"role": "assistant", "content": None,
           "tool_calls": [{"id": "c9", "type": "function", "function": {"name": "f", "arguments": "{oops"}}]}
    fake_provider.push("chat", {"json": {"choices": [{"message": msg, "finish_reason": "tool_calls"}]}})
    result = call(make("openai", fake_provider))
    assert result.output.tool_calls == [{"name": "f", "args": "{oops", "id": "c9"}]


def test_streaming_text_and_usage(fake_provider):
    fake_provider.push("chat", {"reply": "one two three", "usage": {"prompt_tokens": 11, "completion_tokens": 3}})
    result = call(make("openai", fake_provider, stream=True, price=PRICE))
    assert result.output.text == "one two three"
    assert result.output.status == "stop"
    assert (result.measurements.input_tokens, result.measurements.output_tokens) == (11, 3)
    assert result.measurements.cost_usd == pytest.approx((11 * 2.5 + 3 * 10) / 1e6)
    body = fake_provider.requests[0]["json"]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}


def test_streaming_tool_calls(fake_provider):
    fake_provider.push("chat", {"tool_calls": [{"name": "lookup", "args": {"q": "x"}, "id": "call_7"},
                                               {"name": "add", "args": {"a": 1}, "id": "call_8"}]})
    result = call(make("openai", fake_provider, stream=True))
    assert result.output.tool_calls == [{"name": "lookup", "args": {"q": "x"}, "id": "call_7"},
                                        {"name": "add", "args": {"a": 1}, "id": "call_8"}]


@pytest.mark.parametrize("behaviour,stream", [({"malformed": True}, False), ({"malformed": True}, True),
                                              ({"truncate": True}, False), ({"truncate": True}, True)])
def test_malformed_or_truncated_is_invalid_response(fake_provider, behaviour, stream):
    fake_provider.push("chat", behaviour)
    err = call_error(make("openai", fake_provider, stream=stream))
    assert err.kind == "invalid-response"
    assert len(fake_provider.requests) == 1


def test_ledger_records_usage_and_cost(fake_provider):
    fake_provider.push("chat", {"usage": {"prompt_tokens": 10, "completion_tokens": 5}})
    ledger = Ledger()
    call(make("openai", fake_provider, price=PRICE), req(ledger=ledger))
    assert (ledger.sent, ledger.completed, ledger.failed) == (1, 1, 0)
    assert ledger.tokens_spent == 15
    assert ledger.cost_spent == pytest.approx((10 * 2.5 + 5 * 10) / 1e6)


def test_budget_bounds_passed_to_reserve(fake_provider):
    seen = {}

    class Spy(Ledger):
        def reserve(self, attempt, **kw):
            seen.update(kw, attempt=attempt)
            return super().reserve(attempt, **kw)

    call(make("openai", fake_provider, price=PRICE, params={"max_tokens": 100}),
         req("héllo", ledger=Spy(), variant="A", run=2))
    body_bytes = len(fake_provider.requests[0]["body"].encode("utf-8"))
    assert seen["attempt"] == ("c1", "A", 2)
    assert seen["max_tokens"] == body_bytes + 100
    assert seen["max_cost"] == pytest.approx((body_bytes * 2.5 + 100 * 10) / 1e6)
    seen.clear()
    call(make("openai", fake_provider), req(ledger=Spy()))  # no max_tokens, no price: unbounded
    assert seen["max_tokens"] is None and seen["max_cost"] is None


def test_check_and_options(monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    with pytest.raises(ConfigError, match=KEY_ENV):
        make("openai", base_url="http://127.0.0.1:1/v1", api_key_required=True).check()
    make("openai", base_url="http://127.0.0.1:1/v1").check()  # local server: no key needed
    with pytest.raises(ConfigError, match=KEY_ENV):  # the provider's own host needs one
        make("openai").check()
    with pytest.raises(ConfigError, match="model"):
        build_subject({"type": "openai", "base_url": "http://127.0.0.1:1/v1"}, None).check()
    with pytest.raises(ConfigError):
        make("openai", bogus=1)
    with pytest.raises(ConfigError):
        make("openai", price={"input_per_mtok": 1})
    with pytest.raises(ConfigError):
        make("openai", retries={"attempts": 0})
    with pytest.raises(ConfigError):
        make("openai", max_concurrency=0)
    assert parse_subject_spec("openai:gpt-x") == {"type": "openai", "model": "gpt-x"}


def test_spec_holds_env_names_not_keys(monkeypatch, fake_provider):
    monkeypatch.setenv(KEY_ENV, "sk-secret-value-987")
    subject = make("openai", fake_provider, headers={"Authorization": "Bearer sk-literal-123",
                                                     "X-Trace": "on", "X-Api-Key": "Key ${SB_TEST_K}"})
    spec = subject.spec
    assert spec["headers"]["Authorization"] == "***"
    assert spec["headers"]["X-Api-Key"] == "Key ${SB_TEST_K}"  # a reference, not a secret
    assert spec["api_key_env"] == KEY_ENV
    assert "sk-secret-value-987" not in repr(spec) and "sk-literal-123" not in repr(spec)
    assert spec["headers"]["X-Trace"] == "on"
    assert subject.remote is True and subject.has_model is True


@pytest.mark.parametrize("payload", [{"choices": ["not an object"]}, {"choices": [{"message": "text"}]},
                                     [1, 2], {"error": {"message": "upstream exploded"}}])
def test_unexpected_shapes_are_errors_not_crashes(fake_provider, payload):
    fake_provider.push("chat", {"json": payload}, {"json": payload}, {"json": payload})
    err = call_error(make("openai", fake_provider))
    assert err.kind in ("invalid-response", "server-error")
    if "error" in payload:
        assert "upstream exploded" in str(err)
