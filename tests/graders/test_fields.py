"""`fields` grader: typed gold-set comparison with tolerances and normalisation."""

import json

import pytest

from scoreboard.cases.case import Case
from scoreboard.errors import ConfigError
from scoreboard.graders.fields import FieldsGrader, parse_date
from scoreboard.graders.registry import build_grader


def grader(*fields):
    return build_grader({"fields": {"fields": list(fields)}})


def one(ctx, field, expected, actual):
    """Grade a single field `v`: returns the field record."""
    g = grader(dict(field, path="v"))
    grade = g.grade(ctx(json.dumps({"v": actual}), {"v": expected}))
    assert grade.passed is grade.fields[0]["passed"]
    return grade.fields[0]


# --- options -----------------------------------------------------------------------------

def test_canonical_options_and_round_trip():
    g = build_grader({"fields": [
        {"path": "total", "type": "number", "tolerance": 0.01},
        {"path": "count", "type": "integer"},
        {"path": "due", "type": "date", "tolerance": 2},
        {"path": "name", "type": "string", "normalize": ["strip", "casefold"]},
        {"path": "paid", "type": "bool"},
        {"path": "tags", "type": "set", "normalize": "casefold"},
        {"path": "steps", "type": "list"},
    ]})
    assert isinstance(g, FieldsGrader) and g.needs_expected
    assert g.options == {"fields": [
        {"path": "total", "type": "number", "tolerance": 0.01, "relative": False},
        {"path": "count", "type": "integer", "tolerance": 0},
        {"path": "due", "type": "date", "tolerance": 2},
        {"path": "name", "type": "string", "normalize": ["casefold", "strip"]},
        {"path": "paid", "type": "bool"},
        {"path": "tags", "type": "set", "normalize": ["casefold"]},
        {"path": "steps", "type": "list", "normalize": []},
    ]}
    again = build_grader(g.spec)
    assert again.options == g.options and again.spec == g.spec


def test_bare_list_is_accepted():
    g = build_grader({"fields": [{"path": "a", "type": "bool"}]})
    assert g.options == {"fields": [{"path": "a", "type": "bool"}]}


@pytest.mark.parametrize("value, message", [
    (None, "non-empty list"),
    ([], "non-empty list"),
    ({"fields": []}, "non-empty list"),
    ({"fields": [{"path": "a", "type": "bool"}], "mode": "x"}, "unknown option 'mode'"),
    ([{"path": "a", "type": "float"}], "unknown type"),
    ([{"path": "a"}], "unknown type"),
    ([{"type": "bool"}], "path"),
    (["a"], "mapping"),
    ([{"path": "a", "type": "number", "tolerance": -0.1}], "non-negative"),
    ([{"path": "a", "type": "date", "tolerance": -1}], "non-negative"),
    ([{"path": "a", "type": "date", "tolerance": 1.5}], "whole days"),
    ([{"path": "a", "type": "number", "tolerance": "1"}], "non-negative"),
    ([{"path": "a", "type": "number", "tolerance": True}], "non-negative"),
    ([{"path": "a", "type": "number", "relative": "yes"}], "relative"),
    ([{"path": "a", "type": "string", "normalize": ["lower"]}], "unknown normalize"),
    ([{"path": "a", "type": "string", "normalize": 3}], "normalize"),
    ([{"path": "a", "type": "string", "tolerance": 1}], "does not apply"),
    ([{"path": "a", "type": "integer", "relative": True}], "does not apply"),
    ([{"path": "a", "type": "number", "normalize": ["strip"]}], "does not apply"),
    ([{"path": "a", "type": "bool", "typo": 1}], "does not apply"),
    ([{"path": "a", "type": "bool"}, {"path": "a", "type": "string"}], "twice"),
])
def test_bad_options(value, message):
    with pytest.raises(ConfigError, match=message):
        build_grader({"fields": value})


# --- number -------------------------------------------------------------------------------

def test_number_absolute_tolerance_bound(ctx):
    f = {"type": "number", "tolerance": 0.01}
    assert one(ctx, f, 10.0, 10.0)["passed"]
    assert one(ctx, f, 10.0, 10.01)["passed"]      # exactly at the bound (float noise)
    assert one(ctx, f, 10.0, 9.99)["passed"]
    assert not one(ctx, f, 10.0, 10.011)["passed"]  # just past
    assert not one(ctx, f, 10.0, 9.989)["passed"]


