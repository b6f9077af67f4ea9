"""`scoreboard verify`: a real report verifies; each kind of tampering is detected and named by its path."""

from __future__ import annotations

import copy
import json
import os
import stat
import subprocess
from pathlib import Path

import pytest

from scoreboard.hashing import sha256_json
from scoreboard.record.verification import NOTE
from scoreboard.record.verify import verify_report
from scoreboard.stats.summary import summarize
from scoreboard.suite.suite import fixture_hash
from tests.cli_inprocess import run_cli

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "invoices" / "suite.yaml"


def scoreboard(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return run_cli(args, cwd, dict(os.environ))


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Path:
    """A real report of the offline invoices example (30 cases x 2 variants x 3 runs)."""
    out = tmp_path_factory.mktemp("verify-src")
    done = scoreboard(["run", str(EXAMPLE), "--format", "json", "--output-dir", str(out), "--no-progress"], out)
    assert done.returncode == 0, done.stderr
    (path,) = [p for p in (out / "invoices").glob("*.json")]
    return path


@pytest.fixture
def report(source: Path) -> dict:
    return json.loads(source.read_text(encoding="utf-8"))


def paths(report: dict) -> list[str]:
    result = verify_report(report)
    assert not result.ok
    return [m["path"] for m in result.mismatches]


def resummarize(report: dict) -> dict:
    report["summary"] = summarize(report["plan"], report["attempts"])
    return report


def test_untouched_report_verifies(report):
    result = verify_report(report)
    assert result.ok, result.mismatches[:3]
    assert result.status == "completed" and not result.partial
    assert result.checked["grades"] == 360 and result.checked["attempts"] == 180
    assert result.not_recomputable == []


def test_a_field_outside_the_schema_is_named_by_its_path(report, tmp_path):
    assert verify_report(report).schema_errors == []
    report["attempts"][4]["measurements"]["latency_ms"] = "fast"
    report["summary"]["variants"]["basic"]["pass_rate"] = "high"
    result = verify_report(report)
    assert not result.ok
    bad = {m["path"]: m for m in result.schema_errors}
    assert "attempts[4].measurements.latency_ms" in bad and "summary.variants.basic.pass_rate" in bad
    assert bad["attempts[4].measurements.latency_ms"]["found"] == "fast"
    (tmp_path / "bad.json").write_text(json.dumps(report), encoding="utf-8")
    proc = scoreboard(["verify", str(tmp_path / "bad.json")], tmp_path)
    assert proc.returncode == 1 and "outside the report schema" in proc.stdout
    assert "attempts[4].measurements.latency_ms: does not fit the report schema" in proc.stdout


def test_changed_output_character_is_an_output_hash_mismatch(report):
    a = report["attempts"][4]
    a["output"]["text"] = a["output"]["text"].replace("invoice", "invoicf", 1)
    result = verify_report(report)
    found = {m["path"]: m for m in result.mismatches}
    assert "attempts[4].output_hash" in found
    assert found["attempts[4].output_hash"]["found"] == a["output_hash"]
    assert found["attempts[4].output_hash"]["expected"] == sha256_json(a["output"])
    # The parsed JSON is unchanged, so the grades still match: only the hash catches it.
    assert not any(p.startswith("attempts[4].grades") for p in found)


def test_flipped_grade_is_named(report):
    report["attempts"][0]["grades"][1]["passed"] = False
    found = paths(report)
    assert "attempts[0].grades[1].passed" in found
    assert "attempts[0].status" in found  # passed no longer follows from the grades


def test_changed_summary_figure_is_named(report):
    report["summary"]["variants"]["basic"]["passed"] += 1
    assert paths(report) == ["summary.variants.basic.passed"]


def test_changed_plan_input_hash_is_named(report):
    report["plan"]["cases"][2]["input_hash"] = "0" * 64
    found = paths(report)
    assert "plan.cases[2].input_hash" in found
    # every attempt of that case now disagrees with its plan case too
    assert any(p.endswith(".input_hash") and p.startswith("attempts[") for p in found)


def test_changed_attempt_input_hash_is_named(report):
    report["attempts"][7]["input_hash"] = "f" * 64
    assert paths(report) == ["attempts[7].input_hash"]


def test_changed_fixture_hash_is_named(report):
    report["plan"]["fixture_hash"] = "a" * 64
    result = verify_report(report)
    assert [m["path"] for m in result.mismatches] == ["plan.fixture_hash"]
    assert result.mismatches[0]["expected"] == fixture_hash(report["plan"]["cases"])


def test_reordered_attempts_are_named(report):
    att = report["attempts"]
    att[10], att[11] = att[11], att[10]
    result = verify_report(report)
    assert [m["path"] for m in result.mismatches] == ["attempts[11]"]
    assert result.mismatches[0]["check"] == "lifecycle"


def test_duplicated_attempt_is_named(report):
    report["attempts"].insert(1, copy.deepcopy(report["attempts"][0]))
    result = verify_report(report)
    dup = [m for m in result.mismatches if m["path"] == "attempts[1]"]
    assert dup and "duplicate" in dup[0]["what"]


def test_completed_report_with_not_run_attempt(report):
    a = report["attempts"][20]
    a.update(status="not-run", output=None, output_hash=None, error="not run", grades=[])
    a.pop("output_text_hash")
    resummarize(report)
    result = verify_report(report)
    assert [m["path"] for m in result.mismatches] == ["attempts[20].status"]
    assert "completed report" in result.mismatches[0]["what"]


def test_not_run_attempt_with_output_is_both(report):
    report["run"]["status"] = "stopped"
    report["attempts"][3]["status"] = "not-run"
    resummarize(report)
    result = verify_report(report)
    assert any(m["path"] == "attempts[3].status" and "both" in m["what"] for m in result.mismatches)


def test_stopped_report_with_not_run_attempts_verifies(report):
    report["run"]["status"] = "stopped"
    report["run"]["stop_reason"] = "request budget of 100 used up"
    for a in report["attempts"][-5:]:
        a.update(status="not-run", output=None, output_hash=None, error="request budget of 100 used up",
                 grades=[], measurements={k: None for k in a["measurements"]})
        a.pop("output_text_hash")
    resummarize(report)
    assert verify_report(report).ok


def test_missing_planned_attempt_in_completed_report(report):
    del report["attempts"][-1]
    resummarize(report)
    result = verify_report(report)
    assert [m["path"] for m in result.mismatches] == ["attempts"]
    assert result.mismatches[0]["expected"] == {"case_id": report["plan"]["cases"][-1]["id"],
                                                "variant": "careful", "run": 2}


def test_requests_over_budget(report):
    report["plan"]["budget"] = {"max_requests": 3, "max_cost_usd": None, "max_tokens": None}
    report["requests"] = {"sent": 5, "completed": 5, "failed": 0, "budget": dict(report["plan"]["budget"])}
    result = verify_report(report)
    assert [m["path"] for m in result.mismatches] == ["requests.sent"]
    assert result.mismatches[0]["found"] == 5


def test_spend_is_held_to_the_plans_budget(report):
    """A ledger budget raised to hide an overspend is itself named: plan.budget is what counts."""
    report["plan"]["budget"] = {"max_requests": 3, "max_cost_usd": None, "max_tokens": 100}
    report["requests"] = {"sent": 5, "completed": 5, "failed": 0, "tokens_spent": 150,
                          "budget": {"max_requests": 10, "max_cost_usd": None, "max_tokens": 1000}}
    result = verify_report(report)
    assert [m["path"] for m in result.mismatches] == ["requests.budget.max_requests",
                                                      "requests.budget.max_tokens", "requests.sent",
                                                      "requests.tokens_spent"]
    assert result.mismatches[2]["expected"] == "<= 3"


def test_measured_requests_above_sent(report):
    for a in report["attempts"]:
        a["measurements"]["requests"] = 1
    resummarize(report)
    report["requests"] = {"sent": 100, "budget": {"max_requests": None}}
    assert paths(report) == ["requests.sent"]


def test_unplanned_attempt(report):
    report["attempts"][-1]["run"] = 7
    found = paths(report)
    assert "attempts[179].run" in found


def test_model_graders_are_not_recomputable_not_mismatches(report):
    judge = {"llm-judge": {"rubric": "is it right?"}}
    case = report["plan"]["cases"][0]
    case["graders"].append(judge)
    report["plan"]["fixture_hash"] = fixture_hash(report["plan"]["cases"])
    for a in report["attempts"]:
        if a["case_id"] == case["id"]:
            a["grades"].append({"grader": "llm-judge", "passed": True, "score": 1.0, "reason": "ok", "fields": None})
    resummarize(report)  # a judge in the plan changes what the summary calls unmeasured
    result = verify_report(report)
    assert result.ok, result.mismatches[:3]
    (skipped,) = result.not_recomputable
    assert skipped["grader"] == "llm-judge" and skipped["grades"] == 6
    assert "not recomputable offline" in skipped["why"]


def test_checkpoint_is_partial(report):
    report["run"]["status"] = "running"
    report["run"]["finished_at"] = None
    report["attempts"] = report["attempts"][:50]
    resummarize(report)
    result = verify_report(report)
    assert result.ok and result.partial
    assert result.to_dict()["complete"] is False


def test_malformed_report_does_not_crash(report):
    report["attempts"][0] = {"hello": 1}
    found = paths(report)
    assert found[0] == "attempts[0]"


# ---- conversations

CHATBOT = """
def reply(messages):
    if "explode" in messages[-1]["content"]:
        raise RuntimeError("boom")
    return "reply %d to: %s" % (len(messages), messages[-1]["content"][-20:])
"""


@pytest.fixture(scope="module")
def conversation_report(tmp_path_factory) -> dict:
    """A real report of two conversations (one breaks at its second turn), 2 runs."""
    out = tmp_path_factory.mktemp("verify-chat")
    (out / "chatbot.py").write_text(CHATBOT, encoding="utf-8")
    convs = [{"id": "tea", "conversation": {"topic": "tea", "notes": "Tea is a drink."},
              "turns": [{"id": "t1", "question": "What is tea?", "grader": {"contains": "reply"}},
                        {"id": "t2", "question": "And green tea?", "grader": {"contains": "reply 3"}},
                        {"id": "t3", "question": "Thanks.", "grader": {"contains": "reply"}}]},
             {"id": "boom", "conversation": {"topic": "x"},
              "turns": [{"id": "a", "question": "hello", "grader": {"contains": "reply"}},
                        {"id": "b", "question": "please explode", "grader": {"contains": "reply"}},
                        {"id": "c", "question": "still there?", "grader": {"contains": "reply"}}]}]
    (out / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in convs), encoding="utf-8")
    (out / "suite.yaml").write_text("name: chat\ncases: cases.jsonl\nruns: 2\nsubject: python:chatbot:reply\n",
                                    encoding="utf-8")
    done = scoreboard(["run", "suite.yaml", "--format", "json", "--output-dir", "out", "--no-progress"], out)
    assert done.returncode == 2, done.stderr  # the exploding turn is an execution error
    (path,) = list((out / "out" / "chat").glob("*.json"))
    return json.loads(path.read_text(encoding="utf-8"))


