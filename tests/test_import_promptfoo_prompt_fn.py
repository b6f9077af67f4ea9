"""`import promptfoo`: a Python prompt function (`prompts: [file://prompt.py:create_prompt]`, as
promptfoo's own HLE and BBQ examples write them) converted to a scoreboard prompt function that
calls it as promptfoo 0.121 does: one argument, the context {vars, provider: {id, label}}; a text
result is the prompt, an object or list is JSON.stringify'd, then rendered (JSON inside, other
text as a Nunjucks template) and read by each provider as promptfoo's reads it (the chat
provider takes JSON messages as the request's messages; echo returns the text)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from tests.cli_inprocess import run_cli
from tests.servers.fake_provider import FakeProvider

PROMPT_PY = '''
def chat(context):
    v = context["vars"]
    return [{"role": "system", "content": "Answer in one word."},
            {"role": "user", "content": f"Capital of {v['country']}?"}]

def plain(context):
    p = context["provider"]
    return f"Capital of {context['vars']['country']}? (asked of {p['id']}, label {p.get('label')})"

def templated(context):
    return "Capital of {{ country | upper }}?"

def structured(context):
    return {"prompt": "Capital of " + context["vars"]["country"] + "?"}

def shape(context):
    import json
    return json.dumps({"keys": list(context), "provider": context["provider"], "config": context["config"]})

def floaty(context):
    return {"n": 1.0, "m": 0.5, "s": "\u00e9\u2028x", "big": 1e21}

def with_config(context):
    return {"prompt": "x", "config": {"temperature": 0.2}}

def number(context):
    return 42

def not_messages(context):
    return {"question": context["vars"]["country"]}
'''


def _import(tmp_path: Path, prompts: list, providers: list) -> str:
    (tmp_path / "prompt.py").write_text(PROMPT_PY)
    config = {"description": "fn prompts", "prompts": prompts, "providers": providers,
              "tests": [{"vars": {"country": "France"}, "assert": [{"type": "icontains", "value": "capital"}]},
                        {"vars": {"country": "Japan"}}]}
    (tmp_path / "promptfooconfig.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    done = run_cli(["import", "promptfoo", "promptfooconfig.yaml", "--output", "out"], tmp_path)
    assert done.returncode in (0, 3), done.stdout + done.stderr
    return (tmp_path / "out" / "conversion-report.md").read_text()


def _run(tmp_path: Path, **env: str):
    return run_cli(["run", "out/suite.yaml", "--no-progress", "--output", "r.json", "--format", "json"], tmp_path,
                   {**os.environ, "SCOREBOARD_STORE": "none", **env})


def _outputs(tmp_path: Path) -> dict:
    report = json.loads((tmp_path / "r.json").read_text())
    return {(a["variant"], a["case_id"]): a["output"]["text"] for a in report["attempts"]}


def test_echo_gets_what_promptfoo_renders_for_text_structured_templated_and_message_results(tmp_path):
    report = _import(tmp_path, ["file://prompt.py:chat", "file://prompt.py:plain",
                                {"raw": "file://prompt.py:templated", "label": "templ"},
                                "file://prompt.py:structured", "file://prompt.py:floaty", "file://prompt.py:shape"],
                     [{"id": "echo", "label": "Echo"}])
    assert "prompt.py:chat" in report and "Not converted (0)" in report, report
    assert (tmp_path / "out" / "prompt.py").read_text() == PROMPT_PY  # copied beside the suite
    done = _run(tmp_path)
    assert done.returncode == 0, done.stderr
    out = _outputs(tmp_path)
    plan = json.loads((tmp_path / "r.json").read_text())["plan"]
    (france,) = [c["id"] for c in plan["cases"] if c["vars"] == {"country": "France"}]
    by_variant = {variant: text for (variant, case), text in out.items() if case == france}
    # a list is JSON.stringify'd, then (JSON) rendered inside and written with two-space indents
    assert by_variant["prompt.py:chat"] == json.dumps(
        [{"role": "system", "content": "Answer in one word."}, {"role": "user", "content": "Capital of France?"}],
        indent=2)
    # the context names the provider by its id and label
    assert by_variant["prompt.py:plain"] == "Capital of France? (asked of echo, label Echo)"
    # a text result is a Nunjucks template rendered with the vars
    assert by_variant["templ"] == "Capital of FRANCE?"
    assert by_variant["prompt.py:structured"] == "Capital of France?"
    # JSON.stringify's numbers and characters: what promptfoo 0.121.20's echo returned for this
    # function (run with node 22 on this config: every other output above matched it too)
    # the context's keys, provider and config, as promptfoo 0.121.20 passed them (its vars also carry
    # its own __evalId, __evalStepId and __repeatIndex, which the conversion report says are left out)
    assert json.loads(by_variant["prompt.py:shape"]) == {"keys": ["vars", "provider", "config"],
                                                        "provider": {"id": "echo", "label": "Echo"}, "config": {}}
    assert by_variant["prompt.py:floaty"] == '{\n  "n": 1,\n  "m": 0.5,\n  "s": "\u00e9\u2028x",\n  "big": 1e+21\n}'
    assert run_cli(["verify", "r.json"], tmp_path).returncode == 0


def test_the_chat_provider_sends_returned_messages_as_the_requests_messages(tmp_path):
    with FakeProvider() as srv:
        srv.set_default("chat", {"reply": "Paris"})
        _import(tmp_path, ["file://prompt.py:chat", "file://prompt.py:plain"],
                [{"id": "openai:chat:gpt-4o-mini", "config": {"apiBaseUrl": srv.base_url + "/v1"}}])
        done = _run(tmp_path, OPENAI_API_KEY="sk-test")
        assert done.returncode == 0, done.stderr
        sent = [r["json"]["messages"] for r in srv.requests]
    assert [{"role": "system", "content": "Answer in one word."},
            {"role": "user", "content": "Capital of France?"}] in sent
    # a text prompt is one user message, the provider named by its id (its label empty, as promptfoo's is)
    assert [{"role": "user", "content": "Capital of Japan? (asked of openai:chat:gpt-4o-mini, label )"}] in sent


@pytest.mark.parametrize("function,provider,words", [
    ("with_config", "echo", "returned config {\"temperature\":0.2}, which promptfoo merges into the provider's "
                            "settings for this call: not converted"),
    ("number", "echo", "Prompt function must return a string or object, got number"),
    ("not_messages", "openai:chat:gpt-4o-mini", "sends this JSON as the request's messages, and it is no list"),
])
def test_a_result_promptfoo_cannot_send_is_an_error_naming_the_case(tmp_path, function, provider, words):
    _import(tmp_path, [f"file://prompt.py:{function}"],
            [provider if provider == "echo" else {"id": provider, "config": {"apiBaseUrl": "http://127.0.0.1:9/v1"}}])
    done = _run(tmp_path, OPENAI_API_KEY="sk-test")
    assert done.returncode == 1
    first = done.stderr.strip().splitlines()[0]
    assert "case " in first and "field 'prompt'" in first and words in first, done.stderr


PROMPT_JS = """
const helpers = require('./helpers');
module.exports.ctx = (context) => JSON.stringify({keys: Object.keys(context), provider: context.provider,
                                                  config: context.config});
