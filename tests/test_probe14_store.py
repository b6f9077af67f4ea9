"""The history store's limits on a real PostgreSQL server (the tests' own, tests/store/pg.py) and
on SQLite, probed from the outside: a case id the loader accepts but PostgreSQL could not index,
a store of the previous schema upgraded in place, a server that dies during `store import`, and
the same search answered alike by both kinds of store."""

from __future__ import annotations

import hashlib
import json
import os
import random
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_inprocess import run_cli
from tests.store.conftest import postgres

FIXTURES = (postgres,)  # the session's PostgreSQL server, as tests/store/ uses it

#: 3,000 random letters and digits: 3,000 bytes that do not compress (PostgreSQL's btree limit is ~2,700)
LONG_ID = "".join(random.Random(14).choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(3000))
#: 4,000 random CJK characters: 12,000 bytes of UTF-8, under the loader's 4,096-character limit
WIDE_ID = "".join(chr(random.Random(41 + i).randrange(0x4E00, 0x9FFF)) for i in range(4000))


def sb(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    """`python -m scoreboard ARGS`, in-process (no test here is about the process)."""
    return run_cli(args, cwd, {**os.environ, **(env or {})})


def project(folder: Path, ids: list[str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "echo.py").write_text("def answer(text):\n    return text\n")
    (folder / "cases.jsonl").write_text("".join(json.dumps({"id": cid, "input": f"q{i}", "expected": f"q{i % 2}"})
                                                + "\n" for i, cid in enumerate(ids)), encoding="utf-8")
    return folder


def run(store: str, folder: Path) -> Path:
    done = sb("run", "--cases", "cases.jsonl", "--subject", "python:echo:answer", "--no-progress", "--store", store,
              cwd=folder)
    assert done.returncode in (0, 3), done.stderr
    assert "warning" not in done.stderr, done.stderr
    return max(folder.glob("eval-results/*/*.json"), key=lambda p: p.stat().st_mtime)


def fresh(kind: str, request, tmp_path: Path, name: str) -> str:
    if kind == "sqlite":
        return str(tmp_path / f"{name}.sqlite")
    server = request.getfixturevalue("postgres")
    return server.create_database(f"p14_{os.getpid()}_{name}_{abs(hash(str(tmp_path))) % 10**8}")


def answers(spec: str, ids: list[str]) -> dict:
    """What the viewer's queries answer of the store's one run, in plain data."""
    from scoreboard.store import queries
    from scoreboard.store.locate import open_existing

    store = open_existing(spec)
    try:
        db = store.db
        (key, suite), = db.all("SELECT key, suite FROM runs")
        page, _ = queries.case_page(db, key, limit=100)
        out = {"cases": [(c["case_id"], c["variants"]) for c in page],
               "tallies": queries.case_tallies(db, key), "fields": queries.field_tallies(db, key)}
        for cid in ids:
            detail = queries.case_detail(db, key, cid)
            assert detail is not None, cid[:20]
            out[cid] = ([a["case_id"] for a in detail["attempts"]], detail["case"]["id"],
                        [(h["run_id"], h["variants"]) for h in queries.case_history(
                            db, suite, cid, detail["case"].get("input_hash"))])
        return out
    finally:
        store.close()


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_every_case_id_the_loader_accepts_is_stored_on_both_kinds_of_store(kind, request, tmp_path):
    """A case id of 3,000 random letters (or 4,000 CJK characters, 12,000 bytes) is accepted by
    the case loader and stored by SQLite; PostgreSQL refused it ('index row size ... exceeds
    btree version 4 maximum 2704'), so the run stepped aside from the store and `store import`
    said 'not stored'. The store keys a case by its id's SHA-256, and both kinds store it and
    answer the viewer's questions alike."""
    spec = fresh(kind, request, tmp_path, "long")
    ids = [LONG_ID, WIDE_ID, "short"]
    folder = project(tmp_path / "p", ids)
    report = run(spec, folder)
    listed = json.loads(sb("history", "--store", spec, "--json", cwd=folder).stdout)["runs"]
    assert [(r["status"], r["attempts"]) for r in listed] == [("completed", 3)], listed
    checked = sb("verify", str(report), "--store", spec, cwd=folder)
    assert checked.returncode == 0 and "matches the report" in checked.stdout, checked.stdout + checked.stderr
    again = sb("store", "import", str(report), "--store", spec, cwd=folder)
    assert again.returncode == 0 and "1 already stored" in again.stdout, again.stdout + again.stderr
    got = answers(spec, ids)
    assert [cid for cid, _ in got["cases"]] == ids
    if kind == "postgresql":  # the same history in SQLite answers the same
        other = str(tmp_path / "same.sqlite")
        assert sb("store", "import", str(report), "--store", other, cwd=folder).returncode == 0
        assert answers(other, ids) == got


def _old_store_rows(report: Path, folder: Path) -> dict[str, tuple[list[str], list[tuple]]]:
    """Every table's rows of `report` stored by this scoreboard, in the columns schema version 5 has."""
    from scoreboard.store.migrations import MIGRATIONS

    old = sqlite3.connect(":memory:")
    for _, statements in MIGRATIONS[:5]:
        for statement in statements:
            old.execute(statement)
    current = folder / "now.sqlite"
    assert sb("store", "import", str(report), "--store", str(current), cwd=folder).returncode == 0
    conn = sqlite3.connect(current)
    out = {}
    for (table,) in old.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
        columns = [row[1] for row in old.execute(f"PRAGMA table_info({table})")]
        out[table] = (columns, conn.execute(f"SELECT {', '.join(columns)} FROM {table}").fetchall())
    conn.close()
    return out


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_a_store_of_schema_version_5_is_upgraded_in_place_with_its_data(kind, request, tmp_path):
    """A store written by the previous scoreboard (schema version 5: cases keyed by their raw
    id) holding a run and a review is opened by this one: it is upgraded in place, the run still
    matches its report, its reviews are still there, and a run with a long id is stored in it."""
    from scoreboard.store.migrations import MIGRATIONS

    folder = project(tmp_path / "p", ["c0", "c1", "Straße-İ"])
    done = sb("run", "--cases", "cases.jsonl", "--subject", "python:echo:answer", "--no-progress", "--store", "none",
              cwd=folder)
    assert done.returncode in (0, 3), done.stderr
    report = next(folder.glob("eval-results/*/*.json"))
    rows = _old_store_rows(report, folder)
    spec = fresh(kind, request, tmp_path, "old")
    if kind == "sqlite":
        conn, mark = sqlite3.connect(spec), "?"
    else:
        import psycopg

        conn, mark = psycopg.connect(spec, autocommit=True), "%s"
    for _, statements in MIGRATIONS[:5]:
        for statement in statements:
            conn.execute(statement)
    conn.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
                 "applied_at TEXT NOT NULL)")
    for version, (name, _) in enumerate(MIGRATIONS[:5], start=1):
        conn.execute(f"INSERT INTO schema_migrations VALUES ({mark}, {mark}, '2026-01-01T00:00:00Z')", (version, name))
    for table, (columns, values) in rows.items():
        for row in values:
            conn.execute(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join([mark] * len(columns))})", row)
    attempt = json.loads(rows["attempts"][1][0][columns_index(rows, "attempts", "record")])
    conn.execute(f"INSERT INTO reviews (case_id, output_hash, reviewer_id, rubric_version, input_hash, reviewer_kind, "
                 f"ratings, verdict, notes, run_key, created_at) VALUES ({', '.join([mark] * 11)})",
                 (attempt["case_id"], attempt["output_hash"], "ann", "v1", attempt["input_hash"], "human", "{}", 1,
                  "fine", None, "2026-01-01T00:00:00Z"))
    if kind == "sqlite":
        conn.commit()
    conn.close()

    checked = sb("verify", str(report), "--store", spec, cwd=folder)  # opening it upgrades it
    assert checked.returncode == 0 and "matches the report" in checked.stdout, checked.stdout + checked.stderr
    info = json.loads(sb("store", "info", "--store", spec, "--json", cwd=folder).stdout)
    assert (info["schema_version"], info["runs"], info["attempts"], info["reviews"]) == (len(MIGRATIONS), 1, 3, 1)
    exported = sb("store", "reviews", "--output", "-", "--store", spec, cwd=folder)
    entries = json.loads(exported.stdout)["entries"]
    assert [(e["case_id"], e["reviewer_id"], e["notes"]) for e in entries] == [(attempt["case_id"], "ann", "fine")]
    got = answers(spec, ["c0", "c1", "Straße-İ"])
    assert [cid for cid, _ in got["cases"]] == ["c0", "c1", "Straße-İ"]
    later = project(tmp_path / "q", [LONG_ID])
    run(spec, later)
    assert len(json.loads(sb("history", "--store", spec, "--json", cwd=folder).stdout)["runs"]) == 2


