"""Student's t distribution for whole degrees of freedom, in pure Python.

Every t a report uses has df = cases - 1, a whole number, and for a whole number of degrees
of freedom the distribution function is a finite sum (Abramowitz & Stegun 26.7.3-4): with
theta = atan(t / sqrt(df)), P(|T| < t) is sin(theta) * sum of cos(theta)^(2k) (1*3*..*(2k-1)) /
(2*4*..*2k) for even df, and (2/pi) * (theta + sin(theta) cos(theta) * sum of cos(theta)^(2k)
(2*4*..*2k) / (3*5*..*(2k+1))) for odd df: every term positive, so the sum is stable. The
quantile is Newton's method on that sum from the Cornish-Fisher start; above LARGE_DF degrees
of freedom the Cornish-Fisher expansion to the fourth order in 1/df (A&S 26.7.5) is itself
exact to double precision. Checked against scipy.special.stdtrit (what scipy.stats.t.ppf
calls) to a relative 1e-12 from df = 1 to 10^9 in the tests.

Why not scipy: numpy and scipy.special add 29 MB to every run that compares two variants,
which the engine issue's memory aim (100,000 attempts in 250 MB) cannot spare.
"""

from __future__ import annotations

import math
from functools import lru_cache
from statistics import NormalDist

#: above this many degrees of freedom the Cornish-Fisher expansion's next term is below 1e-16
LARGE_DF = 2000
_NORMAL = NormalDist()


def _cornish_fisher(z: float, df: int) -> float:
    """The t quantile whose normal quantile is z, to the fourth order in 1/df (A&S 26.7.5)."""
    z2 = z * z
    g1 = (z2 + 1) * z / 4
    g2 = ((5 * z2 + 16) * z2 + 3) * z / 96
    g3 = (((3 * z2 + 19) * z2 + 17) * z2 - 15) * z / 384
    g4 = ((((79 * z2 + 776) * z2 + 1482) * z2 - 1920) * z2 - 945) * z / 92160
    return z + (g1 + (g2 + (g3 + g4 / df) / df) / df) / df


