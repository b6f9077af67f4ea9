"""Probes of the CI-facing decisions: gates never pass on unknown data, the baseline gate says
what it could not compare, `plan`'s power figures match statsmodels' TTestPower, and exit codes."""

from __future__ import annotations

import json
import math
import os
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest
from statsmodels.stats.power import TTestPower

from scoreboard.engine.outcomes import exit_code_of_report
from scoreboard.errors import ConfigError
from scoreboard.stats.baseline import baseline_field_gates, baseline_gates
from scoreboard.stats.gates import dq_gates, fail_under_gates, metric_gates
from scoreboard.stats.power import pilot_spread, planned_power
from tests.cli_inprocess import run_cli

SUBJECT = '''
def answer(text):
    return text
'''


def scoreboard(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return run_cli(args, cwd, dict(os.environ))


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "subj.py").write_text(SUBJECT)
    (tmp_path / "cases.jsonl").write_text("".join(
        json.dumps({"id": f"c{i}", "input": f"q{i}", "expected": f"q{i}"}) + "\n" for i in range(3)))
    (tmp_path / "suite.yaml").write_text("name: s\ncases: cases.jsonl\nsubject: python:subj:answer\n"
                                         "variants:\n  a: {}\n  b: {}\n")
    return tmp_path


# --- power: the paired t test's minimum detectable effect, against statsmodels ---------------

@pytest.mark.parametrize("n", [3, 4, 5, 8])
@pytest.mark.parametrize("alpha", [0.05, 0.01, 0.1])
def test_plan_detectable_difference_has_80_percent_power_at_small_samples(n, alpha):
    power = planned_power(n, alpha=alpha)
    effect = power["detectable_difference"] / power["difference_sd"]
    got = TTestPower().power(effect_size=effect, nobs=n, alpha=alpha, alternative="two-sided")
    assert got == pytest.approx(0.8, abs=1e-6)


@pytest.mark.parametrize("delta,alpha", [(0.3, 0.01), (0.5, 0.05), (0.8, 0.05), (1.0, 0.05), (0.1, 0.05)])
def test_plan_cases_needed_is_statsmodels_sample_size_rounded_up(delta, alpha):
    power = planned_power(10, alpha=alpha, differences=[delta])
    sd = power["difference_sd"]
    ref = TTestPower().solve_power(effect_size=delta / sd, alpha=alpha, power=0.8, alternative="two-sided")
    assert power["cases_needed"][0]["cases"] == max(2, math.ceil(ref))


def test_plan_says_a_few_cases_detect_no_difference_a_pass_rate_can_show(work):
    proc = scoreboard(["plan", "suite.yaml"], work)
    assert proc.returncode == 0, proc.stderr
    line = next(x for x in proc.stdout.splitlines() if x.strip().startswith("power:"))
    assert "with 3 cases a paired comparison cannot detect even a 100-point difference" in line
    # one run a case: pass/fail outcomes, the power exact: even all 3 cases won is not significant
    assert "not even a lead on every case is found with 80% power" in line
    proc = scoreboard(["plan", "suite.yaml", "--runs", "3"], work)
    line = next(x for x in proc.stdout.splitlines() if x.strip().startswith("power:"))
    assert "with 3 cases a paired comparison cannot detect even a 100-point difference" in line
    assert "it would take 231 points" in line  # repeats: the noncentral t; statsmodels: 3.264 SD x 0.707


def test_plan_refuses_a_dry_run_pilot(work):
    done = scoreboard(["run", "suite.yaml", "--dry-run", "--output-dir", "out", "--no-progress", "--format", "json"],
                      work)
    assert done.returncode == 0, done.stdout + done.stderr
    (pilot,) = (work / "out" / "s").glob("*.json")
    proc = scoreboard(["plan", "suite.yaml", "--pilot", str(pilot)], work)
    assert proc.returncode == 1 and proc.stdout == ""
    assert "is a dry run" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_pilot_spread_is_measured_between_the_planned_variants():
    outcome = {"x": lambda i: True, "a": lambda i: True, "b": lambda i: i % 2 == 0}
    pilot = {"plan": {"variants": [{"name": v} for v in ("x", "a", "b")]},
             "attempts": [{"case_id": f"c{i}", "variant": v, "run": 0, "status": "passed" if ok(i) else "failed"}
                          for i in range(10) for v, ok in outcome.items()]}
    sd, source = pilot_spread(pilot, ["a", "b"])
    assert source == "pilot: a vs b on 10 cases" and sd == pytest.approx(math.sqrt(0.25 * 10 / 9))
    _, other = pilot_spread(pilot, ["p", "q"])
    assert other.startswith("pilot: x vs a (not this plan's variants: p, q)")


