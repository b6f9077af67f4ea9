"""Summary figures for model-graded evaluation, from attempts (and pairwise judgments) alone:
judge usage kept apart from the subjects', judge failures counted apart, self-agreement,
pointwise per-dimension means, dQ (the mean paired quality difference between two variants,
with a Student t 95% interval on the per-case differences) and pairwise results with
position consistency."""

from __future__ import annotations

import math
from collections import defaultdict
from fractions import Fraction
from typing import Any

from ..record.constants import JUDGE_GRADER_NAMES as _MODEL_GRADERS
from ..record.constants import NOT_SHOWN
from .comparison import comparison_flags, power_figures
from .intervals import binom_two_sided_p, bootstrap_seed
from .measurements import MeasureAccumulator, measurement_summary
from .methods import exact_mean, mean_interval

#: model graders that grade one attempt (pairwise judging is recorded apart)
JUDGE_GRADERS = tuple(sorted(_MODEL_GRADERS - {"pairwise"}))


def _judge_grades(attempt: dict):
    for g in attempt.get("grades") or ():
        if g.get("grader") in JUDGE_GRADERS:
            yield g


class JudgeAccumulator:
    """The judge figures of a run, updated one attempt at a time (any order: every figure is
    recomputed the same way from the report's attempts by `verify`)."""

    def __init__(self, plan: dict):
        self.plan = plan
        self.variants = [v["name"] for v in plan["variants"]]
        names = self.variants
        self.usage: dict[str, dict[str, MeasureAccumulator]] = {v: defaultdict(MeasureAccumulator) for v in names}
        self.failures: dict[str, int] = defaultdict(int)
        self.judged: dict[str, int] = defaultdict(int)
        self.no_majority: dict[str, int] = defaultdict(int)
        self.agreement: dict[str, list[float]] = defaultdict(list)
        # variant -> dimension -> [sum, count] of the integer scores
        self.dims: dict[str, dict[str, list[int]]] = {v: defaultdict(lambda: [0, 0]) for v in names}
        # variant -> dimension -> case -> [sum, count] (runs of one case are averaged before any interval)
        self.dim_cases: dict[str, dict[str, dict[str, list[int]]]] = {
            v: defaultdict(lambda: defaultdict(lambda: [0, 0])) for v in names}
        # variant -> case -> run -> mean score of that attempt (summed in run order, as the report lists them)
        self.quality: dict[str, dict[str, dict[int, float]]] = {v: defaultdict(dict) for v in names}
        # variant -> (low, high) scale -> case -> [sum, count] of rubric-score scores on their scale
        self.rubric: dict[str, dict[tuple, dict[str, list[float]]]] = {
            v: defaultdict(lambda: defaultdict(lambda: [0.0, 0])) for v in names}
        #: variant -> label -> choice -> attempts: record-only classify grades (OpenAI Evals'
        #: counts/<choice>); the key "" counts those with no choice (judge failure, no majority)
        self.choices: dict[str, dict[str, dict[str, int]]] = {v: defaultdict(lambda: defaultdict(int)) for v in names}
        self.any_judge = False

    def add(self, a: dict) -> None:
        """Count the judge grades of one attempt."""
        v = a["variant"]
        if v not in self.usage:
            return
        for g in _judge_grades(a):
            self.any_judge = True
            info = g.get("judge") or {}
            if g.get("record_only"):
                choice = g.get("choice")
                self.choices[v][str(g.get("label") or g["grader"])][choice if isinstance(choice, str) else ""] += 1
            if g.get("judge_failure"):
                self.failures[v] += 1
            elif g.get("passed") is not None or (g.get("record_only") and isinstance(g.get("choice"), str)):
                self.judged[v] += 1
            elif info:
                # The judge answered but its runs split evenly: not assessed, counted apart.
                self.no_majority[v] += 1
            u = info.get("usage")
            if u:
                for key in ("requests", "input_tokens", "output_tokens", "cost_usd"):
                    self.usage[v][key].add(u.get(key))
            if info.get("self_agreement") is not None:
                self.agreement[v].append(info["self_agreement"])
            if g["grader"] == "pointwise" and g.get("scores"):
                for d, s in g["scores"].items():
                    for slot in (self.dims[v][d], self.dim_cases[v][d][a["case_id"]]):
                        slot[0] += s
                        slot[1] += 1
                total = sum(g["scores"].values())
                # exact (1, 2, 2 over 3 dimensions is 5/3) where the scores are numbers a fraction holds
                self.quality[v][a["case_id"]][a["run"]] = (Fraction(total) / len(g["scores"]) if math.isfinite(total)
                                                           else total / len(g["scores"]))
            scale = g.get("scale")
            if g["grader"] == "rubric-score" and _number(g.get("rubric_score")) and isinstance(scale, list) \
                    and len(scale) == 2 and all(_number(x) for x in scale):
                slot = self.rubric[v][(scale[0], scale[1])][a["case_id"]]
                slot[0] += g["rubric_score"]
                slot[1] += 1

    def summary(self, pairwise: dict | None = None) -> dict | None:
        """None when no model grader ran; else usage, failures, agreement, pointwise, dQ, pairwise."""
        if not self.any_judge and not pairwise:
            return None
        seed = bootstrap_seed(self.plan)
        out: dict[str, Any] = {"variants": {}}
        for v in self.variants:
            agreement = self.agreement[v]
            block = {"judged": self.judged[v], "judge_failures": self.failures[v],
                     "no_majority": self.no_majority[v],
                     "usage": {k: acc.summary() for k, acc in sorted(self.usage[v].items())},
                     "self_agreement": (math.fsum(agreement) / len(agreement)) if agreement else None}
            if self.choices[v]:
                block["choices"] = {label: choice_counts(per) for label, per in sorted(self.choices[v].items())}
            if self.dims[v]:
                # The case is the unit of the mean as of its interval: runs of a case are
                # averaged first, then the cases (exactly, rounded once).
                exact = {d: [Fraction(s) / n if math.isfinite(s) else s / n for s, n in per_case.values() if n]
                         for d, per_case in sorted(self.dim_cases[v].items())}
                block["pointwise"] = {d: exact_mean(m) for d, m in exact.items() if m}
                block["pointwise_ci"] = {d: _case_mean_interval(per_case, seed)
                                         for d, per_case in sorted(self.dim_cases[v].items())}
            if self.rubric[v]:
                block["rubric_scores"] = {f"{low:g}-{high:g}": rubric_mean(per_case, low, high)
                                          for (low, high), per_case in sorted(self.rubric[v].items())}
                if len(self.rubric[v]) == 1:  # one scale: the figure gates and the lead read (issue 17)
                    ((low, high), _), = self.rubric[v].items()
                    (r,) = block["rubric_scores"].values()
                    block["rubric"] = {"mean": r["mean"], "scale": [low, high], "cases": r["cases"],
                                       "ci": {**r["ci"], "small_sample": r["small_sample"]} if r["ci"] else None}
            out["variants"][v] = block
        quality = {v: {c: _in_run_order(runs) for c, runs in per.items()} for v, per in self.quality.items()}
        dq = []
        for i, a in enumerate(self.variants):
            for b in self.variants[i + 1:]:
                common = sorted(set(quality[a]) & set(quality[b]))
                if not common:
                    continue
                # each run's mean over dimensions and each case's mean over runs as exact
                # fractions, so dQ is rounded once (a --min-dq exactly met passes)
                exact = [_exact_mean_of(quality[a][c]) - _exact_mean_of(quality[b][c]) for c in common]
                diffs = [float(d) for d in exact]
                dq.append({"a": a, "b": b, "cases": len(common), "dq": exact_mean(exact),
                           "ci": mean_interval(diffs, -3.0, 3.0),
                           "detectable_difference": power_figures(diffs, scale=3.0),
                           "scale": "0-3 mean over dimensions",
                           "small_sample": len(common) < 30,
                           "flags": _dq_flags(len(common), len(self.variants))})
        if dq:
            out["dq"] = dq
        if pairwise:
            out["pairwise"] = pairwise_summary(self.plan, pairwise)
        return out


