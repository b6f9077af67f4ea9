"""The interval and power methods of a report, one per figure, the same for every variant.

Chosen by simulation (benchmarks/calibration.py; the tables are in benchmarks/README.md):

- **Pass rate: Wilson on the effective number of cases.** Each case ran m_i times and passed
  x_i times; the rate is sum(x) / sum(m). With one run per case this is the plain Wilson score
  interval on the cases. With repeats, the repeats of a case are not independent evidence: the
  rate's variance is taken between cases (the cluster-robust variance of a ratio,
  n/(n-1) * sum((x_i - p m_i)^2) / (sum m)^2), the effective number of cases is
  p(1-p) / that variance (kept between 1 and sum(m)), and Wilson is taken on it. When the
  rarer outcome (passes or failures) is so rare that every one of them could have come from one
  case (at most the most runs a case had), the data cannot show whether cases are alike: then
  the effective cases are at most the attempts over the design effect of an ICC of 0.1,
  1 + (mean runs - 1) * 0.1 (1-3 single passes over 30 cases at ICC 0.5 read as 90 cases' worth,
  and the interval covered 0.927). When every
  case passed every run (or failed every run) there is no spread to measure: Wilson on the
  number of cases, the one-sided bound a consistent outcome allows. Never zero width. With one
  run per case Wilson's exact coverage (every binomial outcome enumerated) is within
  [0.93, 0.97] at 94% of the points n = 10..100, p = 0.05..0.95, more than Jeffreys (91%),
  Agresti-Coull (89%) or Clopper-Pearson (64%).
- **Shares of per-case values in [0, 1] (pass@k, pass^k): Wilson on the effective number of
  cases** too, the effective number from the spread of the per-case values (the same
  n/(n-1) small-sample factor), at most one case's worth per k runs of each case: a pass@k
  of a case that ran r times holds r/k blocks of k runs (the pass rate is k = 1: at most the
  attempts). Without that ceiling one case at 2/3 among nine at 1 counted as 29 cases' worth
  of evidence, and the interval was tighter than ten unanimous cases get (pass@2 at 10 cases,
  p = 0.5, covered 0.90; at 100 cases, p = 0.9, 0.92).
- **Means of per-case values (paired differences, dQ, pointwise scores): Student t on the
  per-case values** (df = cases - 1), clipped to the scale. When every case has the same
  value c the spread is 0 and t would claim certainty: then no case of n differing from c
  is all the data say, and Wilson's bound on the share of cases that could differ,
  w = z^2 / (n + z^2), is what they allow, anywhere on the scale: [c - w (c - low end),
  c + w (high end - c)] (the bound the pass rate takes for a unanimous record). Never zero width.
- **Power: the paired t test's minimum detectable effect** at 80% power and the gate's alpha,
  from the spread of per-case differences (a pilot's, this run's, or a stated assumption);
  exact for pass/fail outcomes of one run a side (stats.binary_power).
"""

from __future__ import annotations

import contextvars
import math
from contextlib import contextmanager
from fractions import Fraction
from functools import lru_cache
from statistics import NormalDist

from .student import paired_t_power, t_quantile

