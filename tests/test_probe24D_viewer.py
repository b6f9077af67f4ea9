"""The history viewer probed as a demanding user meets it (24D): a store of 620 runs of one
suite in the trend (what it leaves out, said, and the older runs reachable), keyboard focus kept
across the browser's back button, the case list sorted, and hostile names and outputs; in Debian's
headless Chromium through Playwright, `scoreboard view` serving a real store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.store.conftest import postgres  # noqa: F401  (the PostgreSQL server fixture)
from tests.test_probe21_history import project, sb
from tests.viewer.conftest import Served, wait_ready

RUNS = 620


@pytest.fixture(scope="module")
def many(tmp_path_factory) -> Path:
    """A suite of 620 finished runs (a nightly run for most of two years), one a day."""
    folder = project(tmp_path_factory.mktemp("many") / "p", cases=6)
    done = sb("run", "suite.yaml", "--no-progress", "--store", "h.sqlite", "--output", "a.json", cwd=folder)
    assert done.returncode == 0, done.stderr
    _copies(folder / "h.sqlite", RUNS)
    return folder


def _copies(store: Path, runs: int) -> None:
    """The store's one run stored again as `runs` runs of one suite, a day apart, every table's rows
    copied under a new key of hex digits, as the store writes its keys."""
    import hashlib
    import sqlite3

    conn = sqlite3.connect(store)
    conn.create_function("newkey", 2, lambda key, i: hashlib.sha256(f"{key}/{i}".encode()).hexdigest()[:32])
    tables = [t for (t,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    (key,) = conn.execute("SELECT key FROM runs").fetchone()
    for i in range(1, runs):
        for table in tables:
            columns = [c[1] for c in conn.execute(f"PRAGMA table_info({table})")]
            keyed = "key" if table == "runs" else "run_key" if "run_key" in columns else None
            if keyed is None:
                continue
            chosen = [f"newkey({keyed}, {i})" if c == keyed else f"run_id || '-{i}'" if table == "runs" and c == "run_id"
                      else f"strftime('%Y-%m-%dT%H:%M:%SZ', datetime('2025-01-01', '+{i} day'))"
                      if table == "runs" and c == "started_at" else c for c in columns]
            conn.execute(f"INSERT INTO {table} ({', '.join(columns)}) SELECT {', '.join(chosen)} FROM {table} "
                         f"WHERE {keyed} = ?", (key,))
    conn.commit()
    conn.close()


def _all_keys(folder: Path) -> list[str]:
    import sqlite3

    conn = sqlite3.connect(folder / "h.sqlite")
    try:
        return [k for (k,) in conn.execute("SELECT key FROM runs ORDER BY started_at DESC")]
    finally:
        conn.close()


def test_a_trend_over_more_runs_than_a_page_says_what_it_left_out_and_reaches_every_run(many):
    """620 runs: the trend drew the latest 60 (500 at most) and said `620`-less nothing: the
    `runs` it gave was the page's count, no cursor reached an older run."""
    served = Served("--store", "h.sqlite", cwd=many)
    try:
        status, first = served.get("/api/trends?suite=demo&limit=500")
        assert status == 200, first
        w = first["window"]
        assert first["runs"] == 500 and w["total"] == RUNS and w["older"] == RUNS - 500 and w["newer"] == 0
        assert w["newer_cursor"] is None and w["older_cursor"]
        status, second = served.get("/api/trends?suite=demo&limit=500&before=" + _q(w["older_cursor"]))
        assert status == 200, second
        w2 = second["window"]
        assert second["runs"] == RUNS - 500 and w2["older"] == 0 and w2["newer"] == 500
        assert w2["older_cursor"] is None and w2["newer_cursor"] == ""  # the latest page: no `before`
        drawn = [p["key"] for p in first["series"]["v1"]] + [p["key"] for p in second["series"]["v1"]]
        assert sorted(drawn) == sorted(_all_keys(many)) and len(set(drawn)) == RUNS
        # the oldest run of all has no run before it; the oldest of the first page is compared with
        # the newest of the second
        assert second["series"]["v1"][0]["change"] is None
        assert first["series"]["v1"][0]["change"]["previous"] == second["series"]["v1"][-1]["key"]
        # a page in the middle: newer_cursor names the page just newer
        status, mid = served.get("/api/trends?suite=demo&limit=100&before=" + _q(w["older_cursor"]))
        assert mid["window"]["newer"] == 500 and mid["window"]["older"] == 20
        status, back = served.get("/api/trends?suite=demo&limit=100&before=" + _q(mid["window"]["newer_cursor"]))
        assert [p["key"] for p in back["series"]["v1"]] == [p["key"] for p in first["series"]["v1"]][:100]
        status, bad = served.get("/api/trends?suite=demo&before=garbage")
        assert status == 400 and bad["error"].startswith("before:"), bad
    finally:
        served.stop()


