"""The pure-Python Student t quantile (stats/student.py) against scipy.special.stdtrit, what
scipy.stats.t.ppf calls, from 1 to 10^9 degrees of freedom, and the runs that use it."""

import math
import subprocess
import sys

import pytest
from scipy.special import stdtrit

from scoreboard.stats.student import LARGE_DF, t_quantile

DFS = [*range(1, 41), 49, 99, 100, 101, 499, 999, 1000, LARGE_DF - 1, LARGE_DF, LARGE_DF + 1, 5000, 10**4,
       10**5, 10**6, 10**7, 10**9]
QS = [1e-9, 1e-6, 1e-4, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.4, 0.49,
      0.51, 0.6, 0.7, 0.8, 0.9, 0.95, 0.975, 0.99, 0.995, 0.999, 0.9999, 1 - 1e-6, 1 - 1e-9]


@pytest.mark.parametrize("df", DFS)
def test_the_quantile_is_scipys_to_twelve_digits(df):
    for q in QS:
        ours, scipys = t_quantile(q, df), float(stdtrit(df, q))
        assert ours == pytest.approx(scipys, rel=1e-12, abs=0), (df, q)


def test_near_the_median_and_at_the_ends():
    # near q = 0.5 t is tiny and the reference is the exact value (scipy itself is off there
    # in the 9th digit: stdtrit(4, 0.4999) = -0.000266666671037; the true -0.000266666670617284)
    assert t_quantile(0.4999, 4) == pytest.approx(-0.000266666670617284, rel=1e-12)
    assert t_quantile(0.5, 7) == 0.0
    assert t_quantile(0.975, 1) == pytest.approx(math.tan(math.pi * 0.475), rel=1e-14)
    assert t_quantile(1.0, 3) == math.inf and t_quantile(0.0, 3) == -math.inf
    # far tails still agree with scipy to nine digits
    for df in (3, 30, 300, 3000):
        assert t_quantile(1e-15, df) == pytest.approx(float(stdtrit(df, 1e-15)), rel=1e-9)
    for bad in ((0.5, 0), (0.5, 2.5), (1.5, 3), (-0.1, 3)):
        with pytest.raises(ValueError):
            t_quantile(*bad)


def test_symmetry():
    for df in (2, 3, 10, 77, 1500, 10**6):
        for q in (0.6, 0.9, 0.975, 0.9999):
            assert t_quantile(1 - q, df) == pytest.approx(-t_quantile(q, df), rel=1e-12)


def test_a_run_that_compares_variants_imports_neither_numpy_nor_scipy():
    # the reason for the module: numpy and scipy.special cost every such run 29 MB
    code = ("import sys\n"
            "from scoreboard.stats.methods import mean_interval, detectable_difference, cases_needed\n"
            "mean_interval([0.1, 0.5, 0.9, 0.3], 0, 1)\n"
            "detectable_difference(0.5, 40); cases_needed(0.1, 0.5)\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('numpy', 'scipy')))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
