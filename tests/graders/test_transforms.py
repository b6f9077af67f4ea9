"""Answer extraction before grading: transforms on a grader (and, through the suite, a case)."""

import asyncio

import pytest

from scoreboard.errors import ConfigError
from scoreboard.graders.registry import build_grader
from scoreboard.graders.transforms import parse_choice_answer


def _grade(g, c):
    return asyncio.run(g.grade(c))


@pytest.mark.parametrize("text,want", [
    ("ANSWER: B", "B"),
    ("I think A.\nANSWER: c", "C"),                         # uppercased
    ("ANSWER: A\nwait, no\nANSWER: D", "D"),                # the last ANSWER line wins (self-correction)
    ("The answer is ANSWER: B.", "B"),                      # loose form when no line starts with it
    ("ANSWER: A, ", "A"),                                    # a stray comma is tolerated
    ("no answer here", None),
    ("ANSWER: Z", None),                                     # outside the 4 choices
    ("ANSWER: AB", None),                                    # one letter expected
    # wrappers Inspect removes first (inspect_ai 0.3.285 parse_answers)
    ("ANSWER: **B**", "B"),
    ("ANSWER: (B)", "B"),
    ("ANSWER: $B$", "B"),
    ("Not (A), surely.\nANSWER: (C).", "C"),
])
def test_choice_parses_like_inspect_multiple_choice(text, want):
    assert parse_choice_answer(text, 4, False) == want


def test_choice_multiple_answers():
    assert parse_choice_answer("ANSWER: C, A", 4, True) == "AC"
    assert parse_choice_answer("ANSWER: B and D", 4, True) == "BD"
    assert parse_choice_answer("ANSWER: BD", 4, True) == "BD"
    assert parse_choice_answer("ANSWER: BX", 4, True) is None
    assert parse_choice_answer("ANSWER: $A, C$", 4, True) == "AC"
    assert parse_choice_answer("ANSWER: **B and D**", 4, True) == "BD"


def test_transform_feeds_the_grader_and_keeps_the_raw_output(ctx):
    g = build_grader({"exact": None, "transform": "choice"})
    c = ctx("Let me think.\nANSWER: B", "B")
    grade = _grade(g, c)
    assert grade.passed is True and grade.to_dict()["graded_output"] == "B"
    assert c.output.text == "Let me think.\nANSWER: B"  # the record keeps the raw output
    missing = _grade(g, ctx("I am not sure", "B"))
    assert missing.passed is False and "ANSWER" in missing.reason


def test_last_and_first_match(ctx):
    text = "Total: 10\nTotal: 12"
    assert _grade(build_grader({"exact": None, "transform": {"last-match": r"Total: (\d+)"}}), ctx(text, "12")).passed
    assert _grade(build_grader({"exact": None, "transform": {"first-match": r"Total: (\d+)"}}), ctx(text, "10")).passed
    assert _grade(build_grader({"exact": None, "transform": {"last-match": r"\d+"}}), ctx(text, "12")).passed


def test_json_path_and_strip_fences_in_a_chain(ctx):
    text = 'Here:\n```json\n{"answer": {"value": 42}}\n```'
    g = build_grader({"exact": None, "transform": ["strip-fences", {"json-path": "answer.value"}]})
    assert _grade(g, ctx(text, 42)).passed is True
    assert _grade(g, ctx('{"other": 1}', 42)).passed is False


def test_python_transform(ctx, tmp_path):
    (tmp_path / "ext.py").write_text("def last_word(text, context):\n    return text.split()[-1].strip('.')\n")
    from scoreboard.graders.code import CODE_BASE

    token = CODE_BASE.set(tmp_path)
    try:
        g = build_grader({"exact": None, "transform": "python-file:ext.py:last_word"})
    finally:
        CODE_BASE.reset(token)
    assert _grade(g, ctx("The capital is Paris.", "Paris")).passed is True
    again = build_grader(g.spec)  # the saved spec names the file by absolute path with its hash
    assert _grade(again, ctx("It is Lyon.", "Lyon")).passed is True


def test_bad_transforms_are_config_errors():
    for bad in ("no-such", {"last-match": "("}, {"choice": {"choices": 0}}, {"json-path": ""}, {"a": 1, "b": 2}):
        with pytest.raises(ConfigError):
            build_grader({"exact": None, "transform": bad})
