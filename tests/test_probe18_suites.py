"""Suites as people write them, round 4: templates that print what is not a value, Python graders
that return odd things or touch what they are given, weights, thresholds and metrics at their
edges, reducers over uneven runs. Each test runs the real command (`python -m scoreboard`) on
files written under tmp_path, and checks that `verify` accepts every report it wrote."""

from __future__ import annotations

import json
import os
import shutil
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
                              text=True, timeout=180, env=env)
    return run_cli(args, cwd, env)


def write_suite(folder: Path, cases: list[dict], extra: str, checks: str = "") -> Path:
    (folder / "subj.py").write_text(SUBJECT)
    (folder / "checks.py").write_text(checks)
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    suite = folder / "suite.yaml"
    suite.write_text("name: probe18\ncases: cases.jsonl\n"
                     "subject: {type: python, function: 'subj:reply', model_free: true}\n" + extra)
    return suite


def run_report(folder: Path, suite: Path, *flags: str,
               process: bool = False) -> tuple[subprocess.CompletedProcess, dict]:
    out = folder / "report.json"
    proc = scoreboard("run", str(suite), "--output", str(out), "--no-progress", "--format", "json,md",
                      *flags, cwd=folder, process=process)
    assert out.is_file(), proc.stderr
    verified = scoreboard("verify", str(out), "--allow-code", cwd=folder, process=process)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    return proc, json.loads(out.read_text())


def test_a_template_printing_a_method_or_object_is_refused_not_sent_with_its_memory_address(tmp_path):
    """`{{ country.upper }}` (the `()` forgotten) rendered "<built-in method upper of str object at
    0x7f...>": the prompt sent, hashed and recorded named a memory address, so it changed from run
    to run (cache keys, resume and the plan's hash with it) and told the model nothing; so did
    `{{ cycler(1, 2) }}` and `{{ joiner() }}`. Now each is one line per case naming the case and
    the field, exit 1, nothing run; a macro, a loop or a range still print as before."""
    cases = [{"id": "fr", "vars": {"country": "France"}}]
    for prompt, name in (("Capital of {{ country.upper }}?", "'str.upper'"),
                         ("{{ cycler(1, 2) }} {{ country }}", "'Cycler'"),
                         ("{{ joiner() }} {{ country }}", "'Joiner'"),
                         ("{{ vars.items }}", "'dict.items'")):
        folder = tmp_path / str(abs(hash(prompt)))
        folder.mkdir()
        suite = write_suite(folder, cases, f"prompt: {json.dumps(prompt)}\ngraders: [{{contains: F}}]\n")
        proc = scoreboard("run", str(suite), "--output", str(folder / "r.json"), "--no-progress", cwd=folder)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1, proc.stderr
        assert "case 'fr'" in lines[0] and "field 'vars'" in lines[0] and name in lines[0], lines[0]
        assert " at 0x" not in lines[0]
        assert not (folder / "r.json").exists()
    suite = write_suite(tmp_path, cases, 'prompt: "{% macro m() %}x{% endmacro %}{{ m() }} {{ range(2) }} '
                        '{% for c in [country] %}{{ loop.index }}{{ c }}{% endfor %}"\ngraders: [{contains: F}]\n')
    proc, report = run_report(tmp_path, suite)
    assert proc.returncode in (0, 1), proc.stderr
    assert report["plan"]["cases"][0]["input"] == "x range(0, 2) 1France"


MUTATES = '''
def mutate(output, context):
    context["vars"]["k"].append(99)
    context["expected"].append("LEAK")
    context["metadata"]["m"]["n"] = 42
    context["json"]["answer"] = "LEAK"
    context["tool_calls"].append({"name": "LEAK"})
    return True

def look(output, context):
    seen = (context["vars"], context["expected"], context["metadata"], context["json"], context["tool_calls"])
    return {"pass": True, "reason": repr(seen)}
'''


