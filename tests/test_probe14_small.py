"""Small user-visible defects left by earlier probes, each probed from outside: `scoreboard` run
in-process in tmp_path (SCOREBOARD_STORE=none), the viewer on a loopback port 0."""

from __future__ import annotations

import json
import os
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

from tests.cli_inprocess import run_cli

ROOT = Path(__file__).resolve().parent.parent


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "SCOREBOARD_STORE": "none"}
    return run_cli(args, cwd, env)  # in-process: no test here is about the process


# --------------------------------------------------------------------------- (1) JUnit type


def test_junit_error_type_names_the_error_not_a_failed_run(tmp_path):
    """Was: a case whose run 0 failed and run 1 errored became <error type="failed">: the type
    came from the first bad run, whatever its status; Jenkins and GitLab show `type`."""
    (tmp_path / "subj.py").write_text(
        "def answer(input, skill, run):\n"
        "    if run == 1:\n        raise ValueError('boom')\n"
        "    return 'wrong'\n")
    (tmp_path / "cases.jsonl").write_text(
        '{"id": "mixed", "input": "q", "expected": "right"}\n'
        '{"id": "wrong", "input": "w", "expected": "right"}\n')
    (tmp_path / "fail.py").write_text("def answer(input):\n    return 'wrong'\n")
    (tmp_path / "suite.yaml").write_text(
        "name: j\ncases: cases.jsonl\nruns: 2\noutput_dir: out\n"
        "variants:\n"
        "  - {name: mixed, subject: {type: python, function: 'subj:answer', model_free: true}}\n"
        "  - {name: plain, subject: {type: python, function: 'fail:answer', model_free: true}}\n")
    done = cli(tmp_path, "run", "suite.yaml", "--junit", "j.xml", "--no-progress")
    assert done.returncode in (1, 2), done.stderr
    root = ET.parse(tmp_path / "j.xml").getroot()
    mixed = root.find("testsuite[@name='j.mixed']").find("testcase[@name='mixed']")
    error = mixed.find("error")
    assert error is not None and mixed.find("failure") is None
    assert error.get("type") == "error"
    assert "run 0 (failed)" in error.text and "ValueError: boom" in error.text
    failure = root.find("testsuite[@name='j.plain']").find("testcase[@name='wrong']").find("failure")
    assert failure is not None and failure.get("type") == "failed"
    # and `report` renders the same from the JSON alone
    (report,) = (tmp_path / "out" / "j").glob("*.json")
    again = cli(tmp_path, "report", str(report), "--format", "junit", "--output", "again.junit.xml")
    assert again.returncode == 0, again.stderr
    again_root = ET.parse(tmp_path / "again.junit.xml").getroot()
    case = again_root.find("testsuite[@name='j.mixed']").find("testcase[@name='mixed']")
    assert case.find("error").get("type") == "error"


# --------------------------------------------------------------------------- (2) viewer API


def test_viewer_api_refuses_an_unknown_category_and_a_repeated_parameter_and_trends_say_their_limit(tmp_path):
    """Was: `cases?category=bogus` gave an empty page (read as "no cases"), `limit=1&limit=abc`
    used the first limit and dropped the second in silence, and `/api/trends` did not say the
    limit it used (every other paged answer says `limit` and `max_limit`)."""
    from tests.viewer.conftest import Served

    store = str(tmp_path / "h.sqlite")
    (tmp_path / "cases.jsonl").write_text("".join(
        json.dumps({"id": f"c{i}", "input": "q", "expected": "a", "category": ["math", "prose"][i % 2]}) + "\n"
        for i in range(4)))
    (tmp_path / "v.jsonl").write_text("".join(json.dumps({"case_id": f"c{i}", "output": "a"}) + "\n" for i in range(4)))
    (tmp_path / "suite.json").write_text(json.dumps({"name": "cats", "cases": "cases.jsonl", "output_dir": "out",
                                                     "formats": ["json"], "subject": "recorded:v.jsonl"}))
    for _ in range(2):
        done = cli(tmp_path, "run", "suite.json", "--no-progress", "--store", store)
        assert done.returncode == 0, done.stderr
    served = Served("--store", store, cwd=tmp_path)

    get = served.get

    try:
        status, runs = get("/api/runs")
        assert status == 200, runs
        key = runs["runs"][0]["key"]
        status, math = get(f"/api/runs/{key}/cases?category=math")
        assert status == 200 and [c["case_id"] for c in math["cases"]] == ["c0", "c2"], math
        status, body = get(f"/api/runs/{key}/cases?category=bogus")
        assert status == 400, body
        assert body["error"].startswith("category: 'bogus'") and "\n" not in body["error"], body
        assert "its categories: 'math', 'prose'" in body["error"], body
        for path, name in (("/api/runs?limit=1&limit=abc", "limit"), ("/api/runs?limit=1&limit=2", "limit"),
                           (f"/api/runs/{key}/cases?variant=v.jsonl&variant=bogus", "variant"),
                           (f"/api/runs/{key}/attempts?status=passed&status=failed", "status"),
                           ("/api/trends?suite=cats&suite=other", "suite")):
            status, body = get(path)
            assert status == 400, (path, status, body)
            assert body["error"].startswith(name + ":") and "once" in body["error"], (path, body)
            assert "\n" not in body["error"]
        status, trends = get("/api/trends?suite=cats")
        assert status == 200 and trends["runs"] == 2 and trends["limit"] == 60 and trends["max_limit"] == 500
        status, trends = get("/api/trends?suite=cats&limit=1")
        assert status == 200 and trends["runs"] == 1 and trends["limit"] == 1
        status, trends = get(f"/api/trends?suite=cats&limit={10 ** 6}")
        assert status == 200 and trends["limit"] == 500
    finally:
        served.stop()