def columns_index(rows: dict, table: str, column: str) -> int:
    return rows[table][0].index(column)


def test_the_store_keys_a_case_by_the_sha256_of_its_id(tmp_path):
    """The hash is of the id's UTF-8 bytes, the same on both kinds of store (a store copied or
    compared by hand finds the same keys)."""
    from scoreboard.store.migrations import case_key

    assert case_key("c1") == hashlib.sha256(b"c1").hexdigest()
    assert case_key(WIDE_ID) == hashlib.sha256(WIDE_ID.encode()).hexdigest()


#: a batch PostgreSQL refuses part way (a value over its index row limit at row 500 of 2,000)
_PIPELINE = """import random, sys
from scoreboard.store.db import open_database
db = open_database(sys.argv[1])
r = random.Random(3)
big = "".join(chr(r.randrange(0x4E00, 0x9FFF)) for _ in range(1500))
for _ in range(3):
    try:
        with db.write():
            db.executemany("INSERT INTO run_tags (run_key, tag) VALUES (?, ?)",
                           [(f"k{j}", big if j == 500 else f"t{j}") for j in range(2000)])
    except Exception as exc:
        print(type(exc).__name__)
"""


def test_a_batch_the_server_refuses_part_way_prints_nothing_but_the_stores_own_lines(postgres, tmp_path):
    """psycopg's own log line 'error ignored terminating <psycopg.Pipeline [INERROR, pipeline=ON]
    (host=... database=...) at 0x...>: pipeline aborted' reached stderr (logging's last resort)
    beside the store's one-line warning, now and then, when a batch failed part way: a run's
    stderr held a line that was not scoreboard's. It goes nowhere."""
    url = postgres.create_database(f"p14_{os.getpid()}_pipe")
    done = subprocess.run([sys.executable, "-c", _PIPELINE, url], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path, check=False)
    assert done.stdout.split() == ["ProgramLimitExceeded"] * 3, done.stdout + done.stderr
    assert done.stderr == "", done.stderr


