"""Prompts built by code: `prompt: {python: "module:function"}`. The function is called as the
suite loads with what it declares; what it returns is what the subject receives, is hashed and
is recorded; an edited function is another prompt; every way it can go wrong is one line naming
the case (or the suite's field) and exit 1, before anything runs."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.cli_inprocess import run_cli

PROMPTS = '''
import os
FEW = [("France", "Paris"), ("Japan", "Tokyo")]

def few_shot(vars, case_id):
    shots = "\\n".join(f"Q: capital of {c}? A: {a}" for c, a in FEW if c != vars["country"])
    vars["country"] = "changed"  # its own copy: the case keeps its value
    return f"{shots}\\nQ: capital of {case_id}? A:"

def chat(vars, variant, params):
    return [{"role": "system", "content": f"You answer as {variant} ({params.get('style', 'plain')})."},
            {"role": "user", "content": vars["country"]}]

def loud(input):
    print("building a prompt")  # stdout is the report's when --format json goes there
    return "Q: " + input

def boom(vars):
    raise KeyError(vars["missing"])

def mapping(vars):
    return {"prompt": vars["country"]}

def bad_message(vars):
    return [{"role": "narrator", "content": vars["country"]}]

def huge(vars):
    return "x" * 5000

def stuck(vars):
    import time
    time.sleep(30)
    return "late"

def context(ctx):
    return "x"

async def later(vars):
    return "x"
'''

CASES = [{"id": "France", "vars": {"country": "France"}, "expected": "Paris"},
         {"id": "Italy", "vars": {"country": "Italy"}, "expected": "Rome"}]


def project(tmp_path: Path, suite: str) -> Path:
    (tmp_path / "prompts.py").write_text(PROMPTS)
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in CASES))
    (tmp_path / "suite.yaml").write_text(suite)
    return tmp_path


def cli(tmp_path: Path, *args: str):
    return run_cli(list(args), tmp_path, {**os.environ, "SCOREBOARD_STORE": "none"})


def test_a_function_builds_each_cases_prompt_per_variant_and_the_record_says_which(tmp_path):
    project(tmp_path, "name: pf\ncases: cases.jsonl\n"
                      "prompts:\n  few: {python: \"prompts:few_shot\"}\n  chat: {python: \"prompts:chat\"}\n"
                      "variants: {echo: {subject: mock, params: {style: terse}}}\n"
                      "graders: [{contains: \"capital\"}]\n")
    done = cli(tmp_path, "run", "suite.yaml", "--no-progress", "--output", "r.json", "--format", "json")
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    variants = report["summary"]["variants"]
    assert variants["few"]["passed"] == 2 and variants["chat"]["passed"] == 0  # the chat never says "capital"
    cases = {c["id"]: c for c in report["plan"]["cases"]}
    assert cases["France"]["inputs"]["few"] == "Q: capital of Japan? A: Tokyo\nQ: capital of France? A:"
    assert cases["Italy"]["inputs"]["few"] == ("Q: capital of France? A: Paris\nQ: capital of Japan? A: Tokyo\n"
                                               "Q: capital of Italy? A:")
    assert cases["Italy"]["vars"] == {"country": "Italy"}  # the function changed only its copy
    assert cases["France"]["inputs"]["chat"] == [
        {"role": "system", "content": "You answer as chat (terse)."}, {"role": "user", "content": "France"}]
    prompts = {v["name"]: v["prompt"] for v in report["plan"]["variants"]}
    code = __import__("hashlib").sha256((tmp_path / "prompts.py").read_bytes()).hexdigest()
    assert prompts["few"]["template"] == {"python": "prompts:few_shot", "code_sha256": code}
    # the mock echoes what it was sent: the built prompt reached the subject
    outputs = {(a["variant"], a["case_id"]): a["output"]["text"] for a in report["attempts"]}
    assert outputs[("few", "Italy")].endswith("Q: capital of Italy? A:")
    assert cli(tmp_path, "verify", "r.json").returncode == 0


def test_an_edited_function_is_another_prompt_and_a_resume_refuses_it(tmp_path):
    project(tmp_path, "name: pf\ncases: cases.jsonl\nprompt: {python: \"prompts:few_shot\"}\nsubject: mock\n"
                      "graders: [{contains: \"capital\"}]\n")
    assert cli(tmp_path, "run", "suite.yaml", "--no-progress", "--output", "r.json").returncode == 0
    assert cli(tmp_path, "run", "--resume", "r", "--no-progress").returncode == 0  # unchanged: resumes
    (tmp_path / "prompts.py").write_text(PROMPTS.replace("Q: capital", "Question: capital"))
    again = cli(tmp_path, "run", "--resume", "r", "--no-progress")
    assert again.returncode == 1 and "changed since the run started" in again.stderr, again.stderr


def test_what_a_function_prints_goes_to_stderr_not_into_the_json_on_stdout(tmp_path):
    (tmp_path / "prompts.py").write_text(PROMPTS)
    (tmp_path / "cases.jsonl").write_text('{"id": "a", "input": "hello", "expected": "Q: hello"}\n')
    (tmp_path / "suite.yaml").write_text("name: pf\ncases: cases.jsonl\nprompt: {python: \"prompts:loud\"}\n"
                                         "subject: mock\ngraders: [exact]\n")
    done = cli(tmp_path, "run", "suite.yaml", "--no-progress", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["summary"]["variants"]["mock"]["passed"] == 1, done.stdout
    assert "building a prompt" in done.stderr


@pytest.mark.parametrize("target,words", [
    ("boom", ["case 'France'", "field 'prompt'", "prompts:boom raised KeyError: 'missing'"]),
    ("mapping", ["case 'France'", "returned dict: a prompt function returns text or a list of chat messages"]),
    ("bad_message", ["case 'France'", "message 1 must be {role: system|user|assistant|tool"]),
    ("huge", ["case 'France'", "field 'input'", "5000 bytes, over the limit of 1000"]),
    ("context", ["suite.yaml:4", "field 'prompt'", "takes 'ctx', which a prompt function is not given"]),
    ("later", ["field 'prompt'", "is async"]),
    ("stuck|0.3", ["case 'France'", "field 'prompt'", "did not return within 0.3 s (timeout_s"]),
    ("few_shot|0", ["field 'prompt'", "timeout_s is seconds, more than 0 and at most 3600, got 0"]),
    ("few_shoot", ["field 'prompt'", "no function 'few_shoot' in module 'prompts' (did you mean 'few_shot'?)"]),
])
def test_each_way_a_prompt_function_fails_is_one_line_naming_where(tmp_path, target, words):
    target, _, timeout = target.partition("|")  # "function|timeout_s"
    extra = f", timeout_s: {timeout}" if timeout else ""
    project(tmp_path, f"name: pf\ncases: cases.jsonl\nlimits: {{max_input_bytes: 1000}}\n"
                      f"prompt: {{python: \"prompts:{target}\"{extra}}}\nsubject: mock\ngraders: [exact]\n")
    done = cli(tmp_path, "run", "suite.yaml", "--no-progress")
    assert done.returncode == 1
    first = done.stderr.strip().splitlines()[0]
    assert first.startswith("scoreboard: error: ") and all(w in first for w in words), done.stderr
    assert not (tmp_path / "eval-results").exists()  # nothing ran, nothing was written


def test_a_module_that_is_not_there_and_a_malformed_spec_are_refused_as_the_suite_loads(tmp_path):
    project(tmp_path, "name: pf\ncases: cases.jsonl\nprompt: {python: \"nowhere:build\"}\nsubject: mock\n"
                      "graders: [exact]\n")
    done = cli(tmp_path, "validate", "suite.yaml")
    assert done.returncode == 1 and "cannot import module 'nowhere'" in done.stderr
    assert str(tmp_path.resolve()) in done.stderr  # the folder it looked in
    (tmp_path / "suite.yaml").write_text("name: pf\ncases: cases.jsonl\nprompt: {python: \"prompts:chat\", "
                                         "model: x}\nsubject: mock\ngraders: [exact]\n")
    done = cli(tmp_path, "validate", "suite.yaml")
    assert done.returncode == 1 and 'a prompt given as a mapping is {python: "module:function"}' in done.stderr
