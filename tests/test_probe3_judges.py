"""Probing the judge figures (round 3): the instrument check's counts when the judge fails, the
Markdown's judge section, judge prompts naming undefined variables, and a bad --judge spec."""

from __future__ import annotations

from scoreboard.stats.instrument import InstrumentAccumulator

# ------------------------------------------------------------------------- the instrument check


def _plan(repeats: int = 2) -> dict:
    return {"variants": [{"name": n} for n in ("good", "blank", "unstyled")],
            "instrument": {"judge_hash": "h" * 64, "grader": {"pointwise": {}}, "repeats": repeats,
                           "min_accuracy": 0.5, "min_self_agreement": 0.5, "position_alpha": 0.05,
                           "pairwise": False}}


def _attempt(variant: str, case: str, run: int, score: int | None) -> dict:
    grade = {"grader": "pointwise", "passed": None, "scores": None} if score is None else \
        {"grader": "pointwise", "passed": True, "scores": {"quality": score}}
    return {"variant": variant, "case_id": case, "run": run, "grades": [grade]}


def _check(answers: dict[tuple[str, str], list[int | None]], repeats: int = 2) -> dict:
    acc = InstrumentAccumulator(_plan(repeats))
    for (variant, case), scores in answers.items():
        for run, score in enumerate(scores, 1):
            acc.add(_attempt(variant, case, run, score))
    return acc.summary(None)


def test_pairs_the_judge_left_unjudged_count_against_the_check():
    """The judge failed on every blank page: half the pairs were judged, all correctly. The check
    counted only those (2/2, passed at min_accuracy 0.5 while judging half the pairs); the
    unjudged pairs now count as not above."""
    answers = {}
    for case in ("c1", "c2"):
        answers[("good", case)] = [3, 3]
        answers[("unstyled", case)] = [1, 1]
        answers[("blank", case)] = [None, None]
    answers[("good", "c3")] = [3, 3]
    answers[("unstyled", "c3")] = [3, 3]  # a tie: judged, not above
    answers[("blank", "c3")] = [None, None]
    out = _check(answers)
    a = out["accuracy"]
    assert (a["count"], a["of"], a["unjudged_pairs"], a["ties"]) == (2, 6, 3, 1)
    assert a["value"] == 2 / 6 and a["ci"]["method"] == "wilson"
    assert out["passed"] is False and out["status"] == "failed"
    assert out["reasons"][0] == ("ranked good above degraded on 33.3% of 6 pairs; 3 pairs not judged, which "
                                 "count as not above (needs 50%)")


def test_a_judge_that_fails_on_every_good_control_shows_every_pair_unjudged():
    """With no good control judged, `unjudged_pairs` was 0 (the loop ran over the judged good
    controls only) and the reason read "ranked good above degraded on no pair judged of pairs"."""
    answers = {}
    for case in ("c1", "c2"):
        answers[("good", case)] = [None, None]
        answers[("unstyled", case)] = [1, 1]
        answers[("blank", case)] = [0, 0]
    out = _check(answers)
    a = out["accuracy"]
    assert (a["count"], a["of"], a["unjudged_pairs"], a["value"]) == (0, 4, 4, 0.0)
    assert out["judge_failures"] == 4 and out["passed"] is False
    assert out["reasons"][0] == ("ranked good above degraded on 0.0% of 4 pairs; 4 pairs not judged, which "
                                 "count as not above (needs 50%)")


def test_a_check_with_no_attempt_says_no_control_was_judged():
    out = _check({})
    assert out["accuracy"]["value"] is None and out["accuracy"]["of"] == 0
    assert out["reasons"][0] == "no control was judged (needs good above degraded on 50% of pairs)"


def test_a_repeat_the_judge_failed_beside_an_answer_is_not_agreement():
    """Self-agreement left out every judge failure: a control answered once and failed twice (or
    answered twice and failed once) counted as agreeing with itself."""
    answers = {("good", "c1"): [3, 3, None], ("blank", "c1"): [0, 0, 0], ("unstyled", "c1"): [1, None, None]}
    out = _check(answers, repeats=3)
    s = out["self_agreement"]
    assert (s["count"], s["of"]) == (1, 3)
    assert out["accuracy"]["unjudged_pairs"] == 0 and out["accuracy"]["count"] == 2
