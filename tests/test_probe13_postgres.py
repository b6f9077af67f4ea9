"""The history store on a real PostgreSQL server (the tests' own, tests/store/pg.py) probed from
the outside: the server dropping a run's connection part way, a store whose tables were changed
by hand, and the same viewer questions asked of a SQLite and a PostgreSQL copy of one history."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from scoreboard.store.migrations import MIGRATIONS
from tests.cli_inprocess import run_cli
from tests.store.conftest import postgres

FIXTURES = (postgres,)  # the session's PostgreSQL server, as tests/store/ uses it

SUITE = """name: p13
cases: cases.jsonl
graders: [{exact: {}}]
variants:
  v1:
    subject: {type: python, function: "subj:answer", model_free: true}
"""

#: a subject that, at case c03, has the server end every other connection to the store's
#: database (an administrator, a restart, a failover): the run's own connection among them
SUBJECT = """import os

def answer(text):
    if text == "q3" and os.environ.get("P13_DROP_URL"):
        import psycopg

        with psycopg.connect(os.environ["P13_DROP_URL"], autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = "
                          "current_database() AND pid <> pg_backend_pid()")
    return "yes" if text[-1] in "02468" else "no"
"""


def sb(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    """`python -m scoreboard ARGS`, in-process (no test here is about the process)."""
    return run_cli(args, cwd, {**os.environ, **(env or {})})


def project(folder: Path, cases: int = 8) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "subj.py").write_text(SUBJECT)
    (folder / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i:02d}", "input": f"q{i}", "expected": "yes"})
                                                + "\n" for i in range(cases)))
    (folder / "suite.yaml").write_text(SUITE)
    return folder


def database(server, name: str) -> str:
    return server.create_database(f"p13_{os.getpid()}_{name}")


def test_a_run_whose_connection_the_server_drops_part_way_is_still_stored(postgres, tmp_path):
    """The server ends the run's idle connection part way (a restart between two batches): the
    next batch's BEGIN failed with 'terminating connection due to administrator command', the
    run gave up on the store for good and ended `interrupted` there, though the server was up
    again at once. The connection is made again and the run is stored whole."""
    url = database(postgres, "drop")
    folder = project(tmp_path / "p")
    done = sb("run", "suite.yaml", "--no-progress", "--store", url, "--concurrency", "1", cwd=folder,
              env={"P13_DROP_URL": url})
    assert done.returncode == 3 or done.returncode == 0, done.stderr
    assert "warning" not in done.stderr, done.stderr
    listed = json.loads(sb("history", "--store", url, "--json", cwd=folder).stdout)["runs"]
    assert [r["status"] for r in listed] == ["completed"], listed
    report = next((folder / "eval-results" / "p13").glob("*.json"))
    checked = sb("verify", str(report), "--store", url, cwd=folder)
    assert checked.returncode == 0 and "matches the report" in checked.stdout, checked.stdout + checked.stderr


#: a subject that closes the store's database at case c03 (connections refused, the run's own
#: ended), waits past a batch's flush at c04, and opens it again at c06 (with P13_STAY_AWAY, not
#: before the run ends): the server was away a while
OUTAGE = """import os
import time

def answer(text):
    url, admin_url = os.environ["P13_URL"], os.environ["P13_ADMIN_URL"]
    name = url.rsplit("/", 1)[1]
    if text == "q3" or (text == "q6" and not os.environ.get("P13_STAY_AWAY")):
        import psycopg

        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS {"false" if text == "q3" else "true"}')
            if text == "q3":
                admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (name,))
    if text == "q4":
        time.sleep(1.2)  # a batch is written at least once a second: this one finds the store away
    return "yes" if text[-1] in "02468" else "no"
