"""A new user's first hour (probe 8): a suite of their own against a chat endpoint they started
on 127.0.0.1, a prompt template over cases, two variants and a gate, a Python grader, and the
mistakes a newcomer makes on the way; each defect met reproduced as the user meets it."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.servers.fake_provider import FakeProvider
from tests.cli_inprocess import run_cli

UNSET = "SB_PROBE8_UNSET_KEY"


def cli(cwd: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY",
                                                             "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", UNSET)}
    full.update({"SCOREBOARD_STORE": "none", **(env or {})})
    return run_cli(args, cwd, full)  # in-process: no test here is about the process


def jsonl(rows) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


CASES = [{"id": "fr", "vars": {"country": "France"}, "expected": "Paris"},
         {"id": "de", "vars": {"country": "Germany"}, "expected": "Berlin"}]


def own_suite(folder: Path, subject: dict, **settings) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "cases.jsonl").write_text(jsonl(CASES), encoding="utf-8")
    path = folder / "suite.json"
    doc = {"name": "capitals", "cases": "cases.jsonl", "output_dir": "out",
           "prompt": "What is the capital of {{ country }}?", "subject": subject,
           "variants": {"plain": {}, "careful": {"params": {"temperature": 0}}}, "graders": ["contains"], **settings}
    path.write_text(json.dumps({k: v for k, v in doc.items() if v is not None}), encoding="utf-8")
    return path


# ---- an API key variable the suite names, unset, for a server on 127.0.0.1 ---------------------

@pytest.fixture
def chat_server():
    with FakeProvider(latency_ms=0) as srv:
        srv.set_default("chat", {"reply": "Paris"})
        yield srv


def test_an_unset_api_key_env_the_suite_names_is_said_by_validate_plan_and_run(tmp_path, chat_server):
    """The README: 'An unset API key variable is a warning' in validate and plan. A suite that
    names `api_key_env: MY_KEY` for a local server, MY_KEY never exported: nothing said anywhere,
    and the run sent every request without a key (a gateway answers 401 to each)."""
    subject = {"type": "openai", "base_url": chat_server.base_url + "/v1", "model": "m",
               "api_key_env": UNSET}
    suite = own_suite(tmp_path, subject)
    for command in (("validate", str(suite)), ("plan", str(suite)),
                    ("run", str(suite), "--no-progress", "--format", "json")):
        proc = cli(tmp_path, *command)
        assert proc.returncode in (0, 3), (command, proc.stderr)
        said = [line for line in proc.stderr.splitlines() if UNSET in line]
        assert len(said) == 1, (command, proc.stderr)
        assert said[0].startswith("scoreboard: warning: "), said
        assert "field 'subject.api_key_env'" in said[0] or "api_key_env" in said[0], said
        assert "without" in said[0] and "api_key_required: true" in said[0], said
        assert "variant 'plain'" in said[0] and "variant 'careful'" in said[0], said
    # the key set: nothing to say
    proc = cli(tmp_path, "validate", str(suite), env={UNSET: "k"})
    assert proc.returncode == 0 and UNSET not in proc.stderr, proc.stderr


def test_api_key_required_makes_the_unset_variable_an_error_of_the_run(tmp_path, chat_server):
    subject = {"type": "openai", "base_url": chat_server.base_url + "/v1", "model": "m",
               "api_key_env": UNSET, "api_key_required": True}
    suite = own_suite(tmp_path, subject)
    proc = cli(tmp_path, "run", str(suite), "--no-progress")
    assert proc.returncode == 1, proc.stderr
    assert UNSET in proc.stderr and "is not set" in proc.stderr, proc.stderr
    assert not chat_server.requests


def test_a_local_server_with_no_api_key_env_named_gets_no_warning(tmp_path, chat_server):
    """Ollama, vLLM: no key named, none needed; nothing to warn about."""
    suite = own_suite(tmp_path, {"type": "openai", "base_url": chat_server.base_url + "/v1", "model": "m"})
    proc = cli(tmp_path, "validate", str(suite))
    assert proc.returncode == 0 and "warning" not in proc.stderr, proc.stderr


# ---- a prompt file every variant shares, missing or broken ----------------------------------------

@pytest.mark.parametrize("text, words", [(None, "not found"), ("Capital of {{ country }}?\n{% if x %}\n", "line 2")])
def test_a_shared_prompt_file_error_is_said_once_not_once_per_variant(tmp_path, text, words):
    """`prompt: "@prompts/q.txt"` for two variants, the file missing (a wrong relative path) or
    with a syntax error: the same line came twice, each blaming a variant that shares it."""
    suite = own_suite(tmp_path, "mock", prompt="@prompts/q.txt")
    if text is not None:
        (tmp_path / "prompts").mkdir()
        (tmp_path / "prompts" / "q.txt").write_text(text, encoding="utf-8")
    for command in ("validate", "plan", "run"):
        proc = cli(tmp_path, command, suite.name)
        assert proc.returncode == 1, (command, proc.stderr)
        lines = proc.stderr.splitlines()
        assert len(lines) == 1, (command, proc.stderr)
        assert lines[0].startswith("scoreboard: error: suite.json:1, field 'prompt': "), lines
        assert "prompts/q.txt" in lines[0] and words in lines[0] and "variant" not in lines[0], lines
    assert not (tmp_path / "out").exists()


def test_a_prompt_of_the_prompts_axis_crossed_with_two_variants_is_said_once(tmp_path):
    suite = own_suite(tmp_path, "mock", prompt=None,
                      prompts={"terse": "@prompts/missing.txt", "long": "Capital of {{ country }}?"})
    proc = cli(tmp_path, "validate", suite.name)
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and "field 'prompts.terse'" in lines[0] and "not found" in lines[0], proc.stderr


# ---- a gate naming a misspelt variant -----------------------------------------------------------

def test_a_misspelt_variant_in_the_suites_fail_under_is_named_with_a_suggestion_and_no_flag(tmp_path):
    """`fail_under: {carefull: 0.9}` in the suite file read 'field 'fail_under': --fail-under names
    an unknown variant' (a flag the user never gave), with no 'did you mean'."""
    suite = own_suite(tmp_path, "mock", fail_under={"carefull": 0.9})
    proc = cli(tmp_path, "validate", suite.name)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.splitlines() == [
        "scoreboard: error: suite.json:1, field 'fail_under.carefull': names an unknown variant 'carefull' "
        "(variants: plain, careful); did you mean 'careful'?"], proc.stderr
    suite = own_suite(tmp_path, "mock")
    proc = cli(tmp_path, "run", suite.name, "--fail-under", "carefull=0.9")
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.splitlines() == [
        "scoreboard: error: flag --fail-under: names an unknown variant 'carefull' "
        "(variants: plain, careful); did you mean 'careful'?"], proc.stderr


