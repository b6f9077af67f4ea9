"""Probe 24T: a derived metric's unit comes from its definition (declared `unit`, else what the
expression implies when certain), the same in every rendering and run; and `__count` in a total
leaves out the attempts on which a metric the expression reads is unknown (a grade of it could not
decide), as the totals do. Every figure is checked by hand."""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from scoreboard.cli.main import main

SUBJECT = '''
def answer(input, skill, run, params):
    """'a=0.9,0.5 b=...': each variant's scripted grade per run ('U' undecided, 'F1' failed with 1)."""
    return dict(part.split("=") for part in input.split())[params["v"]].split(",")[run]
'''

CHECKS = '''
def judged(output, context):
    if output == "U":
        return {"pass": None, "reason": "could not decide"}
    return {"pass": True, "score": float(output)}


def strict(output, context):
    return output != "U"
'''


@pytest.fixture
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SCOREBOARD_STORE", "none")
    (tmp_path / "subj24t.py").write_text(SUBJECT)
    (tmp_path / "checks24t.py").write_text(CHECKS)
    return tmp_path


def _cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = main(list(argv))
    return code, out.getvalue()


def _suite(here, rows: list[str], derived: str, graders: str, runs: int = 1, name: str = "suite.yaml") -> None:
    with open(here / "cases.jsonl", "w") as f:
        for i, row in enumerate(rows):
            f.write(json.dumps({"id": f"c{i}", "input": row}) + "\n")
    variants = "".join(f"  {v}: {{subject: {{type: python, function: \"subj24t:answer\", model_free: true}}, "
                       f"params: {{v: {v}}}}}\n" for v in "ab")
    (here / name).write_text(f"cases: cases.jsonl\nruns: {runs}\ndefaults: {{graders: {graders}}}\n"
                             f"derived_metrics: {derived}\nvariants:\n{variants}")


def _run(here, *extra: str, out: str = "r.json") -> tuple[int, str, dict]:
    code, text = _cli("run", "suite.yaml", "--output", out, "--no-progress", *extra)
    return code, text, json.loads((here / out).read_text())

GRADERS = ("[{python: {file: checks24t.py, function: judged}, metric: judged}, "
           "{python: {file: checks24t.py, function: strict}}]")


def test_count_leaves_out_an_attempt_whose_metric_is_unknown(here):
    """`judged / __count` over 8 attempts, one of which had its `judged` grade undecided while
    `strict` failed it (so it is failed, not unassessed): the total of judged is 7 (over the 7
    known), and __count read 8, so the figure was 7/8 = 0.875 as if the unknown were 0. Now the
    attempt is left out of __count too (7/7 = 1) and said."""
    _suite(here, ["a=1 b=1"] * 7 + ["a=U b=1"], '{rate: {expression: "judged / __count", aggregate: sum}, '
           'n: {expression: "__count", aggregate: sum}}', GRADERS)
    code, text, report = _run(here)
    a = report["summary"]["variants"]["a"]
    assert a["failed"] == 1 and a["unassessed"] == 0  # failed, not unassessed
    rate, n = a["derived_metrics"]["rate"], a["derived_metrics"]["n"]
    assert rate["value"] == pytest.approx(7 / 7) and rate["attempts"] == 7 and rate["undecided_left_out"] == 1
    assert n["value"] == 8 and n["attempts"] == 8 and "undecided_left_out" not in n  # names no unknown metric
    b = report["summary"]["variants"]["b"]["derived_metrics"]["rate"]
    assert b["value"] == pytest.approx(8 / 8) and b["attempts"] == 8 and "undecided_left_out" not in b
    words = "1 attempt left out: a metric it reads could not be decided"
    assert words in text, text
    assert words in (here / "r.md").read_text()
    code, text = _cli("verify", "r.json")
    assert code == 0 and "no mismatch" in text, text
    # a version-20 report (7/8) still verifies as version 20 computed it
    from scoreboard.stats import summary as stats
    from scoreboard.stats.methods import computed_as

    with computed_as(20):
        old = stats.summarize(report["plan"], report["attempts"], report.get("pairwise"))
    old["methods"]["version"] = 20
    assert old["variants"]["a"]["derived_metrics"]["rate"]["value"] == pytest.approx(7 / 8)
    assert "unit" not in old["variants"]["a"]["derived_metrics"]["rate"]
    (here / "old.json").write_text(json.dumps({**report, "summary": old}))
    code, text = _cli("verify", "old.json")
    assert "no mismatch" in text, text
    tampered = json.loads(json.dumps(old))
    tampered["variants"]["a"]["derived_metrics"]["rate"]["value"] = 1.0
    (here / "bad.json").write_text(json.dumps({**report, "summary": tampered}))
    code, text = _cli("verify", "bad.json")
    assert code != 0 and "derived_metrics.rate.value" in text, text


