"""The statistics of real reports at uneven shapes, checked from outside: the real CLI runs python
subjects whose per-case pass probability p_i is drawn from a Beta (seeded per case, repeats sharing
it), with errors, judge "unassessed" grades, not-graded cases and cases only one variant has mixed
in; the JSON report's figures are checked against scipy/statsmodels on fixed datasets, and its
intervals' coverage and false-positive rate by simulation."""

from __future__ import annotations

import contextlib
import io
import json
import math
import random
import shutil

import pytest

from scoreboard.cli.main import main

SUBJECT = '''
import random

def answer(input, skill, run, params):
    """'case SEED' -> yes/no with the case's own p ~ Beta(a, b); errors and undecided grades at rates."""
    seed = int(input.split()[1])
    p = random.Random(seed).betavariate(params["a"], params["b"])
    r = random.Random(f"{seed}-{run}-{params['salt']}")
    if r.random() < params["err"]:
        raise RuntimeError("scripted error")
    undecided = r.random() < params["unassessed"] or (params.get("skip") and seed % 10 == 0)
    return ("yes" if r.random() < p else "no") + (" ?" if undecided else "")
'''

TABLE = '''
def answer(input, skill, run, params):
    """'a=PFE b=PPF': each variant's scripted outcome per run (P pass, F fail, E error)."""
    code = dict(part.split("=") for part in input.split())[params["v"]][run]
    if code == "E":
        raise RuntimeError("scripted error")
    return "yes" if code == "P" else "no"
'''

CHECKS = '''
def judge(output, context):
    if output.endswith("?"):
        return {"pass": None, "reason": "could not decide"}
    return output.startswith("yes")
'''


@pytest.fixture
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SCOREBOARD_STORE", "none")
    (tmp_path / "subj9.py").write_text(SUBJECT)
    (tmp_path / "table9.py").write_text(TABLE)
    (tmp_path / "checks9.py").write_text(CHECKS)
    return tmp_path


def _run(here, cases: list[dict], variants: dict[str, dict], runs: int, grader: bool = True) -> dict:
    with open(here / "cases.jsonl", "w") as f:
        for c in cases:
            f.write(json.dumps(c) + "\n")
    lines = ["cases: cases.jsonl"]
    if grader:
        lines.append('defaults: {graders: ["python-file:checks9.py:judge"]}')
    lines.append("variants:")
    for name, (module, params) in variants.items():
        lines.append(f"  {name}: {{subject: {{type: python, function: \"{module}:answer\", model_free: true}}, "
                     f"params: {json.dumps(params)}}}")
    (here / "suite.yaml").write_text("\n".join(lines) + "\n")
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(["run", "suite.yaml", "--runs", str(runs), "--output", "o.json", "--no-progress",
                     "--format", "json"])
    assert code in (0, 2), err.getvalue()
    report = json.loads((here / "o.json").read_text())
    (here / "o.json").unlink()
    shutil.rmtree(here / "o")
    return report


def _beta_report(here, rep: int, n: int, runs: int, *, err=0.0, unassessed=0.0, a=2.0, b=2.0,
                 ungraded=0, skip_b=False) -> dict:
    cases = [{"id": f"c{i}", "input": f"case {rep * 10000 + i}"} for i in range(n)]
    cases += [{"id": f"u{i}", "input": f"case {rep * 10000 + 5000 + i}", "graders": [], "replace": True}
              for i in range(ungraded)]
    params = {"err": err, "unassessed": unassessed, "a": a, "b": b}
    return _run(here, cases, {"a": ("subj9", {**params, "salt": 1}),
                              "b": ("subj9", {**params, "salt": 2, "skip": skip_b})}, runs)


def _truth(err, unassessed, a, b) -> float:
    """The pass rate the report estimates: passed / (passed + failed + errors), undecided attempts
    outside it (README, Statistics)."""
    judged = (1 - err) * (1 - unassessed)
    return judged * a / (a + b) / (judged + err)


# ---------------------------------------------------------------------------------------------
# Fixed datasets against scipy / statsmodels


