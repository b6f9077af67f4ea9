"""Quick checks of the loopback fake servers themselves."""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.servers.fake_agent import FakeAgent
from tests.servers.fake_provider import FakeProvider

ROOT = Path(__file__).resolve().parents[2]


def post(url, body, headers=None, timeout=5.0):
    """POST JSON; returns (status, headers, raw text). HTTP errors are returned, not raised."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method="POST",
                                 headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, dict(r.headers), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode()


def sse_data(text):
    return [line[len("data: "):] for line in text.splitlines() if line.startswith("data: ")]


MSGS = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "What is 17+25?"}]


def test_chat_json_and_recording(fake_provider):
    st, _, body = post(fake_provider.base_url + "/v1/chat/completions", {"model": "gpt-x", "messages": MSGS},
                       headers={"Authorization": "Bearer sk-1"})
    assert st == 200
    d = json.loads(body)
    assert d["model"] == "gpt-x" and d["choices"][0]["message"] == {"role": "assistant", "content": "ANSWER: 42"}
    assert d["choices"][0]["finish_reason"] == "stop"
    u = d["usage"]
    assert u["completion_tokens"] == 2 and u["total_tokens"] == u["prompt_tokens"] + 2
    (rec,) = fake_provider.requests
    assert rec["route"] == "chat" and rec["method"] == "POST" and rec["path"] == "/v1/chat/completions"
    assert rec["headers"]["authorization"] == "Bearer sk-1" and rec["json"]["model"] == "gpt-x"


def test_chat_stream_usage_and_tool_calls(fake_provider):
    url = fake_provider.base_url + "/v1/chat/completions"
    st, h, body = post(url, {"model": "m", "stream": True, "stream_options": {"include_usage": True},
                             "messages": [{"role": "user", "content": "hello there world"}]})
    assert st == 200 and h["Content-Type"].startswith("text/event-stream")
    data = sse_data(body)
    assert data[-1] == "[DONE]"
    chunks = [json.loads(x) for x in data[:-1]]
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    assert text == "hello there world"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] == 3
    fake_provider.push("chat", {"tool_calls": [{"name": "search", "args": {"q": "x"}}], "usage": {"prompt_tokens": 7}})
    d = json.loads(post(url, {"model": "m", "messages": MSGS})[2])
    msg = d["choices"][0]["message"]
    assert msg["content"] is None and d["choices"][0]["finish_reason"] == "tool_calls"
    assert msg["tool_calls"][0]["function"] == {"name": "search", "arguments": '{"q": "x"}'}
    assert d["usage"]["prompt_tokens"] == 7


def test_responses_stream_and_json(fake_provider):
    url = fake_provider.base_url + "/v1/responses"
    st, _, body = post(url, {"model": "codex", "stream": True, "input": [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "say hi now"}]}]})
    events = [json.loads(x) for x in sse_data(body)]
    types = [e["type"] for e in events]
    assert types[0] == "response.created" and types[-1] == "response.completed"
    assert "response.output_item.added" in types and "response.output_item.done" in types
    assert "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta") == "say hi now"
    done = [e for e in events if e["type"] == "response.output_item.done"][0]["item"]
    assert done["type"] == "message" and done["content"][0] == {"type": "output_text", "text": "say hi now",
                                                                "annotations": []}
    usage = events[-1]["response"]["usage"]
    assert usage["output_tokens"] == 3 and usage["total_tokens"] == usage["input_tokens"] + 3
    d = json.loads(post(url, {"model": "codex", "input": "1+1"})[2])
    assert d["status"] == "completed" and d["output"][0]["content"][0]["text"] == "ANSWER: 2"


def test_anthropic_json_and_stream(fake_provider):
    url = fake_provider.base_url + "/v1/messages?beta=true"
    req = {"model": "claude-x", "max_tokens": 10, "messages": [{"role": "user", "content": "2*21"}]}
    d = json.loads(post(url, req)[2])
    assert d["content"] == [{"type": "text", "text": "ANSWER: 42"}] and d["stop_reason"] == "end_turn"
    assert d["usage"]["output_tokens"] == 2 and d["model"] == "claude-x"
    fake_provider.push("messages", {"reply": "ok", "tool_calls": [{"name": "bash", "args": {"cmd": "ls"}}]})
    st, _, body = post(url, {**req, "stream": True})
    events = [json.loads(x) for x in sse_data(body)]
    assert [e["type"] for e in events][:2] == ["message_start", "content_block_start"]
    assert events[-1]["type"] == "message_stop"
    md = [e for e in events if e["type"] == "message_delta"][0]
    assert md["delta"]["stop_reason"] == "tool_use" and md["usage"]["output_tokens"] >= 1
    starts = [e["content_block"] for e in events if e["type"] == "content_block_start"]
    assert starts[1]["type"] == "tool_use" and starts[1]["name"] == "bash"
    partial = [e["delta"]["partial_json"] for e in events
               if e["type"] == "content_block_delta" and e["delta"]["type"] == "input_json_delta"]
    assert json.loads("".join(partial)) == {"cmd": "ls"}
    assert fake_provider.requests[0]["query"] == {"beta": "true"}


def test_errors_retry_after_and_quota(fake_provider):
    url = fake_provider.base_url + "/v1/chat/completions"
    fake_provider.push("chat", {"status": 429, "retry_after": 1.5}, {"status": 429, "quota": True}, 500)
    fake_provider.push("messages", {"status": 429, "quota": True})
    st, h, body = post(url, {"messages": MSGS})
    assert st == 429 and h["Retry-After"] == "1.5" and json.loads(body)["error"]["code"] == "rate_limit_exceeded"
    st, _, body = post(url, {"messages": MSGS})
    assert st == 429 and json.loads(body)["error"]["type"] == "insufficient_quota"
    assert post(url, {"messages": MSGS})[0] == 500
    st, _, body = post(fake_provider.base_url + "/v1/messages", {"messages": MSGS})
    assert st == 429 and json.loads(body)["error"]["type"] == "billing_error"
    assert post(url, {"messages": MSGS})[0] == 200  # queue drained -> default


def test_malformed_and_generic(fake_provider):
    fake_provider.push("generic", {"malformed": True})
    st, _, body = post(fake_provider.base_url + "/generic/run", {"prompt": "a b c"})
    assert st == 200
    with pytest.raises(ValueError):
        json.loads(body)
    d = json.loads(post(fake_provider.base_url + "/generic", {"prompt": "a b c"})[2])
    assert d == {"output": {"text": "a b c"}, "status": "ok", "usage": {"input_tokens": 3, "output_tokens": 3},
                 "cost": 0.001}


def test_truncated_stream_and_body(fake_provider):
    url = fake_provider.base_url + "/v1/chat/completions"
    fake_provider.push("chat", {"truncate": True}, {"truncate": True})
    with pytest.raises((http.client.IncompleteRead, ConnectionError)):
        post(url, {"stream": True, "messages": [{"role": "user", "content": "one two three four"}]})
    with pytest.raises((http.client.IncompleteRead, ConnectionError)):
        post(url, {"messages": MSGS})


def test_hang_does_not_block_shutdown():
    srv = FakeProvider(script={"chat": [{"hang": True}, {"hang": True}]}).start()
    url = srv.base_url + "/v1/chat/completions"
    with pytest.raises((TimeoutError, socket.timeout, urllib.error.URLError)):
        post(url, {"messages": MSGS}, timeout=0.3)
    errors = []
    t = threading.Thread(target=lambda: errors.append(_swallow(post, url, {"messages": MSGS}, timeout=10)))
    t.start()
    time.sleep(0.2)
    t0 = time.monotonic()
    srv.stop()
    t.join(5)
    assert time.monotonic() - t0 < 2 and not t.is_alive() and isinstance(errors[0], Exception)
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", srv.port), timeout=0.5).close()


def _swallow(fn, *a, **kw):
    try:
        return fn(*a, **kw)
    except Exception as e:  # noqa: BLE001
        return e


def test_latency_and_max_in_flight():
    with FakeProvider(latency_ms=150) as srv:
        ts = [threading.Thread(target=post, args=(srv.base_url + "/v1/chat/completions", {"messages": MSGS}))
              for _ in range(4)]
        t0 = time.monotonic()
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert 0.14 < time.monotonic() - t0 < 1.5
        assert srv.max_in_flight == 4 and len(srv.requests) == 4


def test_agent_auth_modes(fake_agent):
    url = fake_agent.base_url + "/agents/helper/invoke"
    body = {"stream": False, "prompt": "what is 40+2", "roomId": "r1"}
    st, _, txt = post(url, body)
    assert st == 401 and "error" in json.loads(txt)
    assert post(url, body, headers={"Authorization": "Bearer nope"})[0] == 401
    auth = {"Authorization": "Bearer test-token"}
    st, _, txt = post(url, body, headers=auth)
    run = json.loads(txt)["run"]
    assert st == 200 and run["status"] == "completed" and run["output"] == "ANSWER: 42"
    assert {"id", "latency_ms", "estimated_cost", "input_tokens", "output_tokens", "tool_calls"} <= set(run)
    fake_agent.push("invoke", {"mode": "missing"}, {"mode": "malformed"},
                    {"tool_calls": [{"name": "lookup", "args": {"k": 1}}], "run": {"estimated_cost": 0.5}})
    assert "output" not in json.loads(post(url, body, headers=auth)[2])["run"]
    with pytest.raises(ValueError):
        json.loads(post(url, body, headers=auth)[2])
    run = json.loads(post(url, body, headers=auth)[2])["run"]
    assert run["tool_calls"] == [{"name": "lookup", "args": {"k": 1}}] and run["estimated_cost"] == 0.5
    assert [r["status"] for r in fake_agent.requests] == [401, 401, 200, 200, 200, 200]


def test_agent_slow_mode():
    with FakeAgent(token="t", mode="slow", slow_s=0.3, run={"output": "fixed"}) as srv:
        t0 = time.monotonic()
        st, _, txt = post(srv.base_url + "/agents/a/invoke", {"prompt": "x"}, headers={"Authorization": "Bearer t"})
        assert st == 200 and time.monotonic() - t0 >= 0.3 and json.loads(txt)["run"]["output"] == "fixed"


@pytest.mark.parametrize("module,extra", [("tests.servers.fake_provider", ["--latency-ms", "5"]),
                                          ("tests.servers.fake_agent", ["--token", "T", "--mode", "ok"])])
def test_subprocess_mode(module, extra, tmp_path):
    script = tmp_path / "script.json"
    route = "chat" if module.endswith("provider") else "invoke"
    script.write_text(json.dumps({route: [{"reply": "scripted"}]}))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", module, "--port", "0", "--script", str(script), *extra],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
    try:
        first = proc.stdout.readline().split()
        assert first[0] == "PORT" and int(first[1]) > 0
        base = f"http://127.0.0.1:{first[1]}"
        if route == "chat":
            d = json.loads(post(base + "/v1/chat/completions", {"messages": MSGS})[2])
            assert d["choices"][0]["message"]["content"] == "scripted"
        else:
            d = json.loads(post(base + "/agents/x/invoke", {"prompt": "p"}, headers={"Authorization": "Bearer T"})[2])
            assert d["run"]["output"] == "scripted"
        stats = json.loads(urllib.request.urlopen(base + "/stats", timeout=5).read())
        assert stats["requests"] == 1
    finally:
        proc.terminate()
        rc = proc.wait(5)
        proc.stdout.close()
    assert rc == 0


def test_until_in_flight_holds_until_n_then_answers():
    with FakeProvider() as srv:
        srv.set_default("chat", {"until_in_flight": 3, "hold_s": 5})
        url = srv.base_url + "/v1/chat/completions"
        ts = [threading.Thread(target=post, args=(url, {"messages": MSGS})) for _ in range(3)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(10)
        assert srv.max_in_flight == 3 and len(srv.requests) == 3
        # each request came on its own connection: the recorded peers tell them apart
        assert len({tuple(r["peer"]) for r in srv.requests}) == 3
        # alone, a held request is answered once the hold runs out
        srv.reset()
        srv.set_default("chat", {"until_in_flight": 3, "hold_s": 0.1})
        status, _, _ = post(url, {"messages": MSGS})
        assert status == 200 and srv.max_in_flight == 1
