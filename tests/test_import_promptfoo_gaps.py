"""What the promptfoo importer now converts exactly, each expectation taken from promptfoo's
source (file and function named beside it): is-valid-openai-tools-call, js-rouge's ROUGE-N, the
exec provider's output and context, and Nunjucks' printing of non-text values."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import subprocess
from pathlib import Path

import pytest

from scoreboard.cases.case import Case
from scoreboard.graders.grade import GradeContext
from scoreboard.graders.jsrouge import rouge_n, treebank_tokenize
from scoreboard.graders.registry import build_grader
from scoreboard.importers.nunjucks import convert
from scoreboard.subjects.values import Measurements, Output
from scoreboard.suite.authoring import code_base
from scoreboard.templating import render_text
from tests.cli_inprocess import run_cli

TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]


def _grade(spec, output, tools=None):
    ctx = GradeContext(Case(id="c", input="p"), output, Measurements(), tools=tools)
    grade = build_grader(spec).grade(ctx)
    return asyncio.run(grade) if asyncio.iscoroutine(grade) else grade


def _import(tmp_path: Path, config: str) -> tuple[subprocess.CompletedProcess, Path]:
    (tmp_path / "c.yaml").write_text(config)
    done = run_cli(["import", "promptfoo", "c.yaml", "--output", "out", "--run-code"], cwd=tmp_path)
    return done, tmp_path / "out"


def _run(tmp_path: Path) -> dict:
    done = run_cli(["run", "out/suite.yaml", "--output", "r.json"], cwd=tmp_path)
    assert done.returncode in (0, 3), done.stderr
    return json.loads((tmp_path / "r.json").read_text())


def test_tools_call_fails_without_a_call_and_validates_arguments(tmp_path):
    _, out = _import(tmp_path, "prompts: [x]\nproviders: [echo]\ntests:\n  - assert:\n"
                                  "      - type: is-valid-openai-tools-call\n"
                                  "      - type: not-is-valid-openai-tools-call\n")
    spec, inverse = (json.loads((out / "cases.jsonl").read_text().splitlines()[0])["graders"])
    # openai.ts handleIsValidOpenAiToolsCall: an empty tool-call list is "not a valid-looking
    # tools response" -> fail (the text answer passes nothing). promptfoo 0.121.20's handler
    # never reads `not-`: the inverse fails the same answer too (its own eval marks the row failed)
    assert _grade(spec, Output(text="It is sunny"), TOOLS).passed is False
    assert _grade(inverse, Output(text="It is sunny"), TOOLS).passed is False
    good = [{"name": "get_weather", "args": {"city": "Paris"}}]
    assert _grade(spec, Output(tool_calls=good), TOOLS).passed is True
    # validateFunctionCall: ajv against the tool's parameters (city must be a string)...
    assert _grade(spec, Output(tool_calls=[{"name": "get_weather", "args": {"city": 3}}]), TOOLS).passed is False
    # ...and a function the provider does not offer: 'Called "x", but there is no function with that name'
    assert _grade(spec, Output(tool_calls=[{"name": "delete_all", "args": {}}]), TOOLS).passed is False
    # arguments that are not JSON: JSON.parse throws -> fail
    assert _grade(spec, Output(tool_calls=[{"name": "get_weather", "args": "{city"}]), TOOLS).passed is False
    # every call is validated, not only the first
    assert _grade(spec, Output(tool_calls=good + [{"name": "get_weather", "args": {}}]), TOOLS).passed is False


def test_treebank_tokens_follow_js_rouge():
    # js-rouge 3.2.0 src/utils.ts treeBankTokenize, rule by rule: a final period split off,
    # commas, ?, ! and brackets wrapped, n't split, an opening quote as `` and a closing one as ''
    assert treebank_tokenize("The cat sat on the mat.") == ["The", "cat", "sat", "on", "the", "mat", "."]
    assert treebank_tokenize('"I can\'t go," she said... (really)!') == [
        "``", "I", "ca", "n't", "go", ",", "''", "she", "said", "...", "(", "really", ")", "!"]
    # a period inside the text stays on its word (only the final one is split), cannot -> can not
    assert treebank_tokenize("Mr. Smith cannot come.") == ["Mr.", "Smith", "can", "not", "come", "."]


def test_rouge_n_is_the_f1_of_distinct_matched_unigrams():
    # rouge.ts n(): match = intersection(candGrams, refGrams) (a set), p = |match|/|cand|,
    # r = |match|/|ref|, F1. By hand: cand [the cat sat on the mat] (6), ref [the cat was on the
    # mat] (6); distinct matches {the, cat, on, mat} = 4 -> p = r = 4/6 -> F1 = 2/3
    assert rouge_n("the cat sat on the mat", "the cat was on the mat") == pytest.approx(2 / 3)
    # duplicates count in the candidate's length but match once: cand [the the the] (3), ref
    # [the cat] (2): match {the} -> p = 1/3, r = 1/2 -> F1 = 2 * (1/6) / (5/6) = 0.4
    assert rouge_n("the the the", "the cat") == pytest.approx(0.4)
    # case-sensitive; no common unigram -> 0
    assert rouge_n("The", "the") == 0.0
    with pytest.raises(ValueError):
        rouge_n("", "x")  # 'Candidate cannot be an empty string'


def test_converted_rouge_grades_as_promptfoo(tmp_path):
    _, out = _import(tmp_path, "prompts: [x]\nproviders: [echo]\ntests:\n  - assert:\n"
                                  "      - {type: rouge-n, value: 'the cat was on the mat', threshold: 0.6}\n"
                                  "      - {type: rouge-n, value: 'the cat was on the mat'}\n"
                                  "      - {type: not-rouge-n, value: 'the cat was on the mat'}\n")
    specs = json.loads((out / "cases.jsonl").read_text().splitlines()[0])["graders"]
    with code_base(out):  # the converted graders call the suite's promptfoo_asserts.py
        grades = [_grade(s, Output(text="the cat sat on the mat")) for s in specs]
    # promptfoo 0.121.20 (its own eval on this config): ROUGE-N with clipped counts, both sides
    # lowercased: 5 of 6 unigrams -> 5/6; pass = (score >= (threshold ?? 0.75)) != inverse, and
    # the inverse's score is 1 - score
    assert [g.passed for g in grades] == [True, True, False]
    assert grades[0].score == pytest.approx(5 / 6) and grades[2].score == pytest.approx(1 / 6)


@pytest.mark.skipif(os.name != "posix", reason="a shell script provider")
def test_exec_provider_output_is_trimmed_and_gets_the_vars(tmp_path):
    script = tmp_path / "provider.sh"
    # prints the context argument ($3) with ANSI colour and surrounding whitespace
    script.write_text("#!/bin/sh\nprintf '  \\033[32m%s\\033[0m\\n\\n' \"$3\"\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    done, out = _import(tmp_path, "prompts: ['Hi {{ name }}']\nproviders: ['exec: sh provider.sh']\n"
                                  "tests:\n  - vars: {name: Ada}\n    assert:\n"
                                  "      - {type: equals, value: '{\"vars\": {\"name\": \"Ada\"}}'}\n")
    assert done.returncode == 0, done.stdout + done.stderr
    (out / "provider.sh").write_text(script.read_text())
    report = _run(tmp_path)
    attempt = report["attempts"][0]
    # scriptCompletion.ts: output = stripText(stdout.trim()); the third argument is JSON(context)
    # holding the vars
    assert attempt["output"]["text"] == '{"vars": {"name": "Ada"}}'
    assert attempt["grades"][0]["passed"] is True


def test_nunjucks_prints_values_as_promptfoo_sends_them():
    # nunjucks suppressValue + String(): true, "" for null/undefined, a,b for arrays, [object
    # Object] for objects, 1 for 1.0; dump is JSON.stringify
    text, problems, _ = convert("{{ yes }}|{{ nothing }}|{{ missing }}|{{ items }}|{{ obj }}|{{ n }}|{{ obj | dump }}")
    assert not problems
    assert render_text(text, {"yes": True, "nothing": None, "items": ["a", "b"], "obj": {"k": 1.0}, "n": 1.0}) == \
        'true|||a,b|[object Object]|1|{"k":1}'


needs_node = pytest.mark.skipif(__import__("shutil").which("node") is None, reason="JavaScript needs Node.js")


@needs_node
def test_transforms_run_in_promptfoos_order(tmp_path):
    # evaluator.ts: transformVars on the merged vars before the prompt is rendered; options.transform
    # (defaultTest's unless the test has its own) on the output; then each assertion's own
    # transform (assertions/index.ts runAssertion) on that result, with context {vars, prompt}
    (tmp_path / "tx.js").write_text("module.exports.shout = (output, context) => output.join(',').toUpperCase() + "
                                    "'!' + context.vars.name;\n")
    (tmp_path / "vars.js").write_text("module.exports = (vars) => ({ name: vars.name + ' Lovelace' });\n")
    done, _ = _import(tmp_path, """prompts: ['Hi {{ name }}']
