"""The newer figures of a report checked against reference libraries and brute force (issue
probe 14): a real run's pass@k, metric, score and reducer means with their Student t intervals,
sign tests, McNemar, latency quantiles and the detectable difference; the power the detectable
difference is solved on, against scipy's noncentral t. Every figure within 1e-9."""

from __future__ import annotations

import itertools
import json
import math
import os
import statistics
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest

np = pytest.importorskip("numpy")
stats = pytest.importorskip("scipy.stats")
optimize = pytest.importorskip("scipy.optimize")
contingency = pytest.importorskip("statsmodels.stats.contingency_tables")

from scoreboard.stats.methods import STATS_VERSION, computed_as, detectable_difference  # noqa: E402
from scoreboard.stats.student import paired_t_power  # noqa: E402
from tests.cli_inprocess import run_cli  # noqa: E402


def sb(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return run_cli(args, cwd, {**os.environ, "SCOREBOARD_STORE": "none"})


def scipy_power(effect: float, cases: int, alpha: float) -> float:
    """The two-sided paired t test's power on scipy's noncentral t."""
    crit = stats.t.ppf(1 - alpha / 2, cases - 1)
    nc = effect * math.sqrt(cases)
    # the lower tail as the upper tail of -T (scipy's nct.cdf(-crit) is NaN at df 1, nc 16.3)
    return float(stats.nct.sf(crit, cases - 1, nc) + stats.nct.sf(crit, cases - 1, -nc))


def scipy_detectable(cases: int, alpha: float, power: float = 0.8) -> float:
    """The effect with exactly `power` on scipy's noncentral t, to full precision (statsmodels'
    TTestPower.solve_power stops at about 1e-6 and fails at 2-4 cases with alpha 0.01)."""
    guess = detectable_difference(1.0, cases, alpha)
    return optimize.brentq(lambda e: scipy_power(e, cases, alpha) - power, guess * 0.9, guess * 1.1,
                           xtol=1e-15, rtol=1e-15)


@pytest.mark.parametrize("cases", [2, 3, 4, 5, 6, 8, 12, 30, 101, 2001])
@pytest.mark.parametrize("alpha", [0.01, 0.05, 0.1, 0.2])
def test_the_paired_t_power_is_scipys_noncentral_t(cases, alpha):
    # Simpson's rule alone was 2.5e-8 off at 3-5 cases (alpha 0.2)
    for effect in (0.05, 0.5, 1.0, 2.0):
        want = scipy_power(effect, cases, alpha)
        if math.isfinite(want):
            assert paired_t_power(effect, cases, alpha) == pytest.approx(want, abs=1e-11)


def test_the_power_is_the_same_number_whatever_was_asked_before():
    # the quadrature's grid is kept per (cases, alpha, method) between calls (student._power_grid):
    # a power asked first, after others of the same grid, or after other grids is the same float
    from scoreboard.stats.student import _power_grid

    asks = [(0.7, 12, 0.05, False), (0.3, 12, 0.05, False), (0.7, 3, 0.1, True), (1.2, 40, 0.01, False),
            (0.7, 12, 0.05, True), (0.0, 2, 0.05, False)]
    fresh = []
    for ask in asks:
        _power_grid.cache_clear()
        fresh.append(paired_t_power(*ask))
    _power_grid.cache_clear()
    assert [paired_t_power(*ask) for ask in asks + asks] == fresh + fresh


@pytest.mark.parametrize("cases", [3, 4, 5, 6, 10])
@pytest.mark.parametrize("alpha", [0.05, 0.1, 0.2])
def test_the_detectable_difference_is_the_noncentral_t_root_to_1e_9(cases, alpha):
    # it was 1.9e-8 off at 5 cases and alpha 0.1, 5.9e-9 at alpha 0.05
    assert detectable_difference(0.3, cases, alpha) == pytest.approx(0.3 * scipy_detectable(cases, alpha),
                                                                      rel=1e-9)


SUBJECT = '''import hashlib
def answer(input, skill, run, params):
    h = hashlib.sha256(f"{input}|{run}|{params.get('v')}".encode()).digest()
    return f"{h[0]} {h[1]} {h[2]}"
'''
CHECKS = '''def score(output, context):
    a, b, c = map(int, output.split())
    s = ((a + context["vars"]["bias"]) % 256) / 255
    return {"pass": s > 0.4, "score": s, "named_scores": {"prec": b / 255, "rec": c / 255}}
'''
SUITE = '''name: ref
cases: cases.jsonl
runs: 3
graders:
  - {python: {file: checks.py, function: score}, metric: acc, weight: 2}
  - {python: "len(output) > 3", metric: long, weight: 1}
subject: {type: python, function: "subj:answer", model_free: true}
reducers: [max, mode, median, mean, {kind: at_least, k: 2, value: 0.5}]
variants:
  a: {params: {v: 1}}
  b: {params: {v: 2}}
'''


def _t_interval(values, low, high):
    n = len(values)
    half = stats.t.ppf(0.975, n - 1) * np.std(values, ddof=1) / math.sqrt(n)
    return max(low, np.mean(values) - half), min(high, np.mean(values) + half)


def _check_report(report: dict) -> list:
    """Every figure of the report against numpy, scipy, statsmodels and enumeration: the mismatches."""
    bad = []

    def check(name, got, want, tol=1e-9):
        if got is None or want is None or not math.isclose(got, want, rel_tol=tol, abs_tol=tol):
            bad.append((name, got, want))

    by = defaultdict(lambda: defaultdict(list))
    for a in report["attempts"]:
        by[a["variant"]][a["case_id"]].append(a)
    summary = report["summary"]
    for v, cases in by.items():
        sv = summary["variants"][v]
        for k in (1, 2, 3):
            at, hat = [], []
            for atts in cases.values():
                out = [x["status"] == "passed" for x in atts]
                subsets = list(itertools.combinations(out, k))
                at.append(np.mean([any(s) for s in subsets]))
                hat.append(np.mean([all(s) for s in subsets]))
            check(f"{v} pass@{k}", sv["pass_at_k"][str(k)]["value"], np.mean(at))
            check(f"{v} pass^{k}", sv["pass_hat_k"][str(k)]["value"], np.mean(hat))
        blocks = [(name, fig, lambda a, name=name: a["metrics"][name]) for name, fig in sv["metrics"].items()]
        for name, fig, get in blocks + [("score", sv["score"], lambda a: a["score"])]:
            per = [np.mean([get(a) for a in atts]) for atts in cases.values()]
            check(f"{v} {name}", fig["value"], np.mean(per))
            if not fig["ci"]["adjusted"]:
                low, high = _t_interval(per, 0.0, 1.0)
                check(f"{v} {name} low", fig["ci"]["low"], low)
                check(f"{v} {name} high", fig["ci"]["high"], high)
        reducers = {"max": max, "mean": np.mean, "median": np.median, "mode": statistics.mode,
                    "at_least_2@0.5": lambda xs: float(sum(x >= 0.5 for x in xs) >= 2)}
        for name, fig in sv["reducers"].items():
            per = [reducers[name]([a["score"] for a in sorted(atts, key=lambda a: a["run"])]) for atts in cases.values()]
            check(f"{v} reducer {name}", fig["value"], np.mean(per))
        latency = [a["measurements"]["latency_ms"] for atts in cases.values() for a in atts]
        fig = sv["measurements"]["latency_ms"]
        check(f"{v} latency mean", fig["mean"], np.mean(latency))
        check(f"{v} latency median", fig["median"], np.median(latency))
        check(f"{v} latency p95", fig["p95"], np.percentile(latency, 95, method="linear"))
    for comp in summary["comparisons"]:
        ca, cb = by[comp["a"]], by[comp["b"]]

        def rate(atts):
            return np.mean([x["status"] == "passed" for x in atts])

        figures = [("pass rate", comp, rate)]
        figures += [(name, comp["metrics"][name], lambda atts, name=name: np.mean([x["metrics"][name] for x in atts]))
                    for name in comp["metrics"]]
        figures.append(("score", comp["score"], lambda atts: np.mean([x["score"] for x in atts])))
        for name, fig, value in figures:
            diffs = [value(ca[c]) - value(cb[c]) for c in ca]
            won, lost = sum(d > 1e-12 for d in diffs), sum(d < -1e-12 for d in diffs)
            check(f"{name} sign test", fig["sign_test_p"], stats.binomtest(won, won + lost).pvalue if won + lost else 1.0)
            check(f"{name} mean difference", fig["mean_difference"], np.mean(diffs))
            if not fig["mean_difference_ci"]["adjusted"]:
                low, high = _t_interval(diffs, -1.0, 1.0)
                check(f"{name} low", fig["mean_difference_ci"]["low"], low)
                check(f"{name} high", fig["mean_difference_ci"]["high"], high)
            dd = fig["detectable_difference"]
            if dd is not None and dd["sd_from"] == "this run":
                sd = float(np.std(diffs, ddof=1))
                check(f"{name} sd", dd["difference_sd"], sd)
                check(f"{name} detectable", dd["value"], scipy_detectable(len(diffs), dd["alpha"]) * sd)
        ahead = {c: rate(ca[c]) > 0.5 for c in ca}
        behind = {c: rate(cb[c]) > 0.5 for c in ca}
        b01 = sum(1 for c in ca if not ahead[c] and behind[c])
        b10 = sum(1 for c in ca if ahead[c] and not behind[c])
        check("mcnemar", comp["mcnemar"]["p"],
              contingency.mcnemar([[0, b01], [b10, 0]], exact=True).pvalue if b01 + b10 else 1.0)
    return bad


def test_a_real_runs_figures_match_the_references_and_a_version_11_report_still_verifies(tmp_path):
    (tmp_path / "subj.py").write_text(SUBJECT)
    (tmp_path / "checks.py").write_text(CHECKS)
    (tmp_path / "suite.yaml").write_text(SUITE)
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "input": f"q{i}", "vars": {"bias": i * 7}})
                                                  + "\n" for i in range(5)))
    done = sb(tmp_path, "run", "suite.yaml", "--output", "r.json", "--format", "json")
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["summary"]["methods"]["version"] == STATS_VERSION
    assert _check_report(report) == []
    assert sb(tmp_path, "verify", "r.json").returncode == 0
    # The report as version 11 wrote it (the power on Simpson's rule alone): its detectable
    # differences are more than 1e-9 away from this version's, and verify still checks it in full.
    from scoreboard.stats import summary as summarize

    with computed_as(11):
        old = summarize.summarize(report["plan"], report["attempts"])
    old["methods"]["version"] = 11
    now = report["summary"]["comparisons"][0]["score"]["detectable_difference"]["value"]
    then = old["comparisons"][0]["score"]["detectable_difference"]["value"]
    assert not math.isclose(now, then, rel_tol=1e-9)
    (tmp_path / "old.json").write_text(json.dumps({**report, "summary": old}))
    checked = sb(tmp_path, "verify", "old.json")
    assert checked.returncode == 0 and "no mismatch" in checked.stdout, checked.stdout + checked.stderr
    # ... and a version-11 report that carries this version's figures is a mismatch
    wrong = json.loads(json.dumps(report))
    wrong["summary"]["methods"]["version"] = 11
    (tmp_path / "wrong.json").write_text(json.dumps(wrong))
    assert sb(tmp_path, "verify", "wrong.json").returncode != 0


