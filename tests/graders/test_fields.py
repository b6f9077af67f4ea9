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


def test_integer_rejects_fractions_bools_and_text_that_is_no_integer(ctx):
    f = {"type": "integer", "tolerance": 5}
    assert one(ctx, f, 2, 1.5)["reason"] == "expected an integer, got 1.5"
    assert one(ctx, f, 1, True)["reason"] == "expected an integer, got bool"
    assert one(ctx, f, 1, "twelve")["reason"] == 'expected an integer, got "twelve"'
    assert one(ctx, f, 12, "12.7")["reason"] == 'expected an integer, got "12.7"'


def test_integer_is_compared_after_int_coercion_as_origin_002(ctx):
    # origin 002: abs(int(extracted) - int(gold)) <= tolerance, so "12" equals 12.
    assert one(ctx, {"type": "integer"}, 12, "12")["passed"]
    assert one(ctx, {"type": "integer"}, 12, " 12 ")["passed"]
    assert one(ctx, {"type": "integer"}, "12", 12)["passed"]  # a gold value written as text too
    assert one(ctx, {"type": "integer", "tolerance": 5}, 60, "64")["passed"]
    assert one(ctx, {"type": "integer", "tolerance": 5}, 60, "66")["reason"] == \
        'expected 60, got "66" (off by 6, tolerance 5)'
    grader({"path": "v", "type": "integer"}).check_case(Case(id="c", input="x", expected={"v": "12"}))


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


# --- origin 002: composite fields, multisets, {field: {value: ...}} extractions -------------

RENEWAL = {"path": "renewal_terms", "type": "object", "fields": [
    {"path": "auto_renew", "type": "bool"},
    {"path": "term_length_months", "type": "integer"},
    {"path": "notice_period_days", "type": "integer", "tolerance": 5}]}
GOLD_RENEWAL = {"auto_renew": True, "term_length_months": 12, "notice_period_days": 60}


def test_composite_field_is_one_field_with_per_subfield_rules(ctx):
    f = {k: v for k, v in RENEWAL.items() if k != "path"}
    record = one(ctx, f, GOLD_RENEWAL, {"auto_renew": True, "term_length_months": "12", "notice_period_days": 64})
    assert record["passed"]  # int() coercion and the ±5 tolerance of notice_period_days
    record = one(ctx, f, GOLD_RENEWAL, {"auto_renew": True, "term_length_months": 12, "notice_period_days": 66})
    assert record["reason"] == "notice_period_days: expected 60, got 66 (off by 6, tolerance 5)"
    record = one(ctx, f, GOLD_RENEWAL, {"auto_renew": False, "term_length_months": 24, "notice_period_days": 60})
    assert record["reason"] == ("auto_renew: expected true, got false; term_length_months: expected 12, got 24 "
                                "(off by 12, tolerance 0)")
    # Both null is a match (origin 002's match_renewal_terms); one null is not.
    assert one(ctx, f, None, None)["passed"]
    assert one(ctx, f, None, GOLD_RENEWAL)["reason"].startswith("expected null, got ")
    assert one(ctx, f, GOLD_RENEWAL, None)["reason"] == "expected an object, got null"
    # A subfield missing on either side reads as null, as 002's .get() does.
    loose = {**GOLD_RENEWAL, "notice_period_days": None}
    assert one(ctx, f, loose, {"auto_renew": True, "term_length_months": 12})["passed"]
    assert one(ctx, f, GOLD_RENEWAL, {"auto_renew": True, "term_length_months": 12})["reason"] == \
        "notice_period_days: expected 60, got null"
    # One field in the score, however many subfields.
    g = grader(dict(RENEWAL))
    grade = g.grade(ctx(json.dumps({"renewal_terms": GOLD_RENEWAL}), {"renewal_terms": GOLD_RENEWAL}))
    assert grade.passed and len(grade.fields) == 1 and grade.fields[0]["path"] == "renewal_terms"


def test_composite_options_and_reference_checked():
    spec = build_grader({"fields": [RENEWAL]}).options["fields"][0]
    assert spec["fields"][2] == {"path": "notice_period_days", "type": "integer", "tolerance": 5}
    with pytest.raises(ConfigError, match="needs 'fields'"):
        build_grader({"fields": [{"path": "r", "type": "object"}]})
    with pytest.raises(ConfigError, match="subfield 'a' is listed twice"):
        build_grader({"fields": [{"path": "r", "type": "object", "fields": [{"path": "a", "type": "bool"}] * 2}]})
    with pytest.raises(ConfigError, match="'output_path' does not apply .* inside an object"):
        build_grader({"fields": [{"path": "r", "type": "object", "fields": [
            {"path": "a", "type": "bool", "output_path": "x"}]}]})
    g = build_grader({"fields": [RENEWAL]})
    with pytest.raises(ConfigError, match="not a valid object") as info:
        g.check_case(Case(id="c", input="x", expected={"renewal_terms": {"notice_period_days": "sixty"}}))
    assert info.value.field == "expected.renewal_terms"


