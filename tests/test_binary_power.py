"""The detectable difference of a pass/fail comparison (one run a side) is exact: every outcome
of the cases enumerated through the report's own paired interval (stats.binary_power).

The defect it replaces: the noncentral t took the -1/0/1 differences as normal. At 10 cases
whose variants disagree on half of them it named 70 points (variants disagreeing on half the
cases cannot differ by more than 50), and a difference it called detectable with 80% power was
detected 56% of the time."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest
from scipy import stats

from scoreboard.stats.binary_power import (EXACT_LIMIT, binary_cases_needed, binary_detectable, exact_power,
                                           losses_allowed, shares)
from scoreboard.stats.comparison import paired_stats
from scoreboard.stats.methods import detectable_difference, mean_interval
from scoreboard.stats.power import planned_power
from tests.cli_inprocess import run_cli

ROOT = Path(__file__).resolve().parent.parent


def outcome(won: int, lost: int, cases: int) -> list[float]:
    return [1.0] * won + [-1.0] * lost + [0.0] * (cases - won - lost)


@pytest.mark.parametrize("level", [0.9, 0.95, 0.99])
def test_the_enumerated_decision_is_the_reports_interval_outcome_by_outcome(level):
    for cases in range(2, 41):
        allowed = losses_allowed(cases, level)
        for won in range(cases + 1):
            for lost in range(cases - won + 1):
                above = mean_interval(outcome(won, lost, cases), -1.0, 1.0, level)["low"] > 0
                assert above == (lost <= allowed[won]), (cases, won, lost, level)


def reference_power(cases: int, delta: float, share: float, alpha: float) -> float:
    """scipy's multinomial over every outcome, each put through mean_interval."""
    won_p, lost_p = shares(delta, share)
    total = 0.0
    for won in range(cases + 1):
        for lost in range(cases - won + 1):
            if mean_interval(outcome(won, lost, cases), -1.0, 1.0, 1 - alpha)["low"] > 0:
                total += stats.multinomial.pmf([won, lost, cases - won - lost], cases,
                                               [won_p, lost_p, max(0.0, 1 - won_p - lost_p)])
    return total


@pytest.mark.parametrize("cases", [2, 4, 7, 10, 16])
def test_exact_power_matches_an_enumeration_with_scipy(cases):
    for share in (0.1, 0.5, 0.9, 1.0):
        for delta in (0.0, 0.05, 0.2, 0.45, 0.8, 1.0):
            for alpha in (0.05, 0.1):
                assert exact_power(cases, delta, share, alpha) == pytest.approx(
                    reference_power(cases, delta, share, alpha), abs=1e-12), (cases, share, delta, alpha)


def test_the_detectable_difference_has_80_percent_power_and_no_less_does():
    for cases in (4, 5, 8, 10, 15, 20, 30, 50, 75, EXACT_LIMIT):
        for share in (0.05, 0.2, 0.5, 0.8, 1.0):
            mde = binary_detectable(cases, share, 0.05)
            assert mde <= 1
            assert exact_power(cases, mde, share, 0.05) >= 0.8
            assert exact_power(cases, mde - 1e-4, share, 0.05) < 0.8, (cases, share)
    # the power rises with the difference (the solve's bisection relies on it)
    for cases in (6, 10, 25):
        curve = [exact_power(cases, d / 100, 0.5, 0.05) for d in range(101)]
        assert all(b >= a - 1e-12 for a, b in zip(curve, curve[1:]))


def test_the_assumption_at_ten_cases_no_longer_names_an_impossible_difference():
    """The stated assumption: the variants disagree on half the cases."""
    t_figure = detectable_difference(0.5 ** 0.5, 10)
    assert t_figure == pytest.approx(0.704, abs=1e-3)  # what the report said: more than half can be
    # ... and a difference it called detectable, at that spread, was detected 56% of the time
    assert exact_power(10, t_figure, 0.5 + t_figure ** 2, 0.05) == pytest.approx(0.56, abs=0.01)
    plan = planned_power(10, alpha=0.05, runs=1)
    assert plan["discordance"] == 0.5 and plan["power_method"] == "exact over every pass/fail outcome"
    assert 0.45 < plan["detectable_difference"] <= 0.5
    assert reference_power(10, plan["detectable_difference"], 0.5, 0.05) == pytest.approx(0.8, abs=1e-6)


def test_a_simulated_run_detects_the_stated_difference_80_percent_of_the_time():
    """Reports drawn case by case (each case a pair of pass/fail outcomes) through the comparison
    the report makes (paired_stats): the share whose interval excludes 0 at the stated difference."""
    rng = random.Random(20261206)
    for cases, share in ((10, 0.5), (30, 0.3)):
        delta = binary_detectable(cases, share, 0.05)
        won_p, lost_p = shares(delta, share)
        sims, hits = 3000, 0
        for _ in range(sims):
            a, b = {}, {}
            for i in range(cases):
                u = rng.random()
                a[f"c{i}"], b[f"c{i}"] = ([1, 1], [0, 1]) if u < won_p else \
                    ([0, 1], [1, 1]) if u < won_p + lost_p else ([1, 1], [1, 1]) if rng.random() < 0.5 else ([0, 1], [0, 1])
            hits += paired_stats(a, b, 0)["mean_difference_ci"]["low"] > 0
        se = math.sqrt(0.8 * 0.2 / sims)
        assert abs(hits / sims - 0.8) < 4 * se, (cases, share, hits / sims)


