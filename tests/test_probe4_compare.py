"""Outside probe of plan, compare and the statistics a user reads: `plan --pilot`'s power when
the pilot ran another number of runs per case than the plan, and `compare` of two reports
holding conversations (their turns are one unit, as in the report's own comparison)."""

from __future__ import annotations

import json
import math
import os
import random
import subprocess
from pathlib import Path

import pytest
from statsmodels.stats.power import TTestPower

from scoreboard.stats.power import planned_power
from tests.cli_inprocess import run_cli


def scoreboard(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return run_cli(args, cwd, dict(os.environ))


# -- plan --pilot: the pilot's runs per case against the plan's ----------------------------------

def noise_pilot(cases: int, runs: int, seed: int) -> dict:
    """Two variants that do not differ: every run of every case passes with chance 1/2."""
    rng = random.Random(seed)
    attempts = [{"case_id": f"c{i}", "variant": v, "run": r, "status": "passed" if rng.random() < 0.5 else "failed"}
                for i in range(cases) for v in "ab" for r in range(runs)]
    return {"plan": {"variants": [{"name": "a"}, {"name": "b"}], "runs": runs}, "attempts": attempts}


def test_a_pilot_of_many_runs_does_not_promise_power_a_one_run_plan_lacks():
    """A pilot of 10 runs per case averages most run-to-run noise out of its per-case differences;
    a plan of 1 run per case has all of it. Taken as measured, the pilot's spread (0.22) promised 80%
    power at a 12-point difference that a one-run plan detects 14% of the time; the spread of a
    one-run difference of two coin flips is sqrt(0.5)."""
    power = planned_power(30, alpha=0.05, pilot=noise_pilot(60, 10, 1), variants=["a", "b"], runs=1)
    assert power["difference_sd"] == pytest.approx(math.sqrt(0.5), rel=0.12)
    mde = power["detectable_difference"]
    achieved = TTestPower().power(effect_size=mde / math.sqrt(0.5), nobs=30, alpha=0.05, alternative="two-sided")
    assert achieved > 0.7
    assert "10 runs per case" in power["sd_from"] and "1 run" in power["sd_from"]


def test_a_pilot_with_the_plans_runs_is_taken_as_measured():
    pilot = noise_pilot(40, 3, 2)
    same = planned_power(30, alpha=0.05, pilot=pilot, variants=["a", "b"], runs=3)
    plain = planned_power(30, alpha=0.05, pilot=pilot, variants=["a", "b"])
    assert same["difference_sd"] == plain["difference_sd"]
    assert same["sd_from"] == "pilot: a vs b on 40 cases"


def test_a_pilot_of_one_run_says_a_plan_of_more_runs_may_detect_less():
    pilot = noise_pilot(40, 1, 3)
    more = planned_power(30, alpha=0.05, pilot=pilot, variants=["a", "b"], runs=5)
    plain = planned_power(30, alpha=0.05, pilot=pilot, variants=["a", "b"])
    assert more["difference_sd"] == plain["difference_sd"]  # no run-to-run spread measured: kept
    assert "1 run per case" in more["sd_from"] and "overstate" in more["sd_from"]


def test_a_one_variant_pilot_is_rescaled_to_the_plans_runs_too():
    pilot = noise_pilot(60, 10, 4)
    pilot["plan"]["variants"] = [{"name": "a"}]
    pilot["attempts"] = [a for a in pilot["attempts"] if a["variant"] == "a"]
    power = planned_power(30, alpha=0.05, pilot=pilot, variants=["a", "b"], runs=1)
    assert power["difference_sd"] == pytest.approx(math.sqrt(0.5), rel=0.15)
    assert "one variant" in power["sd_from"] and "10 runs per case" in power["sd_from"]


COIN_SUBJECT = """import zlib
def coin(text, run, salt):
    return text if zlib.crc32(f"{salt}/{text}/{run}".encode()) % 2 else "no"
def a(text, skill, run):
    return coin(text, run, "a")
def b(text, skill, run):
    return coin(text, run, "b")
"""


def test_plan_cli_rescales_a_pilot_of_other_runs(tmp_path):
    """A real pilot run of 10 runs per case (two coin-flip variants), a plan of 1 run per case."""
    (tmp_path / "subj.py").write_text(COIN_SUBJECT)
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "input": f"q{i}", "expected": f"q{i}"})
                                                  + "\n" for i in range(60)))
    (tmp_path / "suite.yaml").write_text(
        "name: s\ncases: cases.jsonl\nruns: 1\noutput_dir: out\nvariants:\n"
        "  a: {subject: {type: python, function: 'subj:a', model_free: true}}\n"
        "  b: {subject: {type: python, function: 'subj:b', model_free: true}}\n")
    pilot = scoreboard(["run", "suite.yaml", "--runs", "10", "--no-progress", "--format", "json"], tmp_path)
    assert pilot.returncode == 0, pilot.stdout + pilot.stderr
    (path,) = (tmp_path / "out" / "s").glob("*.json")
    proc = scoreboard(["plan", "suite.yaml", "--pilot", str(path), "--json"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    power = json.loads(proc.stdout)["power"]
    assert power["difference_sd"] == pytest.approx(math.sqrt(0.5), rel=0.15)
    assert "this plan's 1 run" in power["sd_from"]
    text = scoreboard(["plan", "suite.yaml", "--pilot", str(path)], tmp_path).stdout
    assert "10 runs per case" in text


# -- compare: a conversation's turns are one unit ----------------------------------------------

CONV_SUBJECT = '''import zlib
def good(input):
    return "yes 47"
def flaky(input):
    return "yes 47" if zlib.crc32(str(input).encode()) % 3 else "no"
'''


@pytest.fixture
def conv_report(tmp_path: Path) -> Path:
    (tmp_path / "subj.py").write_text(CONV_SUBJECT)
    lines = [json.dumps({"id": f"conv{k}", "conversation": {"topic": "survey", "notes": f"47 birds. item {k}"},
                         "turns": [{"id": f"t{t}", "question": f"How many birds? {k} {t}",
                                    "graders": [{"contains": "47"}]} for t in range(3)]}) for k in range(8)]
    (tmp_path / "cases.jsonl").write_text("\n".join(lines) + "\n")
    (tmp_path / "suite.yaml").write_text(
        "name: conv\ncases: cases.jsonl\noutput_dir: out\nvariants:\n"
        "  good: {subject: {type: python, function: 'subj:good', model_free: true}}\n"
        "  flaky: {subject: {type: python, function: 'subj:flaky', model_free: true}}\n")
    proc = scoreboard(["run", "suite.yaml", "--no-progress", "--format", "json"], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (path,) = (tmp_path / "out" / "conv").glob("*.json")
    return path


def test_compare_counts_a_conversation_once_as_the_reports_own_comparison_does(conv_report):
    report = json.loads(conv_report.read_text())
    (own,) = report["summary"]["comparisons"]
    assert own["a"] == "good" and own["b"] == "flaky"
    proc = scoreboard(["compare", str(conv_report), str(conv_report), "--pair", "good=flaky", "--json"],
                      conv_report.parent)
    assert proc.returncode == 0, proc.stderr
    (comp,) = json.loads(proc.stdout)["comparisons"]
    for key in ("cases", "a_wins", "b_wins", "ties", "sign_test_p", "mean_difference", "mcnemar"):
        assert comp[key] == own[key], key
    assert comp["mean_difference_ci"] == own["mean_difference_ci"]
    assert comp["mean_difference_ci"]["unit"] == "conversation"
    text = scoreboard(["compare", str(conv_report), str(conv_report), "--pair", "good=flaky"], conv_report.parent)
    assert "conversation" in text.stdout


def test_compare_names_each_intervals_method_and_what_it_could_detect(conv_report, tmp_path):
    """Every interval names its method in every rendering, `compare`'s text and page too; and a
    pair says the smallest difference it could detect, as the report's own comparison does."""
    args = ["compare", str(conv_report), str(conv_report), "--pair", "good=flaky"]
    (comp,) = json.loads(scoreboard([*args, "--json"], tmp_path).stdout)["comparisons"]
    own = json.loads(conv_report.read_text())["summary"]["comparisons"][0]
    assert comp["detectable_difference"] == own["detectable_difference"]
    text = scoreboard([*args, "--html", "cmp.html"], tmp_path).stdout
    assert "Student t" in text and "could detect differences of" in text
    page = (tmp_path / "cmp.html").read_text()
    assert "Student t" in page and "8 conversations" in page


# -- JUnit: the pass rate with its interval and the method --------------------------------------

def test_junit_gives_the_pass_rate_with_its_interval_and_method_as_the_terminal_does(tmp_path):
    """With one run there is no pass@k: the JUnit properties held the pass rate as a bare
    fraction, with no interval and no method anywhere in the file."""
    import xml.etree.ElementTree as ET

    (tmp_path / "subj.py").write_text(COIN_SUBJECT)
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "input": f"q{i}", "expected": f"q{i}"})
                                                  + "\n" for i in range(20)))
    (tmp_path / "suite.yaml").write_text(
        "name: s\ncases: cases.jsonl\nruns: 1\noutput_dir: out\nvariants:\n"
        "  a: {subject: {type: python, function: 'subj:a', model_free: true}}\n")
    proc = scoreboard(["run", "suite.yaml", "--no-progress", "--format", "json,junit"], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    line = next(x for x in proc.stdout.splitlines() if x.startswith("  a: pass rate"))
    shown = line.split("[95% CI ")[1].split("]")[0]  # e.g. 35.1%–70.0%
    (xml,) = (tmp_path / "out" / "s").glob("*.junit.xml")
    props = {p.get("name"): p.get("value") for p in ET.parse(xml).getroot().iter("property")}
    assert shown in props["pass_rate_ci"] and "wilson-effective-n" in props["pass_rate_ci"]
    assert props["interval_method"].startswith("wilson-effective-n: Wilson score interval")
    assert float(props["pass_rate"]) == json.loads(next((tmp_path / "out" / "s").glob("*.json")).read_text())[
        "summary"]["variants"]["a"]["pass_rate"]


# -- an even pair reads as even; runs per case that differ are said ---------------------------

def test_an_even_pair_is_said_even_not_a_lead_of_plus_zero_points():
    """Per-case differences 1/3 - 0, 1/3 - 1, 1/3 - 0 sum to zero, but in floats to -3.7e-17: the
    headline named b ahead "+0.0 points over a" and compare printed "-0.0 points"."""
    from scoreboard.stats.comparison import headline, paired_stats

    a = {f"c{i}": [1, 3] for i in range(3)}
    b = {"c0": [0, 1], "c1": [1, 1], "c2": [0, 1]}
    stats = paired_stats(a, b, 0)
    assert stats["mean_difference"] == 0.0
    assert headline("a", "b", stats).startswith("a and b even: 0.0 points apart")


def test_compare_says_when_the_two_reports_ran_their_cases_a_different_number_of_times(tmp_path):
    (tmp_path / "subj.py").write_text(COIN_SUBJECT)
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "input": f"q{i}", "expected": f"q{i}"})
                                                  + "\n" for i in range(12)))
    (tmp_path / "suite.yaml").write_text(
        "name: s\ncases: cases.jsonl\nvariants:\n"
        "  a: {subject: {type: python, function: 'subj:a', model_free: true}}\n")
    for runs in ("1", "5"):
        done = scoreboard(["run", "suite.yaml", "--no-progress", "--format", "json", "--runs", runs,
                           "--output-dir", f"r{runs}"], tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
    (one,) = (tmp_path / "r1" / "s").glob("*.json")
    (five,) = (tmp_path / "r5" / "s").glob("*.json")
    proc = scoreboard(["compare", str(one), str(five), "--json"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    (comp,) = json.loads(proc.stdout)["comparisons"]
    assert any("A ran 1 run per case, B 5" in flag for flag in comp["flags"]), comp["flags"]
    same = scoreboard(["compare", str(five), str(five), "--json"], tmp_path)
    (comp,) = json.loads(same.stdout)["comparisons"]
    assert not any("run per case" in flag or "runs per case" in flag for flag in comp["flags"]), comp["flags"]


def test_compare_says_its_pass_rates_are_on_the_shared_cases_when_some_are_left_out():
    from scoreboard.cli.compare import render_text

    comp = {"a": "a", "b": "a", "a_pass_rate": 0.625, "b_pass_rate": 0.5, "headline": "h", "mean_difference": None,
            "flags": [], "mcnemar": {"p": None}}
    result = {"a": {"suite": "s", "run_id": "1"}, "b": {"suite": "s", "run_id": "2"}, "shared_cases": 8,
              "inputs_differ": [], "only_in_a": ["c8", "c9"], "only_in_b": [], "unmatched_variants": {"a": [], "b": []},
              "comparisons": [comp]}
    assert "a (A) 62.5% vs a (B) 50.0% (pass rates on the 8 shared cases)" in render_text(result)
    result["only_in_a"] = []
    assert "a (A) 62.5% vs a (B) 50.0%\n" in render_text(result)
    from scoreboard.cli.compare import render_html

    result["only_in_a"], result["only_in_b"] = ["c8", "c9"], ["d1"]
    comp.update(cases=8, a_wins=1, b_wins=0, ties=7, sign_test_p=1.0, mean_difference_ci=None)
    page = render_html(result)
    assert "Only in A: 2 cases" in page and "only in B: 1 case" in page


# -- aggregate: every interval's method, in every rendering -------------------------------------

def test_aggregate_renderings_name_each_intervals_method(tmp_path):
    """The aggregate's pass rates (Wilson on the effective cases) and differences (Student t) were
    shown with no method in the terminal, the Markdown or the page."""
    (tmp_path / "subj.py").write_text("def good(input):\n    return input.upper()\n\n"
                                      "def weak(input):\n    n = int(input.split('-')[1])\n"
                                      "    return input.upper() if n % 3 == 0 else 'no'\n")
    cases = [{"id": f"s{i}", "input": f"q-{i}", "expected": f"Q-{i}"} for i in range(8)]
    cases += [{"id": f"h{i}", "input": f"q-{100 + i}", "expected": f"Q-{100 + i}", "split": "heldout"}
              for i in range(12)]
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    (tmp_path / "suite.yaml").write_text(
        "name: st\ncases: cases.jsonl\ngraders: [exact]\nstages: {screen: {first: 8}}\nvariants:\n"
        "  good: {subject: 'python:subj:good'}\n  weak: {subject: 'python:subj:weak'}\n")
    paths = []
    for name in ("screen", "heldout"):
        proc = scoreboard(["run", "suite.yaml", "--stage", name, "--no-progress", "--format", "json",
                           "--output", f"{name}.json"], tmp_path)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        paths.append(f"{name}.json")
    proc = scoreboard(["aggregate", *paths, "--output", "agg.json"], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for text in (proc.stdout, (tmp_path / "agg.md").read_text(), (tmp_path / "agg.html").read_text()):
        assert "wilson-effective-n: Wilson score interval on the effective number of cases" in text
        assert "student-t: Student t interval on per-case values" in text


def test_compare_of_a_dry_run_says_its_outputs_are_the_mock_subjects(tmp_path):
    """A dry run's outputs come from the mock subject: compared with a real run, it read as
    "B:a +41.7 points over A:a" with nothing said."""
    (tmp_path / "subj.py").write_text(COIN_SUBJECT)
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "input": f"q{i}", "expected": f"q{i}"})
                                                  + "\n" for i in range(6)))
    (tmp_path / "suite.yaml").write_text(
        "name: s\ncases: cases.jsonl\nvariants:\n  a: {subject: {type: python, function: 'subj:a', model_free: true}}\n")
    for out, extra in (("real", []), ("dry", ["--dry-run"])):
        done = scoreboard(["run", "suite.yaml", "--no-progress", "--format", "json", "--output", f"{out}.json",
                           *extra], tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
    proc = scoreboard(["compare", "real.json", "dry.json", "--json"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    (comp,) = json.loads(proc.stdout)["comparisons"]
    assert any(flag.startswith("B is a dry run") for flag in comp["flags"]), comp["flags"]
    text = scoreboard(["compare", "real.json", "dry.json"], tmp_path).stdout
    assert "B is a dry run" in text
