"""The viewer over a hostile run, in headless Chromium: case ids, variant names, categories, tags,
inputs, outputs and grader reasons that would run script if parsed as HTML are shown as text on
every page (runs, run, every case, trend, comparison); no script runs, nothing is fetched from
elsewhere, the Content-Security-Policy holds; and a case whose id is "." or ".." still opens."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scoreboard.record.mdtext import spell_unseen
from tests.record.test_injection import (
    CASES,
    MENTION,
    SCRIPT,
    VARIANT,
    write_hostile_project,
)

from .conftest import Served, scoreboard, wait_ready

DOTS = [{"id": "..", "input": "dot dot", "expected": "x"}, {"id": ".", "input": "dot", "expected": "x"},
        {"id": "a/b?c=1#d", "input": "path-like", "expected": "x"}]


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("hostile-viewer")
    write_hostile_project(folder)
    with (folder / "cases.jsonl").open("a", encoding="utf-8") as f:
        f.write("".join(json.dumps(c) + "\n" for c in DOTS))
    for tag in ("<b onmouseover=\"window.__pwned=10\">tag</b>", "second"):  # two runs: a trend and a comparison
        done = scoreboard("run", "suite.json", "--format", "json", "--no-progress", "--store", "history.sqlite",
                          "--tag", tag, cwd=folder)
        assert done.returncode == 0, done.stderr
    return folder


def test_every_page_shows_hostile_text_as_text_and_runs_none_of_it(browser, project):
    served = Served("--store", str(project / "history.sqlite"), cwd=project)
    page = browser.new_page()
    requests, errors, console, dialogs, csp = [], [], [], [], []
    page.on("request", lambda r: requests.append(r.url))
    page.on("response", lambda r: csp.append(r.headers.get("content-security-policy")))
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: console.append(m.text))
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    seen = []
    try:
        page.goto(served.url)
        wait_ready(page)
        seen.append(page.locator("main").inner_text())
        page.locator("#runs-body tr").first.locator("a").nth(1).click()  # the newer run
        wait_ready(page)
        run_route = page.evaluate("location.hash")
        ids = page.locator("#cases-body a").all_inner_texts()
        # shown as the text they are: a direction override or zero-width space spelt (\u202e)
        assert sorted(ids) == sorted(spell_unseen(c["id"]) for c in CASES + DOTS)
        seen.append(page.locator("main").inner_text())
        for i, case_id in enumerate(ids):
            page.goto(served.base + "/" + run_route)
            wait_ready(page)
            page.locator("#cases-body a").nth(i).click()
            wait_ready(page)
            assert page.locator("#case-id").inner_text() == case_id  # ".." and "." open too
            for summary in page.locator("summary").all():
                summary.click()
            page.mouse.move(300, 300)
            seen.append(page.locator("main").inner_text())
        page.click("text=trends: hostile")
        wait_ready(page)
        seen.append(page.locator("main").inner_text())
        page.click("#nav-runs")
        wait_ready(page)
        for box in page.locator("#runs-body input[type=checkbox]").all():
            box.check()
        page.click("#compare-selected")
        wait_ready(page)
        seen.append(page.locator("main").inner_text())
        assert page.evaluate("typeof window.__pwned") == "undefined"
        assert page.locator("main img, main iframe, main object, main embed, main script").count() == 0
    finally:
        page.close()
        served.stop()
    assert errors == [] and dialogs == []
    assert all(u.startswith(served.base) for u in requests), [u for u in requests if not u.startswith(served.base)]
    assert not [m for m in console if "Content Security Policy" in m or "Refused" in m]
    assert csp and all(c and "default-src 'none'" in c and "'unsafe-inline'" not in c for c in csp)
    text = "\n".join(seen)
    for shown in (VARIANT, SCRIPT, "output was: <svg onload=", MENTION, "<b onmouseover=\"window.__pwned=10\">tag</b>",
                  "</style><style>*{background:url("):
        assert shown in text, shown
