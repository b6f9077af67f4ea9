"""History and the viewer as a user meets them after a run that stopped part way: the lines
`scoreboard history` prints state the cases each variant's interval is over (the report's
`cases`), and the viewer's review form says why it refused a review in words."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


from tests.cli_inprocess import run_cli
from tests.servers.fake_provider import FakeProvider

CASES = 40


def sb(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """`scoreboard ARGS`: in this process (tests/cli_inprocess.py), what the command says and writes
    being the point here; as a process once the module's browser holds a running event loop
    (Playwright's, its tests are last in this module), where the command's own asyncio.run cannot run."""
    if asyncio._get_running_loop() is None:
        return run_cli(args, cwd)
    return subprocess.run([sys.executable, "-m", "scoreboard", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=180, env=dict(os.environ), check=False)


@pytest.fixture(scope="module")
def stopped(tmp_path_factory):
    """A run of 40 cases x 2 runs stopped by its request budget after 10 answers (one at a
    time, so the same 10 every time): the report's variant counts 10 cases, the plan 40."""
    folder = tmp_path_factory.mktemp("stopped")
    (folder / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i:02d}", "input": f"q{i}", "expected": "yes"})
                                                + "\n" for i in range(CASES)))
    with FakeProvider() as server:
        server.set_default("chat", {"reply": "yes"})
        suite = {"name": "partial", "cases": "cases.jsonl", "runs": 2, "concurrency": 1, "formats": ["json"],
                 "graders": [{"exact": {}}],
                 "variants": {"bot": {"subject": {"type": "openai", "base_url": server.base_url + "/v1",
                                                  "model": "m"}}}}
        (folder / "suite.json").write_text(json.dumps(suite))
        done = sb("run", "suite.json", "--no-progress", "--store", "h.sqlite", "--tag", "whole", cwd=folder)
        assert done.returncode == 0, done.stdout + done.stderr
        done = sb("run", "suite.json", "--no-progress", "--max-requests", "10", "--store", "h.sqlite", cwd=folder)
    assert done.returncode == 2, done.stdout + done.stderr
    reports = [json.loads(p.read_text()) for p in (folder / "eval-results" / "partial").glob("*.json")]
    (report,) = [r for r in reports if r["run"]["status"] == "stopped"]
    return folder, report


def test_history_states_the_cases_the_variants_interval_is_over(stopped):
    folder, report = stopped
    figures = report["summary"]["variants"]["bot"]
    assert figures["not_run"] > 0 and figures["cases"] < CASES  # what makes this run a probe
    out = sb("history", "--store", "h.sqlite", cwd=folder)
    assert out.returncode == 0, out.stderr
    line = next(line for line in out.stdout.splitlines() if "bot: pass rate" in line and "not run" in line)
    assert f"{figures['cases']} cases; small sample" in line, line
    assert f"{CASES} cases" not in line
    (listed,) = json.loads(sb("history", "--store", "h.sqlite", "--json", "--status", "stopped", cwd=folder).stdout)["runs"]
    assert listed["figures"][0]["cases"] == figures["cases"]
    assert listed["cases"] == CASES  # the plan's cases, as before


def _request(url: str, body: dict | None = None, headers: dict | None = None) -> tuple[int, dict]:
    import urllib.error
    import urllib.request

    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_a_refused_review_says_why_and_not_that_it_was_not_json(stopped):
    from tests.viewer.conftest import Served

    folder, report = stopped
    served = Served("--store", "h.sqlite", cwd=folder)
    try:
        _, meta = _request(served.base + "/api/meta")
        _, runs = _request(served.base + "/api/runs?status=stopped")
        key = runs["runs"][0]["key"]
        done = next(a for a in report["attempts"] if a["status"] == "passed")
        form = {"run": key, "case_id": done["case_id"], "output_hash": done["output_hash"], "reviewer_id": "ana",
                "rubric_version": "v1", "verdict": "pass", "ratings": {"correctness": 5}, "notes": ""}
        code, body = _request(served.base + "/api/reviews", form, {"X-CSRF-Token": meta["csrf"]})
        assert code == 400 and body["error"] == "notes: required", body
        code, body = _request(served.base + "/api/reviews", {**form, "ratings": {"correctness": 9}},
                              {"X-CSRF-Token": meta["csrf"]})
        assert code == 400 and body["error"] == "ratings.correctness: a whole number from 1 to 5", body
        code, body = _request(served.base + "/api/reviews", {**form, "notes": "fine"}, {"X-CSRF-Token": meta["csrf"]})
        assert code == 200 and body["stored"]["notes"] == "fine"
    finally:
        served.stop()


