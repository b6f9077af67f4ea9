"""Text graders: contains, not-contains, regex, not-regex."""

import pytest

from scoreboard.cases.case import Case
from scoreboard.errors import ConfigError
from scoreboard.graders.registry import build_grader
from scoreboard.graders.text import (
    ContainsGrader,
    NotContainsGrader,
    NotRegexGrader,
    RegexGrader,
)


@pytest.mark.parametrize("name, cls", [
    ("contains", ContainsGrader), ("not-contains", NotContainsGrader),
    ("regex", RegexGrader), ("not-regex", NotRegexGrader),
])
def test_registry_classes(name, cls):
    assert type(build_grader({name: "a"})) is cls


@pytest.mark.parametrize("spec, options", [
    ({"contains": "Paris"}, {"patterns": ["Paris"], "mode": "all", "ignore_case": False}),
    ({"contains": ["a", "b"]}, {"patterns": ["a", "b"], "mode": "all", "ignore_case": False}),
    ({"contains": {"values": ["a"], "mode": "any", "ignore_case": True}},
     {"patterns": ["a"], "mode": "any", "ignore_case": True}),
    ({"contains": {"patterns": "a"}}, {"patterns": ["a"], "mode": "all", "ignore_case": False}),
    ("contains", {"mode": "all", "ignore_case": False}),
    ({"contains": {"mode": "any"}}, {"mode": "any", "ignore_case": False}),
    ({"not-contains": ["x"]}, {"patterns": ["x"], "ignore_case": False}),
    ({"not-contains": {"values": ["x"], "mode": "all"}}, {"patterns": ["x"], "ignore_case": False}),
    ({"regex": r"\d+"}, {"patterns": [r"\d+"], "mode": "all", "ignore_case": False,
                         "multiline": False, "dotall": False}),
    ({"regex": {"patterns": ["^a"], "multiline": True, "dotall": True, "ignore_case": True,
                "mode": "any"}},
     {"patterns": ["^a"], "mode": "any", "ignore_case": True, "multiline": True, "dotall": True}),
    ({"not-regex": "x"}, {"patterns": ["x"], "ignore_case": False, "multiline": False,
                          "dotall": False}),
])
def test_canonical_options_and_round_trip(spec, options):
    g = build_grader(spec)
    assert g.options == options
    again = build_grader(g.spec)
    assert again.options == g.options and again.spec == g.spec


@pytest.mark.parametrize("spec, message", [
    ({"contains": {"patterns": ["a"], "foo": 1}}, "unknown option 'foo'"),
    ({"contains": {"patterns": ["a"], "multiline": True}}, "unknown option 'multiline'"),
    ({"contains": {"patterns": ["a"], "values": ["b"]}}, "not both"),
    ({"contains": {"patterns": ["a"], "mode": "some"}}, "mode"),
    ({"contains": {"patterns": ["a"], "ignore_case": "yes"}}, "ignore_case"),
    ({"contains": []}, "non-empty"),
    ({"contains": ""}, "non-empty"),
    ({"contains": ["a", 3]}, "non-empty"),
    ({"contains": 5}, "options"),
    ({"not-contains": {"patterns": ["a"], "mode": "any"}}, "does not apply"),
    ({"regex": "("}, r"invalid regex '\('"),
    ({"regex": ["ok", "[a-"]}, r"invalid regex '\[a-'"),
    ({"not-regex": {"patterns": ["a"], "dotall": 1}}, "dotall"),
])
def test_bad_options(spec, message):
    with pytest.raises(ConfigError, match=message):
        build_grader(spec)


# --- contains -----------------------------------------------------------------------------

def test_contains_all(ctx):
    g = build_grader({"contains": ["Paris", "France"]})
    assert g.grade(ctx("Paris is in France.")).passed is True
    grade = g.grade(ctx("Paris is in Texas."))
    assert grade.passed is False and grade.reason == 'not found: "France"'
    grade = g.grade(ctx("Lyon"))
    assert '"Paris"' in grade.reason and '"France"' in grade.reason


def test_contains_any(ctx):
    g = build_grader({"contains": {"values": ["yes", "oui"], "mode": "any"}})
    assert g.grade(ctx("oui, monsieur")).passed is True
    grade = g.grade(ctx("non"))
    assert grade.passed is False and '"yes"' in grade.reason and '"oui"' in grade.reason


def test_contains_case(ctx):
    assert build_grader({"contains": "paris"}).grade(ctx("PARIS")).passed is False
    g = build_grader({"contains": {"patterns": ["paris"], "ignore_case": True}})
    assert g.grade(ctx("PARIS")).passed is True
    assert build_grader({"contains": {"patterns": ["STRASSE"], "ignore_case": True}}) \
        .grade(ctx("Hauptstraße 1")).passed is True


def test_contains_no_text(ctx):
    for name in ("contains", "not-contains", "regex", "not-regex"):
        grade = build_grader({name: "a"}).grade(ctx(None))
        assert grade.passed is False and grade.reason == "no output text"