def test_number_integer_bound_exact(ctx):
    f = {"type": "number", "tolerance": 5}
    assert one(ctx, f, 100, 105)["passed"]
    assert one(ctx, f, 100, 95.0)["passed"]
    record = one(ctx, f, 100, 105.001)
    assert not record["passed"] and "tolerance 5" in record["reason"]


def test_number_zero_tolerance_allows_int_float_and_float_noise(ctx):
    f = {"type": "number"}
    assert one(ctx, f, 1, 1.0)["passed"]  # typed comparison: both numbers
    g = grader({"path": "v", "type": "number"})
    assert g.grade(ctx('{"v": 0.30000000000000004}', {"v": 0.3})).passed is True
    assert not one(ctx, f, 1, 1.001)["passed"]


def test_number_relative_tolerance_bound(ctx):
    f = {"type": "number", "tolerance": 0.1, "relative": True}
    assert one(ctx, f, 200, 220)["passed"]          # |20| <= 0.1 * 200
    assert one(ctx, f, 200, 180)["passed"]
    assert not one(ctx, f, 200, 220.01)["passed"]
    assert one(ctx, f, -50, -55)["passed"]
    assert not one(ctx, f, -50, -55.01)["passed"]
    assert one(ctx, f, 0, 0)["passed"] and not one(ctx, f, 0, 0.001)["passed"]
    assert "relative tolerance" in one(ctx, f, 200, 300)["reason"]


@pytest.mark.parametrize("actual, word", [
    ("10", "string"), (True, "bool"), (None, "null"), ([10], "array"), ({"x": 1}, "object"),
])
def test_number_rejects_non_numbers(ctx, actual, word):
    record = one(ctx, {"type": "number", "tolerance": 100}, 10, actual)
    assert not record["passed"] and record["reason"] == f"expected a number, got {word}"


def test_number_nan_and_infinity_fail(ctx):
    g = grader({"path": "v", "type": "number", "tolerance": 1e9})
    assert g.grade(ctx('{"v": NaN}', {"v": 1})).passed is False
    # NaN and Infinity are not JSON: the output fails to parse, with the reason
    grade = g.grade(ctx('{"v": Infinity}', {"v": 1}))
    assert grade.passed is False and "Infinity is not valid JSON" in grade.reason


# --- integer ------------------------------------------------------------------------------

def test_integer_values_and_tolerance(ctx):
    f = {"type": "integer", "tolerance": 2}
    assert one(ctx, f, 10, 12)["passed"] and one(ctx, f, 10, 8)["passed"]
    assert not one(ctx, f, 10, 13)["passed"]
    assert one(ctx, {"type": "integer"}, 3, 3)["passed"]
    assert one(ctx, {"type": "integer"}, 3, 3.0)["passed"]  # an integral JSON number
    assert not one(ctx, {"type": "integer"}, 3, 4)["passed"]


def test_integer_rejects_fractions_bools_strings(ctx):
    f = {"type": "integer", "tolerance": 5}
    assert one(ctx, f, 2, 1.5)["reason"] == "expected an integer, got 1.5"
    assert one(ctx, f, 1, True)["reason"] == "expected an integer, got bool"
    assert one(ctx, f, 1, "1")["reason"] == "expected an integer, got string"


# --- date ---------------------------------------------------------------------------------

def test_parse_date():
    assert str(parse_date("2024-03-01")) == "2024-03-01"
    assert str(parse_date("2024-03-01T23:30:00Z")) == "2024-03-01"
    assert str(parse_date("2024-03-01 08:00:00+02:00")) == "2024-03-01"
    for bad in ("2024-02-30", "01/03/2024", "20240301", "2024-03-01Tgarbage", "", None, 20240301):
        assert parse_date(bad) is None