providers: [echo]
defaultTest:
  options:
    transformVars: file://vars.js
    transform: output.split(' ')
tests:
  - vars: {name: Ada}
    assert:
      - {type: equals, value: '["Hi","Ada","Lovelace"]'}
      - {type: javascript, value: 'Array.isArray(output) && output.length === 3'}
      - {type: starts-with, value: 'ADA', transform: 'output[1].toUpperCase()'}
      - {type: contains, value: 'HI,ADA,LOVELACE!Ada Lovelace', transform: 'file://tx.js:shout'}
  - vars: {name: Bob}
    options: {transform: 'output + "?"'}
    assert:
      - {type: equals, value: 'Hi Bob Lovelace?'}
      - {type: contains, value: 'x', transform: 'null'}
""")
    assert done.returncode == 0, done.stdout + done.stderr
    report = _run(tmp_path)
    grades = {a["case_id"]: [(g["passed"], g["reason"]) for g in a["grades"]] for a in report["attempts"]}
    # the echo provider returns the prompt, rendered with the transformed vars
    assert [p for p, _ in grades["test-1"]] == [True, True, True, True], grades
    assert grades["test-2"][0][0] is True, grades
    # util/transform.ts: a transform returning null fails with "did not return a value"
    assert grades["test-2"][1][0] is False and "did not return a value" in grades["test-2"][1][1]


@needs_node
def test_javascript_grades_share_workers_and_a_timeout_restarts_one():
    from scoreboard.graders import node_pool

    before = node_pool.workers_started()
    for i in range(20):
        assert _grade({"javascript": f"output.length === {i}"}, Output(text="x" * i)).passed is True
    assert node_pool.workers_started() - before <= 1  # sequential grades reuse one worker
    hung = _grade({"javascript": {"code": "while (true) {}\nreturn true", "timeout_s": 1}}, Output(text="x"))
    assert hung.passed is None and "timed out" in hung.reason
    assert _grade({"javascript": "output === 'x'"}, Output(text="x")).passed is True  # a fresh worker
    # a thrown error fails the grade with promptfoo's message (javascript.ts)
    thrown = _grade({"javascript": "(() => { throw new Error('boom') })()"}, Output(text="x"))
    assert thrown.passed is False and "boom" in thrown.reason


def test_assert_set_scores_as_promptfoos_assertions_result(tmp_path):
    done, out = _import(tmp_path, """prompts: [x]
