"""A case's outcome from its grades: weights, threshold, named metrics (promptfoo's rules)."""

import asyncio

import pytest

from scoreboard.graders.scoring import named_scores, outcome, score_attempt


def g(passed, score, weight=None, metric=None, named=None):
    out = {"grader": "x", "passed": passed, "score": score}
    if weight is not None:
        out["weight"] = weight
    if metric:
        out["metric"] = metric
    if named:
        out["named_scores"] = named
    return out


def test_without_threshold_every_grader_must_pass():
    assert outcome([g(True, 1.0), g(False, 0.0)], None)["status"] == "failed"
    assert outcome([g(True, 1.0), g(True, 1.0)], None)["status"] == "passed"
    assert outcome([g(True, 1.0), g(None, None)], None)["status"] == "unassessed"


def test_threshold_on_weighted_mean_overrides_single_failures():
    grades = [g(True, 1.0, weight=3), g(False, 0.0, weight=1)]
    r = outcome(grades, None, threshold=0.75)
    assert r["status"] == "passed" and r["score"] == pytest.approx(0.75)  # 3/4 reaches 0.75
    assert outcome(grades, None, threshold=0.76)["status"] == "failed"
    assert outcome([g(True, 1.0), g(False, 0.0)], None, threshold=0)["status"] == "passed"  # 0 is honoured
    # weight 0: no part in the score (promptfoo)
    assert outcome([g(True, 1.0), g(False, 0.0, weight=0)], None, threshold=1)["score"] == 1.0
    # a grade that could not decide leaves the weighted score unknown
    assert outcome([g(True, 1.0), g(None, None)], None, threshold=0.5)["status"] == "unassessed"


def test_no_grader_is_not_graded_and_error_wins():
    assert outcome([], None)["status"] == "not-graded"
    assert outcome([g(True, 1.0)], "boom")["status"] == "error"


def test_named_scores_are_weighted_means():
    grades = [g(True, 1.0, weight=2, metric="acc"), g(False, 0.0, metric="acc"),
              g(True, 0.5, metric="style", named={"tone": 0.2, "style": 0.9})]
    # acc: (1*2 + 0*1) / 3; style from the grade's own metric; tone from its named_scores
    assert named_scores(grades) == {"acc": pytest.approx(2 / 3), "style": 0.5, "tone": 0.2}


def test_scoring_function_decides():
    def scorer(scores, context):
        return {"pass": scores["acc"] > 0.5, "score": scores["acc"], "reason": "custom"}

    grades = [g(True, 1.0, metric="acc"), g(False, 0.0, metric="acc"), g(True, 1.0, metric="acc")]
    r = asyncio.run(score_attempt(grades, None, None, scorer))
    assert r["status"] == "passed" and r["score"] == pytest.approx(2 / 3) and r["scoring_reason"] == "custom"

    def broken(scores, context):
        raise KeyError("nope")

    r = asyncio.run(score_attempt(grades, None, None, broken))
    assert r["status"] == "error" and "scoring function raised KeyError" in r["error"]
