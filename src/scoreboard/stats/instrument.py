"""The judge's instrument check, from the check stage's attempts (and pairwise judgments)
alone, so `verify` recomputes it. Controls are cases; conditions are variants: the good output
first, then its degraded copies; each control was judged `repeats` times (the runs).

    accuracy        the share of (control, degraded condition) pairs where the judge's mean
                    score of the good output is above the degraded one's (a tie is not above);
                    every pair of every control that ran counts: a pair the judge left unjudged
                    (no usable answer on either side, in every repeat) is not above either, and
                    is counted in `unjudged_pairs`, so a judge that fails on the controls cannot
                    pass on the few it judged; Wilson 95% interval, pairs taken as independent
                    units (pairs of one control share its good output: the interval is
                    optimistic, and says so)
    self_agreement  the share of (control, condition) whose repeated judgments all gave the
                    same answer (every dimension's score); one whose repeats were judged only
                    in part (a judge failure beside an answer) did not agree; one never judged
                    is left to accuracy
    position        pairwise mode: how often the judge chose the answer in the first slot,
                    over both orders of every comparison; exact two-sided binomial test
                    against one half; biased when p < position_alpha and the share is above it
    pairwise_accuracy  pairwise mode: the share of comparisons whose verdict (kept in both
                    orders) was the good output

The instrument passes when accuracy >= min_accuracy and self_agreement >= min_self_agreement
(pointwise), and the judge shows no first-position bias and pairwise_accuracy >= min_accuracy
(pairwise).
"""

from __future__ import annotations

import json
import math
from collections import defaultdict

from ..record.constants import JUDGE_GRADER_NAMES
from .intervals import binom_two_sided_p
from .methods import wilson

NOTE = ("pairs of one control share its good output, so they are not independent: the interval, "
        "computed as if they were, is optimistic")


def _signature(grade: dict):
    """What the judge answered, for self-agreement, and the number it is ranked by."""
    if grade.get("scores"):
        scores = grade["scores"]
        return json.dumps(scores, sort_keys=True), math.fsum(scores.values()) / len(scores)
    if grade.get("score") is None:
        return None, None
    return json.dumps(grade["score"]), float(grade["score"])


