"""`scoreboard export turns`: a conversation report's turns become independent cases whose
inputs are the exact messages each turn was sent, so outputs made elsewhere can be imported for
them (`import comparisons`) and reviewed (`import reviews`); all offline, all verifiable."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from scoreboard.cases.conversation import turn_messages
from scoreboard.hashing import sha256_json
from scoreboard.record.chains import conversation_of
from scoreboard.record.verify import verify_report
from tests.cli_inprocess import run_cli

NOTES = "The survey counted 47 birds.\n\nIt rained on Tuesday."
CHAT = '''
def reply(messages, seed=None):
    asked = messages[-1]["content"]
    return f"[seed {seed}] " + ("47 birds" if "birds" in asked else "it rained" if "Tuesday" in asked else "fine")
'''


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return run_cli(args, cwd, dict(os.environ))


def load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def conv_report(tmp_path_factory) -> Path:
    """Two conversations x two variants x two runs, answered by a python chat function."""
    folder = tmp_path_factory.mktemp("turns")
    (folder / "chat.py").write_text(CHAT)
    convs = [{"id": "birds", "conversation": {"topic": "survey", "notes": NOTES, "seed": 3},
              "turns": [{"id": "t1", "question": "How many birds?", "graders": [{"contains": "47"}]},
                        {"id": "t2", "question": "What happened on Tuesday?", "graders": [{"contains": "rain"}]},
                        {"id": "t3", "question": "Anything else?", "graders": [{"contains": "nothing"}]}]},
             {"id": "other", "conversation": {"notes": "Blue door."},
              "turns": [{"id": "a", "question": "Colour?", "graders": [{"contains": "blue"}]}]}]
    (folder / "conv.jsonl").write_text("".join(json.dumps(c) + "\n" for c in convs))
    (folder / "suite.json").write_text(json.dumps({
        "name": "chat", "cases": "conv.jsonl", "runs": 2, "formats": ["json"],
        "variants": {"one": {"subject": "python:chat:reply"}, "two": {"subject": "python:chat:reply"}}}))
    done = cli(folder, "run", "suite.json", "--output", "report.json", "--no-progress")
    assert done.returncode == 0, done.stderr
    return folder / "report.json"


def test_turns_export_as_cases_whose_inputs_are_the_messages_sent(conv_report, tmp_path):
    source = load(conv_report)
    done = cli(tmp_path, "export", "turns", str(conv_report), "--variant", "two", "--run", "1",
               "--conversation", "birds", "--output", "turns.json")
    assert done.returncode == 0, done.stderr
    assert "exported 3 turns of variant two (run 1)" in done.stdout
    turns = load(tmp_path / "turns.json")
    assert verify_report(turns).ok
    assert [c["id"] for c in turns["plan"]["cases"]] == ["birds/t1", "birds/t2", "birds/t3"]
    # each is a case of its own (no turn_index: never run as a turn), its conversation still its unit
    assert all(c["conversation"] == "birds" and "turn_index" not in c for c in turns["plan"]["cases"])
    sent = {a["case_id"]: a for a in source["attempts"] if a["variant"] == "two" and a["run"] == 1}
    plan_turns = sorted((c for c in source["plan"]["cases"] if c.get("conversation") == "birds"),
                        key=lambda c: c["turn_index"])
    conv = conversation_of(plan_turns)
    for k, (case, attempt) in enumerate(zip(turns["plan"]["cases"], turns["attempts"])):
        original = sent[case["id"]]
        # The input is what the turn was sent (its earlier replies included) and binds by the chain hash.
        replies = [sent[c["id"]]["output"]["text"] for c in plan_turns[:k]]
        assert case["input"] == turn_messages(conv, k, replies)
        assert case["input_hash"] == sha256_json(case["input"]) == original["chain_input_hash"]
        assert attempt["output"] == original["output"] and attempt["grades"] == original["grades"]
        assert attempt["status"] == original["status"] and attempt["run"] == 0
        assert "turn" not in attempt and "chain_input_hash" not in attempt
    info = turns["run"]["exported"]
    assert (info["variant"], info["run"], info["subject_requests"]) == ("two", 1, 0)
    assert [t["turn"] for t in info["turns"]] == ["t1", "t2", "t3"]
    assert turns["attempts"][2]["status"] == "failed"  # a failed expectation stays visible


def test_comparisons_and_reviews_import_for_exported_turns(conv_report, tmp_path):
    done = cli(tmp_path, "export", "turns", str(conv_report), "--variant", "one", "--output", "turns.json")
    assert done.returncode == 0, done.stderr
    turns = load(tmp_path / "turns.json")
    entries = [{"case_id": c["id"], "input_hash": c["input_hash"], "provider": "acme", "model": "m1",
                "model_version": "2026-01", "settings": {"temperature": 0}, "output": "47 birds; it rained; nothing; blue",
                "generated_at": "2026-01-02T03:04:05Z"} for c in turns["plan"]["cases"]]
    (tmp_path / "comparisons.json").write_text(json.dumps({"entries": entries}))
    done = cli(tmp_path, "import", "comparisons", "turns.json", "comparisons.json", "--output", "compared.json")
    assert done.returncode == 0, done.stderr
    compared = load(tmp_path / "compared.json")
    assert verify_report(compared).ok
    rates = {name: v["pass_rate"] for name, v in compared["summary"]["variants"].items()}
    assert rates["acme/m1"] == 1.0 and rates["one"] == 0.5
    # The imported output can be reviewed by its text hash (SHA-256 of the canonical JSON of the text).
    imported = [a for a in compared["attempts"] if a["variant"] == "acme/m1"][0]
    assert imported["output_text_hash"] == sha256_json("47 birds; it rained; nothing; blue")
    review = {"case_id": imported["case_id"], "input_hash": imported["input_hash"],
              "output_hash": imported["output_text_hash"], "reviewer_id": "ana", "reviewer_kind": "human",
              "rubric_version": "v1", "ratings": {"correctness": 5, "creativity": None}, "notes": "right"}
    (tmp_path / "reviews.json").write_text(json.dumps([review]))
    done = cli(tmp_path, "import", "reviews", "compared.json", "reviews.json", "--output", "reviewed.json")
    assert done.returncode == 0, done.stderr
    reviewed = load(tmp_path / "reviewed.json")
    assert reviewed["reviews"]["human"][0]["output_hash"] == imported["output_hash"]
    assert verify_report(reviewed).ok


def test_a_conversation_report_takes_comparisons_only_through_export(conv_report, tmp_path):
    source = load(conv_report)
    case = source["plan"]["cases"][0]
    (tmp_path / "c.json").write_text(json.dumps([{
        "case_id": case["id"], "input_hash": case["input_hash"], "provider": "p", "model": "m",
        "model_version": "1", "settings": {}, "output": "x", "generated_at": "2026-01-01T00:00:00Z"}]))
    done = cli(tmp_path, "import", "comparisons", str(conv_report), "c.json", "--output", "new.json")
    assert done.returncode == 1 and "export turns" in done.stderr and not (tmp_path / "new.json").exists()


@pytest.mark.parametrize("args, words", [
    ([], "name the one whose turns to export with --variant (one, two)"),
    (["--variant", "three"], "no variant 'three'"),
    (["--variant", "one", "--run", "2"], "--run takes 0 to 1"),
    (["--variant", "one", "--conversation", "nope"], "no conversation 'nope'"),
], ids=["which-variant", "unknown-variant", "run", "conversation"])
def test_export_errors_are_one_line_and_write_nothing(conv_report, tmp_path, args, words):
    done = cli(tmp_path, "export", "turns", str(conv_report), *args, "--output", "t.json")
    assert done.returncode == 1, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert words in line, line
    assert not (tmp_path / "t.json").exists()


def test_a_report_without_conversations_has_no_turns(tmp_path):
    (tmp_path / "c.jsonl").write_text(json.dumps({"id": "a", "input": "x", "expected": "x"}) + "\n")
    done = cli(tmp_path, "run", "--cases", "c.jsonl", "--subject", "mock", "--output", "r.json", "--format", "json",
               "--no-progress")
    assert done.returncode == 0, done.stderr
    done = cli(tmp_path, "export", "turns", "r.json", "--output", "t.json")
    assert done.returncode == 1 and "no conversation turns" in done.stderr