def _reports(folder: Path, count: int) -> None:
    project(folder, ["c0", "c1"])
    for _ in range(count):
        done = sb("run", "--cases", "cases.jsonl", "--subject", "python:echo:answer", "--no-progress", "--store",
                  "none", cwd=folder)
        assert done.returncode in (0, 3), done.stderr


#: `store import` with the server going away after the first report is stored (an outage, a
#: failover): the store's database stops taking connections and its connections are ended
_DIES = """import sys
import psycopg
from scoreboard.cli.main import main
from scoreboard.store.history import HistoryStore

url, admin = sys.argv[1], sys.argv[2]
original, calls = HistoryStore.store_report, []

def store_report(self, path, **kw):
    calls.append(path)
    if len(calls) == 2:
        name = url.rsplit("/", 1)[1]
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
            conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (name,))
    return original(self, path, **kw)

HistoryStore.store_report = store_report
sys.exit(main(["store", "import", "eval-results", "--store", url]))
"""


def test_a_server_that_dies_during_store_import_is_an_execution_failure_not_bad_input(postgres, tmp_path):
    """The server goes away after the first of three reports is stored: `store import` said
    'not stored: ... lost the connection to the store and cannot connect again' for each of the
    other two and exited 1, the code for bad input (nothing was wrong with the reports). It
    exits 2 (an execution failure), says in one line the store that failed and the import to
    run again, and the import it names stores the rest once the server is back."""
    url = postgres.create_database(f"p14_{os.getpid()}_dies")
    folder = tmp_path / "p"
    _reports(folder, 3)
    done = subprocess.run([sys.executable, "-c", _DIES, url, postgres.url()], capture_output=True, text=True,
                          timeout=180, cwd=folder, check=False)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "1 stored" in done.stdout and "2 not stored" in done.stdout, done.stdout
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and url in lines[0] and "lost the connection" in lines[0], done.stderr
    rerun = f"scoreboard store import eval-results --store {url}"
    assert rerun in lines[0], lines[0]
    with __import__("psycopg").connect(postgres.url(), autocommit=True) as conn:
        conn.execute(f'ALTER DATABASE "{url.rsplit("/", 1)[1]}" ALLOW_CONNECTIONS true')
    again = sb(*rerun.split()[1:], cwd=folder)
    assert again.returncode == 0 and "2 stored" in again.stdout and "1 already stored" in again.stdout, again.stdout


