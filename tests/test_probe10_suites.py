"""Suites as people write them (probe 10): custom graders in Python, weights, thresholds, metrics,
gates and reducers, used from the outside (the CLI on real files) as a user porting a suite would."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.cli_inprocess import run_cli

SUBJECT = "def reply(prompt, skill, run, params):\n    return 'ANSWER: ' + prompt\n"


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")}
    env["SCOREBOARD_STORE"] = "none"
    return run_cli(args, cwd, env)


def suite(folder: Path, body: str, cases: list[dict] | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "subj.py").write_text(SUBJECT)
    rows = cases or [{"id": "c1", "input": "Paris"}]
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in rows))
    path = folder / "suite.yaml"
    path.write_text("name: p10\ncases: cases.jsonl\nsubject: {type: python, function: \"subj:reply\", "
                    "model_free: true}\n" + body)
    return path


def report(proc: subprocess.CompletedProcess) -> dict:
    assert proc.returncode in (0, 3), proc.stderr
    return json.loads(proc.stdout)


# ---- a python-file grader importing a module beside it -----------------------------------------

def test_a_python_file_grader_imports_a_module_beside_it(tmp_path):
    """`python-file:checks.py:fn` whose checks.py says `import helpers` (a helpers.py beside it, as
    any grader split over two files has): the suite loaded with "No module named 'helpers'"."""
    folder = tmp_path / "s"
    path = suite(folder, "graders:\n  - \"python-file:checks.py:sib\"\n"
                         "  - {python: {file: checks.py, function: sib}}\n")
    (folder / "helpers.py").write_text("def ok(text):\n    return 'ANSWER' in text\n")
    (folder / "checks.py").write_text("import helpers\n\ndef sib(output, context):\n    return helpers.ok(output)\n")
    proc = cli(tmp_path, "run", str(path), "--output-dir", str(tmp_path / "out"), "--json")
    assert proc.returncode == 0, proc.stderr
    data = report(proc)
    assert [a["status"] for a in data["attempts"]] == ["passed"]
    assert [g["passed"] for g in data["attempts"][0]["grades"]] == [True, True]


# ---- a gate on a reducer the suite does not declare --------------------------------------------

def test_a_gate_on_a_reducer_the_suite_does_not_declare_is_refused_when_it_loads(tmp_path):
    """`fail_under_metrics: {"reducer:max": 0.5}` with `reducers: [mean]`: the run went ahead and
    its gate failed on "reducer max n/a", saying neither why nor what to fix (exit 3), though
    the suite's reducers are known before anything runs."""
    path = suite(tmp_path / "s", "graders: [{contains: ANSWER}]\nruns: 2\nreducers: [mean, {kind: at_least, k: 2}]\n"
                                 "fail_under_metrics: {\"reducer:max\": 0.5}\n")
    proc = cli(tmp_path, "run", str(path), "--output-dir", str(tmp_path / "out"))
    assert proc.returncode == 1, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("scoreboard: error")]
    assert len(lines) == 1, proc.stderr
    assert "suite.yaml" in lines[0] and "fail_under_metrics.reducer:max" in lines[0], lines
    assert "no reducer 'max'" in lines[0] and "at_least_2, mean" in lines[0], lines
    assert not (tmp_path / "out").exists()
    # from the command line too, and a declared reducer's gate still reads it
    bare = suite(tmp_path / "b", "graders: [{contains: ANSWER}]\n")
    proc = cli(tmp_path, "run", str(bare), "--output-dir", str(tmp_path / "out"), "--fail-under-metric", "reducer:max=0.5")
    assert proc.returncode == 1 and "no reducer 'max' is declared (reducers: none)" in proc.stderr, proc.stderr
    ok = suite(tmp_path / "k", "graders: [{contains: ANSWER}]\nreducers: [max]\nfail_under_metrics: {\"reducer:max\": 0.5}\n")
    proc = cli(tmp_path, "run", str(ok), "--output-dir", str(tmp_path / "out"))
    assert proc.returncode == 0 and "gate passed: reply: reducer max 100.0% ≥ 50.0%" in proc.stdout + proc.stderr, proc.stderr


# ---- a floor outside 0..1 on a grader's metric, a named score or a reducer ---------------------