# ---- a template variable the case spells otherwise ------------------------------------------------

@pytest.mark.parametrize("prompt, case_vars, field, hint", [
    ("Capital of {{ contry }}?", {"country": "France"}, "vars.contry", "the case defines 'country'"),
    ("Capital of {{ country }}?", {"cuntry": "France"}, "vars.country", "the case defines 'cuntry'"),
    ("Dear {{ user.nmae }}", {"user": {"name": "Ada"}}, "vars.user.nmae", "the case defines 'user.name'"),
])
def test_an_undefined_template_variable_names_the_one_the_case_has(tmp_path, prompt, case_vars, field, hint):
    (tmp_path / "cases.jsonl").write_text(jsonl([{"id": "fr", "vars": case_vars, "expected": "Paris"}]),
                                          encoding="utf-8")
    (tmp_path / "suite.json").write_text(json.dumps({"cases": "cases.jsonl", "prompt": prompt, "subject": "mock",
                                                     "variants": {"a": {}}}), encoding="utf-8")
    proc = cli(tmp_path, "validate", "suite.json")
    assert proc.returncode == 1, proc.stderr
    (line,) = proc.stderr.splitlines()
    assert line.startswith(f"scoreboard: error: cases.jsonl:1, case 'fr', field '{field}': "), line
    assert line.endswith(f"; {hint}"), line


@pytest.mark.parametrize("prompt, field, hint", [
    ("Translate {{ vars.input }}", "vars.input",
     "'input' is the case's own field, not one of its vars: write {{ input }}"),
    ("Translate {{ vars.wrod }}", "vars.wrod", "the case defines 'vars.word'"),
])
def test_a_var_read_through_vars_is_named_as_written(tmp_path, prompt, field, hint):
    """`{{ vars.input }}` read "uses 'input', which this case does not define ...; the case
    defines 'input'": the name it quoted was not the one written, and the hint contradicted it."""
    (tmp_path / "cases.jsonl").write_text(jsonl([{"id": "fr", "input": "hello", "vars": {"word": "hi"}}]),
                                          encoding="utf-8")
    (tmp_path / "suite.json").write_text(json.dumps({"cases": "cases.jsonl", "prompt": prompt, "subject": "mock",
                                                     "variants": {"a": {}}}), encoding="utf-8")
    proc = cli(tmp_path, "validate", "suite.json")
    assert proc.returncode == 1, proc.stderr
    (line,) = proc.stderr.splitlines()
    assert line.startswith(f"scoreboard: error: cases.jsonl:1, case 'fr', field '{field}': prompt 'prompt' "
                           f"uses '{field}', which this case does not define"), line
    assert line.endswith(f"; {hint}"), line