def test_the_comparison_lists_a_cost_unknown_in_both_runs_as_unknown(stopped):
    """Neither run knows a cost (no price): the figures table still has the cost row, with
    the counts of known values (0 of N) and no number, rather than leaving cost out."""
    from tests.viewer.conftest import Served

    folder, _ = stopped
    served = Served("--store", "h.sqlite", cwd=folder)
    try:
        _, whole = _request(served.base + "/api/runs?status=completed")
        _, part = _request(served.base + "/api/runs?status=stopped")
        a, b = whole["runs"][0]["key"], part["runs"][0]["key"]
        _, compared = _request(served.base + f"/api/compare?a={a}&b={b}")
    finally:
        served.stop()
    rows = {r["figure"].split(" (")[0]: r for r in compared["comparisons"][0]["figures"]}
    cost = rows["cost_usd mean"]
    assert cost["a"] is None and cost["b"] is None and cost["delta"] is None
    assert cost["figure"] == f"cost_usd mean (known values: A 0 of {2 * CASES}, B 0 of 10)", cost
    assert rows["input_tokens mean"]["a"] is not None  # the tokens the provider reported are known


@pytest.mark.parametrize("url", [
    "postgresql://ana@127.0.0.1:1/h?password=hunter2secret&sslmode=disable",
    "postgres:///h?host=127.0.0.1&port=1&sslpassword=hunter2secret&password=hunter2secret",
    "postgresql://ana:hunter2secret@127.0.0.1:1/h",
])
def test_a_store_url_is_never_printed_with_its_password(url, tmp_path):
    """libpq takes a password in the URL's query as well as before the '@': neither is shown."""
    pytest.importorskip("psycopg", reason="psycopg is not installed: pip install 'scoreboard[postgres]'")
    from scoreboard.store.db import shown_location

    shown = shown_location(url)
    assert "hunter2secret" not in shown and "***" in shown and "127.0.0.1" in shown, shown
    done = sb("store", "info", "--store", url, cwd=tmp_path)  # port 1 on loopback: refused at once
    assert done.returncode == 1 and "hunter2secret" not in done.stdout + done.stderr, done.stderr
    assert "cannot connect to the store" in done.stderr


@pytest.fixture(scope="module")
def postgres():
    from tests.store.pg import Postgres, pg_bin

    if pg_bin() is None:
        pytest.skip("PostgreSQL binaries (initdb, pg_ctl) not found: scripts/setup.sh --test installs Debian's "
                    "postgresql")
    pytest.importorskip("psycopg", reason="psycopg is not installed: pip install 'scoreboard[postgres]'")
    with Postgres() as server:
        yield server


