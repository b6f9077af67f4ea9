"""Honest numbers checked from outside (stats6): reports of a known subject read back, their
figures against exact arithmetic, and the words every rendering owes a reader.

A gate exactly at its threshold must pass: a figure that is a mean of per-case fractions
(pass@k, pass^k, the case score, named metrics, reducers) is an exact rational, and rounding
each case's share before averaging put it an ulp below (pass^2 of two cases at 3 and 4 of 5
runs is (3/10 + 6/10) / 2 = 0.45, reported 0.44999999999999996, and `--fail-under-metric
pass^2=0.45` failed with "45.0% < 45.0%").
"""

from __future__ import annotations

import itertools
import json
import math
import subprocess
from fractions import Fraction
from pathlib import Path

from scoreboard.stats.metrics import mean_figure, reducer_figure
from scoreboard.stats.summary import pass_at_k_figures
from tests.cli_inprocess import run_cli


def scoreboard(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return run_cli(args, cwd=cwd)


def _exact_k(counts: list[int], runs: int, k: int, hat: bool) -> Fraction:
    per = [Fraction(math.comb(c, k), math.comb(runs, k)) if hat
           else 1 - Fraction(math.comb(runs - c, k), math.comb(runs, k)) for c in counts]
    return sum(per, Fraction(0)) / len(per)


def test_pass_at_k_and_pass_hat_k_are_the_exact_mean_of_the_per_case_estimators():
    """Every pass count of up to four cases (the rest passing every run) at 2..6 runs: the value
    is the exact rational mean of Chen et al.'s per-case estimators, rounded once."""
    for runs in range(2, 7):
        for n in (2, 3, 5, 7):
            for combo in itertools.combinations_with_replacement(range(runs + 1), min(n, 4)):
                counts = list(combo) + [runs] * (n - len(combo))
                at, hat = pass_at_k_figures({f"c{i}": (c, runs) for i, c in enumerate(counts)}, runs)
                for k in range(1, runs + 1):
                    assert at[str(k)]["value"] == float(_exact_k(counts, runs, k, False)), (runs, counts, k)
                    assert hat[str(k)]["value"] == float(_exact_k(counts, runs, k, True)), (runs, counts, k)


def test_pass_at_k_of_conversations_is_the_exact_mean_over_units():
    cases = {"t1": (3, 5), "t2": (4, 5), "solo": (0, 5)}
    units = {"t1": ("conversation", "c"), "t2": ("conversation", "c")}
    _, hat = pass_at_k_figures(cases, 5, units)
    # the conversation's turns (3/10 and 6/10) averaged first, then the two units
    assert hat["2"]["value"] == float((Fraction(9, 20) + 0) / 2) == 0.225


def test_case_means_and_reducers_are_exact_means_too():
    # three cases scored 1, 1, 0 over three runs, one 0, 0, 0, one 1, 1, 1: (2/3 + 0 + 1) / 3 = 5/9
    per_case = {"a": (2.0, 3), "b": (0.0, 3), "c": (3.0, 3), "d": (1.0, 5), "e": (4.0, 5)}
    exact = (Fraction(2, 3) + 0 + 1 + Fraction(1, 5) + Fraction(4, 5)) / 5
    assert mean_figure(per_case)["value"] == float(exact)
    runs = {"x": [1.0, 1.0, 1.0, 0.0, 0.0], "y": [1.0, 1.0, 1.0, 1.0, 0.0], "z": [0.0] * 5}
    assert reducer_figure(runs, "mean")["value"] == float((Fraction(3, 5) + Fraction(4, 5)) / 3)


SUITE = """name: edge
cases: cases.jsonl
output_dir: out
runs: 5
variants:
  m: {subject: {type: mock, runs: {x: ["yes", "yes", "yes", "no", "no"], y: ["yes", "yes", "yes", "yes", "no"]}}}
"""


def test_a_pass_hat_k_gate_exactly_at_its_threshold_passes(tmp_path):
    """Two cases passing 3 and 4 of 5 runs: pass^2 = (3/10 + 6/10) / 2 = 45% exactly."""
    (tmp_path / "cases.jsonl").write_text('{"id": "x", "input": "q", "expected": "yes"}\n'
                                          '{"id": "y", "input": "q", "expected": "yes"}\n')
    (tmp_path / "suite.yaml").write_text(SUITE)
    proc = scoreboard(["run", "suite.yaml", "--no-progress", "--format", "json",
                       "--fail-under-metric", "pass^2=0.45"], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "gate passed: m: pass^2 45.0% ≥ 45.0%" in proc.stdout + proc.stderr
    (path,) = (tmp_path / "out" / "edge").glob("*.json")
    assert json.loads(path.read_text())["summary"]["variants"]["m"]["pass_hat_k"]["2"]["value"] == 0.45
    assert scoreboard(["verify", str(path)], tmp_path).returncode == 0


def _pointwise(variant: str, case: str, run: int, scores: dict) -> dict:
    return {"case_id": case, "variant": variant, "run": run, "status": "passed",
            "grades": [{"grader": "pointwise", "passed": True, "scores": scores, "judge": {}}]}


def test_judge_means_and_dq_are_exact_means_rounded_once():
    """dQ, the per-dimension means and the rubric mean: each run over its dimensions, each case
    over its runs, then the cases, as exact fractions (a --min-dq or --min-rubric exactly met
    passes). Seeded draws of 0-3 scores on 3 dimensions, 1-3 runs, 2-7 cases."""
    import random

    from scoreboard.stats.judges import judge_summary, rubric_mean

    rng = random.Random(6)
    for _ in range(300):
        cases, runs = rng.randint(2, 7), rng.randint(1, 3)
        plan = {"variants": [{"name": "a"}, {"name": "b"}], "cases": [{"id": f"c{i}"} for i in range(cases)],
                "runs": runs, "seed": 1}
        draws = {(v, i, r): {d: rng.randint(0, 3) for d in ("x", "y", "z")}
                 for v in "ab" for i in range(cases) for r in range(runs)}
        attempts = [_pointwise(v, f"c{i}", r, s) for (v, i, r), s in draws.items()]
        out = judge_summary(plan, attempts)

        def q(v, i):
            return sum((Fraction(sum(draws[(v, i, r)].values()), 3) for r in range(runs)), Fraction(0)) / runs

        want = sum((q("a", i) - q("b", i) for i in range(cases)), Fraction(0)) / cases
        assert out["dq"][0]["dq"] == float(want)
        for d in ("x", "y", "z"):
            mean = sum((Fraction(sum(draws[("a", i, r)][d] for r in range(runs)), runs) for i in range(cases)),
                       Fraction(0)) / cases
            assert out["variants"]["a"]["pointwise"][d] == float(mean)
        per_case = {f"c{i}": (float(sum(draws[("a", i, r)]["x"] + 1 for r in range(runs))), runs)
                    for i in range(cases)}
        rubric = sum((Fraction(int(s), n) for s, n in per_case.values()), Fraction(0)) / cases
        assert rubric_mean(per_case, 1, 5)["mean"] == float(rubric)


# -- the words every rendering owes: small samples, errored attempts, what a pair could detect ----

ERRING = '''def ok(input):
    return "yes" if sum(map(ord, input)) % 3 else "no"
def boom(input):
    raise RuntimeError("provider down")
'''


def _erring_report(tmp_path: Path) -> Path:
    (tmp_path / "subj.py").write_text(ERRING)
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "input": f"q{i}", "expected": "yes"})
                                                  + "\n" for i in range(6)))
    (tmp_path / "suite.yaml").write_text(
        "name: e\ncases: cases.jsonl\noutput_dir: out\nvariants:\n"
        "  ok: {subject: {type: python, function: 'subj:ok', model_free: true}}\n"
        "  down: {subject: {type: python, function: 'subj:boom', model_free: true}}\n")
    proc = scoreboard(["run", "suite.yaml", "--no-progress", "--format", "json,junit"], tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    (path,) = (tmp_path / "out" / "e").glob("*.json")
    return path


def test_junit_says_small_sample_in_words_beside_the_intervals(tmp_path):
    """JUnit carries each variant's pass rate with its interval but no comparison, so no flag:
    6 cases read as a measured figure in a CI tab."""
    import xml.etree.ElementTree as ET

    path = _erring_report(tmp_path)
    root = ET.parse(next(path.parent.glob("*.junit.xml"))).getroot()
    for suite in root.iter("testsuite"):
        props = {p.get("name"): p.get("value") for p in suite.iter("property")}
        assert "pass_rate_ci" in props
        assert props.get("small_sample") == "small sample: fewer than 30 cases (6): the intervals are wide", props


def test_compare_shows_each_pass_rates_denominator_and_its_errors(tmp_path):
    """A variant whose every attempt errored read `0.0%` in compare, as one that failed every case."""
    path = _erring_report(tmp_path)
    proc = scoreboard(["compare", str(path), str(path), "--pair", "ok=down", "--output", "cmp.html"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    ok = json.loads(path.read_text())["summary"]["variants"]["ok"]["passed"]
    assert f"ok (A) {ok / 6:.1%} ({ok}/6) vs down (B) 0.0% (0/6, 6 errors)" in proc.stdout
    (comp,) = json.loads(scoreboard(["compare", str(path), str(path), "--pair", "ok=down", "--json"],
                                    tmp_path).stdout)["comparisons"]
    assert comp["b_counts"] == {"passed": 0, "judged": 6, "errors": 6}
    page = (tmp_path / "cmp.html").read_text()
    assert "0.0% (0/6, 6 errors)" in page
    # the page states what the pair could detect, as the text and every report rendering do
    assert f"±{round(comp['detectable_difference']['value'] * 100)} points" in page


def test_the_pr_comment_names_the_pair_of_each_flag_and_shows_errors(tmp_path):
    """With two pairs, the comment listed the union of their flags sorted: "fewer than 10
    discordant pairs" of one pair read as said of both. And a variant whose every attempt
    errored read 0.0%, as one that failed every case."""
    from scoreboard.cli.compare import compare_reports
    from scoreboard.cli.github_comment import comparison_markdown
    from scoreboard.record.io import read_report

    path = _erring_report(tmp_path)
    report = read_report(path)
    result = compare_reports(report, report, [("ok", "ok"), ("ok", "down")])
    text = comparison_markdown(result)
    assert "0.0% (0/6, 6 errors)" in text, text
    for c in result["comparisons"]:
        name = c["b"] if c["a"] == c["b"] else f"{c['a']} → {c['b']}"
        for flag in c["flags"]:
            assert f"- ⚠️ {name}: {flag}" in text, (name, flag, text)


FLAKY = '''import zlib
def flaky(input, skill, run):
    return "yes 47" if zlib.crc32((str(input) + str(run)).encode()) % 3 else "no"
'''


def test_ten_conversations_of_four_turns_are_a_small_sample(tmp_path):
    """The conversation is the unit of every interval: 10 conversations are 10 units of evidence,
    whatever their 40 turns. The one-variant small-sample line counted the turns and said nothing
    (terminal, Markdown, JUnit), while a pair of the same run was flagged on its 10 units."""
    (tmp_path / "subj.py").write_text(FLAKY)
    lines = [json.dumps({"id": f"conv{k}", "conversation": {"topic": "birds", "notes": f"47 birds. item {k}"},
                         "turns": [{"id": f"t{t}", "question": f"How many? {k} {t}", "graders": [{"contains": "47"}]}
                                   for t in range(4)]}) for k in range(10)]
    (tmp_path / "cases.jsonl").write_text("\n".join(lines) + "\n")
    (tmp_path / "suite.yaml").write_text("name: c\ncases: cases.jsonl\noutput_dir: out\nvariants:\n"
                                         "  flaky: {subject: {type: python, function: 'subj:flaky', model_free: true}}\n")
    proc = scoreboard(["run", "suite.yaml", "--no-progress", "--format", "json,md,junit"], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    words = "small sample: fewer than 30 units (10 per variant, a conversation counting once): the intervals are wide"
    assert words in proc.stdout + proc.stderr
    (md,) = (tmp_path / "out" / "c").glob("*.md")
    assert words in md.read_text()
    (junit,) = (tmp_path / "out" / "c").glob("*.junit.xml")
    assert "small sample: fewer than 30 units (10, a conversation counting once): the intervals are wide" \
        in junit.read_text()


def test_the_page_of_a_one_variant_run_says_small_sample_in_words(tmp_path):
    """The terminal and Markdown say it under a one-variant run's figures; the page said nothing
    (its only small-sample words were a comparison's flags, and a lone variant has none)."""
    from scoreboard.record.html import page_data
    from scoreboard.record.view import view_of
    from tests.record.conftest import make_report

    from scoreboard.stats.summary import summarize

    def real(*args, **kwargs):
        report = make_report(*args, **kwargs)
        report["summary"] = summarize(report["plan"], report["attempts"])
        return report

    assert page_data(view_of(real(4, variants=("basic",), runs=2)))["small_sample"] == \
        "small sample: fewer than 30 cases (4 per variant): the intervals are wide"
    two = real(4, runs=2)  # a pair carries the flag: said once, there
    assert any("fewer than 30" in f for f in two["summary"]["comparisons"][0]["flags"])
    assert "small_sample" not in page_data(view_of(two))
    assert "small_sample" not in page_data(view_of(real(30, variants=("basic",), runs=1)))


def test_the_page_shows_the_small_sample_words(tmp_path):
    import os

    from scoreboard.record.html import render_html
    from scoreboard.record.view import view_of
    from tests.record.conftest import BROWSER_ARGS, CHROMIUM, make_report

    if not os.path.exists(CHROMIUM):
        import pytest

        pytest.skip(f"{CHROMIUM} is not installed")
    from playwright.sync_api import sync_playwright

    path = tmp_path / "report.html"
    path.write_text(render_html(view_of(make_report(4, variants=("basic",), runs=2))), encoding="utf-8")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=BROWSER_ARGS)
        try:
            page = browser.new_page()
            page.goto(path.resolve().as_uri())
            page.wait_for_selector("html[data-ready=true]", timeout=30_000)
            text = page.get_by_test_id("small-sample").inner_text()
        finally:
            browser.close()
    assert "small sample: fewer than 30 cases (4 per variant): the intervals are wide" in text


FIELDS_SUBJECT = '''import hashlib, json
def u(*p):
    return int.from_bytes(hashlib.sha256("/".join(map(str, p)).encode()).digest()[:8], "big") / 2**64
def f(input, skill, run, params):
    i = json.loads(input)["i"]
    if params.get("err") and u(i, run, "e") < 0.5:
        raise RuntimeError("provider down")
    return {"a": 1 if u(i, run, params["s"]) < 0.8 else 0}
'''


def test_the_per_field_comparison_says_which_errored_attempts_it_left_out(tmp_path):
    """Fields are compared over the attempts graded field by field, so a variant's errored
    attempts (no fields to grade) are left out of its per-field figures, while the pass-rate
    comparison of the same pair counts them as failures. The Markdown and the page said nothing."""
    (tmp_path / "subj.py").write_text(FIELDS_SUBJECT)
    (tmp_path / "cases.jsonl").write_text("".join(
        json.dumps({"id": f"c{i}", "input": json.dumps({"i": i}), "expected": {"a": 1}, "fields": ["a"]}) + "\n"
        for i in range(8)))
    (tmp_path / "suite.yaml").write_text(
        "name: f\ncases: cases.jsonl\noutput_dir: out\nruns: 3\nvariants:\n"
        "  x: {subject: {type: python, function: 'subj:f', model_free: true}, params: {s: x}}\n"
        "  y: {subject: {type: python, function: 'subj:f', model_free: true}, params: {s: y, err: true}}\n")
    proc = scoreboard(["run", "suite.yaml", "--no-progress", "--format", "json,md"], tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    (path,) = (tmp_path / "out" / "f").glob("*.json")
    errored = json.loads(path.read_text())["summary"]["variants"]["y"]["field_accuracy_over"]["errored_attempts"]
    assert errored
    words = (f"fields are compared over the attempts graded field by field: left out, y's {errored} errored "
             "attempts (no fields to grade; the pass-rate comparison counts them as failures)")
    assert words in path.with_suffix(".md").read_text()
    from scoreboard.record.figures import field_errors_words
    from scoreboard.record.io import read_report

    report = read_report(path)
    assert field_errors_words(report.summary.comparisons[0], report.summary) == words
    import os

    from tests.record.conftest import BROWSER_ARGS, CHROMIUM

    if not os.path.exists(CHROMIUM):
        return  # the Markdown and the helper are checked above; the page needs Chromium
    from playwright.sync_api import sync_playwright

    assert scoreboard(["report", str(path), "--format", "html", "--output", "page.html"], tmp_path).returncode == 0
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=BROWSER_ARGS)
        try:
            page = browser.new_page()
            page.goto((tmp_path / "page.html").resolve().as_uri())
            page.wait_for_selector("html[data-ready=true]", timeout=30_000)
            text = page.get_by_test_id("cmp-field-errors").inner_text()
        finally:
            browser.close()
    assert words in text


def test_a_gate_met_up_to_float_rounding_passes():
    """A case score is a mean of grade scores that are floats (0.7 and 0.1 average to
    0.39999999999999997, not the 0.4 a gate names): `--fail-under-metric score=0.4` failed with
    "40.0% < 40.0%". The gates on dQ and the baseline already allow rounding (1e-12); these did not."""
    from scoreboard.stats.gates import fail_under_gates, metric_gates
    from scoreboard.stats.metrics import mean_figure

    value = mean_figure({"a": (0.7, 1), "b": (0.1, 1)})["value"]
    assert value < 0.4  # the float mean, an ulp under
    summary = {"variants": {"v": {"score": {"value": value}, "pass_rate": 0.1 + 0.2 - 0.2,
                                  "metrics": {"total": {"value": 12.5 * (1 - 1e-15)}}}}}
    (gate,) = metric_gates(summary, {"score": 0.4}, ["v"])
    assert gate["passed"] and "≥ 40.0%" in gate["description"], gate
    (gate,) = metric_gates(summary, {"total": 12.5}, ["v"], declared={"total"})
    assert gate["passed"], gate
    (gate,) = fail_under_gates(summary, 0.1, ["v"])
    assert gate["passed"], gate
    # a real shortfall still fails
    (gate,) = metric_gates(summary, {"score": 0.4001}, ["v"])
    assert not gate["passed"]
