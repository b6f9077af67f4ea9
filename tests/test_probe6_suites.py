"""Suites ported by hand from other tools (DeepEval's RAG metrics as Python graders with named
scores, promptfoo's derived metrics and gates on them, Inspect's scorers), run from the outside
with the real command on files written under tmp_path: a name the author misspelt must be said
where the figure is shown, never a bare n/a."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

from tests.cli_inprocess import run_cli
from tests.record.conftest import browser, opened  # noqa: F401  (Chromium fixtures)

SUBJECT = "def reply(prompt, skill, run, params):\n    return 'Based on the context: ' + prompt\n"

# DeepEval-style metrics: each a Python grader returning its score under a named metric
METRICS = '''
def faithfulness(output, context):
    return {"pass": True, "score": 1.0, "reason": "all claims supported", "named_scores": {"faithfulness": 1.0}}

async def answer_relevancy(output, context):
    return {"pass": True, "score": 0.5, "named_scores": {"answer_relevancy": 0.5}}

def bad_named(output, context):
    return {"pass": True, "score": 1.0, "named_scores": {"faithfulness": 1.0, "tokens": 123}}
'''


def scoreboard(*args: str, cwd: Path, process: bool = False) -> subprocess.CompletedProcess:
    """`python -m scoreboard ARGS`: in this process (tests/cli_inprocess.py), what the command says
    and writes being the point here; as a process where asked (`process=True`: a user module
    rewritten in place, imported anew) and once the module's browser holds a running event loop
    (Playwright's), where the command's own asyncio.run cannot run."""
    if not process and asyncio._get_running_loop() is None:
        return run_cli(args, cwd)
    return subprocess.run([sys.executable, "-m", "scoreboard", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=120)


def write_suite(folder: Path, extra: str, graders: str = "faithfulness, answer_relevancy") -> Path:
    (folder / "subj.py").write_text(SUBJECT)
    (folder / "metrics.py").write_text(METRICS)
    cases = [{"id": f"q{i}", "input": f"question {i}"} for i in range(3)]
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    listed = ", ".join(f"{{python: 'python-file:metrics.py:{g.strip()}'}}" for g in graders.split(","))
    suite = folder / "suite.yaml"
    suite.write_text("name: rag\ncases: cases.jsonl\n"
                     "subject: {type: python, function: 'subj:reply', model_free: true}\n"
                     f"graders: [{listed}]\n" + extra)
    return suite


def run_all_formats(folder: Path, suite: Path, *flags: str) -> tuple[subprocess.CompletedProcess, dict, dict]:
    out = folder / "out"
    proc = scoreboard("run", str(suite), "--output-dir", str(out), "--no-progress",
                      "--format", "json,md,html,junit", *flags, cwd=folder)
    files = {p.suffix if not p.name.endswith(".junit.xml") else ".junit": p for p in (out / "rag").iterdir() if p.is_file()}
    assert ".json" in files, proc.stderr
    texts = {k: p.read_text() for k, p in files.items()}
    return proc, json.loads(texts[".json"]), texts


def test_a_derived_metric_naming_a_metric_no_grade_produced_says_which_name_in_every_rendering(tmp_path):
    # promptfoo evaluates derived metrics with mathjs: an undefined symbol is an error it logs at
    # debug level. Here the value stays unknown (null, never 0) and every rendering says why.
    suite = write_suite(tmp_path, "derived_metrics:\n  quality: '(faithfulness + answer_relevancy) / 2'\n"
                                  "  typo: 'faithfulnes * 2'\n  ratio: 'faithfulness / (answer_relevancy - 0.5)'\n")
    proc, report, texts = run_all_formats(tmp_path, suite)
    assert proc.returncode == 0, proc.stderr
    derived = report["summary"]["variants"]["reply"]["derived_metrics"]
    assert derived["quality"]["value"] == 0.75
    assert not derived["quality"].get("note", "").startswith("undefined")
    assert derived["typo"]["value"] is None
    said = ("undefined: no attempt of this variant was scored on 'faithfulnes' "
            "(did you mean 'faithfulness'?; its metrics: answer_relevancy, faithfulness)")
    assert derived["typo"]["note"] == said
    # a name every attempt had, but arithmetic with no value: said as such, not as a missing name
    assert derived["ratio"]["value"] is None
    assert derived["ratio"]["note"] == "undefined: the arithmetic has no value (a division by zero, or a root of a negative number)"
    assert f"derived typo: n/a (undefined) = faithfulnes * 2 ({said})" in proc.stdout
    assert said in texts[".md"]
    assert said.replace("'", "&#x27;") in texts[".junit"] or said.replace("'", "&apos;") in texts[".junit"] \
        or said in texts[".junit"]
    assert said in texts[".html"]   # the embedded report, and the card (report.js) shows the note


def test_a_gate_on_a_metric_no_grade_produced_says_so_and_suggests_the_name(tmp_path):
    suite = write_suite(tmp_path, "derived_metrics: {quality: '(faithfulness + answer_relevancy) / 2'}\n"
                                  "fail_under_metrics: {'reply:metric:faithfulnes': 0.5}\n")
    proc, report, _ = run_all_formats(tmp_path, suite)
    assert proc.returncode == 3
    gate = report["gates"][0]
    assert gate["passed"] is False and gate["value"] is None
    assert gate["description"] == ("reply: metric faithfulnes n/a (no attempt of this variant was scored on it; "
                                   "did you mean 'faithfulness'?) < 50.0%")
    assert gate["description"] in proc.stdout


def test_an_unknown_gate_name_suggests_the_metric_the_suite_declares(tmp_path):
    suite = write_suite(tmp_path, "derived_metrics: {quality: '(faithfulness + answer_relevancy) / 2'}\n"
                                  "fail_under_metrics: {'reply:qualty': 0.5}\n")
    proc = scoreboard("validate", str(suite), cwd=tmp_path)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        f"scoreboard: error: {suite}:6, field 'fail_under_metrics.reply:qualty': unknown metric 'qualty' "
        "(did you mean 'quality'?")
    assert not (tmp_path / "out").exists()


def test_named_scores_out_of_range_name_the_score_and_the_value(tmp_path):
    suite = write_suite(tmp_path, "", graders="bad_named")
    proc, report, _ = run_all_formats(tmp_path, suite)
    assert proc.returncode == 2
    error = report["attempts"][0]["error"]
    assert "named_scores['tokens'] is 123: a named score must be a number in [0, 1]" in error, error


def test_a_report_written_before_the_words_on_an_undefined_derived_metric_still_verifies(tmp_path):
    suite = write_suite(tmp_path, "derived_metrics: {typo: 'faithfulnes * 2'}\n")
    proc, report, _ = run_all_formats(tmp_path, suite)
    path = next((tmp_path / "out" / "rag").glob("*.json"))
    assert scoreboard("verify", str(path), cwd=tmp_path).returncode == 0
    del report["summary"]["variants"]["reply"]["derived_metrics"]["typo"]["note"]   # as older builds wrote it
    older = tmp_path / "older.json"
    older.write_text(json.dumps(report))
    proc = scoreboard("verify", str(older), cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # a value edited in is still found
    report["summary"]["variants"]["reply"]["derived_metrics"]["typo"]["value"] = 0.5
    older.write_text(json.dumps(report))
    proc = scoreboard("verify", str(older), cwd=tmp_path)
    assert proc.returncode != 0 and "derived_metrics.typo.value" in proc.stdout, proc.stdout


def _variants_suite(folder: Path, subject: str, function: str = "def reply(prompt):\n    return prompt\n") -> Path:
    (folder / "subj.py").write_text(function)
    (folder / "cases.jsonl").write_text(json.dumps({"id": "a", "input": "hi", "expected": "hi"}) + "\n")
    suite = folder / "suite.yaml"
    suite.write_text(f"name: temps\ncases: cases.jsonl\nsubject: {subject}\n"
                     "variants: {hot: {params: {temperature: 1}}, cold: {params: {temperature: 0, top_p: 1}}}\n")
    return suite


def test_variants_that_differ_only_in_params_their_subject_never_receives_are_warned_of(tmp_path):
    # promptfoo's providers take their config; here a python function that declares no params,
    # a command and an http endpoint are sent none: two such variants are one variant twice, and
    # their comparison says "even" about a difference that never ran
    cases = [("{type: python, function: 'subj:reply', model_free: true}", "python",
              "declare a fourth argument or a keyword-only params in subj:reply"),
             ("{type: command, argv: [cat], model_free: true}", "command",
              "put the value in the command's arguments or env"),
             ("{type: http, url: 'http://127.0.0.1:9/x', output_path: text}", "http", "put the value in the body")]
    for subject, kind, hint in cases:
        suite = _variants_suite(tmp_path, subject)
        proc = scoreboard("validate", str(suite), cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        warned = [line for line in proc.stderr.splitlines() if "params" in line]
        assert warned == [
            f"scoreboard: warning: {suite}:4, field 'variants.hot.params': the {kind} subject is sent no params, so "
            f"these (temperature) change nothing; {hint}",
            f"scoreboard: warning: {suite}:4, field 'variants.cold.params': the {kind} subject is sent no params, so "
            f"these (temperature, top_p) change nothing; {hint}"], proc.stderr
    # a run says it too (before anything runs), and still runs
    suite = _variants_suite(tmp_path, cases[0][0])
    proc = scoreboard("run", str(suite), "--output-dir", str(tmp_path / "out"), "--no-progress", cwd=tmp_path)
    assert proc.returncode == 0 and "field 'variants.hot.params'" in proc.stderr, proc.stderr
    # a function that takes them, positionally or as keyword-only params: no warning
    for function in ("def reply(prompt, skill, run, params):\n    return prompt\n",
                     "def reply(prompt, *, params):\n    return prompt\n"):
        suite = _variants_suite(tmp_path, cases[0][0], function)
        proc = scoreboard("validate", str(suite), cwd=tmp_path, process=True)  # subj.py rewritten: imported anew
        assert proc.returncode == 0 and "warning" not in proc.stderr, proc.stderr


def test_a_prompt_that_names_no_case_variable_sends_every_case_the_same_text_and_says_so(tmp_path):
    # a prompt written as an instruction, the question left in each case's input: no template
    # variable reads it, so every case is sent the same text (and grades another case's answer)
    (tmp_path / "subj.py").write_text("def reply(prompt):\n    return prompt\n")
    cases = [{"id": "a", "input": "What is 2+2?", "expected": "4"}, {"id": "b", "input": "What is 3+3?", "expected": "6"}]
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    suite = tmp_path / "suite.yaml"
    head = "name: same\ncases: cases.jsonl\nsubject: {type: python, function: 'subj:reply', model_free: true}\n"
    suite.write_text(head + "prompt: 'Answer the question briefly.'\n")
    proc = scoreboard("validate", str(suite), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (f"scoreboard: warning: {suite}:4, field 'prompt': the prompt renders the same text for all 2 cases, "
            "whose inputs and vars differ: it names neither {{ input }} nor a case's vars, so what each case "
            "holds is never sent") in proc.stderr.splitlines(), proc.stderr
    # a variant's own prompt is named as such; a prompt that reads the input is quiet
    suite.write_text(head + "prompt: 'Q: {{ input }}'\nvariants: {plain: {}, terse: {prompt: 'Be terse.'}}\n")
    proc = scoreboard("validate", str(suite), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    warned = [line for line in proc.stderr.splitlines() if "renders the same text" in line]
    assert warned == [f"scoreboard: warning: {suite}:5, field 'variants.terse.prompt': the prompt renders the same "
                      "text for all 2 cases, whose inputs and vars differ: it names neither {{ input }} nor a "
                      "case's vars, so what each case holds is never sent"], proc.stderr
    # one case, or cases that are the same: nothing to say
    (tmp_path / "cases.jsonl").write_text(json.dumps(cases[0]) + "\n")
    suite.write_text(head + "prompt: 'Answer the question briefly.'\n")
    proc = scoreboard("validate", str(suite), cwd=tmp_path)
    assert proc.returncode == 0 and "warning" not in proc.stderr, proc.stderr


def test_a_metric_written_among_a_grader_s_options_says_where_it_goes(tmp_path):
    # Inspect and DeepEval name a metric on the scorer itself; here it sits beside the grader
    suite = write_suite(tmp_path, "", graders="faithfulness")
    suite.write_text(suite.read_text().replace(
        "graders: [", "graders: [{contains: {patterns: [context], metric: grounding}}, "))
    proc = scoreboard("validate", str(suite), cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [
        f"scoreboard: error: {suite}:4, field 'graders[0]': grader 'contains': unknown option 'metric' (known: "
        "patterns, values, mode, ignore_case, fold); 'metric' goes beside the grader's name: "
        "{contains: {...}, metric: ...}"], proc.stderr


def test_a_prompt_reads_the_case_s_metadata_as_inspect_s_prompt_template_does(tmp_path):
    # Inspect's prompt_template fills {context} from the sample's metadata: a ragas-style dataset
    # (question, contexts, ground_truth) read as an Inspect dataset keeps contexts as metadata
    rows = [{"question": "When was Einstein born?", "contexts": ["Einstein was born 14 March 1879."],
             "ground_truth": "14 March 1879"},
            {"question": "Where was he born?", "contexts": ["He was born in Ulm."], "ground_truth": "Ulm"}]
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "subj.py").write_text("def reply(prompt):\n    return prompt\n")
    suite = tmp_path / "suite.yaml"
    suite.write_text("name: ragas\ncases: [{format: inspect, path: data.jsonl, fields: {input: question, "
                     "target: ground_truth, metadata: [contexts]}, auto_id: true}]\n"
                     "subject: {type: python, function: 'subj:reply', model_free: true}\n"
                     "prompt: \"Context: {{ metadata.contexts | join(' ') }}\\nQuestion: {{ input }}\"\n"
                     "graders: [{contains: null}]\n")
    proc = scoreboard("run", str(suite), "--output", str(tmp_path / "r.json"), "--no-progress",
                      "--format", "json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    inputs = {c["id"]: c["input"] for c in report["plan"]["cases"]}
    assert inputs == {"1": "Context: Einstein was born 14 March 1879.\nQuestion: When was Einstein born?",
                      "2": "Context: He was born in Ulm.\nQuestion: Where was he born?"}
    assert all(a["status"] == "passed" for a in report["attempts"])
    # a metadata key a case lacks is named like a missing var
    suite.write_text(suite.read_text().replace("metadata.contexts", "metadata.context"))
    proc = scoreboard("validate", str(suite), cwd=tmp_path)
    assert proc.returncode == 1 and "field 'vars.metadata.context'" in proc.stderr, proc.stderr


def test_per_case_differences_equal_but_for_float_rounding_have_no_spread(tmp_path):
    # gsm8k-style: one variant right on every run, the other on 2 of 3 runs of each case: every
    # per-case difference is 1/3, computed as 1 - 0.666... (an ulp apart once averaged). That is
    # no spread, so what the run could detect rests on the stated assumption, never on a float
    # rounding error that read "could detect differences of 0 points or more"
    from scoreboard.stats.comparison import difference_sd, power_figures

    diffs = [1 - 2 / 3] * 3
    assert difference_sd(diffs) == 0.0
    figure = power_figures(diffs)
    assert figure["sd_from"] == "assumption" and figure["value"] > 0.5
    (tmp_path / "subj.py").write_text("def reply(prompt, skill, run, params):\n"
                                      "    return 'ok' if params.get('steady') or run != 1 else 'no'\n")
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps({"id": f"g{i}", "input": f"q{i}", "expected": "ok"})
                                                  + "\n" for i in range(3)))
    suite = tmp_path / "suite.yaml"
    suite.write_text("name: gsm\ncases: cases.jsonl\nruns: 3\n"
                     "subject: {type: python, function: 'subj:reply', model_free: true}\n"
                     "variants: {steady: {params: {steady: true}}, noisy: {params: {steady: false}}}\n")
    proc = scoreboard("run", str(suite), "--output", str(tmp_path / "r.json"), "--no-progress", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "could detect differences of 0 points" not in proc.stdout, proc.stdout
    assert "could not detect even a 100-point difference with this few cases" in proc.stdout, proc.stdout


def test_a_derived_metric_named_like_a_declared_metric_is_refused(tmp_path):
    # promptfoo writes a derived metric over the named score of that name; here both were shown
    # as 'accuracy' and a gate on accuracy read the named one, in silence
    suite = write_suite(tmp_path, "derived_metrics: {accuracy: 'accuracy * 0.5'}\n"
                                  "fail_under_metrics: {accuracy: 0.9}\n")
    suite.write_text(suite.read_text().replace("graders: [", "graders: [{contains: Based, metric: accuracy}, "))
    proc = scoreboard("validate", str(suite), cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [
        f"scoreboard: error: {suite}:5, field 'derived_metrics.accuracy': 'accuracy' is already a metric a grader "
        "declares: give the derived metric another name"], proc.stderr


# Last in the module: from the first test that opens a page, the module's Chromium (Playwright)
# holds a running event loop, and the command runs as a process from then on (see `scoreboard`).
def test_the_html_card_shows_why_a_derived_metric_is_undefined(tmp_path, opened):  # noqa: F811
    suite = write_suite(tmp_path, "derived_metrics: {typo: 'faithfulnes * 2'}\n")
    proc, report, _ = run_all_formats(tmp_path, suite)
    page = opened.open(next((tmp_path / "out" / "rag").glob("*.html")))
    shown = page.get_by_test_id("derived_metrics-typo-reply").first.inner_text().strip()
    assert shown.startswith("n/a (undefined: no attempt of this variant was scored on 'faithfulnes' "
                            "(did you mean 'faithfulness'?"), shown