@pytest.mark.parametrize("form", ["userinfo", "query"])
def test_a_password_in_the_store_url_of_a_run_is_written_nowhere(postgres, tmp_path, form):
    """The run's argv is saved in run.json, in every report and in the store's rows: the
    password of `--store postgresql://...` is a credential the run knows (the test server trusts
    every password, so the run goes ahead)."""
    import psycopg

    secret = "storepassword-" + form
    name = f"pw_{form}_{os.getpid()}"
    postgres.create_database(name)
    host = f"127.0.0.1:{postgres.port}/{name}"
    url = f"postgresql://scoreboard:{secret}@{host}" if form == "userinfo" else \
        f"postgresql://scoreboard@{host}?password={secret}"
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "input": "q", "expected": "yes"}) + "\n"
                                                  for i in range(3)))
    (tmp_path / "answers.jsonl").write_text("".join(json.dumps({"case_id": f"c{i}", "output": "yes"}) + "\n"
                                                    for i in range(3)))
    (tmp_path / "suite.json").write_text(json.dumps({
        "name": "pw", "cases": "cases.jsonl", "formats": ["json", "md", "html"], "graders": [{"exact": {}}],
        "variants": {"only": {"subject": "recorded:answers.jsonl"}}}))
    done = sb("run", "suite.json", "--no-progress", "--store", url, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert secret not in done.stdout + done.stderr
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path
    with psycopg.connect(url) as conn:
        (head,) = conn.execute("SELECT head FROM runs").fetchone()
        assert "***" in head and secret not in head
        assert not conn.execute("SELECT 1 FROM summaries WHERE summary LIKE %s", (f"%{secret}%",)).fetchall()


@pytest.mark.parametrize("cases", [3, 1200])  # 2,400 attempts: the store's rows are written by its writer process
def test_a_run_killed_after_it_began_leaves_no_store_password_in_the_store(postgres, tmp_path, cases):
    """The run's row is written when it begins, with its argv; a run killed with kill -9 never
    rewrites it from the report, so the password must already be masked then."""
    import psycopg

    secret = f"killedrunpassword{cases}"
    name = f"pwkill_{cases}_{os.getpid()}"
    postgres.create_database(name)
    url = f"postgresql://scoreboard:{secret}@127.0.0.1:{postgres.port}/{name}"
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "input": f"q{i}", "expected": "yes"})
                                                  + "\n" for i in range(cases)))
    # the last case waits (at most 60 s) for the run's row, then kills its own run
    (tmp_path / "killer.py").write_text(
        "import os, signal, time\nimport psycopg\n"
        f"def answer(input, **kw):\n    if input == 'q{cases - 1}':\n"
        "        for _ in range(600):\n"
        "            with psycopg.connect(os.environ['KILLER_STORE']) as conn:\n"
        "                if conn.execute('SELECT COUNT(*) FROM runs').fetchone()[0]:\n"
        "                    break\n"
        "            time.sleep(0.1)\n"
        "        os.kill(os.getpid(), signal.SIGKILL)\n"
        "    return 'yes'\n")
    (tmp_path / "suite.json").write_text(json.dumps({
        "name": "pwkill", "cases": "cases.jsonl", "runs": 2, "concurrency": 1, "formats": ["json"],
        "graders": [{"exact": {}}],
        "variants": {"only": {"subject": {"type": "python", "function": "killer:answer", "model_free": True}}}}))
    done = subprocess.run([sys.executable, "-m", "scoreboard", "run", "suite.json", "--no-progress", "--store", url],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False,
                          env={**os.environ, "KILLER_STORE": url})
    assert done.returncode == -9, done.stderr
    assert secret not in done.stdout + done.stderr
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT status, head FROM runs").fetchall()
    assert [status for status, _ in rows] == ["running"]
    assert secret not in rows[0][1] and "***" in rows[0][1], rows[0][1][:400]


def test_store_tag_says_which_tags_it_did_not_change(stopped):
    """Removing a tag the run does not have (a typo) is said, not reported as removed."""
    folder, _ = stopped
    store = ["--store", "h.sqlite"]
    key = json.loads(sb("history", *store, "--json", "--tag", "whole", cwd=folder).stdout)["runs"][0]["key"]
    done = sb("store", "tag", key, "relase", "whole", "--remove", *store, cwd=folder)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["removed: whole", "not on the run: relase"], done.stdout
    done = sb("store", "tag", key, "whole", "nightly", *store, cwd=folder)
    done = sb("store", "tag", key, "nightly", "whole", *store, cwd=folder)
    assert done.stdout.splitlines() == ["already tagged: nightly, whole"], done.stdout
    listed = json.loads(sb("history", *store, "--json", "--tag", "nightly", cwd=folder).stdout)["runs"]
    assert [r["tags"] for r in listed] == [["nightly", "whole"]]