"""


def test_a_run_the_store_failed_part_way_is_stored_from_its_report_at_the_end(postgres, tmp_path):
    """The server refuses the run's connections for a while part way (a batch fails), and is
    back before the run ends: the run gave up on the store and ended `interrupted` there, while
    a run of 2,000 attempts or more (its writer process) was stored from its report. Both say
    the failure, and both store the run from its report at the end."""
    url = database(postgres, "outage")
    folder = project(tmp_path / "p")
    (folder / "subj.py").write_text(OUTAGE)
    done = sb("run", "suite.yaml", "--no-progress", "--store", url, "--concurrency", "1", cwd=folder,
              env={"P13_URL": url, "P13_ADMIN_URL": postgres.url()})
    assert done.returncode in (0, 3), done.stderr
    assert "the run goes on without it" in done.stderr, done.stderr  # the failure is said
    warning = next(line for line in done.stderr.splitlines() if "the run goes on without it" in line)
    assert "StoreLost" not in warning and "field 'store'" not in warning, warning  # its location said once
    assert "storing the run from its report" in done.stderr and "not fully stored" not in done.stderr, done.stderr
    listed = json.loads(sb("history", "--store", url, "--json", cwd=folder).stdout)["runs"]
    assert [r["status"] for r in listed] == ["completed"], listed
    report = next((folder / "eval-results" / "p13").glob("*.json"))
    checked = sb("verify", str(report), "--store", url, cwd=folder)
    assert checked.returncode == 0 and "matches the report" in checked.stdout, checked.stdout + checked.stderr


@pytest.fixture(params=["sqlite", "postgresql"])
def stored(request, tmp_path) -> tuple[str, Path]:
    """(store, project folder): one run of the project stored in a fresh store of each kind."""
    spec = str(tmp_path / "h.sqlite") if request.param == "sqlite" else database(
        request.getfixturevalue("postgres"), f"s{len(str(tmp_path))}_{abs(hash(str(tmp_path))) % 10**8}")
    folder = project(tmp_path / "p")
    done = sb("run", "suite.yaml", "--no-progress", "--store", spec, cwd=folder)
    assert done.returncode in (0, 3), done.stderr
    return spec, folder


def execute(spec: str, statement: str) -> None:
    if spec.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(spec, autocommit=True) as conn:
            conn.execute(statement)
    else:
        import sqlite3

        conn = sqlite3.connect(spec)
        try:
            conn.execute(statement)
            conn.commit()
        finally:
            conn.close()


@pytest.mark.parametrize("change, named", [("ALTER TABLE variants DROP COLUMN units", "table variants has no column units"),
                                           ("DROP TABLE field_results", "table field_results is missing")])
def test_a_store_whose_tables_were_changed_by_hand_is_a_one_line_error(stored, change, named):
    """A store recording its schema version (5 then) whose tables lack a column or a table of it (an
    administrator's change, part of a database restored from an older backup): `history` was
    'internal error: UndefinedColumn ... LINE 1: ...' over three lines, exit 2, and a run went
    ahead with the store failing under it. It is refused on opening: one line, exit 1."""
    spec, folder = stored
    execute(spec, change)
    listed = sb("history", "--store", spec, cwd=folder)
    assert listed.returncode == 1, listed.stdout + listed.stderr
    line = listed.stderr.strip()
    assert "\n" not in line and "internal error" not in line, line
    assert f"do not match its schema version {len(MIGRATIONS)}" in line and named in line, line
    again = sb("run", "suite.yaml", "--no-progress", "--store", spec, cwd=folder)
    assert again.returncode == 1 and named in again.stderr, again.stderr
    assert len(list((folder / "eval-results" / "p13").glob("*.json"))) == 1  # nothing ran


def test_a_run_the_store_lost_for_good_is_named_and_imported_later(postgres, tmp_path):
    """The server stays away to the run's end: the warning names the `store import` to run,
    `store verify` of the report says the stored run never recorded its end (it said 'report
    SHA-256 ... differs from the stored None...: the file changed since it was stored'), and the
    import it names stores the run, which `verify --store` then finds matching its report."""
    url = database(postgres, "away")
    folder = project(tmp_path / "p")
    (folder / "subj.py").write_text(OUTAGE)
    done = sb("run", "suite.yaml", "--no-progress", "--store", url, "--concurrency", "1", cwd=folder,
              env={"P13_URL": url, "P13_ADMIN_URL": postgres.url(), "P13_STAY_AWAY": "1"})
    assert done.returncode in (0, 3), done.stderr
    report = next((folder / "eval-results" / "p13").glob("*.json"))
    assert f"scoreboard store import {report.relative_to(folder)}" in done.stderr, done.stderr
    execute(postgres.url(), f'ALTER DATABASE "{url.rsplit("/", 1)[1]}" ALLOW_CONNECTIONS true')
    checked = sb("store", "verify", str(report), "--store", url, cwd=folder)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert "stored None…" not in checked.stdout and "never recorded its end" in checked.stdout, checked.stdout
    assert sb("store", "import", str(report), "--store", url, cwd=folder).returncode == 0
    checked = sb("verify", str(report), "--store", url, cwd=folder)
    assert checked.returncode == 0 and "matches the report" in checked.stdout, checked.stdout + checked.stderr
    listed = json.loads(sb("history", "--store", url, "--json", cwd=folder).stdout)["runs"]
    assert [(r["status"], r["attempts"]) for r in listed] == [("completed", 8)], listed


def test_a_name_postgresql_cannot_index_is_said_in_one_line_per_warning(postgres, tmp_path):
    """A variant name of 1,500 random CJK characters (4,500 bytes; SQLite stores it) is over
    PostgreSQL's index row limit: the run's warning spread over four lines (the server's DETAIL
    and HINT), and `store import` printed them with literal '\\n' and counted the report 'not
    readable'. The run is refused before it starts, in one line naming the suite file and the
    field (a name the store indexes is at most 800 bytes, tests/test_probe15_store.py); a report
    holding that name (edited) is 'not stored' by `store import`, in one line naming the report
    and the field, before the server is asked. (A case id that long is stored:
    tests/test_probe14_store.py.)"""
    import json
    import random

    url = database(postgres, "longid")
    folder = project(tmp_path / "p")
    rng = random.Random(13)
    long_name = "".join(chr(rng.randrange(0x4E00, 0x9FFF)) for _ in range(1500))
    (folder / "long.yaml").write_text(SUITE.replace("  v1:\n    subject:", f"  ? {long_name}\n  : subject:"))
    done = sb("run", "long.yaml", "--no-progress", "--store", url, cwd=folder)
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("scoreboard: error: long.yaml") and "variants" in lines[0], lines
    assert "4,500 bytes" in lines[0] and not (folder / "eval-results").exists(), lines
    assert sb("run", "suite.yaml", "--no-progress", "--store", "none", cwd=folder).returncode in (0, 3)
    report = next(folder.glob("eval-results/*/*.json"))
    data = json.loads(report.read_text(encoding="utf-8"))
    data["plan"]["variants"][0]["name"] = long_name
    for attempt in data["attempts"]:
        attempt["variant"] = long_name
    data["summary"]["variants"] = {long_name: data["summary"]["variants"]["v1"]}
    report.write_text(json.dumps(data), encoding="utf-8")
    imported = sb("store", "import", "eval-results", "--store", url, cwd=folder)
    assert imported.returncode == 1, imported.stdout + imported.stderr
    assert "1 not stored" in imported.stdout and "not readable" not in imported.stdout, imported.stdout
    assert "\\n" not in imported.stderr and imported.stderr.count("\n") == 1, imported.stderr
    assert "plan.variants[0].name" in imported.stderr and "index row size" not in imported.stderr, imported.stderr


def test_reading_a_database_with_no_store_creates_none(postgres, tmp_path):
    """`history`, `store info`, `view` or `verify --store` of a PostgreSQL database that holds no
    store (the server's default database, a typo of the team's) made eleven tables in it and
    listed no runs: reading never creates a store, as a SQLite path that is not there is an
    error. It is an error naming the store, and the database is left as it was."""
    import psycopg

    url = database(postgres, "empty")
    folder = project(tmp_path / "p")
    assert sb("run", "suite.yaml", "--no-progress", "--store", "none", cwd=folder).returncode in (0, 3)
    report = str(next((folder / "eval-results" / "p13").glob("*.json")))
    for command in (["history"], ["store", "info"], ["view", "--port", "0"], ["verify", report]):
        done = sb(*command, "--store", url, cwd=folder)
        assert done.returncode == 1, (command, done.stdout, done.stderr)
        line = done.stderr.strip()
        assert "\n" not in line and "no history store in this database yet" in line and url in line, (command, line)
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = current_schema()"
                            ).fetchone()[0] == 0
    stored = sb("run", "suite.yaml", "--no-progress", "--store", url, cwd=folder)  # a run does make one
    assert stored.returncode in (0, 3), stored.stderr
    listed = sb("history", "--store", url, "--json", cwd=folder)
    assert listed.returncode == 0 and len(json.loads(listed.stdout)["runs"]) == 1, listed.stderr
