"""Origin 004's fixture rules: chat-message cases held to the conversation limits (configurable),
assistant messages that offer options, at most 40 note paragraphs, style defaulting to balanced,
the seed reaching each kind of subject, bounded comparison imports, the output text hash beside
the output hash, and the scoreboard version in the plan."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from scoreboard.engine.pipeline import RunOptions, run
from scoreboard.errors import ConfigError
from scoreboard.hashing import sha256_json
from scoreboard.record.verify import verify_report
from scoreboard.suite.load import load_suite
from tests.cli_inprocess import run_cli


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return run_cli(args, cwd, dict(os.environ))


def write_cases(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def go(tmp_path: Path, records: list[dict], subject, **settings) -> dict:
    cases = write_cases(tmp_path / "cases.jsonl", records)
    suite = {"name": "rules", "cases": "cases.jsonl", "subject": subject, "formats": ["json"],
             "output_dir": "out", **settings}
    (tmp_path / "suite.json").write_text(json.dumps(suite))
    assert cases.exists()
    return run(load_suite(tmp_path / "suite.json"), RunOptions(progress=False)).report


def chat(*turns: tuple) -> list[dict]:
    return [{"role": role, "content": text, **({"options": extra[0]} if extra else {})}
            for role, text, *extra in turns]


# --------------------------------------------------------------------------- chat-message cases


def test_assistant_options_are_accepted_recorded_and_shown_to_a_chat_model(tmp_path, fake_provider):
    messages = chat(("user", "What can you write?"),
                    ("assistant", "I can write one of these:", ["a poem", "a story", "a joke"]),
                    ("user", "The second one, please."))
    fake_provider.push("chat", {"reply": "Once upon a time"})
    subject = {"type": "openai", "base_url": fake_provider.base_url + "/v1", "model": "m"}
    report = go(tmp_path, [{"id": "pick", "input": messages, "graders": [{"contains": "Once"}]}], subject)
    case = report["plan"]["cases"][0]
    assert case["input"][1]["options"] == ["a poem", "a story", "a joke"]  # recorded and hashed as given
    assert case["input_hash"] == sha256_json(messages)
    (sent,) = [r["json"]["messages"] for r in fake_provider.requests]
    assert [set(m) for m in sent] == [{"role", "content"}] * 3  # a chat API gets no unknown keys
    assert sent[1]["content"] == "I can write one of these:\n\nOptions:\n1. a poem\n2. a story\n3. a joke"
    assert report["attempts"][0]["status"] == "passed"


def test_a_python_subject_gets_the_options_as_they_were_given(tmp_path):
    (tmp_path / "options_engine.py").write_text(
        "def pick(messages):\n"
        "    offered = next(m['options'] for m in messages if m['role'] == 'assistant')\n"
        "    return offered[1]\n")
    messages = chat(("user", "Options?"), ("assistant", "Pick:", ["tea", "coffee"]), ("user", "The second."))
    report = go(tmp_path, [{"id": "p", "input": messages, "expected": "coffee"}], "python:options_engine:pick")
    assert report["attempts"][0]["status"] == "passed"


@pytest.mark.parametrize("messages, field, words", [
    (chat(("user", "hi", ["x"])), "input.0", "only an assistant message may carry options"),
    (chat(("user", "x" * 2001)), "input.0.content", "over max_question_chars 2000"),
    (chat(("user", "q"), ("assistant", "y" * 24001)), "input.1.content", "over max_assistant_chars 24000"),
    (chat(*[("user", "q"), ("assistant", "a")] * 20, ("user", "q")), "input", "41 messages, over max_messages 40"),
    (chat(*[("user", "q" * 2000), ("assistant", "a" * 24000)] * 2, ("user", "q")), "input",
     "over max_conversation_chars 50000"),
    (chat(("user", "q"), ("assistant", "a", [str(i) for i in range(21)])), "input.1.options",
     "21 options, over max_options 20"),
], ids=["options-on-user", "user-chars", "assistant-chars", "messages", "total", "options"])
def test_chat_message_cases_are_held_to_the_conversation_limits(tmp_path, messages, field, words):
    write_cases(tmp_path / "c.jsonl", [{"id": "c1", "input": messages, "expected": "x"}])
    done = cli(tmp_path, "validate", "c.jsonl")
    assert done.returncode == 1, done.stdout
    (line,) = done.stderr.strip().splitlines()
    assert "c.jsonl:1" in line and "case 'c1'" in line and f"field '{field}'" in line and words in line, line


def test_the_chat_limits_are_configurable(tmp_path):
    long_question = chat(("user", "x" * 2500))
    write_cases(tmp_path / "cases.jsonl", [{"id": "c1", "input": long_question, "expected": "x"}])
    base = {"name": "lim", "cases": "cases.jsonl", "subject": "mock", "output_dir": "out"}
    (tmp_path / "suite.json").write_text(json.dumps(base))
    with pytest.raises(ConfigError, match="max_question_chars 2000"):
        load_suite(tmp_path / "suite.json")
    (tmp_path / "suite.json").write_text(json.dumps({**base, "limits": {"conversation": {"max_question_chars": 3000}}}))
    assert load_suite(tmp_path / "suite.json").cases[0].input == long_question


# --------------------------------------------------------------------------- conversations


def conversation(**shared) -> dict:
    return {"id": "conv", "conversation": {"topic": "t", **shared},
            "turns": [{"id": "t1", "question": "First?", "graders": [{"contains": "ok"}]},
                      {"id": "t2", "question": "Second?", "style": "concise", "graders": [{"contains": "ok"}]}]}


def test_notes_hold_at_most_40_paragraphs_unless_configured(tmp_path):
    notes = "\n\n".join(f"Paragraph {i}." for i in range(41))
    write_cases(tmp_path / "cases.jsonl", [conversation(notes=notes)])
    base = {"name": "n", "cases": "cases.jsonl", "subject": "mock", "output_dir": "out"}
    (tmp_path / "suite.json").write_text(json.dumps(base))
    with pytest.raises(ConfigError, match="41 paragraphs, over max_note_paragraphs 40") as info:
        load_suite(tmp_path / "suite.json")
    assert info.value.field == "conversation.notes" and info.value.case_id == "conv"
    (tmp_path / "suite.json").write_text(json.dumps({**base, "limits": {"conversation": {"max_note_paragraphs": 41}}}))
    assert len(load_suite(tmp_path / "suite.json").cases) == 2


def test_style_defaults_to_balanced_and_the_seed_reaches_a_chat_model(tmp_path, fake_provider):
    fake_provider.set_default("chat", {"reply": "ok"})
    subject = {"type": "openai", "base_url": fake_provider.base_url + "/v1", "model": "m"}
    report = go(tmp_path, [conversation(seed=11)], subject)
    first, second = report["plan"]["cases"]
    assert first["input"]["shared"]["style"] == "balanced"  # the normalised input records the default
    assert first["input_hash"] == sha256_json(first["input"])
    bodies = [r["json"] for r in fake_provider.requests]
    assert [b["seed"] for b in bodies] == [11, 11]
    # The default is not spelled out to the model; a turn's own style is.
    assert bodies[0]["messages"][-1]["content"].endswith("First?")
    assert bodies[1]["messages"][-1]["content"].endswith("Second?\n\n(Style: concise)")
    assert verify_report(report).ok


def test_the_seed_reaches_python_command_and_http_subjects_but_not_anthropic(tmp_path, fake_provider):
    (tmp_path / "seeded_engine.py").write_text("def answer(messages, seed=None):\n    return f'ok seed={seed}'\n")
    (tmp_path / "engine.sh").write_text('#!/bin/sh\necho "ok seed=$1 env=$SCOREBOARD_SEED"\n')
    os.chmod(tmp_path / "engine.sh", 0o755)
    fake_provider.set_default("generic", {"json": {"text": "ok"}})
    fake_provider.set_default("messages", {"reply": "ok"})
    variants = {
        "py": {"subject": "python:seeded_engine:answer"},
        "cmd": {"subject": {"type": "command", "argv": [str(tmp_path / "engine.sh"), "{seed}"]}},
        "web": {"subject": {"type": "http", "url": fake_provider.base_url + "/generic",
                            "body": {"messages": "{{input}}", "seed": "{{seed}}"}, "output_path": "text"}},
        "claude": {"subject": {"type": "anthropic", "base_url": fake_provider.base_url, "model": "c",
                               "api_key_env": "SCOREBOARD_TEST_NO_KEY", "api_key_required": False}},
    }
    report = go(tmp_path, [conversation(seed=5)], None, variants=variants)
    texts = {(a["variant"], a["case_id"]): (a["output"] or {}).get("text") for a in report["attempts"]}
    assert texts[("py", "conv/t1")] == "ok seed=5"
    assert texts[("cmd", "conv/t2")].strip() == "ok seed=5 env=5"
    generic = [r["json"] for r in fake_provider.requests_to("generic")]
    assert [b["seed"] for b in generic] == [5, 5]
    messages = [r["json"] for r in fake_provider.requests_to("messages")]
    assert len(messages) == 2 and all("seed" not in b for b in messages)  # the Messages API takes none


# --------------------------------------------------------------------------- imports and hashes


@pytest.fixture
def small_report(tmp_path) -> Path:
    write_cases(tmp_path / "cases.jsonl", [{"id": f"c{i}", "input": f"q{i}", "expected": f"q{i}"}
                                           for i in range(3)])
    done = cli(tmp_path, "run", "--cases", "cases.jsonl", "--subject", "mock", "--output", "r.json",
               "--format", "json", "--no-progress")
    assert done.returncode == 0, done.stderr
    return tmp_path / "r.json"


def entries(report: dict, n: int, output: str = "  kept exactly\r\n") -> list[dict]:
    cases = report["plan"]["cases"]
    return [{"case_id": cases[i % len(cases)]["id"], "input_hash": cases[i % len(cases)]["input_hash"],
             "provider": "p", "model": "m", "model_version": str(i), "settings": {}, "output": output,
             "generated_at": "2026-01-01T00:00:00Z"} for i in range(n)]


def test_comparison_imports_are_bounded_and_configurable(small_report, tmp_path):
    report = json.loads(small_report.read_text())
    (tmp_path / "many.json").write_text(json.dumps(entries(report, 101)))
    done = cli(tmp_path, "import", "comparisons", "r.json", "many.json", "--output", "a.json")
    assert done.returncode == 1 and "101 entries, more than the 100 allowed (--max-entries)" in done.stderr
    done = cli(tmp_path, "import", "comparisons", "r.json", "many.json", "--output", "a.json", "--max-entries", "101")
    assert done.returncode == 0, done.stderr
    (tmp_path / "long.json").write_text(json.dumps(entries(report, 1, output="x" * 24_001)))
    done = cli(tmp_path, "import", "comparisons", "r.json", "long.json", "--output", "b.json")
    assert done.returncode == 1 and "entries[0].output" in done.stderr and "24001 characters" in done.stderr
    done = cli(tmp_path, "import", "comparisons", "r.json", "long.json", "--output", "b.json",
               "--max-output-chars", "30000")
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "b.json").read_text() == ""
    imported = json.loads((tmp_path / "a.json").read_text())
    (first,) = [a for a in imported["attempts"] if a["variant"] == "p/m"]
    assert first["output"]["text"] == "  kept exactly\r\n"  # surrounding whitespace and line ends kept
    assert first["output_text_hash"] == sha256_json("  kept exactly\r\n")


def test_both_output_hashes_are_recorded_and_verified(small_report):
    report = json.loads(small_report.read_text())
    a = report["attempts"][0]
    assert a["output_hash"] == sha256_json(a["output"])
    assert a["output_text_hash"] == sha256_json(a["output"]["text"])
    assert report["plan"]["scoreboard_version"]
    assert verify_report(report).ok
    a["output_text_hash"] = sha256_json("something else")
    result = verify_report(report)
    assert [m["path"] for m in result.mismatches] == ["attempts[0].output_text_hash"]
