"""Probes of what reaches a provider's wire: a conversation's earlier replies that a chat API
cannot take as they were (an empty reply to Anthropic, a reply that only called tools) fail the
later turn before it is sent; a chat-message `tool` message is never sent to openai or
anthropic without the id it answers; replay follows no redirect; the `choice` transform parses
as the Inspect version it cites."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from scoreboard.engine.pipeline import RunOptions, run
from scoreboard.graders.transforms import parse_choice_answer
from scoreboard.record.verify import verify_report
from scoreboard.suite.load import load_suite
from tests.servers.fake_agent import FakeAgent
from tests.test_replay import FIX, TOKEN, replay, report_of

RETRIES = {"attempts": 1, "base_delay_s": 0.01, "max_delay_s": 0.01}
CALL = {"name": "f", "args": {"a": 1}}


def conv(turns: int = 3) -> dict:
    return {"id": "c", "conversation": {"topic": "survey"},
            "turns": [{"id": f"t{i}", "question": f"Question {i}?"} for i in range(1, turns + 1)]}


def subject_for(kind: str, srv) -> dict | str:
    if kind == "openai":
        return {"type": "openai", "base_url": srv.base_url + "/v1", "model": "m", "retries": RETRIES}
    if kind == "anthropic":
        return {"type": "anthropic", "base_url": srv.base_url, "model": "m", "retries": RETRIES}
    return "python:probe_wire_subject:answer"


def go(tmp_path: Path, subject, records: list[dict]) -> dict:
    tmp_path.mkdir(parents=True, exist_ok=True)
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    suite = load_suite(None, {"cases": [str(cases)], "subject": subject, "output_dir": str(tmp_path / "out"),
                              "formats": ["json"], "concurrency": 1})
    return run(suite, RunOptions(progress=False)).report


def by_id(report: dict) -> dict[str, dict]:
    return {a["case_id"]: a for a in report["attempts"]}


@pytest.fixture
def python_subject(tmp_path, monkeypatch):
    """A python subject whose first answer only calls a tool; it keeps every input it got."""
    (tmp_path / "probe_wire_subject.py").write_text(
        "from scoreboard import Output\n"
        "SEEN = []\n"
        "def answer(input):\n"
        "    SEEN.append(input)\n"
        "    if len(SEEN) == 1:\n"
        f"        return Output(text='', tool_calls=[{CALL!r}])\n"
        "    return 'ok'\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("probe_wire_subject", None)
    yield lambda: sys.modules["probe_wire_subject"].SEEN
    sys.modules.pop("probe_wire_subject", None)


# ---- 1. an empty earlier reply and the Anthropic Messages API


def test_an_empty_earlier_reply_is_not_sent_to_anthropic(fake_provider, tmp_path):
    # Anthropic refuses a message with empty content anywhere but as the final assistant message:
    # the history cannot be sent as it was, and it is never altered, so turn 2 fails unsent.
    fake_provider.push("messages", {"reply": ""}, {"reply": "ok"}, {"reply": "ok"})
    report = go(tmp_path, subject_for("anthropic", fake_provider), [conv()])
    turns = by_id(report)
    assert turns["c/t1"]["error"] is None
    assert turns["c/t2"]["status"] == "error"
    error = turns["c/t2"]["error"]
    assert error.startswith("turn not sent:") and "turn 't1'" in error and "empty" in error, error
    assert turns["c/t3"]["status"] == "not-run"
    assert len(fake_provider.requests) == 1  # nothing the API would refuse was sent
    assert verify_report(report).ok


# ---- 2. a reply that only called tools


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_tool_call_reply_stops_the_conversation_before_the_next_turn_is_sent(fake_provider, tmp_path, kind):
    # Both APIs need each call's result right after it (openai: a tool message per
    # tool_call_id; anthropic: a tool_result block per tool_use id), and a conversation has none:
    # the call is neither dropped nor sent without its result.
    route = "chat" if kind == "openai" else "messages"
    fake_provider.push(route, {"reply": "", "tool_calls": [CALL]}, {"reply": "ok"}, {"reply": "ok"})
    report = go(tmp_path, subject_for(kind, fake_provider), [conv()])
    turns = by_id(report)
    assert turns["c/t1"]["output"]["tool_calls"][0]["name"] == "f"
    assert turns["c/t2"]["status"] == "error"
    error = turns["c/t2"]["error"]
    assert error.startswith("turn not sent:") and "turn 't1'" in error and "tool call" in error, error
    assert turns["c/t3"]["status"] == "not-run"
    assert len(fake_provider.requests) == 1
    assert verify_report(report).ok


def test_a_tool_call_reply_is_not_dropped_from_a_python_subjects_history(tmp_path, python_subject):
    report = go(tmp_path, subject_for("python", None), [conv()])
    turns = by_id(report)
    assert turns["c/t2"]["status"] == "error" and "tool call" in turns["c/t2"]["error"]
    assert len(python_subject()) == 1  # turn 2 never reached the function without its call
    assert verify_report(report).ok


# ---- 3. a chat-message case's tool message


TOOL_CHAT = [{"role": "user", "content": "Weather?"}, {"role": "assistant", "content": "Looking it up."},
             {"role": "tool", "content": "{\"temp\": 20}"}, {"role": "user", "content": "So?"}]


def test_a_tool_message_reaches_python_but_never_openai_or_anthropic(fake_provider, tmp_path, python_subject):
    # Its schema holds no id of the call it answers (openai's tool_call_id; anthropic has no
    # tool role at all, only tool_result blocks naming a tool_use id): refused when the suite
    # loads, naming the case and the message, and never sent.
    from scoreboard.errors import ConfigError

    case = {"id": "chat", "input": TOOL_CHAT, "expected": "x"}
    for kind in ("openai", "anthropic"):
        with pytest.raises(ConfigError) as err:
            go(tmp_path / kind, subject_for(kind, fake_provider), [case])
        assert err.value.case_id == "chat" and err.value.field == "input.2.role" and "\n" not in str(err.value)
        assert fake_provider.requests == []
        # the same check guards each request (build()), whatever reached it
        field, reason = subject_of(kind, fake_provider).input_problem(TOOL_CHAT)
        assert field == "input.2.role" and "\n" not in reason
    # a python (command, http) subject receives the messages as written
    report = go(tmp_path / "python", subject_for("python", None), [case])
    assert by_id(report)["chat"]["error"] is None
    assert python_subject() == [TOOL_CHAT]


def subject_of(kind: str, srv):
    """The built subject of a kind."""
    from scoreboard.subjects.registry import build_subject

    return build_subject(subject_for(kind, srv), Path("."))


def test_an_empty_message_of_a_chat_case_is_not_sent_to_anthropic(fake_provider, tmp_path):
    from scoreboard.errors import ConfigError

    messages = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": ""},
                {"role": "user", "content": "Well?"}]
    with pytest.raises(ConfigError) as err:
        go(tmp_path, subject_for("anthropic", fake_provider), [{"id": "chat", "input": messages, "expected": "x"}])
    assert err.value.case_id == "chat" and err.value.field == "input.1.content"
    assert fake_provider.requests == []


# ---- 4. replay and redirects


def test_replay_follows_no_redirect_to_another_server(tmp_path):
    with FakeAgent(token=TOKEN) as other, FakeAgent(token=TOKEN) as worker:
        worker.push("invoke", {"status": 307, "json": {},
                               "headers": {"Location": other.base_url + "/agents/assistant/invoke"}})
        proc = replay(tmp_path, FIX / "replay.json", "--worker", worker.base_url, "--token", TOKEN)
        assert other.requests_to("invoke") == []  # the other server never saw the request (or the token)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    report = report_of(tmp_path)
    assert all(a["status"] == "error" and "redirect" in a["error"] and "307" in a["error"]
               for a in report["attempts"])
    assert report["run"]["replay"]["error"].startswith("HTTP 307")


# ---- 5. the choice transform parses as the cited Inspect version (0.3.285, from its wheel)


@pytest.mark.parametrize("text", ["ANSWER: ,", "ANSWER: , ,"])
def test_a_multiple_choice_match_naming_no_letter_is_no_answer(text):
    """inspect_ai 0.3.285 parse_answers: the comma split of ' ,' is the empty set, a subset of
    the choices, so it returns no answer (this returned "", which an exact grader compared)."""
    assert parse_choice_answer(text, 4, True) is None
