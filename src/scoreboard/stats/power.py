"""Power before spending: what a planned run's paired comparison could detect, and how many
cases a given difference needs, from a pilot report's spread of per-case differences or from a
stated assumption. Pure functions of numbers and a report's plan and attempts."""

from __future__ import annotations

import math

from .comparison import difference_sd
from .baseline import case_outcomes
from .methods import ASSUMED_DIFFERENCE_SD, POWER, cases_needed, detectable_difference

ASSUMPTION = ("assumed: a pass/fail outcome on which two variants disagree on half the cases "
              "(the widest spread a 0/1 difference has around 0); give --pilot REPORT to measure it")
#: differences (in points of pass rate) the plan says the case count for, unless asked for others
DEFAULT_DIFFERENCES = (0.05, 0.10, 0.20)


def pilot_spread(report: dict) -> tuple[float | None, str]:
    """(SD of per-case differences, where it came from) from a pilot report: between its first
    two variants when it has two (runs of a case averaged first); with one variant, sqrt(2) x the
    spread of its per-case pass fractions (two independent variants that vary as much)."""
    variants = [v["name"] for v in report["plan"]["variants"]]
    outcomes = case_outcomes(report["attempts"])
    per = [{cid: p / n for cid, (p, n) in outcomes.get(name, {}).items() if n} for name in variants]
    if len(per) >= 2:
        common = [cid for cid in per[0] if cid in per[1]]
        sd = difference_sd([per[0][c] - per[1][c] for c in common])
        return sd, f"pilot: {variants[0]} vs {variants[1]} on {len(common)} cases"
    if per and len(per[0]) >= 2:
        sd = difference_sd(list(per[0].values()))
        return (None if sd is None else sd * math.sqrt(2)), f"pilot: one variant ({variants[0]}), sqrt(2) x its spread"
    return None, "pilot: too few judged cases to measure a spread"


def planned_power(cases: int, *, alpha: float, pilot: dict | None = None,
                  differences: tuple[float, ...] | list[float] | None = None) -> dict:
    """The planned run's detectable difference at 80% power and the cases each difference needs."""
    sd, source = (pilot_spread(pilot) if pilot is not None else (None, ASSUMPTION))
    if not sd:
        sd, source = ASSUMED_DIFFERENCE_SD, source if pilot is None else f"{source}; {ASSUMPTION}"
    wanted = list(differences or DEFAULT_DIFFERENCES)
    return {"test": "paired t on per-case differences", "power": POWER, "alpha": alpha, "cases": cases,
            "difference_sd": sd, "sd_from": source,
            "detectable_difference": detectable_difference(sd, cases, alpha, POWER),
            "cases_needed": [{"difference": d, "cases": cases_needed(d, sd, alpha, POWER)} for d in wanted]}
