"""promptfoo importer fidelity, round 7: checked against promptfoo 0.121.20 (its dist/ JavaScript,
evaluator.ts appendRunEvalOptionsForTestCase); the pass/fail below is what `promptfoo eval` computed
on the same configs against the same kind of loopback OpenAI-shaped server (it echoes the prompt)."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.cli_inprocess import run_cli


class _Echo(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        text = body["messages"][-1]["content"]
        self.server.prompts.append(text)  # type: ignore[attr-defined]
        out = json.dumps({"id": "x", "object": "chat.completion", "model": body.get("model"),
                          "choices": [{"index": 0, "finish_reason": "stop",
                                       "message": {"role": "assistant", "content": text}}],
                          "usage": {"prompt_tokens": 3, "completion_tokens": 3, "total_tokens": 6}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def server():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    srv.prompts = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def _provider(srv) -> str:
    return ("providers:\n  - id: openai:chat:gpt-4o-mini\n"
            f"    config: {{apiBaseUrl: 'http://127.0.0.1:{srv.server_address[1]}/v1'}}\n")


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "SCOREBOARD_STORE": "none", "OPENAI_API_KEY": "sk-test"}
    return run_cli(args, cwd, env=env)


def _import(tmp_path: Path, config: str, rc: int = 0) -> tuple[str, str]:
    (tmp_path / "promptfooconfig.yaml").write_text(config)
    done = _cli("import", "promptfoo", "promptfooconfig.yaml", "--output", "out", cwd=tmp_path)
    assert done.returncode == rc, done.stdout + done.stderr  # 3: something is listed as not converted
    return (tmp_path / "out" / "conversion-report.md").read_text(), (tmp_path / "out" / "suite.yaml").read_text()


def _run(tmp_path: Path) -> list[dict]:
    ran = _cli("run", "out/suite.yaml", "--output-dir", "out/res", cwd=tmp_path)
    assert "Traceback" not in ran.stderr, ran.stderr
    paths = list((tmp_path / "out" / "res").glob("*/*.json"))
    assert paths, ran.stdout + ran.stderr
    return json.loads(paths[0].read_text())["attempts"]


def _outcomes(attempts: list[dict]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for a in sorted(attempts, key=lambda a: (a["case_id"], a["run"])):
        out.setdefault(a["case_id"], []).append(a["status"])
    return out


def test_a_default_prefix_and_suffix_are_written_around_every_prompt_and_rendered(tmp_path, server):
    # createRunEvalOption: raw = prefix + prompt.raw + suffix, rendered with the vars afterwards, and
    # the prefix is `testCase.options?.prefix || defaultTest.options?.prefix`, so a test's empty
    # prefix keeps the default one. promptfoo sent "[T1] Say hi -- end" and passed all three; the
    # import listed the prefix and suffix and sent "Say hi", failing every test.
    report, suite = _import(tmp_path, "prompts: ['Say {{word}}']\n" + _provider(server) + """
defaultTest:
  options: {prefix: "[{{ tag }}] ", suffix: " -- end"}
tests:
  - description: a
    vars: {word: hi, tag: T1}
    assert: [{type: equals, value: "[T1] Say hi -- end"}]
  - description: b
    vars: {word: yo, tag: T2}
    options: {prefix: ""}
    assert: [{type: starts-with, value: "[T2] Say yo"}]
  - description: c
    vars: {word: hey, tag: T3}
    assert: [{type: contains, value: "hey -- end"}]
""")
    assert "options.prefix" not in report.split("## Converted with a difference")[0], report
    assert _outcomes(_run(tmp_path)) == {"a": ["passed"], "b": ["passed"], "c": ["passed"]}
    assert sorted(server.prompts) == ["[T1] Say hi -- end", "[T2] Say yo -- end", "[T3] Say hey -- end"]


def test_prefixes_that_differ_between_tests_are_listed_per_test_and_field(tmp_path, server):
    report, suite = _import(tmp_path, "prompts: ['Say {{word}}']\n" + _provider(server) + """
tests:
  - description: a
    vars: {word: hi}
    options: {prefix: "A: "}
  - description: b
    vars: {word: yo}
    options: {suffix: "!"}
  - description: c
    vars: {word: hey}
