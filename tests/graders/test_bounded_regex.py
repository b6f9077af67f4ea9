"""User regexes are matched with a time bound (scoreboard.bounded_regex): `re` cannot be
interrupted, so `^(a|aa)+$` on 60 a's and a b (Fibonacci(60) paths) hung a run for good, deaf
to Ctrl-C. Now the match stops, the grade says so (not assessed), the other cases run on, and
ordinary patterns give exactly what `re` gives."""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

from scoreboard import bounded_regex
from scoreboard.bounded_regex import RegexTimeout, compile_bounded

ROOT = Path(__file__).resolve().parents[2]
RUNAWAY = r"^(a|aa)+$"
RUNAWAY_TEXT = "a" * 60 + "b"


def test_a_runaway_match_stops(monkeypatch):
    monkeypatch.setattr(bounded_regex, "MATCH_TIMEOUT_S", 0.05)
    for method in ("search", "fullmatch", "match"):
        with pytest.raises(RegexTimeout, match="catastrophic backtracking"):
            getattr(compile_bounded(RUNAWAY), method)(RUNAWAY_TEXT)
    with pytest.raises(RegexTimeout):
        compile_bounded(r"(a|aa)+$").finditer(RUNAWAY_TEXT)


@pytest.mark.parametrize("flags", [0, re.IGNORECASE, re.MULTILINE | re.DOTALL, re.ASCII, re.VERBOSE])
def test_ordinary_patterns_match_as_re_does(flags):
    patterns = [r"\d+", r"^h\w*", r"(?P<w>\w+)\s+(?P=w)", r"[^\W\d_]+", r"colou?r", r"a.b", r"^$",
                r"(?<=x)y", r"\bcat\b", r"é+", r"(?i:AB)c", r"[a-z]{2,3}?", r"\s*$", r"(a)|(b)"]
    rng = random.Random(3)
    texts = ["", "hello world", "Hello\nhi 12 345", "the the cat", "axb a\nb", "ÉÉé colour color",
             "xy", "AbC abc", "ab\n", "b"] + ["".join(rng.choice("ab \nxyé1") for _ in range(20)) for _ in range(20)]
    for pattern in patterns:
        ours, theirs = compile_bounded(pattern, flags), re.compile(pattern, flags)
        for text in texts:
            a, b = ours.search(text), theirs.search(text)
            assert (a is None) == (b is None), (pattern, text)
            if a is not None:
                assert a.span() == b.span() and a.groups() == b.groups(), (pattern, text)
            assert [m.span() for m in ours.finditer(text)] == [m.span() for m in theirs.finditer(text)]
            assert bool(ours.fullmatch(text)) == bool(theirs.fullmatch(text))


def test_invalid_patterns_keep_re_errors():
    with pytest.raises(re.error):
        compile_bounded("(unclosed")


def test_a_runaway_regex_grader_is_not_assessed_and_the_run_goes_on(tmp_path):
    cases = [{"id": "runaway", "input": RUNAWAY_TEXT, "grader": {"regex": RUNAWAY}},
             {"id": "fine", "input": "hello", "grader": {"regex": "^h"}}]
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run([sys.executable, "-m", "scoreboard", "run", "--cases", "cases.jsonl", "--subject",
                           "mock", "--output", "r.json", "--no-progress"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads((tmp_path / "r.json").read_text())
    by_id = {a["case_id"]: a for a in report["attempts"]}
    grade = by_id["runaway"]["grades"][0]
    assert grade["passed"] is None and "catastrophic backtracking" in grade["reason"]
    assert by_id["fine"]["status"] == "passed"


SCHEMAS = [
    {"type": "object", "properties": {"a": {"type": "string", "pattern": "^a+$"}}, "additionalProperties": False},
    {"type": "object", "patternProperties": {"^x": {"type": "integer"}, "y$": {"type": "string"}},
     "additionalProperties": False},
    {"type": "object", "patternProperties": {"^x": {"type": "integer"}}, "additionalProperties": {"type": "null"}},
    {"$schema": "http://json-schema.org/draft-04/schema#", "type": "object",
     "properties": {"b": {"pattern": "\\d"}}, "additionalProperties": False},
]
INSTANCES = [{}, {"a": "aaa"}, {"a": "ab"}, {"a": "a", "z": 1}, {"x1": 1, "oky": "s"}, {"x1": "no", "q": 2},
             {"x": 1, "z": None}, {"b": "5"}, {"b": "five", "c": 1, "d": 2}, "not an object"]


def test_json_schema_keywords_that_search_behave_as_jsonschema_and_stop(monkeypatch):
    from jsonschema.validators import validator_for as plain

    from scoreboard.bounded_regex import validator_for

    for schema in SCHEMAS:
        ours, theirs = validator_for(schema)(schema), plain(schema)(schema)
        for instance in INSTANCES:
            assert sorted(e.message for e in ours.iter_errors(instance)) == \
                sorted(e.message for e in theirs.iter_errors(instance)), (schema, instance)
    monkeypatch.setattr(bounded_regex, "MATCH_TIMEOUT_S", 0.05)
    runaway = {"type": "string", "pattern": RUNAWAY}
    with pytest.raises(RegexTimeout):
        list(validator_for(runaway)(runaway).iter_errors(RUNAWAY_TEXT))
    keys = {"type": "object", "patternProperties": {RUNAWAY: {}}, "additionalProperties": False}
    with pytest.raises(RegexTimeout):
        list(validator_for(keys)(keys).iter_errors({RUNAWAY_TEXT: 1}))