def test_date_tolerance_in_days(ctx):
    f = {"type": "date", "tolerance": 2}
    assert one(ctx, f, "2024-03-01", "2024-03-03")["passed"]
    assert one(ctx, f, "2024-03-01", "2024-02-28")["passed"]   # leap year: 2 days back
    record = one(ctx, f, "2024-03-01", "2024-03-04")
    assert not record["passed"] and "3 days apart" in record["reason"]
    assert one(ctx, {"type": "date"}, "2024-03-01", "2024-03-01T18:00:00")["passed"]
    assert not one(ctx, {"type": "date"}, "2024-03-01", "2024-03-02")["passed"]


def test_date_rejects_non_dates(ctx):
    f = {"type": "date", "tolerance": 10}
    assert "ISO date" in one(ctx, f, "2024-03-01", "March 1st")["reason"]
    assert one(ctx, f, "2024-03-01", 20240301)["reason"] == "expected an ISO date string, got integer"


# --- string -------------------------------------------------------------------------------

def test_string_exact_by_default(ctx):
    f = {"type": "string"}
    assert one(ctx, f, "Acme GmbH", "Acme GmbH")["passed"]
    assert not one(ctx, f, "Acme GmbH", "acme gmbh")["passed"]
    assert not one(ctx, f, "Acme GmbH", " Acme GmbH")["passed"]
    assert one(ctx, f, "1", 1)["reason"] == "expected a string, got integer"


@pytest.mark.parametrize("normalize, actual, passed", [
    (["casefold"], "ACME gmbh", True),
    (["casefold"], " acme gmbh", False),
    (["strip"], "  Acme GmbH\n", True),
    (["strip"], "Acme  GmbH", False),
    (["collapse-whitespace"], "Acme \t\n GmbH", True),
    (["collapse-whitespace"], "Acme GmbH ", False),
    (["casefold", "strip", "collapse-whitespace"], "  ACME \n gmbh ", True),
    (["casefold"], "ACME GMBH", True),
])
def test_string_normalisation(ctx, normalize, actual, passed):
    assert one(ctx, {"type": "string", "normalize": normalize}, "Acme GmbH", actual)["passed"] is passed


def test_string_normalisation_applies_to_both_sides(ctx):
    f = {"type": "string", "normalize": ["casefold", "strip"]}
    assert one(ctx, f, "  STRASSE ", "straße")["passed"]  # casefold maps ß to ss


# --- bool ---------------------------------------------------------------------------------

def test_bool_strict(ctx):
    f = {"type": "bool"}
    assert one(ctx, f, True, True)["passed"] and one(ctx, f, False, False)["passed"]
    assert one(ctx, f, True, False)["reason"] == "expected true, got false"
    assert one(ctx, f, True, 1)["reason"] == "expected a bool, got integer"
    assert one(ctx, f, False, "false")["reason"] == "expected a bool, got string"


# --- set / list ---------------------------------------------------------------------------

def test_set_ignores_order_and_duplicates(ctx):
    f = {"type": "set"}
    assert one(ctx, f, ["a", "b", "c"], ["c", "a", "b"])["passed"]
    assert one(ctx, f, ["a", "b"], ["b", "a", "b", "a"])["passed"]
    assert one(ctx, f, ["a", "a", "b"], ["b", "a"])["passed"]
    record = one(ctx, f, ["a", "b"], ["a", "c"])
    assert not record["passed"] and 'missing ["b"]' in record["reason"]
    assert 'unexpected ["c"]' in record["reason"]
    assert one(ctx, f, [], [])["passed"]
    assert one(ctx, f, ["a"], "a")["reason"] == "expected an array, got string"


def test_set_normalises_string_items_only(ctx):
    f = {"type": "set", "normalize": ["casefold", "strip"]}
    assert one(ctx, f, ["Red", "Blue"], [" blue", "RED "])["passed"]
    assert not one(ctx, f, [1, True], [1.0, 1])["passed"]     # strict item typing
    assert one(ctx, f, [1, True, None], [None, True, 1])["passed"]
    assert one(ctx, f, [{"a": 1}, "X"], ["x", {"a": 1}])["passed"]