def test_fixed_datasets_agree_with_scipy_and_statsmodels(here):
    stats = pytest.importorskip("scipy.stats")
    sm_prop = pytest.importorskip("statsmodels.stats.proportion")
    from statsmodels.stats.contingency_tables import mcnemar
    from statsmodels.stats.power import TTestPower

    rng = random.Random(9)
    for trial in range(14):
        runs = [1, 1, 2, 3, 5][trial % 5]
        n = rng.randint(2, 35)
        table = [("".join(rng.choice("PPFFE") for _ in range(runs)), "".join(rng.choice("PPFFE") for _ in range(runs)))
                 for _ in range(n)]
        r = _run(here, [{"id": f"c{i}", "input": f"a={x} b={y}", "expected": "yes"} for i, (x, y) in enumerate(table)],
                 {"a": ("table9", {"v": "a"}), "b": ("table9", {"v": "b"})}, runs, grader=False)
        s = r["summary"]
        for side, name in ((0, "a"), (1, "b")):
            v = s["variants"][name]
            hits = [t[side].count("P") for t in table]
            # errors are failures of the rate: passed / (passed + failed + errors)
            assert v["errors"] == sum(t[side].count("E") for t in table)
            assert v["passed"] + v["failed"] + v["errors"] == n * runs
            assert v["pass_rate"] == pytest.approx(sum(hits) / (n * runs), abs=1e-15)
            assert v["pass_rate_ci"]["method"] == "wilson-effective-n" and v["pass_rate_ci"]["unit"] == "case"
            if runs == 1:
                low, high = sm_prop.proportion_confint(sum(hits), n, alpha=0.05, method="wilson")
                assert (v["pass_rate_ci"]["low"], v["pass_rate_ci"]["high"]) == pytest.approx((low, high), abs=1e-12)
            else:
                for k in range(1, runs + 1):
                    at = sum(1 - math.comb(runs - x, k) / math.comb(runs, k) for x in hits) / n
                    hat = sum(math.comb(x, k) / math.comb(runs, k) for x in hits) / n
                    assert v["pass_at_k"][str(k)]["value"] == pytest.approx(at, abs=1e-12)
                    assert v["pass_hat_k"][str(k)]["value"] == pytest.approx(hat, abs=1e-12)
        c = s["comparisons"][0]
        d = [(x.count("P") - y.count("P")) / runs for x, y in table]
        wins, losses = sum(x > 0 for x in d), sum(x < 0 for x in d)
        assert (c["a_wins"], c["b_wins"], c["ties"]) == (wins, losses, n - wins - losses)
        assert c["mean_difference"] == pytest.approx(sum(d) / n, abs=1e-12)
        if wins + losses:
            assert c["sign_test_p"] == pytest.approx(stats.binomtest(wins, wins + losses).pvalue, abs=1e-12)
        maj = [(2 * x.count("P") > runs, 2 * y.count("P") > runs) for x, y in table]
        cells = [[sum(not p and not q for p, q in maj), sum(not p and q for p, q in maj)],
                 [sum(p and not q for p, q in maj), sum(p and q for p, q in maj)]]
        assert c["mcnemar"]["p"] == pytest.approx(mcnemar(cells, exact=True).pvalue, abs=1e-12)
        mean = sum(d) / n
        sd = math.sqrt(sum((x - mean) ** 2 for x in d) / (n - 1))
        if sd > 1e-9:
            low, high = stats.t.interval(0.95, n - 1, loc=mean, scale=sd / math.sqrt(n))
            ci = c["mean_difference_ci"]
            assert (ci["low"], ci["high"]) == pytest.approx((max(-1, low), min(1, high)), abs=1e-12)
            assert ci["method"] == "student-t" and ci["cases"] == n
            power = c["detectable_difference"]
            if "power_method" not in power:  # repeats: the noncentral t, as statsmodels solves it
                effect = TTestPower().solve_power(nobs=n, alpha=0.05, power=0.8)
                assert power["value"] == pytest.approx(effect * sd, rel=1e-5)


# ---------------------------------------------------------------------------------------------
# Simulation: coverage and false positives at uneven shapes


def test_uneven_shape_coverage_and_false_positives(here):
    """Errors, undecided grades and repeats: 2 x 160 intervals cover the true rate about 95% of
    the time, and identical variants' paired interval excludes 0 rarely. (The first report is a
    full CLI run, the rest summarized from the same draws: `_coverage`.)"""
    coverage, false_positive = _coverage(here, 160, 12, 3, err=0.15, unassessed=0.1, a=2, b=3)
    assert coverage >= 0.90
    assert false_positive <= 0.10


