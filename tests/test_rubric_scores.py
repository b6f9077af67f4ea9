"""Origin 003's 1-5 judge score reported as a mean per variant with its interval (not only as
pass/fail): each case's judged runs averaged first, then a Student t interval over the cases,
checked against scipy; end to end through a FakeProvider judge and every rendering."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as st

from scoreboard.stats.methods import STATS_VERSION
from scoreboard.record.io import parse_report
from scoreboard.record.markdown import render_markdown
from scoreboard.record.terminal import print_summary
from scoreboard.record.view import view_of
from scoreboard.stats.summary import summarize
from tests.servers.fake_provider import FakeProvider
from tests.test_judges import judge_reply, openai, run_suite, write_suite
from tests.test_stats import att, plan_for


def rubric_attempt(case: str, variant: str, run: int, score: int | None, scale=(1, 5)) -> dict:
    a = att(case, variant, run, "passed" if (score or 0) >= 4 else "failed")
    grade = {"grader": "rubric-score", "passed": (score or 0) >= 4, "score": None, "reason": "",
             "judge": {"answers": [score]}}
    if score is None:  # a judge failure: not assessed, no score
        grade.update(passed=None, judge_failure=True)
    else:
        grade.update(rubric_score=score, scale=list(scale), score=(score - scale[0]) / (scale[1] - scale[0]))
    a["grades"] = [grade]
    return a


def t_interval(values: list[float]) -> tuple[float, float]:
    v = np.asarray(values, dtype=float)
    return st.t.interval(0.95, len(v) - 1, loc=v.mean(), scale=st.sem(v))


def test_mean_score_per_variant_by_case_matches_scipy():
    scores = {"a": [[5, 4], [3, 3], [4, 5], [2, 1], [5, 5]], "b": [[1, 2], [3, 4], [2, 2], [1, 1], [4, None]]}
    attempts = [rubric_attempt(f"c{i}", v, r, s) for v, per_case in scores.items()
                for i, runs in enumerate(per_case) for r, s in enumerate(runs)]
    summary = summarize(plan_for(5, variants=("a", "b"), runs=2), attempts)
    for v, per_case in scores.items():
        block = summary["judges"]["variants"][v]["rubric_scores"]["1-5"]
        means = [np.mean([s for s in runs if s is not None]) for runs in per_case]  # runs first, then cases
        low, high = t_interval(means)
        assert block["mean"] == pytest.approx(np.mean(means))
        assert block["ci"]["low"] == pytest.approx(max(1.0, low)) and block["ci"]["high"] == pytest.approx(min(5.0, high))
        assert block["ci"]["method"] == "student-t" and block["cases"] == 5 and block["small_sample"] is True
    assert summary["judges"]["variants"]["b"]["rubric_scores"]["1-5"]["scores"] == 9  # the failure is not a score


def test_scores_on_other_scales_are_kept_apart_and_no_spread_stays_honest():
    attempts = [rubric_attempt(f"c{i}", "a", 0, 4) for i in range(3)]
    attempts += [rubric_attempt(f"c{i}", "a", 1, 7, scale=(0, 10)) for i in range(3)]
    block = summarize(plan_for(3, variants=("a",), runs=2), attempts)["judges"]["variants"]["a"]["rubric_scores"]
    assert sorted(block) == ["0-10", "1-5"]
    five = block["1-5"]
    assert five["mean"] == 4.0 and five["ci"]["adjusted"] is True  # every case 4: never a zero-width interval
    assert five["ci"]["low"] < 4.0 < five["ci"]["high"]


def test_rubric_score_through_a_judge_and_every_rendering(tmp_path):
    with FakeProvider() as judge_srv:
        run_through_judge(judge_srv, tmp_path)


def run_through_judge(judge_srv, tmp_path):
    # The judge gives 5 to answers mentioning "careful", 2 to the rest (1-5, pass at 4).
    cases = [{"id": f"c{i}", "input": f"Explain item {i}.", "expected": f"item {i}"} for i in range(4)]
    judge_srv.set_default("chat", {"reply": judge_reply(
        lambda prompt, name: {"score": 5 if "careful" in prompt else 2, "explanation": "ok"})})
    path = write_suite(tmp_path, cases, variants={
        "basic": {"subject": {"type": "mock", "default": "a hasty answer"}},
        "careful": {"subject": {"type": "mock", "default": "a careful answer"}}},
        judge=openai(judge_srv, "judge"), graders=[{"rubric-score": {}}], runs=2, formats=["json", "md", "html"])
    outcome = run_suite(path)
    report = outcome.report
    grade = report["attempts"][0]["grades"][0]
    assert grade["rubric_score"] in (2, 5) and grade["scale"] == [1, 5]
    judges = report["summary"]["judges"]["variants"]
    assert judges["careful"]["rubric_scores"]["1-5"]["mean"] == 5.0
    assert judges["basic"]["rubric_scores"]["1-5"]["mean"] == 2.0
    out = io.StringIO()
    print_summary(parse_report(report, "r.json"), {}, out)
    lines = out.getvalue().splitlines()
    (careful,) = [ln for ln in lines if ln.startswith("  careful: rubric score")]
    ci = judges["careful"]["rubric_scores"]["1-5"]["ci"]
    assert careful == (f"  careful: rubric score 5.00 [95% CI {ci['low']:.2f}–{ci['high']:.2f}] on 1-5 over 4 cases "
                       f"(small sample: fewer than 30 cases)")
    md = render_markdown(view_of(report))
    assert f"| careful | 1-5 | 5.00 (95% CI {ci['low']:.2f}–{ci['high']:.2f}) over 4 cases; small sample" in md
    html = Path(outcome.paths["html"]).read_text()
    assert '"rubric_scores"' in html  # the page's data carries the figure it draws (tests/record: the table)
    assert json.loads(Path(outcome.paths["json"]).read_text())["summary"]["methods"]["version"] == STATS_VERSION

