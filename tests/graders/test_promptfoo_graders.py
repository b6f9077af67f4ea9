"""The graders added for promptfoo's semantics: the JavaScript regex dialect (checked against
Node's own RegExp when Node is present), `not`, `javascript` and promptfoo's BLEU."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess

import pytest

from scoreboard.cases.case import Case
from scoreboard.graders.grade import GradeContext
from scoreboard.graders.jsregex import translate, utf16_units
from scoreboard.graders.overlap import promptfoo_bleu
from scoreboard.graders.registry import build_grader
from scoreboard.subjects.values import Measurements, Output

PATTERNS = ["^a$", "done$", r"\d+", r"^\w+$", r"\bcat\b", r"^.$", "^..$", r"\s", r"[^\s]+", "a{,2}", r"\A",
            "(?<y>[0-9]{4})-x", "[^]", "[]", r"x\.y", r"^\u00e9", "colou?r", "a|b$", r"[a-c\d]+", r"\cJ"]
TEXTS = ["a", "a\n", "done\n", "done", "٣", "3", "éé", "cat!", "concat", "😀", "\ufeff", "\x1c", "a{,2}", "A",
         "2024-x", "\n", "x.y", "é", "color", "b\n", "ab1", "\n"]


def _grade(spec, text, case=None):
    case = case or Case(id="c", input="prompt", vars={"question": "q"})
    ctx = GradeContext(case, Output(text=text), Measurements())
    grade = build_grader(spec).grade(ctx)
    return asyncio.run(grade) if asyncio.iscoroutine(grade) else grade


@pytest.mark.skipif(shutil.which("node") is None, reason="compares with Node's RegExp")
def test_translated_regexes_match_as_javascript_does():
    script = ("const [ps, ts] = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
              "console.log(JSON.stringify(ps.map(p => ts.map(t => new RegExp(p).test(t)))))")
    node = subprocess.run(["node", "-e", script], input=json.dumps([PATTERNS, TEXTS]), capture_output=True,
                          text=True, check=True)
    want = json.loads(node.stdout)
    import re

    got = [[bool(re.search(translate(p), utf16_units(t))) for t in TEXTS] for p in PATTERNS]
    assert got == want


def test_untranslatable_patterns_are_refused():
    for pattern, why in [(r"(a)\1", "backreferences"), (r"\u{1F600}", "u flag"), ("a*+", "possessive"),
                         ("(?i)a", "not JavaScript"), (r"[\d-z]", "class escape")]:
        with pytest.raises(ValueError, match=why):
            translate(pattern)


def test_not_inverts_and_complements():
    grade = _grade({"not": {"contains": {"patterns": ["Paris", "Lyon"], "mode": "all"}}}, "Paris")
    assert grade.passed is True and grade.score == 1.0
    grade = _grade({"not": {"bleu": {"value": "the cat sat down", "threshold": 0.1, "method": "promptfoo"}}},
                   "the cat sat down")
    assert grade.passed is False and grade.score == pytest.approx(0.0)


@pytest.mark.skipif(shutil.which("node") is None, reason="needs Node.js")
def test_javascript_grader_follows_promptfoos_contract():
    assert _grade({"javascript": "output === 'Paris' && context.vars.question === 'q'"}, "Paris").passed is True
    # a number passes when > 0, or at the threshold; not: inverts the verdict and keeps the score
    g = _grade({"javascript": {"code": "0.4", "threshold": 0.5}}, "x")
    assert (g.passed, g.score) == (False, 0.4)
    g = _grade({"javascript": {"code": "0.4", "threshold": 0.5, "not": True}}, "x")
    assert (g.passed, g.score) == (True, 0.4)
    g = _grade({"javascript": {"code": "const n = output.length;\nreturn {pass: n > 3, score: 0.7, reason: 'len'}"}},
               "Paris")
    assert (g.passed, g.score, g.reason) == (True, 0.7, "len")
    g = _grade({"javascript": "const x = 1; x + 1"}, "o")  # declarations, then the returned expression
    # a grade's score stays in [0, 1]; promptfoo's number is kept beside it
    assert g.passed is True and g.score == 1.0 and g.extra == {"raw_score": 2.0}
    g = _grade({"javascript": "undefinedName.foo"}, "o")
    assert g.passed is False and "threw error" in g.reason
    g = _grade({"javascript": {"code": "while (true) {}\nreturn true", "timeout_s": 1}}, "o")
    assert g.passed is None and "timed out" in g.reason


def test_promptfoo_bleu_port():
    # src/assertions/bleu.ts: identical text scores 1; a missing 4-gram is smoothed to 1e-7
    assert promptfoo_bleu("the cat sat on the mat", ["the cat sat on the mat"]) == pytest.approx(1.0)
    import math

    short = promptfoo_bleu("the cat", ["the cat sat"])
    bp = math.exp(1 - 2 / 3)
    assert short == pytest.approx(bp * math.exp(0.25 * (math.log(1) + math.log(1) + 2 * math.log(1e-7))))


@pytest.mark.skipif(shutil.which("node") is None, reason="needs Node.js")
def test_a_javascript_grade_that_exhausts_its_heap_says_so_and_the_next_grade_runs(monkeypatch):
    # A worker's V8 heap was node's default (a share of the machine's memory, about 4 GB here),
    # and a grade that used it all up read only "the node worker exited without an answer".
    from scoreboard.graders import node_pool

    monkeypatch.setattr(node_pool, "MAX_HEAP_MB", 64)  # the bound of workers started from now on
    for worker in list(node_pool._idle):
        node_pool._idle.remove(worker)
        worker.kill()
    g = _grade({"javascript": {"code": "const a = []; while (true) a.push(new Array(1e5).fill(1.5)); true",
                               "timeout_s": 60}}, "o")
    assert g.passed is None and "ran out of memory" in g.reason and "64 MB" in g.reason
    assert _grade({"javascript": "output === 'o'"}, "o").passed is True  # a fresh worker takes the next