# --- the baseline gate: pairs by id and input hash, and says what it left out -----------------

def _plan(cases: dict[str, str], variants=("v",)) -> dict:
    return {"cases": [{"id": cid, "input_hash": h} for cid, h in cases.items()],
            "variants": [{"name": v} for v in variants]}


CFG = SimpleNamespace(max_regression=0.05, alpha=0.05, require_significance=False)


def test_baseline_gate_names_every_case_it_could_not_compare():
    base_plan = _plan({f"c{i}": f"h{i}" for i in range(6)})
    plan = _plan({**{f"c{i}": f"h{i}" for i in range(6)}, "c0": "changed", "c9": "h9"})
    base = {"plan": base_plan, "run_id": "r0",
            "outcomes": {"v": {f"c{i}": [1, 1] for i in range(6) if i != 1}}}
    current = {"v": {"c0": [1, 1], "c1": [1, 1], "c2": [1, 1], "c3": [0, 1], "c9": [1, 1]}}
    (gate,) = baseline_gates(base, plan, current, CFG)
    assert gate["shared_cases"] == 2 and not gate["passed"]  # c2 passed in both, c3 dropped: -50 points
    desc = gate["description"]
    assert desc.startswith("v vs baseline v: 50.0% vs 100.0% on 2 shared cases")
    assert "small sample: fewer than 30 shared cases" in desc
    assert "1 case with changed inputs left out" in desc
    assert "1 case not in the baseline left out" in desc
    assert "1 shared case with no graded attempt in the baseline left out" in desc
    assert "2 shared cases with no graded attempt in this run left out" in desc  # c4, c5


def test_baseline_gate_with_nothing_graded_in_common_fails_and_says_why():
    base_plan = _plan({f"c{i}": f"h{i}" for i in range(4)})
    base = {"plan": base_plan, "run_id": "r0", "outcomes": {"v": {}},
            "field_outcomes": {"v": {f"c{i}": [3, 3] for i in range(4)}}}
    plan = _plan({f"c{i}": ("x" if i < 2 else f"h{i}") for i in range(4)})
    (gate,) = baseline_gates(base, plan, {"v": {f"c{i}": [1, 1] for i in range(4)}}, CFG)
    assert not gate["passed"] and gate["value"] is None and gate["shared_cases"] == 0
    assert gate["description"] == ("v vs baseline v: no case graded in both this run and the baseline to compare; "
                                   "2 cases with changed inputs left out; 2 shared cases with no graded attempt "
                                   "in the baseline left out")
    (fields,) = baseline_field_gates(base, plan, {"v": {}}, CFG)
    assert not fields["passed"] and fields["value"] is None
    assert "2 shared cases with no field grade in this run left out" in fields["description"]


# --- gates on unknown figures and bad floors ---------------------------------------------------

def test_a_variant_with_no_graded_attempt_fails_its_pass_rate_gate():
    summary = {"variants": {"a": {"pass_rate": None, "unassessed": 10}, "b": {"pass_rate": 1.0}}}
    gates = fail_under_gates(summary, 0.5, ["a", "b"])
    assert [g["passed"] for g in gates] == [False, True]
    assert gates[0]["description"] == "a: pass rate n/a < 50.0%"


@pytest.mark.parametrize("name", ["pass@0", "pass^0", "pass@01", "pass@²"])
def test_a_pass_at_k_no_run_can_compute_is_an_unknown_metric(name):
    with pytest.raises(ConfigError, match="unknown metric"):
        metric_gates({"variants": {}}, {name: 0.5}, ["a"])


@pytest.mark.parametrize("setting", [90, 1.5, -0.1, {"a": 90}, {"*": 2}])
def test_a_suite_pass_rate_floor_outside_0_1_is_refused(setting):
    with pytest.raises(ConfigError, match="between 0 and 1"):
        fail_under_gates({"variants": {}}, setting, ["a"])


def test_a_suite_fail_under_of_90_is_refused_before_anything_runs(work):
    (work / "suite.yaml").write_text((work / "suite.yaml").read_text() + "fail_under: {a: 90}\n")
    proc = scoreboard(["validate", "suite.yaml"], work)
    assert proc.returncode == 1 and "fail_under.a" in proc.stderr and "0.9 for 90%" in proc.stderr


@pytest.mark.parametrize("value", [9, -4, float("nan")])
def test_a_dq_floor_off_the_scale_is_refused(value):
    with pytest.raises(ConfigError, match="between -3 and 3"):
        dq_gates({}, {"*": value}, ["a", "b"])


