"""Suites as people write them, round 24H: evaluations people wrote for DeepEval, Inspect AI and
promptfoo, written by hand as native scoreboard suites and run (`python -m scoreboard`) against a
loopback OpenAI-shaped server; what could not be written, or failed unclearly, was fixed."""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.cli_inprocess import run_cli


class FakeOpenAI:
    """Chat Completions on 127.0.0.1: the first rule whose regex matches the request's messages
    gives the reply (a text, or {"tool": name, "args": {...}} for one tool call); every request
    body is kept."""

    def __init__(self, rules: dict):
        self.rules, self.bodies = rules, []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.bodies.append(body)
                text = json.dumps(body.get("messages", []), ensure_ascii=False)
                reply = next((out for pat, out in outer.rules.items() if re.search(pat, text)), "I don't know")
                message = {"role": "assistant", "content": reply}
                if isinstance(reply, dict):
                    message = {"role": "assistant", "content": None, "tool_calls": [
                        {"id": "c1", "type": "function",
                         "function": {"name": reply["tool"], "arguments": json.dumps(reply["args"])}}]}
                data = json.dumps({"id": "x", "object": "chat.completion", "model": body.get("model"),
                                   "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                                   "usage": {"prompt_tokens": 10, "completion_tokens": 5,
                                             "total_tokens": 15}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake():
    servers = []

    def start(rules: dict) -> FakeOpenAI:
        servers.append(FakeOpenAI(rules))
        return servers[-1]

    yield start
    for s in servers:
        s.close()


def scoreboard(*args: str, cwd: Path, base_url: str = "http://127.0.0.1:9/v1") -> subprocess.CompletedProcess:
    env = {**os.environ, "SCOREBOARD_STORE": "none", "OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "k"}
    return run_cli(args, cwd, env)  # in-process: these tests are about what it says and sends


def report(folder: Path) -> dict:
    (path,) = folder.glob("out/*/*.json")
    return json.loads(path.read_text())


# ---- Inspect AI's multiple_choice prompt, written as a template --------------------------------

MC_CASES = [{"id": "sky", "vars": {"question": "Why is the sky blue?",
                                   "choices": ["The ocean", "Rayleigh scattering", "Ozone"]}, "expected": "B"},
            {"id": "sum", "vars": {"question": "What is 2 + 2?", "choices": ["3", "5", "4"]}, "expected": "C"}]


def write_mc(folder: Path, prompt: str) -> Path:
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in MC_CASES))
    suite = folder / "suite.yaml"
    suite.write_text("name: mc\nsubject: {type: openai, model: m, params: {max_tokens: 64}}\ncases: cases.jsonl\n"
                     "graders: [{exact: null, transform: choice}]\nprompt: |\n"
                     + "".join(f"  {line}\n" for line in prompt.splitlines()))
    return suite


def test_a_multiple_choice_template_runs_against_a_server_and_the_choice_transform_grades_it(tmp_path, fake):
    server = fake({"sky": "Rayleigh scattering.\n\nANSWER: B", r"2 \+ 2": "ANSWER: **C**"})
    write_mc(tmp_path, "Answer with 'ANSWER: $LETTER', LETTER one of {{ 'ABCDEFGH'[:choices|length] | list "
                       "| join(',') }}.\n\n{{ question }}\n{% for c in choices %}{{ 'ABCDEFGH'[loop.index0] }}) "
                       "{{ c }}\n{% endfor %}")
    proc = scoreboard("run", "suite.yaml", "--output-dir", "out", "--no-progress", cwd=tmp_path, base_url=server.url)
    assert proc.returncode == 0, proc.stderr
    sent = [b["messages"][-1]["content"] for b in server.bodies]
    assert any("one of A,B,C.\n\nWhy is the sky blue?\nA) The ocean\nB) Rayleigh scattering\nC) Ozone" in s
               for s in sent), sent
    assert [a["status"] for a in report(tmp_path)["attempts"]] == ["passed", "passed"]


