"""`json-fields` grader: strict equality at selected dot paths."""

import json

import pytest

from scoreboard.cases.case import Case
from scoreboard.errors import ConfigError
from scoreboard.graders.json_fields import JsonFieldsGrader
from scoreboard.graders.registry import build_grader

INVOICE = {
    "vendor": {"name": "Acme", "country": "DE"},
    "total": 120.5,
    "currency": "EUR",
    "line_items": [{"sku": "A", "quantity": 2}, {"sku": "B", "quantity": 1}],
    "tags": ["x", "y"],
}


def out(value):
    return json.dumps(value)


@pytest.mark.parametrize("spec, fields", [
    ("json-fields", []),
    ({"json-fields": None}, []),
    ({"json-fields": ["a", "b.0.c"]}, ["a", "b.0.c"]),
    ({"json-fields": {"fields": ["a"]}}, ["a"]),
    ({"json-fields": {"fields": []}}, []),
    ({"json-fields": {}}, []),
])
def test_option_forms_and_round_trip(spec, fields):
    g = build_grader(spec)
    assert isinstance(g, JsonFieldsGrader) and g.needs_expected
    assert g.options == {"fields": fields}
    again = build_grader(g.spec)
    assert again.options == g.options and again.spec == g.spec


@pytest.mark.parametrize("value", [
    {"fields": ["a"], "strict": True}, {"paths": ["a"]}, "a", 3, ["a", "a"], [""], [1],
    {"fields": "a"},
])
def test_bad_options(value):
    with pytest.raises(ConfigError, match="json-fields"):
        build_grader({"json-fields": value})


def test_unknown_option_named():
    with pytest.raises(ConfigError, match="unknown option 'strict'"):
        build_grader({"json-fields": {"fields": ["a"], "strict": True}})


def test_nested_paths_and_array_indexes(ctx):
    g = build_grader({"json-fields": ["vendor.name", "line_items.0.quantity", "line_items.1.sku"]})
    grade = g.grade(ctx(out(INVOICE), INVOICE))
    assert grade.passed is True and grade.score == 1.0
    assert [f["path"] for f in grade.fields] == ["vendor.name", "line_items.0.quantity",
                                                  "line_items.1.sku"]
    assert all(f["passed"] and f["reason"] == "" for f in grade.fields)


def test_partial_match_scores_fraction(ctx):
    g = build_grader({"json-fields": ["vendor.name", "total", "currency", "line_items.0.quantity"]})
    got = json.loads(out(INVOICE))
    got["total"] = 120
    got["line_items"][0]["quantity"] = 3
    grade = g.grade(ctx(out(got), INVOICE))
    assert grade.passed is False and grade.score == 0.5
    by_path = {f["path"]: f for f in grade.fields}
    assert by_path["total"]["passed"] is False and by_path["total"]["actual"] == 120
    assert by_path["total"]["expected"] == 120.5
    assert by_path["line_items.0.quantity"]["passed"] is False
    assert "2/4 fields match" in grade.reason and "total" in grade.reason


def test_selected_array_compares_in_order_and_in_full(ctx):
    g = build_grader({"json-fields": ["tags"]})
    assert g.grade(ctx(out({"tags": ["x", "y"]}), INVOICE)).passed is True
    assert g.grade(ctx(out({"tags": ["y", "x"]}), INVOICE)).passed is False
    grade = g.grade(ctx(out({"tags": ["x", "y", "z"]}), INVOICE))
    assert grade.passed is False and "expected 2 items, got 3" in grade.fields[0]["reason"]
    assert g.grade(ctx(out({"tags": ["x"]}), INVOICE)).passed is False


def test_missing_output_field_fails_that_field(ctx):
    g = build_grader({"json-fields": ["vendor.country", "currency", "line_items.5.sku"]})
    ref = dict(INVOICE, line_items=[{"sku": str(i)} for i in range(6)])
    grade = g.grade(ctx(out({"vendor": {"name": "Acme"}, "currency": "EUR", "line_items": []}), ref))
    assert grade.passed is False and grade.score == pytest.approx(1 / 3)
    missing = [f for f in grade.fields if not f["passed"]]
    assert [f["path"] for f in missing] == ["vendor.country", "line_items.5.sku"]
    assert all(f["reason"] == "missing" and f["actual"] is None for f in missing)


