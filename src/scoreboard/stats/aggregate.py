"""The figures of an aggregate over stages (issue 17): which variant the screen picked, and
whether the held-out stage confirms it on cases the screen did not see. Pure functions of the
stage reports' plans, attempts and summaries (plain data); the screen's figures and the held-out
figures are never pooled.

The primary figure is dQ (blind pointwise quality, first minus second, 0-3) when the screen's
summary has one, else the pass rate. The pick is the variant ahead of every other on it; the
runner-up is the one closest behind. The confirmation is the held-out paired comparison of the
pick against the runner-up: confirmed when it favours the pick and its 95% interval excludes no
difference, on held-out cases disjoint from the screened ones."""

from __future__ import annotations

import math
from typing import Any

from .comparison import SMALL_CASES, p_text
from .intervals import binom_two_sided_p
from .judges import JudgeAccumulator

#: verdicts of the confirmation, in words a report leads with
VERDICTS = {
    "confirmed": "CONFIRMED on the held-out cases",
    "not-confirmed": "NOT CONFIRMED on the held-out cases",
    "reversed": "REVERSED on the held-out cases",
    "not-comparable": "NOT COMPARABLE: the held-out stage has no figure for this pair",
    "not-independent": "NOT INDEPENDENT: the held-out stage ran cases the screen saw",
    "no-pick": "no pick: the screen did not separate the variants",
}


def primary_figure(summary: dict) -> str:
    """`dq` when the summary has pointwise quality differences, else `pass_rate`."""
    return "dq" if ((summary.get("judges") or {}).get("dq")) else "pass_rate"


def _flip_interval(ci: dict | None) -> dict | None:
    if not ci or ci.get("low") is None:
        return ci
    return {**ci, "low": -ci["high"], "high": -ci["low"]}


def dq_of(summary: dict, a: str, b: str) -> dict | None:
    """The summary's dQ entry for a minus b (turned round when it records b minus a)."""
    for item in ((summary.get("judges") or {}).get("dq")) or ():
        if (item["a"], item["b"]) == (a, b):
            return dict(item)
        if (item["a"], item["b"]) == (b, a):
            return {**item, "a": a, "b": b, "dq": -item["dq"], "ci": _flip_interval(item.get("ci"))}
    return None


def comparison_of(summary: dict, a: str, b: str) -> dict | None:
    """The summary's paired pass-rate comparison of a against b (turned round when needed)."""
    for item in summary.get("comparisons") or ():
        if (item["a"], item["b"]) == (a, b):
            return dict(item)
        if (item["a"], item["b"]) == (b, a):
            out = {**item, "a": a, "b": b, "a_wins": item["b_wins"], "b_wins": item["a_wins"],
                   "mean_difference": None if item.get("mean_difference") is None else -item["mean_difference"],
                   "mean_difference_ci": _flip_interval(item.get("mean_difference_ci"))}
            if item.get("mcnemar"):
                out["mcnemar"] = {**item["mcnemar"], "b01": item["mcnemar"]["b10"], "b10": item["mcnemar"]["b01"]}
            return out
    return None


def pick(summary: dict, variants: list[str], figure: str) -> dict:
    """The screen's pick on `figure`: the variant ahead of every other, and the runner-up closest
    behind it; `variant` None (with `why`) when no variant is ahead of all the others."""
    if len(variants) < 2:
        return {"figure": figure, "variant": None, "runner_up": None, "margin": None,
                "why": "the screen ran fewer than two variants"}
    if figure == "dq":
        gaps = {v: {w: (dq_of(summary, v, w) or {}).get("dq") for w in variants if w != v} for v in variants}
    else:
        rates = {v: ((summary.get("variants") or {}).get(v) or {}).get("pass_rate") for v in variants}
        gaps = {v: {w: None if rates[v] is None or rates[w] is None else rates[v] - rates[w]
                    for w in variants if w != v} for v in variants}
    for v in variants:
        known = [g for g in gaps[v].values() if g is not None]
        if len(known) == len(variants) - 1 and all(g > 1e-12 for g in known):
            runner = min(gaps[v], key=lambda w: (gaps[v][w], variants.index(w)))
            return {"figure": figure, "variant": v, "runner_up": runner, "margin": gaps[v][runner], "why": None}
    what = "dQ" if figure == "dq" else "pass rate"
    return {"figure": figure, "variant": None, "runner_up": None, "margin": None,
            "why": f"no variant is ahead of every other on {what} (a tie, or a figure unknown)"}


