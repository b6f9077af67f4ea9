"""A hostile judge over real loopback HTTP (a FakeProvider plays it): whatever it answers, a
judgment it cannot use is *not assessed* (never a pass or a fail), counted and shown; what the
judge spent is counted, unknown stays unknown; repeated asks that split decide nothing."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from scoreboard.engine.pipeline import RunOptions, run
from scoreboard.suite.load import load_suite
from tests.servers.fake_provider import FakeProvider

VERDICT = json.dumps({"verdict": True, "explanation": "fine"})
CASES = [{"id": "q1", "input": "What is 2+2?", "expected": "4"}]


@pytest.fixture
def judge_srv():
    with FakeProvider() as srv:
        yield srv


def openai(srv: FakeProvider, model: str) -> dict:
    return {"type": "openai", "base_url": srv.base_url + "/v1", "model": model}


def run_suite(tmp_path: Path, judge: FakeProvider, subject: dict | None = None, cases=CASES, **settings):
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    suite = {"name": "probe", "cases": "cases.jsonl", "output_dir": str(tmp_path / "out"),
             "formats": ["json", "md"], "concurrency": 1, "timeout_ms": 10_000,
             "judge": openai(judge, "judge"), **({"subject": subject} if subject else {}), **settings}
    path = tmp_path / "suite.json"
    path.write_text(json.dumps(suite), encoding="utf-8")
    return run(load_suite(path, {}), RunOptions(progress=False))


def judge_prompts(srv: FakeProvider) -> list[str]:
    return [r["json"]["messages"][-1]["content"] for r in srv.requests]


# ------------------------------------------------------------------------- hostile answers

UNUSABLE = {
    "prose around the verdict": 'Sure! {"verdict": true, "explanation": "ok"} Hope that helps.',
    "verdict as a string": '{"verdict": "true", "explanation": "ok"}',
    "NaN": '{"verdict": NaN, "explanation": "ok"}',
    "missing field": '{"explanation": "ok"}',
    "extra field": '{"verdict": true, "explanation": "ok", "confidence": 0.9}',
    "empty": "",
    "another language": '{"veredicto": verdadero}',
    "refusal": "I'm sorry, but I can't help with that.",
    "a list": '[{"verdict": true, "explanation": "ok"}]',
}


@pytest.mark.parametrize("answer", list(UNUSABLE.values()), ids=list(UNUSABLE))
def test_unusable_answer_is_not_assessed_counted_and_shown(fake_provider, judge_srv, tmp_path, answer):
    judge_srv.set_default("chat", {"reply": answer})
    outcome = run_suite(tmp_path, judge_srv, openai(fake_provider, "subj"), graders=[{"llm-judge": "right?"}])
    (attempt,) = outcome.report["attempts"]
    (grade,) = attempt["grades"]
    assert (grade["passed"], grade["score"], grade["judge_failure"]) == (None, None, True)
    assert attempt["status"] == "unassessed" and outcome.exit_code == 0
    assert len(judge_srv.requests) == 2 and grade["judge"]["usage"]["requests"] == 2  # one retry, counted
    block = outcome.report["summary"]["judges"]["variants"]["subj"]
    assert (block["judged"], block["judge_failures"]) == (0, 1)
    md = Path(outcome.paths["md"]).read_text(encoding="utf-8")
    assert "judge failure: judge answer unusable after a retry" in md


@pytest.mark.parametrize("answer", ['{"score": "4/5", "explanation": "x"}', '{"score": 4.5, "explanation": "x"}',
                                    '{"score": 1e308, "explanation": "x"}', '{"score": 1e400, "explanation": "x"}',
                                    '{"score": 0, "explanation": "x"}', '{"score": "four", "explanation": "x"}'],
                         ids=["4/5", "fraction", "1e308", "overflow", "below the scale", "word"])
def test_rubric_score_off_the_scale_is_not_assessed(fake_provider, judge_srv, tmp_path, answer):
    judge_srv.set_default("chat", {"reply": answer})
    outcome = run_suite(tmp_path, judge_srv, openai(fake_provider, "subj"), graders=[{"rubric-score": "good?"}])
    (grade,) = outcome.report["attempts"][0]["grades"]
    assert grade["passed"] is None and grade["judge_failure"] is True and "rubric_score" not in grade
    assert "rubric" not in outcome.report["summary"]["judges"]["variants"]["subj"]


def test_fenced_answer_and_a_forced_tool_call_are_used(fake_provider, judge_srv, tmp_path):
    judge_srv.push("chat", {"reply": '```json\n{"verdict": true, "explanation": "ok"}\n```'},
                   {"tool_calls": [{"name": "verdict", "args": {"verdict": False, "explanation": "no"}}]})
    cases = [*CASES, {"id": "q2", "input": "What is 3+3?", "expected": "6"}]
    outcome = run_suite(tmp_path, judge_srv, openai(fake_provider, "subj"), cases=cases,
                        graders=[{"llm-judge": "right?"}])
    assert [a["grades"][0]["passed"] for a in outcome.report["attempts"]] == [True, False]
    assert len(judge_srv.requests) == 2


def test_a_huge_wrong_value_is_not_quoted_whole(fake_provider, judge_srv, tmp_path):
    """A schema error quotes the offending value: a 1 MB one is cut in the grade's reason and in
    the retry shown to the judge (not sent back whole, not stored whole)."""
    judge_srv.set_default("chat", {"reply": json.dumps({"verdict": "y" * 1_000_000, "explanation": "x"})})
    outcome = run_suite(tmp_path, judge_srv, openai(fake_provider, "subj"), graders=[{"llm-judge": "right?"}])
    (grade,) = outcome.report["attempts"][0]["grades"]
    assert grade["passed"] is None and grade["judge_failure"] is True
    assert len(grade["reason"]) < 2_000 and "more characters]" in grade["reason"]
    first, retry = judge_prompts(judge_srv)
    assert "could not be used" in retry and len(retry) - len(first) < 2_000


def test_judge_dying_mid_run_leaves_the_rest_not_assessed_with_unknown_usage(fake_provider, tmp_path):
    judge = FakeProvider().__enter__()
    judge.set_default("chat", {"reply": VERDICT})
    dead = False

    def subject_reply(req):
        nonlocal dead
        if "3+3" in json.dumps(req) and not dead:  # the second case: the judge is gone
            judge.__exit__(None, None, None)
            dead = True
        return "an answer"

    fake_provider.set_default("chat", {"reply": subject_reply})
    cases = [*CASES, {"id": "q2", "input": "What is 3+3?", "expected": "6"}]
    try:
        outcome = run_suite(tmp_path, judge, openai(fake_provider, "subj"), cases=cases,
                            graders=[{"llm-judge": "right?"}])
    finally:
        if not dead:
            judge.__exit__(None, None, None)
    q1, q2 = outcome.report["attempts"]
    assert q1["grades"][0]["passed"] is True
    assert q2["grades"][0]["passed"] is None and "judge request failed" in q2["grades"][0]["reason"]
    block = outcome.report["summary"]["judges"]["variants"]["subj"]
    assert (block["judged"], block["judge_failures"]) == (1, 1)
    spent = q2["grades"][0]["judge"]["usage"]
    if spent["requests"] == 0:
        # every try found the judge's port closed (connection refused): nothing was written, so
        # nothing was spent: a known 0 (test_probe9_unsent), the total is q1's judge usage
        assert spent == {"requests": 0, "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0}
        assert block["usage"]["input_tokens"]["total"] == q1["grades"][0]["judge"]["usage"]["input_tokens"]
        assert block["usage"]["input_tokens"]["unknown_count"] == 0
    else:  # a try written to a connection the dying judge dropped: it may have been billed
        assert block["usage"]["input_tokens"]["total"] is None  # unknown, never 0
        assert block["usage"]["input_tokens"]["unknown_count"] == 1


# ------------------------------------------------------------------------- usage counted


def test_g_eval_of_several_criteria_counts_every_criterion_in_the_summary(fake_provider, judge_srv, tmp_path):
    judge_srv.set_default("chat", {"reply": json.dumps({"score": 8, "explanation": "x"})})
    outcome = run_suite(tmp_path, judge_srv, openai(fake_provider, "subj"),
                        graders=[{"g-eval": {"criteria": ["is concise", "answers the question"]}}],
                        prices={"judge": {"input_per_mtok": 1.0, "output_per_mtok": 1.0}})
    (grade,) = outcome.report["attempts"][0]["grades"]
    assert grade["passed"] is True and len(judge_srv.requests) == 2
    assert grade["judge"]["usage"]["requests"] == 2
    usage = outcome.report["summary"]["judges"]["variants"]["subj"]["usage"]
    assert usage["requests"]["total"] == 2 == outcome.report["requests"]["by_role"]["judge"]
    assert usage["cost_usd"]["total"] is not None and usage["cost_usd"]["total"] > 0


def test_g_eval_failing_on_a_later_criterion_counts_what_the_earlier_ones_spent(fake_provider, judge_srv,
                                                                                 tmp_path):
    judge_srv.push("chat", {"reply": json.dumps({"score": 8, "explanation": "x"})})
    judge_srv.set_default("chat", {"reply": "no idea"})
    outcome = run_suite(tmp_path, judge_srv, openai(fake_provider, "subj"),
                        graders=[{"g-eval": {"criteria": ["is concise", "answers the question"]}}])
    (grade,) = outcome.report["attempts"][0]["grades"]
    assert grade["passed"] is None and grade["judge_failure"] is True
    assert "answers the question" in grade["reason"]
    assert len(judge_srv.requests) == 3 == grade["judge"]["usage"]["requests"]
    usage = outcome.report["summary"]["judges"]["variants"]["subj"]["usage"]
    assert usage["requests"]["total"] == 3 == outcome.report["requests"]["by_role"]["judge"]


def test_a_budget_cut_between_repeated_asks_keeps_what_was_spent(fake_provider, judge_srv, tmp_path):
    judge_srv.set_default("chat", {"reply": VERDICT})
    outcome = run_suite(tmp_path, judge_srv, openai(fake_provider, "subj"), graders=[{"llm-judge": "right?"}],
                        judge_runs=2, budget={"max_requests": 2})
    (grade,) = outcome.report["attempts"][0]["grades"]
    assert grade["passed"] is None and grade["reason"].startswith("not judged")
    assert outcome.report["requests"]["by_role"] == {"judge": 1, "subject": 1}
    assert grade["judge"]["usage"]["requests"] == 1
    usage = outcome.report["summary"]["judges"]["variants"]["subj"]["usage"]
    assert usage["requests"]["total"] == 1 and usage["input_tokens"]["total"] > 0


# ------------------------------------------------------------------------- pairwise


def _variants(srv: FakeProvider) -> dict:
    return {"oak": {"subject": openai(srv, "m1")}, "elm": {"subject": openai(srv, "m2")}}


def test_pairwise_runs_that_split_are_not_assessed_not_a_tie(fake_provider, judge_srv, tmp_path):
    """judge_runs: 2 and the judge says A then B in the first order: no majority there. The
    comparison is not assessed (a judge failure of the pair), not a tie, and says nothing of
    position consistency."""
    answers = itertools.cycle(["A", "B", "A", "A"])
    judge_srv.set_default("chat", {"reply": lambda req: json.dumps({"winner": next(answers), "explanation": "x"})})
    outcome = run_suite(tmp_path, judge_srv, variants=_variants(fake_provider), graders=[{"contains": "a"}],
                        pairwise=True, judge_runs=2)
    (j,) = outcome.report["pairwise"]["judgments"]
    assert j["verdict"] is None and "no majority" in j["failure"] and j["forward"] is None
    assert len(judge_srv.requests) == 4 and sum(u["requests"] for u in j["usage"]) == 4
    (pair,) = outcome.report["summary"]["judges"]["pairwise"]
    assert (pair["judge_failures"], pair["comparisons"], pair["ties"], pair["cases"]) == (1, 0, 0, 0)
    assert pair["position_consistency"] is None and pair["sign_test_p"] is None
    assert pair["usage"]["requests"]["total"] == 4


def test_pairwise_asks_both_orders_and_reports_position_bias(fake_provider, judge_srv, tmp_path):
    judge_srv.set_default("chat", {"reply": json.dumps({"winner": "A", "explanation": "first"})})
    cases = [*CASES, {"id": "q2", "input": "What is 3+3?", "expected": "6"}]
    outcome = run_suite(tmp_path, judge_srv, variants=_variants(fake_provider), graders=[{"contains": "a"}],
                        cases=cases, pairwise=True)
    prompts = judge_prompts(judge_srv)
    assert len(prompts) == 4
    first, second = prompts[0], prompts[1]
    a1, b1 = first.split("ANSWER A:\n")[1].split("\n\nANSWER B:\n")
    a2, b2 = second.split("ANSWER A:\n")[1].split("\n\nANSWER B:\n")
    assert a1 == b2.split("\n\n")[0] and b1.split("\n\n")[0] == a2  # the same two answers, swapped
    (pair,) = outcome.report["summary"]["judges"]["pairwise"]
    assert pair["position_consistency"] == 0.0 and pair["ties"] == 2 and pair["judge_failures"] == 0


def test_pairwise_cut_by_the_budget_keeps_what_it_spent(fake_provider, judge_srv, tmp_path):
    judge_srv.set_default("chat", {"reply": json.dumps({"winner": "A", "explanation": "x"})})
    outcome = run_suite(tmp_path, judge_srv, variants=_variants(fake_provider), graders=[{"contains": "a"}],
                        pairwise=True, budget={"max_requests": 3})
    assert outcome.report["requests"]["by_role"] == {"judge": 1, "subject": 2}
    (j,) = outcome.report["pairwise"]["judgments"]
    assert j["verdict"] is None and j["failure"].startswith("not judged")
    (pair,) = outcome.report["summary"]["judges"]["pairwise"]
    assert pair["judge_failures"] == 1 and pair["usage"]["requests"]["total"] == 1


# ------------------------------------------------------------------------- prompts


def test_case_text_cannot_inject_template_syntax_into_a_custom_prompt(fake_provider, judge_srv, tmp_path):
    evil = "{{ 7*7 }} {% for x in range(3) %}loop{% endfor %} {# open"
    judge_srv.set_default("chat", {"reply": VERDICT})
    fake_provider.set_default("chat", {"reply": evil})
    cases = [{"id": "q1", "input": "plain question", "expected": evil, "rubric": "{{ 5*5 }}",
              "metadata": {"m": "{{ 3*3 }}"}}]
    outcome = run_suite(tmp_path, judge_srv, openai(fake_provider, "subj"), cases=cases, graders=[
        {"llm-judge": {"prompt": "E={{ expected }}|R={{ rubric }}|M={{ metadata.m }}|O={{ output }}"}}])
    assert outcome.report["attempts"][0]["grades"][0]["passed"] is True
    (prompt,) = judge_prompts(judge_srv)
    assert prompt.startswith(f"E={evil}|R={{{{ 5*5 }}}}|M={{{{ 3*3 }}}}|O={evil}")
    assert "49" not in prompt and "looploop" not in prompt


def test_a_pairwise_comparison_not_assessed_is_shown_in_every_rendering(fake_provider, judge_srv, tmp_path):
    """The terminal, the Markdown and the HTML each say that a comparison was not assessed."""
    from tests.cli_inprocess import run_cli

    judge_srv.set_default("chat", {"reply": "not a verdict"})
    (tmp_path / "cases.jsonl").write_text(json.dumps(CASES[0]) + "\n", encoding="utf-8")
    suite = {"name": "probe", "cases": "cases.jsonl", "output_dir": str(tmp_path / "out"),
             "formats": ["json", "md", "html"], "concurrency": 1, "timeout_ms": 10_000,
             "judge": openai(judge_srv, "judge"), "variants": _variants(fake_provider),
             "graders": [{"contains": "a"}], "pairwise": True}
    (tmp_path / "suite.json").write_text(json.dumps(suite), encoding="utf-8")
    done = run_cli(["run", "suite.json", "--no-progress"], tmp_path)  # in-process: what it says is the point
    assert done.returncode == 0, done.stderr
    said = "1 comparison not assessed (judge failure or no majority)"
    assert said in done.stdout
    (md,) = (tmp_path / "out").rglob("*.md")
    (html,) = (tmp_path / "out").rglob("*.html")
    assert said in md.read_text(encoding="utf-8") and said in html.read_text(encoding="utf-8")


def test_self_agreement_of_one_usable_answer_is_unknown_not_full(fake_provider, judge_srv, tmp_path):
    # judge_runs 3, one usable answer and two that fail: self-agreement read 1.0 (one answer
    # agrees with itself); it is unknown, and the failed asks stay listed on the grade.
    judge_srv.push("chat", {"reply": VERDICT})
    judge_srv.set_default("chat", {"reply": "no idea"})
    outcome = run_suite(tmp_path, judge_srv, openai(fake_provider, "subj"), graders=[{"llm-judge": "right?"}],
                        judge_runs=3)
    (grade,) = outcome.report["attempts"][0]["grades"]
    assert grade["passed"] is True and grade["judge"]["self_agreement"] is None
    judge_srv.reset()
    judge_srv.set_default("chat", {"reply": VERDICT})
    (tmp_path / "again").mkdir()
    again = run_suite(tmp_path / "again", judge_srv, openai(fake_provider, "subj"),
                      graders=[{"llm-judge": "right?"}], judge_runs=3)
    assert again.report["attempts"][0]["grades"][0]["judge"]["self_agreement"] == 1.0
