"""Paired comparison, checked against scipy / statsmodels on fixed data."""

from __future__ import annotations

import random

import numpy as np
import pytest
from scipy.stats import binomtest
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar

from scoreboard.stats.comparison import EXPLORATORY, differs_in
from scoreboard.stats.summary import summarize
from tests.test_stats import att, plan_for

P, F, E = "passed", "failed", "error"


def build(per_variant: dict[str, list[list[str] | None]]):
    """{variant: [runs of statuses for case c{i}, or None when the case is missing]}."""
    attempts = []
    for v, cases in per_variant.items():
        for i, runs in enumerate(cases):
            for r, status in enumerate(runs or ()):
                attempts.append(att(f"c{i}", v, r, status))
    return attempts


def compare(per_variant, runs=1, seed=0, plan=None):
    n = max(len(c) for c in per_variant.values())
    plan = plan or plan_for(n, variants=tuple(per_variant), runs=runs, seed=seed)
    return summarize(plan, build(per_variant))["comparisons"]


def one_run(seq):
    return [[s] for s in seq]


# Fixed data: 40 cases, a better on 14, b better on 3, 23 ties (18 both pass, 5 both fail).
A = [P] * 14 + [F] * 3 + [P] * 18 + [F] * 5
B = [F] * 14 + [P] * 3 + [P] * 18 + [F] * 5


def test_counts_and_sign_test_match_scipy():
    (c,) = compare({"careful": one_run(A), "basic": one_run(B)})
    assert (c["a"], c["b"]) == ("careful", "basic")
    assert (c["cases"], c["a_wins"], c["b_wins"], c["ties"], c["discordant"]) == (40, 14, 3, 23, 17)
    assert c["sign_test_p"] == pytest.approx(binomtest(14, 17, 0.5).pvalue, rel=1e-12)
    assert c["mean_difference"] == pytest.approx((14 - 3) / 40)
    assert c["flags"] == []
    # The headline in points, with the paired difference's Student t interval (scipy's) and the
    # sign test's p-value in the one p format.
    low, high = t_reference([1] * 14 + [-1] * 3 + [0] * 23)
    p = binomtest(14, 17, 0.5).pvalue
    assert c["headline"] == (f"careful +27.5 points (95% CI {low * 100:.1f}–{high * 100:.1f}) over basic, "
                             f"sign test p={p:.4f}; better on 14 cases, worse on 3, 23 ties")


def test_mcnemar_matches_statsmodels():
    (c,) = compare({"careful": one_run(A), "basic": one_run(B)})
    # Index 0 = fail, 1 = pass; rows are a, columns b.
    table = [[5, 3], [14, 18]]
    ref = sm_mcnemar(table, exact=True)
    assert c["mcnemar"]["b01"] == 3 and c["mcnemar"]["b10"] == 14
    assert c["mcnemar"]["p"] == pytest.approx(ref.pvalue, rel=1e-12)


def t_reference(diffs):
    """scipy's Student t interval of the mean of per-case differences."""
    from scipy import stats as st

    d = np.asarray(diffs, dtype=float)
    return st.t.interval(0.95, len(d) - 1, loc=d.mean(), scale=st.sem(d))


def test_mean_difference_uses_a_t_interval_and_no_seed():
    rnd = random.Random(0)
    a = [[rnd.choice([P, F]) for _ in range(3)] for _ in range(40)]
    b = [[rnd.choice([P, F, F]) for _ in range(3)] for _ in range(40)]
    (one,) = compare({"a": a, "b": b}, runs=3, seed=4)
    (other,) = compare({"a": a, "b": b}, runs=3, seed=5)
    ci = one["mean_difference_ci"]
    assert ci == other["mean_difference_ci"]  # deterministic: no resampling
    assert ci["method"] == "student-t" and ci["level"] == 0.95 and ci["unit"] == "case" and not ci["adjusted"]
    diffs = [sum(x == P for x in ra) / 3 - sum(x == P for x in rb) / 3 for ra, rb in zip(a, b)]
    assert (ci["low"], ci["high"]) == pytest.approx(t_reference(diffs), abs=1e-12)
    assert ci["low"] <= one["mean_difference"] <= ci["high"]


def test_mean_difference_of_single_runs_against_scipy():
    (c,) = compare({"a": one_run(A), "b": one_run(B)}, seed=4)
    ci = c["mean_difference_ci"]
    diffs = [1.0] * 14 + [-1.0] * 3 + [0.0] * 23
    assert (ci["low"], ci["high"]) == pytest.approx(t_reference(diffs), abs=1e-12)
    assert ci["low"] <= c["mean_difference"] <= ci["high"]


