"""Suites as people write them, probed from the outside once more: named metrics whose graders
raise or cannot decide, answer extraction and case options written wrong. Each test runs the real
command (`python -m scoreboard`) on files written under tmp_path, and checks that `verify`
accepts what it wrote."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.cli_inprocess import run_cli

SUBJECT = "def reply(prompt, skill, run, params):\n    return 'ANSWER: ' + prompt\n"


def scoreboard(*args: str, cwd: Path, process: bool = False) -> subprocess.CompletedProcess:
    """`python -m scoreboard ARGS` (SCOREBOARD_STORE=none), run in this process (tests/cli_inprocess.py):
    what these tests check is what the command says and writes, not the process. `process=True`:
    a real `python -m scoreboard` process, where a test needs every user module imported anew."""
    env = {**os.environ, "SCOREBOARD_STORE": "none"}
    if process:
        return subprocess.run([sys.executable, "-m", "scoreboard", *args], cwd=cwd, capture_output=True,
                              text=True, timeout=120, env=env)
    return run_cli(args, cwd, env)


def write_suite(folder: Path, cases: list[dict], extra: str, checks: str = "") -> Path:
    (folder / "subj.py").write_text(SUBJECT)
    (folder / "checks.py").write_text(checks)
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    suite = folder / "suite.yaml"
    suite.write_text("name: probe13\ncases: cases.jsonl\nallow_case_code: true\n"
                     "subject: {type: python, function: 'subj:reply', model_free: true}\n" + extra)
    return suite


def run_report(folder: Path, suite: Path, *flags: str) -> tuple[subprocess.CompletedProcess, dict]:
    out = folder / "report.json"
    proc = scoreboard("run", str(suite), "--output", str(out), "--no-progress", "--format", "json,md",
                      *flags, cwd=folder)
    assert out.is_file(), proc.stderr
    return proc, json.loads(out.read_text())


UNDECIDED = '''
def raiser(output, context):
    raise RuntimeError("grader bug")

def unsure(output, context):
    return {"pass": None, "reason": "cannot tell"}
'''


def test_a_metric_whose_grader_raised_or_could_not_decide_is_unknown_never_the_mean_of_the_rest(tmp_path):
    """Two graders name `acc`: one raises, the other fails (0). The attempt's `acc` was recorded as
    0.0 (the mean of the one grade left) and the variant's figure read 0.0% from two errored
    attempts; `acc2`, half of it `pass: null`, read 100%. The grade of the grader that raised
    also lost its metric and weight in the report. Now the metric is unknown on those attempts
    (left out, shown as n/a), the raised grade keeps `metric` and `weight`, and verify agrees."""
    suite = write_suite(tmp_path, [{"id": "a", "input": "Paris"}, {"id": "b", "input": "Rome"}], (
        "graders:\n"
        "  - {python: 'python-file:checks.py:raiser', metric: acc, weight: 2}\n"
        "  - {contains: zzz, metric: acc}\n"
        "  - {python: 'python-file:checks.py:unsure', metric: acc2}\n"
        "  - {contains: ANSWER, metric: acc2}\n"
        "  - {contains: ANSWER, metric: fine}\n"), UNDECIDED)
    proc, report = run_report(tmp_path, suite)
    assert proc.returncode == 2, proc.stderr
    for a in report["attempts"]:
        assert a["status"] == "error" and a["score"] is None
        assert a["metrics"] == {"fine": 1.0}  # acc and acc2 unknown, never 0.0 or 1.0
        raised = a["grades"][0]
        assert raised["reason"] == "grader raised RuntimeError: grader bug"
        assert (raised["metric"], raised["weight"]) == ("acc", 2)
    figures = report["summary"]["variants"]["reply"]["metrics"]
    assert figures["acc"]["value"] is None and figures["acc2"]["value"] is None
    assert figures["fine"]["value"] == 1.0
    assert "metric acc: 0.0%" not in proc.stdout and "metric acc2: 100.0%" not in proc.stdout
    assert "metric acc: n/a" in proc.stdout
    markdown = (tmp_path / "report.md").read_text()
    assert "| metric acc | 0.0%" not in markdown and "| metric acc | n/a" in markdown
    for flags in ((), ("--allow-code",)):
        checked = scoreboard("verify", *flags, "report.json", cwd=tmp_path)
        assert checked.returncode == 0, checked.stdout + checked.stderr


def test_choice_and_simple_transform_options_written_wrong_are_refused_naming_the_case(tmp_path):
    """`{choice: {choices: 4, multi: true}}` (a typo of `multiple`) and `{choice: 4}` (meant as the
    number of choices) were accepted and their options silently dropped: a multiple-answer
    question was parsed as single-answer. `{trim: yes}` said "unknown transform 'trim'"."""
    for transform, said in (({"choice": {"choices": 4, "multi": True}}, "'choice' takes choices and multiple, not 'multi'"),
                            ({"choice": 4}, "'choice' takes {choices, multiple} or nothing, got 4"),
                            ({"trim": "yes"}, "'trim' takes no options")):
        suite = write_suite(tmp_path, [{"id": "q7", "input": "x", "expected": "AC",
                                        "graders": [{"exact": None, "transform": transform}]}], "")
        proc = scoreboard("validate", suite.name, cwd=tmp_path)
        assert proc.returncode == 1, proc.stdout
        (line,) = proc.stderr.strip().splitlines()
        assert line.startswith("scoreboard: error: cases.jsonl:1, case 'q7', field 'graders.0': ") and said in line, line
    # the spellings the README gives still load, and the options still apply
    suite = write_suite(tmp_path, [{"id": "q7", "input": "Paris", "expected": "AC", "graders": [
        {"exact": None, "transform": [{"choice": None}]},
        {"exact": None, "transform": "choice"},
        {"exact": None, "transform": [{"choice": {"choices": 4, "multiple": True}}, "trim", {"lower": None}]}]}], "")
    proc = scoreboard("validate", str(suite), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr


def test_a_case_s_replace_or_synthetic_of_the_wrong_type_is_refused_not_converted(tmp_path):
    """`"replace": "yes"` or `"replace": 1` in a case file was read as true and `"synthetic":
    "false"` as false (pydantic's lax booleans), where every other setting of the wrong type is an
    error naming the field: a typed value is never converted."""
    for field, value in (("replace", "yes"), ("replace", 1), ("synthetic", "false")):
        suite = write_suite(tmp_path, [{"id": "c1", "input": "x", field: value, "graders": [{"contains": "x"}]}],
                            "defaults: {graders: [{contains: ANSWER}]}\n")
        proc = scoreboard("validate", suite.name, cwd=tmp_path)
        assert proc.returncode == 1, proc.stdout
        (line,) = proc.stderr.strip().splitlines()
        assert line == (f"scoreboard: error: cases.jsonl:1, case 'c1', field '{field}': must be true or false "
                        f"(got {value!r})"), line
    suite = write_suite(tmp_path, [{"id": "c1", "input": "x", "replace": True, "synthetic": False,
                                    "graders": [{"contains": "x"}]}], "defaults: {graders: [{contains: ANSWER}]}\n")
    assert scoreboard("validate", suite.name, cwd=tmp_path).returncode == 0


def test_what_grader_or_subject_code_prints_when_imported_never_reaches_the_json_on_stdout(tmp_path):
    """A checks.py (or the subject's module) that prints at its top level (a banner, a debug
    line): `plan --json`, `plan --output -`, `rescore --json` and `verify --allow-code --json`
    began their stdout with that line, so the JSON could not be read. `run --json` already sent
    it to stderr; now importing user code does, wherever it happens."""
    checks = 'print("checks imported")\n\ndef ok(output, context):\n    print("grading")\n    return True\n'
    suite = write_suite(tmp_path, [{"id": "a", "input": "Paris"}],
                        "graders: [{python: 'python-file:checks.py:ok'}, {python: 'python:helpers:ok'}]\n", checks)
    (tmp_path / "helpers.py").write_text(checks.replace("checks imported", "helpers imported"))
    (tmp_path / "subj.py").write_text('print("subject imported")\n' + SUBJECT)
    out = tmp_path / "report.json"
    proc = scoreboard("run", suite.name, "--output", str(out), "--format", "json", "--no-progress", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    for args in (("plan", suite.name, "--json"), ("plan", suite.name, "--output", "-"),
                 ("rescore", str(out), "--json"), ("verify", "--allow-code", str(out), "--json")):
        proc = scoreboard(*args, cwd=tmp_path, process=True)  # a fresh process: every module imported anew
        assert proc.returncode == 0, (args, proc.stderr)
        json.loads(proc.stdout)  # the JSON alone
        assert "imported" not in proc.stdout
        assert "checks imported" in proc.stderr, args


def _readme_block(after: str) -> str:
    text = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    start = text.index("```yaml\n", text.index(after)) + len("```yaml\n")
    return text[start:text.index("```", start)]


def test_the_readme_s_defaults_example_can_pass_a_right_answer(tmp_path):
    """The README's `defaults:` example pairs `graders: [{contains: "ANSWER:"}]` with
    `transform: {last-match: "ANSWER: (.*)"}`: the transform (applied to every grader) leaves
    only the answer, so the default grader failed every case, a right answer included. Run as
    printed, with a case that adds an `exact` grader, a right answer now passes."""
    block = _readme_block("### Defaults and record-only cases")
    (tmp_path / "scoring.py").write_text("def decide(named_scores, context):\n"
                                         "    return context['score'] >= context['threshold']\n")
    subject = "def reply(prompt, skill, run, params):\n    return 'Thinking.\\nANSWER: Paris'\n"
    suite = write_suite(tmp_path, [{"id": "fr", "input": "Capital of France?", "expected": "Paris",
                                    "vars": {"lang": ["en", "fr"]}, "graders": ["exact"]}], block)
    (tmp_path / "subj.py").write_text(subject)
    proc, report = run_report(tmp_path, suite)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert {a["case_id"]: a["status"] for a in report["attempts"]} == {"fr[lang=en]": "passed",
                                                                       "fr[lang=fr]": "passed"}


def test_a_derived_metric_calling_min_max_abs_or_sqrt_with_the_wrong_arguments_is_refused_when_it_loads(tmp_path):
    """`max(precision)` (one value), `min()`, `abs(precision, 1)` or a bare `max` loaded, ran,
    and every rendering showed the figure as n/a "(undefined: the arithmetic has no value (a
    division by zero, or a root of a negative number))": a mistake in the suite, explained as
    arithmetic, found only after the run spent its requests."""
    cases = [{"id": "a", "input": "Paris", "graders": [{"contains": "P", "metric": "precision"}]}]
    for expression, said in (("max(precision)", "max() takes two or more values, got 1"),
                             ("min()", "min() takes two or more values, got 0"),
                             ("abs(precision, 1)", "abs() takes one value, got 2"),
                             ("max + precision", "names the function 'max' without calling it")):
        suite = write_suite(tmp_path, cases, f'derived_metrics: {{x: "{expression}"}}\n')
        proc = scoreboard("run", suite.name, "--no-progress", "--output-dir", "out", cwd=tmp_path)
        assert proc.returncode == 1, proc.stdout
        (line,) = proc.stderr.strip().splitlines()
        assert line.startswith("scoreboard: error: suite.yaml:") and "field 'derived_metrics.x'" in line, line
        assert said in line, line
        assert not (tmp_path / "out").exists()
    suite = write_suite(tmp_path, cases, 'derived_metrics: {x: "max(precision, 0.5) + sqrt(abs(-precision))"}\n')
    proc, report = run_report(tmp_path, suite)
    assert report["summary"]["variants"]["reply"]["derived_metrics"]["x"]["value"] == 2.0


def test_a_scoring_function_or_python_transform_may_declare_only_its_first_argument(tmp_path):
    """A grader is called with as many of (output, context) as it declares, but a scoring
    function `def decide(named_scores)` and a transform `def extract(output)` were called with
    two: every attempt was an error ("takes 1 positional argument but 2 were given")."""
    code = ("def decide(named_scores):\n    return named_scores['m'] >= 0.5\n\n"
            "def extract(output):\n    return output.split(': ')[-1]\n")
    suite = write_suite(tmp_path, [{"id": "a", "input": "Paris", "expected": "Paris", "graders": [
        {"exact": None, "transform": "python-file:checks.py:extract", "metric": "m"}]}],
        "defaults: {scoring: 'python-file:checks.py:decide'}\n", code)
    proc, report = run_report(tmp_path, suite)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (attempt,) = report["attempts"]
    assert attempt["status"] == "passed" and attempt["grades"][0]["graded_output"] == "Paris", attempt
    checked = scoreboard("verify", "--allow-code", "report.json", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_expanding_a_var_that_holds_an_empty_list_is_an_error_not_a_case_sent_the_text_brackets(tmp_path):
    """`{"vars": {"lang": []}, "expand": ["lang"]}` (a matrix axis left empty) made one case whose
    prompt read "Answer in []": the list itself rendered as text, as if it were a value."""
    for extra, case in (("", {"expand": ["lang"]}), ("defaults: {expand: [lang]}\n", {})):
        suite = write_suite(tmp_path, [{"id": "ok", "vars": {"lang": ["fr"]}, "expected": "x", **case},
                                       {"id": "e1", "vars": {"lang": []}, "expected": "x", **case}],
                            "prompt: 'Answer in {{ lang }}'\n" + extra)
        proc = scoreboard("validate", suite.name, cwd=tmp_path)
        assert proc.returncode == 1, proc.stdout
        (line,) = proc.stderr.strip().splitlines()
        assert line == ("scoreboard: error: cases.jsonl:2, case 'e1', field 'vars.lang': expand names 'lang', an "
                        "empty list: it would make no case (give it a value, or leave it out of expand)"), line
