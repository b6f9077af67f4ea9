"""Probe 10, statistics: the figures added most recently (scores, named and derived metrics,
reducers, what each comparison could detect) checked from outside on uneven reports the real CLI
writes, python subjects whose answers the test controls."""

from __future__ import annotations

import contextlib
import io
import json
import shutil

import pytest

from scoreboard.cli.main import main

TABLE = '''
def answer(input, skill, run, params):
    """'a=PF b=FP': each variant's scripted output per run (P has "x", F not, E raises)."""
    code = dict(part.split("=") for part in input.split())[params["v"]][run]
    if code == "E":
        raise RuntimeError("scripted error")
    return "x" if code == "P" else "n"
'''


@pytest.fixture
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SCOREBOARD_STORE", "none")
    (tmp_path / "table10.py").write_text(TABLE)
    return tmp_path


def _run(here, table: list[tuple[str, str]], graders: str, extra: str = "", fmt: str = "json") -> tuple[dict, str]:
    runs = len(table[0][0])
    with open(here / "cases.jsonl", "w") as f:
        for i, (a, b) in enumerate(table):
            f.write(json.dumps({"id": f"c{i}", "input": f"a={a} b={b}"}) + "\n")
    (here / "suite.yaml").write_text(
        "cases: cases.jsonl\n"
        f"defaults: {{graders: {graders}}}\n{extra}"
        "variants:\n"
        "  a: {subject: {type: python, function: \"table10:answer\", model_free: true}, params: {v: a}}\n"
        "  b: {subject: {type: python, function: \"table10:answer\", model_free: true}, params: {v: b}}\n")
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(["run", "suite.yaml", "--runs", str(runs), "--output", "o.json", "--no-progress",
                     "--format", "json,md"])
    assert code in (0, 2), out.getvalue()
    report = json.loads((here / "o.json").read_text())
    md = (here / "o.md").read_text()
    shutil.rmtree(here / "o")
    (here / "o.json").unlink()
    (here / "o.md").unlink()
    return report, out.getvalue() + "\n" + md


# one run a side, pass/fail: 3 cases a alone passes, 2 b alone passes, 5 ties
BINARY = [("P", "P"), ("F", "F"), ("P", "F"), ("F", "P"), ("P", "F"), ("F", "F"), ("P", "P"), ("F", "F"),
          ("P", "F"), ("F", "P")]


def test_a_metric_on_pass_fail_outcomes_detects_what_the_pass_rate_does(here):
    """A named metric (and the case score) of one contains grader at one run a case holds the same
    pass/fail outcomes as the pass rate: its detectable difference is the pass rate's exact one
    (49 points at 10 cases disagreeing on half). It was solved on the noncentral t: 73 points,
    more than variants disagreeing on 50% of cases can differ by."""
    report, _ = _run(here, BINARY, '[{contains: "x", metric: acc}]')
    comp = report["summary"]["comparisons"][0]
    rate = comp["detectable_difference"]
    assert rate["power_method"] and rate["discordance"] == 0.5 and round(rate["value"], 2) == 0.49
    for fig in (comp["score"]["detectable_difference"], comp["metrics"]["acc"]["detectable_difference"]):
        assert fig == rate, fig
        assert fig["value"] <= fig["discordance"]


def test_a_version_8_report_with_a_pass_fail_metric_is_still_checked_in_full(here):
    """Version 9 changed only that figure: a version-8 report (the noncentral t's figure for the
    metric) verifies in full, and an interval edited in it is refused, not waved through."""
    import subprocess
    import sys

    from scoreboard.record.verify_totals import _as_previous_version
    from scoreboard.stats.methods import detectable_difference

    report, _ = _run(here, BINARY, '[{contains: "x", metric: acc}]')
    old = report["summary"]
    while old["methods"]["version"] > 8:
        old = _as_previous_version(old, report)
    fig = old["comparisons"][0]["metrics"]["acc"]["detectable_difference"]
    assert old["methods"]["version"] == 8 and "power_method" not in fig and fig["sd_from"] == "this run"
    from scoreboard.stats.methods import computed_as

    with computed_as(8):  # the power as version 8 computed it (version 12 computes it more exactly)
        assert fig["value"] == detectable_difference(fig["difference_sd"], 10) and round(fig["value"], 2) == 0.73
    now = report["summary"]["comparisons"][0]["detectable_difference"]
    from scoreboard.stats.binary_power import binary_detectable

    with computed_as(8):  # the pass rate's exact figure as version 8 solved it (version 12 solves it to 1e-13)
        then = binary_detectable(now["cases"], now["discordance"], now["alpha"], now["power"])
    assert old["comparisons"][0]["detectable_difference"] == {**now, "value": then}
    report["summary"] = old

    def verify(rep):
        (here / "r.json").write_text(json.dumps(rep))
        return subprocess.run([sys.executable, "-m", "scoreboard", "verify", "r.json"], cwd=here,
                              capture_output=True, text=True, timeout=120)

    done = verify(report)
    assert done.returncode == 0 and "not recomputed" not in done.stdout, done.stdout + done.stderr
    report["summary"]["variants"]["a"]["metrics"]["acc"]["ci"]["low"] = 0.3
    assert verify(report).returncode == 1


def test_each_metric_comparison_says_what_it_could_detect_in_the_terminal_and_markdown(here):
    """README: a metric is compared 'like a pass rate (... what it could detect)'. The terminal and
    the Markdown listed its difference, counts and sign test but not what it could detect, so a
    'difference +0.100' on 10 cases read as more than it is; and '1 ties'."""
    report, text = _run(here, BINARY, '[{contains: "x", metric: acc}]')
    fig = report["summary"]["comparisons"][0]["metrics"]["acc"]["detectable_difference"]
    words = f"could detect differences of {fig['value'] * 100:.0f} points or more (80% power, paired t, power exact"
    rows = [line for line in text.splitlines() if "a vs b, acc:" in line]
    assert len(rows) == 2 and all(words in row for row in rows), rows  # terminal and Markdown
    assert all("5 ties" in row for row in rows)
    _, text = _run(here, [("P", "P"), ("P", "F"), ("F", "P")], '[{contains: "x", metric: acc}]')
    assert all("1 tie;" in line for line in text.splitlines() if "a vs b, acc:" in line)
