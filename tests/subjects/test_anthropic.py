"""`anthropic` subject against the loopback FakeProvider's Messages API."""

from __future__ import annotations

import pytest

from scoreboard.errors import ConfigError
from tests.subjects import KEY_ENV, call, call_error, make, req

PRICE = {"input_per_mtok": 3.0, "output_per_mtok": 15.0}


def test_json_reply_headers_and_body(fake_provider, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-ant-test-0123456789")
    fake_provider.push("messages", {"reply": "ANSWER: 5", "usage": {"input_tokens": 40, "output_tokens": 4}})
    result = call(make("anthropic", fake_provider, price=PRICE, params={"temperature": 0}),
                  req("What is 2+3?", skill="Be terse."))
    assert result.output.text == "ANSWER: 5"
    assert result.output.status == "end_turn"
    m = result.measurements
    assert (m.input_tokens, m.output_tokens, m.requests) == (40, 4, 1)
    assert m.cost_usd == pytest.approx((40 * 3 + 4 * 15) / 1e6)
    (sent,) = fake_provider.requests
    assert sent["path"] == "/v1/messages"
    assert sent["headers"]["x-api-key"] == "sk-ant-test-0123456789"
    assert sent["headers"]["anthropic-version"] == "2023-06-01"
    assert "authorization" not in sent["headers"]
    assert sent["json"] == {"model": "fake-model", "max_tokens": 1024, "system": "Be terse.", "temperature": 0,
                            "messages": [{"role": "user", "content": "What is 2+3?"}]}


def test_cost_unknown_without_price(fake_provider):
    result = call(make("anthropic", fake_provider))
    assert result.measurements.cost_usd is None
    assert result.measurements.output_tokens is not None


def test_system_messages_join_the_skill(fake_provider):
    messages = [{"role": "system", "content": "Extra rule."}, {"role": "user", "content": "hi"}]
    call(make("anthropic", fake_provider, max_tokens=64), req(messages, skill="SKILL"))
    body = fake_provider.requests[0]["json"]
    assert body["system"] == "SKILL\n\nExtra rule."
    assert body["messages"] == [{"role": "user", "content": "hi"}]
    assert body["max_tokens"] == 64


def test_tool_use_parsed_and_openai_tools_converted(fake_provider):
    fake_provider.push("messages", {"tool_calls": [{"name": "add", "args": {"a": 1}, "id": "toolu_1"}]})
    tools = [{"type": "function", "function": {"name": "add", "description": "adds",
                                               "parameters": {"type": "object"}}}]
    result = call(make("anthropic", fake_provider, tools=tools, tool_choice="required"))
    assert result.output.tool_calls == [{"name": "add", "args": {"a": 1}, "id": "toolu_1"}]
    assert result.output.status == "tool_use" and result.output.text is None
    body = fake_provider.requests[0]["json"]
    assert body["tools"] == [{"name": "add", "description": "adds", "input_schema": {"type": "object"}}]
    assert body["tool_choice"] == {"type": "any"}


def test_streaming_text_usage_and_stop_reason(fake_provider):
    fake_provider.push("messages", {"reply": "alpha beta gamma", "usage": {"input_tokens": 9, "output_tokens": 3}})
    result = call(make("anthropic", fake_provider, stream=True, price=PRICE))
    assert result.output.text == "alpha beta gamma"
    assert result.output.status == "end_turn"
    assert (result.measurements.input_tokens, result.measurements.output_tokens) == (9, 3)
    assert result.measurements.cost_usd == pytest.approx((9 * 3 + 3 * 15) / 1e6)
    assert fake_provider.requests[0]["json"]["stream"] is True


def test_streaming_text_and_tool_use(fake_provider):
    fake_provider.push("messages", {"reply": "Let me add.",
                                    "tool_calls": [{"name": "add", "args": {"a": 2, "b": 3}, "id": "toolu_9"}]})
    result = call(make("anthropic", fake_provider, stream=True))
    assert result.output.text == "Let me add."
    assert result.output.tool_calls == [{"name": "add", "args": {"a": 2, "b": 3}, "id": "toolu_9"}]
    assert result.output.status == "tool_use"


@pytest.mark.parametrize("behaviour,stream", [({"malformed": True}, False), ({"malformed": True}, True),
                                              ({"truncate": True}, True), ({"truncate": True}, False)])
def test_malformed_or_truncated_is_invalid_response(fake_provider, behaviour, stream):
    fake_provider.push("messages", behaviour)
    err = call_error(make("anthropic", fake_provider, stream=stream))
    assert err.kind == "invalid-response"
    assert len(fake_provider.requests) == 1


def test_billing_error_stops_the_run(fake_provider):
    fake_provider.push("messages", {"status": 400, "quota": True})
    err = call_error(make("anthropic", fake_provider))
    assert err.stop_run and err.kind == "quota" and err.status == 400
    assert "credit balance" in str(err)
    assert len(fake_provider.requests) == 1


def test_overloaded_529_is_retried(fake_provider):
    fake_provider.push("messages", {"status": 529}, {"reply": "ok"})
    result = call(make("anthropic", fake_provider))
    assert result.output.text == "ok"
    assert result.measurements.requests == 2


def test_options_validated():
    with pytest.raises(ConfigError):
        make("anthropic", max_tokens=0)
    with pytest.raises(ConfigError):
        make("anthropic", base_url="ftp://x")
    with pytest.raises(ConfigError):
        make("anthropic", stream="yes")
