"""Paired comparison of variants, case by case.

The unit is the case. Each case's repeats are first averaged per variant (so repetitions never
inflate the sample), and only cases judged in both variants are compared. Figures:

- wins / losses / ties by comparing the two per-case means; a two-sided exact sign test on the
  discordant cases (ties ignored);
- exact McNemar on per-case majority outcomes. A case's majority outcome is "pass" when its mean
  is strictly above 0.5; exactly half passing counts as fail, so a split case never counts as a
  pass. b01 = cases where a failed and b passed, b10 = a passed and b failed (index 0 = fail,
  1 = pass, first index a), as in statsmodels' mcnemar table [[n00, n01], [n10, n11]];
- the mean over cases of (a mean - b mean) with a seeded paired bootstrap percentile interval;
- the same for every graded field both variants have (per-case field accuracy over runs).
"""

from __future__ import annotations

import math
from typing import Any

from .intervals import LEVEL, binom_two_sided_p, bootstrap_interval

SMALL_CASES = 30
SMALL_DISCORDANT = 10
EXPLORATORY = "exploratory, no correction for multiple comparisons"


def differs_in(a: dict, b: dict) -> list[str]:
    """Which of subject / skill / params differ between two plan variant entries."""
    out = []
    if (a.get("subject") or {}) != (b.get("subject") or {}):
        out.append("subject")
    if a.get("skill_hash") != b.get("skill_hash"):
        out.append("skill")
    if (a.get("params") or {}) != (b.get("params") or {}):
        out.append("params")
    return out


def paired_stats(a: dict[str, list[int]], b: dict[str, list[int]], seed: Any) -> dict:
    """Case-level paired figures for two {case_id: [hits, tries]} tallies (common cases only)."""
    common = [cid for cid in a if cid in b and a[cid][1] and b[cid][1]]
    a_wins = b_wins = 0
    diffs = []
    for cid in common:
        (ha, na), (hb, nb) = a[cid], b[cid]
        # Exact comparison of ha/na with hb/nb, free of float rounding.
        lhs, rhs = ha * nb, hb * na
        a_wins += lhs > rhs
        b_wins += lhs < rhs
        diffs.append(ha / na - hb / nb)
    n = len(common)
    return {
        "cases": n, "a_wins": a_wins, "b_wins": b_wins, "ties": n - a_wins - b_wins,
        "sign_test_p": binom_two_sided_p(a_wins, a_wins + b_wins),
        "mean_difference": math.fsum(diffs) / n if n else None,
        "mean_difference_ci": _ci(diffs, seed),
    }


def _ci(diffs: list[float], seed: Any) -> dict | None:
    interval = bootstrap_interval(diffs, seed=seed)
    if interval is None:
        return None
    return {"low": interval[0], "high": interval[1], "level": LEVEL, "method": "paired-bootstrap"}


def mcnemar(a: dict[str, list[int]], b: dict[str, list[int]]) -> dict:
    """Exact McNemar on per-case majority outcomes (mean > 0.5 passes; exactly 0.5 fails)."""
    b01 = b10 = 0
    for cid, (ha, na) in a.items():
        if cid not in b or not na or not b[cid][1]:
            continue
        hb, nb = b[cid]
        pass_a, pass_b = 2 * ha > na, 2 * hb > nb
        b01 += (not pass_a) and pass_b
        b10 += pass_a and not pass_b
    return {"b01": b01, "b10": b10, "p": binom_two_sided_p(b01, b01 + b10)}


def _p(p: float) -> str:
    return f"{p:.2g}"


def headline(a: str, b: str, stats: dict, flags: list[str]) -> str:
    """One plain-English line for a pair."""
    if not stats["cases"]:
        return f"{a} vs {b}: no case was judged in both variants, nothing to compare"
    n = stats["a_wins"]
    text = (f"{a} vs {b}: {a} better on {n} case{'s' if n != 1 else ''}, worse on {stats['b_wins']}, "
            f"{stats['ties']} tie{'s' if stats['ties'] != 1 else ''}; sign test p={_p(stats['sign_test_p'])}")
    small = [f for f in flags if f.startswith("small sample")]
    if small:
        text += f" ({'; '.join(small)})"
    return text


def _flags(cases: int, discordant: int, multiple: bool) -> list[str]:
    flags = []
    if cases == 0:
        flags.append("no case was judged in both variants")
    if cases < SMALL_CASES:
        flags.append(f"small sample: fewer than {SMALL_CASES} cases")
    if discordant < SMALL_DISCORDANT:
        flags.append(f"small sample: fewer than {SMALL_DISCORDANT} discordant pairs")
    if multiple:
        flags.append(EXPLORATORY)
    return flags


def compare_variants(variants: list[dict], tallies: dict[str, dict], field_tallies: dict[str, dict],
                     seed: Any) -> list[dict]:
    """One comparison per pair of plan variants (a before b in plan order); [] with one variant."""
    pairs = [(variants[i], variants[j]) for i in range(len(variants)) for j in range(i + 1, len(variants))]
    out = []
    for va, vb in pairs:
        a, b = va["name"], vb["name"]
        stats = paired_stats(tallies.get(a, {}), tallies.get(b, {}), seed)
        fa, fb = field_tallies.get(a, {}), field_tallies.get(b, {})
        fields = {}
        for key in sorted(set(fa) & set(fb)):
            fs = paired_stats(fa[key], fb[key], seed)
            if fs["cases"]:  # a field graded on no common case is not tested, so not listed
                fields[key] = fs
        discordant = stats["a_wins"] + stats["b_wins"]
        flags = _flags(stats["cases"], discordant, len(pairs) > 1 or len(fields) > 1)
        out.append({
            "a": a, "b": b, "differs_in": differs_in(va, vb),
            "cases": stats["cases"], "a_wins": stats["a_wins"], "b_wins": stats["b_wins"],
            "ties": stats["ties"], "discordant": discordant, "sign_test_p": stats["sign_test_p"],
            "mcnemar": mcnemar(tallies.get(a, {}), tallies.get(b, {})),
            "mean_difference": stats["mean_difference"], "mean_difference_ci": stats["mean_difference_ci"],
            "fields": fields, "flags": flags, "headline": headline(a, b, stats, flags),
        })
    return out