def test_detectable_difference_is_the_paired_t_tests():
    (c,) = compare({"a": one_run(A), "b": one_run(B)})
    mde = c["detectable_difference"]
    diffs = np.array([1.0] * 14 + [-1.0] * 3 + [0.0] * 23)
    from statsmodels.stats.power import TTestPower

    # statsmodels' power of a one-sample t test at that effect size is 80%.
    effect = mde["value"] / diffs.std(ddof=1)
    power = TTestPower().power(effect_size=effect, nobs=len(diffs), alpha=0.05, alternative="two-sided")
    assert power == pytest.approx(0.8, abs=0.01)
    assert (mde["power"], mde["alpha"], mde["sd_from"], mde["cases"]) == (0.8, 0.05, "this run", 40)


def test_repeats_are_averaged_per_case_first():
    a = [[P, P, F], [P, F, F], [F, F, F], [P, P, P]]
    b = [[P, F, F], [P, F, F], [P, P, F], [P, P, P]]
    (c,) = compare({"a": a, "b": b}, runs=3)
    assert c["cases"] == 4  # never 12
    assert (c["a_wins"], c["b_wins"], c["ties"]) == (1, 1, 2)
    assert c["mean_difference"] == pytest.approx((1 / 3 + 0 - 2 / 3 + 0) / 4)
    # Majorities: a = [1, 0, 0, 1], b = [0, 0, 1, 1] -> b10 = 1, b01 = 1.
    assert c["mcnemar"] == {"b01": 1, "b10": 1, "p": 1.0}


def test_half_passing_counts_as_fail_for_mcnemar():
    a = [[P, F], [P, F]]
    b = [[F, F], [P, P]]
    (c,) = compare({"a": a, "b": b}, runs=2)
    assert (c["a_wins"], c["b_wins"]) == (1, 1)
    # a's 1/2 is a fail, so case 0 is concordant (both fail) and case 1 is a fail / pass.
    assert c["mcnemar"]["b01"] == 1 and c["mcnemar"]["b10"] == 0
    ref = sm_mcnemar([[1, 1], [0, 0]], exact=True)
    assert c["mcnemar"]["p"] == pytest.approx(ref.pvalue)


def test_no_discordant_pairs_and_all_ties():
    (c,) = compare({"a": one_run([P, F, P]), "b": one_run([P, F, P])})
    assert (c["a_wins"], c["b_wins"], c["ties"], c["discordant"]) == (0, 0, 3, 0)
    assert c["sign_test_p"] == 1.0 and c["mcnemar"]["p"] == 1.0
    assert c["mean_difference"] == 0.0
    # Three ties do not prove the variants equal: never a zero-width interval.
    ci = c["mean_difference_ci"]
    assert ci["adjusted"] and ci["low"] < 0 < ci["high"] and ci["high"] - ci["low"] > 0.5
    assert "small sample: fewer than 10 discordant pairs" in c["flags"]
    assert "small sample: fewer than 30 cases" in c["flags"]


def test_unanimous_cases_get_wilsons_bound_on_the_share_that_could_differ():
    from statsmodels.stats.proportion import proportion_confint

    from scoreboard.stats.methods import mean_interval

    # 20 cases that all tie: none of 20 differed, so up to Wilson's bound on 0 of 20 could
    # (statsmodels' Wilson upper bound), anywhere on [-1, 1].
    w20 = proportion_confint(0, 20, alpha=0.05, method="wilson")[1]
    ci = mean_interval([0.0] * 20, -1.0, 1.0)
    assert ci["adjusted"] and (ci["low"], ci["high"]) == (pytest.approx(-w20, abs=1e-12), pytest.approx(w20, abs=1e-12))
    # dQ on 8 cases that all differ by +2 on -3..3 printed "+2.00 (95% CI +2.00 to +2.00)".
    w8 = proportion_confint(0, 8, alpha=0.05, method="wilson")[1]
    ci = mean_interval([2.0] * 8, -3.0, 3.0)
    assert ci["low"] == pytest.approx(2 - w8 * 5, abs=1e-12) and ci["high"] == pytest.approx(2 + w8 * 1, abs=1e-12)
    # The bound is never narrower than what the t interval gives once one case differs by the
    # smallest step: ten ties hold at least as much doubt as nine ties and one win.
    tied, one_win = mean_interval([0.0] * 10, -1.0, 1.0), mean_interval([0.0] * 9 + [1.0], -1.0, 1.0)
    assert tied["low"] < one_win["low"] - 0.1 and tied["high"] - tied["low"] > 0.5