def _upper_tail(t: float, df: int) -> float:
    """P(T > t) for t >= 0 and a whole df >= 1."""
    a, x = df / 2, df / (df + t * t)
    if x < (a + 1) / (a + 2.5):
        # far in the tail, where 1 - P(|T| < t) would cancel: I_x(df/2, 1/2) / 2 directly
        return _beta_fraction(a, x) / 2
    root = math.sqrt(df + t * t)
    sin, cos2 = t / root, df / (df + t * t)
    if df % 2 == 0:
        term = total = 1.0
        for k in range(1, df // 2):
            term *= cos2 * (2 * k - 1) / (2 * k)
            total += term
        inside = sin * total
    else:
        total = 0.0
        if df > 1:
            term = total = 1.0
            for k in range(1, (df - 1) // 2):
                term *= cos2 * (2 * k) / (2 * k + 1)
                total += term
        theta = math.atan2(t, math.sqrt(df))
        inside = 2 / math.pi * (theta + sin * math.sqrt(cos2) * total)
    return (1 - inside) / 2


def _beta_fraction(a: float, x: float) -> float:
    """The regularised incomplete beta I_x(a, 1/2) by its continued fraction (modified Lentz),
    which converges fast for x < (a + 1) / (a + 2.5)."""
    b = 0.5
    log_front = (a * math.log(x) + b * math.log1p(-x) + math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b))
    tiny = 1e-300
    c, d = 1.0, 1 - (a + b) * x / (a + 1)
    d = 1 / (d if abs(d) > tiny else tiny)
    value = d
    for m in range(1, 400):
        for numerator in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                          -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1 + numerator * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + numerator / c
            c = c if abs(c) > tiny else tiny
            value *= c * d
        if abs(c * d - 1) < 1e-16:
            break
    return math.exp(log_front) * value / a


def _density(t: float, df: int) -> float:
    log_norm = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    return math.exp(log_norm - (df + 1) / 2 * math.log1p(t * t / df))


@lru_cache(maxsize=256)
def t_quantile(q: float, df: int) -> float:
    """The q quantile of Student's t with `df` (a whole number >= 1) degrees of freedom."""
    if df != int(df) or df < 1:
        raise ValueError(f"t_quantile needs whole degrees of freedom >= 1, not {df!r}")
    df = int(df)
    if not 0 < q < 1:
        if q in (0, 1):
            return math.copysign(math.inf, q - 0.5)
        raise ValueError(f"t_quantile needs 0 <= q <= 1, not {q!r}")
    if q == 0.5:
        return 0.0
    tail = 1 - q if q > 0.5 else q  # the one-sided tail beyond |t|
    sign = 1.0 if q > 0.5 else -1.0
    if df == 1:
        return sign / math.tan(math.pi * tail)
    if df == 2:
        return sign * (1 - 2 * tail) / math.sqrt(2 * tail * (1 - tail))
    t = _cornish_fisher(-_NORMAL.inv_cdf(tail), df)
    if df > LARGE_DF:
        return sign * t
    # Newton on the exact tail; the start is close (within 1e-4 relative at df = 3), so a few
    # steps reach the last digit. A step that would leave t > 0 is halved.
    t = max(t, 1e-300)
    for _ in range(60):
        step = (_upper_tail(t, df) - tail) / _density(t, df)
        while t + step <= 0:
            step /= 2
        t += step
        if abs(step) <= 4e-16 * t:
            break
    return sign * t


def paired_t_power(effect: float, cases: int, alpha: float, simpson_only: bool = False) -> float:
    """The power of the two-sided paired (one-sample) t test on `cases` cases against a true mean
    difference of `effect` standard deviations: the noncentral t beyond either critical value.
    T = (Z + effect sqrt(n)) / S with S = sqrt(chi2(df) / df): the normal tails averaged over
    S's distribution (Simpson's rule on u = sqrt(chi2), whose density is smooth for every df,
    extrapolated from two grids), in pure Python; checked against scipy's noncentral t to 1e-11
    in the tests. `simpson_only`: Simpson's rule alone, as statistics version 11 computed it."""
    nc = effect * math.sqrt(cases)
    steps, h, grid = _power_grid(cases, alpha, simpson_only)
    root2 = math.sqrt(2)
    values = [(density, 0.5 * math.erfc((edge - nc) / root2) + 0.5 * math.erfc((edge + nc) / root2))
              if density is not None else (0.0, 0.0) for density, edge in grid]
    if simpson_only:  # summed as version 11 summed it, term by term
        total = 0.0
        for i, (density, tails) in enumerate(values):
            if density:
                total += (1 if i in (0, steps) else (4 if i % 2 else 2)) * density * tails
        return min(1.0, total * h / 3)
    values = [density * tails for density, tails in values]
    # Simpson's rule on the grid and on every other point, extrapolated (Richardson: the error
    # falls as h^6, not h^4): within 3e-12 of scipy's noncentral t from df 1 to 5000 in the tests
    fine = (values[0] + values[-1] + 4 * math.fsum(values[1:-1:2]) + 2 * math.fsum(values[2:-1:2])) * h / 3
    coarse = (values[0] + values[-1] + 4 * math.fsum(values[2:-1:4]) + 2 * math.fsum(values[4:-1:4])) * 2 * h / 3
    return min(1.0, fine + (fine - coarse) / 15)


@lru_cache(maxsize=2)  # a grid is up to 49,000 points (2 cases, alpha 0.01): two kept
def _power_grid(cases: int, alpha: float, simpson_only: bool) -> tuple[int, float, tuple]:
    """What paired_t_power's quadrature needs that does not depend on the effect, for one
    (cases, alpha): the number of steps, their width and each point's (chi density, critical
    value x s) (density None where it is 0). A power is solved by asking the same (cases,
    alpha) for several effects (stats.methods._solve_effect): built once, the same numbers."""
    df = cases - 1
    crit = t_quantile(1 - alpha / 2, df)
    # density of u = sqrt(W), W ~ chi2(df): 2 u^(df-1) e^(-u^2/2) / (2^(df/2) Gamma(df/2))
    log_norm = math.log(2.0) - (df / 2) * math.log(2.0) - math.lgamma(df / 2)
    # u = sqrt(chi2(df)) lies within 12 of sqrt(df) but for a share below 1e-30 (its sd is under 1)
    bottom, top = max(0.0, math.sqrt(df) - 12.0), math.sqrt(df) + 12.0
    # the tails change over s ~ 1 / crit (crit is 63.7 at df 1, alpha 0.01): that finely resolved
    if simpson_only:  # statistics version 11 and before: Simpson's rule alone, 2.5e-8 off at df 3-5
        steps = 2 * max(200, int((top - bottom) * crit * 8))
    else:
        steps = 4 * max(200, int((top - bottom) * crit * 8))
    h = (top - bottom) / steps
    grid = []
    for i in range(steps + 1):
        u = bottom + i * h
        if u == 0.0:
            if df > 1:
                grid.append((None, 0.0))  # the density is 0 there
                continue
            density = math.exp(log_norm)
        else:
            density = math.exp(log_norm + (df - 1) * math.log(u) - u * u / 2)
        s = u / math.sqrt(df)
        grid.append((density, crit * s))
    return steps, h, tuple(grid)