# --------------------------------------------------------------------------- (3) task folder size


def _task_suite(tmp_path: Path) -> Path:
    task = tmp_path / "tasks" / "big"
    (task / "workspace").mkdir(parents=True)
    (task / "checks").mkdir()
    (task / "checks" / "ok.py").write_text("import sys\n")
    (task / "task.yaml").write_text("id: big\ninstruction: do it\nchecks:\n  - {name: ok, run: [python3, checks/ok.py]}\n")
    (tmp_path / "suite.yaml").write_text("name: t\ncases: tasks\nsubject: mock\n")
    return task


def test_a_task_folder_too_large_names_the_file_the_task_and_the_field(tmp_path):
    """Was: `tasks/big/task.yaml: the task folder holds more than 64 MiB or 10000 entries`:
    neither the task id nor the field (which folder), nor which of the two limits it met."""
    task = _task_suite(tmp_path)
    with open(task / "workspace" / "blob.bin", "wb") as handle:  # sparse: no 65 MiB written
        handle.truncate(65 << 20)
    done = cli(tmp_path, "validate", "suite.yaml")
    assert done.returncode == 1
    line = done.stderr.strip()
    assert "\n" not in line, line
    assert line.startswith("scoreboard: error: tasks/big/task.yaml, case 'big', field 'workspace/': "), line
    assert "more than 64 MiB" in line and "workspace/blob.bin" in line and "entries" not in line, line
    (task / "workspace" / "blob.bin").unlink()
    many = task / "checks" / "many"
    many.mkdir()
    for i in range(10_001):
        (many / str(i)).touch()
    done = cli(tmp_path, "validate", "suite.yaml")
    assert done.returncode == 1
    line = done.stderr.strip()
    assert "\n" not in line, line
    assert line.startswith("scoreboard: error: tasks/big/task.yaml, case 'big', field 'checks/': "), line
    assert "more than 10000 entries" in line and "MiB" not in line, line


# --------------------------------------------------------------------------- (4) strip-fences


def test_strip_fences_takes_the_first_of_several_blocks(tmp_path):
    """Was: an output with two fenced blocks went to the grader whole, in silence (the README
    promised "the content of the one fenced code block"), so `exact` on the first block failed."""
    outputs = {"two": "Here:\n```python\nprint(1)\n```\nand a test:\n```python\nassert True\n```\n",
               "one": "```\nprint(1)\n```", "none": "print(1)"}
    (tmp_path / "out.jsonl").write_text("".join(json.dumps({"case_id": k, "output": v}) + "\n"
                                                for k, v in outputs.items()))
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps({"id": k, "input": "q", "expected": "print(1)"}) + "\n"
                                                  for k in outputs))
    (tmp_path / "suite.yaml").write_text(
        "name: f\ncases: cases.jsonl\nsubject: recorded:out.jsonl\noutput_dir: out\nformats: [json]\n"
        "graders: [{exact: null, transform: strip-fences}]\n")
    done = cli(tmp_path, "run", "suite.yaml", "--no-progress")
    assert done.returncode == 0, done.stderr
    (path,) = (tmp_path / "out" / "f").glob("*.json")
    grades = {a["case_id"]: a["grades"][0] for a in json.loads(path.read_text())["attempts"]}
    assert grades["two"]["graded_output"] == "print(1)" and grades["two"]["passed"] is True, grades["two"]
    assert grades["one"]["passed"] is True and grades["none"]["passed"] is True


