"""Bounded answers: every subject reads an answer only up to its `max_response_bytes` and turns
a larger one into an execution error naming the limit (HTTP bodies plain and streamed, a
declared Content-Length, gzip, a command's stdout and stderr, an agent CLI's output, the live
agent endpoint, a python function's return value), against loopback servers and real processes."""

from __future__ import annotations

import asyncio
import gzip
import sys
from pathlib import Path

import pytest
from aiohttp import web

from scoreboard.engine.attempt import AttemptRunner
from scoreboard.errors import ConfigError, SubjectError
from scoreboard.subjects.base import DEFAULT_MAX_RESPONSE_BYTES
from scoreboard.subjects.live_agent import LiveAgentSubject
from scoreboard.subjects.registry import build_subject
from tests.servers.fake_agent import FakeAgent
from tests.servers.fake_provider import FakeServerBase
from tests.subjects import call, call_error, make, req

MIB = 1 << 20
LIMIT = 64 * 1024


def test_the_default_is_a_few_mib_and_the_option_is_checked(tmp_path):
    assert DEFAULT_MAX_RESPONSE_BYTES == 4 * MIB
    assert make("openai").max_response_bytes == DEFAULT_MAX_RESPONSE_BYTES
    subject = make("openai", max_response_bytes=1000)
    assert subject.max_response_bytes == 1000 and subject.spec["max_response_bytes"] == 1000
    for bad in (0, -1, "1k", True, 1.5):
        with pytest.raises(ConfigError, match="max_response_bytes"):
            make("http", max_response_bytes=bad)
    for spec in ({"type": "command", "argv": ["true"]}, {"type": "python", "function": "m:f"},
                 {"type": "mock"}, {"type": "claude-cli"}):
        assert build_subject({**spec, "max_response_bytes": 10}, tmp_path).max_response_bytes == 10


@pytest.mark.parametrize("kind,stream", [("openai", False), ("openai", True), ("anthropic", False),
                                         ("anthropic", True), ("http", False)])
def test_an_oversized_answer_stops_at_the_limit(fake_provider, kind, stream):
    route = {"openai": "chat", "anthropic": "messages", "http": "generic"}[kind]
    fake_provider.push(route, {"oversize": 50 * MIB})
    options = {"stream": True} if stream else {}
    err = call_error(make(kind, fake_provider, max_response_bytes=LIMIT, **options))
    assert err.kind == "too-large" and not err.retryable
    assert f"max_response_bytes ({LIMIT:,} bytes)" in str(err)
    assert len(fake_provider.requests_to(route)) == 1  # not retried: the next would be as large


def test_a_declared_length_past_the_limit_is_not_read(fake_provider):
    fake_provider.push("chat", {"oversize": 50 * MIB, "declare_length": True})
    err = call_error(make("openai", fake_provider, max_response_bytes=LIMIT))
    assert err.kind == "too-large"


def test_an_answer_within_the_limit_is_read_whole(fake_provider):
    fake_provider.push("chat", {"oversize": LIMIT - 10})
    result = call(make("openai", fake_provider, max_response_bytes=LIMIT))
    assert set(result.output.text) == {"x"} and len(result.output.text) > LIMIT - 100


class GzipBomb(FakeServerBase):
    """A small gzip body that inflates past the limit."""

    PATHS = {"/v1/chat/completions": "chat"}

    def _add_routes(self, app: web.Application) -> None:
        app.router.add_post("/v1/chat/completions", self._bomb)

    async def _bomb(self, request: web.Request) -> web.Response:
        body = b'{"choices":[{"message":{"content":"' + b"x" * (8 * MIB) + b'"}}]}'
        return web.Response(body=gzip.compress(body), headers={"Content-Encoding": "gzip"},
                            content_type="application/json")


def test_a_compressed_answer_is_bounded_after_inflating():
    with GzipBomb() as srv:
        err = call_error(make("openai", srv, max_response_bytes=LIMIT))
    assert err.kind == "too-large"


def test_an_error_body_is_read_only_in_part(fake_provider):
    fake_provider.push("chat", {"status": 400, "body": "E" * (5 * MIB)})
    err = call_error(make("openai", fake_provider))
    assert err.kind == "client-error" and len(str(err)) < 1000


def test_a_judge_is_bounded_by_its_own_spec(fake_provider):
    from scoreboard.judges.client import Judge, JudgeFailure

    fake_provider.push("chat", {"oversize": 10 * MIB})
    judge = Judge(make("openai", fake_provider, max_response_bytes=LIMIT), timeout_s=30)

    async def ask():
        try:
            return await judge.ask(("c", "v", 0), "judge this", name="verdict",
                                   schema={"type": "object"}, key=lambda a: a)
        finally:
            await judge.subject.aclose()

    with pytest.raises(JudgeFailure, match=r"max_response_bytes \(65,536 bytes\)"):
        asyncio.run(ask())


