"""Suites as people write them, probed again from the outside: custom Python graders that end
their own process (sys.exit in an async function, KeyboardInterrupt), return numpy values or
scores under their threshold, and the one-line errors and semantics a suite author relies on.
Each test runs the real command (`python -m scoreboard`, in-process) on files written under tmp_path."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.cli_inprocess import run_cli

SUBJECT = "def reply(prompt, skill, run, params):\n    return 'ANSWER: ' + prompt\n"


def scoreboard(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return run_cli(args, cwd)  # in-process: no test here is about the process


def write_suite(folder: Path, cases: list[dict], checks: str = "", extra: str = "") -> Path:
    (folder / "subj.py").write_text(SUBJECT)
    (folder / "checks.py").write_text(checks)
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    suite = folder / "suite.yaml"
    suite.write_text("name: probe2\ncases: cases.jsonl\nallow_case_code: true\n"
                     "subject: {type: python, function: 'subj:reply', model_free: true}\n" + extra)
    return suite


def run_report(folder: Path, suite: Path, *flags: str) -> tuple[subprocess.CompletedProcess, dict]:
    out = folder / "report.json"
    proc = scoreboard("run", str(suite), "--output", str(out), "--no-progress", "--format", "json",
                      *flags, cwd=folder)
    assert out.is_file(), proc.stderr
    return proc, json.loads(out.read_text())


def by_case(report: dict) -> dict[str, dict]:
    return {a["case_id"]: a for a in report["attempts"]}


EXITING = '''
import sys

async def async_exit(output, context):
    sys.exit(4)

def interrupt(output, context):
    raise KeyboardInterrupt

async def async_interrupt(output, context):
    raise KeyboardInterrupt("stop")

def fine(output, context):
    return True

def decide(named_scores, context):
    raise KeyboardInterrupt
'''


def test_a_grader_that_exits_or_interrupts_is_that_case_s_error_never_the_end_of_the_run(tmp_path):
    suite = write_suite(tmp_path, [
        {"id": "async-exit", "input": "a", "graders": ["python-file:checks.py:async_exit"]},
        {"id": "interrupt", "input": "b", "graders": ["python-file:checks.py:interrupt"]},
        {"id": "async-interrupt", "input": "c", "graders": ["python-file:checks.py:async_interrupt"]},
        {"id": "fine", "input": "d", "graders": ["python-file:checks.py:fine"]},
    ], EXITING)
    proc, report = run_report(tmp_path, suite)
    assert proc.returncode == 2, proc.stderr   # execution errors, not the grader's exit code 4 nor 130
    attempts = by_case(report)
    assert attempts["fine"]["status"] == "passed"
    assert attempts["async-exit"]["status"] == "error"
    assert "grader 'python' raised SystemExit: 4" in attempts["async-exit"]["error"]
    assert attempts["interrupt"]["status"] == "error"
    assert attempts["interrupt"]["error"] == "grader 'python' raised KeyboardInterrupt"
    assert attempts["async-interrupt"]["error"] == "grader 'python' raised KeyboardInterrupt: stop"


def test_a_scoring_function_that_interrupts_is_an_error_on_its_attempt(tmp_path):
    suite = write_suite(tmp_path, [{"id": "scored", "input": "a", "graders": ["python-file:checks.py:fine"]}],
                        EXITING, "defaults: {scoring: 'python-file:checks.py:decide'}\n")
    proc, report = run_report(tmp_path, suite)
    assert proc.returncode == 2, proc.stderr
    attempt = by_case(report)["scored"]
    assert attempt["status"] == "error"
    assert attempt["error"].startswith("scoring function raised KeyboardInterrupt")


def test_a_case_written_with_the_id_an_expansion_made_is_a_duplicate_id_error(tmp_path):
    suite = write_suite(tmp_path, [
        {"id": "b", "vars": {"lang": ["fr", "de"]}, "expand": ["lang"], "expected": "x"},
        {"id": "b[lang=fr]", "vars": {"lang": "it"}, "expected": "x"},
    ])
    proc = scoreboard("validate", str(suite), cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [
        f"scoreboard: error: {tmp_path / 'cases.jsonl'}:2, case 'b[lang=fr]', field 'id': duplicate case id: "
        "an expanded case (ID[var=value]) already has it"]


def test_a_bad_transform_is_named_where_it_is_written_not_as_each_case_s_graders(tmp_path):
    cases = [{"id": "a", "input": "x", "expected": "x"}, {"id": "b", "input": "y"}]
    suite = write_suite(tmp_path, cases, extra="defaults: {transform: {first-match: '['}}\n")
    proc = scoreboard("validate", str(suite), cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [  # once, even where no case has a grader to fold it into
        f"scoreboard: error: {suite}:5, field 'defaults.transform': invalid regex '[' in 'first-match': "
        "unterminated character set at position 0"]
    cases = [{"id": "a", "input": "x", "expected": "x"},
             {"id": "b", "input": "y", "transform": {"bogus": 1}, "graders": []}]
    suite = write_suite(tmp_path, cases, extra="defaults: {transform: trim}\n")
    proc = scoreboard("validate", str(suite), cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [
        f"scoreboard: error: {tmp_path / 'cases.jsonl'}:2, case 'b', field 'transform': unknown transform 'bogus'"]


def test_a_threshold_or_reducer_value_of_true_is_refused_not_read_as_1(tmp_path):
    cases = [{"id": "a", "input": "x", "expected": "x"}]
    for extra, field in [("defaults: {threshold: true}\n", "defaults.threshold"),
                         ("reducers: [{kind: at_least, k: 1, value: true}]\n", "reducers.0.value")]:
        proc = scoreboard("validate", str(write_suite(tmp_path, cases, extra=extra)), cwd=tmp_path)
        assert proc.returncode == 1
        assert proc.stderr.strip().splitlines() == [
            f"scoreboard: error: {tmp_path / 'suite.yaml'}:5, field '{field}': must be a number (got True)"]
    proc = scoreboard("validate", str(write_suite(tmp_path, cases, extra="defaults: {threshold: 1}\n")), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr


NUMPY_AND_SCORES = '''
import numpy as np

def above(output, context):
    return np.float64(len(output)) > 3          # numpy.bool_, not bool

def share(output, context):
    return np.float32(0.75)

def rich(output, context):
    return {"pass": np.bool_(True), "score": np.float64(0.5), "named_scores": {"tone": np.float32(0.25)}}

def low(output, context):
    return {"score": 0.4}
'''


def test_numpy_values_a_grader_returns_count_as_the_python_values_they_hold(tmp_path):
    pytest.importorskip("numpy")
    suite = write_suite(tmp_path, [
        {"id": "above", "input": "a", "graders": ["python-file:checks.py:above"]},
        {"id": "share", "input": "b", "graders": ["python-file:checks.py:share"]},
        {"id": "rich", "input": "c", "graders": ["python-file:checks.py:rich"]},
    ], NUMPY_AND_SCORES)
    proc, report = run_report(tmp_path, suite)
    assert proc.returncode == 0, proc.stderr
    attempts = by_case(report)
    assert [attempts[c]["status"] for c in ("above", "share", "rich")] == ["passed"] * 3
    assert attempts["share"]["grades"][0]["score"] == 0.75
    assert attempts["rich"]["metrics"] == {"tone": 0.25}


def test_a_score_under_its_threshold_says_so_in_its_reason(tmp_path):
    suite = write_suite(tmp_path, [
        {"id": "low", "input": "a", "graders": [{"python": {"file": "checks.py", "function": "low", "threshold": 0.5}}]},
        {"id": "zero", "input": "b", "graders": [{"python": "0"}]},
    ], NUMPY_AND_SCORES.replace("import numpy as np", ""))
    proc, report = run_report(tmp_path, suite)
    assert proc.returncode == 0, proc.stderr
    attempts = by_case(report)
    assert attempts["low"]["status"] == "failed"
    assert attempts["low"]["grades"][0]["reason"] == "python returned score 0.4 (at least 0.5 passes)"
    assert attempts["zero"]["grades"][0]["reason"] == "python returned score 0 (passes above 0)"


PRINTING = '''
import json

def chatty(output, context):
    print("checking", context["case_id"])
    return True

async def chatty_async(output, context):
    print("async check")
    return {"pass": True, "score": 1.0}

def prints_verdict(output, context):
    print(json.dumps({"pass": True, "score": 1}))
'''


def test_what_a_grader_prints_never_reaches_the_json_on_stdout_and_a_printed_verdict_is_an_error(tmp_path):
    suite = write_suite(tmp_path, [
        {"id": "chatty", "input": "a", "graders": ["python-file:checks.py:chatty"]},
        {"id": "chatty-async", "input": "b", "graders": ["python-file:checks.py:chatty_async"]},
        {"id": "verdict", "input": "c", "graders": ["python-file:checks.py:prints_verdict"]},
    ], PRINTING)
    proc = scoreboard("run", str(suite), "--json", "--no-progress", "--format", "json",
                      "--output-dir", str(tmp_path / "out"), cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    report = json.loads(proc.stdout)   # stdout is the report and nothing else
    attempts = by_case(report)
    assert attempts["chatty"]["status"] == attempts["chatty-async"]["status"] == "passed"
    assert attempts["verdict"]["status"] == "error"   # never a silent pass
    assert attempts["verdict"]["error"] == ("grader 'python' raised ValueError: returned None after printing "
                                            "'{\"pass\": true, \"score\": 1}' to stdout: return the result, "
                                            "do not print it")
    for line in ("checking chatty", "async check", '{"pass": true, "score": 1}'):
        assert line in proc.stderr.splitlines()


def test_prompt_axis_mistakes_name_the_suite_file_and_the_variant(tmp_path):
    cases = [{"id": "a", "vars": {"country": "France"}, "graders": [{"contains": "France"}]}]
    for extra, said in [
        ("prompts: {terse: 'T {{ country }}'}\nvariants: {x: {prompt: 'X {{ country }}'}}\n",
         "6, field 'variants.x.prompt': variant 'x' has its own 'prompt', which cannot be crossed with the "
         "suite's 'prompts' (give one or the other)"),
        ("prompt: 'P {{ country }}'\nprompts: {terse: 'T {{ country }}'}\n",
         "6, field 'prompts': give 'prompt' or 'prompts', not both"),
        ("prompts: []\n", "5, field 'prompts': 'prompts' is empty: give at least one prompt, or leave it out"),
    ]:
        suite = write_suite(tmp_path, cases, extra=extra)
        proc = scoreboard("validate", str(suite), cwd=tmp_path)
        assert proc.returncode == 1
        assert proc.stderr.strip().splitlines() == [f"scoreboard: error: {suite}:{said}"]


def test_a_derived_metric_naming_a_metric_no_grader_declares_is_warned_of_before_running(tmp_path):
    cases = [{"id": "a", "input": "x"}]
    graders = "defaults: {graders: [{contains: x, metric: quality}]}\n"
    suite = write_suite(tmp_path, cases, extra=graders + "derived_metrics: {typo: '2 * qualty'}\n")
    proc = scoreboard("validate", str(suite), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr   # still valid (as promptfoo, an unknown name is no error) but said
    assert (f"scoreboard: warning: {suite}:6, field 'derived_metrics.typo': names 'qualty', which is neither a "
            "metric a grader declares nor a derived metric defined before it (declared: quality): it will be "
            "undefined") in proc.stderr.splitlines()
    # a custom grader's named_scores may give any name; a derived metric naming one defined before
    # it, and __count under aggregate: sum, are known: no warning
    code = "defaults: {graders: [{contains: x, metric: quality}, {python: 'True'}]}\n"
    derived = ("derived_metrics: {tone2: '2 * tone', double: '2 * quality', quad: '2 * double', "
               "per: {expression: 'quality / __count', aggregate: sum}}\n")
    proc = scoreboard("validate", str(write_suite(tmp_path, cases, extra=code + derived)), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "warning" not in proc.stderr
    proc = scoreboard("validate", str(write_suite(tmp_path, cases, extra=graders + derived.replace(
        "tone2: '2 * tone', ", ""))), cwd=tmp_path)
    assert proc.returncode == 0 and "warning" not in proc.stderr, proc.stderr


def test_a_case_s_expand_naming_a_var_it_lacks_is_an_error_not_a_silent_no_op(tmp_path):
    suite = write_suite(tmp_path, [{"id": "a", "vars": {"lang": ["fr", "de"]}, "expand": ["lnag"], "expected": "x"}],
                        extra="prompt: 'Say hi in {{ lang }}'\n")
    proc = scoreboard("validate", str(suite), cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [
        f"scoreboard: error: {tmp_path / 'cases.jsonl'}:1, case 'a', field 'expand': names 'lnag', which is not "
        "one of this case's vars ('lang')"]


def test_a_missing_or_uncallable_grader_function_names_its_file_not_an_internal_module(tmp_path):
    cases = [{"id": "a", "input": "x", "expected": "x"}]
    for target, said in [("y", "no function 'y' in '{file}'"),
                         ("x", "'x' in '{file}' is not a function (it is int)")]:
        suite = write_suite(tmp_path, cases, "x = 5\n", extra=f"graders: ['python-file:checks.py:{target}']\n")
        proc = scoreboard("validate", str(suite), cwd=tmp_path)
        assert proc.returncode == 1
        assert proc.stderr.strip().splitlines() == [
            f"scoreboard: error: {suite}:5, field 'graders[0]': grader 'python': "
            + said.format(file=tmp_path.resolve() / "checks.py")]


def test_a_prompt_that_includes_another_file_is_refused_at_load_naming_the_prompt_and_line(tmp_path):
    (tmp_path / "secret.txt").write_text("not for the prompt")
    suite = write_suite(tmp_path, [{"id": "a", "vars": {"c": "x"}, "expected": "x"}],
                        extra="prompt: \"Hello {{ c }}\\n{% include 'secret.txt' %}\"\n")
    proc = scoreboard("validate", str(suite), cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [
        f"scoreboard: error: {suite}:5, field 'prompt': prompt 'prompt': {{% include %}} on its line 2: "
        "a template cannot load another file (give a file as the whole prompt: \"@path\")"]
