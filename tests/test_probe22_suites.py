"""Suites as people write them, round 8: a team migrating from promptfoo, DeepEval and Inspect by
hand (not through the importers) writes its suites in our language; every mistake it makes on the
way is one line naming the file, line and field, with the way to write it here. Each test runs the
real command (`python -m scoreboard`) on files written under tmp_path."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.cli_inprocess import run_cli

SUBJECT = "def reply(prompt, skill, run, params):\n    return 'ANSWER: ' + str(prompt)\n"
JUDGE = "judge: {type: openai, base_url: 'http://127.0.0.1:9/v1', model: j}\n"


def scoreboard(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "SCOREBOARD_STORE": "none"}
    return run_cli(args, cwd, env)


def write_suite(folder: Path, cases: list[dict], extra: str) -> Path:
    (folder / "subj.py").write_text(SUBJECT)
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    suite = folder / "suite.yaml"
    suite.write_text("name: probe22\ncases: cases.jsonl\n"
                     "subject: {type: python, function: 'subj:reply', model_free: true}\n" + extra)
    return suite


def refused(folder: Path, suite: Path) -> list[str]:
    proc = scoreboard("run", str(suite), "--output", str(folder / "r.json"), "--no-progress", cwd=folder)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert not (folder / "r.json").exists()
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert lines and all(line.startswith("scoreboard: error: ") for line in lines), proc.stderr
    return lines


RAG = [{"id": "q1", "vars": {"question": "Who wrote Hamlet?"}, "metadata": {"context": "Shakespeare wrote it."}},
       {"id": "q2", "vars": {"question": "Capital of Peru?"}, "metadata": {"contxt": "Lima is the capital."}}]


def test_a_judge_prompt_reading_a_var_or_metadata_key_a_case_lacks_is_refused_naming_that_case(tmp_path):
    # it was accepted, and every attempt of that case came back unassessed ("the judge prompt did
    # not render for this case"), after the subject had run: a RAG suite with one case's context
    # misspelt scored on the others only
    suite = write_suite(tmp_path, RAG, JUDGE + "prompt: '{{ question }}'\ngraders:\n"
                        "  - llm-judge: {prompt: 'Context: {{ metadata.context }}\\nAnswer: {{ output }}'}\n")
    lines = refused(tmp_path, suite)
    assert len(lines) == 1, lines
    assert "cases.jsonl:2, case 'q2', field 'metadata.context'" in lines[0]
    assert "grader 'llm-judge'" in lines[0] and "the case defines 'metadata.contxt'" in lines[0]
    # a var no case has: every case named, with the way out
    suite = write_suite(tmp_path, RAG[:1], JUDGE + "prompt: '{{ question }}'\ngraders:\n"
                        "  - g-eval: {criteria: [grounded], prompt: 'Q: {{ vars.query }} A: {{ output }}'}\n")
    lines = refused(tmp_path, suite)
    assert "cases.jsonl:1, case 'q1', field 'vars.query'" in lines[0] and "grader 'g-eval'" in lines[0]
    # guarded, it loads (a dry run: the judge is mocked)
    suite = write_suite(tmp_path, RAG, JUDGE + "prompt: '{{ question }}'\ngraders:\n"
                        "  - llm-judge: {prompt: '{% if metadata.context is defined %}{{ metadata.context }}"
                        "{% endif %} {{ output }}'}\n")
    proc = scoreboard("run", str(suite), "--dry-run", "--no-progress", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr


CAPITALS = [{"id": "fr", "vars": {"country": "France"}, "expected": "Paris"}]


def test_a_grader_written_as_promptfoo_or_named_as_a_deepeval_metric_says_how_to_write_it_here(tmp_path):
    # promptfoo's {type, value} shape only said "a one-key mapping ... got {...}", and a DeepEval
    # metric's name only listed the known graders: neither said what to write
    suite = write_suite(tmp_path, CAPITALS, "prompt: '{{ country }}'\ngraders:\n"
                        "  - {type: contains, value: Paris, weight: 2}\n")
    (line,) = refused(tmp_path, suite)
    assert "suite.yaml:6, field 'graders[0]'" in line and "write {contains: 'Paris', weight: 2}" in line
    suite = write_suite(tmp_path, CAPITALS, "prompt: '{{ country }}'\ngraders:\n"
                        "  - {type: llm-rubric, value: polite}\n")
    (line,) = refused(tmp_path, suite)
    assert "write {llm-judge: {rubric: ...}}" in line
    for name, wanted in (("faithfulness", "{llm-judge: {prompt:"), ("AnswerRelevancyMetric", "{llm-judge: {prompt:"),
                         ("GEval", "{g-eval: {criteria: [...]}}")):
        suite = write_suite(tmp_path, CAPITALS, f"prompt: '{{{{ country }}}}'\ngraders:\n  - {name}\n")
        (line,) = refused(tmp_path, suite)
        assert "suite.yaml:6, field 'graders[0]'" in line and f"DeepEval's {name!r}" in line and wanted in line


def test_a_case_written_with_another_tool_s_field_names_says_which_field_holds_it_here(tmp_path):
    cases = [{"id": "a", "input": "Q?", "assert": [{"type": "contains", "value": "x"}]},
             {"id": "b", "input": "Q?", "expected_output": "x", "retrieval_context": ["ctx"]},
             {"id": "c", "input": "Q?", "target": "x"}]
    lines = refused(tmp_path, write_suite(tmp_path, cases, ""))
    said = {line.split(", field ")[1].split(":")[0]: line for line in lines}
    assert "graders: [{contains: ...}]" in said["'assert'"] and "cases.jsonl:1, case 'a'" in said["'assert'"]
    assert "a case writes expected" in said["'expected_output'"] and "cases.jsonl:2" in said["'expected_output'"]
    assert "{{ metadata.retrieval_context }}" in said["'retrieval_context'"]
    assert "Inspect's target: a case writes expected" in said["'target'"]


def test_a_filter_another_template_language_has_or_a_mistyped_one_is_named_with_the_one_to_write(tmp_path):
    for text, wanted in (("{{ country | titlecase }}", "(did you mean 'title'?)"),
                         ("{{ country | to_json }}", "(did you mean 'tojson'?)"),
                         ("{{ country is strng }}", "(did you mean 'string'?)"),
                         ("{{ country | zzqx }}", "filters here: abs, ")):
        suite = write_suite(tmp_path, CAPITALS, f"prompt: '{text}'\n")
        (line,) = refused(tmp_path, suite)
        assert "suite.yaml:4, field 'prompt'" in line and wanted in line, line
    suite = write_suite(tmp_path, CAPITALS, JUDGE + "prompt: '{{ country }}'\ngraders:\n"
                        "  - llm-judge: {prompt: '{{ output | uper }}'}\n")
    (line,) = refused(tmp_path, suite)
    assert "field 'graders[0]'" in line and "(did you mean 'upper'?)" in line


def test_a_report_gated_on_a_derived_metric_a_named_metric_or_a_reducer_verifies(tmp_path):
    # verify's check of plan.gates refused every name a suite declares ("the plan's gate settings
    # give no gates: unknown metric 'f1'"): the README's own examples/suites report failed verify
    cases = [{"id": "i1", "vars": {"doc": "ACME 20 EUR"}, "expected": {"vendor": "ACME", "total": 20}},
             {"id": "i2", "vars": {"doc": "Globex 31 USD"}, "expected": {"vendor": "Globex", "total": 30}}]
    (tmp_path / "ex.py").write_text(
        "import json\ndef reply(prompt, skill, run, params, *, vars):\n"
        "    name, total, _ = vars['doc'].split()\n    return json.dumps({'vendor': name, 'total': int(total)})\n")
    suite = write_suite(tmp_path, cases, "runs: 2\nprompt: '{{ doc }}'\ngraders:\n"
                        "  - {json-fields: [vendor], metric: vendor_ok}\n  - {json-fields: [total], weight: 3, metric: total_ok}\n"
                        "derived_metrics: {both: 'min(vendor_ok, total_ok)'}\nreducers: [max]\n"
                        "fail_under_metrics: {both: 0.5, 'reply:total_ok': 0.5, 'reducer:max': 0.5, score: 0.6}\n")
    suite.write_text(suite.read_text().replace("subj:reply", "ex:reply"))
    out = tmp_path / "r.json"
    proc = scoreboard("run", str(suite), "--output", str(out), "--no-progress", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    figures = {g["metric"]: g["value"] for g in report["gates"]}
    # by hand: i1 scores 1, i2 (1 + 3 * 0) / 4 = 0.25; both = min(1, 0.5); max over runs of each
    # case's weighted score: (1 + 0.25) / 2
    assert figures == {"both": 0.5, "total_ok": 0.5, "reducer:max": 0.625, "score": 0.625}, figures
    verified = scoreboard("verify", str(out), "--allow-code", cwd=tmp_path)
    assert verified.returncode == 0 and "planned gates" in verified.stdout, verified.stdout + verified.stderr
    example = Path(__file__).resolve().parents[1] / "examples" / "suites" / "suite.yaml"
    proc = scoreboard("run", str(example), "--output", str(tmp_path / "ex.json"), "--no-progress", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    verified = scoreboard("verify", str(tmp_path / "ex.json"), "--allow-code", cwd=tmp_path)
    assert verified.returncode == 0, verified.stdout + verified.stderr
