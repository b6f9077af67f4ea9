"""`citations`: required/forbidden source ids, unknown ids, verbatim quotes."""

from __future__ import annotations

import pytest

from scoreboard.cases.case import Case
from scoreboard.errors import ConfigError
from scoreboard.graders.citations import DEFAULT_PATTERN, CitationsGrader, paragraphs
from scoreboard.graders.grade import GradeContext
from scoreboard.graders.registry import build_grader
from scoreboard.subjects.values import Measurements, Output

SOURCES = {
    "source_1": "The lease runs for twelve months from the start date.",
    "source_2": "Rent is due on the first day of each month,\n  payable   by bank transfer.",
    "source_3": "Pets are not allowed in the building.",
}


def grade(spec, text, *, sources=SOURCES, input="question", json=None):
    g = build_grader(spec)
    case = Case(id="c1", input=input, metadata={"sources": sources} if sources is not None else {},
                source="cases.jsonl", line=4)
    g.check_case(case)
    return g.grade(GradeContext(case, Output(text=text, json=json), Measurements()))


def test_registry_and_canonical_options():
    g = build_grader("citations")
    assert type(g) is CitationsGrader
    assert g.options == {"required": [], "forbidden": [], "citation_pattern": DEFAULT_PATTERN,
                         "check_quotes": True, "normalize_whitespace": True, "min_quote_words": 3,
                         "from_input": False, "id_prefix": "source"}
    assert build_grader({"citations": ["source_1"]}).options["required"] == ["source_1"]
    again = build_grader(g.spec)
    assert again.options == g.options and again.spec == g.spec


@pytest.mark.parametrize("options, message", [
    ({"requird": ["a"]}, "unknown option 'requird'"),
    ({"required": "a", "forbidden": ["a"]}, "both required and forbidden"),
    ({"required": [""]}, "list of source ids"),
    ({"required": ["a", "a"]}, "twice"),
    ({"citation_pattern": r"\[source_\d+\]"}, "exactly one group"),
    ({"citation_pattern": r"(["}, "invalid citation_pattern"),
    ({"min_quote_words": 0}, "min_quote_words"),
    ({"min_quote_words": True}, "min_quote_words"),
    ({"check_quotes": "yes"}, "check_quotes"),
    ({"id_prefix": "no spaces"}, "id_prefix"),
    (42, "options are"),
])
def test_bad_options(options, message):
    with pytest.raises(ConfigError, match=message):
        build_grader({"citations": options})


def test_required_and_forbidden():
    spec = {"citations": {"required": ["source_1", "source_2"], "forbidden": ["source_3"]}}
    ok = grade(spec, "Twelve months [source_1]; rent monthly [source_2].")
    assert ok.passed is True and ok.score == 1.0
    assert ok.extra == {"citations": {"cited": ["source_1", "source_2"], "quotes_checked": 0}}
    missing = grade(spec, "Twelve months [source_1].")
    assert missing.passed is False and "missing citation source_2" in missing.reason
    assert missing.score == pytest.approx(2 / 3)
    forbidden = grade(spec, "Twelve months [source_1], rent [source_2], no pets [source_3].")
    assert forbidden.passed is False and "cites forbidden source source_3" in forbidden.reason


def test_grouped_citations_and_links_are_not_citations():
    spec = {"citations": {"required": ["source_1", "source_2"]}}
    assert grade(spec, "Both apply [source_1, source_2].").passed is True
    linked = grade("citations", "See [the docs](https://example.com) for more.")
    assert linked.passed is True


def test_unknown_cited_id_fails():
    result = grade("citations", "Per the contract [source_9] and [appendix].")
    assert result.passed is False
    assert "cites unknown source 'source_9'" in result.reason and "'appendix'" in result.reason


def test_verbatim_quote_passes_and_misquote_fails():
    ok = grade("citations", 'The lease "runs for twelve months from the start date." [source_1]')
    assert ok.passed is True and "1 quote(s) verbatim" in ok.reason
    curly = grade("citations", "It “runs for twelve months” [source_1].")
    assert curly.passed is True
    bad = grade("citations", 'The lease "runs for ten months from the start" [source_1]')
    assert bad.passed is False
    assert "misquoted" in bad.reason and "runs for ten months" in bad.reason and "source_1" in bad.reason
    wrong_source = grade("citations", '"Pets are not allowed" [source_1]')
    assert wrong_source.passed is False and "not verbatim in source_1" in wrong_source.reason