def test_conversation_report_verifies(conversation_report):
    result = verify_report(conversation_report)
    assert result.ok, result.mismatches[:3]
    assert result.checked["conversations"] == 2
    statuses = {(a["case_id"], a["run"]): a["status"] for a in conversation_report["attempts"]}
    assert statuses[("boom/b", 0)] == "error" and statuses[("boom/c", 0)] == "not-run"


def test_edited_earlier_reply_breaks_the_chain(conversation_report):
    report = copy.deepcopy(conversation_report)
    index = next(i for i, a in enumerate(report["attempts"]) if (a["case_id"], a["run"]) == ("tea/t1", 1))
    a = report["attempts"][index]
    a["output"]["text"] += "!"  # an edited reply, with its hash recomputed to hide the edit
    a["output_hash"] = sha256_json(a["output"])
    a["output_text_hash"] = sha256_json(a["output"]["text"])
    later = [i for i, b in enumerate(report["attempts"]) if b["case_id"] in ("tea/t2", "tea/t3") and b["run"] == 1]
    result = verify_report(report)
    # every later turn of that run carried the original reply in its input
    assert [m["path"] for m in result.mismatches] == [f"attempts[{i}].chain_input_hash" for i in later]
    assert result.mismatches[0]["check"] == "conversation"


def test_turn_after_a_failed_turn_must_not_run(conversation_report):
    report = copy.deepcopy(conversation_report)
    index = next(i for i, a in enumerate(report["attempts"]) if (a["case_id"], a["run"]) == ("boom/c", 0))
    ok = next(a for a in report["attempts"] if a["case_id"] == "boom/a")
    report["attempts"][index] = {**copy.deepcopy(ok), "case_id": "boom/c", "run": 0,
                                 "input_hash": report["attempts"][index]["input_hash"]}
    report["summary"] = summarize(report["plan"], report["attempts"])
    found = [m["path"] for m in verify_report(report).mismatches]
    assert f"attempts[{index}].status" in found