def test_a_comparison_of_pass_fail_cases_states_its_exact_figure_and_the_disagreement():
    a = {f"c{i}": [int(i < 7), 1] for i in range(12)}
    b = {f"c{i}": [int(3 <= i < 9), 1] for i in range(12)}  # disagree on c0-2 (a), c7-8 (b): 5 of 12
    figure = paired_stats(a, b, 0)["detectable_difference"]
    assert figure["discordance"] == pytest.approx(5 / 12)
    assert figure["power_method"] == "exact over every pass/fail outcome" and figure["sd_from"] == "this run"
    assert figure["value"] == binary_detectable(12, 5 / 12, 0.05)
    # every case the same: no disagreement measured, the assumption's half
    same = paired_stats(a, dict(a), 0)["detectable_difference"]
    assert same["discordance"] == 0.5 and same["sd_from"] == "assumption"
    # repeats: fractions, not pass/fail: the noncentral t, as before
    three = paired_stats({k: [2, 3] for k in a}, {k: [v[0] * 3, 3] for k, v in b.items()}, 0)["detectable_difference"]
    assert "power_method" not in three and three["test"] == "paired t"


def test_past_the_enumeration_the_normal_theory_agrees_or_errs_on_the_safe_side():
    for share in (0.2, 0.5, 0.9):
        exact = binary_detectable(EXACT_LIMIT, share, 0.05)
        beyond = binary_detectable(EXACT_LIMIT + 1, share, 0.05)
        assert beyond == pytest.approx(exact, rel=0.03)
        assert exact_power(EXACT_LIMIT + 1, beyond, share, 0.05) == pytest.approx(0.8, abs=0.025)
    for cases in (EXACT_LIMIT + 1, 200, 300):
        for share in (0.05, 0.1, 0.2, 0.5, 0.9, 1.0):
            # never much below the 80% it states; above it when the variants rarely disagree
            assert 0.775 <= exact_power(cases, binary_detectable(cases, share, 0.05), share, 0.05) < 0.96


def test_cases_needed_is_the_first_count_that_reaches_80_percent():
    for delta, share in ((0.2, 0.5), (0.3, 0.3), (0.5, 0.6)):
        n = binary_cases_needed(delta, share, 0.05)
        assert exact_power(n, delta, share, 0.05) >= 0.8
        assert all(exact_power(m, delta, share, 0.05) < 0.8 for m in range(2, n))
    # beyond the enumeration, the normal theory: 5 points at half disagreeing needs ~1,560
    assert binary_cases_needed(0.05, 0.5, 0.05) == pytest.approx(1564, abs=10)


def test_three_cases_can_detect_nothing():
    assert binary_detectable(3, 0.5, 0.05) == 2.0  # past what a pass rate can move
    assert binary_detectable(1, 0.5, 0.05) is None


def plan(tmp_path: Path, *args: str) -> str:
    cases = [{"id": f"c{i}", "input": f"q{i}", "expected": "x"} for i in range(int(args[0]))]
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    done = run_cli(["plan", "--cases", "cases.jsonl", "--subject", "mock", *args[1:]], tmp_path)
    assert done.returncode == 0, done.stderr
    return next(line for line in done.stdout.splitlines() if line.startswith("  power:"))


def test_the_plan_says_which_power_it_gives(tmp_path):
    one = plan(tmp_path, "10", "--runs", "1")
    assert "detects differences of 49 points or more" in one
    assert "exact over every pass/fail outcome of the cases, the variants disagreeing on 50% of them" in one
    three = plan(tmp_path, "10", "--runs", "3")
    assert "exact" not in three and "spread of differences 0.707" in three
    tiny = plan(tmp_path, "3", "--runs", "1")
    assert "cannot detect even a 100-point difference (not even a lead on every case is found with 80% power" in tiny


def one_run_pilot(outcomes: list[tuple[str, str]]) -> dict:
    """A pilot report of two variants, one run a case: (a's status, b's status) per case."""
    attempts = [{"case_id": f"c{i}", "variant": v, "run": 1, "status": s}
                for i, pair in enumerate(outcomes) for v, s in zip("ab", pair)]
    return {"plan": {"variants": [{"name": "a"}, {"name": "b"}], "cases": [], "runs": 1}, "attempts": attempts}


def test_a_one_run_pilot_gives_the_share_it_counted():
    # 20 cases: a won 3, b won 1, 16 agreed: the variants disagree on 4 of 20
    pilot = one_run_pilot([("passed", "failed")] * 3 + [("failed", "passed")] + [("passed", "passed")] * 16)
    plan = planned_power(40, alpha=0.05, pilot=pilot, variants=["a", "b"], runs=1)
    assert plan["discordance"] == 0.2 and plan["detectable_difference"] == binary_detectable(40, 0.2, 0.05)
    assert "pilot: a vs b on 20 cases" in plan["sd_from"]
    # every case agreed: nothing measured, the assumption's half (and the words say so)
    same = planned_power(40, alpha=0.05, pilot=one_run_pilot([("passed", "passed")] * 10), variants=["a", "b"], runs=1)
    assert same["discordance"] == 0.5 and "assumed" in same["sd_from"]
    # a pilot of more runs, planned at one: the spread's square plus the lead's
    three = planned_power(40, alpha=0.05, pilot=pilot, variants=["a", "b"], runs=3)
    assert "discordance" not in three and three["detectable_difference"] == detectable_difference(
        three["difference_sd"], 40, 0.05)