def test_short_quotes_are_not_checked():
    assert grade("citations", 'A "monthly" rent [source_2].').passed is True
    assert grade({"citations": {"min_quote_words": 1}}, 'A "weekly" rent [source_2].').passed is False


def test_whitespace_normalisation():
    text = '"Rent is due on the first day of each month, payable by bank transfer" [source_2]'
    assert grade("citations", text).passed is True
    strict = grade({"citations": {"normalize_whitespace": False}}, text)
    assert strict.passed is False and "misquoted" in strict.reason
    exact = '"Rent is due on the first day of each month,\n  payable   by bank transfer" [source_2]'
    assert grade({"citations": {"normalize_whitespace": False}}, exact).passed is True


def test_ellipsis_marks_an_omission():
    assert grade("citations", '"Rent is due ... by bank transfer" [source_2]').passed is True
    assert grade("citations", '"by bank transfer … Rent is due" [source_2]').passed is False


def test_quote_without_citation_must_occur_in_some_source():
    assert grade("citations", 'They wrote "Pets are not allowed in the building".').passed is True
    bad = grade("citations", 'They wrote "Dogs are welcome everywhere".')
    assert bad.passed is False and "is in no source" in bad.reason
    assert grade({"citations": {"check_quotes": False}}, 'They wrote "Dogs are welcome everywhere".').passed


def test_from_input_paragraphs():
    note = "First paragraph line one.\nline two of it.\n\n\n   \nSecond paragraph here.\r\n\r\nThird one, last."
    assert paragraphs(note) == ["First paragraph line one.\nline two of it.", "Second paragraph here.",
                                "Third one, last."]
    spec = {"citations": {"from_input": True, "required": ["source_2"], "forbidden": ["source_3"]}}
    ok = grade(spec, 'As noted, "Second paragraph here" [source_2].', sources=None, input=note)
    assert ok.passed is True
    bad = grade(spec, 'As noted, "Second paragraph there" [source_2] and [source_4].', sources=None, input=note)
    assert bad.passed is False and "misquoted" in bad.reason and "'source_4'" in bad.reason
    notes = {"citations": {"from_input": True, "id_prefix": "note", "required": ["note_1"]}}
    assert grade(notes, "See [note_1].", sources=None, input=note).passed is True


def test_sources_as_a_list():
    spec = {"citations": {"required": ["source_2"]}}
    assert grade(spec, '"beta gamma delta" [source_2]', sources=["alpha", "beta gamma delta"]).passed is True


def test_custom_pattern():
    spec = {"citations": {"citation_pattern": r"\((source_\d+)\)", "required": ["source_3"]}}
    assert grade(spec, '"Pets are not allowed" (source_3)').passed is True
    assert grade(spec, '"Pets are allowed" (source_3)').passed is False


@pytest.mark.parametrize("case, message", [
    (Case(id="c", input="x"), "metadata.sources"),
    (Case(id="c", input="x", metadata={"sources": [1, 2]}), "metadata.sources must be"),
    (Case(id="c", input="x", metadata={"sources": {"a": "text"}}), "required id 'source_1' is not a source"),
])
def test_check_case(case, message):
    g = build_grader({"citations": {"required": ["source_1"]}})
    with pytest.raises(ConfigError, match=message):
        g.check_case(case)


def test_check_case_from_input_needs_text():
    g = build_grader({"citations": {"from_input": True}})
    with pytest.raises(ConfigError, match="text input"):
        g.check_case(Case(id="c", input=None))
    g.check_case(Case(id="c", input=[{"role": "user", "content": "a\n\nb"}]))


@pytest.mark.parametrize("output", [
    Output(), Output(text=""), Output(text='"' * 501), Output(text="[" * 5000),
    Output(text='"unterminated quote [source_1]'), Output(text="“ ” [] [[source_1]] ((("),
    Output(json={"a": 1}), Output(json="plain [source_1]"),
    Output(text='"' + "word " * 10_000 + '" [source_1]'),
])
def test_never_raises_on_odd_output(output):
    g = build_grader({"citations": {"required": ["source_1"]}})
    case = Case(id="c", input="x", metadata={"sources": SOURCES})
    result = g.grade(GradeContext(case, output, Measurements()))
    assert result.passed in (True, False) and result.reason


def test_unassessed_without_sources():
    g = build_grader("citations")
    result = g.grade(GradeContext(Case(id="c", input="x"), Output(text="a"), Measurements()))
    assert result.passed is None and "no sources" in result.reason