def _beta_attempts(rep: int, n: int, runs: int, *, err=0.0, unassessed=0.0, a=2.0, b=2.0) -> tuple[dict, list]:
    """The plan and attempts `_beta_report` has its CLI run make, drawn here without the run: the
    subject's draws in its order (its case's p, then per run: error, undecided, pass)."""
    cases = [{"id": f"c{i}", "input": f"case {rep * 10000 + i}"} for i in range(n)]
    attempts = []
    for i in range(n):
        seed = rep * 10000 + i
        p = random.Random(seed).betavariate(a, b)
        for variant, salt in (("a", 1), ("b", 2)):
            for run in range(runs):
                r = random.Random(f"{seed}-{run}-{salt}")
                if r.random() < err:
                    status = "error"
                elif r.random() < unassessed:
                    status = "unassessed"
                else:
                    status = "passed" if r.random() < p else "failed"
                attempts.append({"case_id": f"c{i}", "variant": variant, "run": run, "status": status,
                                 "grades": [], "measurements": {}})
    return {"cases": cases, "variants": [{"name": "a"}, {"name": "b"}], "runs": runs, "seed": 0}, attempts


def _figures(summary: dict) -> tuple:
    """What the simulation reads of a summary: both pass-rate intervals and the paired difference's."""
    return (summary["variants"]["a"]["pass_rate_ci"], summary["variants"]["b"]["pass_rate_ci"],
            summary["comparisons"][0]["mean_difference_ci"])


@pytest.mark.slow
@pytest.mark.parametrize("reports, n, runs, shape", [
    (1000, 10, 3, {"err": 0.1, "a": 9, "b": 1}),
    (1000, 8, 3, {"err": 0.3, "unassessed": 0.2}),
    (1000, 30, 1, {"err": 0.2, "a": 1, "b": 4}),
    (1000, 15, 5, {"err": 0.05, "unassessed": 0.3, "a": 0.5, "b": 0.5}),
])
def test_uneven_shape_coverage_more_shapes(here, reports, n, runs, shape):
    """1,000 seeded reports a shape cover the true rate 0.9375 to 0.96 of the time and exclude 0
    in 0.036 to 0.042 (standard errors about 0.007): bounds 0.92 and 0.06. (Through the CLI,
    300 reports a shape took 115 s of CPU; at 100 their rates had sat within one standard error
    of looser bounds.)"""
    coverage, false_positive = _coverage(here, reports, n, runs, **shape)
    assert coverage >= 0.92, coverage
    assert false_positive <= 0.06, false_positive


def _coverage(here, reports: int, n: int, runs: int, **shape) -> tuple[float, float]:
    """(share of the 2 x `reports` pass-rate intervals covering the true rate, share of paired
    intervals excluding 0) over seeded reports of identical variants. The first report is a full
    CLI run, whose attempts and figures must equal those drawn and summarized here; the rest are
    summarized straight from the same draws (a report is 0.17 s of CPU through the CLI, 0.01 s
    here). The CLI's own part is checked by that report and by this file's other tests."""
    from scoreboard.stats.summary import summarize

    cli = _beta_report(here, 0, n, runs, **shape)
    plan, attempts = _beta_attempts(0, n, runs, **shape)
    assert sorted((x["case_id"], x["variant"], x["run"], x["status"]) for x in cli["attempts"]) == \
        sorted((x["case_id"], x["variant"], x["run"], x["status"]) for x in attempts)
    assert _figures(summarize({**plan, "seed": cli["plan"]["seed"]}, attempts)) == _figures(cli["summary"])
    truth = _truth(shape.get("err", 0.0), shape.get("unassessed", 0.0), shape.get("a", 2.0), shape.get("b", 2.0))
    covered = excluded = 0
    for rep in range(reports):
        plan, attempts = _beta_attempts(rep, n, runs, **shape)
        low_a, low_b, diff = _figures(summarize({**plan, "seed": cli["plan"]["seed"]}, attempts))
        covered += sum(ci["low"] <= truth <= ci["high"] for ci in (low_a, low_b))
        excluded += not (diff["low"] <= 0 <= diff["high"])
    return covered / (2 * reports), excluded / reports


# ---------------------------------------------------------------------------------------------
# How uneven attempts count