def brute_force_power(cases: int, delta: float, discordance: float, alpha: float) -> float:
    """Every outcome of `cases` pass/fail pairs (won, lost, tied) put through the paired t interval
    at 1 - alpha (with no spread, the README's bound: none of n differing, z^2 / (n + z^2) could)."""
    won_p, lost_p = ((min(1.0, delta), 0.0) if delta >= discordance
                     else ((discordance + delta) / 2, (discordance - delta) / 2))
    crit = stats.t.ppf(1 - alpha / 2, cases - 1)
    z = stats.norm.ppf(1 - alpha / 2)
    total = 0.0
    for won in range(cases + 1):
        for lost in range(min(won, cases - won + 1)):
            values = np.array([1.0] * won + [-1.0] * lost + [0.0] * (cases - won - lost))
            if won == cases:
                above = 1 - 2 * z * z / (cases + z * z) > 0
            else:
                above = values.mean() - crit * values.std(ddof=1) / math.sqrt(cases) > 0
            if above:
                total += stats.multinomial.pmf([won, lost, cases - won - lost], cases,
                                               [won_p, lost_p, max(0.0, 1 - won_p - lost_p)])
    return total


@pytest.mark.parametrize("cases,discordance", [(6, 0.5), (10, 0.5), (10, 0.2), (30, 0.33), (30, 0.8)])
def test_the_exact_pass_fail_detectable_difference_is_the_brute_force_root_to_1e_9(cases, discordance):
    from scoreboard.stats.binary_power import binary_detectable

    want = optimize.brentq(lambda d: brute_force_power(cases, d, discordance, 0.05) - 0.8, 1e-6, 1.0,
                           xtol=1e-14, rtol=1e-14)
    # the bisection stopped at 1e-7 (statistics version 11): 4e-8 off at 10 cases disagreeing on half
    assert binary_detectable(cases, discordance, 0.05) == pytest.approx(want, rel=1e-9, abs=1e-11)
    with computed_as(11):
        assert abs(binary_detectable(cases, discordance, 0.05) - want) < 1e-7


def test_one_case_compared_on_its_scores_reads_1_case(tmp_path):
    (tmp_path / "subj.py").write_text(SUBJECT)
    (tmp_path / "checks.py").write_text(CHECKS)
    (tmp_path / "suite.yaml").write_text(SUITE)
    (tmp_path / "cases.jsonl").write_text(json.dumps({"id": "c0", "input": "q0", "vars": {"bias": 0}}) + "\n")
    done = sb(tmp_path, "run", "suite.yaml", "--output", "r.json", "--format", "json")
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert _check_report(report) == []  # one case: every interval the no-spread bound, the means exact
    rows = [line for line in done.stdout.splitlines() if "a vs b, acc:" in line]
    assert len(rows) == 1 and ("a higher on 1 case," in rows[0] or "a higher on 0 cases," in rows[0]), rows
    assert "1 cases" not in done.stdout