def test_an_undefined_template_variable_nothing_resembles_gets_no_guess(tmp_path):
    (tmp_path / "cases.jsonl").write_text(jsonl([{"id": "fr", "vars": {"city": "Paris"}}]), encoding="utf-8")
    (tmp_path / "suite.json").write_text(json.dumps({"cases": "cases.jsonl", "prompt": "{{ country }}",
                                                     "subject": "mock", "variants": {"a": {}}}), encoding="utf-8")
    proc = cli(tmp_path, "validate", "suite.json")
    assert proc.returncode == 1 and "defines" not in proc.stderr and "field 'vars.country'" in proc.stderr, proc.stderr


# ---- a Python function the file does not have ---------------------------------------------------

CHECKS = "import re\n\ndef short(output, context):\n    return len(output) < 40\n\ndef polite(output):\n    return 'please' in output\n"


@pytest.mark.parametrize("spec", ["python-file:checks.py:shrot", "python:checks:shrot",
                                  {"python": {"file": "checks.py", "function": "shrot"}}])
def test_a_misspelt_grader_function_names_the_function_the_file_has(tmp_path, spec):
    suite = own_suite(tmp_path, "mock", graders=[spec])
    (tmp_path / "checks.py").write_text(CHECKS, encoding="utf-8")
    proc = cli(tmp_path, "validate", suite.name)
    assert proc.returncode == 1, proc.stderr
    (line,) = proc.stderr.splitlines()
    assert line.startswith("scoreboard: error: suite.json:1, field 'graders[0]': "), line
    assert "'shrot'" in line and line.endswith("(did you mean 'short'?)"), line


def test_a_misspelt_subject_function_names_the_function_the_module_has(tmp_path):
    (tmp_path / "cases.jsonl").write_text(jsonl([{"id": "a", "input": "x", "expected": "x"}]), encoding="utf-8")
    (tmp_path / "agent.py").write_text("def answer(text):\n    return text\n", encoding="utf-8")
    proc = cli(tmp_path, "run", "--cases", "cases.jsonl", "--subject", "python:agent:anser", "--no-progress")
    assert proc.returncode == 1, proc.stderr
    (line,) = proc.stderr.splitlines()
    assert "field 'subject.function'" in line and line.endswith("(did you mean 'answer'?)"), line
    assert not (tmp_path / "eval-results").exists()


# ---- an inline Python expression naming what it cannot see --------------------------------------

def test_an_inline_expression_with_a_misspelt_name_is_refused_when_the_suite_loads(tmp_path):
    """`{python: "len(outptu) < 500"}` validated OK, and every attempt of the run was then an
    error (NameError), where a name starting with '_' is refused at load."""
    suite = own_suite(tmp_path, "mock", graders=[{"python": "len(outptu) < 500"}])
    for command in ("validate", "run"):
        proc = cli(tmp_path, command, suite.name)
        assert proc.returncode == 1, (command, proc.stderr)
        (line,) = proc.stderr.splitlines()
        assert line.startswith("scoreboard: error: suite.json:1, field 'graders[0]': grader 'python': "), line
        assert "'outptu'" in line and "(did you mean 'output'?)" in line, line
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("expr", ["len(output) < 500", "all(w in output for w in vars['country'].split())",
                                  "any(re.search(p, text) for p in [r'\\d', 'Paris']) or json is None",
                                  "math.isfinite(len(context['output'])) and case_id != '' and run >= 0",
                                  "sorted({k: v for k, v in (metadata or {}).items()}) == [] or True"])
