"""Power before spending: the detectable difference and the cases a difference needs, checked
against statsmodels; `scoreboard plan` reports them from a stated assumption or a pilot."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from statsmodels.stats.power import TTestPower

from scoreboard.stats.methods import cases_needed, detectable_difference
from scoreboard.stats.power import ASSUMPTION, pilot_spread, planned_power
from tests.cli_inprocess import run_cli

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "invoices" / "suite.yaml"


@pytest.mark.parametrize("sd,n", [(0.7, 30), (0.5, 10), (0.3, 200), (1.2, 55)])
def test_detectable_difference_has_80_percent_power(sd, n):
    mde = detectable_difference(sd, n, 0.05, 0.8)
    power = TTestPower().power(effect_size=mde / sd, nobs=n, alpha=0.05, alternative="two-sided")
    assert power == pytest.approx(0.8, abs=0.006)


@pytest.mark.parametrize("delta,sd", [(0.1, 0.7), (0.2, 0.5), (0.05, 0.3)])
def test_cases_needed_is_the_smallest_sample_with_the_power(delta, sd):
    n = cases_needed(delta, sd, 0.05, 0.8)
    ref = TTestPower().solve_power(effect_size=delta / sd, alpha=0.05, power=0.8, alternative="two-sided")
    assert n - 1 < ref <= n + 1
    assert detectable_difference(sd, n, 0.05, 0.8) <= delta < detectable_difference(sd, n - 1, 0.05, 0.8)


def test_planned_power_states_its_assumption_or_its_pilot():
    assumed = planned_power(30, alpha=0.05)
    assert assumed["sd_from"] == ASSUMPTION and assumed["difference_sd"] == pytest.approx(0.5 ** 0.5)
    assert [n["difference"] for n in assumed["cases_needed"]] == [0.05, 0.1, 0.2]
    pilot = {"plan": {"variants": [{"name": "a"}, {"name": "b"}]},
             "attempts": [{"case_id": f"c{i}", "variant": v, "run": 0,
                           "status": "passed" if (v == "a" or i % 3) else "failed"} for i in range(12) for v in "ab"]}
    sd, source = pilot_spread(pilot)
    diffs = [0.0 if i % 3 else 1.0 for i in range(12)]
    mean = sum(diffs) / 12
    assert sd == pytest.approx((sum((d - mean) ** 2 for d in diffs) / 11) ** 0.5)
    assert source == "pilot: a vs b on 12 cases"
    measured = planned_power(12, alpha=0.1, pilot=pilot, differences=[0.25])
    assert measured["difference_sd"] == pytest.approx(sd) and measured["alpha"] == 0.1
    assert measured["cases_needed"] == [{"difference": 0.25, "cases": cases_needed(0.25, sd, 0.1, 0.8)}]


def test_plan_prints_power_and_takes_a_pilot(tmp_path):
    env = dict(os.environ)
    run = run_cli(["run", str(EXAMPLE), "--format", "json", "--output-dir", str(tmp_path / "out"), "--no-progress"],
                  tmp_path, env)
    assert run.returncode == 0, run.stderr
    (pilot,) = (tmp_path / "out" / "invoices").glob("*.json")
    proc = run_cli(["plan", str(EXAMPLE), "--pilot", str(pilot), "--detect", "0.3", "--json"], tmp_path, env)
    assert proc.returncode == 0, proc.stderr
    power = json.loads(proc.stdout)["power"]
    assert power["sd_from"].startswith("pilot: basic vs careful on 30 cases") and power["cases"] == 30
    assert power["cases_needed"][0]["difference"] == 0.3 and power["detectable_difference"] > 0
    text = run_cli(["plan", str(EXAMPLE)], tmp_path, env).stdout
    assert "power: with 30 cases a paired comparison detects differences of" in text and "assumed:" in text
    bad = run_cli(["plan", str(EXAMPLE), "--detect", "5"], tmp_path, env)
    assert bad.returncode == 1 and bad.stderr.strip().splitlines() == [
        "scoreboard: error: flag --detect: --detect takes a difference between 0 and 1 (0.1 = 10 points), got 5"]


def test_a_conversation_counts_once_in_the_plan_power_and_in_a_pilots_spread(tmp_path):
    """The run's comparison counts a conversation's turns as one unit (they answer each other's
    replies); the plan's power counted every turn as a case, promising a precision the run's
    own intervals never give. It counts units, says so, and a pilot's spread is per unit."""
    turns = lambda n: [{"id": f"t{k}", "question": f"q{k}"} for k in range(n)]  # noqa: E731
    cases = [{"id": f"conv{i}", "conversation": {"topic": "x"}, "turns": turns(3)} for i in range(4)]
    cases += [{"id": f"solo{i}", "input": "x"} for i in range(2)]
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    (tmp_path / "suite.yaml").write_text("name: conv\ncases: cases.jsonl\nsubject: mock\ngraders: [{contains: [x]}]\n")
    done = run_cli(["plan", "suite.yaml", "--json"], tmp_path)
    assert done.returncode == 0, done.stderr
    power = json.loads(done.stdout)["power"]
    assert (power["cases"], power["conversations"], power["turns"]) == (6, 4, 12)
    assert power["detectable_difference"] == detectable_difference(power["difference_sd"], 6, 0.05, 0.8)
    text = run_cli(["plan", "suite.yaml"], tmp_path).stdout
    assert ("power: with 6 units (a conversation counts once, whatever its turns: 4 conversations of 12 turns, "
            "and the other cases one each)") in text
    assert "units needed: 5 points:" in text and "(small sample: fewer than 30 units)" not in text  # mde > 1
    # a pilot of that suite: the spread of per-conversation differences, turns summed first
    plan_cases = [{"id": f"conv{i}/t{k}", "conversation": f"conv{i}"} for i in range(4) for k in range(3)]
    attempts = [{"case_id": c["id"], "variant": v, "run": 0,
                 "status": "passed" if v == "a" or c["id"].endswith(("t0", "t1")) or c["id"].startswith("conv0")
                 else "failed"} for c in plan_cases for v in "ab"]
    pilot = {"plan": {"variants": [{"name": "a"}, {"name": "b"}], "cases": plan_cases}, "attempts": attempts}
    sd, source = pilot_spread(pilot)
    diffs = [0.0, 1 / 3, 1 / 3, 1 / 3]  # conv0 all passed on both; the others b lost one turn of three
    mean = sum(diffs) / 4
    assert sd == pytest.approx((sum((d - mean) ** 2 for d in diffs) / 3) ** 0.5)
    assert source == "pilot: a vs b on 4 units (a conversation counts once)"


def test_a_pilot_too_small_to_measure_says_so_and_never_asks_for_a_pilot():
    """A pilot of one case (or with no disagreement) cannot measure a spread: the assumption it
    falls back to is said with why, not "give --pilot REPORT", which was given."""
    pilot = {"plan": {"variants": [{"name": "a"}, {"name": "b"}]},
             "attempts": [{"case_id": "c", "variant": v, "run": 0, "status": s}
                          for v, s in (("a", "passed"), ("b", "failed"))]}
    for runs in (1, 3):
        planned = planned_power(1, alpha=0.05, pilot=pilot, runs=runs)
        assert planned["sd_from"].startswith("pilot: a vs b on 1 case, too little to measure a spread; assumed:")
        assert "give --pilot" not in planned["sd_from"]
        assert planned["difference_sd"] == pytest.approx(0.5 ** 0.5)

