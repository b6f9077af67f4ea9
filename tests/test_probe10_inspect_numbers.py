"""The `inspect` grader's number reader (graders/inspect_unicode.py): scoreboard's own
implementation of Inspect AI's `unicode_number_to_float`, held here to the results Inspect's own
function (inspect_ai 0.3.285, scorer/_unicode.py) gives on each row of the table. The full
comparison, 360,000 generated strings, is scripts/check_inspect_numbers.py (needs inspect_ai)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from scoreboard.cases.case import Case
from scoreboard.graders.grade import GradeContext
from scoreboard.graders.inspect_scorers import _parse_number, match_str
from scoreboard.graders.inspect_unicode import unicode_number_to_float
from scoreboard.graders.registry import build_grader
from scoreboard.subjects.values import Measurements, Output

# (input, what Inspect's unicode_number_to_float returns, or the exception it raises)
INSPECT_RESULTS = [
    ('−5', -5.0),
    ('2½', 2.5),
    ('3²', 9.0),
    ('1,234', 1.234),
    ('1,5', 1.5),
    ('十二', 12.0),
    ('一万二千', 12000.0),
    ('廿三', 23.0),
    ('١٢٣', 123.0),
    ('１２', 12.0),
    ('-', ValueError),
    ('', ValueError),
    ('1.2.3', ValueError),
    ('e5', ValueError),
    ('5', 5.0),
    ('-5', -5.0),
    ('+5', 5.0),
    ('﹣5', -5.0),
    ('－5', -5.0),
    ('＋5', 5.0),
    ('﹢5', 5.0),
    ('负五', -5.0),
    ('負5', -5.0),
    ('正五', 5.0),
    ('--5', 5.0),
    ('−-+3', 3.0),
    ('- - 5', 5.0),
    ('负负二', 2.0),
    (' \t42 \n', 42.0),
    ('½', 0.5),
    ('-½', -0.5),
    ('Ⅻ', 12.0),
    ('⑩', 10.0),
    ('十', 10.0),
    ('²', 2.0),
    ('-²', -2.0),
    ('0', 0.0),
    ('-0', -0.0),
    ('3⁻²', 0.1111111111111111),
    ('-2²', 4.0),
    ('-2³', -8.0),
    ('2⁺³', 8.0),
    ('⅔³', 0.2962962962962962),
    ('-½²', 0.25),
    ('10²,', 100.0),
    ('3²4', 324.0),
    ('⁻²', ValueError),
    ('2⁻', ValueError),
    ('0⁻¹', ValueError),
    ('1 ½', 1.5),
    ('十二⅓', 12.333333333333334),
    ('１２½', 12.5),
    ('½½', ValueError),
    ('2½3', ValueError),
    ('½ ,', 0.5),
    ('a½', ValueError),
    ('Ⅻ½', 12.5),
    ('一千二百三十四', 1234.0),
    ('一千零五', 1005.0),
    ('二〇二五', 2025.0),
    ('三点一四', 3.14),
    ('三點一四', 3.14),
    ('一点', 1.0),
    ('两百', 200.0),
    ('兩千', 2000.0),
    ('幺', 1.0),
    ('壹仟贰佰', 1200.0),
    ('十万', 100000.0),
    ('一亿', 100000000.0),
    ('一兆', 1000000000000.0),
    ('卅', 30.0),
    ('卌二', 42.0),
    ('廿一万', 210000.0),
    ('3万', 30000.0),
    ('12万', 20000.0),
    ('二零十', 20.0),
    ('一.五', 1.5),
    ('一．五', 1.5),
    ('1.5一', 1.51),
    ('一点二點三', ValueError),
    ('一,二', 1.2),
    ('一e5', 100000.0),
    ('零', 0.0),
    ('百', 100.0),
    ('十十', 20.0),
    ('1,2345', 12345.0),
    ('1,23', 1.23),
    ('1,234,567', ValueError),
    ('1,234,5', ValueError),
    ('1.000,5', 1000.5),
    ('1,000.5', 1000.5),
    ('1.234.567', ValueError),
    ('1 234 567', 1234567.0),
    ("1'234", 1234.0),
    ('1’234', 1234.0),
    ('1 234,5', 1234.5),
    ('١٬٢٣٤٫٥', 1234.5),
    ('٣٫١٤', 3.14),
    ('１２．５', 12.5),
    ('12.', 12.0),
    ('.5', 0.5),
    ('1e3', 1000.0),
    ('1E-3', 0.001),
    ('1e−3', 0.001),
    ('1e+3', 1000.0),
    ('1e', ValueError),
    ('1e5e5', ValueError),
    ('1e5.5', ValueError),
    ('.e5', ValueError),
    ('1 e 5', 100000.0),
    ('१२३', 123.0),
    ('۱۲۳', 123.0),
    ('๑๒๓', 123.0),
    ('𝟙𝟚', 12.0),
    ('①②', 12.0),
    ('1a', ValueError),
    ('abc', ValueError),
    ('1-2', ValueError),
    ('$5', ValueError),
    ('5%', ValueError),
    (',', ValueError),
    ('.', ValueError),
    ('e', ValueError),
    ('٫', ValueError),
    ('1,2e3', 1200.0),
    ('1,2345e1', 123450.0),
    ('四十二点零', 42.0),
    ('١٢٣٤٥٦٧٨٩٠', 1234567890.0),
    ('九十九亿九千九百九十九万', 9999990000.0),
    ('一十二', 12.0),
    ('兆兆', 0.0),
    ('負負負1', -1.0),
    ('正负3', -3.0),
    ("1" * 310, math.inf),                       # float() of the digits: no overflow error
    ("一" + "0" * 100, 1e100),
]


@pytest.mark.parametrize("text, expected", INSPECT_RESULTS, ids=range(len(INSPECT_RESULTS)))
def test_reads_as_inspect_does(text, expected):
    if isinstance(expected, type):
        with pytest.raises(expected):
            unicode_number_to_float(text)
        return
    got = unicode_number_to_float(text)
    assert type(got) is float and got == expected
    assert math.copysign(1.0, got) == math.copysign(1.0, expected)   # '-0' is -0.0 there too


def test_table_is_large_and_distinct():
    texts = [text for text, _ in INSPECT_RESULTS]
    assert len(texts) >= 80 and len(set(texts)) == len(texts)


@pytest.mark.parametrize("value", [None, 5, 2.5, b"5", ["5"]])
def test_a_non_str_is_a_type_error(value):
    with pytest.raises(TypeError):
        unicode_number_to_float(value)


@pytest.mark.parametrize("text", ["一" + "0" * 400, "九" * 320, "1" * 400 + "一", "1" * 400 + "一½",
                                  "二〇" * 200 + "点五"])
def test_a_huge_chinese_numeral_is_no_number_not_a_crash(text):
    # Inspect's function lets OverflowError escape here (float() of a 400-digit int); its scorer
    # and ours catch only ValueError, so the grader crashed on an output holding such a word.
    with pytest.raises(ValueError):
        unicode_number_to_float(text)
    assert _parse_number(text) is None
    assert match_str(f"the answer is {text}", "42", numeric=True) == ("", False)


def test_the_inspect_grader_grades_an_output_with_a_huge_numeral(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    grader = build_grader({"inspect": {"scorer": "match", "numeric": True, "location": "any"}})
    case = Case(id="c", input="x", expected="42")
    text = "steps: 一" + "0" * 400 + " then 42"
    grade = grader.grade(GradeContext(case, Output(text=text), Measurements()))
    assert grade.passed is True
    grade = grader.grade(GradeContext(case, Output(text="一" + "0" * 400), Measurements()))
    assert grade.passed is False


def test_the_module_is_our_own_code():
    source = (Path(__file__).resolve().parents[1] / "src" / "scoreboard" / "graders"
              / "inspect_unicode.py").read_text(encoding="utf-8")
    for inspect_name in ("_parse_generic_unicode_digits", "_consume_leading_signs",
                         "_split_superscript_exponent", "_parse_chinese_integer_with_units",
                         "flush_section_with", "_char_to_ascii_digit"):
        assert inspect_name not in source
    assert "checked against Inspect's own function" in source
