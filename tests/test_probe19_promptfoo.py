"""promptfoo importer fidelity, round 5: shapes real configs use, checked against promptfoo 0.121.20
(its dist/ JavaScript; the outputs below were produced by promptfoo's echo provider)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.cli_inprocess import run_cli


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "SCOREBOARD_STORE": "none"}
    return run_cli(args, cwd, env=env)


def _run(tmp_path: Path) -> dict[str, dict]:
    ran = _cli("run", "out/suite.yaml", "--output-dir", "out/res", cwd=tmp_path)
    assert "Traceback" not in ran.stderr, ran.stderr
    path = next((tmp_path / "out" / "res").glob("*/*.json"))
    return {f"{a['case_id']}|{a.get('variant', '')}": a for a in json.loads(path.read_text())["attempts"]}


def test_a_nunjucks_include_in_a_text_prompt_is_inlined_as_promptfoo_renders_it(tmp_path):
    # promptfoo renders prompts with nunjucks.configure(): its FileSystemLoader reads the included
    # file, rendered with the prompt's vars in a frame of its own (a {% set %} inside stays there).
    # The import said "everything converted" and the suite then refused to run.
    (tmp_path / "main.txt").write_text('{% set y = "A" %}<{{y}}>  {%- include "h.txt" -%}  \n  {{y}}|'
                                       '{% include "sub/g.txt" ignore missing %}|{% include "./h2.txt" %}')
    (tmp_path / "h.txt").write_text('{% set y = "B" %}[{{y}}{{x}}]\n')
    (tmp_path / "h2.txt").write_text("H2{{y}}")
    (tmp_path / "promptfooconfig.yaml").write_text(
        "prompts: [file://main.txt]\nproviders: [echo]\ntests:\n  - vars: {x: hi}\n"
        "    assert: [{type: equals, value: \"<A>[Bhi]\\nA||H2A\"}]\n")
    done = _cli("import", "promptfoo", "promptfooconfig.yaml", "--output", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "include" in done.stdout and "inlined" in done.stdout
    (attempt,) = _run(tmp_path).values()
    assert attempt["output"]["text"] == "<A>[Bhi]\nA||H2A"  # promptfoo 0.121.20's echo output
    assert attempt["status"] == "passed"


def test_an_include_that_cannot_be_inlined_is_listed_not_left_to_fail_the_run(tmp_path):
    (tmp_path / "h.txt").write_text("H")
    (tmp_path / "promptfooconfig.yaml").write_text(
        "prompts: ['{% include name %} {{x}}', '{% include \"missing.txt\" %}', '{% include \"a.txt\" %}', "
        "'Fine {{x}}']\n"
        "providers: [echo]\ntests:\n  - vars: {x: hi, name: h.txt}\n"
        "    assert: [{type: contains, value: '{% import \"m.txt\" as m %}'}]\n")
    (tmp_path / "a.txt").write_text('{% include "b.txt" %}')
    (tmp_path / "b.txt").write_text('{% include "a.txt" %}')
    done = _cli("import", "promptfoo", "promptfooconfig.yaml", "--output", "out", cwd=tmp_path)
    assert done.returncode == 3, done.stdout + done.stderr
    report = done.stdout
    assert "prompts.0: '{% include name %}' loads another template" in report
    assert "prompts.1: {% include 'missing.txt' %}: no such file" in report
    assert "prompts.2: {% include 'a.txt' %} includes itself" in report
    assert "tests.0.assert.0 (contains):" in report and "import" in report
    ran = _cli("run", "out/suite.yaml", "--output-dir", "out/res", cwd=tmp_path)
    assert ran.returncode in (0, 2), ran.stdout + ran.stderr


def test_an_include_leaving_the_configs_folder_is_an_error_naming_the_prompt(tmp_path):
    (tmp_path / "x.txt").write_text("secret")
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "promptfooconfig.yaml").write_text(
        "prompts: ['{% include \"../x.txt\" %}']\nproviders: [echo]\ntests: [{vars: {a: 1}}]\n")
    done = _cli("import", "promptfoo", "promptfooconfig.yaml", "--output", "out", cwd=tmp_path / "cfg")
    assert done.returncode == 1
    assert "prompts.0" in done.stderr and "climbs out" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_an_assertions_own_rubric_prompt_is_listed_not_silently_replaced_by_the_default(tmp_path):
    # graders.ts getFinalTest: `assertion.rubricPrompt || test.options.rubricPrompt` is the grading
    # prompt of llm-rubric, factuality, closedqa, g-eval and select-best. The import dropped the
    # assertion's one without a word and the judge graded with promptfoo's default prompt.
    (tmp_path / "promptfooconfig.yaml").write_text(
        "prompts: ['Answer {{q}}', 'Reply {{q}}']\nproviders: [echo]\ntests:\n  - vars: {q: x}\n    assert:\n"
        "      - {type: llm-rubric, value: ok, rubricPrompt: 'Grade {{output}} against {{rubric}}'}\n"
        "      - {type: factuality, value: x, rubricPrompt: [{role: system, content: 'Compare {{output}}'}]}\n"
        "      - {type: llm-rubric, value: polite}\n"
        "      - {type: contains, value: x, rubricPrompt: ignored by contains}\n")
    done = _cli("import", "promptfoo", "promptfooconfig.yaml", "--output", "out", cwd=tmp_path)
    # round 9 (test_probe22_pfxml) and round 10 (test_probe23_promptfoo): llm-rubric's and
    # factuality's own prompts are judged as promptfoo judges them, each with promptfoo's reply format
    assert done.returncode == 0, done.stdout + done.stderr
    for n in range(4):
        assert f"tests.0.assert.{n}" not in done.stdout.split("## Converted with a difference")[0]
    case = json.loads((tmp_path / "out" / "cases.jsonl").read_text().splitlines()[0])
    assert [next(iter(g)) for g in case["graders"]] == ["llm-judge", "llm-judge", "llm-judge", "contains"]
    factuality = case["graders"][1]["llm-judge"]
    assert "Compare {{ (output) | js }}" in factuality["prompt"] and factuality["reply"]["category"] == "category"
    # no rubricPrompt: promptfoo's default llm-rubric prompt, not the custom one
    assert case["graders"][2]["llm-judge"]["prompt"].startswith("You are grading output according to a user")
    assert case["graders"][0]["llm-judge"]["reply"] == {"pass": "pass", "score": "score", "reason": "reason"}
    assert case["graders"][0]["llm-judge"]["prompt"] == "Grade {{ (output) | js }} against {{ (rubric) | js }}"


CHAT = """[
  {"role": "system", "content": "You are {{ persona | default('helpful') }}"},
  {"role": "user", "content": "{{ question }}"}
]
"""


def test_chat_messages_reach_echo_exec_and_python_providers_as_promptfoos_json_text(tmp_path):
    # renderPrompt returns a JSON prompt as JSON.stringify(rendered, null, 2); only the chat
    # providers parse it into messages. echo, exec and python providers got scoreboard's compact
    # JSON of the messages, so an assertion on the text promptfoo passes failed.
    (tmp_path / "chat.json").write_text(CHAT)
    (tmp_path / "say.sh").write_text('#!/bin/sh\nprintf "%s" "$1"\n')
    (tmp_path / "say.sh").chmod(0o755)
    (tmp_path / "prov.py").write_text("def call_api(prompt, options, context):\n    return {'output': prompt}\n")
    (tmp_path / "promptfooconfig.yaml").write_text(
        "prompts: [file://chat.json]\nproviders: [echo, 'exec:./say.sh', 'file://prov.py']\ntests:\n"
        "  - vars: {question: \"x\\\\y\", persona: pirate}\n"
        "    assert: [{type: contains, value: \"\\\"role\\\": \\\"system\\\",\\n\"}]\n")
    done = _cli("import", "promptfoo", "promptfooconfig.yaml", "--output", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    attempts = _run(tmp_path)
    # promptfoo 0.121.20's output for each of the three providers
    expected = ('[\n  {\n    "role": "system",\n    "content": "You are pirate"\n  },\n'
                '  {\n    "role": "user",\n    "content": "x\\\\y"\n  }\n]')
    assert len(attempts) == 3
    for attempt in attempts.values():
        assert attempt["output"]["text"] == expected
        assert attempt["status"] == "passed"


def test_chat_messages_beside_a_chat_provider_are_listed_for_each_text_provider(tmp_path):
    (tmp_path / "chat.json").write_text(CHAT)
    (tmp_path / "promptfooconfig.yaml").write_text(
        "prompts: [file://chat.json]\nproviders: [echo, openai:chat:gpt-4o-mini]\ntests:\n  - vars: {question: q}\n")
    done = _cli("import", "promptfoo", "promptfooconfig.yaml", "--output", "out", cwd=tmp_path)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "prompt 'chat' on variant 'echo': not converted as promptfoo sends it" in done.stdout
    assert "gpt-4o-mini': not converted" not in done.stdout
    suite = (tmp_path / "out" / "suite.yaml").read_text()
    assert "role: system" in suite  # the chat variant still gets the messages


def test_a_default_grading_provider_given_by_output_type_is_the_judge(tmp_path):
    # matchers getGradingProvider('text', provider): `{text: ..., embedding: ...}` (promptfoo's
    # documented override of the grader per output type) grades with its `text` entry; the
    # import listed it and judged with gpt-4.1
    (tmp_path / "promptfooconfig.yaml").write_text(
        "prompts: ['Answer {{q}}']\nproviders: [echo]\ndefaultTest:\n  options:\n    provider:\n"
        "      text: {id: 'openai:chat:gpt-4o', config: {temperature: 0}}\n"
        "      embedding: {id: 'openai:embeddings:text-embedding-3-small'}\n"
        "tests:\n  - vars: {q: hi}\n    assert: [{type: llm-rubric, value: polite}]\n")
    done = _cli("import", "promptfoo", "promptfooconfig.yaml", "--output", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    suite = (tmp_path / "out" / "suite.yaml").read_text()
    judge = suite.split("judge:", 1)[1]
    assert "model: gpt-4o\n" in judge and "temperature: 0" in judge
    assert "gpt-4.1" not in done.stdout


def test_chat_messages_stay_messages_for_an_http_provider_which_parses_json_body_values(tmp_path):
    # src/providers/http.ts processJsonBody: a body value rendering to JSON text ('{{prompt}}' holding
    # the messages' JSON) is parsed, so promptfoo posts the list; the http subject's whole-value
    # {{input}} keeps the messages as a list too
    import yaml

    (tmp_path / "chat.json").write_text(CHAT)
    (tmp_path / "promptfooconfig.yaml").write_text(
        "prompts: [file://chat.json]\nproviders:\n  - id: http\n    config:\n      url: http://127.0.0.1:9/x\n"
        "      body: {messages: '{{prompt}}'}\n      transformResponse: json.output\n"
        "tests:\n  - vars: {question: q}\n")
    done = _cli("import", "promptfoo", "promptfooconfig.yaml", "--output", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    suite = yaml.safe_load((tmp_path / "out" / "suite.yaml").read_text())
    assert isinstance(suite["prompt"], list) and suite["prompt"][1]["role"] == "user"
