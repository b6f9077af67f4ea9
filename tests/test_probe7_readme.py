"""README second pass (fresh7): what the manual promises, checked against the tree."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from scoreboard.store.db import open_database
from scoreboard.viewer.app import DEFAULT_DIMENSIONS
from scoreboard.viewer.reviews import review_from_form
from tests.cli_inprocess import run_cli
from tests.store.test_store import make_suite


def scoreboard(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return run_cli(args, cwd)


@pytest.fixture(scope="module")
def stored(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("stored")
    make_suite(folder)
    done = scoreboard("run", "suite.json", "--no-progress", cwd=folder)
    assert done.returncode in (0, 3), done.stderr
    return folder / ".scoreboard" / "history.sqlite"


def test_viewer_default_dimensions_make_a_review_import_reviews_reads(stored):
    # README: the viewer rates on its default dimensions and stores "the same record `import
    # reviews` makes". Every default dimension must be one a review record can hold.
    db = open_database(str(stored))
    try:
        key, = db.one("SELECT key FROM runs ORDER BY started_at LIMIT 1")
        output_hash, = db.one("SELECT output_hash FROM attempts WHERE run_key = ? AND case_id = 'c03' LIMIT 1", (key,))
        form = {"run": key, "case_id": "c03", "output_hash": output_hash, "reviewer_id": "ana",
                "rubric_version": "v1", "verdict": "pass", "notes": "fine",
                "ratings": {name: 4 for name in DEFAULT_DIMENSIONS}}
        entry, _ = review_from_form(db, form, DEFAULT_DIMENSIONS)
        assert entry["ratings"] == {name: 4 for name in DEFAULT_DIMENSIONS}
    finally:
        db.close()


def test_view_refuses_a_dimension_no_review_can_hold(tmp_path):
    # a dimension outside the review record made every review written with it a 400 from the page
    done = scoreboard("view", "--dimension", "charm", "--store", str(tmp_path / "none.sqlite"), cwd=tmp_path)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "charm" in lines[0] and "correctness, usefulness, coherence, creativity" in lines[0]
    assert not (tmp_path / "none.sqlite").exists()


def test_verify_counts_one_code_grade_in_the_singular(tmp_path):
    (tmp_path / "cases.jsonl").write_text('{"id": "a", "input": "hi", "expected": "hi"}\n')
    (tmp_path / "suite.yaml").write_text('name: one\ncases: cases.jsonl\nsubject: mock\n'
                                         'graders: [{python: "output == expected"}]\n')
    done = scoreboard("run", "suite.yaml", "--no-progress", "--output", "r.json", "--format", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    done = scoreboard("verify", "r.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "not recomputable offline: python (1 grade, first attempts[0].grades[0])" in done.stdout, done.stdout


CASES3 = "".join(f'{{"id": "{i}", "input": "{v}", "expected": "{e}"}}\n'
                 for i, v, e in (("a", "hello", "hello"), ("b", "world", "world"), ("c", "x", "y")))


@pytest.mark.parametrize("name", ["pass_rate", "score", "fields", "pass@1", "pass^2", "field:total",
                                  "metric:precision", "reducer:max"])
def test_a_derived_metric_named_like_a_figure_every_run_has_is_refused(tmp_path, name):
    # a gate on the name read the derived value in silence: --fail-under-metric pass_rate=0.5 gated
    # `derived_metrics: {pass_rate: "recall * 0.1"}`, not the pass rate
    (tmp_path / "cases.jsonl").write_text(CASES3)
    (tmp_path / "suite.yaml").write_text(
        'name: s\ncases: cases.jsonl\nsubject: "command:echo {input}"\n'
        'graders: [{python: "output.strip() == expected", metric: recall}]\n'
        f'derived_metrics: {{"{name}": "recall * 0.1"}}\n')
    done = scoreboard("validate", "suite.yaml", cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and f"field 'derived_metrics.{name}'" in lines[0], lines


def test_a_gate_on_pass_rate_or_score_reads_that_figure_not_a_metric_of_that_name(tmp_path):
    # a grader's metric (or a Python grader's named score) called pass_rate or score shadowed the
    # figure the gate names; the metric stays reachable as metric:NAME
    (tmp_path / "cases.jsonl").write_text(CASES3)
    (tmp_path / "checks.py").write_text("def named(output, context):\n"
                                        "    return {'pass': True, 'score': 1.0, 'named_scores': {'score': 0.0}}\n")
    (tmp_path / "suite.yaml").write_text(
        'name: s\ncases: cases.jsonl\nsubject: "command:echo {input}"\n'
        'graders:\n  - {python: "output.strip() == expected"}\n'
        '  - {python: "False", metric: pass_rate, weight: 0}\n'
        '  - {python: {file: checks.py, function: named}, weight: 0}\n')
    done = scoreboard("run", "suite.yaml", "--no-progress", "--format", "json", "--output", "r.json",
                      "--fail-under-metric", "pass_rate=0.6", "--fail-under-metric", "score=0.6", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "gate passed: echo: pass rate 66.7% ≥ 60.0%" in done.stdout, done.stdout
    done = scoreboard("run", "suite.yaml", "--no-progress", "--format", "json", "--output", "m.json",
                      "--fail-under-metric", "metric:pass_rate=0.5", "--fail-under-metric", "metric:score=0.5",
                      cwd=tmp_path)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "gate FAILED: echo: metric pass_rate 0.0% < 50.0%" in done.stdout, done.stdout
    assert "gate FAILED: echo: metric score 0.0% < 50.0%" in done.stdout, done.stdout
    for report in ("r.json", "m.json"):
        done = scoreboard("verify", report, "--allow-code", cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr


def test_import_promptfoo_lists_a_derived_metric_named_like_a_figure_and_the_suite_loads(tmp_path):
    (tmp_path / "promptfooconfig.yaml").write_text(
        "prompts: ['Q: {{ q }}']\nproviders: [echo]\n"
        "tests:\n  - vars: {q: 'yes'}\n    assert:\n      - {type: contains, value: 'yes', metric: hits}\n"
        "derivedMetrics:\n  - {name: score, value: 'hits / __count'}\n  - {name: share, value: 'hits / __count'}\n")
    done = scoreboard("import", "promptfoo", "promptfooconfig.yaml", "--output", "out", cwd=tmp_path)
    assert done.returncode == 3 and "derivedMetrics.0" in done.stdout, done.stdout + done.stderr
    assert "derivedMetrics.1" not in done.stdout
    done = scoreboard("validate", "out/suite.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_difference_no_run_could_detect_is_never_shown_past_100_points(tmp_path):
    # 3 cases: the smallest detectable difference is 188 points; the terminal said "could not detect
    # even a 100-point difference" while the Markdown table and the compare page said "±188 points"
    (tmp_path / "cases.jsonl").write_text(CASES3)
    (tmp_path / "suite.yaml").write_text(
        'name: s\ncases: cases.jsonl\ngraders: [{python: "output.strip() == expected"}]\n'
        'variants:\n  good: {subject: "command:echo {input}"}\n  bad: {subject: "command:false"}\n')
    done = scoreboard("run", "suite.yaml", "--no-progress", "--format", "json,md", "--output", "r.json", cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "could not detect even a 100-point difference" in done.stdout
    markdown = (tmp_path / "r.md").read_text()
    done = scoreboard("compare", "r.json", "r.json", "--pair", "good=bad", "--output", "c.html", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    page = (tmp_path / "c.html").read_text()
    for text in (markdown, page):
        assert "±188" not in text and "none within 100 points" in text


@pytest.mark.parametrize("flag, grader", [("--min-dq", "pointwise"), ("--min-rubric", "rubric-score")])
def test_a_judge_gate_no_grader_can_feed_is_refused_before_anything_runs(tmp_path, flag, grader):
    # the whole run was spent (every request sent) before the gate failed on 'n/a'
    (tmp_path / "cases.jsonl").write_text(CASES3)
    (tmp_path / "suite.yaml").write_text(
        'name: s\ncases: cases.jsonl\ngraders: [{python: "output.strip() == expected"}]\n'
        'variants:\n  a: {subject: "command:echo {input}"}\n  b: {subject: "command:echo {input}"}\n')
    done = scoreboard("run", "suite.yaml", flag, "0.5", "--no-progress", cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and f"flag {flag}" in lines[0] and grader in lines[0], lines
    assert not (tmp_path / "eval-results").exists()