def test_a_grader_that_changes_its_context_changes_nothing_other_graders_attempts_or_the_report_see(tmp_path):
    """A Python grader that appended to `context["expected"]`, set a var, or edited the parsed JSON
    or the tool calls changed the case itself: the next grader of the attempt and every later run
    saw the change (growing by one each run), the plan recorded the changed case (its expected,
    vars and metadata), the attempt's output recorded the added tool call, and `verify` failed
    the report it had just written (fixture and output hashes). Now each call gets its own copy."""
    case = {"id": "a", "input": '{"answer": "Paris"}', "expected": ["Paris"], "vars": {"k": [1]},
            "metadata": {"m": {"n": 1}}}
    suite = write_suite(tmp_path, [case], (
        "runs: 3\nconcurrency: 1\ngraders:\n"
        "  - {python: 'python-file:checks.py:look'}\n"
        "  - {python: 'python-file:checks.py:mutate'}\n"
        "  - {python: 'python-file:checks.py:look'}\n"
        "  - {python: \"json['answer'] == 'Paris' and expected == ['Paris'] and vars == {'k': [1]}\"}\n"), MUTATES)
    (tmp_path / "subj.py").write_text("def reply(prompt, skill, run, params):\n    return prompt\n")
    proc, report = run_report(tmp_path, suite)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    untouched = repr(({"k": [1]}, ["Paris"], {"m": {"n": 1}}, {"answer": "Paris"}, []))
    for attempt in report["attempts"]:
        assert attempt["status"] == "passed", attempt["grades"]
        assert [g["reason"] for g in attempt["grades"][::2][:2]] == [untouched, untouched]
        assert attempt["output"]["tool_calls"] == []
    planned = report["plan"]["cases"][0]
    assert (planned["expected"], planned["vars"], planned["metadata"]) == (["Paris"], {"k": [1]}, {"m": {"n": 1}})


def test_a_scoring_function_that_edits_the_grades_it_is_given_leaves_the_recorded_grades_as_they_are(tmp_path):
    """`defaults.scoring` receives `{threshold, score, grades}`; one that cleared (or edited) the
    list emptied the attempt's recorded grades: the report said the case was passed with no grade
    at all, and `verify` failed it ("one grade per planned grader", "status does not follow")."""
    checks = ("def decide(named, context):\n"
              "    context['grades'][0]['passed'] = False\n"
              "    context['grades'].clear()\n"
              "    named['acc'] = 5\n"
              "    return True\n")
    suite = write_suite(tmp_path, [{"id": "a", "input": "Paris"}, {"id": "b", "input": "Rome"}], (
        "defaults: {scoring: 'python-file:checks.py:decide'}\n"
        "graders: [{contains: Paris, metric: acc}]\n"), checks)
    proc, report = run_report(tmp_path, suite)
    assert proc.returncode == 0, proc.stderr
    by_case = {a["case_id"]: a for a in report["attempts"]}
    assert [g["passed"] for g in by_case["a"]["grades"]] == [True]
    assert [g["passed"] for g in by_case["b"]["grades"]] == [False]
    assert by_case["b"]["metrics"] == {"acc": 0.0}
    assert {a["status"] for a in report["attempts"]} == {"passed"}


def test_a_python_subject_that_changes_its_vars_or_params_changes_no_other_run_nor_the_plan(tmp_path):
    """A python subject declaring keyword-only `vars` (and `params`) got shallow copies: appending
    to a list var or param changed the case and the variant, so run 2 saw run 1's change, the plan
    recorded the changed vars and params, and `verify` failed the report (fixture hash)."""
    suite = write_suite(tmp_path, [{"id": "a", "vars": {"k": [0]}, "expected": "x"}], (
        "runs: 3\nconcurrency: 1\nprompt: '{{ k }}'\nvariants: {v: {params: {p: [0]}}}\n"
        "graders: [{contains: x}]\n"))
    (tmp_path / "subj.py").write_text(
        "def reply(prompt, skill, run, params, *, vars):\n"
        "    vars['k'].append(run)\n    params['p'].append(run)\n"
        "    return repr((vars['k'], params['p']))\n")
    proc, report = run_report(tmp_path, suite)
    assert proc.returncode in (0, 1), proc.stderr
    texts = sorted(a["output"]["text"] for a in report["attempts"])
    assert texts == ["([0, 0], [0, 0])", "([0, 1], [0, 1])", "([0, 2], [0, 2])"]
    assert report["plan"]["cases"][0]["vars"] == {"k": [0]}
    assert report["plan"]["variants"][0]["params"] == {"p": [0]}


UNSURE_FIRST_RUN = '''
def g(output, context):
    if context["case_id"] in ("a", "b") and context["run"] == 0:
        return {"pass": None, "reason": "cannot tell"}
    return True
'''