""", rc=3)
    assert "- tests.0.options.prefix: not converted" in report, report
    assert "- tests.1.options.suffix: not converted" in report, report
    assert "tests.2.options" not in report, report


def test_a_repeat_every_test_shares_is_the_suites_runs(tmp_path, server):
    # appendRunEvalOptionsForTestCase: testRepeat = normalizeRepeatCount(testCase.options?.repeat,
    # globalRepeat), defaultTest's options merged under the test's: each test ran 3 times in promptfoo
    # (6 requests); the import listed "this test option is not converted" and ran each once.
    report, suite = _import(tmp_path, "prompts: ['Say {{word}}']\n" + _provider(server) + """
defaultTest:
  options: {repeat: 3}
tests:
  - description: a
    vars: {word: hi}
    assert: [{type: equals, value: "Say hi"}]
  - description: b
    vars: {word: yo}
    options: {repeat: 3.0}
    assert: [{type: equals, value: "Say yo"}]
""")
    assert "repeat" not in report.split("## Converted with a difference")[0], report
    assert "runs: 3" in suite
    assert _outcomes(_run(tmp_path)) == {"a": ["passed"] * 3, "b": ["passed"] * 3}
    assert len(server.prompts) == 6


def test_a_repeat_one_test_has_alone_is_listed_naming_the_test(tmp_path, server):
    report, suite = _import(tmp_path, "prompts: ['Say {{word}}']\n" + _provider(server) + """
evaluateOptions: {repeat: 2}
tests:
  - description: a
    vars: {word: hi}
    options: {repeat: 4}
  - description: b
    vars: {word: yo}
    options: {repeat: 0}
""", rc=3)
    assert "- tests.0.options.repeat: not converted: 4 repeats for this test" in report, report
    assert "tests.1.options.repeat" not in report, report  # 0 is no repeat count: the eval's 2
    assert "runs: 2" in suite


def test_an_assertion_type_promptfoo_does_not_know_fails_the_test_as_promptfoos_error_row(tmp_path, server):
    # runAssertion: a type with no handler throws "Unknown assertion type: ends-with", an error row
    # that fails the test whatever its weight or assert-set. The import listed it as having "no
    # scoreboard equivalent" and the case passed on its other assertions; promptfoo failed both tests.
    report, suite = _import(tmp_path, "prompts: ['Say {{word}}']\n" + _provider(server) + """
tests:
  - description: typo
    vars: {word: hi}
    assert: [{type: contains, value: hi}, {type: ends-with, value: hi}]
  - description: typo-weight0-in-set
    vars: {word: yo}
    assert:
      - {type: contains, value: yo}
      - type: assert-set
        weight: 0
        assert: [{type: endswith, value: yo, weight: 0}]
""")
    assert "tests.0.assert.1 (ends-with): promptfoo has no assertion type 'ends-with'" in report, report
    attempts = _run(tmp_path)
    assert _outcomes(attempts) == {"typo": ["failed"], "typo-weight0-in-set": ["failed"]}
    reasons = [g.get("reason") for a in attempts for g in a["grades"]]
    assert "Error: Unknown assertion type: ends-with" in reasons


def test_default_test_prompts_and_providers_are_listed_for_each_test_they_restrict(tmp_path):
    # prepareTestCaseForEval: testCase.prompts ?? defaultTest.prompts, and the same for providers:
    # promptfoo ran test 1 on prompt `tell` with provider `other` only, test 2 on `tell` with both
    # (its own `providers: [echo]` matches both ids). The import dropped defaultTest's silently and
    # ran every test on both prompts and both providers.
    report, suite = _import(tmp_path, """prompts:
  - {raw: 'Say {{word}}', label: say}
  - {raw: 'Tell {{word}}', label: tell}
providers: [echo, {id: echo, label: other}]
defaultTest:
  providers: [other]
  prompts: [tell]
tests:
  - vars: {word: hi}
    assert: [{type: contains, value: hi}]
  - vars: {word: yo}
    providers: [echo]
    assert: [{type: contains, value: yo}]
""", rc=3)
    assert "- tests.0.providers: not converted: this test runs only on the providers ['other'] (defaultTest's)" \
        in report, report
    assert "- tests.0.prompts: not converted: this test runs only on the prompts ['tell'] (defaultTest's)" in report
    assert "- tests.1.providers: not converted: this test runs only on the providers ['echo'] names" in report
    assert "- tests.1.prompts: not converted" in report
