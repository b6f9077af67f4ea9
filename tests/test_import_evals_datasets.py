"""`scoreboard import openai-evals` (registry entries run against a loopback server, with the
verdicts OpenAI Evals' classes give) and the dataset readers (Inspect records, a Parquet file)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from scoreboard.cases.datasets import record_to_case
from tests.servers.fake_provider import FakeProvider

FIXTURES = Path(__file__).parent / "fixtures" / "openai_evals"
REPLIES = {"capital of France": "Paris is the capital.", "capital of Italy": "It is Rome", "json": '{"a": 1.0}'}


def reply(req):
    return REPLIES[req["messages"][-1]["content"]]


def scoreboard(args, cwd):
    return subprocess.run([sys.executable, "-m", "scoreboard", *args], cwd=cwd, env=dict(os.environ),
                          capture_output=True, text=True, timeout=300, check=False)


def test_openai_evals_entries_run_with_their_semantics(tmp_path):
    shutil.copytree(FIXTURES, tmp_path / "src")
    done = scoreboard(["import", "openai-evals", "src/registry.yaml", "--output", "out"], tmp_path)
    assert done.returncode == 3, done.stderr  # the Translate entry is not converted
    assert "other: class 'evals.elsuite.translate:Translate' is not converted" in done.stdout
    cases = {json.loads(line)["id"]: json.loads(line) for line in (tmp_path / "out/cases.jsonl").read_text().splitlines()}
    facts = cases["facts-1"]["graders"][0]["classify"]
    assert facts["choices"] == ["A", "B", "C", "D", "E"] and facts["choice_scores"]["D"] == 0
    assert "{{ expected }}" in facts["prompt"] and "{{ output }}" in facts["prompt"]
    suite = yaml.safe_load((tmp_path / "out/suite.yaml").read_text())
    with FakeProvider() as srv:
        srv.set_default("chat", {"reply": reply})
        suite["subject"] = {"type": "openai", "base_url": srv.base_url + "/v1", "model": "m"}
        suite.pop("judge")
        (tmp_path / "out/suite.yaml").write_text(yaml.safe_dump(suite))
        kept = [c for cid, c in cases.items() if not cid.startswith("facts")]
        (tmp_path / "out/cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in kept))
        run = scoreboard(["run", "out/suite.yaml", "--output", "r.json"], tmp_path)
    assert run.returncode == 0, run.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    status = {a["case_id"]: a["status"] for a in report["attempts"]}
    assert status == {
        # Match is a prefix match (evals/elsuite/basic/match.py: sampled.startswith(ideal))
        "capitals.dev.v0-1": "passed", "capitals.dev.v0-2": "failed",
        # Includes: an ideal anywhere in the sampled text
        "mentions-1": "passed", "mentions-2": "passed",
        # FuzzyMatch: normalised containment either way
        "fuzzy-1": "passed", "fuzzy-2": "passed",
        # JsonMatch: json.loads equality, 1.0 == 1 in Python
        "json-1": "passed",
    }


def test_inspect_multiple_choice_rendering():
    case = record_to_case({"input": "2+2?", "choices": ["3", "4"], "target": "B", "id": "q1"}, 1, "d.jsonl", "exact")
    # inspect_ai/solver/_multiple_choice.py SINGLE_ANSWER_TEMPLATE, options "A) ..."
    assert case["input"] == ("Answer the following multiple choice question. The entire content of your response "
                             "should be of the following format: 'ANSWER: $LETTER' (without quotes) where LETTER is "
                             "one of A,B.\n\n2+2?\n\nA) 3\nB) 4")
    assert case["expected"] == "B"
    assert case["graders"][0]["transform"] == {"choice": {"choices": 2, "multiple": False}}
    many = record_to_case({"input": "q", "choices": ["a", "b", "c"], "target": ["C", "A"]}, 2, "d.jsonl", "exact")
    assert many["expected"] == "AC" and "LETTERS is one or more of A,B,C" in many["input"]
    assert many["id"] == "sample-2"


def test_dataset_readers_in_a_suite(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"question": ["2+2?", "3+3?"], "options": [["3", "4"], ["6", "7"]], "answer": [1, 0],
                             "qid": ["a", "b"]}), tmp_path / "train.parquet")
    (tmp_path / "inspect.jsonl").write_text(json.dumps({"id": "free", "input": "Say hi", "target": "hi"}) + "\n")
    (tmp_path / "outputs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in [
        {"case_id": "a", "output": "ANSWER: B"}, {"case_id": "b", "output": "I think\nANSWER: B"},
        {"case_id": "free", "output": "hi"}]))
    suite = {"name": "ds", "subject": "recorded:outputs.jsonl", "cases": [
        {"format": "hf", "path": "train.parquet",
         "columns": {"input": "question", "choices": "options", "target": "answer", "id": "qid"}},
        {"format": "inspect", "path": "inspect.jsonl"}]}
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump(suite))
    run = scoreboard(["run", "suite.yaml", "--output", "r.json"], tmp_path)
    assert run.returncode == 0 or run.returncode == 3, run.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert {a["case_id"]: a["status"] for a in report["attempts"]} == {"a": "passed", "b": "failed", "free": "passed"}
    # a bad column map: one line naming the suite and the field
    suite["cases"][0]["columns"]["input"] = "nope"
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump(suite))
    bad = scoreboard(["run", "suite.yaml", "--output", "r2.json"], tmp_path)
    assert bad.returncode == 1 and "train.parquet:1" in bad.stderr and "columns.nope" in bad.stderr
    suite["cases"][0] = {"format": "hf", "path": "../x.parquet"}
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump(suite))
    bad = scoreboard(["run", "suite.yaml", "--output", "r3.json"], tmp_path)
    assert bad.returncode == 1 and "climbs out of" in bad.stderr and "cases.0.path" in bad.stderr
