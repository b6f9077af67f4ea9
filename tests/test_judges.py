"""Model-graded evaluation end to end: a FakeProvider scripted as the judge, over real HTTP,
through the public pipeline (load_suite + evaluate.run) and the CLI (subprocess)."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from scoreboard.engine.pipeline import RunOptions, run
from scoreboard.suite.load import load_suite
from tests.servers.fake_provider import FakeProvider

MARKER = "REF-MARKER-7f3c91"


# ---------------------------------------------------------------------------------- helpers


def scoreboard(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "scoreboard", *args], cwd=cwd, env=dict(os.environ),
                          capture_output=True, text=True, timeout=120)


@pytest.fixture
def judge_srv():
    """A second FakeProvider that plays the judge (the subject talks to `fake_provider`)."""
    with FakeProvider() as srv:
        yield srv


def openai(srv: FakeProvider, model: str) -> dict:
    return {"type": "openai", "base_url": srv.base_url + "/v1", "model": model}


def judge_reply(fn):
    """A FakeProvider reply callable: fn(prompt, schema_name) -> an answer (dict -> its JSON)."""

    def reply(req):
        prompt = req["messages"][-1]["content"]
        name = ((req.get("response_format") or {}).get("json_schema") or {}).get("name")
        out = fn(prompt, name)
        return out if isinstance(out, str) else json.dumps(out)

    return reply


def verdict(value: bool, why: str = "because") -> str:
    return json.dumps({"verdict": value, "explanation": why})


def write_suite(tmp_path: Path, cases: list[dict], **settings) -> Path:
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    suite = {"name": "judged", "cases": "cases.jsonl", "output_dir": str(tmp_path / "out"),
             "formats": ["json"], "concurrency": 1, "timeout_ms": 10_000, **settings}
    path = tmp_path / "suite.json"
    path.write_text(json.dumps(suite), encoding="utf-8")
    return path


def run_suite(path: Path, **flags):
    return run(load_suite(path, flags), RunOptions(progress=False))


def prompts(srv: FakeProvider) -> list[str]:
    return [r["json"]["messages"][-1]["content"] for r in srv.requests]


LLM_JUDGE = [{"llm-judge": {"rubric": "Is the answer right?"}}]
CASES = [{"id": "q1", "input": "What is 2+2?", "expected": f"4 {MARKER}"},
         {"id": "q2", "input": "What is 3+3?", "expected": f"6 {MARKER}"}]


def single(report: dict, case_id: str) -> dict:
    (attempt,) = [a for a in report["attempts"] if a["case_id"] == case_id]
    return attempt


# ---------------------------------------------------------------------------------- verdicts


def test_valid_verdicts_pass_and_fail(fake_provider, judge_srv, tmp_path):
    judge_srv.set_default("chat", {"reply": judge_reply(
        lambda prompt, name: {"verdict": "2+2" in prompt, "explanation": "checked"})})
    path = write_suite(tmp_path, CASES, subject=openai(fake_provider, "subj"), judge=openai(judge_srv, "judge"),
                       graders=LLM_JUDGE)
    outcome = run_suite(path)
    report = outcome.report
    q1, q2 = single(report, "q1"), single(report, "q2")
    assert (q1["status"], q1["grades"][0]["passed"]) == ("passed", True)
    assert (q2["status"], q2["grades"][0]["passed"]) == ("failed", False)
    assert q1["grades"][0]["reason"] == "judge: checked"
    assert outcome.exit_code == 0
    block = report["summary"]["judges"]["variants"]["subj"]
    assert block["judged"] == 2 and block["judge_failures"] == 0
    # The judge asked natively for the schema (OpenAI structured output).
    fmt = judge_srv.requests[0]["json"]["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
    assert fmt["json_schema"]["schema"]["required"] == ["verdict", "explanation"]
    # Semantic quality counts as measured once a judge ran.
    assert not [n for n in report["summary"]["not_measured"] if n["what"] == "semantic quality"]


def test_malformed_verdict_then_valid_one_on_retry(fake_provider, judge_srv, tmp_path):
    judge_srv.push("chat", {"reply": "{verdict: yes"}, {"reply": verdict(True)})
    path = write_suite(tmp_path, CASES[:1], subject=openai(fake_provider, "subj"),
                       judge=openai(judge_srv, "judge"), graders=LLM_JUDGE)
    report = run_suite(path).report
    grade = single(report, "q1")["grades"][0]
    assert grade["passed"] is True and not grade.get("judge_failure")
    first, second = prompts(judge_srv)
    assert "could not be used" not in first
    # The retry shows the parse error and asks again.
    assert "could not be used" in second and second.startswith(first)
    assert grade["judge"]["usage"]["requests"] == 2


@pytest.mark.parametrize("answer", ["{not json at all", "I'm sorry, but I can't help with grading this answer."],
                         ids=["malformed-twice", "refusal"])
def test_unusable_verdict_is_not_assessed(fake_provider, judge_srv, tmp_path, answer):
    judge_srv.set_default("chat", {"reply": answer})
    path = write_suite(tmp_path, CASES[:1], subject=openai(fake_provider, "subj"),
                       judge=openai(judge_srv, "judge"), graders=LLM_JUDGE)
    outcome = run_suite(path)
    report = outcome.report
    attempt = single(report, "q1")
    grade = attempt["grades"][0]
    assert grade["passed"] is None and grade["score"] is None  # never a pass or a fail
    assert grade["judge_failure"] is True and "judge failure" in grade["reason"]
    assert attempt["status"] == "unassessed" and attempt["error"] is None
    assert len(judge_srv.requests) == 2  # one ask, one retry: no more
    summary = report["summary"]
    block = summary["variants"]["subj"]
    assert (block["passed"], block["failed"], block["unassessed"], block["pass_rate"]) == (0, 0, 1, None)
    assert summary["judges"]["variants"]["subj"]["judge_failures"] == 1
    assert summary["judges"]["variants"]["subj"]["judged"] == 0


def test_judge_timeout_is_a_judge_failure_with_unknown_usage(fake_provider, judge_srv, tmp_path):
    judge_srv.set_default("chat", {"hang": True})
    path = write_suite(tmp_path, CASES[:1], subject=openai(fake_provider, "subj"),
                       judge=openai(judge_srv, "judge"), graders=LLM_JUDGE)
    done = scoreboard(["run", str(path), "--timeout", "400", "--no-progress", "--json"], tmp_path)
    assert done.returncode == 0, done.stderr  # not assessed is not an execution error
    report = json.loads(done.stdout)
    attempt = single(report, "q1")
    grade = attempt["grades"][0]
    assert attempt["status"] == "unassessed" and attempt["output"]["text"]
    assert grade["passed"] is None and grade["judge_failure"] is True
    assert "timed out" in grade["reason"]
    usage = grade["judge"]["usage"]
    assert usage["requests"] == 1
    assert usage["input_tokens"] is None and usage["output_tokens"] is None and usage["cost_usd"] is None
    block = report["summary"]["judges"]["variants"]["subj"]
    assert block["judge_failures"] == 1
    tokens = block["usage"]["input_tokens"]
    assert tokens["unknown_count"] == 1 and tokens["total"] is None  # unknown, never 0
    # The subject's own measurements stayed known.
    assert attempt["measurements"]["input_tokens"] is not None


# ---------------------------------------------------------------------------------- repeats, pairs


def test_judge_that_flips_between_runs_has_self_agreement_below_one(fake_provider, judge_srv, tmp_path):
    flips = itertools.cycle([True, False])
    judge_srv.set_default("chat", {"reply": judge_reply(lambda p, n: {"verdict": next(flips), "explanation": "?"})})
    path = write_suite(tmp_path, CASES[:1], subject=openai(fake_provider, "subj"),
                       judge=openai(judge_srv, "judge"), graders=LLM_JUDGE, judge_runs=3)
    report = run_suite(path).report
    grade = single(report, "q1")["grades"][0]
    assert grade["judge"]["answers"] == [True, False, True]
    assert grade["passed"] is True  # the majority of 3
    assert grade["judge"]["self_agreement"] == pytest.approx(2 / 3)
    assert len(judge_srv.requests) == 3
    assert report["plan"]["judge_runs"] == 3
    agreement = report["summary"]["judges"]["variants"]["subj"]["self_agreement"]
    assert agreement == pytest.approx(2 / 3) and agreement < 1


def test_pointwise_self_agreement_is_per_dimension_not_whole_vectors(fake_provider, judge_srv, tmp_path):
    # Three runs over four dimensions; the second is off by one on "clarity" alone. The whole
    # vectors agree 2 of 3 times; per dimension the runs agree 3/3, 3/3, 2/3, 3/3 (mean 11/12).
    dims = ["correctness", "completeness", "clarity", "usefulness"]
    runs = itertools.cycle([{"correctness": 3, "completeness": 2, "clarity": 2, "usefulness": 3},
                            {"correctness": 3, "completeness": 2, "clarity": 1, "usefulness": 3},
                            {"correctness": 3, "completeness": 2, "clarity": 2, "usefulness": 3}])
    judge_srv.set_default("chat", {"reply": judge_reply(lambda p, n: {"scores": next(runs), "explanation": "?"})})
    path = write_suite(tmp_path, CASES[:1], subject=openai(fake_provider, "subj"),
                       judge=openai(judge_srv, "judge"), graders=[{"pointwise": {"dimensions": dims}}],
                       judge_runs=3)
    report = run_suite(path).report
    grade = single(report, "q1")["grades"][0]
    assert grade["scores"] == {"correctness": 3, "completeness": 2, "clarity": 2, "usefulness": 3}
    assert grade["judge"]["self_agreement_by_dimension"] == pytest.approx(
        {"correctness": 1.0, "completeness": 1.0, "clarity": 2 / 3, "usefulness": 1.0})
    assert grade["judge"]["self_agreement"] == pytest.approx(11 / 12)
    agreement = report["summary"]["judges"]["variants"]["subj"]["self_agreement"]
    assert agreement == pytest.approx(11 / 12)


def test_judge_preferring_the_first_answer_is_position_inconsistent(fake_provider, judge_srv, tmp_path):
    judge_srv.set_default("chat", {"reply": judge_reply(lambda p, n: {"winner": "A", "explanation": "first"})})
    path = write_suite(tmp_path, CASES, variants={"oak": {"subject": openai(fake_provider, "m1")},
                                                  "elm": {"subject": openai(fake_provider, "m2")}},
                       judge=openai(judge_srv, "judge"), graders=[{"contains": "ANSWER"}], pairwise=True)
    report = run_suite(path).report
    # Two cases x one pair x both orders.
    assert len(judge_srv.requests) == 4
    for r in judge_srv.requests:  # variant names never reach the judge
        assert "oak" not in r["body"] and "elm" not in r["body"]
    (pair,) = report["summary"]["judges"]["pairwise"]
    assert pair["position_consistency"] == 0.0
    assert (pair["a_wins"], pair["b_wins"], pair["ties"], pair["cases"]) == (0, 0, 2, 2)
    assert all(j["verdict"] == "tie" and j["consistent"] is False for j in report["pairwise"]["judgments"])
    assert report["requests"]["by_role"]["judge"] == 4
    assert pair["usage"]["requests"]["total"] == 4


def test_judge_provider_error_counts_every_request_it_sent(fake_provider, judge_srv, tmp_path):
    judge_srv.set_default("chat", {"status": 500})
    judge = {**openai(judge_srv, "judge"), "retries": {"attempts": 2, "base_delay_s": 0}}
    path = write_suite(tmp_path, CASES[:1], subject=openai(fake_provider, "subj"), judge=judge, graders=LLM_JUDGE)
    report = run_suite(path).report
    grade = single(report, "q1")["grades"][0]
    assert grade["passed"] is None and "judge request failed" in grade["reason"]
    assert grade["judge"]["usage"]["requests"] == 2 == len(judge_srv.requests)
    assert grade["judge"]["usage"]["input_tokens"] is None
    assert report["requests"]["by_role"] == {"judge": 2, "subject": 1}


# ---------------------------------------------------------------------------------- budget, usage


def test_judge_requests_count_against_the_request_budget(fake_provider, judge_srv, tmp_path):
    judge_srv.set_default("chat", {"reply": verdict(True)})
    path = write_suite(tmp_path, CASES, subject=openai(fake_provider, "subj"),
                       judge=openai(judge_srv, "judge"), graders=LLM_JUDGE)
    done = scoreboard(["run", str(path), "--max-requests", "2", "--no-progress", "--json"], tmp_path)
    assert done.returncode == 2, done.stderr  # a budget stop is an execution error
    report = json.loads(done.stdout)
    assert report["requests"]["by_role"] == {"judge": 1, "subject": 1}
    assert report["requests"]["sent"] == 2 and report["requests"]["exhausted"]
    assert report["run"]["status"] == "stopped"
    assert single(report, "q1")["status"] == "passed"
    assert single(report, "q2")["status"] == "not-run"
    assert len(fake_provider.requests) == 1 and len(judge_srv.requests) == 1


def test_budget_running_out_on_the_last_judge_call_stops_the_run(fake_provider, judge_srv, tmp_path):
    judge_srv.set_default("chat", {"reply": verdict(True)})
    path = write_suite(tmp_path, CASES, subject=openai(fake_provider, "subj"),
                       judge=openai(judge_srv, "judge"), graders=LLM_JUDGE)
    outcome = run_suite(path, max_requests=3)  # q1, its judge, q2: q2's judge call is refused
    q2 = single(outcome.report, "q2")
    assert q2["grades"][0]["passed"] is None and "not judged" in q2["grades"][0]["reason"]
    assert outcome.report["run"]["status"] == "stopped" and outcome.exit_code == 2


def test_judge_usage_is_kept_apart_from_the_subjects(fake_provider, judge_srv, tmp_path):
    judge_srv.set_default("chat", {"reply": verdict(True), "usage": {"prompt_tokens": 1000, "completion_tokens": 7}})
    fake_provider.set_default("chat", {"reply": "ANSWER", "usage": {"prompt_tokens": 5, "completion_tokens": 1}})
    path = write_suite(tmp_path, CASES, subject=openai(fake_provider, "subj"),
                       judge=openai(judge_srv, "judge"), graders=LLM_JUDGE)
    report = run_suite(path).report
    assert report["requests"]["by_role"] == {"judge": 2, "subject": 2}
    for attempt in report["attempts"]:
        assert attempt["measurements"]["input_tokens"] == 5 and attempt["measurements"]["requests"] == 1
        assert attempt["grades"][0]["judge"]["usage"] == {"requests": 1, "input_tokens": 1000,
                                                          "output_tokens": 7, "cost_usd": None}
    subject_m = report["summary"]["variants"]["subj"]["measurements"]
    assert subject_m["input_tokens"]["total"] == 10 and subject_m["requests"]["total"] == 2
    judge_u = report["summary"]["judges"]["variants"]["subj"]["usage"]
    assert judge_u["input_tokens"]["total"] == 2000 and judge_u["output_tokens"]["total"] == 14
    assert judge_u["requests"]["total"] == 2


def test_reference_reaches_the_judge_but_never_the_subject(fake_provider, judge_srv, tmp_path):
    judge_srv.set_default("chat", {"reply": verdict(True)})
    graders = [{"llm-judge": {}}, {"rubric-score": {}}, {"pointwise": {"dimensions": ["accuracy"]}}]
    judge_srv.set_default("chat", {"reply": judge_reply(lambda p, n: {
        "verdict": {"verdict": True, "explanation": "ok"},
        "score": {"score": 5, "explanation": "ok"},
        "scores": {"scores": {"accuracy": 3}, "explanation": "ok"}}[n])})
    path = write_suite(tmp_path, CASES, subject=openai(fake_provider, "subj"),
                       judge=openai(judge_srv, "judge"), graders=graders, runs=2)
    outcome = run_suite(path)
    assert outcome.exit_code == 0
    assert len(fake_provider.requests) == 4 and len(judge_srv.requests) == 12
    for r in fake_provider.requests:
        assert MARKER not in r["body"]
    for r in judge_srv.requests:
        assert MARKER in r["body"]
    assert all(a["status"] == "passed" for a in outcome.report["attempts"])


def test_model_grader_without_a_judge_is_a_one_line_error(tmp_path):
    path = write_suite(tmp_path, CASES, subject={"type": "mock"}, graders=LLM_JUDGE)
    done = scoreboard(["run", str(path), "--no-progress"], tmp_path)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "needs a judge" in lines[0] and "judge" in lines[0]
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "out").exists()


# ---------------------------------------------------------------------------------- pointwise


def test_pointwise_is_blind_and_summarised_per_dimension_with_dq(judge_srv, tmp_path):
    cases = [{"id": f"c{i}", "input": f"Write note {i}.", "expected": f"note {i} {MARKER}"} for i in range(4)]
    good = {"type": "mock", "default": "A GOOD careful answer."}
    bad = {"type": "mock", "default": "A BAD hasty answer."}

    def score(prompt, name):
        assert name == "scores"
        level = 3 if "GOOD" in prompt else 1
        return {"scores": {"accuracy": level, "style": level - 1}, "explanation": "rated"}

    judge_srv.set_default("chat", {"reply": judge_reply(score)})
    path = write_suite(tmp_path, cases, variants={"zebra-variant": {"subject": good},
                                                  "yak-variant": {"subject": bad}},
                       judge=openai(judge_srv, "judge"),
                       graders=[{"pointwise": {"dimensions": ["accuracy", "style"], "threshold": 1.5}}])
    report = run_suite(path).report
    assert len(judge_srv.requests) == 8
    for r in judge_srv.requests:
        for name in ("zebra", "yak", "variant"):
            assert name not in r["body"]
    judges = report["summary"]["judges"]
    zebra, yak = judges["variants"]["zebra-variant"], judges["variants"]["yak-variant"]
    assert zebra["pointwise"] == {"accuracy": 3.0, "style": 2.0}
    assert yak["pointwise"] == {"accuracy": 1.0, "style": 0.0}
    ci = zebra["pointwise_ci"]["accuracy"]
    # Four cases that all scored 3 do not make the mean certain: never a zero-width interval.
    assert ci["high"] == 3.0 and ci["low"] < 3.0 and ci["level"] == 0.95 and ci["unit"] == "case"
    assert ci["method"] == "student-t" and ci["adjusted"] is True
    (dq,) = judges["dq"]
    assert (dq["a"], dq["b"], dq["cases"]) == ("zebra-variant", "yak-variant", 4)
    assert dq["dq"] == pytest.approx(2.0)  # (3+2)/2 - (1+0)/2
    assert dq["ci"]["low"] < 2.0 < dq["ci"]["high"] and dq["ci"]["high"] - dq["ci"]["low"] > 0.5
    assert dq["ci"]["method"] == "student-t" and dq["small_sample"] is True
    assert "small sample: fewer than 30 cases" in dq["flags"]
    statuses = {a["variant"]: a["status"] for a in report["attempts"]}
    assert statuses == {"zebra-variant": "passed", "yak-variant": "failed"}


# ---------------------------------------------------------------------------------- split


SPLIT_CASES = [{"id": "dev1", "input": "a", "expected": "a"},
               {"id": "dev2", "input": "b", "expected": "b"},
               {"id": "held1", "input": "c", "expected": "c", "split": "heldout"}]


@pytest.mark.parametrize("split, ids", [(None, ["dev1", "dev2"]), ("heldout", ["held1"]),
                                        ("all", ["dev1", "dev2", "held1"])])
def test_split_selects_heldout_cases_only_when_asked(tmp_path, split, ids):
    path = write_suite(tmp_path, SPLIT_CASES, subject={"type": "mock"})
    outcome = run_suite(path, split=split)
    plan = outcome.report["plan"]
    assert [c["id"] for c in plan["cases"]] == ids
    assert sorted({a["case_id"] for a in outcome.report["attempts"]}) == ids
    assert plan["split"] == (split or "default (cases marked heldout excluded)")


def test_split_flag_on_the_command_line(tmp_path):
    path = write_suite(tmp_path, SPLIT_CASES, subject={"type": "mock"})
    done = scoreboard(["run", str(path), "--split", "heldout", "--no-progress", "--json"], tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert [a["case_id"] for a in report["attempts"]] == ["held1"] and report["plan"]["split"] == "heldout"


def test_judge_quota_stops_the_run(fake_provider, judge_srv, tmp_path):
    """A 402 from the judge's provider stops the run like a subject's: nothing more is sent."""
    judge_srv.push("chat", {"status": 402})
    judge_srv.set_default("chat", {"reply": verdict(True)})
    path = write_suite(tmp_path, CASES, subject=openai(fake_provider, "subj"),
                       judge=openai(judge_srv, "judge"), graders=LLM_JUDGE)
    outcome = run_suite(path)
    report = outcome.report
    assert outcome.exit_code == 2 and report["run"]["status"] == "stopped"
    assert "402" in report["run"]["stop_reason"] or "quota" in report["run"]["stop_reason"].lower()
    assert single(report, "q1")["status"] == "unassessed"  # its judgment failed, not pass or fail
    assert single(report, "q2")["status"] == "not-run"
    assert len(judge_srv.requests) == 1 and len(fake_provider.requests) == 1


def test_a_pair_says_how_many_planned_cases_it_never_compared():
    # The pairwise judge skips a case where either variant has no output (an error): only the
    # pair's smaller `cases` count showed it. Now a flag says so in every rendering.
    from scoreboard.stats.judges import pairwise_summary

    plan = {"cases": [{"id": f"c{i}"} for i in range(4)], "runs": 1}
    judgments = [{"case_id": f"c{i}", "run": 0, "a": "x", "b": "y", "verdict": "x", "consistent": True}
                 for i in range(3)]
    (pair,) = pairwise_summary(plan, {"judgments": judgments})
    assert pair["cases"] == 3 and "1 of 4 planned cases never compared" in " ".join(pair["flags"])
    (whole,) = pairwise_summary(plan, {"judgments": judgments + [{**judgments[0], "case_id": "c3"}]})
    assert not any("never compared" in f for f in whole["flags"])
