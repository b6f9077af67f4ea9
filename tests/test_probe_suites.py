"""Suites as people write them, run end to end against a loopback OpenAI-compatible server:
prompt templates with loops, conditionals and filters; defaults a case's own vars override;
custom Python and JavaScript graders (a score with a reason, a bool, ones that raise, return
garbage, hang or return a huge reason); named and derived metrics with a gate; and the one-line
errors a mistake in such a suite gets. Every report is verified again, as a user's CI would."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from scoreboard.engine.options import RunOptions
from scoreboard.engine.pipeline import run
from scoreboard.errors import ConfigError
from scoreboard.record.verify import verify_report
from scoreboard.suite.load import load_suite

FIXTURES = Path(__file__).parent / "fixtures" / "probe_suites"
needs_node = pytest.mark.skipif(shutil.which("node") is None, reason="needs Node.js")


@pytest.fixture
def suite_dir(tmp_path, fake_provider, monkeypatch):
    """The fixture suites copied into tmp_path, their openai subject pointed at the fake (which
    echoes the prompt it gets)."""
    folder = tmp_path / "suites"
    shutil.copytree(FIXTURES, folder, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setenv("OPENAI_BASE_URL", fake_provider.base_url + "/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-probe-placeholder")
    return folder


def attempts(report: dict) -> dict[tuple[str, str], dict]:
    return {(a["case_id"], a["variant"]): a for a in report["attempts"]}


@needs_node
def test_templates_custom_graders_metrics_and_gates_end_to_end(suite_dir, fake_provider):
    suite = load_suite(suite_dir / "suite.yaml")
    inputs = {c.id: c.inputs for c in suite.cases}
    # per-case vars win over the defaults', and the loop, conditional and filters render
    assert inputs["café-1"] == {"plain": "Aufgabe: Hauptstadt? Stadt: Zürich (de)",
                                "fancy": "Auf Deutsch: ZÜRICH\n1. Käse\n2. Schokolade\n\n"}
    assert inputs["東京"]["plain"] == "Aufgabe: Hauptstadt? Stadt: 東京 (en)"
    assert inputs["naïve"]["fancy"] == "In EN: SÃO PAULO\n(keine)\n"
    report = run(suite, RunOptions(progress=False)).report
    # what the server received is what was rendered, non-ASCII intact
    sent = {r["json"]["messages"][-1]["content"] for r in fake_provider.requests}
    assert sent == {text for case in inputs.values() for text in case.values()}

    by = attempts(report)
    plain = by[("café-1", "plain")]
    assert plain["status"] == "passed"
    scored, boolean, js = plain["grades"]
    assert (scored["passed"], scored["score"], scored["reason"]) == (True, 0.8, "ville Zürich trouvée")
    assert scored["named_scores"] == {"fidelity": 0.5} and scored["weight"] == 2
    assert (boolean["passed"], boolean["score"]) == (True, 1.0)
    assert (js["passed"], js["reason"]) == (True, "länge 39") and js["score"] == pytest.approx(0.39)
    # weighted: (0.8 x 2 + 1 + 0.39) / 4; quality is the weighted mean of the grades naming it
    assert plain["score"] == pytest.approx((0.8 * 2 + 1 + 0.39) / 4)
    assert plain["metrics"]["quality"] == pytest.approx((0.8 * 2 + 1) / 3)
    fancy = by[("café-1", "fancy")]  # the upper-cased city is not the expected one
    assert fancy["status"] == "failed" and fancy["grades"][0]["reason"] == "ville Zürich absente"
    # the case's own grader is added to the defaults'
    assert [g["grader"] for g in by[("naïve", "plain")]["grades"]] == ["python", "python", "javascript", "python"]
    assert by[("naïve", "plain")]["metrics"]["has_paulo"] == 1.0

    figures = report["summary"]["variants"]
    assert figures["plain"]["metrics"]["quality"]["value"] == pytest.approx((0.8 * 2 + 1) / 3)
    assert figures["plain"]["derived_metrics"]["double_quality"]["value"] == pytest.approx(2 * (0.8 * 2 + 1) / 3)
    gates = {(g["variant"], g["metric"]): g["passed"] for g in report["gates"]}
    assert gates == {("plain", "quality"): True, ("fancy", "quality"): False}
    # verify recomputes every grade, the javascript ones included
    checked = verify_report(report)
    assert checked.ok, checked.mismatches[:3]


def test_broken_python_graders_are_data_and_verify_recomputes_them(suite_dir):
    report = run(load_suite(suite_dir / "broken.yaml"), RunOptions(progress=False)).report
    # every attempt recorded; the case naming its own grader does not get the suite's `graders:`
    assert {a["case_id"]: a["status"] for a in report["attempts"]} == {"café-1": "error", "東京": "error",
                                                                       "naïve": "passed"}
    grades = report["attempts"][0]["grades"]
    assert grades[0] == {"grader": "contains", "passed": True, "score": 1.0, "reason": "found all 1",
                         "fields": None}
    reasons = [g["reason"] for g in grades[1:]]
    assert reasons[0] == "grader raised RuntimeError: kaputt — ünïcödé"
    assert "returned str" in reasons[1] and "returned None" in reasons[2] and "returned 1.5" in reasons[3]
    # a huge reason is cut, saying how long it was, not copied into every record
    assert grades[5]["passed"] is True and len(reasons[4]) < 4100
    assert reasons[4].endswith("… (cut: 1,000,000 characters)")
    assert reasons[5] == "grader raised TimeoutError: timed out after 0.2 s"
    assert report["attempts"][0]["error"] == "grader 'python' raised RuntimeError: kaputt — ünïcödé"
    # verify grades again under the same time limit: the slow grader times out there too
    checked = verify_report(report)
    assert checked.ok, checked.mismatches[:3]


def test_a_grader_that_never_returns_does_not_hold_up_the_run_or_verify(tmp_path):
    (tmp_path / "cases.jsonl").write_text('{"id": "q", "input": "x", "expected": "x"}\n')
    (tmp_path / "hang.py").write_text("import threading\n\n\ndef hang(output):\n    threading.Event().wait()\n")
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump({
        "name": "hang", "cases": "cases.jsonl", "subject": "mock", "output_dir": "out", "formats": ["json"],
        "graders": [{"python": {"file": "hang.py", "function": "hang", "timeout_s": 0.3}}]}))
    # in a process of its own: before the fix the command never exited (its executor thread was waited for)
    done = subprocess.run([sys.executable, "-m", "scoreboard", "run", "suite.yaml", "--no-progress"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60, env=dict(os.environ))
    assert done.returncode == 2, done.stderr
    (report_path,) = (tmp_path / "out" / "hang").glob("*.json")
    report = json.loads(report_path.read_text(encoding="utf-8"))
    assert report["attempts"][0]["grades"][0]["reason"] == "grader raised TimeoutError: timed out after 0.3 s"
    done = subprocess.run([sys.executable, "-m", "scoreboard", "verify", str(report_path)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60, env=dict(os.environ))
    assert done.returncode == 0, done.stdout + done.stderr


@needs_node
def test_javascript_scores_stay_in_the_unit_interval_and_errors_read_as_text(tmp_path):
    (tmp_path / "cases.jsonl").write_text('{"id": "q", "input": "Réponse", "expected": "Réponse"}\n')
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump({
        "name": "js", "cases": "cases.jsonl", "subject": "mock", "output_dir": "out", "formats": ["json"],
        "graders": [{"javascript": "({pass: true, score: 5, reason: 'big', namedScores: {a: 7}})", "metric": "m"},
                    {"javascript": "output.length - 20", "metric": "m"},
                    {"javascript": "undefinedName.foo"}]}, allow_unicode=True))
    report = run(load_suite(tmp_path / "suite.yaml"), RunOptions(progress=False)).report
    big, negative, thrown = report["attempts"][0]["grades"]
    assert (big["passed"], big["score"], big["raw_score"], big["named_scores"]) == (True, 1.0, 5.0, {"a": 1.0})
    assert (negative["passed"], negative["score"], negative["raw_score"]) == (False, 0.0, -13.0)
    assert thrown["passed"] is False and thrown["reason"].startswith("Custom function threw error: ")
    metrics = report["summary"]["variants"]["mock"]["metrics"]
    assert metrics["m"]["value"] == 0.5 and 0 <= metrics["m"]["ci"]["low"] <= metrics["m"]["ci"]["high"] <= 1
    assert metrics["a"]["value"] == 1.0
    checked = verify_report(report)
    assert checked.ok, checked.mismatches[:3]


def write(folder: Path, suite: dict, cases: list[dict], files: dict | None = None) -> Path:
    (folder / "cases.jsonl").write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in cases),
                                        encoding="utf-8")
    for name, text in (files or {}).items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    path = folder / "suite.yaml"
    path.write_text(yaml.safe_dump({"name": "e", "cases": "cases.jsonl", "subject": "mock", "output_dir": "out",
                                    **suite}, allow_unicode=True), encoding="utf-8")
    return path


@pytest.mark.parametrize("template, field, named", [
    ("{{ user.name }}", "vars.user.name", "'user.name'"),
    ('{{ user["name"] }}', "vars.user.name", "'user.name'"),
    ("{{ items[5] }}", "vars.items.5", "'items.5'"),
    ("{{ vars.town }}", "vars.town", "'town'"),
    ("{{ town }}", "vars.town", "'town'"),
    ("{{ (items | list).foo }}", "vars", "'list object' has no attribute 'foo'"),
])
def test_a_missing_variable_or_attribute_is_named_by_its_path(tmp_path, template, field, named):
    path = write(tmp_path, {"prompt": template}, [{"id": "zoë", "vars": {"user": {"first": "Zoë"}, "items": ["ä"]}}])
    with pytest.raises(ConfigError) as info:
        load_suite(path)
    assert (info.value.case_id, info.value.line, info.value.field) == ("zoë", 1, field)
    assert named in str(info.value) and "\n" not in str(info.value)


def test_every_case_missing_a_variable_is_reported_not_only_the_first(tmp_path):
    path = write(tmp_path, {"prompt": "Hallo {{ city }}"},
                 [{"id": "a", "vars": {"city": "Köln"}}, {"id": "b", "vars": {"town": "Bern"}},
                  {"id": "c", "vars": {}}])
    with pytest.raises(ConfigError) as info:
        load_suite(path)
    errors = getattr(info.value, "errors", [info.value])
    assert [(e.case_id, e.line, e.field) for e in errors] == [("b", 2, "vars.city"), ("c", 3, "vars.city")]


def test_a_syntax_error_in_a_prompt_names_the_file_or_the_message(tmp_path):
    path = write(tmp_path, {"prompts": {"good": "{{ city }}", "bad": "@prompts/bad.txt"}},
                 [{"id": "a", "vars": {"city": "Köln"}}], {"prompts/bad.txt": "Zeile 1\nZeile 2 {{ city }\n"})
    with pytest.raises(ConfigError) as info:
        load_suite(path)
    assert info.value.field == "prompts.bad"
    assert "template syntax error on the file 'prompts/bad.txt', line 2: unexpected '}'" in str(info.value)
    path = write(tmp_path, {"prompt": [{"role": "system", "content": "ok"}, {"role": "user", "content": "{% if x %}"}]},
                 [{"id": "a", "vars": {"x": 1}}])
    with pytest.raises(ConfigError, match=r"template syntax error on message 2 \(user\), line 1: "):
        load_suite(path)


def test_mistakes_in_a_suite_are_one_line_each_exit_1_and_nothing_written(tmp_path):
    cases = [{"id": "a", "vars": {"city": "Köln"}, "graders": ["containz"]},
             {"id": "b", "vars": {"city": "Bern"}, "graders": [{"contains": "x", "weight": "schwer"}]}]
    path = write(tmp_path, {"prompt": "{{ city }}"}, cases)
    done = subprocess.run([sys.executable, "-m", "scoreboard", "run", str(path), "--no-progress"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, env=dict(os.environ))
    assert done.returncode == 1 and done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 2, lines
    assert lines[0].endswith("cases.jsonl:1, case 'a', field 'graders.0': unknown grader 'containz' (did you mean "
                             "'contains'?) (known: " + lines[0].split("(known: ")[1])
    assert lines[1].endswith("cases.jsonl:2, case 'b', field 'graders.0': grader 'contains': 'weight' is a number "
                             ">= 0, got \"schwer\"")
    assert not (tmp_path / "out").exists()
    # a grader file that is not there names the suite, the field and the file
    path = write(tmp_path, {"prompt": "{{ city }}", "graders": [{"python": "python-file:fehlt.py:check"}]},
                 [{"id": "a", "vars": {"city": "Köln"}}])
    with pytest.raises(ConfigError) as info:
        load_suite(path)
    assert (info.value.file, info.value.field) == (str(path), "graders[0]")
    assert f"python file {str(tmp_path / 'fehlt.py')!r} not found" in str(info.value)