def choice_counts(per: dict[str, int]) -> dict:
    """A record-only classify grader's figures in one variant: how often the judge picked each
    choice, over how many grades, and how many gave no choice (counted apart, never dropped)."""
    counts = {c: n for c, n in sorted(per.items()) if c}
    return {"counts": counts, "no_choice": per.get("", 0), "attempts": sum(per.values())}


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def rubric_mean(per_case: dict[str, list[float]], low: float, high: float) -> dict:
    """The mean rubric score of a variant on its scale (1-5), the case as the unit: each case's
    judged runs are averaged first, then a Student t interval over the cases (stats.methods)."""
    means = [s / n for s, n in per_case.values() if n]
    mean = exact_mean(Fraction(s) / n if math.isfinite(s) else s / n for s, n in per_case.values() if n)
    return {"mean": mean, "cases": len(means), "scores": sum(n for _, n in per_case.values()),
            "ci": mean_interval(means, float(low), float(high)), "small_sample": len(means) < 30}


def _exact_mean_of(values: list[float]) -> Fraction | float:
    """A case's runs averaged exactly (a float that is no fraction, NaN, as it is)."""
    if all(math.isfinite(v) for v in values):
        return sum(map(Fraction, values), Fraction(0)) / len(values)
    return math.fsum(values) / len(values)


