"""Conversation fixtures against the loopback fake provider: each turn's request carries the
actual earlier replies; an execution failure stops the later turns; a failed expectation does
not; bad fixtures are rejected before anything runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scoreboard.engine.pipeline import RunOptions, run
from scoreboard.errors import ConfigError
from scoreboard.record.verify import verify_report
from scoreboard.suite.load import load_suite

NOTES = "The survey counted 47 birds.\n\nIt rained on Tuesday."


def conv(cid: str = "birds", **extra) -> dict:
    return {"id": cid, "category": "notes", "conversation": {"topic": "survey", "notes": NOTES, "seed": 7},
            "turns": [{"id": "t1", "question": "How many birds?", "graders": [{"contains": "47"}]},
                      {"id": "t2", "question": "What happened on Tuesday?", "graders": [{"contains": "rain"}]},
                      {"id": "t3", "question": "Summarise.", "graders": [{"contains": "birds"}]}],
            **extra}


def write(tmp_path: Path, records: list[dict]) -> Path:
    path = tmp_path / "conv.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def go(tmp_path: Path, srv, records: list[dict], **flags):
    cases = write(tmp_path, records)
    subject = {"type": "openai", "base_url": srv.base_url + "/v1", "model": "m",
               "retries": {"attempts": 1, "base_delay_s": 0.01, "max_delay_s": 0.01}}
    suite = load_suite(None, {"cases": [str(cases)], "subject": subject, "output_dir": str(tmp_path / "out"),
                              "formats": ["json"], "concurrency": 2, **flags})
    return run(suite, RunOptions(progress=False)).report


def by_turn(report: dict, run_index: int = 0) -> dict[str, dict]:
    return {a["case_id"]: a for a in report["attempts"] if a["run"] == run_index}


def test_each_turn_carries_the_actual_earlier_replies(fake_provider, tmp_path):
    fake_provider.push("chat", {"reply": "There were 47 birds."}, {"reply": "It rained, sadly."},
                       {"reply": "47 birds, and rain on Tuesday."})
    report = go(tmp_path, fake_provider, [conv()])
    turns = by_turn(report)
    assert [turns[f"birds/t{i}"]["status"] for i in (1, 2, 3)] == ["passed"] * 3
    bodies = [r["json"] for r in fake_provider.requests]
    assert len(bodies) == 3
    first, second, third = (b["messages"] for b in bodies)
    # turn 1: the shared input rendered once (notes as note_1, note_2), then the question
    assert [m["role"] for m in first] == ["user"] and "[note_1] The survey counted 47 birds." in first[0]["content"]
    assert first[0]["content"].endswith("How many birds?")
    # turn 2 holds the subject's actual reply to turn 1, turn 3 both replies, in order, unshortened
    assert [m["role"] for m in second] == ["user", "assistant", "user"]
    assert second[1]["content"] == "There were 47 birds." and second[2]["content"] == "What happened on Tuesday?"
    assert [m["content"] for m in third if m["role"] == "assistant"] == ["There were 47 birds.", "It rained, sadly."]
    assert all(b.get("seed") == 7 for b in bodies)  # the conversation's seed reaches every turn
    assert verify_report(report).ok


def test_failed_expectation_continues_but_execution_failure_stops(fake_provider, tmp_path):
    # run 0: turn 1 fails its expectation (no "47") and the conversation goes on
    fake_provider.push("chat", {"reply": "Lots of birds."}, {"reply": "It rained."}, {"reply": "birds"})
    report = go(tmp_path, fake_provider, [conv()])
    turns = by_turn(report)
    assert [turns[f"birds/t{i}"]["status"] for i in (1, 2, 3)] == ["failed", "passed", "passed"]
    # run with an execution failure at turn 2: turn 3 is not run and no request is sent for it
    fake_provider.reset()
    fake_provider.push("chat", {"reply": "47 birds."}, {"status": 500})
    (tmp_path / "b").mkdir()
    report = go(tmp_path / "b", fake_provider, [conv()])
    turns = by_turn(report)
    assert turns["birds/t1"]["status"] == "passed"
    assert turns["birds/t2"]["status"] == "error"
    assert turns["birds/t3"]["status"] == "not-run" and "turn 't2'" in turns["birds/t3"]["error"]
    assert len(fake_provider.requests) == 2
    assert report["run"]["status"] == "completed" and verify_report(report).ok


def test_a_turn_whose_history_breaks_a_limit_fails_before_it_is_sent(fake_provider, tmp_path):
    fake_provider.push("chat", {"reply": "47 " + "x" * 300})
    limits_suite = tmp_path / "suite.json"
    write(tmp_path, [conv()])
    limits_suite.write_text(json.dumps({"cases": "conv.jsonl", "output_dir": "out", "formats": ["json"],
                                        "subject": {"type": "openai", "base_url": fake_provider.base_url + "/v1",
                                                    "model": "m"},
                                        "limits": {"conversation": {"max_assistant_chars": 100}}}))
    report = run(load_suite(limits_suite), RunOptions(progress=False)).report
    turns = by_turn(report)
    assert turns["birds/t1"]["status"] == "passed"
    assert turns["birds/t2"]["status"] == "error"
    assert "never shortened" in turns["birds/t2"]["error"] and "max_assistant_chars" in turns["birds/t2"]["error"]
    assert turns["birds/t3"]["status"] == "not-run"
    assert len(fake_provider.requests) == 1


@pytest.mark.parametrize("record, field", [
    ({**conv(), "conversation": {"topic": "x", "messages": [{"role": "assistant", "content": "hi"}]}}, "turns"),
    ({**conv(), "turns": [{"id": "t1", "question": "a"}, {"id": "t1", "question": "b"}]}, "turns.1.id"),
    ({**conv(), "turns": [{"id": "t1", "question": "a", "answer": "no"}]}, "turns.0.answer"),
    ({**conv(), "turns": []}, "turns"),
    ({**conv(), "turns": [{"id": f"t{i}", "question": "q"} for i in range(11)]}, "turns"),
    ({**conv(), "turns": [{"id": "t1", "question": "q" * 2001}]}, "turns.0.question"),
    ({**conv(), "input": "hello"}, "input"),
    ({**conv(), "conversation": {"topic": "x", "mood": "sunny"}}, "conversation.mood"),
])
def test_bad_conversation_fixtures_are_rejected(tmp_path, record, field):
    cases = write(tmp_path, [record])
    with pytest.raises(ConfigError) as info:
        load_suite(None, {"cases": [str(cases)], "subject": "mock", "output_dir": str(tmp_path / "out")})
    assert info.value.field == field and info.value.case_id == "birds"
    assert "\n" not in str(info.value)
    assert not (tmp_path / "out").exists()


def test_conversation_files_over_two_mib_are_rejected(tmp_path):
    filler = [{"id": f"c{i}", "input": "x" * 1000, "expected": "x"} for i in range(2200)]
    cases = write(tmp_path, [conv(), *filler])
    with pytest.raises(ConfigError, match="max_file_bytes"):
        load_suite(None, {"cases": [str(cases)], "subject": "mock"})


def test_case_filter_selects_a_whole_conversation(tmp_path):
    cases = write(tmp_path, [conv(), {"id": "plain", "input": "a", "expected": "a"}])
    suite = load_suite(None, {"cases": [str(cases)], "subject": "mock", "case": ["birds/t2"]})
    assert [c.id for c in suite.cases] == ["birds/t1", "birds/t2", "birds/t3"]