@pytest.mark.parametrize("expression, kind, hint", [
    ("{{ choices | map('titlecase') | join(', ') }}", "filter", "(did you mean 'title'?)"),
    ("{{ choices | select('odd_one') | join(', ') }}", "test", "(did you mean 'odd'?)"),
    ("{{ choices | reject('equalto_', 'x') | join(', ') }}", "test", "(did you mean 'equalto'?)"),
    ("{{ rows | selectattr('ok', 'qqzz') | list }}", "test", "(Jinja2's tests here:"),
])
def test_a_filter_or_test_named_as_text_to_map_or_select_is_refused_when_the_suite_loads(tmp_path, expression,
                                                                                         kind, hint):
    # it was accepted by validate and failed per case at render, each case blamed for its
    # 'vars' ("could not be rendered: TemplateRuntimeError: No filter named 'titlecase'."), with
    # none of the did-you-mean that `| titlecase` gets
    write_mc(tmp_path, "{{ question }} " + expression)
    proc = scoreboard("validate", "suite.yaml", cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("scoreboard: error: suite.yaml:5, field 'prompt': prompt 'prompt': template syntax "
                               f"error on its line 1: No {kind} named "), lines
    assert hint in lines[0] and "case '" not in lines[0], lines


def test_a_filter_named_to_map_that_exists_or_map_by_attribute_still_loads(tmp_path):
    write_mc(tmp_path, "{{ question }} {{ choices | map('upper') | reject('sameas', none) | join(', ') }}")
    proc = scoreboard("validate", "suite.yaml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr


def test_a_judge_prompt_naming_an_unknown_filter_through_map_is_refused_naming_the_grader(tmp_path):
    write_mc(tmp_path, "{{ question }}")
    suite = tmp_path / "suite.yaml"
    suite.write_text(suite.read_text().replace(
        "graders: [{exact: null, transform: choice}]",
        "judge: {type: openai, model: j}\ngraders:\n  - llm-judge: {prompt: \"{{ vars.choices | map('uppercase') "
        "| join(',') }} {{ output }}\"}"))
    proc = scoreboard("validate", "suite.yaml", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert "field 'graders[0]'" in line and "grader 'llm-judge'" in line
    assert "No filter named 'uppercase'. (did you mean 'upper'?)" in line


# ---- DeepEval's GEval with evaluation_steps ----------------------------------------------------

RAG_CASE = {"id": "refund", "input": "What if these shoes don't fit?",
            "expected": "We offer a 30-day full refund at no extra costs.",
            "metadata": {"retrieval_context": ["All customers are eligible for a 30 day full refund."]}}

STEPS = ["Check whether the facts in 'actual output' contradict any facts in 'expected output'",
         "Vague language, or contradicting OPINIONS, are OK"]


def write_geval(folder: Path, grader: str) -> Path:
    (folder / "cases.jsonl").write_text(json.dumps(RAG_CASE) + "\n")
    suite = folder / "suite.yaml"
    suite.write_text("name: rag\nsubject: {type: openai, model: m, params: {max_tokens: 64}}\n"
                     "judge: {type: openai, model: j}\ncases: cases.jsonl\n"
                     "prompt: \"Context: {{ metadata.retrieval_context | join(' ') }}\\nQuestion: {{ input }}\"\n"
                     "graders:\n" + grader)
    return suite


def test_deepeval_geval_evaluation_steps_are_one_judgment_following_the_numbered_steps(tmp_path, fake):
    # DeepEval's GEval(name="Correctness", evaluation_steps=[...], threshold=0.5): it was refused
    # ("unknown option 'evaluation_steps'"), and the steps could not be given to the judge
    server = fake({"Follow the evaluation steps": '{"score": 6, "explanation": "mostly right"}',
                   "shoes": "We offer a 30-day full refund."})
    write_geval(tmp_path, f"  - g-eval: {{evaluation_steps: {json.dumps(STEPS)}, threshold: 0.5}}\n"
                          "    metric: correctness\n")
    proc = scoreboard("run", "suite.yaml", "--output-dir", "out", "--no-progress", cwd=tmp_path, base_url=server.url)
    assert proc.returncode == 0, proc.stderr
    judged = [b for b in server.bodies if b["model"] == "j"]
    assert len(judged) == 1, judged
    prompt = json.dumps(judged[0]["messages"], ensure_ascii=False)
    assert "Evaluation steps:\\n1. " + STEPS[0] + "\\n2. " + STEPS[1] in prompt, prompt
    assert "30-day full refund at no extra costs" in prompt  # the reference reaches the judge
    (attempt,) = report(tmp_path)["attempts"]
    (grade,) = attempt["grades"]
    assert grade["passed"] is True and grade["score"] == pytest.approx(0.6)
    assert "evaluation steps: 6/10" in grade["reason"]
    assert attempt["metrics"] == {"correctness": pytest.approx(0.6)}
    # the plan counts one judgment per attempt
    plan = scoreboard("plan", "suite.yaml", cwd=tmp_path)
    assert "1 judge calls (1 model-graded grades x 1)" in plan.stdout, plan.stdout


def test_geval_steps_under_a_criterion_name_it_and_a_low_score_fails(tmp_path, fake):
    server = fake({"Follow the evaluation steps": '{"score": 3, "explanation": "contradicts"}',
                   "shoes": "No refunds."})
    write_geval(tmp_path, f"  - g-eval: {{criteria: Correctness, evaluation_steps: {json.dumps(STEPS)}, "
                          "threshold: 0.5}\n")
    proc = scoreboard("run", "suite.yaml", "--output-dir", "out", "--no-progress", cwd=tmp_path, base_url=server.url)
    assert proc.returncode == 0, proc.stderr  # no gate: a failed case is a result
    prompt = json.dumps([b for b in server.bodies if b["model"] == "j"][0]["messages"])
    assert "Correctness\\n\\nEvaluation steps:\\n1. " in prompt
    (grade,) = report(tmp_path)["attempts"][0]["grades"]
    assert grade["passed"] is False and grade["score"] == pytest.approx(0.3)
    assert "Correctness: 3/10" in grade["reason"]


@pytest.mark.parametrize("options, message", [
    ("{evaluation_steps: []}", "'evaluation_steps' is a non-empty list of texts, got []"),
    ("{evaluation_steps: 'check facts'}", "'evaluation_steps' is a non-empty list of texts"),
    ("{criteria: [a, b], evaluation_steps: [x]}", "'evaluation_steps' are the steps of one criterion"),
    ("{threshold: 0.5}", "(or give 'evaluation_steps', DeepEval's GEval)"),
])
def test_geval_evaluation_steps_written_wrong_is_one_line_naming_the_field(tmp_path, options, message):
    write_geval(tmp_path, f"  - g-eval: {options}\n")
    proc = scoreboard("validate", "suite.yaml", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("scoreboard: error: suite.yaml:7, field 'graders[0]': grader 'g-eval': "), line
    assert message in line, line


# ---- Inspect's epochs reducers, written by their Inspect names --------------------------------

def write_epochs(folder: Path, extra: str) -> Path:
    (folder / "cases.jsonl").write_text(json.dumps({"id": "eggs", "input": "16 - 3 - 4 eggs at $2?",
                                                    "expected": 18}) + "\n")
    suite = folder / "suite.yaml"
    suite.write_text("name: gsm\nsubject: {type: openai, model: m, params: {max_tokens: 64}}\ncases: cases.jsonl\n"
                     "runs: 3\ngraders: [{inspect: {scorer: match, numeric: true}}]\n" + extra)
    return suite


@pytest.mark.parametrize("reducers, field, hint", [
    ("[at_least_2]", "reducers.0", "(Inspect's at_least_2: write {kind: at_least, k: 2})"),
    ("[mean, pass_at_2]", "reducers.1", "(Inspect's pass_at_2: the summary reports pass@2 whenever a case runs "
                                        "more than once, no reducer needed; gate it with fail_under_metrics: "
                                        "{'pass@2': 0.8})"),
    ("[pass_k_3]", "reducers.0", "the summary reports pass^3"),
    ("[{kind: pass_at, k: 2}]", "reducers.0.kind", "(Inspect's pass_at: the summary reports pass@K"),
])
def test_an_inspect_reducer_name_says_how_this_suite_writes_it(tmp_path, reducers, field, hint):
    # Epochs(3, "at_least_2") ported by hand as reducers: [at_least_2] only said "must be one of
    # 'mean', 'max', 'median' or 'mode' or a mapping (got 'at_least_2')", not how to write it
    write_epochs(tmp_path, f"reducers: {reducers}\n")
    proc = scoreboard("validate", "suite.yaml", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    (line,) = [x for x in proc.stderr.splitlines() if "warning" not in x]
    assert line.startswith(f"scoreboard: error: suite.yaml:6, field '{field}': must be one of "), line
    assert line.endswith(hint) or hint in line, line


def test_what_the_reducer_hints_say_to_write_runs_against_a_server(tmp_path, fake):
    server = fake({"eggs": "9 * 2 = 18\nANSWER: 18"})
    write_epochs(tmp_path, "reducers: [{kind: at_least, k: 2}]\nfail_under_metrics: {'pass@2': 0.8, 'pass^3': 0.5}\n")
    proc = scoreboard("run", "suite.yaml", "--output-dir", "out", "--no-progress", cwd=tmp_path, base_url=server.url)
    assert proc.returncode == 0, proc.stderr
    summary = report(tmp_path)["summary"]
    assert "reducer at_least_2: 100.0%" in proc.stdout, proc.stdout
    assert "gate passed" in proc.stdout and len(server.bodies) == 3, summary


def test_a_reducer_name_of_no_tool_gets_no_hint(tmp_path):
    write_epochs(tmp_path, "reducers: [bogus_2]\n")
    proc = scoreboard("validate", "suite.yaml", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.strip().endswith("(got 'bogus_2')"), proc.stderr


# ---- cases written inline in a suite (promptfoo's inline tests, Inspect's inline samples) ------

@pytest.mark.parametrize("command", ["validate", "run", "plan"])
def test_a_suite_with_its_cases_written_inline_reads_them(tmp_path, command):
    # validate read such a suite as a case document and said "field 'subject': unknown field (a
    # case document holds cases, ...)"; run and plan said it was a case document to give with
    # --cases, though it names a subject and graders. Inline cases are read now (probe 24P,
    # tests/test_probe24P_inline_cases.py): the suite's two cases are its cases.
    (tmp_path / "suite.yaml").write_text(
        "name: t\nsubject: {type: openai, model: m, params: {max_tokens: 5}}\n"
        "cases:\n  - {id: a, input: hi, expected: x}\n  - {id: b, input: yo, expected: y}\ngraders: [exact]\n")
    args = ("--dry-run", "--output", "r.json") if command == "run" else ()
    proc = scoreboard(command, "suite.yaml", *args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    if command == "validate":
        assert "OK: suite t: 2 cases, 1 variant" in proc.stdout, proc.stdout
    elif command == "plan":
        assert "t: 2 cases" in proc.stdout, proc.stdout
    else:
        assert [c["id"] for c in json.loads((tmp_path / "r.json").read_text())["plan"]["cases"]] == ["a", "b"]


def test_a_case_document_alone_is_still_a_case_document(tmp_path):
    (tmp_path / "c.yaml").write_text("cases: [{id: a, input: hi, expected: x}]\n")
    assert scoreboard("validate", "c.yaml", cwd=tmp_path).returncode == 0
    proc = scoreboard("run", "c.yaml", cwd=tmp_path)
    assert proc.returncode == 1 and "this is a case document" in proc.stderr and "--cases" in proc.stderr