def test_an_at_least_reducer_leaves_out_a_case_judged_fewer_than_k_times_never_counting_it_0(tmp_path):
    """`runs: 2` with `{kind: at_least, k: 2}`: a case whose first run could not be judged
    (`pass: null`) and whose second passed was reduced to 0 ("fewer than 2 runs scored 1"), though
    its unjudged run could have made it 1: the figure read 33% where every judged run passed,
    while pass@2 of the same summary left that case out and said so. Now the reducer leaves it out
    too (statistics version 14), says how many in every rendering, and is n/a when no case is
    left; a gate on it fails on n/a; verify recomputes a version-13 report as it was."""
    from scoreboard.stats.metrics import reduce_runs
    from scoreboard.stats.methods import computed_as

    suite = write_suite(tmp_path, [{"id": c, "input": c} for c in ("a", "b", "c")], (
        "runs: 2\ngraders: [{python: 'python-file:checks.py:g'}]\n"
        "reducers: [max, {kind: at_least, k: 2}]\n"), UNSURE_FIRST_RUN)
    proc, report = run_report(tmp_path, suite)
    assert proc.returncode == 0, proc.stderr
    fig = report["summary"]["variants"]["reply"]["reducers"]["at_least_2"]
    assert (fig["value"], fig["cases"], fig["left_out"]) == (1.0, 1, 2)
    said = "1 case; 2 cases judged fewer than 2 times, left out: unknown"
    assert said in proc.stdout and said in (tmp_path / "report.md").read_text()
    assert report["summary"]["variants"]["reply"]["reducers"]["max"]["cases"] == 3
    # every case left out: n/a, and a gate on it fails on n/a, never on a 0
    (tmp_path / "checks.py").write_text(UNSURE_FIRST_RUN.replace('in ("a", "b")', 'in ("a", "b", "c")'))
    for name in ("report.json", "report.md"):
        (tmp_path / name).unlink()
    shutil.rmtree(tmp_path / "report")
    with suite.open("a") as f:
        f.write("fail_under_metrics: {'reducer:at_least_2': 0.5}\n")
    proc, report = run_report(tmp_path, suite, process=True)  # a process: checks.py, rewritten, imported anew
    assert proc.returncode == 3, proc.stdout + proc.stderr
    fig = report["summary"]["variants"]["reply"]["reducers"]["at_least_2"]
    assert (fig["value"], fig["cases"], fig["left_out"]) == (None, 0, 3)
    assert "reducer at_least_2: n/a (3 cases judged fewer than 2 times, left out: unknown)" in proc.stdout
    assert report["gates"][0]["value"] is None and report["gates"][0]["passed"] is False
    # as version 13 computed it: a case judged once is 0
    with computed_as(13):
        assert reduce_runs([1.0], {"kind": "at_least", "k": 2}) == 0.0
    assert reduce_runs([1.0], {"kind": "at_least", "k": 2}) is None
    assert reduce_runs([1.0, 1.0], {"kind": "at_least", "k": 2}) == 1.0
    assert reduce_runs([0.0, 1.0], {"kind": "at_least", "k": 2}) == 0.0


def test_a_derived_metric_over_a_metric_whose_grades_all_could_not_decide_says_so_not_did_you_mean(tmp_path):
    """`derived_metrics: {d: "acc + ok"}` where `acc` is declared by a grader that never decides
    (`pass: null`) and a Python grader's named score is `acc2`: the note said "no attempt ... was
    scored on 'acc' (did you mean 'acc2'?...)", sending the user to rename a metric that was spelt
    right. Now it says the grader declaring it never decided (statistics version 15), in the
    terminal and Markdown; a name no grader declares still gets its suggestion."""
    checks = ("def unsure(output, context):\n    return {'pass': None}\n"
              "def named(output, context):\n    return {'pass': True, 'named_scores': {'acc2': 0.5}}\n")
    suite = write_suite(tmp_path, [{"id": "a", "input": "Paris"}, {"id": "b", "input": "Rome"}], (
        "graders:\n  - {python: 'python-file:checks.py:unsure', metric: acc}\n"
        "  - {contains: ANSWER, metric: ok}\n  - {python: 'python-file:checks.py:named'}\n"
        "derived_metrics: {d: 'acc + ok', typo: 'okk * 1'}\n"), checks)
    proc, report = run_report(tmp_path, suite)
    derived = report["summary"]["variants"]["reply"]["derived_metrics"]
    assert derived["d"]["value"] is None
    assert "did you mean" not in derived["d"]["note"], derived["d"]["note"]
    assert "'acc': declared by a grader whose every grade could not decide" in derived["d"]["note"]
    assert "did you mean 'ok'?" in derived["typo"]["note"]
    assert derived["d"]["note"] in proc.stdout and derived["d"]["note"] in (tmp_path / "report.md").read_text()


