"""is-json, contains-json, numeric equals, and the documented semantic options of exact,
json-valid and contains: each test pins scoreboard's default and the other tool's alternative."""

import pytest

from scoreboard.graders.json_more import extract_json_objects
from scoreboard.graders.registry import build_grader

FENCED = '```json\n{"a": 1}\n```'


def test_fenced_json_scoreboard_accepts_promptfoo_does_not(ctx):
    assert build_grader("json-valid").grade(ctx(FENCED)).passed is True          # scoreboard
    assert build_grader({"json-valid": {"fences": False}}).grade(ctx(FENCED)).passed is False  # promptfoo is-json
    assert build_grader("is-json").grade(ctx(FENCED)).passed is False
    assert build_grader("exact").grade(ctx(FENCED, {"a": 1})).passed is True
    assert build_grader({"exact": {"fences": False}}).grade(ctx(FENCED, {"a": 1})).passed is False
    assert build_grader({"exact": {"fences": False}}).grade(ctx('{"a": 1}', {"a": 1})).passed is True


def test_numeric_typing_scoreboard_strict_promptfoo_and_evals_by_value(ctx):
    assert build_grader("exact").grade(ctx('{"a": 1.0}', {"a": 1})).passed is False
    loose = build_grader({"exact": {"numeric_types": False}})
    assert loose.grade(ctx('{"a": 1.0}', {"a": 1})).passed is True
    assert loose.grade(ctx('{"a": [2.0, true]}', {"a": [2, True]})).passed is True
    assert loose.grade(ctx('{"a": 1}', {"a": True})).passed is False  # a bool is never a number
    assert loose.grade(ctx('{"a": 1.5}', {"a": 1})).passed is False


def test_whitespace_around_numbers_scoreboard_parses_promptfoo_compares_text(ctx):
    assert build_grader("exact").grade(ctx(" 42", 42)).passed is True
    text = build_grader({"exact": {"scalar_as_text": True}})
    assert text.grade(ctx(" 42", 42)).passed is False
    assert text.grade(ctx("42", 42)).passed is True
    assert text.grade(ctx("true", True)).passed is True


def test_case_folding_casefold_versus_lowercase(ctx):
    # casefold maps "ß" to "ss"; JavaScript's toLowerCase (promptfoo's icontains) does not
    folded = build_grader({"contains": {"patterns": ["STRASSE"], "ignore_case": True}})
    lower = build_grader({"contains": {"patterns": ["STRASSE"], "ignore_case": True, "fold": "lower"}})
    assert folded.grade(ctx("Hauptstraße 1")).passed is True
    assert lower.grade(ctx("Hauptstraße 1")).passed is False
    assert lower.grade(ctx("hauptstrasse 1")).passed is True


def test_default_specs_stay_short():
    assert build_grader({"exact": {"fences": True, "numeric_types": True}}).spec == "exact"
    assert build_grader({"json-valid": {"fences": True}}).spec == "json-valid"


def test_contains_json_finds_objects_in_prose(ctx):
    text = 'Sure! Here it is: {"name": "Ada", "age": 36} and also {"x": [1, {"y": 2}]}. Bye {not json'
    assert extract_json_objects(text) == [{"name": "Ada", "age": 36}, {"x": [1, {"y": 2}]}]
    assert extract_json_objects("no braces here") == []
    g = build_grader("contains-json")
    assert g.grade(ctx(text)).passed is True
    assert g.grade(ctx("[1, 2, 3] arrays are not objects")).passed is False
    schema = build_grader({"contains-json": {"schema": {"type": "object", "required": ["age"]}}})
    assert schema.grade(ctx(text)).passed is True
    assert schema.grade(ctx('only {"name": "Ada"}')).passed is False


def test_is_json_with_schema(ctx):
    g = build_grader({"is-json": {"schema": {"type": "object", "required": ["a"]}}})
    assert g.grade(ctx('  {"a": 1}\n')).passed is True  # JSON.parse allows surrounding whitespace
    assert g.grade(ctx('{"b": 1}')).passed is False
    assert g.grade(ctx("{bad")).passed is False


@pytest.mark.parametrize("text,passed", [("42", True), (" 42.0 ", True), ("42.4", True), ("42.6", False),
                                         ("forty-two", False), ("", False)])
def test_equals_with_tolerance(ctx, text, passed):
    assert build_grader({"equals": {"tolerance": 0.5}}).grade(ctx(text, 42)).passed is passed


def test_equals_relative_and_value(ctx):
    g = build_grader({"equals": {"value": 200, "tolerance": 0.01, "relative": True}})
    assert g.grade(ctx("201.9")).passed is True and g.grade(ctx("202.1")).passed is False
    assert build_grader({"equals": 3}).grade(ctx("3")).passed is True


def test_starts_with(ctx):
    assert build_grader({"starts-with": "Yes"}).grade(ctx("Yes, indeed")).passed is True
    assert build_grader({"starts-with": "Yes"}).grade(ctx(" Yes")).passed is False  # no trimming
    assert build_grader({"starts-with": {"value": "yes", "ignore_case": True}}).grade(ctx("YES")).passed is True
    assert build_grader("starts-with").grade(ctx("Paris is big", "Paris")).passed is True