def test_null_actual_is_not_missing(ctx):
    grade = build_grader({"json-fields": ["a"]}).grade(ctx('{"a": null}', {"a": None}))
    assert grade.passed is True


def test_strict_types_per_field(ctx):
    g = build_grader({"json-fields": ["n", "b", "s"]})
    grade = g.grade(ctx('{"n": 1.0, "b": 1, "s": 1}', {"n": 1, "b": True, "s": "1"}))
    assert grade.passed is False and grade.score == 0.0
    assert all(not f["passed"] for f in grade.fields)


def test_all_top_level_keys_when_no_fields(ctx):
    g = build_grader("json-fields")
    ref = {"a": 1, "b": {"c": [1, 2]}}
    grade = g.grade(ctx('{"a": 1, "b": {"c": [1, 2]}, "extra": true}', ref))
    assert grade.passed is True and [f["path"] for f in grade.fields] == ["a", "b"]
    grade = g.grade(ctx('{"a": 1, "b": {"c": [2, 1]}}', ref))
    assert grade.passed is False and grade.score == 0.5


def test_check_case_reference_missing_selected_field():
    g = build_grader({"json-fields": ["vendor.name", "line_items.3.quantity"]})
    case = Case(id="inv-1", input="x", expected=INVOICE, source="cases.jsonl", line=7)
    with pytest.raises(ConfigError, match="line_items.3.quantity") as info:
        g.check_case(case)
    err = info.value
    assert err.field == "expected.line_items.3.quantity"
    assert err.case_id == "inv-1" and err.file == "cases.jsonl" and err.line == 7
    build_grader({"json-fields": ["vendor.name"]}).check_case(case)


def test_check_case_needs_expected_and_mapping_without_fields():
    with pytest.raises(ConfigError, match="expected"):
        build_grader({"json-fields": ["a"]}).check_case(Case(id="c", input="x"))
    with pytest.raises(ConfigError, match="mapping"):
        build_grader("json-fields").check_case(Case(id="c", input="x", expected=[1, 2]))
    with pytest.raises(ConfigError, match="mapping"):
        build_grader("json-fields").check_case(Case(id="c", input="x", expected={}))
    build_grader("json-fields").check_case(Case(id="c", input="x", expected={"a": 1}))


def test_non_json_output_records_every_field_failed(ctx):
    g = build_grader({"json-fields": ["vendor.name", "total"]})
    grade = g.grade(ctx("Sorry, I can't help with that.", INVOICE))
    assert grade.passed is False and grade.score == 0.0
    assert "not valid JSON" in grade.reason
    assert [f["reason"] for f in grade.fields] == ["output is not JSON"] * 2
    assert grade.fields[0]["expected"] == "Acme" and grade.fields[0]["actual"] is None


def test_none_text_fails(ctx):
    grade = build_grader({"json-fields": ["a"]}).grade(ctx(None, {"a": 1}))
    assert grade.passed is False and grade.fields[0]["reason"] == "output is not JSON"


def test_fenced_output_accepted_two_blocks_rejected(ctx):
    g = build_grader({"json-fields": ["a"]})
    assert g.grade(ctx('```json\n{"a": 1}\n```', {"a": 1})).passed is True
    grade = g.grade(ctx('```json\n{"a": 1}\n```\n```json\n{"a": 1}\n```', {"a": 1}))
    assert grade.passed is False and "fenced blocks" in grade.reason


def test_output_of_wrong_shape_fails_not_raises(ctx):
    g = build_grader({"json-fields": ["a.b"]})
    for text in ("[1, 2]", '"str"', "3", '{"a": 5}', '{"a": [1]}'):
        grade = g.grade(ctx(text, {"a": {"b": 1}}))
        assert grade.passed is False and grade.fields[0]["reason"] == "missing"


def test_reference_without_field_is_unassessed_at_grade_time(ctx):
    grade = build_grader({"json-fields": ["zz"]}).grade(ctx('{"zz": 1}', {"a": 1}))
    assert grade.passed is None