# --------------------------------------------------------------------------- processes

HUGE = "import sys\nfor _ in range(1000): sys.stdout.buffer.write(b'y' * (1 << 20))\n"


def test_a_command_printing_a_huge_stdout_is_killed_at_the_limit(tmp_path):
    subject = build_subject({"type": "command", "argv": [sys.executable, "-c", HUGE],
                             "max_response_bytes": LIMIT}, tmp_path)
    err = call_error(subject)
    assert err.kind == "too-large" and f"max_response_bytes ({LIMIT:,} bytes)" in str(err)
    assert "killed" in str(err)


def test_a_command_within_the_limit_and_its_stderr_tail(tmp_path):
    ok = build_subject({"type": "command", "argv": [sys.executable, "-c", "print(input()[::-1])"]}, tmp_path)
    assert call(ok, req("abc")).output.text == "cba\n"
    noisy = "import sys\nsys.stderr.write('e' * (20 << 20) + 'THE END')\nsys.exit(3)\n"
    kept = build_subject({"type": "command", "argv": [sys.executable, "-c", noisy], "keep_stderr": True},
                         tmp_path)
    err = call_error(kept)
    assert "status 3" in str(err) and str(err).endswith("THE END") and len(str(err)) < 400


def fake_cli(tmp_path: Path, body: str) -> str:
    path = tmp_path / "fake-claude"
    path.write_text(f"#!{sys.executable}\n{body}")
    path.chmod(0o755)
    return str(path)


def test_an_agent_cli_printing_a_huge_output_is_killed_at_the_limit(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    binary = fake_cli(tmp_path, HUGE)
    subject = build_subject({"type": "claude-cli", "binary": binary, "max_response_bytes": LIMIT}, tmp_path)
    err = call_error(subject)
    assert err.kind == "too-large" and f"max_response_bytes ({LIMIT:,} bytes)" in str(err)
    assert not (tmp_path / ".scoreboard-tmp").exists()  # its folder removed as always


def test_an_agent_cli_answer_within_the_limit(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    answer = ('import json\nprint(json.dumps({"type": "result", "subtype": "success", "is_error": False,'
              ' "result": "fine", "usage": {"input_tokens": 3, "output_tokens": 2}}))\n')
    subject = build_subject({"type": "claude-cli", "binary": fake_cli(tmp_path, answer)}, tmp_path)
    assert call(subject).output.text == "fine"


def test_the_live_agent_payload_is_bounded():
    with FakeAgent(token="t0ken-abcdefgh") as srv:
        srv.push("invoke", {"oversize": 20 * MIB})
        subject = LiveAgentSubject({"url": srv.base_url + "/agents/a/invoke", "token": "t0ken-abcdefgh",
                                    "prompt": "p", "agent": "a", "room": None, "timeout_ms": 30000,
                                    "max_response_bytes": LIMIT})
        err = call_error(subject)
    assert err.kind == "too-large" and "max_response_bytes (65,536 bytes)" in str(err)


def test_a_python_function_answer_past_the_limit_is_an_error(tmp_path):
    (tmp_path / "bigmod.py").write_text("def answer(text):\n    return 'z' * (200 * 1024)\n")
    subject = build_subject({"type": "python", "function": "bigmod:answer", "max_response_bytes": LIMIT},
                            tmp_path)
    subject.check()
    runner = AttemptRunner.__new__(AttemptRunner)  # only its subject call is exercised
    runner.cache, runner.timeout_s = None, 10
    with pytest.raises(SubjectError, match=r"python subject's output is larger than max_response_bytes"):
        asyncio.run(runner._call(subject, req("x")))


def test_a_straggler_holding_the_cli_output_open_is_killed_after_the_grace(tmp_path, monkeypatch):
    import time

    from scoreboard.subjects import agent_cli

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(agent_cli, "_PIPE_GRACE_S", 0.3)
    answer = ('import json, subprocess\nsubprocess.Popen(["sleep", "60"])  # inherits stdout\n'
              'print(json.dumps({"type": "result", "subtype": "success", "is_error": False, "result": "done"}),'
              ' flush=True)\n')
    subject = build_subject({"type": "claude-cli", "binary": fake_cli(tmp_path, answer)}, tmp_path)
    started = time.monotonic()
    assert call(subject).output.text == "done"
    assert time.monotonic() - started < 10