def test_a_floor_outside_0_1_on_a_metric_of_scores_is_refused_as_a_share(tmp_path):
    """`fail_under_metrics: {accuracy: 90}` (90 meant as 90%) on a grader's `metric: accuracy`: a
    mean of grade scores never exceeds 1, so the run went ahead and its gate could only fail
    ("metric accuracy 1 < 90", exit 3); the same for a Python grader's named score and a reducer.
    A derived metric may exceed 1 (`acc * 3`) and keeps any finite floor."""
    body = ("graders: [{contains: ANSWER, metric: accuracy}]\nreducers: [max]\n"
            "derived_metrics: {tripled: \"accuracy * 3\"}\n")
    for i, (gate, floor) in enumerate((("accuracy", 90), ("reply:accuracy", 1.5), ("metric:tone", -0.5),
                                       ("reducer:max", 2))):
        path = suite(tmp_path / f"s{i}", body + f"fail_under_metrics: {{\"{gate}\": {floor}}}\n")
        proc = cli(tmp_path, "run", str(path), "--output-dir", str(tmp_path / "out"))
        assert proc.returncode == 1, (gate, proc.stdout, proc.stderr)
        lines = [line for line in proc.stderr.splitlines() if line.startswith("scoreboard: error")]
        assert len(lines) == 1 and f"field 'fail_under_metrics.{gate}'" in lines[0], lines
        assert "is a share and must be between 0 and 1" in lines[0], lines
        assert not (tmp_path / "out").exists()
    path = suite(tmp_path / "ok", body + "fail_under_metrics: {tripled: 2.5, accuracy: 0.9}\n")
    proc = cli(tmp_path, "run", str(path), "--output-dir", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    assert "gate passed: reply: derived metric tripled 3 ≥ 2.5" in proc.stdout + proc.stderr, proc.stdout + proc.stderr


# ---- reducers whose figure could only be 0, or options that change nothing ---------------------

def test_an_at_least_reducer_needing_more_runs_than_the_suite_makes_is_refused(tmp_path):
    """`runs: 2` with `{kind: at_least, k: 3}`: no case can have 3 runs, so the reducer reported
    "at_least_3: 0.0%" for a subject that passed every run, with no word why (a pass@K gate
    with K above the runs is refused; this is the same figure)."""
    body = "graders: [{contains: ANSWER}]\nruns: 2\nreducers: [max, {kind: at_least, k: 3}]\n"
    path = suite(tmp_path / "s", body)
    proc = cli(tmp_path, "run", str(path), "--output-dir", str(tmp_path / "out"))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("scoreboard: error")]
    assert len(lines) == 1 and "suite.yaml:6, field 'reducers.1.k'" in lines[0], lines
    assert "needs at least 3 runs of each case; the suite runs 2" in lines[0], lines
    # --runs 3 makes it meaningful, and every run passed: 1, never 0
    data = report(cli(tmp_path, "run", str(path), "--output-dir", str(tmp_path / "out"), "--runs", "3", "--json"))
    assert data["summary"]["variants"]["reply"]["reducers"]["at_least_3"]["value"] == 1.0


def test_k_or_value_on_a_reducer_that_reads_every_run_is_refused(tmp_path):
    """`{kind: max, k: 2}` or `{kind: mean, value: 0.5}` (meant as at_least's options) ran as a
    plain max or mean, the option ignored in silence."""
    for i, (spec, extra) in enumerate((("{kind: max, k: 2}", "k"), ("{kind: mean, value: 0.5}", "value"))):
        path = suite(tmp_path / f"s{i}", f"graders: [{{contains: ANSWER}}]\nruns: 2\nreducers: [{spec}]\n")
        proc = cli(tmp_path, "run", str(path), "--output-dir", str(tmp_path / "out"))
        assert proc.returncode == 1, proc.stdout + proc.stderr
        lines = [line for line in proc.stderr.splitlines() if line.startswith("scoreboard: error")]
        assert len(lines) == 1 and f"field 'reducers.0.{extra}'" in lines[0], lines
        assert "is the at_least reducer's" in lines[0], lines


# ---- a threshold over graders that all weigh 0 -------------------------------------------------

def test_a_threshold_on_a_case_whose_graders_all_weigh_0_is_refused_naming_the_case(tmp_path):
    """`defaults: {threshold: 0.5}` with graders that are all `weight: 0` (metric-only): the case's
    score is a weighted mean over no weight, so every attempt came out "NOT ASSESSED" with no
    reason and the pass rate read n/a (0/0), whatever the subject answered."""
    cases = [{"id": "c1", "input": "Paris"},
             {"id": "c2", "input": "Rome", "graders": [{"contains": "Rome", "weight": 0, "metric": "m"}],
              "replace": True},
             {"id": "c3", "input": "Oslo", "graders": [{"contains": "Oslo", "weight": 1}]}]
    body = ("defaults:\n  threshold: 0.5\n  graders: [{contains: ANSWER, weight: 0, metric: m}]\n")
    path = suite(tmp_path / "s", body, cases)
    proc = cli(tmp_path, "run", str(path), "--output-dir", str(tmp_path / "out"))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("scoreboard: error")]
    assert len(lines) == 2, lines
    for line, (n, cid) in zip(lines, ((1, "c1"), (2, "c2"))):
        assert f"cases.jsonl:{n}, case '{cid}', field 'threshold'" in line, line
        assert "every grader has weight 0" in line, line
    assert not (tmp_path / "out").exists()
    # one grader that weighs something decides it (c3: defaults' weight-0 grader plus its own)
    path = suite(tmp_path / "ok", body, cases[2:])
    data = report(cli(tmp_path, "run", str(path), "--output-dir", str(tmp_path / "out"), "--json"))
    assert [(a["case_id"], a["status"], a["score"]) for a in data["attempts"]] == [("c3", "passed", 1.0)]
