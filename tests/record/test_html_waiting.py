"""A run waiting on provider batches (`batch: true`), as the HTML report shows it in a real
headless Chromium: the waiting note names the open batches, waiting attempts are not counted
as passed or failed, and the page says how to collect them."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

from scoreboard.engine.pipeline import RunOptions, run
from scoreboard.record.html import render_html
from scoreboard.record.view import view_of
from scoreboard.suite.load import load_suite
from tests.servers.fake_batches import FakeBatches


def waiting_report(tmp_path) -> dict:
    rows = [{"id": f"c{i}", "input": f"What is {i}+1?", "expected": f"ANSWER: {i + 1}"} for i in range(5)]
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    with FakeBatches() as srv:
        srv.hold = True
        srv.outcome = lambda prompt: "ok"
        subject = {"type": "anthropic", "base_url": srv.base_url, "model": "m",
                   "batch": {"size": 3, "wait_s": 0.05, "poll_s": 0.01, "poll_for_s": 0}}
        flags = {"cases": [str(tmp_path / "cases.jsonl")], "subject": subject, "output_dir": str(tmp_path / "out"),
                 "formats": ["json"]}
        outcome = run(load_suite(None, flags), RunOptions(progress=False))
    assert outcome.exit_code == 4
    return outcome.report


def test_waiting_run_in_the_browser(opened, tmp_path):
    # Playwright's sync API holds this thread's event loop: the run goes in a thread of its own.
    with ThreadPoolExecutor(1) as pool:
        report = pool.submit(waiting_report, tmp_path).result()
    assert report["run"]["status"] == "waiting"
    path = tmp_path / "report.html"
    path.write_text(render_html(view_of(report)), encoding="utf-8")
    page = opened.open(path)
    assert not opened.errors
    note = page.get_by_test_id("waiting-note").inner_text()
    ids = [b["batch_id"] for b in report["run"]["batches"]]
    assert len(ids) == 2 and all(i in note for i in ids)
    assert "not in the pass rates" in note and "--resume" in note
    (name,) = report["summary"]["variants"]
    assert page.get_by_test_id(f"counts-{name}").inner_text().strip() == "0 / 0"
    assert page.locator('[data-testid="case-row"]').count() == 5
    assert page.get_by_test_id(f"waiting-{name}").inner_text().strip() == "5"
    cells = page.locator(f'[data-testid="case-cell-{name}"]')
    assert all("waiting on a batch" in cells.nth(i).inner_text() for i in range(5))