def test_one_case_errored_on_two_of_three_runs(here):
    """--runs 3, one case errored on 2 of 3 runs: both errors are failures of its case (1/3 at
    best), the case still counts once, and its pass@3 is over 3 runs."""
    table = [("PEE", "PPP")] + [("PPF", "PFP")] * 4
    r = _run(here, [{"id": f"c{i}", "input": f"a={x} b={y}", "expected": "yes"} for i, (x, y) in enumerate(table)],
             {"a": ("table9", {"v": "a"}), "b": ("table9", {"v": "b"})}, 3, grader=False)
    a = r["summary"]["variants"]["a"]
    assert (a["passed"], a["failed"], a["errors"], a["cases"]) == (9, 4, 2, 5)
    assert a["pass_rate"] == pytest.approx(9 / 15)
    assert a["case_stability"]["c0"] == pytest.approx(1 / 3)
    assert a["pass_at_k"]["3"]["cases"] == 5 and a["pass_hat_k"]["3"]["value"] == 0.0
    # effective cases: between 1 and the attempts, by the cluster-robust variance over cases
    p = 9 / 15
    var = 5 / 4 * sum((x - p * 3) ** 2 for x in [1, 2, 2, 2, 2]) / 15 ** 2
    assert a["pass_rate_ci"]["effective_cases"] == pytest.approx(min(15, p * (1 - p) / var), abs=1e-5)
    comp = r["summary"]["comparisons"][0]
    assert (comp["a_wins"], comp["b_wins"], comp["ties"]) == (0, 1, 4)
    assert comp["mean_difference"] == pytest.approx(-2 / 3 / 5)
    assert "small sample: fewer than 30 cases" in comp["flags"]
    assert "small sample: fewer than 10 discordant pairs" in comp["flags"]


def test_undecided_grades_stay_outside_the_rate_and_cases_only_one_variant_has(here):
    """A case every one of b's attempts left undecided is b's unassessed count, never a 0 or a
    pass; the pair compares only the cases both judged."""
    r = _beta_report(here, 3, 20, 2, unassessed=0.0, skip_b=True)
    s = r["summary"]
    a, b = s["variants"]["a"], s["variants"]["b"]
    skipped = [i for i in range(20) if (30000 + i) % 10 == 0]
    assert skipped and b["unassessed"] == 2 * len(skipped)
    assert b["cases"] == 20 - len(skipped) and a["cases"] == 20
    assert b["passed"] + b["failed"] + b["errors"] == 2 * (20 - len(skipped))
    assert b["pass_rate"] == pytest.approx(b["passed"] / (b["passed"] + b["failed"] + b["errors"]))
    assert s["comparisons"][0]["cases"] == 20 - len(skipped)


def test_an_error_of_a_not_graded_case_stays_outside_the_pass_rate(here):
    """A case with no grader is outside the pass rate, never passed or failed (README, Defaults
    and record-only cases). When its subject raised, the error was counted as a failure of the
    rate: a case that can never pass dragged the rate down and counted among its cases. The error
    is still counted and shown."""
    cases = [{"id": f"c{i}", "input": "a=P b=P"} for i in range(4)]
    cases += [{"id": "rec", "input": "a=E b=P", "graders": [], "replace": True}]
    r = _run(here, cases, {"a": ("table9", {"v": "a"}), "b": ("table9", {"v": "b"})}, 1)
    a, b = r["summary"]["variants"]["a"], r["summary"]["variants"]["b"]
    assert b["not_graded"] == 1 and b["pass_rate"] == 1.0 and b["cases"] == 4
    assert a["errors"] == 1  # the error is data: counted, shown
    assert a["errors_not_graded"] == 1
    assert a["pass_rate"] == 1.0 and a["cases"] == 4
    assert a["pass_rate_ci"] == b["pass_rate_ci"]
    assert a["per_run"][0]["pass_rate"] == 1.0
    comp = r["summary"]["comparisons"][0]
    assert comp["cases"] == 4 and comp["ties"] == 4
    assert r["summary"]["methods"]["version"] >= 7  # errors of not-graded cases left the rate in version 7
    # the report verifies, and the terminal's count is over the attempts in the rate
    from scoreboard.cli.main import main as cli

    (here / "r.json").write_text(json.dumps(r))
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        assert cli(["verify", "r.json"]) == 0, out.getvalue()
    from scoreboard.record.terminal import print_summary
    from scoreboard.record.schema import Report

    shown = io.StringIO()
    print_summary(Report.model_validate(r), {}, shown)
    assert "a: pass rate 100.0%" in shown.getvalue() and "(4/4, 1 error)" in shown.getvalue()
