"""Statistical primitives: rates, Wilson and bootstrap intervals, the exact binomial test."""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Any

LEVEL = 0.95
RESAMPLES = 2000


def rate(num: int, den: int) -> float | None:
    """num/den, or None when there is nothing to divide (never a fake 0)."""
    return num / den if den else None


def wilson_interval(passed: int, n: int, level: float = LEVEL) -> tuple[float, float] | None:
    """Wilson score interval for passed/n (same as statsmodels proportion_confint method="wilson")."""
    if n <= 0:
        return None
    z = NormalDist().inv_cdf(0.5 + level / 2)
    p = passed / n
    z2n = z * z / n
    centre = (p + z2n / 2) / (1 + z2n)
    half = z / (1 + z2n) * math.sqrt(p * (1 - p) / n + z2n / (4 * n))
    # At 0 or n passes the bound is exactly 0 or 1; the formula leaves rounding dust there.
    low = 0.0 if passed == 0 else max(0.0, centre - half)
    high = 1.0 if passed == n else min(1.0, centre + half)
    return low, high


def bootstrap_interval(values: list[float], weights: list[float] | None = None, *, seed: Any,
                       resamples: int = RESAMPLES, level: float = LEVEL) -> tuple[float, float] | None:
    """Percentile interval of a case bootstrap: resample the n cases with replacement, statistic
    sum(values)/sum(weights) over the drawn cases (the plain mean of `values` when weights is None).

    Drawing n cases uniformly with replacement and summing their values depends only on how often
    each distinct (value, weight) pair is drawn, and those counts are Multinomial(n, share of
    cases holding each pair). Drawing the counts directly is the same bootstrap, exactly, at a
    cost of resamples x distinct pairs instead of resamples x n (a few hundred microseconds
    for 10,000 pass/fail cases, instead of seconds).
    """
    import numpy as np

    n = len(values)
    if n == 0:
        return None
    # (value, weight) pairs as complex numbers: np.unique sorts those lexicographically, in 1-D.
    pairs = np.asarray(values, dtype=float) + 1j * np.asarray(1.0 if weights is None else weights, dtype=float)
    uniq, counts = np.unique(pairs, return_counts=True)
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(n, counts / n, size=resamples).astype(float)
    num = draws @ uniq.real
    stat = num / n if weights is None else num / (draws @ uniq.imag)
    tail = 100 * (1 - level) / 2
    low, high = np.percentile(stat, [tail, 100 - tail])
    # Sums of non-integer per-case values may differ in the last bits between BLAS builds;
    # rounding keeps a report re-verifiable on another machine (integer sums are exact anyway).
    return round(float(low), 12), round(float(high), 12)


def binom_two_sided_p(k: int, n: int) -> float:
    """Exact two-sided binomial test of k successes in n trials at p=0.5 (scipy binomtest's value).

    With p=0.5 the distribution is symmetric, so the p-value is 2*P(X <= min(k, n-k)), capped at 1.
    Computed exactly with integers (correctly rounded) up to 20,000 trials; beyond that in log space.
    """
    if n <= 0:
        return 1.0
    m = min(k, n - k)
    if 2 * m == n:
        return 1.0
    if n <= 20000:
        term = total = 1
        for i in range(m):
            term = term * (n - i) // (i + 1)
            total += term
        return min(1.0, (2 * total) / (1 << n))
    # log pmf(m), then the lower tail as pmf(m) * (1 + r_m + r_m r_{m-1} + ...), which falls fast.
    log_pmf = math.lgamma(n + 1) - math.lgamma(m + 1) - math.lgamma(n - m + 1) - n * math.log(2)
    tail = term = 1.0
    for i in range(m, 0, -1):
        term *= i / (n - i + 1)
        tail += term
        if term < tail * 1e-17:
            break
    log_p = math.log(2) + log_pmf + math.log(tail)
    return 1.0 if log_p >= 0 else math.exp(log_p)


def bootstrap_seed(plan: dict) -> Any:
    """The seed every bootstrap of this report uses: plan["seed"], 0 when absent."""
    seed = int(plan.get("seed") or 0)
    # numpy seeds must be non-negative; keep negative seeds distinct from positive ones.
    return seed if seed >= 0 else [1, -seed]
