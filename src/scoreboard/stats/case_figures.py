"""Figures of a variant built case by case: pass@k and pass^k, the pass rate by category,
and the naming of an interval whose unit is the conversation (stats/summary.py uses them)."""

from __future__ import annotations

import math
from typing import Any

from .counts import by_unit
from .intervals import rate
from .methods import computing_version, share_interval
from .methods import pass_rate_interval as rate_interval


def pass_at_k_figures(cases, runs: int, units: dict | None = None) -> tuple[dict, dict]:
    """pass@k and pass^k for k = 1..runs: the unbiased per-case estimators averaged over the
    cases judged at least k times, each with an interval by case (stats.methods.share_interval).
    With conversations (`units`), a conversation's turns are averaged first: it is one value."""
    at, hat = {}, {}
    if runs < 2:
        return at, hat
    counts = list(cases.items())
    for k in range(1, runs + 1):
        judged = [(cid, c, n) for cid, (c, n) in counts if n >= k]
        if not judged:
            continue
        # Each case's estimator as an integer over one common denominator, so the mean is the
        # exact one, rounded once (as Fractions were, at a tenth of their cost).
        den = math.lcm(*{math.comb(n, k) for _, _, n in judged})
        per_at = [(cid, (math.comb(n, k) - math.comb(n - c, k)) * (den // math.comb(n, k))) for cid, c, n in judged]
        per_hat = [(cid, math.comb(c, k) * (den // math.comb(n, k))) for cid, c, n in judged]
        # At most one case's worth of evidence per k runs of a case (stats.methods).
        most = sum(n / k for _, _, n in judged)
        for out, numerators in ((at, per_at), (hat, per_hat)):
            values, mean = _unit_shares(numerators, den, units)
            ci = share_interval(values, most=most)
            out[str(k)] = {"value": mean, "cases": len(values),
                           "ci": unit_named(ci, units) if computing_version() >= 20 else ci}
    return at, hat


def category_figures(tally: Any, cases, units: dict | None) -> dict:
    """Each category's pass rate over its attempts, and (version 20) its cases and an interval
    with the case (or conversation) as the unit, as the variant's own; with conversations, also
    its `units` (a conversation counting once, a case outside any as one)."""
    groups: dict[str, dict] = {}
    for cid, counts in cases.items():
        groups.setdefault(tally.categories.get(cid) or "uncategorised", {})[cid] = counts
    out = {}
    for k, (passed, attempts) in sorted(tally.by_cat.items()):
        out[k] = {"attempts": attempts, "passed": passed, "pass_rate": rate(passed, attempts)}
        if computing_version() >= 20:
            mine = groups.get(k, {})
            grouped = by_unit(mine, units)
            out[k].update(cases=len(mine), ci=unit_named(rate_interval(list(grouped.values())), units))
            if units:  # its units (a conversation counts once): what its interval and small sample count
                out[k]["units"] = len(grouped)
    return out


def _unit_shares(numerators: list[tuple[str, int]], den: int, units: dict | None) -> tuple[list[float], float]:
    """Per-case shares `numerator / den`, one conversation's turns averaged into one: the
    values (each the float nearest its exact share: int / int rounds once) and their exact
    mean, rounded once."""
    if units:
        grouped = by_unit({cid: (num, 1) for cid, num in numerators}, units).values()
    else:
        grouped = [(num, 1) for _, num in numerators]
    values = [total / (den * turns) for total, turns in grouped]
    # the mean of total_i / (den * turns_i) over the units, over the turns' common multiple
    common = math.lcm(*{turns for _, turns in grouped})
    mean = sum(total * (common // turns) for total, turns in grouped) / (den * common * len(values))
    return values, mean


def unit_named(ci: dict | None, units: dict | None) -> dict | None:
    """An interval whose unit is the conversation (a case outside any counts as its own)."""
    if ci is not None and units:
        ci["unit"] = "conversation"
    return ci
