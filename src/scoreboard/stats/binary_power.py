"""Exact power of the paired comparison when the outcomes are pass/fail, one run per case.

Then each case's difference between two variants is +1, 0 or -1, and the noncentral t (which
takes the differences as normal) is no guide at the sizes people plan: at 10 cases whose
variants disagree on half of them, the difference it called detectable with 80% power was
detected 56% of the time, and it named differences (70 points) that variants disagreeing on
half the cases cannot have (at most 50).

The model is the usual one for paired pass/fail outcomes (McNemar's; Miettinen 1968, Connor
1987): the variants disagree on a share psi of the cases (the discordant share), and a true
difference delta in pass rate splits the disagreements (psi + delta) / 2 for the leader and
(psi - delta) / 2 against it. A difference larger than psi makes them disagree more: the
leader wins a share delta of the cases and loses none. Every outcome of n cases (won, lost,
tied) is enumerated and put through the report's own decision, the paired interval
(stats.methods.mean_interval at 1 - alpha) lying above 0 on the leader's side; the power is
the total chance of those outcomes, exactly. Above EXACT_LIMIT cases (where enumerating takes
tenths of a second a figure) the noncentral t is used with the spread the alternative has,
sqrt(psi - delta^2): its difference has an exact power of 0.78-0.82 at 100 cases when the
variants disagree on a fifth of them or more, and errs on the safe side when they rarely do
(0.86 at a tenth, 0.94 at a twentieth; 0.84 at 300 cases): tests/test_binary_power.py.
"""

from __future__ import annotations

import math
from functools import lru_cache

from .methods import POWER, _solve_effect, computing_version, fewest_cases, unanimous_bound
from .student import t_quantile

#: the most cases whose outcomes are enumerated; above, the noncentral t with the alternative's spread
EXACT_LIMIT = 100
#: the words a rendering gives the method
EXACT_WORDS = "exact over every pass/fail outcome"


@lru_cache(maxsize=256)
def losses_allowed(cases: int, level: float) -> tuple[int, ...]:
    """For each number of cases the leader won (0..cases), the most it may lose with the paired
    interval at `level` still above 0 (-1: none). The interval's arithmetic is mean_interval's,
    on counts (a test checks the two agree outcome by outcome)."""
    t = t_quantile(0.5 + level / 2, cases - 1) if cases >= 2 else math.inf
    out = []
    for won in range(cases + 1):
        most = -1
        for lost in range(cases - won + 1):
            if not _above_zero(won, lost, cases, t, level):
                break
            most = lost
        out.append(most)
    return tuple(out)


def _above_zero(won: int, lost: int, cases: int, t: float, level: float) -> bool:
    if won <= lost:
        return False
    mean = (won - lost) / cases
    spread = won + lost - cases * mean * mean
    if cases < 2 or won == cases or spread <= 1e-24:
        return unanimous_bound(mean, cases, -1.0, 1.0, level)[0] > 0
    return mean - t * math.sqrt(spread / (cases - 1) / cases) > 0


def _binomial_terms(trials: int, p: float, upto: int) -> list[float]:
    """P(X = 0..upto) for X ~ Binomial(trials, p), by the ratio of successive terms."""
    upto = min(upto, trials)
    if p <= 0.0:
        return [1.0] + [0.0] * upto
    if p >= 1.0:
        return [0.0] * upto + ([1.0] if upto == trials else [0.0])
    first = trials * math.log1p(-p)
    terms, term = [], first
    ratio = math.log(p) - math.log1p(-p)
    for x in range(upto + 1):
        terms.append(math.exp(term))
        term += math.log(trials - x) - math.log(x + 1) + ratio if x < trials else 0.0
    return terms


def shares(delta: float, discordance: float) -> tuple[float, float]:
    """(won, lost) chances of a case for a true difference `delta` when the variants disagree on
    a share `discordance` of cases (more, when delta is larger: then none is lost)."""
    if delta >= discordance:
        return min(1.0, delta), 0.0
    return (discordance + delta) / 2, (discordance - delta) / 2


def exact_power(cases: int, delta: float, discordance: float, alpha: float) -> float:
    """The chance that the paired interval at 1 - alpha lies above 0 on the leader's side, when
    the leader's true lead is `delta` and the variants disagree on `discordance` of the cases."""
    allowed = losses_allowed(cases, round(1 - alpha, 12))
    won_p, lost_p = shares(delta, discordance)
    won_terms = _binomial_terms(cases, won_p, cases)
    total = 0.0
    for won, most in enumerate(allowed):
        if most < 0 or won_terms[won] == 0.0:
            continue
        rest = cases - won
        # given `won` wins, each other case is lost with chance lost_p / (1 - won_p)
        lost_given = 0.0 if won_p >= 1.0 else min(1.0, lost_p / (1 - won_p))
        total += won_terms[won] * math.fsum(_binomial_terms(rest, lost_given, most))
    return min(1.0, total)


def binary_detectable(cases: int, discordance: float, alpha: float, power: float = POWER) -> float | None:
    """The smallest true lead in pass rate the paired comparison of `cases` pass/fail cases
    detects with `power` when the variants disagree on `discordance` of them (None with fewer than
    2 cases); 2.0 (past what a pass rate can move) when not even a lead on every case reaches it.
    Solved to 1e-13 (statistics version 11 and before stopped bisecting at 1e-7)."""
    return _binary_detectable(cases, discordance, alpha, power, computing_version())


@lru_cache(maxsize=4096)
def _binary_detectable(cases: int, discordance: float, alpha: float, power: float, version: int) -> float | None:
    if cases < 2:
        return None
    discordance = min(1.0, max(0.0, discordance))
    if cases > EXACT_LIMIT:
        effect = _solve_effect(cases, alpha, power, version < 12)
        # delta = effect x the alternative's spread sqrt(psi - delta^2), solved for delta
        found = effect * math.sqrt(discordance / (1 + effect * effect))
        if found <= discordance:
            return found
        # past psi the leader loses none: the spread is sqrt(delta (1 - delta)), so delta = e^2 / (1 + e^2)
        return effect * effect / (1 + effect * effect)
    if exact_power(cases, 1.0, discordance, alpha) < power:
        return 2.0
    low, high = 0.0, 1.0
    while high - low > (1e-7 if version < 12 else 1e-13):
        mid = (low + high) / 2
        if exact_power(cases, mid, discordance, alpha) >= power:
            high = mid
        else:
            low = mid
    return high


def binary_cases_needed(delta: float, discordance: float, alpha: float, power: float = POWER,
                        limit: int = 1_000_000) -> int | None:
    """The fewest pass/fail cases at which a lead of `delta` is detected with `power` (exact up
    to EXACT_LIMIT cases, the first count that reaches it), None past `limit`."""
    if delta <= 0:
        return None
    for cases in range(2, EXACT_LIMIT + 1):
        if exact_power(cases, delta, discordance, alpha) >= power:
            return cases
    return fewest_cases(lambda n: binary_detectable(n, discordance, alpha, power), delta, EXACT_LIMIT + 1, limit)