LEVEL = 0.95
#: the name and the words of each method, as every rendering states them
PASS_RATE_METHOD = "wilson-effective-n"
MEAN_METHOD = "student-t"
METHODS = {
    PASS_RATE_METHOD: "Wilson score interval on the effective number of cases (repeats of a case count "
                      "as one case's worth of evidence, scaled by how much cases differ; at most one "
                      "case's worth per k runs for pass@k and pass^k)",
    MEAN_METHOD: "Student t interval on per-case values (df = cases - 1); with no spread, Wilson's "
                 "bound on the share of cases that could differ, anywhere on the scale",
}
#: the version of the summary's statistics; a report computed by another version is not
#: recomputed by `verify` (it says so instead of calling the difference a mismatch); 3: the
#: comparison headline in points with its interval, rubric scores as means per variant; 4:
#: pass@k/pass^k's effective cases at most runs/k per case, a mean with no spread takes
#: Wilson's bound on the share of cases that could differ (was Agresti-Min pseudo-cases); 5: a
#: conversation's turns are one unit (they were independent cases), and the detectable difference
#: is solved on the noncentral t (the shortcut understated it at a few cases); 6: with pass/fail
#: outcomes of one run a side the detectable difference is exact (stats.binary_power); 7: an error of
#: a case no grader decides (not graded, record-only) is outside the pass rate (it was a failure);
#: 8: a comparison of no common case has no sign test or McNemar p-value (null; it read 1.0); 9: the
#: detectable difference of a score or named metric compared on pass/fail values of one attempt a
#: side is exact, as the pass rate's (it was the noncentral t's, more than they could differ by); 10:
#: a pass rate whose rarer outcome could all have come from one case takes at most the attempts over
#: the design effect of an ICC of 0.1 as its effective cases (it took the attempts: coverage 0.927); 11:
#: a cost not measured says "cost unknown ...: no price known, or no usage reported" (it said "no
#: price known" of a model whose price was set but whose usage the provider did not report); 12: the
#: detectable difference on the noncentral t is solved on a power within 1e-11 of scipy's (Simpson's
#: rule alone was 2.5e-8 off at 3-5 cases: the difference 2e-8 off statsmodels' TTestPower), and
#: the exact pass/fail one (stats.binary_power) to 1e-13 (its bisection stopped at 1e-7); 13: a score
#: or named metric compared between variants counts each side's errored attempts it leaves out; 14:
#: an `at_least` reducer leaves out a case judged fewer than k times that did not reach k (its
#: figure unknown: the runs it lacks could reach k), as pass@k does (it counted the case as 0); 15:
#: an undefined derived metric's note says a name a grader declares had every grade undecided (it
#: suggested another metric, as for a misspelt name); 16: a comparison's `differs_in` reads the
#: subject a rescored or exported report's recorded variant carries (`original`), so two variants of
#: one subject differ in what they differed in (15 said `subject` of every rescored pair); 17: a
#: derived metric over totals (`aggregate: sum`) leaves out unassessed attempts, whose scores are
#: unknown (16 counted them in `__count` with nothing in the totals: as scores of 0); 18: field
#: accuracy's errored attempts are those of cases a field grader grades (17 counted every error,
#: a case graded by `contains` alone included), and the judge-corrected pass rate has no interval
#: where it is undefined (17 gave the interval of the draws where it was defined); 19: a paired
#: comparison counting conversations says its small sample in units, not cases; 20: a reducer other
#: than `mean` (max, median, mode, at_least) counts at most one case's worth per case, as pass@k with
#: k = its runs (19 took one per run: an interval tighter than unanimous cases get), and pass@k and
#: pass^k over conversations name their unit (19 said "case" of an interval over conversations), and
#: each category gives its cases and its pass rate's interval (19: the rate alone); 21: an agent
#: task's per-attempt figure that no attempt reported has no known subtotal (null; 20 wrote 0), and a
#: metric's total (`aggregate: sum`) leaves out the attempts on which the metric is unknown (20 added
#: the named scores of a grade that could not decide) and out of `__count` (20 counted it there: 7/8
#: for 7 of 7 known), and a derived metric reads as a share or a number by its definition (`unit`)
STATS_VERSION = 21
#: the least intra-case correlation a pass rate's effective cases assume when the data cannot show it
ICC_FLOOR = 0.1
#: the statistics version whose rules are computed (None: this build's); see computed_as
_COMPUTED_AS: contextvars.ContextVar[int | None] = contextvars.ContextVar("stats_computed_as", default=None)
#: said in the summary's methods when the plan holds conversations (stats/counts.by_unit)
UNIT_WORDS = ("a conversation is one unit of evidence: its turns answer each other's replies, so their "
              "outcomes are correlated, and they are counted together (as a case's repeats are) in every "
              "interval and paired test of pass rates, pass@k, field accuracy, scores and named metrics; a "
              "case outside any conversation is its own unit. Derived metrics, reducers, judge figures, the "
              "baseline gate and a pilot's power figure are per turn")
#: stated assumption when no pilot gives the spread of per-case differences: a binary outcome
#: whose variants disagree on half the cases (the largest spread a 0/1 difference has at 0)
ASSUMED_DISCORDANCE = 0.5
ASSUMED_DIFFERENCE_SD = ASSUMED_DISCORDANCE ** 0.5
POWER = 0.8


def _z(level: float = LEVEL) -> float:
    return NormalDist().inv_cdf(0.5 + level / 2)


def wilson(p: float, n: float, level: float = LEVEL) -> tuple[float, float]:
    """Wilson score interval of a proportion p observed on n (possibly fractional) units."""
    z = _z(level)
    z2n = z * z / n
    centre = (p + z2n / 2) / (1 + z2n)
    half = z / (1 + z2n) * math.sqrt(max(0.0, p * (1 - p) / n + z2n / (4 * n)))
    low = 0.0 if p <= 0 else max(0.0, centre - half)
    high = 1.0 if p >= 1 else min(1.0, centre + half)
    return low, high


