"""End to end in headless Chromium: runs recorded by the real CLI into a store, `scoreboard
view` serving it; the runs list, the trend with its intervals and a significance marker, the
comparison with the cases that flipped, a case's outputs side by side, a review written from the
page and found in the store and in the next report's judge-agreement figures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scoreboard.store.history import HistoryStore
from tests.servers.fake_provider import FakeProvider

from .conftest import Served, scoreboard, wait_ready

CASES = 8
FLIPPED = [f"c{i}" for i in range(1, 8)]  # c1..c7 turn from GOOD to POOR in the second run
HOSTILE = '<img src=x onerror="window.__pwned=1">'


def write_outputs(folder: Path, flipped: list[str]) -> None:
    for variant in ("bot", "steady"):
        records = []
        for i in range(CASES):
            cid = f"c{i}"
            good = variant == "steady" or cid not in flipped
            text = f"{'GOOD' if good else 'POOR'} answer {i}" + (f" {HOSTILE}" if cid == "c0" else "")
            records.append({"case_id": cid, "output": text, "latency_ms": 5})
        (folder / f"{variant}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))


@pytest.fixture(scope="module")
def judge():
    with FakeProvider() as server:
        def reply(req):
            actual = req["messages"][-1]["content"].split("ACTUAL:")[1]
            return json.dumps({"verdict": "GOOD" in actual, "explanation": "looked for GOOD"})

        server.set_default("chat", {"reply": reply})
        yield server


@pytest.fixture(scope="module")
def project(tmp_path_factory, judge) -> Path:
    folder = tmp_path_factory.mktemp("viewer")
    cases = [{"id": f"c{i}", "input": f"question {i}", "expected": f"answer {i}", "category": "odd" if i % 2 else "even"}
             for i in range(CASES)]
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    suite = {"name": "viewed", "cases": "cases.jsonl", "formats": ["json"], "seed": 3,
             "judge": {"type": "openai", "base_url": judge.base_url + "/v1", "model": "judge"},
             "graders": [{"llm-judge": {"rubric": "Is it GOOD?"}}],
             "variants": {"bot": {"subject": "recorded:bot.jsonl"}, "steady": {"subject": "recorded:steady.jsonl"}}}
    (folder / "suite.json").write_text(json.dumps(suite))
    for flipped in ([], FLIPPED):
        write_outputs(folder, flipped)
        done = scoreboard("run", "suite.json", "--no-progress", "--store", "history.sqlite", cwd=folder)
        assert done.returncode in (0, 2, 3), done.stderr
    return folder


def test_runs_trend_compare_case_and_review(browser, project):
    store_path = project / "history.sqlite"
    served = Served("--store", str(store_path), "--reviewer", "ana", cwd=project)
    page = browser.new_page()
    requests, errors, console = [], [], []
    page.on("request", lambda r: requests.append(r.url))
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: console.append(m.text))
    try:
        page.goto(served.url)
        wait_ready(page)
        rows = page.locator("#runs-body tr")
        assert rows.count() == 2
        assert "bot" in rows.nth(0).inner_text() and "%" in rows.nth(0).inner_text()

        # the trend: both runs, each point with its interval; a ring where `bot` dropped
        page.click("text=trends: viewed")
        wait_ready(page)
        assert page.locator("#trend-suite").inner_text() == "viewed"
        chart = page.locator("#trend-pass svg")
        assert chart.locator("g.point").count() == 4
        assert chart.locator("line.interval").count() == 4
        marked = chart.locator("g.point:has(circle.significant)")
        assert marked.count() == 1 and marked.get_attribute("data-series") == "bot"
        assert "significant" in page.locator("#trend-table").inner_text()

        # compare: select both runs
        page.click("#nav-runs")
        wait_ready(page)
        for box in page.locator("#runs-body input[type=checkbox]").all():
            box.check()
        page.click("#compare-selected")
        wait_ready(page)
        flipped = page.locator("section.pair").first.locator("[data-group=newly_failing]")
        assert flipped.locator("h4").inner_text() == f"newly failing: {len(FLIPPED)}"
        assert sorted(flipped.locator("li").all_inner_texts()) == FLIPPED
        assert "sign test" in page.locator("section.pair").first.inner_text()

        # a flipped case: both runs' outputs side by side
        flipped.locator("a", has_text="c3").click()
        wait_ready(page)
        assert page.locator("#case-id").inner_text() == "c3"
        cards = page.locator("#attempts .attempt")
        assert cards.count() == 4  # 2 variants x (this run + the other)
        texts = " ".join(cards.all_inner_texts())
        assert "POOR answer 3" in texts and "GOOD answer 3" in texts and "looked for GOOD" in texts

        # review the newer run's `bot` output of c3: fail, correctness 2
        card = page.locator("#attempts .attempt[data-variant=bot]", has_text="this run")
        card.locator("summary", has_text="Review this output").click()
        card.locator("select[name=verdict]").select_option("fail")
        card.locator("select[data-dimension=correctness]").select_option("2")
        card.locator("textarea[name=notes]").fill("says POOR: a wrong answer <b>indeed</b>")
        card.locator("button[type=submit]").click()
        page.wait_for_selector("#reviews td:has-text('ana')")
        assert "<b>indeed</b>" in page.locator("#reviews").inner_text()  # shown as text

        # hostile output text stays text
        page.goto(served.base + "/#/runs")
        wait_ready(page)
        page.locator("#runs-body a").nth(1).click()
        wait_ready(page)
        page.locator("#cases-body a", has_text="c0").click()
        wait_ready(page)
        assert HOSTILE in page.locator("#attempts").inner_text()
        assert page.locator("#attempts img").count() == 0
        assert page.evaluate("window.__pwned") is None
        exported = page.request.get(served.base + "/api/reviews/export").json()
    finally:
        page.close()
        served.stop()
    assert errors == []
    assert not [m for m in console if "Content Security Policy" in m or "Refused" in m]
    assert all(u.startswith((served.base, "data:")) for u in requests), requests

    # the review is in the store, as the record `import reviews` reads ...
    store = HistoryStore(store_path)
    try:
        (entry,) = store.reviews()
    finally:
        store.close()
    assert entry["reviewer_id"] == "ana" and entry["reviewer_kind"] == "human" and entry["verdict"] is False
    assert entry["ratings"] == {"correctness": 2} and entry["case_id"] == "c3"
    assert exported["entries"] == [entry]
    # ... and in the next report's judge-agreement figures (same outputs, same hashes)
    done = scoreboard("run", "suite.json", "--no-progress", "--store", "history.sqlite", "--json", cwd=project)
    report = json.loads(done.stdout)
    assert report["reviews"]["human"] == [entry]
    agreement = report["summary"]["judge_agreement"]
    assert agreement["n"] == 1
    assert agreement["confusion"]["judge_fail"]["human_fail"] == 1
    # the stored copy of that run matches its report, and the report verifies
    reports = sorted((project / "eval-results" / "viewed").glob("*.json"))
    checked = scoreboard("verify", str(reports[-1]), "--store", "history.sqlite", cwd=project)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "stored run in history.sqlite: matches the report" in checked.stdout