def test_all_tie_interval_covers_a_real_difference_at_ten_cases():
    # Exact coverage (every report of 10 cases, one run each, enumerated), B better by 0.2 per
    # case, p = 0.1, ICC 0.5: 5.4% of the reports tie on every case; the former pseudo-case
    # interval for them, +-0.1970, left out the truth -0.1971 (coverage 0.911).
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(
        "calibration", Path(__file__).resolve().parents[1] / "benchmarks" / "calibration.py")
    calibration = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(calibration)
    assert 0.93 <= calibration.exact_difference_one_run(10, 0.1, 0.5) <= 0.97


def test_single_case():
    (c,) = compare({"a": one_run([P]), "b": one_run([F])})
    assert (c["cases"], c["a_wins"], c["b_wins"]) == (1, 1, 0)
    assert c["sign_test_p"] == pytest.approx(binomtest(1, 1, 0.5).pvalue)
    assert c["mean_difference"] == 1.0
    ci = c["mean_difference_ci"]  # one case: as wide as the scale allows, not [1, 1]
    assert ci["adjusted"] and ci["low"] < 0.5 and ci["high"] == 1.0


def test_variant_with_only_errors_is_still_compared():
    s = summarize(plan_for(5, variants=("a", "b")), build({"a": one_run([P, P, F, P, P]), "b": one_run([E] * 5)}))
    assert s["variants"]["b"]["pass_rate"] == 0.0
    (c,) = s["comparisons"]
    assert (c["cases"], c["a_wins"], c["b_wins"]) == (5, 4, 0)
    assert c["sign_test_p"] == pytest.approx(binomtest(4, 4, 0.5).pvalue)
    assert c["mcnemar"]["b10"] == 4


def test_variant_without_judged_attempts():
    (c,) = compare({"a": one_run([P, F]), "b": one_run(["unassessed", "not-run"])})
    assert c["cases"] == 0 and c["a_wins"] == c["b_wins"] == c["ties"] == 0
    # no case compared: no test at all (it read p=1.0, a figure with no evidence behind it)
    assert c["sign_test_p"] is None and c["mcnemar"] == {"b01": 0, "b10": 0, "p": None}
    assert c["mean_difference"] is None and c["mean_difference_ci"] is None
    assert "no case was judged in both variants" in c["flags"]
    assert "nothing to compare" in c["headline"]


def test_one_variant_has_no_comparisons():
    assert compare({"a": one_run([P, F])}) == []


def test_cases_missing_from_one_variant_are_left_out():
    (c,) = compare({"a": one_run([P, P, P, F]), "b": [[F], None, [F], None]})
    assert c["cases"] == 2 and c["a_wins"] == 2


def test_pairs_in_plan_order_and_exploratory_flag():
    comps = compare({"x": one_run([P]), "y": one_run([F]), "z": one_run([P])})
    assert [(c["a"], c["b"]) for c in comps] == [("x", "y"), ("x", "z"), ("y", "z")]
    assert all(EXPLORATORY in c["flags"] for c in comps)
    (single,) = compare({"x": one_run([P]), "y": one_run([F])})
    assert EXPLORATORY not in single["flags"]


def test_large_sample_has_no_small_sample_flags():
    (c,) = compare({"a": one_run([P] * 12 + [F] * 20), "b": one_run([F] * 12 + [F] * 20)})
    assert c["flags"] == []
    assert "small sample" not in c["headline"]


def test_headline_names_the_leader_from_its_side_and_keeps_flags_out():
    # b ahead: the sentence is said from b's side, the interval turned round with it.
    (c,) = compare({"basic": one_run([F] * 5 + [P] * 3), "careful": one_run([P] * 8)})
    low, high = t_reference([1] * 5 + [0] * 3)
    high = min(high, 1.0)  # the interval is clipped to the scale of a difference of rates
    assert c["headline"] == (f"careful +62.5 points (95% CI {low * 100:.1f}–{high * 100:.1f}) over basic, "
                             f"sign test p=0.0625; better on 5 cases, worse on 0, 3 ties")
    # The small-sample flags stay in `flags`, said once by each rendering, never in the headline.
    assert any(f.startswith("small sample") for f in c["flags"]) and "small sample" not in c["headline"]