def case_quality_differences(plan: dict, attempts: list[dict], a: str, b: str) -> list[float]:
    """Per case (in plan order), a's blind pointwise quality minus b's, runs averaged first:
    the differences dQ is the mean of."""
    acc = JudgeAccumulator(plan)
    for attempt in attempts:
        acc.add(attempt)
    qa, qb = acc.quality.get(a, {}), acc.quality.get(b, {})
    out = []
    for case in plan["cases"]:
        cid = case["id"]
        if qa.get(cid) and qb.get(cid):
            ra, rb = list(qa[cid].values()), list(qb[cid].values())
            out.append(math.fsum(ra) / len(ra) - math.fsum(rb) / len(rb))
    return out


def case_rate_differences(attempts: list[dict], a: str, b: str) -> list[float]:
    """Per case judged in both, a's pass rate over its runs minus b's (as the summary pairs them)."""
    tally: dict[str, dict[str, list[int]]] = {a: {}, b: {}}
    for attempt in attempts:
        v = attempt.get("variant")
        if v in tally and attempt.get("status") in ("passed", "failed", "error"):
            slot = tally[v].setdefault(attempt["case_id"], [0, 0])
            slot[0] += attempt["status"] == "passed"
            slot[1] += 1
    return [tally[a][c][0] / tally[a][c][1] - tally[b][c][0] / tally[b][c][1]
            for c in tally[a] if c in tally[b]]


def paired_tests(diffs: list[float]) -> dict:
    """The paired t test (scipy's one-sample t on the per-case differences) and the exact sign
    test; a test that is undefined (fewer than two cases, no spread) is null with its reason."""
    from scipy import stats as sps

    pos = sum(d > 1e-12 for d in diffs)
    neg = sum(d < -1e-12 for d in diffs)
    out: dict[str, Any] = {"cases": len(diffs), "t_test_p": None, "t_test_why": None, "t_statistic": None,
                           "sign_test_p": binom_two_sided_p(pos, pos + neg) if pos + neg else None,
                           "positive": pos, "negative": neg, "zero": len(diffs) - pos - neg}
    mean = math.fsum(diffs) / len(diffs) if diffs else 0.0
    if len(diffs) < 2:
        out["t_test_why"] = "fewer than two cases"
    elif math.fsum((d - mean) ** 2 for d in diffs) <= 1e-24:
        out["t_test_why"] = "every case differs by the same amount: no spread to test against"
    else:
        res = sps.ttest_1samp(diffs, 0.0)
        out["t_test_p"], out["t_statistic"] = float(res.pvalue), float(res.statistic)
    return out


def verdict(value: float | None, ci: dict | None, overlap: int) -> str:
    """confirmed, not-confirmed, reversed, not-comparable or not-independent (see VERDICTS)."""
    if value is None:
        return "not-comparable"
    if overlap:
        return "not-independent"
    low, high = (ci or {}).get("low"), (ci or {}).get("high")
    if value > 0 and low is not None and low > 0:
        return "confirmed"
    if value < 0 and high is not None and high < 0:
        return "reversed"
    return "not-confirmed"


