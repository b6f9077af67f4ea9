"""`json-valid` and `json-schema` graders."""

import pytest

from scoreboard.errors import ConfigError
from scoreboard.graders.jsonschema_ import JsonSchemaGrader, JsonValidGrader
from scoreboard.graders.registry import build_grader

SCHEMA = {
    "type": "object",
    "required": ["name", "items"],
    "properties": {
        "name": {"type": "string"},
        "items": {"type": "array", "items": {"type": "object", "required": ["qty"],
                                             "properties": {"qty": {"type": "integer",
                                                                    "minimum": 1}}}},
        "due": {"type": "string", "format": "date"},
    },
}


# --- json-valid ---------------------------------------------------------------------------

def test_json_valid_spec():
    g = build_grader("json-valid")
    assert isinstance(g, JsonValidGrader) and g.spec == "json-valid"
    assert build_grader(g.spec).options == g.options == {}
    with pytest.raises(ConfigError):
        build_grader({"json-valid": {"strict": True}})


@pytest.mark.parametrize("text", ['{"a": 1}', "[1, 2]", "  {}\n", '```json\n{"a": 1}\n```',
                                  'Sure:\n```\n[1]\n```\nDone.', "42", '"s"', "null"])
def test_json_valid_passes(ctx, text):
    assert build_grader("json-valid").grade(ctx(text)).passed is True


@pytest.mark.parametrize("text, reason", [
    ("not json", "not valid JSON"), ("{'a': 1}", "not valid JSON"), ("", "empty"),
    (None, "no output text"), ('```json\n{"a": 1}\n```\n```json\n{}\n```', "2 fenced blocks"),
    ('{"a": 1} trailing', "not valid JSON"),
])
def test_json_valid_fails(ctx, text, reason):
    grade = build_grader("json-valid").grade(ctx(text))
    assert grade.passed is False and reason in grade.reason


def test_json_valid_structured_output(ctx):
    assert build_grader("json-valid").grade(ctx(None, json={"a": 1})).passed is True


# --- json-schema --------------------------------------------------------------------------

def test_schema_forms_and_round_trip():
    g1 = build_grader({"json-schema": SCHEMA})
    g2 = build_grader({"json-schema": {"schema": SCHEMA}})
    assert isinstance(g1, JsonSchemaGrader)
    assert g1.options == g2.options == {"schema": SCHEMA}
    again = build_grader(g1.spec)
    assert again.options == g1.options and again.spec == g1.spec


@pytest.mark.parametrize("value, message", [
    (None, "JSON Schema mapping"), ("object", "JSON Schema mapping"), ({}, "non-empty"),
    ({"schema": {"type": "object"}, "strict": True}, "unknown option 'strict'"),
    ({"type": "objekt"}, "invalid schema"),
    ({"schema": {"properties": {"a": {"minimum": "1"}}}}, "invalid schema at properties/a/minimum"),
    ({"schema": 3}, "non-empty mapping"),
])
def test_bad_schema(value, message):
    with pytest.raises(ConfigError, match=message):
        build_grader({"json-schema": value})


def test_schema_passes(ctx):
    g = build_grader({"json-schema": SCHEMA})
    assert g.grade(ctx('{"name": "x", "items": [{"qty": 1}], "due": "2024-01-31"}')).passed is True
    assert g.grade(ctx('```json\n{"name": "x", "items": []}\n```')).passed is True


def test_schema_errors_with_paths(ctx):
    g = build_grader({"json-schema": SCHEMA})
    grade = g.grade(ctx('{"name": 5, "items": [{"qty": 0}, {}]}'))
    assert grade.passed is False and grade.reason.startswith("3 schema errors:")
    assert "$.name: 5 is not of type 'string'" in grade.reason
    assert "$.items[0].qty" in grade.reason and "$.items[1]: 'qty' is a required" in grade.reason


def test_schema_error_list_is_capped(ctx):
    g = build_grader({"json-schema": {"type": "array", "items": {"type": "integer"}}})
    grade = g.grade(ctx('["a", "b", "c", "d", "e"]'))
    assert grade.passed is False and grade.reason.startswith("5 schema errors:")
    assert grade.reason.endswith("(+2 more)") and grade.reason.count("$[") == 3


def test_schema_checks_formats(ctx):
    g = build_grader({"json-schema": SCHEMA})
    grade = g.grade(ctx('{"name": "x", "items": [], "due": "31/01/2024"}'))
    assert grade.passed is False and "$.due" in grade.reason


def test_schema_single_error_wording(ctx):
    grade = build_grader({"json-schema": {"type": "object"}}).grade(ctx("[1]"))
    assert grade.passed is False and grade.reason.startswith("1 schema error: $:")


@pytest.mark.parametrize("text", ["nope", None, "", '```json\n{}\n```\n```json\n{}\n```'])
def test_schema_non_json_fails(ctx, text):
    grade = build_grader({"json-schema": SCHEMA}).grade(ctx(text))
    assert grade.passed is False and grade.reason


def test_unresolvable_ref_fails_not_raises(ctx):
    g = build_grader({"json-schema": {"$ref": "#/$defs/missing"}})
    grade = g.grade(ctx('{"a": 1}'))
    assert grade.passed is False and "could not finish" in grade.reason
