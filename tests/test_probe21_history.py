"""History and the store, probed from the outside (round 5): a year of runs, stores a full disk
or an older scoreboard left, suites whose cases, variants and graders changed between runs."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.cli_inprocess import run_cli


SUITE = """name: demo
cases: cases.jsonl
variants:
  v1:
    subject: {type: python, function: "subj:answer", model_free: true}
"""

SUBJECT = """import json
def answer(input):
    return json.dumps({"x": 1, "y": 2 if "a" in input else 3})
"""


def sb(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    return run_cli(args, cwd, {**os.environ, **env})


def project(folder: Path, cases: int = 8, pad: int = 0, suite: str = SUITE) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "subj.py").write_text(SUBJECT)
    (folder / "cases.jsonl").write_text("".join(json.dumps(
        {"id": f"c{i:05d}", "input": f"q{i} {'a' if i % 3 else 'b'} " + "pad " * pad, "expected": {"x": 1, "y": 2},
         "grader": "json-fields", "fields": ["x", "y"], "threshold": 0.9}) + "\n" for i in range(cases)))
    (folder / "suite.yaml").write_text(suite)
    return folder


def _small_disk(monkeypatch, pages: int = 60) -> None:
    """Every SQLite store this process opens holds at most `pages` pages: past them SQLite says
    'database or disk is full' (SQLITE_FULL), as on a disk with no room left."""
    from scoreboard.store import db

    real = db.connect

    def connect(uri, **options):
        conn = real(uri, **options)
        conn.execute(f"PRAGMA max_page_count = {pages}")
        return conn
    monkeypatch.setattr(db, "connect", connect)


def test_a_full_disk_is_said_as_such_and_the_run_keeps_its_reports_and_exit_code(tmp_path, monkeypatch, capsys):
    """A store on a full disk: SQLite rolls the transaction back itself, and the ROLLBACK that
    followed failed with 'cannot rollback - no transaction is active', the only reason given;
    `store import` then called it a bad report (exit 1), not the store's failure (exit 2)."""
    from scoreboard.cli.main import main

    folder = project(tmp_path / "p", cases=300, pad=40)
    monkeypatch.chdir(folder)
    _small_disk(monkeypatch)
    assert main(["run", "suite.yaml", "--no-progress", "--store", "h.sqlite", "--output", "out.json"]) == 0
    err = capsys.readouterr().err
    assert (folder / "out.json").exists() and (folder / "out.html").exists()
    assert "no transaction is active" not in err
    assert "the disk holding it is full" in err
    assert "`scoreboard store import out.json` stores it again" in err
    assert main(["store", "import", "out.json", "--store", "h.sqlite"]) == 2
    err = capsys.readouterr().err
    assert "no transaction is active" not in err
    assert "the disk holding it is full" in err and "h.sqlite" in err
    assert len([line for line in err.splitlines() if line.strip()]) == 1, err


def test_a_trend_and_a_compare_say_when_the_cases_are_graded_differently(tmp_path):
    """The same cases and inputs graded by another rule (a threshold lowered, an expected value
    corrected, a grader swapped): the trend ringed the jump as a significant change of the
    variant and the compare page paired the outcomes, saying nothing; `scoreboard compare` flags
    it ('the graders differ'), the viewer did not."""
    from tests.viewer.conftest import Served

    folder = project(tmp_path / "p", cases=30)
    done = sb("run", "suite.yaml", "--no-progress", "--store", "h.sqlite", "--output", "a.json", cwd=folder)
    assert done.returncode == 0, done.stderr
    cases = [json.loads(line) for line in (folder / "cases.jsonl").read_text().splitlines()]
    (folder / "cases.jsonl").write_text("".join(json.dumps({**c, "threshold": 0.4}) + "\n" for c in cases))
    done = sb("run", "suite.yaml", "--no-progress", "--store", "h.sqlite", "--output", "b.json", cwd=folder)
    assert done.returncode == 0, done.stderr
    runs = json.loads(sb("history", "--store", "h.sqlite", "--json", cwd=folder).stdout)["runs"]
    new, old = runs[0]["key"], runs[1]["key"]
    served = Served("--store", "h.sqlite", cwd=folder)
    try:
        status, trend = served.get("/api/trends?suite=demo")
        assert status == 200
        change = trend["series"]["v1"][1]["change"]
        assert change["graded_differently"] == 30
        assert any("graded differently" in flag and "30" in flag for flag in change["flags"]), change["flags"]
        assert not change["significant"], "a change of grading is not a change of the variant"
        status, compared = served.get(f"/api/compare?a={old}&b={new}")
        assert status == 200
        assert compared["graded_differently"] == 30
        assert any("graded differently" in flag for flag in compared["comparisons"][0]["flags"])
    finally:
        served.stop()


