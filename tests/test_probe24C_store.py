"""Probe 24C: the history store used as a team shares one (SQLite and a real PostgreSQL on
loopback, tests/store/pg.py), from the outside: `store verify`, imports of reports of every
shape, and what `history` prints against what the reports say."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from tests.cli_inprocess import run_cli
from tests.store.conftest import postgres

FIXTURES = (postgres,)  # the session's PostgreSQL server, as tests/store/ uses it
ROOT = Path(__file__).resolve().parents[1]
TRANSCRIPTS = ROOT / "tests" / "fixtures" / "transcripts"


def sb(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    """`python -m scoreboard ARGS`, in-process (no test here is about the process)."""
    return run_cli(args, cwd, {**os.environ, "SCOREBOARD_STORE": "none", **(env or {})})


def fresh(kind: str, request, tmp_path: Path, name: str) -> str:
    if kind == "sqlite":
        return str(tmp_path / f"{name}.sqlite")
    server = request.getfixturevalue("postgres")
    return server.create_database(f"p24c_{os.getpid()}_{name}_{abs(hash(str(tmp_path))) % 10**8}")


def connect(spec: str):
    """(connection, placeholder) of a store, as a person with a SQL shell would open it."""
    if spec.startswith("postgresql://"):
        import psycopg

        return psycopg.connect(spec, autocommit=True), "%s"
    return sqlite3.connect(spec, isolation_level=None), "?"


def scored(tmp_path: Path, name: str = "matching") -> Path:
    """A `scoreboard score` report of a fixture transcript (7 cases, one an error), no store."""
    shutil.copy(TRANSCRIPTS / f"{name}.json", tmp_path / f"{name}.json")
    done = sb("score", f"{name}.json", "--output-dir", "out", cwd=tmp_path)
    assert done.returncode in (0, 2, 3), done.stderr
    return next((tmp_path / "out").glob("*/*.json"))


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_store_verify_checks_the_judged_and_units_figures_history_prints(kind, request, tmp_path):
    """`history` prints a variant's judged attempts from its stored `errors_not_graded` and its
    units from `units`; `store verify` compared every other figure of the variant's row but not
    these two, so a row changed there (by hand, or by a writer gone wrong) printed `6/6 judged,
    ..., 3 units` for a report of 6/7 judged and 7 cases while verify said `matches`."""
    report = scored(tmp_path)
    spec = fresh(kind, request, tmp_path, "v")
    assert sb("store", "import", str(report), "--store", spec, cwd=tmp_path).returncode == 0
    run = json.loads(report.read_text())["run"]
    ok = sb("store", "verify", f"{run['suite']}/{run['id']}", "--store", spec, cwd=tmp_path)
    assert ok.returncode == 0 and "matches" in ok.stdout, ok.stdout + ok.stderr
    before = sb("history", "--store", spec, cwd=tmp_path).stdout
    assert "(6/7 judged, 1 error, 7 cases" in before, before
    conn, mark = connect(spec)
    conn.execute(f"UPDATE variants SET errors_not_graded = {mark}, units = {mark}", (1, 3))
    conn.close()
    after = sb("history", "--store", spec, cwd=tmp_path).stdout
    assert "6/6 judged" in after and "3 units" in after, after  # what a reader is now shown
    checked = sb("store", "verify", f"{run['suite']}/{run['id']}", "--store", spec, cwd=tmp_path)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert "variants['recorded']: stored figures differ from the report's summary" in checked.stdout, checked.stdout
    assert f"scoreboard store import --replace {report}" in checked.stdout, checked.stdout


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_a_damaged_stored_run_is_stored_again_by_the_import_the_errors_name(kind, request, tmp_path):
    """A stored run whose rows were changed or damaged: the errors said `scoreboard store import`
    of the report stores it again, but an import of a report already stored (same SHA-256) leaves
    the stored copy as it is, so the damage stayed. `store import --replace` stores it again."""
    report = scored(tmp_path)
    spec = fresh(kind, request, tmp_path, "d")
    assert sb("store", "import", str(report), "--store", spec, cwd=tmp_path).returncode == 0
    run = json.loads(report.read_text())["run"]
    conn, mark = connect(spec)
    conn.execute("UPDATE summaries SET summary = '[1,'")
    conn.execute("UPDATE runs SET variants = 'not json'")
    conn.execute(f"UPDATE variants SET passed = {mark}", (0,))
    conn.close()
    broken = sb("history", "--store", spec, cwd=tmp_path)
    assert broken.returncode == 1 and "not valid JSON" in broken.stderr, broken.stdout + broken.stderr
    assert "`scoreboard store import --replace` of the run's report stores it again" in broken.stderr, broken.stderr
    refused = sb("store", "verify", f"{run['suite']}/{run['id']}", "--store", spec, cwd=tmp_path)
    assert refused.returncode == 1 and "--replace` of the run's report" in refused.stderr, refused.stderr
    plain = sb("store", "import", str(report), "--store", spec, cwd=tmp_path)
    assert plain.returncode == 0 and "1 already stored (unchanged)" in plain.stdout, plain.stdout + plain.stderr
    again = sb("store", "import", "--replace", str(report), "--store", spec, cwd=tmp_path)
    assert again.returncode == 0 and "0 stored, 1 replaced" in again.stdout, again.stdout + again.stderr
    checked = sb("store", "verify", f"{run['suite']}/{run['id']}", "--store", spec, cwd=tmp_path)
    assert checked.returncode == 0 and "matches" in checked.stdout, checked.stdout + checked.stderr
    shown = sb("history", "--store", spec, cwd=tmp_path)
    assert shown.returncode == 0 and "(6/7 judged, 1 error, 7 cases" in shown.stdout, shown.stdout + shown.stderr
    assert len(json.loads(sb("history", "--json", "--store", spec, cwd=tmp_path).stdout)["runs"]) == 1


def test_store_import_of_a_folder_finds_a_report_whose_keys_another_tool_reordered(tmp_path):
    """`store import FOLDER` looked for a report's schema in a file's first 256 bytes only: a report
    whose keys another tool reordered (`jq -S`, `attempts` first) was skipped without a word
    (`0 stored, ..., 0 not stored`, exit 0), while `verify` and `store import FILE` take it. A JSON
    file that only names a report's schema inside (not its own top-level `schema`) is still no report."""
    report = scored(tmp_path)
    folder = tmp_path / "shared"
    folder.mkdir()
    data = json.loads(report.read_text())
    (folder / "sorted.json").write_text(json.dumps(data, sort_keys=True, indent=1))
    assert not (folder / "sorted.json").read_bytes()[:256].count(b"scoreboard.report/")
    (folder / "notes.json").write_text(json.dumps({"about": [{"schema": data["schema"]}], "zz": "x" * 500}))
    spec = str(tmp_path / "h.sqlite")
    done = sb("store", "import", str(folder), "--store", spec, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 stored, 0 replaced, 0 already stored (unchanged), 0 not stored" in done.stdout, done.stdout
    shown = json.loads(sb("history", "--json", "--store", spec, cwd=tmp_path).stdout)["runs"]
    assert [(r["suite"], r["run_id"]) for r in shown] == [(data["run"]["suite"], data["run"]["id"])]
    checked = sb("store", "verify", str(folder / "sorted.json"), "--store", spec, cwd=tmp_path)
    assert checked.returncode == 0 and "matches" in checked.stdout, checked.stdout + checked.stderr


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_store_import_tag_labels_a_run_already_stored(kind, request, tmp_path):
    """`store import eval-results/ --tag nightly` after the runs were recorded as they ran: every
    report was `already stored (unchanged)` and the tag was dropped without a word, so
    `history --tag nightly` listed nothing. The tag labels the run; its stored rows are untouched."""
    report = scored(tmp_path)
    spec = fresh(kind, request, tmp_path, "t")
    assert sb("store", "import", str(report), "--store", spec, cwd=tmp_path).returncode == 0
    again = sb("store", "import", str(report.parent), "--tag", "nightly", "--tag", "odd %_ tag", "--store", spec,
               cwd=tmp_path)
    assert again.returncode == 0 and "1 already stored (unchanged)" in again.stdout, again.stdout + again.stderr
    for tag in ("nightly", "odd %_ tag"):
        runs = json.loads(sb("history", "--json", "--tag", tag, "--store", spec, cwd=tmp_path).stdout)["runs"]
        assert [r["run_id"] for r in runs] == [json.loads(report.read_text())["run"]["id"]], (tag, runs)
    assert json.loads(sb("history", "--json", "--tag", "odd", "--store", spec, cwd=tmp_path).stdout)["runs"] == []
    run = json.loads(report.read_text())["run"]
    checked = sb("store", "verify", f"{run['suite']}/{run['id']}", "--store", spec, cwd=tmp_path)
    assert checked.returncode == 0 and "matches" in checked.stdout, checked.stdout + checked.stderr
