"""`one-of` grader."""

import pytest

from scoreboard.errors import ConfigError
from scoreboard.graders.one_of import OneOfGrader
from scoreboard.graders.registry import build_grader


@pytest.mark.parametrize("spec, options", [
    ({"one-of": ["yes", "no"]}, {"values": ["yes", "no"]}),
    ({"one-of": {"values": ["yes"]}}, {"values": ["yes"]}),
    ({"one-of": {"values": [1, True, None], "path": "answer.code"}},
     {"values": [1, True, None], "path": "answer.code"}),
])
def test_options_and_round_trip(spec, options):
    g = build_grader(spec)
    assert isinstance(g, OneOfGrader) and g.options == options
    again = build_grader(g.spec)
    assert again.options == g.options and again.spec == g.spec


@pytest.mark.parametrize("value, message", [
    (None, "options"), ("yes", "options"), ([], "non-empty"), ({"values": []}, "non-empty"),
    ({"values": "yes"}, "non-empty list"), ({"values": ["a"], "paths": "x"}, "unknown option 'paths'"),
    ({"values": ["a"], "path": ""}, "path"), ({"values": ["a"], "path": 3}, "path"),
    ([1, 2], "must be a string"),
])
def test_bad_options(value, message):
    with pytest.raises(ConfigError, match=message):
        build_grader({"one-of": value})


def test_text_exact(ctx):
    g = build_grader({"one-of": ["positive", "negative", "neutral"]})
    assert g.grade(ctx("neutral")).passed is True
    for text in ("Neutral", "neutral\n", " neutral", "neutralish"):
        grade = g.grade(ctx(text))
        assert grade.passed is False and "is not one of" in grade.reason
    assert g.grade(ctx(None)).reason == "no output text"


def test_json_path(ctx):
    g = build_grader({"one-of": {"values": ["refund", "replace"], "path": "decision.action"}})
    assert g.grade(ctx('{"decision": {"action": "refund"}}')).passed is True
    assert g.grade(ctx('```json\n{"decision": {"action": "replace"}}\n```')).passed is True
    grade = g.grade(ctx('{"decision": {"action": "escalate"}}'))
    assert grade.passed is False and '"escalate"' in grade.reason
    grade = g.grade(ctx('{"decision": {}}'))
    assert grade.passed is False and grade.reason == "missing field 'decision.action'"


def test_json_path_strict_equality(ctx):
    g = build_grader({"one-of": {"values": [1, 2], "path": "n"}})
    assert g.grade(ctx('{"n": 2}')).passed is True
    assert g.grade(ctx('{"n": 2.0}')).passed is False
    assert g.grade(ctx('{"n": true}')).passed is False
    assert g.grade(ctx('{"n": "1"}')).passed is False
    g = build_grader({"one-of": {"values": [[1, 2], {"a": None}], "path": "v"}})
    assert g.grade(ctx('{"v": [1, 2]}')).passed is True
    assert g.grade(ctx('{"v": [2, 1]}')).passed is False
    assert g.grade(ctx('{"v": {"a": null}}')).passed is True


def test_json_path_array_index_and_root(ctx):
    g = build_grader({"one-of": {"values": ["b"], "path": "items.1"}})
    assert g.grade(ctx('{"items": ["a", "b"]}')).passed is True
    assert g.grade(ctx('{"items": ["a"]}')).passed is False
    assert build_grader({"one-of": {"values": [3], "path": "$"}}).grade(ctx("3")).passed is True


def test_json_path_non_json(ctx):
    g = build_grader({"one-of": {"values": ["a"], "path": "x"}})
    for text in ("a", None, "{bad"):
        grade = g.grade(ctx(text))
        assert grade.passed is False and grade.reason