@contextmanager
def computed_as(version: int):
    """Within it, the figures that changed since statistics `version` (the pass rate's effective
    cases, version 10; the words of an unknown cost, 11) follow its rules (verify recomputes a
    report of an earlier version as that version computed it)."""
    token = _COMPUTED_AS.set(version)
    try:
        yield
    finally:
        _COMPUTED_AS.reset(token)


def computing_version() -> int:
    """The statistics version being computed: this build's, or an earlier one's under computed_as."""
    return _COMPUTED_AS.get() or STATS_VERSION


def effective_cases(counts: list[tuple[int, int]]) -> float:
    """The effective number of cases of a pass rate over cases that ran several times: the
    cluster-robust one, held to the attempts over 1 + (mean runs - 1) * ICC_FLOOR when the rarer
    outcome could all have come from one case (nothing in the data can show clustering)."""
    n_eff = _effective_cases_v9(counts)
    version = _COMPUTED_AS.get()
    if version is not None and version < 10:
        return n_eff
    n, total = len(counts), sum(m for _, m in counts)
    passed = sum(x for x, _ in counts)
    if n <= 1 or passed in (0, total) or all(m == 1 for _, m in counts):
        return n_eff
    if min(passed, total - passed) <= max(m for _, m in counts):
        n_eff = min(n_eff, total / (1 + (total / n - 1) * ICC_FLOOR))
    return n_eff


def _effective_cases_v9(counts: list[tuple[int, int]]) -> float:
    """The effective number of cases as statistics versions up to 9 computed it (the ICC as the
    data show it, even where they cannot show it)."""
    n = len(counts)
    total = sum(m for _, m in counts)
    passed = sum(x for x, _ in counts)
    if n <= 1 or all(m == 1 for _, m in counts):
        return float(total) if all(m == 1 for _, m in counts) else float(n)
    p = passed / total
    if p in (0.0, 1.0):
        return float(n)
    variance = n / (n - 1) * math.fsum((x - p * m) ** 2 for x, m in counts) / total ** 2
    if variance <= 0:
        return float(total)
    return min(float(total), max(1.0, p * (1 - p) / variance))


def pass_rate_interval(counts: list[tuple[int, int]], level: float = LEVEL) -> dict | None:
    """The pass rate's interval, case as the unit: {low, high, level, method, unit, effective_cases}."""
    counts = [(x, m) for x, m in counts if m]
    if not counts:
        return None
    total = sum(m for _, m in counts)
    p = sum(x for x, _ in counts) / total
    n_eff = effective_cases(counts)
    low, high = wilson(p, n_eff, level)
    return {"low": low, "high": high, "level": level, "method": PASS_RATE_METHOD, "unit": "case",
            "effective_cases": round(n_eff, 6)}


def share_interval(values: list[float], level: float = LEVEL, most: float | None = None) -> dict | None:
    """The interval of a mean of per-case shares in [0, 1] (pass@k, pass^k): Wilson on the
    effective number of cases, as for the pass rate, which keeps its coverage near 0 and 1
    where a t interval on skewed shares does not. `most` is the most cases' worth the values
    can hold (pass@k: the sum over cases of runs / k; the pass rate's is the attempts); by
    default ten per case."""
    n = len(values)
    if n == 0:
        return None
    ceiling = float(10 * n if most is None else max(most, n))
    mean = math.fsum(values) / n
    spread = math.fsum((v - mean) ** 2 for v in values)
    if n < 2 or mean <= 0 or mean >= 1 or spread <= 0:
        n_eff = float(n)
    else:
        n_eff = min(ceiling, max(1.0, mean * (1 - mean) / (spread / (n - 1) / n)))
    low, high = wilson(mean, n_eff, level)
    return {"low": low, "high": high, "level": level, "method": PASS_RATE_METHOD, "unit": "case",
            "effective_cases": round(n_eff, 6)}


def unanimous_bound(value: float, cases: int, low_end: float, high_end: float, level: float = LEVEL,
                    ) -> tuple[float, float]:
    """The interval of a mean when all `cases` cases have the same value: up to Wilson's bound
    w = z^2 / (n + z^2) on the share of cases that could differ (none of n did), anywhere on
    the scale [low_end, high_end]."""
    z = _z(level)
    w = z * z / (cases + z * z)
    return value - w * (value - low_end), value + w * (high_end - value)


def mean_interval(values: list[float], low_end: float, high_end: float, level: float = LEVEL,
                  ) -> dict | None:
    """Student t interval of the mean of per-case values on the scale [low_end, high_end]."""
    n = len(values)
    if n == 0:
        return None
    mean = math.fsum(values) / n
    spread = math.fsum((v - mean) ** 2 for v in values)
    adjusted = n < 2 or spread <= 1e-24
    if adjusted:
        # No spread to measure: Wilson's bound on the share of cases that could differ.
        low, high = unanimous_bound(mean, n, low_end, high_end, level)
    else:
        se = math.sqrt(spread / (n - 1) / n)
        t = t_quantile(0.5 + level / 2, n - 1)
        low, high = mean - t * se, mean + t * se
    return {"low": max(low_end, low), "high": min(high_end, high), "level": level,
            "method": MEAN_METHOD, "unit": "case", "cases": n, "adjusted": adjusted}


