"""`scoreboard import promptfoo`: the fixture configs in tests/fixtures/promptfoo converted, then run
against a loopback OpenAI-compatible server; every assertion's verdict is the one promptfoo's
handler gives (the source line of each rule is named beside it)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from scoreboard.importers.common import js_string
from scoreboard.importers.promptfoo_assert_checks import parse_comma_values
from scoreboard.importers.promptfoo_tests import assertion_from_string
from tests.cli_inprocess import run_cli
from tests.servers.fake_provider import FakeProvider

FIXTURES = Path(__file__).parent / "fixtures" / "promptfoo"
REPLIES = {"capital": "Paris", "number": "1", "json": '{"a": 1}', "fenced": '```json\n{"a": 1}\n```',
           "trailing": "done\n"}

# (case id, grader index) -> verdict, from promptfoo's handlers:
EXPECTED = {
    # contains.ts handleContains: outputString.includes(String(value)); "Paris" lacks "capital"
    "capital": [True, True, False, True, True, True, True, True, True, True, True, True, True, True, True],
    # equals.ts: String(renderedValue) === outputString, and String(1.0) is "1";
    # javascript.ts: a number result passes when >= threshold (2 >= 2)
    "number": [True, True, True, True],
    # json.ts handleIsJson / handleContainsJson; equals.ts isDeepStrictEqual for an object value
    "json": [True, True, True, True, True, True],
    # json.ts: JSON.parse rejects the fence, so not-is-json passes; extractJsonObjects finds the object
    "fenced": [True, True, True],
    # regex.ts: new RegExp("done$").test("done\n") is false in JavaScript ($ is the end of input);
    # runAssertion throws "Unknown assertion type: weighted": promptfoo's error row fails the test
    "trailing": [True, False, False],
    "expanded[question=capital]": [True, True],
    "expanded[question=number]": [True, True],
    # csv.ts assertionFromString: "contains-any:Lyon" -> contains-any ["Lyon"]; "1" -> equals "1"
    "csv-capital": [True, False, True],
    "csv-number": [True, True, True],
    "jsonl-capital": [True, True],
}


def reply(req):
    question = req["messages"][-1]["content"].split("Q: ", 1)[1]
    return REPLIES[question]


def scoreboard(args, cwd):
    return run_cli(args, cwd, env={**os.environ, "FAKE_KEY": "k"})


def _fixture(tmp_path: Path, name: str, base_url: str) -> Path:
    src = tmp_path / "src"
    shutil.copytree(FIXTURES / name, src)
    config = src / "promptfooconfig.yaml"
    config.write_text(config.read_text().replace("__BASE_URL__", base_url))
    return config


@pytest.mark.skipif(shutil.which("node") is None, reason="the javascript assertions need Node.js")
def test_full_fixture_converts_and_runs_with_promptfoo_verdicts(tmp_path):
    with FakeProvider() as srv:
        srv.set_default("chat", {"reply": reply})
        config = _fixture(tmp_path, "full", srv.base_url + "/v1")
        done = scoreboard(["import", "promptfoo", str(config), "--output", "out"], tmp_path)
        assert done.returncode == 0, done.stderr  # 'weighted' is no promptfoo type: a grader that always fails
        assert "tests.4.assert.2 (weighted): promptfoo has no assertion type 'weighted'" in done.stdout
        report_md = (tmp_path / "out" / "conversion-report.md").read_text()
        assert "Not converted (0)" in report_md
        out = tmp_path / "out"
        assert (out / "checks.js").exists() and (out / "checks.py").exists() and (out / "promptfoo_asserts.py").exists()
        run = scoreboard(["run", "out/suite.yaml", "--output", "report.json"], tmp_path)
    assert run.returncode in (0, 3), run.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    verdicts = {a["case_id"]: [g["passed"] for g in a["grades"]] for a in report["attempts"]}
    assert verdicts == EXPECTED


def test_defaults_vars_and_ids(tmp_path):
    config = _fixture(tmp_path, "full", "http://127.0.0.1:9/v1")
    done = scoreboard(["import", "promptfoo", str(config), "--output", "out"], tmp_path)
    cases = [json.loads(line) for line in (tmp_path / "out" / "cases.jsonl").read_text().splitlines()]
    by_id = {c["id"]: c for c in cases}
    assert done.returncode == 0
    # defaultTest.vars under the test's own; defaultTest.assert first (evaluator.ts prepareTestCaseForEval)
    assert by_id["capital"]["vars"] == {"lang": "en", "question": "capital"}
    assert by_id["capital"]["graders"][0] == {"not-contains": {"patterns": ["FORBIDDEN"]}}
    # a list of strings expands into one test per value (evaluator.ts generateVarCombinations)
    assert {"expanded[question=capital]", "expanded[question=number]"} <= set(by_id)
    # __metric puts the metric on every assertion of the row (csv.ts applyAssertionConfigs)
    assert all(g.get("metric") == "accuracy" for g in by_id["csv-capital"]["graders"][1:])


def test_refusals_name_the_file_and_nothing_is_written(tmp_path):
    (tmp_path / "promptfooconfig.yaml").write_text("prompts: ['x']\nproviders: [echo]\ntests: file://../secret.csv\n")
    done = scoreboard(["import", "promptfoo", "promptfooconfig.yaml", "--output", "out"], tmp_path)
    assert done.returncode == 1
    assert "promptfooconfig.yaml" in done.stderr and "leaves the config's folder" in done.stderr
    assert not (tmp_path / "out").exists()
    (tmp_path / "p2.yaml").write_text("prompts: ['x']\ntests:\n  - vars: {a: file://../../etc/passwd}\n")
    done = scoreboard(["import", "promptfoo", "p2.yaml", "--output", "out"], tmp_path)
    assert done.returncode == 1 and "climbs out of" in done.stderr
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep.txt").write_text("mine")
    (tmp_path / "p3.yaml").write_text("prompts: ['x']\nproviders: [echo]\n")
    done = scoreboard(["import", "promptfoo", "p3.yaml", "--output", "out"], tmp_path)
    assert done.returncode == 1 and "not empty" in done.stderr
    assert (tmp_path / "out" / "keep.txt").read_text() == "mine"


def test_unconverted_provider_is_left_for_the_user(tmp_path):
    (tmp_path / "c.yaml").write_text("prompts: ['Hi {{name}}']\nproviders: [echo, 'ollama:llama3']\n"
                                     "tests:\n  - vars: {name: Ada}\n    assert: [{type: equals, value: 'Hi Ada'}]\n")
    done = scoreboard(["import", "promptfoo", "c.yaml", "--output", "out"], tmp_path)
    assert done.returncode == 3
    assert "provider 'ollama:llama3' is not converted" in done.stdout
    suite = (tmp_path / "out" / "suite.yaml").read_text()
    assert "echo:" in suite and "ollama-llama3" in suite and "fill in a subject" in suite


def test_echo_provider_runs_offline(tmp_path):
    (tmp_path / "c.yaml").write_text("prompts: ['Hi {{name}}']\nproviders: [echo]\n"
                                     "tests:\n  - vars: {name: [Ada, Bob]}\n    assert:\n"
                                     "      - {type: equals, value: 'Hi {{name}}'}\n"
                                     "      - {type: icontains, value: 'hi'}\n")
    done = scoreboard(["import", "promptfoo", "c.yaml", "--output", "out"], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    run = scoreboard(["run", "out/suite.yaml", "--output", "r.json"], tmp_path)
    assert run.returncode == 0, run.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert {a["case_id"]: a["status"] for a in report["attempts"]} == {
        "test-1[name=Ada]": "passed", "test-1[name=Bob]": "passed"}


def test_expected_string_syntax():
    # csv.ts assertionFromString
    assert assertion_from_string("contains: x") == {"type": "contains", "value": "x"}
    assert assertion_from_string("icontains-any: a, b") == {"type": "icontains-any", "value": ["a", "b"]}
    assert assertion_from_string("not-regex:^a") == {"type": "not-regex", "value": "^a"}
    assert assertion_from_string("similar(0.9):hello") == {"type": "similar", "value": "hello", "threshold": 0.9}
    assert assertion_from_string("similar:hello")["threshold"] == 0.8
    assert assertion_from_string("grade:be nice") == {"type": "llm-rubric", "value": "be nice"}
    assert assertion_from_string("fn:output.length > 2") == {"type": "javascript", "value": "output.length > 2"}
    assert assertion_from_string("file://a.py:check") == {"type": "python", "value": "file://a.py:check"}
    assert assertion_from_string("Paris") == {"type": "equals", "value": "Paris"}
    # util/parseCommaSeparatedValues.ts: quoted fields keep commas, empty fields dropped
    assert parse_comma_values('a, "b,c" ,, d') == ["a", "b,c", "d"]


def test_javascript_number_printing():
    # Number.prototype.toString (ECMA-262 Number::toString)
    assert [js_string(v) for v in (1.0, 0.1, 1e21, 1e-7, 123456789012345680000.0, -0.000001, True, None)] == [
        "1", "0.1", "1e+21", "1e-7", "123456789012345680000", "-0.000001", "true", "null"]
