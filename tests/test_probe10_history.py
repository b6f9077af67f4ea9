"""History and the viewer probed from the outside: store files named oddly, stores written by
several processes, hostile names in the viewer, reports gone from under the store."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from scoreboard.stats.methods import STATS_VERSION
from tests.cli_inprocess import run_cli
from tests.store.conftest import postgres  # noqa: F401  (the PostgreSQL server fixture, reused)

SUITE = """name: demo
cases: cases.jsonl
graders: [{exact: {}}]
variants:
  v1:
    subject: {type: python, function: "subj:answer", model_free: true}
"""


def sb(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    """`scoreboard ARGS`: in this process (tests/cli_inprocess.py), what the command says and writes
    being the point here; as a process once the module's browser holds a running event loop
    (Playwright's, its tests are last in this module), where the command's own asyncio.run cannot run."""
    if asyncio._get_running_loop() is None:
        return run_cli(args, cwd, {**os.environ, **env} if env else None)
    return subprocess.run([sys.executable, "-m", "scoreboard", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=180, env={**os.environ, **env}, check=False)


def project(folder: Path, cases: int = 6) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "subj.py").write_text("def answer(input):\n    return 'yes' if 'a' in input else 'no'\n")
    (folder / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i:02d}", "input": f"q{i} {'a' if i % 3 else 'b'}",
                                                            "expected": "yes"}) + "\n" for i in range(cases)))
    (folder / "suite.yaml").write_text(SUITE)
    return folder


@pytest.mark.parametrize("name", ["file:h.sqlite", ":memory:"])
def test_a_store_named_like_a_sqlite_uri_is_the_file_it_names(tmp_path, name):
    folder = project(tmp_path / "p")
    done = sb("run", "suite.yaml", "--no-progress", "--store", name, cwd=folder)
    assert done.returncode == 0, done.stdout + done.stderr
    store = folder / name
    assert store.stat().st_size > 0, "the run wrote somewhere else"
    assert stat.S_IMODE(store.stat().st_mode) == 0o600
    assert not (folder / "h.sqlite").exists()
    listed = sb("history", "--store", name, "--json", cwd=folder)
    assert listed.returncode == 0, listed.stderr
    assert len(json.loads(listed.stdout)["runs"]) == 1


def fetch(url: str):
    import urllib.request

    with urllib.request.urlopen(url, timeout=30) as response:  # noqa: S310 - loopback, the test's own server
        return json.loads(response.read())


@pytest.fixture(scope="module")
def two_versions(tmp_path_factory):
    """Two runs of one suite in one store, the first one's report stating statistics version 6
    (as a report of an earlier build does), and the key of each, that one first."""
    folder = project(tmp_path_factory.mktemp("versions") / "p")
    for name in ("old", "new"):
        done = sb("run", "suite.yaml", "--no-progress", "--store", "none", "--output", f"{name}.json", cwd=folder)
        assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((folder / "old.json").read_text())
    report["summary"]["methods"]["version"] = 6
    (folder / "old.json").write_text(json.dumps(report))
    done = sb("store", "import", "old.json", "new.json", "--store", "h.sqlite", cwd=folder)
    assert done.returncode == 0, done.stdout + done.stderr
    listed = json.loads(sb("history", "--store", "h.sqlite", "--json", cwd=folder).stdout)["runs"]
    assert len(listed) == 2
    from tests.viewer.conftest import Served

    served = Served("--store", "h.sqlite", cwd=folder)
    try:
        keys = {r["run_id"]: r["key"] for r in listed}
        yield served, (keys["old"], keys["new"])
    finally:
        served.stop()


def test_comparing_runs_of_two_statistics_versions_says_so(two_versions):
    served, (old, new) = two_versions
    both = fetch(f"{served.base}/api/compare?a={old}&b={new}")
    assert both["statistics_versions"] == {"a": 6, "b": STATS_VERSION}
    assert "statistics version 6" in both["statistics_note"] and f"statistics version {STATS_VERSION}" in both["statistics_note"]
    assert fetch(f"{served.base}/api/compare?a={new}&b={new}")["statistics_note"] is None


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_runs_of_one_second_are_listed_newest_first_past_the_ninth(tmp_path, request, backend):
    """Twelve runs reserved in one second are named Z, Z-2 ... Z-12: history, the viewer's pages
    and its trend list them newest first (by text alone Z-9 came before Z-12, Z-11 and Z-10)."""
    folder = project(tmp_path / "p")
    done = sb("run", "suite.yaml", "--no-progress", "--store", "none", "--output", "r.json", cwd=folder)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((folder / "r.json").read_text())
    stamp = "20261201T101010Z"
    names = [stamp] + [f"{stamp}-{n}" for n in range(2, 13)]
    (folder / "many").mkdir()
    for n, name in enumerate(names):
        report["run"].update(id=name, uid=f"{n:016x}", started_at="2026-12-01T10:10:10Z")
        (folder / "many" / f"{name}.json").write_text(json.dumps(report))
    store = "h.sqlite" if backend == "sqlite" else request.getfixturevalue("postgres").create_database(
        f"p10o{os.getpid()}")
    done = sb("store", "import", "many", "--store", store, cwd=folder)
    assert done.returncode == 0, done.stdout + done.stderr
    newest_first = names[::-1]
    listed = json.loads(sb("history", "--store", store, "--json", cwd=folder).stdout)["runs"]
    assert [r["run_id"] for r in listed] == newest_first
    from tests.viewer.conftest import Served

    served = Served("--store", store, cwd=folder)
    try:
        seen, cursor = [], None
        while True:
            import urllib.parse

            page = fetch(f"{served.base}/api/runs?limit=5" + (f"&cursor={urllib.parse.quote(cursor)}" if cursor else ""))
            seen += [r["run_id"] for r in page["runs"]]
            cursor = page["next"]
            if cursor is None:
                break
        assert seen == newest_first
        trend = fetch(f"{served.base}/api/trends?suite=demo")
        assert [p["run_id"] for p in trend["series"]["v1"]] == names
    finally:
        served.stop()


@pytest.mark.parametrize("page", ["cases", "attempts"])
def test_a_page_cursor_past_a_database_integer_is_a_page_not_a_500(two_versions, page):
    import urllib.error

    served, (old, _) = two_versions
    try:
        after = fetch(f"{served.base}/api/runs/{old}/{page}?cursor=99999999999999999999999")
    except urllib.error.HTTPError as exc:
        raise AssertionError(f"{exc.code}: {exc.read()[:200]!r}") from None
    assert after[page] == [] and after["next"] is None
    # A negative cursor is no page's `next`: refused naming the parameter, never a 500.
    with pytest.raises(urllib.error.HTTPError) as refused:
        fetch(f"{served.base}/api/runs/{old}/{page}?cursor=-99999999999999999999999&limit=500")
    assert refused.value.code == 400
    assert json.loads(refused.value.read())["error"].startswith("cursor: ")
    whole = fetch(f"{served.base}/api/runs/{old}/{page}?limit=500")
    assert len(whole[page]) == 6 and whole["next"] is None


def test_a_store_with_damaged_pages_is_a_one_line_error_naming_it(tmp_path):
    """A store whose header reads but whose tables' pages are damaged ('database disk image is
    malformed'): history and store verify say so in one line naming the file (exit 1), a run
    warns and still writes its reports, and the viewer answers JSON naming the store, not
    'internal error' (exit 2) and 'Server got itself in trouble'."""
    import sqlite3

    folder = project(tmp_path / "p")
    assert sb("run", "suite.yaml", "--no-progress", "--store", "h.sqlite", cwd=folder).returncode == 0
    db = sqlite3.connect(folder / "h.sqlite")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    roots = dict(db.execute("SELECT name, rootpage FROM sqlite_master WHERE type = 'table'"))
    page = db.execute("PRAGMA page_size").fetchone()[0]
    db.close()
    raw = bytearray((folder / "h.sqlite").read_bytes())
    for table in ("runs", "cases", "attempts"):
        at = (roots[table] - 1) * page
        raw[at:at + 2000] = b"\x0d\x00\x00\xff\xff" + b"\xee" * 1995
    (folder / "h.sqlite").write_bytes(bytes(raw))
    for command in (("history",), ("store", "verify", "x")):
        done = sb(*command, "--store", "h.sqlite", cwd=folder)
        assert done.returncode == 1, (command, done.stderr)
        (line,) = done.stderr.splitlines()
        assert "h.sqlite" in line and "field 'store'" in line and "damaged" in line, line
    done = sb("run", "suite.yaml", "--no-progress", "--store", "h.sqlite", cwd=folder)
    assert done.returncode == 0, done.stderr
    assert "damaged" in done.stderr and "its report files are the record" in done.stderr
    from tests.viewer.conftest import Served

    served = Served("--store", "h.sqlite", cwd=folder)
    try:
        import urllib.error

        with pytest.raises(urllib.error.HTTPError) as caught:
            fetch(f"{served.base}/api/runs")
        assert caught.value.code == 500
        assert "damaged" in json.loads(caught.value.read())["error"]
    finally:
        served.stop()


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_search_folds_every_letter_not_only_a_to_z(tmp_path, request, backend):
    """`history --search ökonom` finds the variant Ökonom and a case search in the viewer finds
    the case Éclair-1 from 'éCLAIR': SQLite's LOWER folded only A-Z while the pattern was folded
    by Python, so no search holding a capital beyond ASCII ever matched."""
    folder = project(tmp_path / "p")
    (folder / "suite.yaml").write_text(SUITE.replace("  v1:", "  Ökonom:"))
    (folder / "cases.jsonl").write_text(json.dumps({"id": "Éclair-1", "input": "a", "expected": "yes"}) + "\n"
                                        + json.dumps({"id": "other", "input": "a", "expected": "yes"}) + "\n")
    store = "h.sqlite" if backend == "sqlite" else request.getfixturevalue("postgres").create_database(
        f"p10s{os.getpid()}")
    done = sb("run", "suite.yaml", "--no-progress", "--store", store, "--tag", "Ünique", cwd=folder)
    assert done.returncode == 0, done.stdout + done.stderr
    for words in ("ökonom", "ÖKONOM", "ünique", "Ünique"):
        listed = sb("history", "--store", store, "--search", words, "--json", cwd=folder)
        assert len(json.loads(listed.stdout)["runs"]) == 1, words
    from tests.viewer.conftest import Served

    served = Served("--store", store, cwd=folder)
    try:
        (run,) = fetch(f"{served.base}/api/runs?search=%C3%B6KONOM")["runs"]
        found = fetch(f"{served.base}/api/runs/{run['key']}/cases?search=%C3%A9CLAIR")["cases"]
        assert [c["case_id"] for c in found] == ["Éclair-1"]
    finally:
        served.stop()


def test_a_commit_filter_that_is_no_commit_prefix_is_an_error_not_an_empty_list(tmp_path, two_versions):
    import urllib.error

    folder = project(tmp_path / "p")
    assert sb("run", "suite.yaml", "--no-progress", "--store", "h.sqlite", cwd=folder).returncode == 0
    for given in ("XYZ!", "%", "4c2_"):
        done = sb("history", "--store", "h.sqlite", "--commit", given, cwd=folder)
        assert done.returncode == 1, done.stdout
        (line,) = done.stderr.splitlines()
        assert "--commit" in line and "not a commit prefix" in line, line
    assert sb("history", "--store", "h.sqlite", "--commit", "4C22", cwd=folder).returncode == 0
    served, _ = two_versions
    with pytest.raises(urllib.error.HTTPError) as caught:
        fetch(f"{served.base}/api/runs?commit=xyz%21")
    assert caught.value.code == 400 and "not a commit prefix" in json.loads(caught.value.read())["error"]
    assert fetch(f"{served.base}/api/runs?commit=4c22")["runs"] == []


def test_the_compare_page_says_the_statistics_versions_differ(two_versions, browser):
    from tests.viewer.conftest import wait_ready

    served, (old, new) = two_versions
    page = browser.new_page()
    try:
        page.goto(served.url)
        wait_ready(page)
        page.goto(f"{served.base}/#/compare/{old}/{new}")
        wait_ready(page)
        assert "statistics version 6" in page.locator("#statistics-versions").inner_text()
        page.goto(f"{served.base}/#/compare/{new}/{new}")
        wait_ready(page)
        assert page.locator("#statistics-versions").count() == 0
    finally:
        page.close()


def test_a_trend_over_two_statistics_versions_says_so(two_versions, browser):
    from tests.viewer.conftest import wait_ready

    served, _ = two_versions
    trend = fetch(f"{served.base}/api/trends?suite=demo")
    assert trend["statistics_versions"] == [6, STATS_VERSION]
    assert f"version 6, version {STATS_VERSION}" in trend["statistics_note"]
    assert sorted(p["statistics_version"] for p in trend["series"]["v1"]) == [6, STATS_VERSION]
    page = browser.new_page()
    try:
        page.goto(served.url)
        wait_ready(page)
        page.goto(f"{served.base}/#/trends/demo")
        wait_ready(page)
        assert "more than one statistics version" in page.locator("#trend-statistics-versions").inner_text()
        cells = page.locator("#trend-table tbody tr td:nth-child(4)").all_inner_texts()
        said = {c.rsplit("(", 1)[1] for c in cells}  # a set: "version 10)" sorts before "version 6)" as text
        assert said == {"statistics version 6)", f"statistics version {STATS_VERSION})"} and len(cells) == 2, cells
    finally:
        page.close()


def test_the_run_page_says_when_its_report_is_gone_or_changed(tmp_path, browser):
    from tests.viewer.conftest import Served, wait_ready

    folder = project(tmp_path / "p")
    for name in ("gone", "edited", "kept"):
        done = sb("run", "suite.yaml", "--no-progress", "--store", "h.sqlite", "--output", f"{name}.json", cwd=folder)
        assert done.returncode == 0, done.stdout + done.stderr
    (folder / "gone.json").unlink()
    (folder / "edited.json").write_text((folder / "edited.json").read_text() + "\n")
    served = Served("--store", "h.sqlite", cwd=folder)
    page = browser.new_page()
    try:
        keys = {r["run_id"]: r["key"] for r in fetch(f"{served.base}/api/runs")["runs"]}
        states = {name: fetch(f"{served.base}/api/runs/{key}")["report_state"] for name, key in keys.items()}
        assert states == {"gone": "missing", "edited": "changed", "kept": "present"}
        page.goto(served.url)
        wait_ready(page)
        for name, words in (("gone", "not there now"), ("edited", "changed since it was stored"), ("kept", None)):
            page.goto(f"{served.base}/#/run/{keys[name]}")
            wait_ready(page)
            row = page.locator("tr", has=page.locator("th", has_text="report")).first.inner_text()
            assert (words in row) if words else ("not there" not in row and "changed" not in row), row
    finally:
        page.close()
        served.stop()