def test_multiset_counts_duplicates_and_ignores_order(ctx):
    for f in ({"type": "multiset"}, {"type": "list", "ordered": False}):
        assert one(ctx, f, ["Acme Corp", "Customer Inc"], ["Customer Inc", "Acme Corp"])["passed"]
        record = one(ctx, f, ["a", "a", "b"], ["a", "b"])
        assert record["reason"] == 'missing ["a"]'  # a set would call these equal
        assert one(ctx, f, ["a", "b"], ["b", "a", "a"])["reason"] == 'unexpected ["a"]'
    norm = {"type": "multiset", "normalize": ["casefold", "strip"]}  # origin 002's normalize_str
    assert one(ctx, norm, ["Acme Corp", "Customer Inc"], [" customer inc", "ACME CORP "])["passed"]
    assert build_grader({"fields": [{"path": "p", "type": "multiset"}]}).options["fields"][0] == \
        {"path": "p", "type": "list", "normalize": [], "ordered": False}


def test_empty_against_empty_matches_only_when_the_rule_says_so(ctx):
    # origin 002's match_parties: `if not extracted or not gold: return False`.
    record = one(ctx, {"type": "multiset"}, [], [])
    assert not record["passed"] and record["reason"] == "both empty: not a match (empty_matches is false)"
    assert one(ctx, {"type": "multiset", "empty_matches": True}, [], [])["passed"]
    # A set and an ordered list keep their rule (empty equals empty) unless told otherwise.
    assert one(ctx, {"type": "set"}, [], [])["passed"] and one(ctx, {"type": "list"}, [], [])["passed"]
    assert not one(ctx, {"type": "set", "empty_matches": False}, [], [])["passed"]
    assert not one(ctx, {"type": "list", "empty_matches": False}, [], [])["passed"]
    # Only a non-default choice is written into the spec, so earlier specs stay equal.
    opts = build_grader({"fields": [{"path": "a", "type": "set", "empty_matches": True},
                                    {"path": "b", "type": "multiset", "empty_matches": True}]}).options
    assert opts["fields"][0] == {"path": "a", "type": "set", "normalize": []}
    assert opts["fields"][1]["empty_matches"] is True
    with pytest.raises(ConfigError, match="'empty_matches' must be true or false"):
        build_grader({"fields": [{"path": "a", "type": "set", "empty_matches": "yes"}]})


# origin 002's gold file and an extraction in its `{field: {value: ...}}` shape (parties plain).
GOLD_002 = {"parties": ["Acme Corp", "Customer Inc"], "effective_date": "2024-03-15", "term_length_months": 12,
            "renewal_terms": GOLD_RENEWAL, "governing_law": "Delaware"}
RULES_002 = [{"path": "parties", "type": "multiset", "normalize": ["casefold", "strip"]},
             {"path": "effective_date", "type": "date", "tolerance": 1},
             {"path": "term_length_months", "type": "integer"},
             RENEWAL,
             {"path": "governing_law", "type": "string", "normalize": ["casefold", "strip"]}]


def test_extraction_shaped_field_value_is_graded_against_plain_gold(ctx):
    extraction = {"parties": ["customer inc", "Acme Corp"],
                  "effective_date": {"value": "2024-03-16", "confidence": 0.9},
                  "term_length_months": {"value": "12"},
                  "renewal_terms": {"value": {"auto_renew": True, "term_length_months": 12, "notice_period_days": 57}},
                  "governing_law": {"value": " delaware"}}
    g = build_grader({"fields": {"fields": RULES_002, "value_key": "value"}})
    grade = g.grade(ctx(json.dumps(extraction), GOLD_002))
    assert grade.passed, grade.reason
    assert [f["actual"] for f in grade.fields][1:3] == ["2024-03-16", "12"]
    assert grade.reason == "5/5 fields match"
    wrong = {**extraction, "governing_law": {"value": "New York"}, "effective_date": {"value": "2024-03-18"}}
    grade = g.grade(ctx(json.dumps(wrong), GOLD_002))
    assert grade.score == pytest.approx(3 / 5)  # origin 002: correct / total fields
    # Without value_key the wrapped values are objects, not the gold's types.
    plain = build_grader({"fields": RULES_002}).grade(ctx(json.dumps(extraction), GOLD_002))
    assert plain.fields[1]["reason"] == "expected an ISO date string, got object"


def test_output_path_names_where_a_field_is_in_the_output(ctx):
    g = build_grader({"fields": [{"path": "total", "type": "number", "output_path": "result.amount.value"}]})
    assert g.grade(ctx(json.dumps({"result": {"amount": {"value": 9.5}}}), {"total": 9.5})).passed
    grade = g.grade(ctx(json.dumps({"result": {}}), {"total": 9.5}))
    assert grade.fields[0]["reason"] == "missing (output path 'result.amount.value')"
    assert grade.fields[0]["path"] == "total"
    with pytest.raises(ConfigError, match="'output_path' is a non-empty dot path"):
        build_grader({"fields": [{"path": "total", "type": "number", "output_path": ""}]})
    with pytest.raises(ConfigError, match="value_key is one key name"):
        build_grader({"fields": {"fields": [{"path": "t", "type": "bool"}], "value_key": "a.b"}})