def test_the_compare_page_shows_the_unknown_cost_as_unknown(stopped, browser):
    from tests.viewer.conftest import Served, wait_ready

    folder, _ = stopped
    served = Served("--store", "h.sqlite", cwd=folder)
    page = browser.new_page()
    try:
        _, whole = _request(served.base + "/api/runs?status=completed")
        _, part = _request(served.base + "/api/runs?status=stopped")
        page.goto(served.url)
        wait_ready(page)
        page.goto(f"{served.base}/#/compare/{whole['runs'][0]['key']}/{part['runs'][0]['key']}")
        wait_ready(page)
        cells = page.locator("table.deltas").first.locator('tr[data-figure^="cost_usd mean"] td').all_inner_texts()
        assert cells[1:] == ["unknown", "unknown", "unknown"], cells
        tokens = page.locator("table.deltas").first.locator('tr[data-figure^="input_tokens mean"] td').all_inner_texts()
        assert "unknown" not in tokens[1:] and tokens[1] != "n/a", tokens
    finally:
        page.close()
        served.stop()


def test_the_run_page_of_a_run_under_way_shows_no_judged_count_it_does_not_have(stopped, browser, tmp_path):
    """A run still under way (or killed with kill -9) has no tallies stored yet: its run page
    says the attempts judged are unknown, never 0."""
    import sqlite3

    from tests.viewer.conftest import Served, wait_ready

    folder, _ = stopped
    copy = tmp_path / "copy.sqlite"
    with sqlite3.connect(folder / "h.sqlite") as source, sqlite3.connect(copy) as conn:
        source.backup(conn)  # (the store is in WAL mode: a file copy could miss its last writes)  # as the run's start writes them: the figures come at its end
        conn.execute("UPDATE variants SET attempts = NULL, passed = NULL, failed = NULL, errors = NULL, "
                     "unassessed = NULL, not_run = NULL, pass_rate = NULL, ci_low = NULL, ci_high = NULL")
        conn.execute("UPDATE runs SET status = 'running', attempts = NULL")
    source.close()
    conn.close()
    served = Served("--store", str(copy), cwd=folder)
    page = browser.new_page()
    try:
        # recorded as running, its folder held by nobody: shown as interrupted (test_probe8_liveness.py)
        _, runs = _request(served.base + "/api/runs?status=interrupted")
        page.goto(served.url)
        wait_ready(page)
        page.goto(f"{served.base}/#/run/{runs['runs'][0]['key']}")
        wait_ready(page)
        cells = page.locator("#variant-figures tbody tr").first.locator("td").all_inner_texts()
        assert cells[3] == "? / ?", cells
    finally:
        page.close()
        served.stop()


def test_the_run_page_of_a_stopped_run_says_how_many_attempts_never_ran(stopped, browser):
    """The store keeps a record of every planned attempt, the ones a stop left unrun too: the
    run page's attempt count says how many of them never ran."""
    from tests.viewer.conftest import Served, wait_ready

    folder, report = stopped
    figures = report["summary"]["variants"]["bot"]
    served = Served("--store", "h.sqlite", cwd=folder)
    page = browser.new_page()
    try:
        _, runs = _request(served.base + "/api/runs?status=stopped")
        page.goto(served.url)
        wait_ready(page)
        page.goto(f"{served.base}/#/run/{runs['runs'][0]['key']}")
        wait_ready(page)
        row = page.locator("tr", has=page.locator("th", has_text="attempts")).first.locator("td").inner_text()
        assert row == f"{figures['attempts']} of {figures['attempts']} planned ({figures['not_run']} not run)", row
    finally:
        page.close()
        served.stop()
