"""`exact` grader and the strict_equal helper."""

import pytest

from scoreboard.cases.case import Case
from scoreboard.errors import ConfigError
from scoreboard.graders.exact import ExactGrader, difference, json_type, strict_equal
from scoreboard.graders.registry import build_grader


def test_registry_builds_exact():
    g = build_grader("exact")
    assert isinstance(g, ExactGrader)
    assert g.needs_expected and g.options == {} and g.spec == "exact"
    assert build_grader(g.spec).options == g.options


def test_exact_rejects_options():
    with pytest.raises(ConfigError):
        build_grader({"exact": {"ignore_case": True}})


def test_check_case_needs_expected():
    with pytest.raises(ConfigError, match="expected"):
        build_grader("exact").check_case(Case(id="c", input="x"))
    build_grader("exact").check_case(Case(id="c", input="x", expected="y"))


@pytest.mark.parametrize("a, b, equal", [
    (True, 1, False), (1, True, False), (False, 0, False),
    (1, 1.0, False), ("1", 1, False), (None, 0, False), (None, False, False),
    (1, 1, True), (1.5, 1.5, True), ("a", "a", True), (None, None, True), (True, True, True),
    ([1, 2], [2, 1], False), ([1, 2], [1, 2, 3], False), ([1, [2, 3]], [1, [2, 3]], True),
    ({"a": 1, "b": [True]}, {"b": [True], "a": 1}, True),
    ({"a": 1}, {"a": 1, "b": 2}, False), ({"a": 1, "b": 2}, {"a": 1}, False),
    ({"a": {"b": 1}}, {"a": {"b": 1.0}}, False), ([], {}, False), ("", None, False),
])
def test_strict_equal(a, b, equal):
    assert strict_equal(a, b) is equal
    assert strict_equal(b, a) is equal


def test_difference_names_the_path():
    found = difference({"items": [{"q": 1}, {"q": 2}]}, {"items": [{"q": 1}, {"q": 2.0}]})
    assert found is not None and found.startswith("at items.1.q:") and "integer" in found
    assert "missing key 'b'" in difference({"a": 1, "b": 2}, {"a": 1})
    assert "unexpected key 'c'" in difference({"a": 1}, {"a": 1, "c": 3})
    assert "expected 2 items, got 1" in difference([1, 2], [1])


def test_json_type_names():
    assert [json_type(v) for v in (True, 1, 1.0, "s", None, [], {})] == \
        ["bool", "integer", "number", "string", "null", "array", "object"]


def test_string_expected_compares_text_exactly(ctx):
    g = build_grader("exact")
    assert g.grade(ctx("Paris", "Paris")).passed is True
    for text in ("Paris ", " Paris", "paris", "Paris\n"):
        grade = g.grade(ctx(text, "Paris"))
        assert grade.passed is False and grade.score == 0.0
        assert '"Paris"' in grade.reason


def test_string_expected_with_no_text(ctx):
    grade = build_grader("exact").grade(ctx(None, "Paris"))
    assert grade.passed is False and grade.reason == "no output text"


def test_json_expected_parses_output(ctx):
    g = build_grader("exact")
    assert g.grade(ctx('{"b": [1, 2], "a": true}', {"a": True, "b": [1, 2]})).passed is True
    assert g.grade(ctx("42", 42)).passed is True
    assert g.grade(ctx("null", None)).passed is True
    assert g.grade(ctx("  [1, 2]\n", [1, 2])).passed is True


def test_json_expected_strict_types(ctx):
    g = build_grader("exact")
    assert g.grade(ctx("1.0", 1)).passed is False
    assert g.grade(ctx("1", True)).passed is False
    assert g.grade(ctx('"1"', 1)).passed is False
    grade = g.grade(ctx('{"a": 1}', {"a": True}))
    assert grade.passed is False and "at a:" in grade.reason


def test_structured_json_output_is_used(ctx):
    assert build_grader("exact").grade(ctx(None, {"a": 1}, json={"a": 1})).passed is True


def test_fenced_json_accepted_two_blocks_rejected(ctx):
    g = build_grader("exact")
    assert g.grade(ctx('Here:\n```json\n{"a": 1}\n```\n', {"a": 1})).passed is True
    two = '```json\n{"a": 1}\n```\nand\n```json\n{"a": 2}\n```'
    grade = g.grade(ctx(two, {"a": 1}))
    assert grade.passed is False and "2 fenced blocks" in grade.reason


def test_non_json_output_fails_without_raising(ctx):
    g = build_grader("exact")
    for text in ("not json", "", "{broken", None):
        grade = g.grade(ctx(text, {"a": 1}))
        assert grade.passed is False and grade.reason


def test_missing_expected_is_unassessed_not_failed(ctx):
    grade = build_grader("exact").grade(ctx("x"))
    assert grade.passed is None


def test_deep_nesting_compares_without_raising():
    deep = 1
    for _ in range(5000):
        deep = [deep]
    assert strict_equal(deep, [[1]]) is False and strict_equal([[1]], deep) is False
    assert difference(deep, deep) == "too deeply nested to compare"
