"""The HTML report's paired comparison shows each pair's case-score and named-metric comparisons
(difference with its interval and method, wins/losses/ties, sign test p, what it could detect), as
the terminal and the Markdown do (README "Scores, weights, thresholds, metrics": a metric is
compared like a pass rate in every rendering). Before, the page showed the pass rate and the
fields only: a run compared on a named metric read nothing of it in the HTML. A suite run by the
real CLI, its page opened in real headless Chromium; a hostile metric name is shown as text."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HOSTILE = "<script>window.__x=1</script>\u202eevil"

SUBJECT = '''def good(text):
    return text
def bad(text):
    return text if text.endswith(("0", "1", "2")) else "nope"
'''


def _run(folder: Path, graders: list) -> dict:
    (folder / "subj.py").write_text(SUBJECT)
    (folder / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "input": f"q{i}", "expected": f"q{i}"})
                                                + "\n" for i in range(12)))
    suite = {"name": "m", "cases": "cases.jsonl", "output_dir": "out", "formats": ["json", "md", "html"],
             "variants": {"good": {"subject": "python:subj:good"}, "bad": {"subject": "python:subj:bad"}},
             "graders": graders}
    (folder / "suite.json").write_text(json.dumps(suite))
    env = dict(os.environ, SCOREBOARD_STORE="none")
    done = subprocess.run([sys.executable, "-m", "scoreboard", "run", "suite.json", "--no-progress"], cwd=folder,
                          env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    (report,) = (folder / "out" / "m").glob("*.json")
    return {"json": json.loads(report.read_text(encoding="utf-8")), "html": report.with_suffix(".html"),
            "md": report.with_suffix(".md").read_text(encoding="utf-8")}


def _open(browser, path: Path):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(15_000)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.goto(path.resolve().as_uri())
    page.wait_for_selector("html[data-ready=true]", timeout=30_000)
    return context, page, errors


def _points(v: float) -> str:
    return f"{v * 100:+.1f}"


def test_the_page_shows_each_metric_comparison_with_the_json_figures(browser, tmp_path):
    graders = [{"exact": None, "metric": HOSTILE}, {"contains": "1", "metric": "ones"}]
    out = _run(tmp_path, graders)
    comp = out["json"]["summary"]["comparisons"][0]
    assert set(comp["metrics"]) == {HOSTILE, "ones"} and comp["score"]  # what the page must show
    context, page, errors = _open(browser, out["html"])
    try:
        block = page.get_by_test_id("comparison-good-bad")
        table = block.get_by_test_id("cmp-metrics")
        heads = [t.strip() for t in table.locator("thead th").all_inner_texts()]
        assert heads[:5] == ["metric", "cases", "good better", "bad better", "ties"]
        assert any("mean difference" in h for h in heads) and "sign test p" in heads and "could detect" in heads
        rows = {"case score": ("cmp-score", comp["score"]),
                "<script>window.__x=1</script>\\u202eevil": ("cmp-metric-" + HOSTILE, comp["metrics"][HOSTILE]),
                "ones": ("cmp-metric-ones", comp["metrics"]["ones"])}
        for label, (testid, fig) in rows.items():
            row = table.get_by_test_id(testid)
            cells = [c.strip() for c in row.locator("td").all_inner_texts()]
            assert cells[0] == label  # the hostile name as text, its U+202E spelt as the page spells it
            assert cells[1:5] == [str(fig[k]) for k in ("cases", "a_wins", "b_wins", "ties")]
            ci = fig["mean_difference_ci"]
            diff = row.get_by_test_id("cmp-metric-diff").inner_text()
            assert diff.startswith(_points(fig["mean_difference"]))
            if ci and ci.get("low") is not None:
                assert f"{_points(ci['low'])} to {_points(ci['high'])}" in diff and "Student t" in diff
            p = fig["sign_test_p"]
            assert row.get_by_test_id("cmp-metric-p").inner_text().strip() == ("<0.0001" if p < 0.00005 else f"{p:.4f}")
            d = fig["detectable_difference"]
            could = row.get_by_test_id("cmp-metric-detect").inner_text()
            assert could.startswith("none within 100 points" if d["value"] > 1 else f"\u00b1{round(d['value'] * 100)} points")
            assert "80% power" in could and d["test"] in could
        # the tie-only metric: 12 ties, no difference
        assert comp["metrics"]["ones"]["ties"] == 12
        assert page.evaluate("window.__x") is None  # the name never ran as script
        assert "\u202e" not in block.inner_text()
        assert not errors, errors
    finally:
        context.close()


def test_a_pair_with_no_score_or_metric_shows_no_metric_table(browser, tmp_path):
    out = _run(tmp_path, [{"exact": None}])
    comp = out["json"]["summary"]["comparisons"][0]
    assert not comp.get("metrics") and not comp.get("score")
    context, page, errors = _open(browser, out["html"])
    try:
        assert page.get_by_test_id("comparison-good-bad").count() == 1
        assert page.get_by_test_id("cmp-metrics").count() == 0
        assert not errors, errors
    finally:
        context.close()


def test_the_metric_comparisons_travel_in_the_embedded_json(tmp_path):
    from scoreboard.record.html import page_data
    from scoreboard.record.view import view_of

    out = _run(tmp_path, [{"exact": None, "metric": "acc"}])
    data = page_data(view_of(out["json"]))
    comp = data["summary"]["comparisons"][0]
    assert comp["metrics"]["acc"] == out["json"]["summary"]["comparisons"][0]["metrics"]["acc"]
    assert comp["score"] == out["json"]["summary"]["comparisons"][0]["score"]