def detectable_difference(sd: float, cases: int, alpha: float = 0.05, power: float = POWER) -> float | None:
    """The smallest true mean difference a two-sided paired t test on `cases` cases detects with
    the given power, df = cases - 1: solved on the noncentral t (student.paired_t_power; what
    statsmodels' TTestPower solves), from the shortcut (t(1-alpha/2) + t(power)) * sd / sqrt(n),
    which understates it by 14% at 2 cases and 1.2% at 5 (power 0.69-0.79 instead of 0.8)."""
    if cases < 2 or sd is None:
        return None
    if sd == 0:
        return 0.0
    return _solve_effect(cases, alpha, power, computing_version() < 12) * sd


@lru_cache(maxsize=4096)
def _solve_effect(cases: int, alpha: float, power: float, simpson_only: bool = False) -> float:
    """The effect (in standard deviations) with exactly `power` (the same for every spread: the
    fields of a pair share it): a bracket around the shortcut's guess, then regula falsi
    (Illinois), to a relative 1e-9. `simpson_only`: the power as statistics version 11 computed it."""
    df = cases - 1
    guess = (t_quantile(1 - alpha / 2, df) + t_quantile(power, df)) / math.sqrt(cases)

    def gap(effect: float) -> float:
        return paired_t_power(effect, cases, alpha, simpson_only) - power

    low, high = guess * 0.8, guess * 1.25
    f_low, f_high = gap(low), gap(high)
    while f_low > 0:
        low, f_low = low / 2, gap(low / 2)
    while f_high < 0:
        high, f_high = high * 2, gap(high * 2)
    side = 0
    for _ in range(100):
        mid = high - f_high * (high - low) / (f_high - f_low)
        f_mid = gap(mid)
        if abs(f_mid) < 1e-12 or high - low < 1e-9 * high:
            return mid
        if f_mid > 0:
            high, f_high = mid, f_mid
            if side == 1:
                f_low /= 2
            side = 1
        else:
            low, f_low = mid, f_mid
            if side == -1:
                f_high /= 2
            side = -1
    return (low + high) / 2


def cases_needed(delta: float, sd: float, alpha: float = 0.05, power: float = POWER, limit: int = 1_000_000,
                 ) -> int | None:
    """The fewest cases at which `delta` is detectable (see detectable_difference)."""
    if delta <= 0 or sd is None:
        return None
    if sd == 0:
        return 2
    return fewest_cases(lambda n: detectable_difference(sd, n, alpha, power), delta, 2, limit)


def fewest_cases(detectable, delta: float, start: int, limit: int) -> int | None:
    """The fewest cases from `start` whose `detectable(cases)` is at most `delta` (doubling, then
    bisection: the detectable difference falls as cases grow), None past `limit`."""
    low, high = start, start
    while (detectable(high) or math.inf) > delta:
        low, high = high, high * 2
        if high > limit:
            return None
    while low < high:
        mid = (low + high) // 2
        if (detectable(mid) or math.inf) <= delta:
            high = mid
        else:
            low = mid + 1
    return high


def exact_mean(values) -> float:
    """The mean of rationals (Fractions, or ints and floats each taken exactly), rounded once: a
    mean of per-case shares that is exactly a gate's decimal reads as that decimal (pass^2 of
    cases at 3/10 and 6/10 is 0.45, where the mean of the rounded shares was an ulp below)."""
    values = list(values)
    if not all(isinstance(v, Fraction) or math.isfinite(v) for v in values):  # NaN, inf: no fraction
        return math.fsum(values) / len(values)
    return float(sum(map(Fraction, values), Fraction(0)) / len(values))


def pass_at_k(passed: int, runs: int, k: int) -> float | None:
    """Unbiased pass@k of one case (Chen et al. 2021): 1 - C(n-c, k) / C(n, k)."""
    if k < 1 or runs < k:
        return None
    return 1.0 - math.comb(runs - passed, k) / math.comb(runs, k)


def pass_hat_k(passed: int, runs: int, k: int) -> float | None:
    """Unbiased pass^k of one case (every one of k runs passes): C(c, k) / C(n, k)."""
    if k < 1 or runs < k:
        return None
    return math.comb(passed, k) / math.comb(runs, k)