class InstrumentAccumulator:
    """Per (condition, control): the judge's answers over the repeats."""

    def __init__(self, plan: dict):
        self.settings = plan["instrument"]
        self.variants = [v["name"] for v in plan["variants"]]
        self.answers: dict[str, dict[str, dict[int, tuple]]] = defaultdict(lambda: defaultdict(dict))
        self.failed = 0
        #: every control an attempt was made for (judged or not): the pairs accuracy is over
        self.controls: set[str] = set()
        #: (condition, control) pairs with a repeat the judge gave no usable answer on
        self.failed_units: set[tuple[str, str]] = set()

    def add(self, a: dict) -> None:
        self.controls.add(a["case_id"])
        grade = next((g for g in a.get("grades") or () if g.get("grader") in JUDGE_GRADER_NAMES), None)
        if grade is None:
            return
        sig, value = _signature(grade) if grade.get("passed") is not None or grade.get("scores") else (None, None)
        if value is None:
            self.failed += 1
            self.failed_units.add((a["variant"], a["case_id"]))
            return
        self.answers[a["variant"]][a["case_id"]][a["run"]] = (sig, value)

    def summary(self, pairwise: dict | None) -> dict:
        s = self.settings
        out: dict = {"judge_hash": s["judge_hash"], "grader": s.get("grader"), "repeats": s["repeats"],
                     "conditions": self.variants, "reasons": []}
        ok = True
        if s.get("grader") is not None:
            out["accuracy"] = self._accuracy()
            out["self_agreement"] = self._agreement()
            out["judge_failures"] = self.failed
            acc, agree = out["accuracy"], out["self_agreement"]
            if acc["value"] is None or acc["value"] < s["min_accuracy"]:
                ok = False
                out["reasons"].append(_accuracy_reason(acc, s["min_accuracy"]))
            if agree["value"] is None or agree["value"] < s["min_self_agreement"]:
                ok = False
                shown = "nothing repeated" if agree["value"] is None else f"{agree['value']:.1%}"
                out["reasons"].append(f"self-agreement {shown} (needs {s['min_self_agreement']:.0%})")
        if s.get("pairwise"):
            position, accuracy = _position(pairwise or {}, self.variants[0], s["position_alpha"])
            out["position"], out["pairwise_accuracy"] = position, accuracy
            if position["biased"]:
                ok = False
                out["reasons"].append(f"prefers the first position: chose it in {position['first_share']:.1%} of "
                                      f"{position['answers']} answers (p={position['p']:.3g})")
            if accuracy["value"] is None or accuracy["value"] < s["min_accuracy"]:
                ok = False
                shown = "no comparison judged" if accuracy["value"] is None else f"{accuracy['value']:.1%}"
                left = accuracy["unjudged_pairs"]
                left = f", {left} not judged, which count as not chosen" if left and accuracy["value"] is not None \
                    else ""
                out["reasons"].append(f"pairwise: chose the good output in {shown} of comparisons{left} "
                                      f"(needs {s['min_accuracy']:.0%})")
        out["passed"] = ok
        out["status"] = "passed" if ok else "failed"
        return out

    def _accuracy(self) -> dict:
        good = self.variants[0]
        correct = pairs = ties = missing = 0
        for cond in self.variants[1:]:
            for case in self.controls:
                pairs += 1
                runs = self.answers.get(good, {}).get(case)
                other = self.answers.get(cond, {}).get(case)
                if not runs or not other:
                    missing += 1  # counted, and not above: a judge failure is no ranking
                    continue
                g = math.fsum(v for _, v in runs.values()) / len(runs)
                d = math.fsum(v for _, v in other.values()) / len(other)
                correct += g > d
                ties += g == d
        return _share(correct, pairs, {"ties": ties, "unjudged_pairs": missing, "note": NOTE})

    def _agreement(self) -> dict:
        agree = total = 0
        repeats = self.settings["repeats"]
        for cond, per_case in self.answers.items():
            for case, runs in per_case.items():
                partial = (cond, case) in self.failed_units
                if repeats < 2 or (len(runs) < 2 and not partial):
                    continue
                total += 1  # an answer beside a judge failure is not the same answer every time
                agree += not partial and len({sig for sig, _ in runs.values()}) == 1
        return _share(agree, total, {"unit": "control x condition, all repeats identical"})


def _accuracy_reason(acc: dict, needed: float) -> str:
    if acc["value"] is None:
        return f"no control was judged (needs good above degraded on {needed:.0%} of pairs)"
    unjudged = acc["unjudged_pairs"]
    left = (f"; {unjudged} pair{'s' if unjudged != 1 else ''} not judged, which count as not above"
            if unjudged else "")
    return (f"ranked good above degraded on {acc['value']:.1%} of {acc['of']} pairs{left} "
            f"(needs {needed:.0%})")


def _share(k: int, n: int, extra: dict) -> dict:
    if not n:
        return {"value": None, "count": 0, "of": 0, "ci": None, **extra}
    low, high = wilson(k / n, n)
    return {"value": k / n, "count": k, "of": n,
            "ci": {"low": low, "high": high, "level": 0.95, "method": "wilson", "small_sample": n < 30}, **extra}


def _position(pairwise: dict, good: str, alpha: float) -> tuple[dict, dict]:
    first = answers = right = judged = unjudged = 0
    for j in pairwise.get("judgments") or ():
        if j.get("verdict") is None:
            # counted, and not a pick of the good output (as a pointwise pair left unjudged is
            # not above): a judge that fails on all but the easy comparisons does not pass on those
            unjudged += 1
            continue
        judged += 1
        right += j.get("verdict") == good
        for value in (j.get("forward"), j.get("backward")):
            if value in ("A", "B"):
                answers += 1
                first += value == "A"
    p = binom_two_sided_p(first, answers) if answers else None
    share = first / answers if answers else None
    biased = p is not None and p < alpha and share > 0.5
    position = {"first_share": share, "answers": answers, "first": first, "p": p, "alpha": alpha,
                "biased": biased, "test": "exact two-sided binomial against 1/2 over both orders"}
    return position, _share(right, judged + unjudged, {"unit": "comparison (both orders; a flip counts as a tie)",
                                                       "unjudged_pairs": unjudged})