def test_min_dq_on_a_run_with_one_variant_is_refused_not_skipped(work):
    proc = scoreboard(["run", "--cases", "cases.jsonl", "--subject", "python:subj:answer", "--name", "g",
                       "--output-dir", "out", "--no-progress", "--format", "json", "--min-dq", "0.5"], work)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "--min-dq" in proc.stderr and not (work / "out").exists()


# --- exit codes as the README's table ----------------------------------------------------------

@pytest.mark.parametrize("status,errors,gate_ok,code", [
    ("completed", 0, True, 0), ("completed", 0, False, 3), ("completed", 1, False, 2),
    ("stopped", 0, True, 2), ("waiting", 0, False, 4)])
def test_exit_code_of_a_written_report(status, errors, gate_ok, code):
    head = {"run": {"status": status}, "summary": {"variants": {"a": {"errors": errors, "not_run": 0}}},
            "gates": [{"gate": "fail-under", "passed": gate_ok, "description": "x"}]}
    assert exit_code_of_report(head) == code


def test_a_dry_run_report_is_refused_as_a_baseline(work):
    done = scoreboard(["run", "suite.yaml", "--dry-run", "--output-dir", "mock", "--no-progress", "--format", "json"],
                      work)
    assert done.returncode == 0, done.stdout + done.stderr
    (mock,) = (work / "mock" / "s").glob("*.json")
    proc = scoreboard(["run", "suite.yaml", "--output-dir", "out", "--no-progress", "--format", "json",
                       "--baseline", str(mock), "--max-regression", "0.05"], work)
    assert proc.returncode == 1 and not (work / "out").exists(), proc.stdout + proc.stderr
    assert "is a dry run" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_verify_still_recomputes_a_recorded_floor_the_settings_check_would_refuse():
    # An older report's gate with a floor past 1 is recomputed (and fails), not an error in verify.
    summary = {"variants": {"a": {"pass_rate": 0.95}}}
    (gate,) = fail_under_gates(summary, {"a": 90}, ["a"])
    assert not gate["passed"] and gate["description"] == "a: pass rate 95.0% < 9000.0%"


# --- aggregate ----------------------------------------------------------------------------------

STAGE_SUBJECTS = '''
def early(input):
    return input.upper() if int(input.split("-")[1]) < 50 else "no"


def late(input):
    return input.upper() if int(input.split("-")[1]) >= 50 else "no"
'''


def test_aggregate_reversed_on_few_held_out_cases_says_small_sample(tmp_path):
    (tmp_path / "subjects.py").write_text(STAGE_SUBJECTS)
    cases = [{"id": f"s{i}", "input": f"q-{i}", "expected": f"Q-{i}"} for i in range(6)]
    cases += [{"id": f"h{i}", "input": f"q-{100 + i}", "expected": f"Q-{100 + i}", "split": "heldout"}
              for i in range(6)]
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    (tmp_path / "suite.yaml").write_text(
        "name: rev\ncases: cases.jsonl\ngraders: [exact]\nstages: {screen: {first: 6}}\n"
        "variants:\n  early: {subject: 'python:subjects:early'}\n  late: {subject: 'python:subjects:late'}\n")
    reports = []
    for stage in ("screen", "heldout"):
        proc = scoreboard(["run", "suite.yaml", "--stage", stage, "--no-progress", "--format", "json",
                           "--output-dir", stage], tmp_path)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        reports += [str(p) for p in (tmp_path / stage / "rev").glob("*.json")]
    proc = scoreboard(["aggregate", *reports, "--output", "agg.json"], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads((tmp_path / "agg.json").read_text())["confirmation"]["verdict"] == "reversed"
    line = next(x for x in proc.stdout.splitlines() if "REVERSED" in x)
    assert line.endswith("(small sample: fewer than 30 held-out cases)")
    assert "(small sample: fewer than 30 held-out cases)" in (tmp_path / "agg.md").read_text()


def test_a_boolean_gate_floor_is_refused_not_read_as_one(tmp_path):
    """`fail_under: {a: true}` was read as 1.0 (pydantic's lax float): a floor is a number."""
    from scoreboard.errors import ConfigError
    from scoreboard.suite.load import load_suite

    (tmp_path / "cases.jsonl").write_text('{"id": "a", "input": "x", "expected": "x"}\n', encoding="utf-8")
    for setting in ("fail_under: {mock: true}", "fail_under: false", "fail_under_metrics: {pass@1: true}"):
        (tmp_path / "suite.yaml").write_text(f"name: f\ncases: cases.jsonl\nsubject: mock\n{setting}\n",
                                             encoding="utf-8")
        with pytest.raises(ConfigError) as err:  # ConfigErrors (several) is one too
            load_suite(tmp_path / "suite.yaml")
        assert "(got True)" in str(err.value) or "(got False)" in str(err.value), str(err.value)