module.exports.obj = () => ({when: new Date(0), f: () => 1, n: 1.0});
module.exports.nul = () => null;
module.exports.undef = () => undefined;
module.exports.chat = async ({vars}) => [{role: 'user', content: `Capital of ${vars.country}?`}];
"""


def test_a_javascript_prompt_function_runs_in_node_as_promptfoo_runs_it(tmp_path):
    (tmp_path / "prompt.js").write_text(PROMPT_JS)
    (tmp_path / "helpers.js").write_text("module.exports = {};\n")
    (tmp_path / "default.mjs").write_text("export default (context) => `Hello ${context.vars.country}`;\n")
    report = _import(tmp_path, ["file://prompt.js:ctx", "file://prompt.js:obj", "file://prompt.js:chat",
                                "file://default.mjs"], ["echo"])
    assert "prompt.js imports ./helpers from its folder, which the import does not copy" in report, report
    (tmp_path / "out" / "helpers.js").write_text("module.exports = {};\n")
    done = _run(tmp_path)
    assert done.returncode == 0, done.stderr
    out = {variant: text for (variant, case), text in _outputs(tmp_path).items() if case == "test-1"}
    # promptfoo 0.121.20's echo output for these functions (node 22, the same config)
    assert out["prompt.js:ctx"] == ('{\n  "keys": [\n    "vars",\n    "provider",\n    "config"\n  ],\n  "provider": '
                                    '{\n    "id": "echo",\n    "label": ""\n  },\n  "config": {}\n}')
    assert out["prompt.js:obj"] == '{\n  "when": "1970-01-01T00:00:00.000Z",\n  "n": 1\n}'
    assert out["prompt.js:chat"] == '[\n  {\n    "role": "user",\n    "content": "Capital of France?"\n  }\n]'
    assert out["default.mjs"] == "Hello France"  # no function named: the module's default export


@pytest.mark.parametrize("function,words", [
    ("nul", "Cannot use 'in' operator to search for 'prompt' in null"),  # promptfoo's own TypeError
    ("undef", "Prompt function must return a string or object, got undefined"),
    ("missing", "promptFunction is not a function"),
])
def test_a_javascript_result_promptfoo_errors_on_is_an_error_naming_the_case(tmp_path, function, words):
    (tmp_path / "prompt.js").write_text(PROMPT_JS.replace("require('./helpers')", "{}"))
    _import(tmp_path, [f"file://prompt.js:{function}"], ["echo"])
    done = _run(tmp_path)
    assert done.returncode == 1
    first = done.stderr.strip().splitlines()[0]
    assert "case 'test-1'" in first and words in first, done.stderr


LEGACY = """import json, sys
ctx = json.loads(sys.argv[1])
if ctx["vars"]["country"] == "Japan":
    sys.exit("no prompt for Japan")