def _q(value: str) -> str:
    import urllib.parse

    return urllib.parse.quote(value, safe="")


def test_the_trend_page_says_the_runs_not_drawn_and_the_keyboard_reaches_older_ones(browser, many):
    served = Served("--store", "h.sqlite", cwd=many)
    page = browser.new_page()
    try:
        page.goto(served.base + "/#/trends/demo")
        wait_ready(page)
        notice = page.locator("#trend-window").inner_text()
        assert f"Drawn: 60 runs of the suite's {RUNS} runs; not drawn here: {RUNS - 60} runs older" in notice, notice
        assert page.locator("#trend-newer").count() == 0
        first_rows = page.locator("#trend-table tbody tr").count()
        assert first_rows == 60
        newest_shown = page.locator("#trend-table tbody tr td:nth-child(1)").first.inner_text()
        # by keyboard: focus the link, press Enter
        page.focus("#trend-older")
        page.keyboard.press("Enter")
        wait_ready(page)
        notice = page.locator("#trend-window").inner_text()
        assert f"{RUNS - 120} runs older and 60 runs newer" in notice, notice
        assert page.locator("#trend-table tbody tr td:nth-child(1)").first.inner_text() < newest_shown
        # back: the first page again, the focus on the link followed
        page.go_back()
        wait_ready(page)
        assert page.evaluate("document.activeElement.id") == "trend-older"
        page.focus("#trend-older")
        page.keyboard.press("Enter")
        wait_ready(page)
        page.focus("#trend-newer")
        page.keyboard.press("Enter")
        wait_ready(page)
        assert "not drawn here: 560 runs older." in page.locator("#trend-window").inner_text()
    finally:
        page.close()
        served.stop()


# ---------------------------------------------------------------- the case list, sorted

SORT_CASES = 6


