"""The history store's limits on long values a user controls, on a real PostgreSQL server (the
tests' own, tests/store/pg.py) and on SQLite alike, probed from the outside: a field's name (an
expected value's key), a variant's name, a report's suite, time, status and reviewer, and the
viewer's review of a case whose id is longer than a reviewer's name."""

from __future__ import annotations

import json
import os
import random
import sqlite3
import subprocess
from pathlib import Path

import pytest

from tests.cli_inprocess import run_cli
from tests.store.conftest import postgres

FIXTURES = (postgres,)  # the session's PostgreSQL server, as tests/store/ uses it


def noise(n: int, seed: int) -> str:
    """`n` random letters and digits: n bytes that do not compress (PostgreSQL's btree limit is ~2,700)."""
    r = random.Random(seed)
    return "".join(r.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(n))


LONG = noise(3000, 15)


def sb(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    """`python -m scoreboard ARGS`, in-process (no test here is about the process)."""
    return run_cli(args, cwd, {**os.environ, **(env or {})})


def fresh(kind: str, request, tmp_path: Path, name: str) -> str:
    if kind == "sqlite":
        return str(tmp_path / f"{name}.sqlite")
    server = request.getfixturevalue("postgres")
    return server.create_database(f"p15_{os.getpid()}_{name}_{abs(hash(str(tmp_path))) % 10**8}")


def project(folder: Path, *, key: str = "total", variant: str = "v", case_id: str = "c1") -> Path:
    """A suite of two cases whose expected value is an object with one key, graded by `json-fields`
    with no fields named (each top-level key of the expected value is a field)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "echo.py").write_text("def answer(text):\n    return text\n")
    cases = [{"id": case_id, "input": json.dumps({key: 1}), "expected": {key: 1}},
             {"id": "c2", "input": json.dumps({key: 2}), "expected": {key: 3}}]
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    suite = {"name": "s", "cases": "cases.jsonl", "graders": ["json-fields"],
             "variants": [{"name": variant, "subject": {"type": "python", "function": "echo:answer",
                                                         "model_free": True}}]}
    (folder / "suite.yaml").write_text(json.dumps(suite), encoding="utf-8")
    return folder


def run(store: str, folder: Path) -> Path:
    done = sb("run", "suite.yaml", "--no-progress", "--store", store, cwd=folder)
    assert done.returncode in (0, 3), done.stderr
    assert "warning" not in done.stderr, done.stderr
    return max(folder.glob("eval-results/*/*.json"), key=lambda p: p.stat().st_mtime)


def runs_in(spec: str, folder: Path) -> list[dict]:
    done = sb("history", "--store", spec, "--json", cwd=folder)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["runs"]


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_a_field_named_by_a_long_expected_key_is_stored_on_both_kinds_of_store(kind, request, tmp_path):
    """`json-fields` with no fields named grades each top-level key of the expected value: a key
    of 3,000 random letters is a field whose tallies PostgreSQL refused at the run's end ('index
    row size ... exceeds btree version 4 maximum 2704' for field_results), so the run stepped
    aside from the store. A field's tallies are keyed by its name's SHA-256 (schema version 8)."""
    spec = fresh(kind, request, tmp_path, "field")
    folder = project(tmp_path / "p", key=LONG)
    report = run(spec, folder)
    assert [(r["status"], r["attempts"]) for r in runs_in(spec, folder)] == [("completed", 2)]
    checked = sb("verify", str(report), "--store", spec, cwd=folder)
    assert checked.returncode == 0 and "matches the report" in checked.stdout, checked.stdout + checked.stderr

    from scoreboard.store import queries
    from scoreboard.store.locate import open_existing

    store = open_existing(spec)
    try:
        (key,), = store.db.all("SELECT key FROM runs")
        fields = queries.field_tallies(store.db, key)
    finally:
        store.close()
    assert LONG in json.dumps(fields)  # the whole name, kept in the row


def test_a_variant_name_no_store_can_index_is_refused_before_the_run(tmp_path):
    """A variant named with 3,000 letters ran, and PostgreSQL refused its rows part way through
    storing them (variants, attempts: the run's store warning, then a `store import` that could
    never store it). It is refused before the run starts, in one line naming the suite file and
    the field; nothing is run or written."""
    folder = project(tmp_path / "p", variant=LONG)
    done = sb("run", "suite.yaml", "--no-progress", "--store", str(tmp_path / "h.sqlite"), cwd=folder)
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("scoreboard: error: suite.yaml"), lines
    assert "variants[0].name" in lines[0] and "3,000 bytes" in lines[0] and "800" in lines[0], lines
    assert not (folder / "eval-results").exists() and not (tmp_path / "h.sqlite").exists()
    # a long name that fits (800 bytes: 200 four-byte letters) runs and is stored
    wide = "".join(chr(0x10000 + random.Random(i).randrange(0x1000)) for i in range(200))
    spec = str(tmp_path / "ok.sqlite")
    run(spec, project(tmp_path / "q", variant=wide))
    assert runs_in(spec, tmp_path / "q")[0]["variants"] == [wide]


def _edited(report: Path, out: Path, edit) -> Path:
    data = json.loads(report.read_text(encoding="utf-8"))
    edit(data)
    out.write_text(json.dumps(data), encoding="utf-8")
    return out


def _rename_variant(data: dict, name: str) -> None:
    old = data["plan"]["variants"][0]["name"]
    data["plan"]["variants"][0]["name"] = name
    for a in data["attempts"]:
        a["variant"] = name
    blocks = data["summary"]["variants"]
    blocks[name] = blocks.pop(old)


def _review(data: dict, reviewer: str, rubric: str = "v1") -> None:
    a = data["attempts"][0]
    data["reviews"] = {"human": [{"case_id": a["case_id"], "input_hash": a["input_hash"],
                                  "output_hash": a["output_hash"], "reviewer_id": reviewer, "reviewer_kind": "human",
                                  "rubric_version": rubric, "ratings": {}, "verdict": True, "notes": "ok"}],
                       "model": []}


#: (what is edited, the field the error names, the edit)
EDITS = [
    ("suite", "run.suite", lambda d: d["run"].__setitem__("suite", LONG)),
    ("variant", "plan.variants[0].name", lambda d: _rename_variant(d, LONG)),
    ("started_at", "run.started_at", lambda d: d["run"].__setitem__("started_at", "2026-12-01T00:00:00Z" + LONG)),
    ("status", "run.status", lambda d: d["run"].__setitem__("status", "completed" + LONG)),
    ("input_hash", "plan.cases[0].input_hash", lambda d: d["plan"]["cases"][0].__setitem__("input_hash", LONG)),
    ("reviewer", "reviews.human[0].reviewer_id", lambda d: _review(d, LONG)),
    ("rubric", "reviews.human[0].rubric_version", lambda d: _review(d, "ann", LONG)),
]


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_store_import_refuses_a_value_no_store_can_index_in_one_line(kind, request, tmp_path):
    """A report (shared, edited, or from another tool) whose suite, variant, start time, status,
    input hash or reviewer is 3,000 random letters: SQLite stored it and PostgreSQL failed part
    way ('index row size ... exceeds btree version 4 maximum 2704', a multi-line server message),
    so the same history differed by backend. Both refuse it alike before anything is written, in
    one line naming the file and the field (exit 1); the report as it was is stored."""
    spec = fresh(kind, request, tmp_path, "imp")
    folder = project(tmp_path / "p")
    done = sb("run", "suite.yaml", "--no-progress", "--store", "none", cwd=folder)
    assert done.returncode in (0, 3), done.stderr
    report = next(folder.glob("eval-results/*/*.json"))
    for name, field, edit in EDITS:
        bad = _edited(report, tmp_path / f"{name}.json", edit)
        got = sb("store", "import", str(bad), "--store", spec, cwd=folder)
        said = got.stdout + got.stderr
        assert got.returncode == 1, (name, said)
        errors = [line for line in said.splitlines() if "not stored:" in line]
        assert len(errors) == 1 and f"{name}.json" in errors[0] and field in errors[0], (name, said)
        assert "over the 256" in errors[0] or "over the 800" in errors[0], (name, said)
        assert "btree" not in said and "Traceback" not in said, (name, said)
    if os.path.exists(spec) or kind == "postgresql":
        assert runs_in(spec, folder) == []
    ok = sb("store", "import", str(report), "--store", spec, cwd=folder)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    # names that fit are stored on both: an 800-byte variant and reviewer, a 256-byte hash
    fits = _edited(report, tmp_path / "fits.json",
                   lambda d: (_rename_variant(d, noise(800, 1)), _review(d, noise(800, 2), noise(800, 3))))
    ok = sb("store", "import", str(fits), "--store", spec, cwd=folder)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert [len(r["variants"][0]) for r in runs_in(spec, folder)] == [800]  # the same run, replaced
    exported = json.loads(sb("store", "reviews", "--output", "-", "--store", spec, cwd=folder).stdout)["entries"]
    assert [(len(e["reviewer_id"]), len(e["rubric_version"])) for e in exported] == [(800, 800)]


def _served(spec: str, folder: Path):
    from tests.viewer.conftest import Served

    return Served("--store", spec, cwd=folder)


def _post(base: str, path: str, body: dict, token: str) -> tuple[int, dict]:
    import urllib.error
    import urllib.request

    request = urllib.request.Request(base + path, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json", "X-CSRF-Token": token})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_the_viewer_reviews_a_case_whose_id_is_longer_than_a_reviewers_name(kind, request, tmp_path):
    """The case loader takes an id of up to 4,096 characters and the store keeps it; the viewer's
    review form refused one of over 200 ('case_id: longer than 200 characters'), the limit of a
    reviewer's name, so such a case could never be reviewed. It is reviewed, and the review is
    exported with the whole id."""
    import urllib.parse

    spec = fresh(kind, request, tmp_path, "view")
    folder = project(tmp_path / "p", case_id=LONG)
    run(spec, folder)
    served = _served(spec, folder)
    try:
        status, meta = served.get("/api/meta")
        assert status == 200
        status, listed = served.get("/api/runs")
        key = listed["runs"][0]["key"]
        status, case = served.get(f"/api/runs/{key}/case?id={urllib.parse.quote(LONG)}")
        assert status == 200, case
        form = {"run": key, "case_id": LONG, "output_hash": case["attempts"][0]["output_hash"], "reviewer_id": "ana",
                "rubric_version": "v1", "verdict": "pass", "ratings": {"correctness": 5}, "notes": "right"}
        status, answer = _post(served.base, "/api/reviews", form, meta["csrf"])
        assert status == 200, answer
    finally:
        served.stop()
    exported = sb("store", "reviews", "--output", "-", "--store", spec, cwd=folder)
    entries = json.loads(exported.stdout)["entries"]
    assert [(e["case_id"], e["reviewer_id"]) for e in entries] == [(LONG, "ana")]


#: the store as the previous scoreboard left it (schema version 7): field tallies keyed by their
#: name, the last migration not applied
_TO_SEVEN = [
    "CREATE TABLE field_results_7 (run_key TEXT NOT NULL, variant TEXT NOT NULL, field TEXT NOT NULL, "
    "case_id TEXT NOT NULL, hits BIGINT NOT NULL, tries BIGINT NOT NULL, case_key TEXT NOT NULL, "
    "PRIMARY KEY (run_key, variant, field, case_key))",
    "INSERT INTO field_results_7 SELECT run_key, variant, field, case_id, hits, tries, case_key FROM field_results",
    "DROP TABLE field_results", "ALTER TABLE field_results_7 RENAME TO field_results",
    "DELETE FROM schema_migrations WHERE version > 7"]


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_a_store_of_schema_version_7_is_upgraded_in_place_with_its_field_tallies(kind, request, tmp_path):
    """A store written by the previous scoreboard (schema version 7) holding a run with field
    tallies is opened by this one: upgraded in place (version 8), the run still matches its
    report field by field, and a run with a long field name is stored in it."""
    from scoreboard.store.migrations import MIGRATIONS

    spec = fresh(kind, request, tmp_path, "old")
    folder = project(tmp_path / "p")
    done = sb("run", "suite.yaml", "--no-progress", "--store", "none", cwd=folder)
    assert done.returncode in (0, 3), done.stderr
    report = next(folder.glob("eval-results/*/*.json"))
    stored = sb("store", "import", str(report), "--store", spec, cwd=folder)
    assert stored.returncode == 0, stored.stdout + stored.stderr
    if kind == "sqlite":
        conn = sqlite3.connect(spec)
    else:
        import psycopg

        conn = psycopg.connect(spec, autocommit=True)
    for statement in _TO_SEVEN:
        conn.execute(statement)
    assert conn.execute("SELECT COUNT(*) FROM field_results").fetchone()[0] == 2
    if kind == "sqlite":
        conn.commit()
    conn.close()
    checked = sb("verify", str(report), "--store", spec, cwd=folder)  # opening it upgrades it
    assert checked.returncode == 0 and "matches the report" in checked.stdout, checked.stdout + checked.stderr
    info = json.loads(sb("store", "info", "--store", spec, "--json", cwd=folder).stdout)
    assert (info["schema_version"], info["runs"]) == (len(MIGRATIONS), 1) and len(MIGRATIONS) >= 8
    run(spec, project(tmp_path / "q", key=LONG))
    assert len(runs_in(spec, folder)) == 2
