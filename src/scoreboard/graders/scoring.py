"""A case's outcome from its grades: weights, a threshold, named metrics, a scoring function.

promptfoo's rules (its AssertionsResult), kept exactly:

- the case's score is the weighted mean of its grade scores (weight 1 unless a spec says);
- with a `threshold`, the case passes when that score reaches it (a failed grader does not fail
  the case by itself), a grade's `raw_score` (a javascript number outside [0, 1]) counting as
  that number, as promptfoo adds it; without one, every grader must pass (scoreboard's rule as before), except
  those of weight 0: they are metric-only (recorded, counted in their metric, never failing the
  case; promptfoo's runAssertion forces their pass), except a `group` with `must_pass: true`
  (promptfoo's assert-set, which that rule does not reach);
- a named metric is the weighted mean of the scores of the grades naming it; a grade's own
  `named_scores` (a Python grader's) count with the grade's weight;
- a custom scoring function receives the named scores and {threshold, score, grades} and returns
  a bool, a number or {pass, score, reason}; an exception is an error on that attempt; it is not
  asked about an attempt with a grade that could not decide (that attempt is unassessed).

Where promptfoo has no "not assessed", scoreboard does: a grade that could not decide (a judge
failure) leaves the weighted score unknown, so the case is unassessed, never silently scored
without it. A case with no grader is "not-graded", and so is one whose every grade is record-only
(`record_only` on the grade: a classify judge's choice recorded without a score, OpenAI Evals'
spec without choice_scores); a record-only grade takes no part in any case's verdict or score.
"""

from __future__ import annotations

import math
from typing import Any


def weighted_score(grades: list[dict]) -> tuple[float | None, bool]:
    """(weighted mean score, every weighted grade assessed). Weight 0 grades do not count."""
    total = weight = 0.0
    complete = True
    for g in grades:
        w = g.get("weight", 1)
        if not w:
            continue
        s = g.get("score")
        if s is None or g.get("passed") is None:
            complete = False
            continue
        total += s * w
        weight += w
    return (total / weight if weight > 0 else None), complete


def raw_weighted(grades: list[dict]) -> float | None:
    """The weighted mean a threshold compares: a grade's `raw_score` (the number a javascript or
    imported python assertion returned outside [0, 1], kept beside its clipped score) in place of
    its score, as promptfoo's AssertionsResult adds the raw numbers; None when no grade has one."""
    if not any(isinstance(g.get("raw_score"), (int, float)) for g in grades):
        return None
    return weighted_score([{**g, "score": g["raw_score"]} if isinstance(g.get("raw_score"), (int, float))
                           and g.get("score") is not None else g for g in grades])[0]


def named_scores(grades: list[dict], partial: bool = False) -> dict[str, float]:
    """Each named metric's weighted mean over the grades naming it (promptfoo's namedScores). A
    metric one of whose weighted grades could not decide (a grader error, `pass: null`, a judge
    failure) is unknown on that attempt and left out, never the mean of the grades that did
    decide (which read 0 where the one left was a 0). `partial`: the rule before, for `verify`
    of a report written under it."""
    sums: dict[str, list[float]] = {}
    unknown: set[str] = set()
    for g in grades:
        w = g.get("weight", 1)
        s = g.get("score")
        undecided = (s is None or g.get("passed") is None) and w and not g.get("record_only")
        if g.get("metric") and undecided:
            unknown.add(g["metric"])
        if g.get("metric") and s is not None:
            slot = sums.setdefault(g["metric"], [0.0, 0.0])
            slot[0] += s * w
            slot[1] += w
        for name, value in (g.get("named_scores") or {}).items():
            if name == g.get("metric"):
                continue
            if undecided:  # a grade that could not decide names these too (`pass: null` with named_scores)
                unknown.add(name)
            slot = sums.setdefault(name, [0.0, 0.0])
            slot[0] += value * w
            slot[1] += w
    return {k: (v[0] / v[1] if v[1] > 0 else 0.0) for k, v in sorted(sums.items())
            if partial or k not in unknown}