def test_list_in_order_and_in_full(ctx):
    f = {"type": "list", "normalize": ["casefold"]}
    assert one(ctx, f, ["Step A", "Step B"], ["step a", "STEP B"])["passed"]
    record = one(ctx, f, ["a", "b"], ["b", "a"])
    assert not record["passed"] and record["reason"].startswith("item 0:")
    assert one(ctx, f, ["a", "b"], ["a"])["reason"] == "expected 2 items, got 1"
    assert not one(ctx, f, ["a", "b"], ["a", "b", "c"])["passed"]
    assert not one(ctx, {"type": "list"}, ["a"], ["A"])["passed"]


# --- grader-level behaviour ---------------------------------------------------------------

REF = {"invoice": {"total": 99.5, "date": "2024-01-31"},
       "items": [{"sku": "A1", "qty": 2}], "paid": False}
SPECS = [
    {"path": "invoice.total", "type": "number", "tolerance": 0.5},
    {"path": "invoice.date", "type": "date", "tolerance": 1},
    {"path": "items.0.sku", "type": "string", "normalize": ["casefold"]},
    {"path": "items.0.qty", "type": "integer"},
    {"path": "paid", "type": "bool"},
]


def test_nested_fields_score_fraction(ctx):
    g = grader(*SPECS)
    got = {"invoice": {"total": 100.0, "date": "2024-02-01"},
           "items": [{"sku": "a1", "qty": 3}], "paid": "no"}
    grade = g.grade(ctx(json.dumps(got), REF))
    assert grade.passed is False and grade.score == pytest.approx(3 / 5)
    failed = {f["path"]: f for f in grade.fields if not f["passed"]}
    assert set(failed) == {"items.0.qty", "paid"}
    assert failed["paid"]["actual"] == "no" and failed["paid"]["expected"] is False
    assert "3/5 fields match" in grade.reason
    assert g.grade(ctx(json.dumps(REF), REF)).passed is True


def test_missing_output_field(ctx):
    grade = grader(*SPECS).grade(ctx('{"invoice": {"total": 99.5}}', REF))
    missing = [f for f in grade.fields if f["reason"] == "missing"]
    assert len(missing) == 4 and all(f["actual"] is None for f in missing)
    assert grade.score == pytest.approx(1 / 5)


def test_null_reference_needs_null_output(ctx):
    g = grader({"path": "po", "type": "string"})
    assert g.grade(ctx('{"po": null}', {"po": None})).passed is True
    grade = g.grade(ctx('{"po": "123"}', {"po": None}))
    assert grade.passed is False and "expected null" in grade.reason
    assert g.grade(ctx("{}", {"po": None})).fields[0]["reason"] == "missing"


def test_non_json_output(ctx):
    grade = grader(*SPECS).grade(ctx("total is 99.50", REF))
    assert grade.passed is False and grade.score == 0.0
    assert [f["reason"] for f in grade.fields] == ["output is not JSON"] * 5
    assert build_grader({"fields": SPECS}).grade(ctx(None, REF)).passed is False


def test_fenced_output(ctx):
    assert grader(*SPECS).grade(ctx(f"```json\n{json.dumps(REF)}\n```", REF)).passed is True


def test_check_case_reference_missing_field():
    g = grader(*SPECS)
    g.check_case(Case(id="c", input="x", expected=REF))
    ref = {"invoice": {"total": 1}, "items": [{"sku": "A", "qty": 1}], "paid": True}
    with pytest.raises(ConfigError, match="invoice.date") as info:
        g.check_case(Case(id="c9", input="x", expected=ref, source="gold.yaml", line=4))
    assert info.value.field == "expected.invoice.date" and info.value.case_id == "c9"
    with pytest.raises(ConfigError, match="expected"):
        g.check_case(Case(id="c", input="x"))


@pytest.mark.parametrize("spec, value", [
    ({"type": "number"}, "12"), ({"type": "number"}, True), ({"type": "integer"}, 1.5),
    ({"type": "date"}, "31/01/2024"), ({"type": "bool"}, 0), ({"type": "string"}, 5),
    ({"type": "set"}, "a"), ({"type": "list"}, {"a": 1}),
])
def test_check_case_reference_of_wrong_type(spec, value):
    g = grader(dict(spec, path="v"))
    with pytest.raises(ConfigError, match="not a valid") as info:
        g.check_case(Case(id="c", input="x", expected={"v": value}))
    assert info.value.field == "expected.v"