providers: [echo]
tests:
  - assert:
      - type: assert-set
        weight: 2
        metric: style
        assert:
          - {type: contains, value: Paris}
          - {type: starts-with, value: Lyon, weight: 3}
      - type: assert-set
        threshold: 0.25
        assert:
          - {type: contains, value: Paris}
          - {type: starts-with, value: Lyon, weight: 3}
""")
    assert done.returncode == 0, done.stdout
    first, second = json.loads((out / "cases.jsonl").read_text().splitlines()[0])["graders"]
    assert first["weight"] == 2 and first["metric"] == "style"
    # assertionsResult.ts testResult: score = sum(score * weight) / sum(weight) = (1*1 + 0*3) / 4;
    # no threshold: any failed member fails the set; threshold 0.25: pass = score >= threshold
    g1, g2 = _grade(first, Output(text="Paris")), _grade(second, Output(text="Paris"))
    assert (g1.passed, g1.score) == (False, 0.25)
    assert (g2.passed, g2.score) == (True, 0.25)
    assert _grade(first, Output(text="Lyon, Paris")).passed is True


class _Judge:
    """A judge that answers every ask with one fixed structured answer."""

    def __init__(self, answer):
        self.answer = answer

    async def ask(self, prompt, name, schema, key):
        from scoreboard.judges.client import Judgment, Usage

        return Judgment(key(self.answer), [key(self.answer)], [self.answer["explanation"]], None, Usage())


def test_llm_rubric_threshold_and_not(tmp_path):
    _, out = _import(tmp_path, """prompts: [x]
providers: [echo]
tests:
  - assert:
      - {type: llm-rubric, value: 'is polite', threshold: 0.8}
      - {type: not-llm-rubric, value: 'is rude'}
      - {type: llm-rubric, value: 'is polite'}
""")
    scored, inverse, plain = json.loads((out / "cases.jsonl").read_text().splitlines()[0])["graders"]

    def judged(spec, answer):
        ctx = GradeContext(Case(id="c", input="p"), Output(text="Thank you"), Measurements(), judge=_Judge(answer))
        return asyncio.run(build_grader(spec).grade(ctx))

    # matchers runJsonGradingPrompt: with a threshold, pass = pass && score >= threshold
    assert judged(scored, {"verdict": True, "score": 0.7, "explanation": "ok"}).passed is False
    hit = judged(scored, {"verdict": True, "score": 0.9, "explanation": "ok"})
    assert hit.passed is True and hit.score == 0.9
    assert judged(scored, {"verdict": False, "score": 0.9, "explanation": "no"}).passed is False
    # llmRubric.ts: not- inverts the verdict, the score is 1 - score (clamped)
    flipped = judged(inverse, {"verdict": False, "explanation": "not rude"})
    assert flipped.passed is True and flipped.score == 1.0
    assert judged(plain, {"verdict": True, "explanation": "ok"}).passed is True