DERIVED = ('{pct: "judged * 100", half: "judged * 0.5", f1: "2 * judged * judged / (judged + judged)", '
           'f1s: {expression: "2 * judged * judged / (judged + judged)", unit: share}}')


def _line(text: str, label: str) -> str:
    return next(line.strip() for line in text.splitlines() if line.strip().startswith(label))


def test_a_derived_metric_reads_in_its_definitions_unit_in_every_run_and_rendering(here):
    """`judged * 100` read 0.0% in a run where judged was 0 and 87.5 in one where it was 0.875:
    its unit came from one run's value. Now from its definition: `judged * 100` can leave 0..1, so
    it is a number in both runs; `judged * 0.5` cannot, so a share in both; F1's divisor can be 0
    (a number) unless the suite says `unit: share`. Terminal, Markdown, JSON and gates agree."""
    graders = GRADERS.replace(', {python: {file: checks24t.py, function: strict}}', '')
    seen = {}
    for out, rows in (("zero.json", ["a=0 b=0", "a=0 b=0"]), ("most.json", ["a=1 b=1", "a=0.75 b=0.75"])):
        _suite(here, rows, DERIVED, graders)
        code, text, report = _run(here, "--fail-under-metric", "a:pct=0", "--fail-under-metric", "a:f1s=0.5",
                                  out=out)
        seen[out] = (text, (here / out.replace(".json", ".md")).read_text(), report)
    # by hand: judged's mean is 0 in the first run, (1 + 0.75) / 2 = 0.875 in the second
    text, md, report = seen["zero.json"]
    derived = report["summary"]["variants"]["a"]["derived_metrics"]
    assert {k: (f["value"], f["unit"]) for k, f in derived.items()} == {
        "pct": (0.0, "number"), "half": (0.0, "share"), "f1": (None, "number"), "f1s": (None, "share")}
    assert _line(text, "derived pct:").startswith("derived pct: 0 = judged * 100"), text   # was 0.0%
    assert _line(text, "derived half:").startswith("derived half: 0.0% = judged * 0.5"), text
    assert "a: derived metric pct 0 ≥ 0" in text, text          # was 0.0% ≥ 0.0%
    text, md, report = seen["most.json"]
    derived = report["summary"]["variants"]["a"]["derived_metrics"]
    assert derived["pct"]["value"] == pytest.approx(87.5) and derived["half"]["value"] == pytest.approx(0.4375)
    assert derived["f1"]["value"] == pytest.approx(0.875) and derived["f1s"]["value"] == pytest.approx(0.875)
    assert _line(text, "derived pct:").startswith("derived pct: 87.5 "), text
    assert _line(text, "derived half:").startswith("derived half: 43.8% "), text
    assert _line(text, "derived f1:").startswith("derived f1: 0.875 "), text
    assert _line(text, "derived f1s:").startswith("derived f1s: 87.5% "), text
    assert "a: derived metric pct 87.5 ≥ 0" in text and "a: derived metric f1s 87.5% ≥ 50.0%" in text, text
    assert "87.5%" not in md.split("derived pct", 1)[1].splitlines()[0]
    assert "43.8%" in md.split("derived half", 1)[1].splitlines()[0], md
    for out in ("zero.json", "most.json"):
        code, vtext = _cli("verify", out)
        assert "no mismatch" in vtext, vtext
    # a version-20 report keeps its value rule (no unit recorded): it still verifies as 20 wrote it
    from scoreboard.stats import summary as stats
    from scoreboard.stats.methods import computed_as

    report = seen["zero.json"][2]
    with computed_as(20):
        old = stats.summarize(report["plan"], report["attempts"], report.get("pairwise"))
    assert all("unit" not in f for f in old["variants"]["a"]["derived_metrics"].values())


def test_an_unknown_unit_is_refused_naming_the_field(here):
    _suite(here, ["a=1 b=1"], '{x: {expression: "judged", unit: percent}}', GRADERS)
    code, text = _cli("run", "suite.yaml", "--output", "r.json", "--no-progress")
    assert code == 1 and "derived_metrics.x.unit" in text and "suite.yaml" in text, text