# ---- CLI


def test_cli_untouched_exits_0_and_says_what_hashes_prove(source, tmp_path):
    done = scoreboard(["verify", str(source)], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "verified, no mismatch" in done.stdout
    assert NOTE in done.stdout


def test_cli_tampered_exits_1_naming_the_path_and_writes_nothing(report, tmp_path):
    report["attempts"][5]["grades"][0]["passed"] = not report["attempts"][5]["grades"][0]["passed"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(report), encoding="utf-8")
    done = scoreboard(["verify", str(bad), "--output", "new.json"], tmp_path)
    assert done.returncode == 1
    assert "attempts[5].grades[0].passed" in done.stdout
    assert not (tmp_path / "new.json").exists()
    done = scoreboard(["verify", str(bad), "--json"], tmp_path)
    assert done.returncode == 1
    data = json.loads(done.stdout)
    assert data["ok"] is False and data["note"] == NOTE
    assert {"path", "expected", "found", "what"} <= set(data["mismatches"][0])


def test_cli_output_saves_revalidated_report_once(source, tmp_path):
    done = scoreboard(["verify", str(source), "--output", "new.json"], tmp_path)
    assert done.returncode == 0, done.stderr
    saved = tmp_path / "new.json"
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600
    data = json.loads(saved.read_text(encoding="utf-8"))
    assert data["verification"]["ok"] is True and data["verification"]["mismatches"] == []
    assert {"verified_at", "not_recomputable"} <= set(data["verification"])
    assert data["attempts"] == json.loads(source.read_text(encoding="utf-8"))["attempts"]
    again = scoreboard(["verify", "new.json"], tmp_path)  # the saved report verifies too
    assert again.returncode == 0, again.stdout
    clash = scoreboard(["verify", str(source), "--output", "new.json"], tmp_path)
    assert clash.returncode == 1 and "overwrite" in clash.stderr


def test_cli_checkpoint_says_partial(report, tmp_path):
    report["run"]["status"] = "running"
    report["attempts"] = report["attempts"][:40]
    resummarize(report)
    path = tmp_path / "checkpoint.json"
    path.write_text(json.dumps(report), encoding="utf-8")
    done = scoreboard(["verify", str(path)], tmp_path)
    assert done.returncode == 0, done.stdout
    assert "partial, not complete" in done.stdout


def test_cli_not_a_report_exits_1(tmp_path):
    (tmp_path / "x.json").write_text("{}", encoding="utf-8")
    done = scoreboard(["verify", "x.json"], tmp_path)
    assert done.returncode == 1 and "not a scoreboard report" in done.stderr