def _in_run_order(runs: dict[int, float]) -> list[float]:
    return [runs[r] for r in sorted(runs)]


def judge_summary(plan: dict, attempts, pairwise: dict | None = None) -> dict | None:
    """None when no model grader ran; else usage, failures, agreement, pointwise, dQ, pairwise."""
    acc = JudgeAccumulator(plan)
    for a in attempts:
        acc.add(a)
    return acc.summary(pairwise)


def _case_mean_interval(per_case: dict[str, list[int]], seed=None) -> dict | None:
    """95% interval of a dimension's mean score with the case as the unit: each case's runs
    are averaged, then a t interval over the cases (stats.methods)."""
    means = [s / n for s, n in per_case.values() if n]
    ci = mean_interval(means, 0.0, 3.0)
    if ci is None:
        return None
    return {**ci, "small_sample": len(means) < 30}


def _dq_flags(cases: int, variants: int) -> list[str]:
    flags = []
    if cases < 30:
        flags.append("small sample: fewer than 30 cases")
    if variants > 2:
        flags.append("exploratory, no correction for multiple comparisons")
    return flags


def pairwise_summary(plan: dict, pairwise: dict) -> list[dict]:
    """Per pair: per-case wins (runs averaged first), ties, sign test, position consistency."""
    by_pair: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for j in pairwise.get("judgments", []):
        by_pair[(j["a"], j["b"])].append(j)
    out = []
    for (a, b), items in by_pair.items():
        per_case: dict[str, list[int]] = defaultdict(list)
        consistent = asked = failed = unshown = 0
        usage: dict[str, list] = defaultdict(list)
        for j in items:
            for u in j.get("usage") or ():
                for key in ("requests", "input_tokens", "output_tokens", "cost_usd"):
                    usage[key].append(u.get(key))
            if j.get("verdict") is None:
                if not j.get("usage") and str(j.get("failure") or "").startswith(NOT_SHOWN):
                    unshown += 1  # never sent to the judge: not the judge's failure
                else:
                    failed += 1
                continue
            asked += 1
            consistent += bool(j.get("consistent"))
            per_case[j["case_id"]].append(1 if j["verdict"] == a else -1 if j["verdict"] == b else 0)
        a_wins = sum(1 for s in per_case.values() if sum(s) > 0)
        b_wins = sum(1 for s in per_case.values() if sum(s) < 0)
        flags = comparison_flags(len(per_case), a_wins + b_wins, len(by_pair) > 1)
        if failed:
            # Every rendering shows a pair's flags: a comparison the judge could not decide is
            # visible there, not only in the count.
            flags.append(f"{failed} comparison{'s' if failed != 1 else ''} not assessed (judge failure or "
                         "no majority)")
        if unshown:
            flags.append(f"{unshown} comparison{'s' if unshown != 1 else ''} not judged: an output had no "
                         "screenshot to show (it did not render)")
        planned = len(plan.get("cases") or ())
        seen = len({j["case_id"] for j in items})
        if seen < planned:  # never asked: a variant had no output there, or the run stopped first
            left = planned - seen
            flags.append(f"{left} of {planned} planned case{'s' if planned != 1 else ''} never compared (a variant "
                         "had no output there, or the run stopped first)")
        out.append({"a": a, "b": b, "cases": len(per_case), "a_wins": a_wins, "b_wins": b_wins,
                    "ties": len(per_case) - a_wins - b_wins, "comparisons": asked, "judge_failures": failed,
                    "position_consistency": consistent / asked if asked else None,
                    # Nothing compared: no test to report (never a p of 1 made from no data).
                    "sign_test_p": binom_two_sided_p(a_wins, a_wins + b_wins) if per_case else None,
                    "usage": {k: measurement_summary(v) for k, v in sorted(usage.items())},
                    "note": "a verdict that flips when the order is swapped counts as a tie",
                    "small_sample": len(per_case) < 30,
                    "flags": flags})
    return out