def test_vars_that_are_not_a_mapping_and_an_expand_that_doubles_cases_are_one_line_errors(tmp_path):
    """`"vars": [1, 2]` (or a text) passed the loader and the template, then the engine crashed
    building the subject's request ("internal error: TypeError: cannot convert dictionary update
    sequence", exit 2), with a prompt or without. `"expand": ["x", "x"]` made 4 cases from 2
    values (ids `a[x=1,x=2]`, the same case twice over), and a list holding the same value twice
    (`[[1], [1]]`, ids by position) the same case twice: each counted twice in every figure. Now
    each is one line naming the file, the case and the field, exit 1, nothing written."""
    for case, extra, said in (
            ({"id": "a", "input": "x", "vars": [1, 2]}, "", "cases.jsonl:1, case 'a', field 'vars': vars are a "
                                                            "mapping of names to values, got list"),
            ({"id": "a", "vars": "France"}, "prompt: '{{ vars }}'\n", "case 'a', field 'vars': vars are a mapping"),
            ({"id": "a", "vars": {"x": [1, 2]}, "expand": ["x", "x"]}, "prompt: '{{ x }}'\n",
             "case 'a', field 'expand': names 'x' twice"),
            ({"id": "a", "vars": {"x": [1, 2]}}, "prompt: '{{ x }}'\ndefaults: {expand: [x, x]}\n",
             "suite.yaml:5, field 'defaults.expand': names 'x' twice"),
            ({"id": "a", "vars": {"x": [[1], [1]]}, "expand": ["x"]}, "prompt: '{{ x }}'\n",
             "case 'a', field 'vars.x': expand names 'x', whose list holds [1] twice (items 1 and 2)")):
        folder = tmp_path / str(abs(hash(said)))
        folder.mkdir()
        suite = write_suite(folder, [case], extra + "graders: [{contains: A}]\n")
        proc = scoreboard("run", str(suite), "--output", str(folder / "r.json"), "--no-progress", cwd=folder)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert proc.stderr.count("\n") == 1 and said in proc.stderr, proc.stderr
        assert not (folder / "r.json").exists()
    # distinct values still expand, one case each
    suite = write_suite(tmp_path, [{"id": "a", "vars": {"x": [[1], [2]]}, "expand": ["x"]}],
                        "prompt: '{{ x }}'\ngraders: [{contains: A}]\n")
    proc, report = run_report(tmp_path, suite)
    assert [c["id"] for c in report["plan"]["cases"]] == ["a[x=0]", "a[x=1]"]


def test_verify_accepts_a_report_whose_graders_include_a_group(tmp_path):
    """A `group` (promptfoo's assert-set) ran fine, but `verify` failed every report holding one:
    it first steps a grading with no event loop, the group's asyncio.gather raised "There is no
    current event loop in thread 'MainThread'", and that was recorded as the group's own error
    ("expected grader raised RuntimeError ..., found aggregate score ..."); rescore did the same."""
    suite = write_suite(tmp_path, [{"id": "a", "input": "Paris"}, {"id": "b", "input": "Rome"}], (
        "graders:\n"
        "  - {group: {graders: [{contains: Paris}, {python: 'len(output) > 3', weight: 2}], threshold: 0.5}}\n"
        "  - {group: {graders: [{contains: ANSWER}, {regex: '^ANSWER'}]}}\n"))
    proc, report = run_report(tmp_path, suite)  # verify --allow-code: the python member graded again
    assert proc.returncode == 0, proc.stderr  # b fails the first group's contains: no gate, exit 0
    plain = scoreboard("verify", str(tmp_path / "report.json"), cwd=tmp_path)
    assert plain.returncode == 0 and "verified, no mismatch" in plain.stdout, plain.stdout + plain.stderr
    again = scoreboard("rescore", str(tmp_path / "report.json"), "--output", str(tmp_path / "again.json"),
                       cwd=tmp_path)
    assert again.returncode in (0, 1), again.stderr
    redone = json.loads((tmp_path / "again.json").read_text())
    assert [[g["passed"] for g in a["grades"]] for a in redone["attempts"]] == \
        [[g["passed"] for g in a["grades"]] for a in report["attempts"]]
    assert "RuntimeError" not in json.dumps(redone["attempts"])


