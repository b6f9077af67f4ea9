"""A regression guard on the statistics' calibration: the fast version of
benchmarks/calibration.py (one cell per method, a few hundred simulated reports) must stay
within loose bounds of the nominal 95% coverage and 5% false-positive rate. The full tables,
4,000 reports per cell, are in benchmarks/README.md."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "calibration.py"


@pytest.fixture(scope="module")
def calibration():
    spec = importlib.util.spec_from_file_location("calibration", PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.fast(sims=400)


@pytest.mark.parametrize("key", ["pass_rate_coverage", "difference_coverage", "pass_at_k_coverage"])
def test_intervals_cover_near_95_percent(calibration, key):
    # 400 reports: one standard error of a 95% coverage is about 0.011.
    assert 0.91 <= calibration[key] <= 0.99


@pytest.mark.parametrize("key", ["difference_false_positive", "sign_false_positive", "mcnemar_false_positive",
                                 "dq_false_positive"])
def test_identical_variants_are_rarely_called_different(calibration, key):
    assert calibration[key] <= 0.08
