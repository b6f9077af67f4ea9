"""`http` subject: body templates, ${VAR} headers, bearer tokens, dot paths, errors."""

from __future__ import annotations

import pytest

from scoreboard.errors import ConfigError
from scoreboard.subjects.http import compile_path, lookup, render
from tests.subjects import call, call_error, make, req


def test_default_body_and_paths(fake_provider):
    fake_provider.push("generic", {"reply": "hello", "usage": {"input_tokens": 3, "output_tokens": 1}, "cost": 0.25})
    subject = make("http", fake_provider, status_path="status", input_tokens_path="usage.input_tokens",
                   output_tokens_path="usage.output_tokens", cost_path="cost")
    result = call(subject, req("hi there", skill="ignored by the default body"))
    assert fake_provider.requests[0]["json"] == {"input": "hi there"}
    assert result.output.text == "hello" and result.output.status == "ok"
    m = result.measurements
    assert (m.input_tokens, m.output_tokens, m.cost_usd, m.requests) == (3, 1, 0.25, 1)


def test_body_template_placeholders(fake_provider):
    body = {"query": "{{input}}", "prompt": "Q: {{input}} (run {{run}}, case {{case_id}})",
            "system": "{{skill}}", "meta": {"run": "{{run}}", "tags": ["{{case_id}}", "fixed"]}, "n": 3}
    messages = [{"role": "user", "content": "hi"}]
    call(make("http", fake_provider, body=body), req(messages, skill="SK", run=2, case_id="k7"))
    sent = fake_provider.requests[0]["json"]
    assert sent["query"] == messages  # exact placeholder keeps the JSON value
    assert sent["prompt"] == 'Q: [{"role": "user", "content": "hi"}] (run 2, case k7)'
    assert sent["system"] == "SK"
    assert sent["meta"] == {"run": 2, "tags": ["k7", "fixed"]}
    assert sent["n"] == 3


def test_headers_expand_env_at_request_time_and_bearer(fake_provider, monkeypatch):
    monkeypatch.delenv("SB_TEST_TENANT", raising=False)
    subject = make("http", fake_provider, headers={"X-Tenant": "t-${SB_TEST_TENANT}", "X-Fixed": "1"},
                   bearer_token_env="SB_TEST_BEARER")
    monkeypatch.setenv("SB_TEST_TENANT", "acme")  # set after the subject was built
    monkeypatch.setenv("SB_TEST_BEARER", "tok-abcdef-999")
    subject.check()
    call(subject)
    headers = fake_provider.requests[0]["headers"]
    assert headers["x-tenant"] == "t-acme" and headers["x-fixed"] == "1"
    assert headers["authorization"] == "Bearer tok-abcdef-999"
    assert "tok-abcdef-999" not in repr(subject.spec) and "acme" not in repr(subject.spec)


def test_missing_env_fails_check_and_request(fake_provider, monkeypatch):
    monkeypatch.delenv("SB_TEST_NOPE", raising=False)
    subject = make("http", fake_provider, headers={"X-Key": "${SB_TEST_NOPE}"})
    with pytest.raises(ConfigError, match="SB_TEST_NOPE"):
        subject.check()
    err = call_error(subject)
    assert err.kind == "config" and "SB_TEST_NOPE" in str(err)
    assert fake_provider.requests == []
    with pytest.raises(ConfigError, match="SB_TEST_NOPE"):
        make("http", fake_provider, bearer_token_env="SB_TEST_NOPE").check()


def test_index_paths_tool_calls_and_structured_output(fake_provider):
    payload = {"choices": [{"message": {"content": {"answer": 42}},
                            "calls": [{"name": "f", "arguments": '{"x": 1}', "id": "t1"},
                                      {"function": {"name": "g", "arguments": "bad{"}}]}]}
    fake_provider.push("generic", {"json": payload})
    result = call(make("http", fake_provider, output_path="choices.0.message.content",
                       tool_calls_path="choices.0.calls"))
    assert result.output.json == {"answer": 42}
    assert result.output.text == '{"answer": 42}'
    assert result.output.tool_calls == [{"name": "f", "args": {"x": 1}, "id": "t1"},
                                        {"name": "g", "args": "bad{", "id": None}]
    assert result.measurements.cost_usd is None and result.measurements.input_tokens is None


def test_missing_path_names_the_path(fake_provider):
    fake_provider.push("generic", {"json": {"result": "x"}})
    err = call_error(make("http", fake_provider, output_path="data.answer"))
    assert err.kind == "invalid-response" and "data.answer" in str(err)
    fake_provider.push("generic", {"reply": "x"})
    err = call_error(make("http", fake_provider, input_tokens_path="usage.prompt"))
    assert "usage.prompt" in str(err)


def test_price_gives_cost_when_no_cost_path(fake_provider):
    fake_provider.push("generic", {"usage": {"input_tokens": 100, "output_tokens": 20}})
    result = call(make("http", fake_provider, input_tokens_path="usage.input_tokens",
                       output_tokens_path="usage.output_tokens",
                       price={"input_per_mtok": 1.0, "output_per_mtok": 2.0}))
    assert result.measurements.cost_usd == pytest.approx((100 + 40) / 1e6)


def test_get_sends_no_body(fake_provider):
    result = call(make("http", fake_provider, method="GET", url=fake_provider.base_url + "/v1/models",
                       output_path="data.0.id"))
    assert result.output.text == "fake-model"
    (sent,) = fake_provider.requests
    assert sent["method"] == "GET" and sent["body"] == ""


def test_malformed_json_and_quota(fake_provider):
    fake_provider.push("generic", {"malformed": True})
    assert call_error(make("http", fake_provider)).kind == "invalid-response"
    fake_provider.push("generic", {"status": 429, "quota": True})
    err = call_error(make("http", fake_provider))
    assert err.stop_run and err.kind == "quota"


def test_options_validated():
    with pytest.raises(ConfigError, match="url"):
        make("http", output_path="a")
    with pytest.raises(ConfigError, match="output_path"):
        make("http", url="http://127.0.0.1:1/x", output_path="")
    with pytest.raises(ConfigError):
        make("http", url="http://127.0.0.1:1/x", method="FETCH")
    with pytest.raises(ConfigError):
        make("http", url="http://127.0.0.1:1/x", extra=1)


def test_path_and_template_helpers():
    assert compile_path("a.0.b", "output_path") == ("a", 0, "b")
    assert lookup({"a": [{"b": None}]}, ("a", 0, "b")) is None
    assert lookup({"a": {"0": "x"}}, ("a", 0)) == "x"
    assert render(["{{input}}", {"k": "<{{input}}>"}], {"{{input}}": [1]}, (("{{input}}", "[1]"),)) == \
        [[1], {"k": "<[1]>"}]