def _search(spec: str, text: str) -> tuple[list[str], list[str]]:
    """(the suites `history --search` lists, the case ids the viewer's case search finds)."""
    from scoreboard.store import queries
    from scoreboard.store.locate import open_existing

    store = open_existing(spec)
    try:
        runs, _ = queries.list_runs(store.db, queries.RunFilter(search=text))
        found = []
        for run in runs:
            page, _ = queries.case_page(store.db, run["key"], search=text)
            found += [c["case_id"] for c in page]
        return sorted({r["suite"] for r in runs}), found
    finally:
        store.close()


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_searching_folds_letters_the_same_way_on_both_kinds_of_store(kind, request, tmp_path):
    """`İ` (U+0130): SQLite folded it by Python's rule ('i̇', i and a combining dot) and
    PostgreSQL by the server's locale ('i', or not at all under C), so `history --search İst`
    and the viewer's case search found the run and the case in one store and not the other (and
    'ist' the other way round). Both stores fold by one rule (Python's casefold, kept in the
    store), and 'STRASSE' finds 'Straße'."""
    spec = fresh(kind, request, tmp_path, "fold")
    folder = project(tmp_path / "p", ["İstanbul-1", "Straße-2", "plain-3"])
    (folder / "suite.yaml").write_text("name: İstanbul-Straße\ncases: cases.jsonl\ngraders: [{exact: {}}]\n"
                                       "variants:\n  v1:\n    subject: {type: python, function: \"echo:answer\", "
                                       "model_free: true}\n")
    done = sb("run", "suite.yaml", "--no-progress", "--store", spec, "--tag", "Æther", cwd=folder)
    assert done.returncode in (0, 3), done.stderr
    suite = "İstanbul-Straße"
    assert _search(spec, "İst") == ([suite], ["İstanbul-1"])
    assert _search(spec, "i̇stanbul") == ([suite], ["İstanbul-1"])  # what Python folds İ to
    assert _search(spec, "ist") == ([], [])  # 'i̇st' holds no 'ist', in either store
    assert _search(spec, "STRASSE") == ([suite], ["Straße-2"])
    assert _search(spec, "æTHER") == ([suite], [])  # the tag
    listed = sb("history", "--store", spec, "--search", "İST", "--json", cwd=folder)
    assert [r["suite"] for r in json.loads(listed.stdout)["runs"]] == [suite], listed.stdout + listed.stderr
