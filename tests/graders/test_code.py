"""Custom graders in Python: functions (module or file), inline expressions, results, errors,
time limits, and the saved spec naming the code's hash."""

import asyncio

import pytest

from scoreboard.errors import ConfigError
from scoreboard.graders.code import CODE_BASE, normalise_result
from scoreboard.graders.grade import grade_attempt
from scoreboard.graders.registry import build_grader

CODE = '''
import asyncio, time

def longer(output, context):
    return len(output) > len(context["expected"])

def half(output):
    return 0.5

def rich(output, context):
    return {"pass": context["vars"]["lang"] in output, "score": 0.75, "reason": "checked",
            "named_scores": {"tone": 0.25}}

async def later(output, context):
    await asyncio.sleep(0)
    return {"pass": None, "reason": "cannot tell"}

def boom(output, context):
    raise ValueError("bad grader")

def slow(output, context):
    time.sleep(2)
    return True

def out_of_range(output):
    return 1.5
'''


@pytest.fixture
def graders(tmp_path):
    (tmp_path / "checks.py").write_text(CODE)
    token = CODE_BASE.set(tmp_path)
    yield lambda spec: build_grader(spec)
    CODE_BASE.reset(token)


def run(g, c):
    grades, error = asyncio.run(grade_attempt([g], c))
    return grades[0], error


def test_results_follow_promptfoo_script_rules(graders, ctx):
    c = ctx("a long answer in english", "short")
    c.case.vars = {"lang": "en"}
    grade, _ = run(graders("python-file:checks.py:longer"), c)
    assert grade.passed is True and grade.score == 1.0
    grade, _ = run(graders("python-file:checks.py:half"), c)  # a number: passes when > 0
    assert grade.passed is True and grade.score == 0.5
    grade, _ = run(graders({"python": {"file": "checks.py", "function": "half", "threshold": 0.6}}), c)
    assert grade.passed is False and grade.score == 0.5
    grade, _ = run(graders("python-file:checks.py:rich"), c)
    assert grade.passed is True and grade.score == 0.75 and grade.extra == {"named_scores": {"tone": 0.25}}
    grade, _ = run(graders("python-file:checks.py:later"), c)
    assert grade.passed is None and grade.reason == "cannot tell"


def test_exceptions_and_bad_returns_are_grader_errors(graders, ctx):
    grade, error = run(graders("python-file:checks.py:boom"), ctx("x"))
    assert grade.passed is None and "ValueError: bad grader" in error
    grade, error = run(graders("python-file:checks.py:out_of_range"), ctx("x"))
    assert grade.passed is None and "[0, 1]" in error


def test_time_limit(graders, ctx):
    grade, error = run(graders({"python": {"file": "checks.py", "function": "slow", "timeout_s": 0.2}}), ctx("x"))
    assert grade.passed is None and "timed out" in error


def test_inline_expression_restricted(ctx):
    g = build_grader({"python": "len(output) < 10 and expected in output"})
    assert run(g, ctx("hi there", "hi"))[0].passed is True
    assert run(g, ctx("a very long output indeed", "hi"))[0].passed is False
    assert run(build_grader({"python": "json['a'] == 1"}), ctx('{"a": 1}'))[0].passed is True
    for bad in ("().__class__.__bases__", "__import__('os')", "(lambda: 1)()"):
        with pytest.raises(ConfigError):
            build_grader({"python": bad})
    with pytest.raises(ConfigError, match="may not use the name 'open'"):  # no such builtin in the namespace
        build_grader({"python": "open('/etc/passwd').read()"})


def test_saved_spec_names_file_and_hash_and_refuses_changed_code(graders, tmp_path):
    g = graders("python-file:checks.py:longer")
    spec = g.spec["python"]
    assert spec["file"] == str((tmp_path / "checks.py").resolve()) and len(spec["sha256"]) == 64
    assert build_grader(g.spec).spec == g.spec
    (tmp_path / "checks.py").write_text(CODE + "\n# changed\n")
    with pytest.raises(ConfigError) as info:
        build_grader(g.spec)
    assert "code changed" in str(info.value)


def test_module_function(tmp_path, ctx):
    (tmp_path / "modgrader_x.py").write_text("def ok(output):\n    return output == 'yes'\n")
    token = CODE_BASE.set(tmp_path)
    try:
        g = build_grader("python:modgrader_x:ok")
    finally:
        CODE_BASE.reset(token)
    assert g.spec["python"]["function"] == "modgrader_x:ok" and g.spec["python"]["sha256"]
    assert run(g, ctx("yes"))[0].passed is True


def test_normalise_result_edges():
    assert normalise_result(0, None, "python").passed is False
    assert normalise_result({"score": 0.0}, None, "python").passed is False
    assert normalise_result({"pass": True, "score": 0.2}, 0.5, "python").passed is False
    with pytest.raises(ValueError):
        normalise_result(None, None, "python")
    with pytest.raises(ValueError):
        normalise_result({"pass": True, "extra": 1}, None, "python")