def test_an_inline_expression_over_the_names_it_sees_still_loads_and_runs(tmp_path, expr):
    suite = own_suite(tmp_path, "mock", graders=[{"python": expr}])
    proc = cli(tmp_path, "run", suite.name, "--no-progress", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(next((tmp_path / "out").rglob("*.json")).read_text())
    assert all(a["status"] != "error" for a in report["attempts"]), report["attempts"][0]


# ---- a misspelt option of a grader --------------------------------------------------------------

def test_a_misspelt_grader_option_gets_a_suggestion_and_no_internal_names(tmp_path):
    """`{python: {file: checks.py, function: short, treshold: 0.6}}` listed '(known: expr, function,
    file, path, sha256, threshold, timeout_s, _fn)': an internal key, and no 'did you mean'."""
    (tmp_path / "checks.py").write_text(CHECKS, encoding="utf-8")
    suite = own_suite(tmp_path, "mock", graders=[{"python": {"file": "checks.py", "function": "short",
                                                             "treshold": 0.6}}])
    proc = cli(tmp_path, "validate", suite.name)
    assert proc.returncode == 1, proc.stderr
    (line,) = proc.stderr.splitlines()
    assert line.startswith("scoreboard: error: suite.json:1, field 'graders[0]': grader 'python': "
                           "unknown option 'treshold' (known: "), line
    assert "_fn" not in line and line.endswith("(did you mean 'threshold'?)"), line
    suite = own_suite(tmp_path, "mock", graders=[{"contains": {"paterns": ["Paris"]}}])
    proc = cli(tmp_path, "validate", suite.name)
    assert proc.returncode == 1 and proc.stderr.rstrip().endswith("(did you mean 'patterns'?)"), proc.stderr


# ---- a grader value written as a template --------------------------------------------------------

@pytest.mark.parametrize("spec, field", [({"contains": "{{ expected }}"}, "graders[0]"),
                                         ({"regex": {"patterns": ["^{{country}}$"]}}, "graders[0]")])
def test_a_grader_value_written_as_a_template_is_said_to_be_matched_as_written(tmp_path, spec, field):
    """`{contains: "{{ expected }}"}` (promptfoo's habit: its assertion values are templates):
    nothing was said, and every attempt failed 'not found: "{{ expected }}"'."""
    suite = own_suite(tmp_path, "mock", graders=[spec])
    for command in ("validate", "run"):
        proc = cli(tmp_path, command, suite.name, *(("--no-progress",) if command == "run" else ()))
        said = [line for line in proc.stderr.splitlines() if line.startswith("scoreboard: warning:")]
        assert len(said) == 1, (command, proc.stderr)
        assert said[0].startswith(f"scoreboard: warning: suite.json:1, field '{field}': "), said
        assert "{{" in said[0] and "not a template" in said[0] and "case's expected" in said[0], said


def test_a_plain_grader_value_is_not_warned_about(tmp_path):
    suite = own_suite(tmp_path, "mock", graders=[{"contains": "Paris"}, {"regex": "^[A-Z]{2}$"}])
    proc = cli(tmp_path, "validate", suite.name)
    assert proc.returncode == 0 and "warning" not in proc.stderr, proc.stderr


# ---- an endpoint that refuses connections -------------------------------------------------------

def test_a_run_whose_attempts_errored_says_why_without_verbose(tmp_path):
    """The endpoint's port is wrong (nothing listens): the run ended '0/2, 2 errors' and '8 requests
    sent: 0 answered, 8 failed', and nothing said why unless run again with --verbose."""
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    subject = {"type": "openai", "base_url": f"http://127.0.0.1:{port}/v1", "model": "m",
               "retries": {"attempts": 1, "base_delay_s": 0.01}}
    suite = own_suite(tmp_path, subject)
    proc = cli(tmp_path, "run", suite.name, "--no-progress", "--format", "json")
    assert proc.returncode == 2, proc.stderr
    said = [line for line in proc.stdout.splitlines() if "ended in an error" in line]
    assert len(said) == 1, proc.stdout
    assert said[0].startswith("  4 attempts ended in an error, e.g. "), said
    assert "connection" in said[0] and "--verbose" in said[0], said
    report = json.loads(next((tmp_path / "out").rglob("*.json")).read_text())
    assert [a["status"] for a in report["attempts"]] == ["error"] * 4


def test_a_run_with_no_error_says_nothing_of_errors(tmp_path, chat_server):
    suite = own_suite(tmp_path, {"type": "openai", "base_url": chat_server.base_url + "/v1", "model": "m"})
    proc = cli(tmp_path, "run", suite.name, "--no-progress", "--format", "json")
    assert proc.returncode == 0 and "ended in an error" not in proc.stdout + proc.stderr, proc.stdout