def test_a_group_threshold_that_decides_nothing_is_refused_when_the_suite_loads(tmp_path):
    """`{group: {graders: [...], threshold: 2}}` (a 0-10 or 0-100 habit) failed every attempt,
    `threshold: -1` passed every one, and a threshold on a group whose members all weigh 0 read
    its score as 0 and failed every attempt whose members all passed; a case's threshold in the
    same spots is refused when the suite loads. Now so is the group's, naming the grader, the
    file and the line (a code member, whose raw score may pass 1, keeps a threshold above 1;
    a report recorded with such a group is still graded again)."""
    from scoreboard.graders.registry import build_grader

    for group, said in (("{graders: [{contains: Paris}], threshold: 2}", "'threshold' 2 lies outside [0, 1]"),
                        ("{graders: [{contains: Paris}], threshold: -1}", "every attempt would pass"),
                        ("{graders: [{contains: Paris, weight: 0}, {contains: A, weight: 0}], threshold: 0.5}",
                         "on a group whose every member has weight 0")):
        folder = tmp_path / str(abs(hash(group)))
        folder.mkdir()
        suite = write_suite(folder, [{"id": "a", "input": "Paris"}], f"graders: [{{group: {group}}}]\n")
        proc = scoreboard("validate", str(suite), cwd=folder)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert proc.stderr.count("\n") == 1 and said in proc.stderr, proc.stderr
        assert "suite.yaml:4, field 'graders[0]': grader 'group'" in proc.stderr, proc.stderr
    suite = write_suite(tmp_path, [{"id": "a", "input": "Paris"}],
                        "graders: [{group: {graders: [{contains: Paris}, {python: '2 if output else 0'}], "
                        "threshold: 1.5}}]\n")
    assert scoreboard("validate", str(suite), cwd=tmp_path).returncode == 0
    assert build_grader({"group": {"graders": [{"contains": "x"}], "threshold": 2}}).options["threshold"] == 2


def test_a_result_in_another_tool_s_shape_is_an_error_naming_the_key_it_is_here(tmp_path):
    """A grader returning DeepEval's `{score, success, reason}` or Inspect's `{value, explanation}`
    was an error listing the known keys without `raw_score` (which the README documents) and
    without saying which key the user meant; now it lists them all and names the one to use."""
    checks = ("def deepeval(output, context):\n    return {'score': 0.8, 'success': False, 'reason': 'low'}\n"
              "def inspect_like(output, context):\n    return {'value': 'C', 'explanation': 'fine'}\n")
    suite = write_suite(tmp_path, [{"id": "a", "input": "Paris"}], (
        "graders: [{python: 'python-file:checks.py:deepeval'}, {python: 'python-file:checks.py:inspect_like'}]\n"),
        checks)
    proc, report = run_report(tmp_path, suite)
    reasons = [g["reason"] for g in report["attempts"][0]["grades"]]
    assert report["attempts"][0]["status"] == "error"
    assert "unknown key 'success' (known: pass, score, reason, named_scores, raw_score; DeepEval's success " \
           "is pass)" in reasons[0], reasons
    assert "unknown key 'explanation'" in reasons[1] and "Inspect's explanation is reason" in reasons[1], reasons


def test_a_prompt_axis_naming_one_prompt_twice_or_a_blank_name_is_refused(tmp_path):
    """`prompts: ["@a.txt", "@a.txt"]` (or the same text twice) made variants `a` and `a-2` sending
    the same prompt, and the run compared the prompt with itself (twice the requests, a 'no
    difference' that says nothing); `prompts: {"": ...}` made a variant named '' that no gate or
    comparison can name. Each is now one line naming the suite file, its line and the field."""
    for prompts, said in (('["@a.txt", "@a.txt"]', "field 'prompts.a-2': prompt 'a-2' is the same as prompt 'a'"),
                          ('["Q {{ c }}", "Q {{ c }}"]', "field 'prompts.prompt-2': prompt 'prompt-2' is the same"),
                          ('{"": "Q {{ c }}"}', "field 'prompts': a prompt's name is blank ('')")):
        folder = tmp_path / str(abs(hash(prompts)))
        folder.mkdir()
        (folder / "a.txt").write_text("Q {{ c }}")
        suite = write_suite(folder, [{"id": "a", "vars": {"c": "France"}}],
                            f"prompts: {prompts}\ngraders: [{{contains: A}}]\n")
        proc = scoreboard("validate", str(suite), cwd=folder)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert proc.stderr.count("\n") == 1 and "suite.yaml:4" in proc.stderr and said in proc.stderr, proc.stderr