def test_headline_with_an_interval_across_zero_and_a_level_pair():
    (c,) = compare({"a": one_run([P, F, P, F, P, P]), "b": one_run([F, P, P, F, F, P])})
    low, high = t_reference([1, -1, 0, 0, 1, 0])
    assert c["headline"].startswith(f"a +16.7 points (95% CI {low * 100:.1f} to {high * 100:.1f}) over b, sign test p=")
    (even,) = compare({"a": one_run([P, F, P]), "b": one_run([F, P, P])})
    assert even["headline"].startswith("a and b even: 0.0 points apart (95% CI ")
    assert even["headline"].endswith("sign test p=1.0000; a better on 1 case, worse on 1, 1 tie")


@pytest.mark.parametrize("p,text", [(1.0, "p=1.0000"), (0.0312, "p=0.0312"), (0.00012207, "p=0.0001"),
                                    (0.00005, "p=0.0001"), (0.0000499, "p<0.0001"), (0.0, "p<0.0001")])
def test_one_p_value_format(p, text):
    from scoreboard.stats.comparison import format_p, p_text

    assert p_text(p) == text and format_p(p) == text[1:].lstrip("=")
    assert format_p(None) == "n/a"


def field_attempt(case, variant, run, values):
    fields = [{"path": path, "passed": ok} for path, ok in values.items()]
    status = P if all(values.values()) else F
    return att(case, variant, run, status, fields=fields, grader="fields")


def test_field_comparisons():
    attempts = []
    for i in range(6):
        for r in range(2):
            attempts.append(field_attempt(f"c{i}", "a", r, {"name": True, "date": i < 3 or r == 0}))
            attempts.append(field_attempt(f"c{i}", "b", r, {"name": i != 0, "date": i < 2}))
    attempts.append(field_attempt("c0", "a", 0, {"only_a": True}))
    s = summarize(plan_for(6, variants=("a", "b"), runs=2), attempts)
    (c,) = s["comparisons"]
    assert sorted(c["fields"]) == ["date", "name"]  # only paths both variants have
    name = c["fields"]["name"]
    assert (name["cases"], name["a_wins"], name["b_wins"], name["ties"]) == (6, 1, 0, 5)
    assert name["sign_test_p"] == 1.0
    date = c["fields"]["date"]
    # a: 1, 1, 1, .5, .5, .5 ; b: 1, 1, 0, 0, 0, 0
    assert (date["a_wins"], date["b_wins"], date["ties"]) == (4, 0, 2)
    assert date["mean_difference"] == pytest.approx((1 + 0.5 * 3) / 6)
    assert date["sign_test_p"] == pytest.approx(binomtest(4, 4, 0.5).pvalue)
    assert date["mean_difference_ci"]["method"] == "student-t"
    # Two fields: their figures are exploratory; the pair's own headline figures are not.
    assert EXPLORATORY in c["field_flags"] and EXPLORATORY not in c["flags"]


def test_same_path_from_two_graders_is_kept_apart():
    attempts = []
    for v in ("a", "b"):
        attempts.append({**att("c0", v), "grades": [
            {"grader": "fields", "passed": True, "score": None, "reason": "", "fields": [{"path": "x", "passed": True}]},
            {"grader": "json-fields", "passed": True, "score": None, "reason": "",
             "fields": [{"path": "x", "passed": v == "a"}]}]})
    (c,) = summarize(plan_for(1, variants=("a", "b")), attempts)["comparisons"]
    assert sorted(c["fields"]) == ["fields:x", "json-fields:x"]
    assert c["fields"]["json-fields:x"]["a_wins"] == 1


def test_differs_in():
    base = {"name": "a", "subject": {"type": "openai", "model": "m1"}, "skill_hash": None, "params": {}}
    assert differs_in(base, dict(base, name="b")) == []
    assert differs_in(base, dict(base, skill_hash="h")) == ["skill"]
    assert differs_in(base, dict(base, subject={"type": "openai", "model": "m2"}, params={"t": 1})) == \
        ["subject", "params"]
    assert differs_in(base, dict(base, params=None)) == []
    plan = plan_for(1, variants=("a", "b"))
    plan["variants"][1]["skill_hash"] = "h"
    (c,) = summarize(plan, build({"a": one_run([P]), "b": one_run([P])}))["comparisons"]
    assert c["differs_in"] == ["skill"]