def test_contains_from_expected(ctx):
    g = build_grader("contains")
    assert g.grade(ctx("the answer is 42", "42")).passed is True
    assert g.grade(ctx("the answer is 42", ["answer", "42"])).passed is True
    assert g.grade(ctx("the answer is 41", ["answer", "42"])).passed is False


def test_expected_patterns_checked_at_check_case():
    g = build_grader("contains")
    g.check_case(Case(id="c", input="x", expected=["a", "b"]))
    with pytest.raises(ConfigError, match="expected") as info:
        g.check_case(Case(id="c", input="x"))
    assert info.value.field == "expected"
    for bad in (3, {"a": 1}, [], ["a", 2], ""):
        with pytest.raises(ConfigError, match="string or list"):
            g.check_case(Case(id="c", input="x", expected=bad))
    # fixed patterns need no reference
    build_grader({"contains": "a"}).check_case(Case(id="c", input="x"))


def test_unusable_expected_at_grade_time_is_unassessed(ctx):
    assert build_grader("contains").grade(ctx("x", {"a": 1})).passed is None
    assert build_grader("regex").grade(ctx("x", "(")).passed is None


# --- not-contains -------------------------------------------------------------------------

def test_not_contains_names_every_forbidden_hit(ctx):
    g = build_grader({"not-contains": ["password", "ssn", "secret"]})
    assert g.grade(ctx("all clear")).passed is True
    grade = g.grade(ctx("the password and the secret"))
    assert grade.passed is False
    assert grade.reason == 'forbidden patterns found: "password", "secret"'


def test_not_contains_ignore_case_and_expected(ctx):
    g = build_grader({"not-contains": {"values": ["SORRY"], "ignore_case": True}})
    assert g.grade(ctx("I'm sorry")).passed is False
    assert build_grader("not-contains").grade(ctx("fine", ["sorry"])).passed is True
    assert build_grader("not-contains").grade(ctx("so sorry", ["sorry"])).passed is False


# --- regex --------------------------------------------------------------------------------

def test_regex_search_anywhere(ctx):
    g = build_grader({"regex": r"\b\d{4}-\d{2}-\d{2}\b"})
    assert g.grade(ctx("due on 2024-03-01.")).passed is True
    grade = g.grade(ctx("due soon"))
    assert grade.passed is False and r"/\b\d{4}-\d{2}-\d{2}\b/" in grade.reason


def test_regex_all_and_any(ctx):
    g = build_grader({"regex": ["^A", "Z$"]})
    assert g.grade(ctx("A to Z")).passed is True
    grade = g.grade(ctx("A to B"))
    assert grade.passed is False and grade.reason == "not found: /Z$/"
    g = build_grader({"regex": {"patterns": ["^A", "Z$"], "mode": "any"}})
    assert g.grade(ctx("A to B")).passed is True
    assert g.grade(ctx("B to C")).passed is False


def test_regex_flags(ctx):
    assert build_grader({"regex": "^total"}).grade(ctx("x\ntotal: 3")).passed is False
    assert build_grader({"regex": {"patterns": ["^total"], "multiline": True}}) \
        .grade(ctx("x\ntotal: 3")).passed is True
    assert build_grader({"regex": "TOTAL"}).grade(ctx("total")).passed is False
    assert build_grader({"regex": {"patterns": ["TOTAL"], "ignore_case": True}}) \
        .grade(ctx("total")).passed is True
    assert build_grader({"regex": "a.b"}).grade(ctx("a\nb")).passed is False
    assert build_grader({"regex": {"patterns": ["a.b"], "dotall": True}}) \
        .grade(ctx("a\nb")).passed is True


def test_regex_from_expected_and_invalid_expected_regex():
    g = build_grader({"regex": {"ignore_case": True}})
    g.check_case(Case(id="c", input="x", expected=[r"\d+"]))
    with pytest.raises(ConfigError, match=r"invalid regex '\[x'") as info:
        g.check_case(Case(id="c7", input="x", expected="[x", source="f.yaml", line=2))
    assert info.value.field == "expected" and info.value.case_id == "c7"


def test_regex_from_expected_grades(ctx):
    g = build_grader({"regex": {"ignore_case": True}})
    assert g.grade(ctx("Order ABC-12", r"abc-\d+")).passed is True
    assert g.grade(ctx("Order ABC", r"abc-\d+")).passed is False


# --- not-regex ----------------------------------------------------------------------------

def test_not_regex(ctx):
    g = build_grader({"not-regex": [r"\d{3}-\d{2}-\d{4}", "(?i)as an ai"]})
    assert g.grade(ctx("nothing to see")).passed is True
    grade = g.grade(ctx("As an AI, your SSN is 123-45-6789"))
    assert grade.passed is False
    assert r"/\d{3}-\d{2}-\d{4}/ matched" in grade.reason and "123-45-6789" in grade.reason
    assert "/(?i)as an ai/" in grade.reason


def test_not_regex_multiline(ctx):
    g = build_grader({"not-regex": {"patterns": ["^Error"], "multiline": True}})
    assert g.grade(ctx("ok\nError: boom")).passed is False
    assert build_grader({"not-regex": "^Error"}).grade(ctx("ok\nError: boom")).passed is True