print("Capital of " + ctx["vars"]["country"] + "?")
print()
print("provider " + ctx["provider"]["id"] + " label=" + repr(ctx["provider"]["label"]) + " config=" + json.dumps(ctx["config"]))
print()
"""


def test_a_python_prompt_file_named_without_a_function_is_run_whole_as_promptfoo_runs_it(tmp_path):
    (tmp_path / "legacy.py").write_text(LEGACY.replace('"Japan"', '"nowhere"'))
    report = _import(tmp_path, ["file://legacy.py"], ["echo"])
    assert "is run whole with the context as its argument" in report, report
    assert _run(tmp_path).returncode == 0
    out = {case: text for (_, case), text in _outputs(tmp_path).items()}
    # promptfoo 0.121.20's echo output for this script (python-shell drops the empty lines)
    assert out["test-1"] == "Capital of France?\nprovider echo label='' config={}"
    # a script that exits nonzero is an error naming the case, with the end of its stderr
    (tmp_path / "out" / "legacy.py").write_text(LEGACY)
    done = _run(tmp_path)
    assert done.returncode == 1 and "case 'test-2'" in done.stderr and "no prompt for Japan" in done.stderr, done.stderr


GEN_SH = """#!/bin/sh
country=$(printf '%s' "$2" | python3 -c 'import json,sys; print(json.load(sys.stdin)["vars"]["country"])')
if [ "$country" = "Japan" ]; then echo "no prompt for Japan" >&2; exit 0; fi
echo "  Capital of $country? arg1=$1  "
echo "a note on stderr" >&2
"""
GEN_PY = """import json, sys
print("\\x1b[31mPy\\x1b[0m", json.loads(sys.argv[-1])["vars"]["country"], sys.argv[1:-1])
"""


def test_an_exec_prompt_runs_its_program_with_the_context_as_its_last_argument(tmp_path):
    (tmp_path / "gen.sh").write_text(GEN_SH)
    (tmp_path / "gen.sh").chmod(0o755)
    (tmp_path / "gen.py").write_text(GEN_PY)
    report = _import(tmp_path, ["exec:python3 gen.py a 'b c'", "exec:./gen.sh hello"], ["echo"])
    assert "./gen.sh runs from the suite's folder, where it is copied" in report, report
    assert os.access(tmp_path / "out" / "gen.sh", os.X_OK)  # copied with its execute bit
    done = _run(tmp_path)
    # Japan's script prints only on stderr: promptfoo's row error, here the case's load error
    assert done.returncode == 1 and "case 'test-2'" in done.stderr and "no prompt for Japan" in done.stderr
    (tmp_path / "out" / "gen.sh").write_text(GEN_SH.replace('"Japan"', '"nowhere"'))
    assert _run(tmp_path).returncode == 0
    out = {variant: text for (variant, case), text in _outputs(tmp_path).items() if case == "test-1"}
    # promptfoo 0.121.20's echo output (its ANSI escapes stripped, the output trimmed; the script
    # found as promptfoo finds it when run from the config's parent folder)
    assert out["python3 gen.py a 'b c'"] == "Py France ['a', 'b c']"
    assert out["gen.sh hello"] == "Capital of France? arg1=hello"


def test_what_is_not_converted_is_listed(tmp_path):
    (tmp_path / "prompt.ts").write_text("export const make = () => 'x';\n")
    report = _import(tmp_path, ["file://prompt.ts:make", "file://prompt.py:chat"],
                     ["echo", "anthropic:messages:claude-3-5-haiku-latest"])
    assert "prompt function prompt.ts:make (TypeScript, which promptfoo loads with its own loader) is not " \
           "converted" in report
    # anthropic reads a text prompt line by line, which the suite does not reproduce: said per variant
    assert "prompt 'prompt.py:chat' on variant 'anthropic-messages-claude-3-5-haiku-latest'" in report, report