def _copies(store: Path, runs: int) -> None:
    """The store's one run stored again as `runs` runs of one suite, a day apart (as a year of
    nightly runs leaves it), every table's rows copied under each new key."""
    import sqlite3

    conn = sqlite3.connect(store)
    tables = [t for (t,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    (key,) = conn.execute("SELECT key FROM runs").fetchone()
    for i in range(1, runs):
        for table in tables:
            columns = [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]
            keyed = "key" if table == "runs" else "run_key" if "run_key" in columns else None
            if keyed is None:
                continue
            chosen = ["?" if c == keyed else f"run_id || '-{i}'" if table == "runs" and c == "run_id" else
                      f"strftime('%Y-%m-%dT%H:%M:%SZ', datetime('2026-01-01', '+{i} day'))"
                      if table == "runs" and c == "started_at" else c for c in columns]
            conn.execute(f"INSERT INTO {table} ({', '.join(columns)}) SELECT {', '.join(chosen)} FROM {table} "
                         f"WHERE {keyed} = ?", (f"{key}-{i}", key))
    conn.commit()
    conn.close()


def test_a_trend_over_many_large_runs_holds_only_the_runs_it_still_compares(tmp_path, monkeypatch):
    """A trend kept every run's per-case tallies, input hashes and units until its end: 60 runs of
    10,000 cases held some 300 MB, the page's 500 (its cap) gigabytes. Each point is compared
    with the previous run of its variant only, so nothing older need be held."""
    from scoreboard.store.db import open_database
    from scoreboard.viewer import trend as figures

    folder = project(tmp_path / "p", cases=12)
    done = sb("run", "suite.yaml", "--no-progress", "--store", "h.sqlite", "--output", "a.json", cwd=folder)
    assert done.returncode == 0, done.stderr
    _copies(folder / "h.sqlite", 8)
    held: list[int] = []
    real = figures._RunCache.of

    def of(self, key):
        got = real(self, key)
        held.append(len(self.hashes))
        return got
    monkeypatch.setattr(figures._RunCache, "of", of)
    db = open_database(str(folder / "h.sqlite"), create=False)
    try:
        found = figures.trend(db, "demo")
    finally:
        db.close()
    points = found["series"]["v1"]
    assert len(points) == 8 and all(p["change"] for p in points[1:])
    assert all(p["change"]["cases"] == 12 for p in points[1:])
    assert max(held) <= 2, held


def test_the_oldest_point_a_trend_page_draws_is_compared_with_its_previous_run(tmp_path):
    """A suite with more runs than the trend's page (60 by default, of a year of nightly runs):
    its oldest point had no 'vs previous run' though the store holds that run, so a drop on
    the window's first day was never marked."""
    from tests.viewer.conftest import Served

    folder = project(tmp_path / "p", cases=12)
    done = sb("run", "suite.yaml", "--no-progress", "--store", "h.sqlite", "--output", "a.json", cwd=folder)
    assert done.returncode == 0, done.stderr
    _copies(folder / "h.sqlite", 6)
    runs = json.loads(sb("history", "--store", "h.sqlite", "--json", cwd=folder).stdout)["runs"]
    assert len(runs) == 6
    served = Served("--store", "h.sqlite", cwd=folder)
    try:
        status, found = served.get("/api/trends?suite=demo&limit=3")
    finally:
        served.stop()
    assert status == 200 and found["runs"] == 3 and found["limit"] == 3
    points = found["series"]["v1"]
    assert [p["key"] for p in points] == [r["key"] for r in runs[:3]][::-1]
    assert points[0]["change"] is not None and points[0]["change"]["previous"] == runs[3]["key"]
    assert points[0]["change"]["cases"] == 12


def test_runs_graded_by_another_graders_version_say_so_in_the_trend_and_the_compare(tmp_path):
    """The previous run was graded by an earlier build (graders version 1, whose json-fields read
    a key holding a dot otherwise): the trend paired its outcomes with this build's and said
    nothing, where `verify` names the graders versions."""
    import sqlite3

    from tests.viewer.conftest import Served

    folder = project(tmp_path / "p", cases=12)
    for name in ("a.json", "b.json"):
        done = sb("run", "suite.yaml", "--no-progress", "--store", "h.sqlite", "--output", name, cwd=folder)
        assert done.returncode == 0, done.stderr
    runs = json.loads(sb("history", "--store", "h.sqlite", "--json", cwd=folder).stdout)["runs"]
    new, old = runs[0]["key"], runs[1]["key"]
    conn = sqlite3.connect(folder / "h.sqlite")
    (head,) = conn.execute("SELECT head FROM runs WHERE key = ?", (old,)).fetchone()
    head = json.loads(head)
    head["run"]["versions"].pop("graders", None)  # a build from before graders were versioned: version 1
    conn.execute("UPDATE runs SET head = ? WHERE key = ?", (json.dumps(head), old))
    conn.commit()
    conn.close()
    served = Served("--store", "h.sqlite", cwd=folder)
    try:
        status, trend = served.get("/api/trends?suite=demo")
        status_c, compared = served.get(f"/api/compare?a={old}&b={new}")
    finally:
        served.stop()
    assert status == 200 and status_c == 200
    flags = trend["series"]["v1"][1]["change"]["flags"]
    assert any("graders version 1, then 2" in f for f in flags), flags
    assert any("graders version 1, then 2" in f for f in compared["comparisons"][0]["flags"])