def confirmation(heldout: dict, chosen: dict, overlap: int) -> dict:
    """The held-out stage's paired comparison of the pick against the runner-up, with its
    interval, its tests and the verdict in words. `heldout` is the held-out report (plain data)."""
    figure, a, b = chosen["figure"], chosen["variant"], chosen["runner_up"]
    if a is None:
        return {"verdict": "no-pick", "confirmed": False, "figure": figure, "value": None, "ci": None,
                "tests": None, "cases": 0, "small_sample": True, "flags": [], "words": VERDICTS["no-pick"]}
    summary = heldout["summary"]
    if figure == "dq":
        found = dq_of(summary, a, b)
        value, ci = (found or {}).get("dq"), (found or {}).get("ci")
        flags = list((found or {}).get("flags") or [])
        diffs = case_quality_differences(heldout["plan"], heldout["attempts"], a, b) if found else []
    else:
        found = comparison_of(summary, a, b)
        value, ci = (found or {}).get("mean_difference"), (found or {}).get("mean_difference_ci")
        flags = list((found or {}).get("flags") or [])
        diffs = case_rate_differences(heldout["attempts"], a, b) if found else []
    tests = paired_tests(diffs) if found and diffs else None
    if tests is not None and figure == "pass_rate":
        tests["mcnemar_p"] = (found.get("mcnemar") or {}).get("p")
    cases = len(diffs)
    small = cases < SMALL_CASES
    if small and not any(f.startswith("small sample") for f in flags):
        flags.insert(0, f"small sample: fewer than {SMALL_CASES} cases")
    kind = verdict(value, ci, overlap)
    return {"verdict": kind, "confirmed": kind == "confirmed", "figure": figure, "value": value, "ci": ci,
            "tests": tests, "cases": cases, "small_sample": small, "flags": flags,
            "words": confirmation_words(kind, chosen, value, ci, cases, overlap)}


def _shown(figure: str, value: float) -> str:
    return f"{value:+.2f}" if figure == "dq" else f"{value * 100:+.1f} points"


def confirmation_words(kind: str, chosen: dict, value: float | None, ci: dict | None, cases: int,
                       overlap: int) -> str:
    """The verdict in one honest sentence."""
    a, b, figure = chosen["variant"], chosen["runner_up"], chosen["figure"]
    head = VERDICTS[kind]
    if kind in ("no-pick", "not-comparable"):
        return head
    what = "dQ" if figure == "dq" else "pass-rate difference"
    interval = ""
    if ci and ci.get("low") is not None:
        interval = f" (95% CI {_shown(figure, ci['low'])} to {_shown(figure, ci['high'])})"
    text = f"{head}: {what} {a} - {b} {_shown(figure, value)}{interval} on {cases} held-out cases"
    if kind == "not-independent":
        return text + f"; {overlap} of them were screened, so this is no confirmation on unseen cases"
    if kind == "not-confirmed":
        side = "favours" if value > 0 else "does not favour"
        text += f"; it {side} {a}, but the interval includes no difference"
        if cases < SMALL_CASES:
            text += f": too few held-out cases to confirm (fewer than {SMALL_CASES})"
    elif kind == "reversed":
        text += f"; {b} is ahead on the cases the screen did not see"
    elif cases < SMALL_CASES:
        text += f" (small sample: fewer than {SMALL_CASES} cases)"
    return text


def disjoint(screen_cases: list[dict], heldout_cases: list[dict]) -> dict:
    """Whether the held-out cases are disjoint from the screened ones by input hash (the same
    input under another id counts as seen); the overlap named case by case."""
    seen: dict[str, str] = {}
    for c in screen_cases:
        seen.setdefault(c.get("input_hash"), c["id"])
    overlap = [{"heldout": c["id"], "screen": seen[c.get("input_hash")], "input_hash": c.get("input_hash")}
               for c in heldout_cases if c.get("input_hash") in seen]
    return {"disjoint": not overlap, "screen_cases": len(screen_cases), "heldout_cases": len(heldout_cases),
            "overlap": overlap}


def tests_text(tests: dict | None) -> str:
    """`paired t p=0.0123; sign test p=0.2500 (3 of 3 cases ahead)` for the renderings."""
    if not tests:
        return "no paired test (no case in both variants)"
    t = f"paired t {p_text(tests['t_test_p'])}" if tests["t_test_p"] is not None \
        else f"paired t undefined ({tests['t_test_why']})"
    sign = f"sign test {p_text(tests['sign_test_p'])}" if tests["sign_test_p"] is not None \
        else "sign test undefined (no case differs)"
    extra = f"; McNemar {p_text(tests['mcnemar_p'])}" if tests.get("mcnemar_p") is not None else ""
    return f"{t}; {sign} ({tests['positive']} of {tests['cases']} cases ahead, {tests['negative']} behind){extra}"