def outcome(grades: list[dict], error: str | None, threshold: float | None = None) -> dict:
    """{status, score, metrics} of one attempt from its grade dicts (before any scoring
    function). `score` is None when unknown; `metrics` holds named scores."""
    metrics = named_scores(grades) if any("metric" in g or "named_scores" in g for g in grades) else {}
    if error is not None:
        return {"status": "error", "score": None, "metrics": metrics}
    grades = [g for g in grades if not g.get("record_only")]
    if not grades:
        return {"status": "not-graded", "score": None, "metrics": metrics}
    score, complete = weighted_score(grades)
    if threshold is not None:
        if not complete or score is None:
            status = "unassessed"
        else:
            raw = raw_weighted(grades)
            status = "passed" if (score if raw is None else raw) >= threshold - 1e-12 else "failed"
        return {"status": status, "score": score if complete else None, "metrics": metrics}
    # weight 0 is metric-only: recorded and counted in its metric, never failing the case
    # (promptfoo's runAssertion forces such an assertion's pass), unless the grade says it must
    # pass (a group with must_pass: promptfoo's assert-set, whose weight scales only its score)
    counted = [g for g in grades if g.get("weight", 1) != 0 or g.get("must_pass")]
    if any(g.get("passed") is False for g in counted):
        status = "failed"
    elif all(g.get("passed") is True for g in counted):
        status = "passed"
    else:
        status = "unassessed"
    return {"status": status, "score": score if complete else None, "metrics": metrics}


def apply_scoring(result: dict, value: Any, threshold: float | None) -> dict:
    """The outcome after a scoring function returned `value` (bool, number or mapping)."""
    from .code_result import normalise_result

    grade = normalise_result(value, threshold, "scoring")
    status = "unassessed" if grade.passed is None else ("passed" if grade.passed else "failed")
    out = {**result, "status": status, "score": grade.score}
    if grade.reason:
        out["scoring_reason"] = grade.reason
    return out


async def score_attempt(grades: list[dict], error: str | None, threshold: float | None,
                        scorer: Any = None) -> dict:
    """The attempt's outcome, with the case's scoring function applied when it has one."""
    result = outcome(grades, error, threshold)
    if scorer is None or result["status"] in ("error", "not-graded"):
        return result
    if not weighted_score([g for g in grades if not g.get("record_only")])[1]:
        # a grade could not decide (a judge failure, a judge request the budget refused): the
        # function would decide without it (its metric missing, the score None), so it is not
        # asked: the attempt is unassessed, never scored without it
        return {**result, "status": "unassessed", "score": None}
    from ..jsonio import fresh
    from .code import DEFAULT_TIMEOUT_S, call_user, declared_args

    # its own copy: a function that edits the grades it is given leaves the recorded ones as they are
    context = {"threshold": threshold, "score": result["score"], "grades": fresh(grades)}
    try:  # as many arguments as it declares, as a grader's: `def decide(named_scores)` too
        args = declared_args(scorer, (dict(result["metrics"]), context), least=1)
        value = await call_user(scorer, args, DEFAULT_TIMEOUT_S)
        return apply_scoring(result, value, threshold)
    except (Exception, SystemExit) as exc:  # a scoring bug (or its sys.exit()) is data: an error on this attempt
        from .grade import cut_reason, exception_name

        return {**result, "status": "error", "score": None,
                "error": f"scoring function raised {exception_name(exc)}: {cut_reason(str(exc))}"}


def record_fields(result: dict, has_scoring: bool) -> dict:
    """The keys an attempt record gains: `score` (when the case is scored by weight/threshold,
    a scoring function or metrics) and `metrics` (named scores), only when they say something."""
    out: dict = {}
    if has_scoring or result["metrics"]:
        out["score"] = result["score"] if result["score"] is None or math.isfinite(result["score"]) else None
    if result["metrics"]:
        out["metrics"] = result["metrics"]
    if result.get("scoring_reason"):
        out["scoring_reason"] = result["scoring_reason"]
    return out


_SCORERS: dict[str, Any] = {}


def load_scorer(spec: Any) -> Any:
    """The scoring function a case's saved `scoring` spec names (loaded once), or None."""
    if spec is None:
        return None
    from ..hashing import canonical_json
    from .code import parse_code_target

    key = canonical_json(spec)
    if key not in _SCORERS:
        _SCORERS[key] = parse_code_target(dict(spec) if isinstance(spec, dict) else spec, "scoring")["_fn"]
    return _SCORERS[key]


def scored_case(case: Any, grades: list[dict]) -> bool:
    """Whether an attempt of this case records a score (threshold, scoring, weights, metrics)."""
    return case.threshold is not None or case.scoring is not None or any(
        "weight" in g or "metric" in g or g.get("named_scores") for g in grades)