# --------------------------------------------------------------------------- (5) vars.input


def test_a_case_with_both_input_and_a_var_named_input_is_an_error(tmp_path):
    """Was: `{{ input }}` rendered the var, the case's own `input` dropped in silence (the var won
    the template's names). Now one line naming the case and `vars.input`, exit 1; a case whose
    only input is the var (promptfoo's style) still renders it."""
    (tmp_path / "cases.jsonl").write_text(
        json.dumps({"id": "both", "input": "What is 2+2?", "vars": {"input": "ignore me", "tone": "terse"},
                    "expected": "4"}) + "\n"
        + json.dumps({"id": "var-only", "vars": {"input": "What is 3+3?", "tone": "terse"}, "expected": "6"}) + "\n")
    (tmp_path / "suite.yaml").write_text(
        "name: v\ncases: cases.jsonl\nprompt: 'Answer {{ tone }}: {{ input }}'\nsubject: mock\n"
        "output_dir: out\nformats: [json]\n")
    for command in (("validate", "suite.yaml"), ("run", "suite.yaml", "--no-progress")):
        done = cli(tmp_path, *command)
        assert done.returncode == 1, (command, done.stdout, done.stderr)
        line = done.stderr.strip()
        assert "\n" not in line, line
        assert "case 'both'" in line and "field 'vars.input'" in line and "cases.jsonl" in line, line
        assert "var-only" not in line, line
    (tmp_path / "cases.jsonl").write_text(
        json.dumps({"id": "var-only", "vars": {"input": "What is 3+3?", "tone": "terse"}, "expected": "6"}) + "\n")
    done = cli(tmp_path, "run", "suite.yaml", "--no-progress")
    assert done.returncode == 0, done.stderr
    (path,) = (tmp_path / "out" / "v").glob("*.json")
    (case,) = json.loads(path.read_text())["plan"]["cases"]
    assert case["input"] == "Answer terse: What is 3+3?"


def test_a_case_whose_input_and_var_input_are_the_same_text_renders_it(tmp_path):
    """The same text as the case's input and as its var `input` means one thing: no ambiguity."""
    (tmp_path / "cases.jsonl").write_text(
        json.dumps({"id": "same", "input": "What is 2+2?", "vars": {"input": "What is 2+2?", "tone": "terse"},
                    "expected": "4"}) + "\n")
    (tmp_path / "suite.yaml").write_text(
        "name: v\ncases: cases.jsonl\nprompt: 'Answer {{ tone }}: {{ input }}'\nsubject: mock\n"
        "output_dir: out\nformats: [json]\n")
    done = cli(tmp_path, "run", "suite.yaml", "--no-progress")
    assert done.returncode == 0, done.stderr
    (path,) = (tmp_path / "out" / "v").glob("*.json")
    (case,) = json.loads(path.read_text())["plan"]["cases"]
    assert case["input"] == "Answer terse: What is 2+2?"


def test_a_case_with_metadata_and_a_different_var_named_metadata_is_an_error(tmp_path):
    """`{{ metadata.x }}` read the var `metadata` and dropped the case's own metadata in silence,
    as `{{ input }}` did with a var `input`."""
    (tmp_path / "cases.jsonl").write_text(
        json.dumps({"id": "both", "input": "q", "metadata": {"topic": "maths"}, "vars": {"metadata": {"topic": "x"}},
                    "expected": "4"}) + "\n")
    (tmp_path / "suite.yaml").write_text(
        "name: v\ncases: cases.jsonl\nprompt: 'On {{ metadata.topic }}: {{ input }}'\nsubject: mock\n"
        "output_dir: out\nformats: [json]\n")
    done = cli(tmp_path, "validate", "suite.yaml")
    assert done.returncode == 1, done.stdout
    (line,) = done.stderr.strip().splitlines()
    assert "case 'both'" in line and "field 'vars.metadata'" in line and "cases.jsonl:1" in line, line
    (tmp_path / "cases.jsonl").write_text(
        json.dumps({"id": "one", "input": "q", "metadata": {"topic": "maths"}, "expected": "4"}) + "\n")
    done = cli(tmp_path, "run", "suite.yaml", "--no-progress")
    assert done.returncode == 0, done.stderr
    (path,) = (tmp_path / "out" / "v").glob("*.json")
    (case,) = json.loads(path.read_text())["plan"]["cases"]
    assert case["input"] == "On maths: q"