def _sort_project(folder: Path) -> Path:
    """A suite of 6 cases graded `exact`, two variants, run twice: the second run turns c1 and c2
    from passing to failing and c4 from failing to passing (variant `a`); latencies and costs
    differ per case; c5's input changes between the runs."""
    folder.mkdir(parents=True, exist_ok=True)
    suite = {"name": "sorted", "cases": "cases.jsonl", "formats": ["json"],
             "variants": {"a": {"subject": "recorded:a.jsonl"}, "b": {"subject": "recorded:b.jsonl"}}}
    (folder / "suite.json").write_text(json.dumps(suite))

    def write(run: int) -> None:
        cases = [{"id": f"c{i}", "input": f"q{i}" + (" again" if i == 5 and run else ""), "expected": "yes"}
                 for i in range(SORT_CASES)]
        (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
        for v in ("a", "b"):
            passing = {0, 1, 2, 3} if run == 0 else {0, 3, 4}
            if v == "b":
                passing = {0, 1}
            rows = [{"case_id": f"c{i}", "output": "yes" if i in passing else "no", "latency_ms": [30, 5, 50, 10, 40, 20][i],
                     "cost_usd": [0.3, 0.1, 0.05, 0.2, 0.4, 0.0][i]} for i in range(SORT_CASES)]
            (folder / f"{v}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))

    for run in (0, 1):
        write(run)
        done = sb("run", "suite.json", "--no-progress", "--store", "h.sqlite", "--output", f"r{run}.json", cwd=folder)
        assert done.returncode in (0, 3), done.stderr
    return folder


@pytest.fixture(scope="module")
def sorted_store(tmp_path_factory) -> Path:
    return _sort_project(tmp_path_factory.mktemp("sort") / "p")


def _latest(folder: Path) -> str:
    runs = json.loads(sb("history", "--store", "h.sqlite", "--json", cwd=folder).stdout)["runs"]
    return runs[0]["key"]


def test_the_case_list_sorts_by_id_pass_rate_change_latency_and_cost_with_unknowns_last(sorted_store):
    """The case list came in plan order only: a user looking for the cases that dropped since the
    last run, or the slowest, paged through all of them."""
    key = _latest(sorted_store)
    served = Served("--store", "h.sqlite", cwd=sorted_store)

    def order(sort: str, **more: str) -> list[str]:
        import urllib.parse

        query = urllib.parse.urlencode({"sort": sort, **more})
        status, page = served.get(f"/api/runs/{key}/cases?{query}")
        assert status == 200, page
        return [c["case_id"] for c in page["cases"]]

    try:
        assert order("-id") == ["c5", "c4", "c3", "c2", "c1", "c0"]
        # variant a of run 2 passes c0, c3, c4: over a's attempts the passing ones last, ties in plan order
        assert order("pass_rate", variant="a") == ["c1", "c2", "c5", "c0", "c3", "c4"]
        # over both variants (b passes c0 and c1): c0 1.0, then c1, c3, c4 at 0.5 in plan order
        assert order("-pass_rate") == ["c0", "c1", "c3", "c4", "c2", "c5"]
        # change of a's pass rate since the previous run: c1 and c2 dropped, c4 rose; c5's input changed (unknown, last)
        assert order("change", variant="a") == ["c1", "c2", "c0", "c3", "c4", "c5"]
        assert order("-change", variant="a") == ["c4", "c0", "c3", "c1", "c2", "c5"]
        status, page = served.get(f"/api/runs/{key}/cases?sort=change&variant=a")
        values = {c["case_id"]: c["sort_value"] for c in page["cases"]}
        assert values["c1"] == -1 and values["c4"] == 1 and values["c5"] is None
        assert order("-latency") == ["c2", "c4", "c0", "c5", "c3", "c1"]
        assert order("cost") == ["c5", "c2", "c1", "c3", "c0", "c4"]
        # sorted pages: the cursor is an offset, the pages join up with nothing repeated
        status, first = served.get(f"/api/runs/{key}/cases?sort=-latency&limit=4")
        status, rest = served.get(f"/api/runs/{key}/cases?sort=-latency&limit=4&cursor={first['next']}")
        assert [c["case_id"] for c in first["cases"] + rest["cases"]] == order("-latency") and rest["next"] is None
        # a filter and a sort together
        assert order("-latency", outcome="failing", variant="a") == ["c2", "c5", "c1"]
        status, bad = served.get(f"/api/runs/{key}/cases?sort=speed")
        assert status == 400 and bad["error"].startswith("sort: unknown sort 'speed'"), bad
    finally:
        served.stop()


def test_the_case_list_is_sorted_from_the_keyboard_and_says_the_value_it_sorted_by(browser, sorted_store):
    key = _latest(sorted_store)
    served = Served("--store", "h.sqlite", cwd=sorted_store)
    page = browser.new_page()
    try:
        page.goto(f"{served.base}/#/run/{key}")
        wait_ready(page)
        # the keyboard alone: to the sort, its options by arrow key, Tab to the form's button, Enter
        page.focus("#case-sort")
        for _ in range(5):  # plan order -> ... -> change, largest drop first
            page.keyboard.press("ArrowDown")
        assert page.locator("#case-sort").input_value() == "change"
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.id") == "case-filter"
        page.keyboard.press("Enter")
        wait_ready(page)
        assert page.evaluate("document.activeElement.id") == "case-filter"  # the focus stays where it was
        assert "sort=change" in page.evaluate("location.hash")
        ids = page.locator("#cases-body tr").evaluate_all("rows => rows.map(r => r.dataset.case)")
        assert ids[:2] == ["c1", "c2"] and ids[-1] == "c5", ids
        assert page.locator("#sort-column").get_attribute("aria-sort") == "ascending"
        last = page.locator("#cases-body tr").last.locator("td.sort-value").inner_text()
        assert last.startswith("unknown (not in the previous run"), last
        first = page.locator("#cases-body tr").first.locator("td.sort-value").inner_text()
        assert first == "-50.0", first  # c1: a passed, b passed -> a failed, b passed: 100% -> 50%
        assert page.locator("#case-sort").input_value() == "change"
        page.select_option("#case-sort", "-id")
        page.click("#case-filter")
        wait_ready(page)
        assert page.locator("#cases thead th").first.get_attribute("aria-sort") == "descending"
        assert page.locator("#cases-body tr").first.get_attribute("data-case") == "c5"
    finally:
        page.close()
        served.stop()


def test_the_browsers_back_button_gives_the_focus_back_to_the_link_followed(browser, sorted_store):
    """A keyboard user who followed the second run's link and came back with the back button
    found the focus at the document's start, and tabbed through the header and every filter
    again to reach the next run."""
    runs = json.loads(sb("history", "--store", "h.sqlite", "--json", cwd=sorted_store).stdout)["runs"]
    older = runs[1]["key"]
    served = Served("--store", "h.sqlite", cwd=sorted_store)
    page = browser.new_page()
    try:
        page.goto(served.base + "/#/runs")
        wait_ready(page)
        page.focus(f'#runs-body a[href="#/run/{older}"]')
        page.keyboard.press("Enter")
        wait_ready(page)
        # the new page: the focus on its heading, where a screen reader starts reading it
        assert page.evaluate("document.activeElement.localName") == "h1"
        # a case of it, then back twice: each page with the focus on the link followed
        first_case = page.locator("#cases-body a").first
        href = first_case.get_attribute("href")
        first_case.focus()
        page.keyboard.press("Enter")
        wait_ready(page)
        page.go_back()
        wait_ready(page)
        assert page.evaluate("document.activeElement.getAttribute('href')") == href
        page.go_back()
        wait_ready(page)
        assert page.evaluate("document.activeElement.getAttribute('href')") == f"#/run/{older}"
        page.keyboard.press("Shift+Tab")  # on from there: the row's previous control, not the page's last
        assert page.evaluate("document.activeElement.closest('tr') && document.activeElement.closest('tr').dataset.run") \
            == older
    finally:
        page.close()
        served.stop()


def test_the_sorts_and_the_trend_window_read_the_same_from_postgresql(postgres, sorted_store):  # noqa: F811
    """The sort and window queries are SQL both stores run: the same runs stored in PostgreSQL
    give the same orders, values and window."""
    import itertools
    import os

    url = postgres.create_database(f"p24d_{os.getpid()}_{next(itertools.count())}")
    done = sb("store", "import", "r0.json", "r1.json", "--store", url, cwd=sorted_store)
    assert done.returncode == 0, done.stderr
    key = _latest(sorted_store)
    here, there = Served("--store", "h.sqlite", cwd=sorted_store), Served("--store", url, cwd=sorted_store)
    try:
        for sort in ("id", "-id", "pass_rate", "-pass_rate", "change", "-change", "latency", "-latency", "cost", "-cost"):
            for variant in ("", "&variant=a"):
                path = f"/api/runs/{key}/cases?sort={sort}{variant}"
                (s1, a), (s2, b) = here.get(path), there.get(path)
                assert s1 == s2 == 200, (a, b)
                assert [(c["case_id"], c["sort_value"]) for c in a["cases"]] == \
                    [(c["case_id"], c["sort_value"]) for c in b["cases"]], path
        (s1, a), (s2, b) = here.get("/api/trends?suite=sorted&limit=1"), there.get("/api/trends?suite=sorted&limit=1")
        assert s1 == s2 == 200 and a["window"] == b["window"] and a["window"]["older"] == 1
    finally:
        here.stop()
        there.stop()
