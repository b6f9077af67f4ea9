"""The JUnit XML section of pairwise judging: a <testsuite> `SUITE.pairwise` of its own, as the
gates have theirs, so a CI tab shows each compared pair (its wins, position consistency and the
comparisons the judge left unjudged, with why) without reading the JSON report.

Its properties carry each pair's figures, one property per figure named `A vs B: wins`,
`A vs B: position_consistency`, `A vs B: unjudged`, `A vs B: flags`; each pair is one <testcase>
named `A vs B` whose system-out gives the pair's line as the terminal prints it and the unjudged
comparisons' reasons. A comparison decides no exit (gates do), so a pair is never a failure;
a pair the judge decided no comparison of is `skipped`, its message saying why.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Callable

from .io import fmt_p
from .pairwise_words import pairwise_failures


def _pct(value) -> str:
    return "n/a" if value is None else f"{value:.0%}"


def _cases(n: int) -> str:
    return f"{n} case{'' if n == 1 else 's'}"


def pair_line(pw) -> str:
    """One pair's figures in words, as the terminal says them."""
    shown = None if pw.sign_test_p is None else fmt_p(pw.sign_test_p)
    p = "" if shown is None else f"; sign test p{shown}" if shown.startswith("<") else f"; sign test p={shown}"
    unjudged = f"; {pw.judge_failures} comparison{'' if pw.judge_failures == 1 else 's'} not judged" \
        if pw.judge_failures else ""
    return (f"{pw.a} vs {pw.b}: {pw.a} {pw.a_wins} wins, {pw.b} {pw.b_wins} wins, {pw.ties} ties over "
            f"{_cases(pw.cases)}{p}; position consistency {_pct(pw.position_consistency)}{unjudged}"
            + "".join(f"; {f}" for f in pw.flags))


def pairwise_suite(root: ET.Element, name: str, classname: str, summaries, block,
                   one_line: Callable[[object], str], clean: Callable[[object], str]) -> dict[str, int]:
    """Add the pairwise testsuite to `root`; its counts (tests, failures, errors, skipped)."""
    ts = ET.SubElement(root, "testsuite", name=one_line(name))
    props = ET.SubElement(ts, "properties")
    unjudged = pairwise_failures(block)
    skipped = 0
    for pw in summaries:
        pair = f"{pw.a} vs {pw.b}"
        reasons = unjudged.get((pw.a, pw.b), [])
        rows = [("wins", f"{pw.a} {pw.a_wins}, {pw.b} {pw.b_wins}, ties {pw.ties} over {_cases(pw.cases)} judged"),
                ("position_consistency", _pct(pw.position_consistency))]
        if pw.judge_failures:
            rows.append(("unjudged", f"{pw.judge_failures} comparison{'' if pw.judge_failures == 1 else 's'} "
                                     f"not judged" + "".join(f"; {r}" for r in reasons)))
        if pw.flags:
            rows.append(("flags", "; ".join(pw.flags)))
        for key, value in rows:
            ET.SubElement(props, "property", name=one_line(f"{pair}: {key}"), value=clean(value))
        tc = ET.SubElement(ts, "testcase", name=one_line(pair), classname=one_line(classname))
        text = "\n".join([pair_line(pw)] + [f"not judged: {r}" for r in reasons])
        if pw.a_wins + pw.b_wins + pw.ties == 0:
            skipped += 1
            why = "; ".join(reasons) or pw.note or "no comparison was judged"
            ET.SubElement(tc, "skipped", message=clean(f"no comparison judged: {why}"[:1000]))
        ET.SubElement(tc, "system-out").text = clean(text)
    if not len(props):
        ts.remove(props)
    counts = dict(tests=len(summaries), failures=0, errors=0, skipped=skipped)
    for key, value in counts.items():
        ts.set(key, str(value))
    return counts
