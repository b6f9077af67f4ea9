"""Power before spending: what a planned run's paired comparison could detect, and how many
cases a given difference needs, from a pilot report's spread of per-case differences or from a
stated assumption. Pure functions of numbers and a report's plan and attempts."""

from __future__ import annotations

import math

from ..words import plural
from .baseline import case_outcomes
from .comparison import difference_sd
from .methods import ASSUMED_DIFFERENCE_SD, POWER, cases_needed, detectable_difference

ASSUMPTION = ("assumed: a pass/fail outcome on which two variants disagree on half the cases "
              "(the widest spread a 0/1 difference has around 0); give --pilot REPORT to measure it")
#: differences (in points of pass rate) the plan says the case count for, unless asked for others
DEFAULT_DIFFERENCES = (0.05, 0.10, 0.20)


def pilot_spread(report: dict, planned: list[str] | None = None) -> tuple[float | None, str]:
    """(SD of per-case differences, where it came from) from a pilot report: between the planned
    run's first two variants when the pilot ran both, else its own first two (and the words say
    they are not the planned ones), runs of a case averaged first; with one variant, sqrt(2) x the
    spread of its per-case pass fractions (two independent variants that vary as much)."""
    variants = [v["name"] for v in report["plan"]["variants"]]
    if planned and len(planned) >= 2 and set(planned[:2]) <= set(variants):
        variants = planned[:2] + [v for v in variants if v not in planned[:2]]
    other = "" if not planned or set(variants[:2]) <= set(planned) else \
        f" (not this plan's variants: {', '.join(planned)})"
    outcomes = case_outcomes(report["attempts"])
    per = [{cid: p / n for cid, (p, n) in outcomes.get(name, {}).items() if n} for name in variants]
    if len(per) >= 2:
        common = [cid for cid in per[0] if cid in per[1]]
        sd = difference_sd([per[0][c] - per[1][c] for c in common])
        flat = " (no spread between them)" if sd == 0 else ""
        return sd, f"pilot: {variants[0]} vs {variants[1]}{other} on {plural(len(common), 'case')}{flat}"
    if per and len(per[0]) >= 2:
        sd = difference_sd(list(per[0].values()))
        flat = " (no spread between its cases)" if sd == 0 else ""
        return (None if sd is None else sd * math.sqrt(2)), \
            f"pilot: one variant ({variants[0]}){other}, sqrt(2) x its spread{flat}"
    return None, "pilot: too few judged cases to measure a spread"


def planned_power(cases: int, *, alpha: float, pilot: dict | None = None,
                  differences: tuple[float, ...] | list[float] | None = None,
                  variants: list[str] | None = None) -> dict:
    """The planned run's detectable difference at 80% power and the cases each difference needs
    (`variants`: the planned run's, which a pilot's spread is measured between when it ran them)."""
    sd, source = (pilot_spread(pilot, variants) if pilot is not None else (None, ASSUMPTION))
    if not sd:
        sd, source = ASSUMED_DIFFERENCE_SD, source if pilot is None else f"{source}; {ASSUMPTION}"
    wanted = list(differences or DEFAULT_DIFFERENCES)
    return {"test": "paired t on per-case differences", "power": POWER, "alpha": alpha, "cases": cases,
            "difference_sd": sd, "sd_from": source,
            "detectable_difference": detectable_difference(sd, cases, alpha, POWER),
            "cases_needed": [{"difference": d, "cases": cases_needed(d, sd, alpha, POWER)} for d in wanted]}
