"""The history store against what a careless or hostile world hands it: databases scoreboard
did not make, files that are not files, a default store planted as a symlink, a store that may
only be read, reports of the wrong shape, text no database column takes, unknown figures, and
an import cut off half way. Each bad input is a one-line error naming the file and the field
(exit 1), and nothing already stored is lost or replaced."""

from __future__ import annotations

import copy
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from scoreboard.errors import ConfigError
from scoreboard.store.check import check_stored
from scoreboard.store.history import HistoryStore
from scoreboard.store.queries import RunFilter, list_runs
from scoreboard.viewer.trend import trend
from tests.cli_inprocess import run_cli

from .test_store import N, make_suite, run_into

REPO = Path(__file__).resolve().parents[2]


def sb(*args: str, cwd: Path, as_nobody: bool = False) -> subprocess.CompletedProcess:
    """The CLI in this process (run_cli); with as_nobody, in a process of its own as the unprivileged user `nobody`."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    env.pop("SCOREBOARD_STORE", None)
    if not as_nobody:  # what the command says and writes: in this process
        return run_cli(args, cwd, env)
    prefix = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    return subprocess.run([*prefix, sys.executable, "-m", "scoreboard", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=120, env=env, check=False)


def one_error_line(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
    assert done.stderr.startswith("scoreboard: error: ") and done.stderr.count("\n") == 1, done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    return done.stderr


@pytest.fixture(scope="module")
def report_file(tmp_path_factory) -> Path:
    """One finished run's report (no store), copied fresh by each test that edits it."""
    folder = tmp_path_factory.mktemp("report")
    _, path = run_into("none", make_suite(folder))
    return path


def tables(path: Path) -> set[str]:
    with sqlite3.connect(path) as conn:
        return {n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


# ---- what the store file is


def test_a_database_scoreboard_did_not_make_is_refused_and_left_alone(tmp_path):
    clash = tmp_path / "clash.sqlite"
    with sqlite3.connect(clash) as conn:
        conn.execute("CREATE TABLE runs (x INTEGER)")  # another program's "runs"
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE bookmarks (url TEXT)")
    for db in (clash, other):
        before = db.read_bytes()
        for args in (("history",), ("store", "info"), ("store", "import", str(tmp_path))):
            line = one_error_line(sb(*args, "--store", str(db), cwd=tmp_path))
            assert db.name in line and "not a scoreboard history store" in line
        assert db.read_bytes() == before  # not one table added
    assert tables(other) == {"bookmarks"}


def test_a_store_that_is_not_a_regular_file_is_a_one_line_error(tmp_path):
    (tmp_path / "folder.sqlite").mkdir()
    os.mkfifo(tmp_path / "pipe.sqlite")
    for name, said in (("folder.sqlite", "is a directory"), ("pipe.sqlite", "FIFO"), ("/dev/zero", "device")):
        line = one_error_line(sb("store", "import", str(tmp_path), "--store", name, cwd=tmp_path))
        assert name in line and said in line
    for name in ("garbage.sqlite", "truncated.sqlite"):
        (tmp_path / name).write_bytes(b"SQLite format 3\x00" + b"\xff" * 300 if name.startswith("t") else b"hello")
        line = one_error_line(sb("history", "--store", name, cwd=tmp_path))
        assert name in line and "cannot open the store" in line


def test_the_default_store_planted_as_a_symlink_out_of_the_folder_is_not_followed(tmp_path):
    project, outside = tmp_path / "project", tmp_path / "outside"
    make_suite(project)
    outside.mkdir()
    (project / ".scoreboard").mkdir()
    target = outside / "victim.sqlite"
    (project / ".scoreboard" / "history.sqlite").symlink_to(target)
    line = one_error_line(sb("store", "import", "out", cwd=project))
    assert "leads outside this folder" in line and ".scoreboard/history.sqlite" in line
    assert one_error_line(sb("history", cwd=project))
    done = sb("run", "suite.json", "--no-progress", cwd=project)  # the run goes on, without that store
    assert done.returncode in (0, 3) and "leads outside this folder" in done.stderr
    assert not target.exists() and list(outside.iterdir()) == []
    # a whole `.scoreboard` folder planted as a link is refused the same way
    (project / ".scoreboard" / "history.sqlite").unlink()
    (project / ".scoreboard").rmdir()
    (project / ".scoreboard").symlink_to(outside, target_is_directory=True)
    assert "leads outside" in one_error_line(sb("store", "import", "out", cwd=project))
    assert list(outside.iterdir()) == []
    # a store named by the user may be a link: it is their choice
    (outside / "named.sqlite").touch()
    (project / "link.sqlite").symlink_to(outside / "named.sqlite")
    assert sb("store", "import", "out", "--store", "link.sqlite", cwd=project).returncode == 0
    # ... but nothing is created through a link to a missing file
    (project / "dangling.sqlite").symlink_to(outside / "missing.sqlite")
    line = one_error_line(sb("store", "import", "out", "--store", "dangling.sqlite", cwd=project))
    assert "symlink to a missing file" in line and not (outside / "missing.sqlite").exists()


def test_a_read_only_store_is_read_and_a_write_is_a_one_line_error(report_file):
    """A store its reader may not write (a shared archive, another user's file, a read-only
    folder) is still listed and shown; a write says so, exit 1."""
    nobody = os.geteuid() == 0  # root writes anything: the store is read as nobody
    if nobody and shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: no unprivileged user to read the store as")
    root = Path(tempfile.mkdtemp(prefix="scoreboard-ro-"))  # not under pytest's 0700 folders
    try:
        os.chmod(root, 0o755)
        folder = root / "store"
        folder.mkdir()
        spec = str(folder / "history.sqlite")
        store = HistoryStore(spec)
        store.store_report(report_file)
        store.close()
        shutil.copy(report_file, root / "report.json")
        for mode in (0o777, 0o555):  # the folder writable (the -shm file can be made), then not
            os.chmod(spec, 0o444)
            os.chmod(root / "report.json", 0o444)
            os.chmod(folder, mode)
            listed = sb("history", "--json", "--store", spec, cwd=root, as_nobody=nobody)
            assert listed.returncode == 0, listed.stderr
            assert [r["status"] for r in json.loads(listed.stdout)["runs"]] == ["completed"]
            assert sb("store", "verify", str(root / "report.json"), "--store", spec, cwd=root, as_nobody=nobody).returncode == 0
            for args in (("store", "tag", "hist/" + report_file.stem, "x"), ("store", "import", "report.json")):
                done = sb(*args, "--store", spec, cwd=root, as_nobody=nobody)
                if args[1] == "import":  # the same report: nothing to write
                    assert done.returncode == 0 and "1 already stored" in done.stdout, done.stderr
                else:
                    assert "read-only" in one_error_line(done)
            os.chmod(folder, 0o755)
            for leftover in folder.glob("history.sqlite-*"):
                leftover.unlink()
        with sqlite3.connect(spec) as conn:
            assert conn.execute("SELECT COUNT(*) FROM run_tags").fetchone()[0] == 0
    finally:
        for path in (root, *root.rglob("*")):
            if not path.is_symlink():
                os.chmod(path, 0o700)
        shutil.rmtree(root)


# ---- what a report holds

def _mutations() -> list[tuple[str, str, object]]:
    """(name, the field the error names, how the report is spoilt)."""

    def attempt(key, value):
        return lambda r: r["attempts"][3].__setitem__(key, value)

    return [
        ("run is a list", "'run'", lambda r: r.__setitem__("run", [1])),
        ("suite missing", "'run.suite'", lambda r: r["run"].pop("suite")),
        ("start a number", "'run.started_at'", lambda r: r["run"].__setitem__("started_at", 5)),
        ("cases an object", "'plan.cases'", lambda r: r["plan"].__setitem__("cases", {"a": 1})),
        ("case without id", "'plan.cases[0].id'", lambda r: r["plan"]["cases"][0].pop("id")),
        ("case twice", "'plan.cases[14].id'", lambda r: r["plan"]["cases"].append(r["plan"]["cases"][0])),
        ("variant unnamed", "'plan.variants[0].name'", lambda r: r["plan"]["variants"][0].pop("name")),
        ("runs a string", "'plan.runs'", lambda r: r["plan"].__setitem__("runs", "x")),
        ("attempt a string", "'attempts[3]'", lambda r: r["attempts"].__setitem__(3, "x")),
        ("no status", "'attempts[3].status'", attempt("status", None)),
        ("run a string", "'attempts[3].run'", attempt("run", "abc")),
        ("run beyond 64 bits", "'attempts[3].run'", attempt("run", 10**30)),
        ("unknown case", "'attempts[3].case_id'", attempt("case_id", "nope")),
        ("attempt twice", "'attempts[56]'", lambda r: r["attempts"].append(copy.deepcopy(r["attempts"][0]))),
        ("grade a number", "'attempts[3].grades[0]'", attempt("grades", [1])),
        ("summary variants a list", "'summary.variants'", lambda r: r["summary"].__setitem__("variants", [1])),
        ("review without case", "'reviews.human[0].case_id'", lambda r: r.__setitem__("reviews", {"human": [{}]})),
        ("control character in a case id", "'plan.cases[2].id'",
         lambda r: r["plan"]["cases"][2].__setitem__("id", "c\x1b[2J")),
        ("lone surrogate in a case id", "'plan.cases[2].id'",
         lambda r: r["plan"]["cases"][2].__setitem__("id", "a\ud800b")),
    ]


def test_a_report_of_the_wrong_shape_is_an_error_naming_the_field_and_replaces_nothing(store_spec, report_file,
                                                                                        tmp_path):
    store = HistoryStore(store_spec)
    try:
        assert store.store_report(report_file) == "stored"
        original = json.loads(report_file.read_text())
        for name, field, spoil in _mutations():
            bad = copy.deepcopy(original)
            spoil(bad)
            path = tmp_path / "bad.json"
            # a lone surrogate survives only as its \u escape (ensure_ascii), as a hostile file spells it
            path.write_text(json.dumps(bad, ensure_ascii=True))
            with pytest.raises(ConfigError) as caught:
                store.store_report(path)
            assert str(path) in str(caught.value) and f"field {field}" in str(caught.value), (name, str(caught.value))
            # the run stored before is whole, as its report says
            check = check_stored(store, report_file)
            assert check.ok, (name, check.mismatches)
        assert store.db.one("SELECT COUNT(*) FROM runs")[0] == 1
    finally:
        store.close()


def test_store_import_reports_each_bad_file_and_stores_the_good_ones(report_file, tmp_path):
    folder = tmp_path / "reports"
    folder.mkdir()
    data = json.loads(report_file.read_text())
    data["run"]["id"] = "bad\x00id"
    (folder / "a-bad.json").write_text(json.dumps(data))
    (folder / "b-empty.json").write_text('{"schema": "scoreboard.report/v2", "run": {}')  # cut off
    shutil.copy(report_file, folder / "c-good.json")
    done = sb("store", "import", "reports", "--store", "h.sqlite", "--json", cwd=tmp_path)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    out = json.loads(done.stdout)
    assert out["stored"] == [str(Path("reports") / "c-good.json")]
    assert len(out["failed"]) == 2 and "field 'run.id'" in out["errors"][0] and "a-bad.json" in out["errors"][0]
    assert "b-empty.json" in out["errors"][1] and "not valid JSON" in out["errors"][1]


def test_text_no_column_takes_is_stored_on_both_databases(store_spec, report_file, tmp_path):
    """A NUL byte in an error or a grader's reason (a subject's stderr, a quoted output):
    PostgreSQL refuses it in a text column; the run is stored all the same, the record whole."""
    data = json.loads(report_file.read_text())
    data["attempts"][3]["error"] = "stderr: \x00\x01 binary"
    data["attempts"][4]["grades"][0]["reason"] = "expected \x00"
    path = tmp_path / "nul.json"
    path.write_text(json.dumps(data))
    store = HistoryStore(store_spec)
    try:
        assert store.store_report(path) == "stored"
        assert check_stored(store, path).ok  # every attempt's record is the report's, byte for byte
        errors = [e for (e,) in store.db.all("SELECT error FROM attempts WHERE error IS NOT NULL")]
        assert errors == ["stderr: \ufffd\x01 binary"]
    finally:
        store.close()


def test_unknown_and_impossible_figures_stay_unknown_never_zero(store_spec, tmp_path):
    """Costs nobody measured are null in every history answer, never 0; a non-finite number a
    hand-edited report holds (no report scoreboard writes holds one) is refused in one line
    naming the field, before the stored copy is touched, and the JSON stays JSON."""
    _, path = run_into("none", make_suite(tmp_path / "s"))
    data = json.loads(path.read_text())
    data["attempts"][0]["measurements"]["cost_usd"] = float("inf")
    data["attempts"][1]["measurements"]["latency_ms"] = float("nan")
    block = data["summary"]["variants"]["one"]
    block["measurements"]["cost_usd"]["total"] = float("inf")
    block["pass_rate_ci"]["low"] = float("nan")
    edited = path.with_name("edited.json")
    edited.write_text(json.dumps(data))  # Infinity and NaN, as Python's json writes them
    store = HistoryStore(store_spec)
    try:
        store.store_report(path)
        with pytest.raises(ConfigError, match=r"edited\.json.*field '(attempts|summary)"):
            store.store_report(edited)
        costs = store.db.all("SELECT cost_usd, latency_ms FROM attempts ORDER BY position")
        assert all(cost is None for cost, _ in costs)  # never measured: unknown
        assert all(isinstance(ms, float) for _, ms in costs)  # the stored copy untouched by the refusal
        runs, _ = list_runs(store.db, RunFilter())
        figures = {f["name"]: f for f in runs[0]["figures"]}
        assert figures["one"]["cost_per_case"] is None and figures["two"]["cost_per_case"] is None
        assert figures["one"]["ci_low"] is not None and figures["one"]["pass_rate"] is not None
        points = trend(store.db, "hist")["series"]["one"]
        assert points[0]["cost_per_case"] is None
    finally:
        store.close()
    if store_spec.startswith("postgresql"):
        return
    done = sb("history", "--json", "--store", store_spec, cwd=tmp_path)
    strict = json.loads(done.stdout, parse_constant=lambda c: pytest.fail(f"{c} in history --json"))
    assert strict["runs"][0]["figures"][0]["cost_per_case"] is None


def test_an_import_cut_off_half_way_is_never_shown_as_completed(report_file, tmp_path, monkeypatch):
    """The process storing a report dies between batches (kill -9, a full disk): the import is
    one transaction, so nothing of it is left (never a half-stored run), nothing is in trends,
    and the next import stores it whole."""
    import scoreboard.store.history as history

    monkeypatch.setattr(history, "FLUSH_EVERY", 10)
    real, calls = history.write_attempts, []

    def dies(db, key, batch, where):
        calls.append(len(batch))
        if len(calls) == 3:
            raise KeyboardInterrupt  # as abrupt as it gets in-process: nothing below catches it
        return real(db, key, batch, where)

    spec = str(tmp_path / "h.sqlite")
    store = HistoryStore(spec)
    try:
        monkeypatch.setattr(history, "write_attempts", dies)
        with pytest.raises(KeyboardInterrupt):
            store.store_report(report_file)
        monkeypatch.setattr(history, "write_attempts", real)
        assert list_runs(store.db, RunFilter())[0] == []
        assert store.db.one("SELECT COUNT(*) FROM attempts")[0] == 0  # the two batches written were rolled back
        assert list_runs(store.db, RunFilter(status="completed"))[0] == []
        assert trend(store.db, "hist")["runs"] == 0
        assert "no runs" in sb("history", "--store", spec, cwd=tmp_path).stdout
        assert store.store_report(report_file) == "stored"
        assert check_stored(store, report_file).ok
        assert list_runs(store.db, RunFilter(status="completed"))[0][0]["attempts"] == N * 4
    finally:
        store.close()


def test_opening_an_up_to_date_store_takes_no_write_lock(tmp_path, report_file, monkeypatch):
    """A reader opens a store while a writer holds its lock (a long import): it reads at once."""
    import scoreboard.store.db as dbmod

    spec = str(tmp_path / "h.sqlite")
    first = HistoryStore(spec)
    first.store_report(report_file)
    first.close()
    writer = sqlite3.connect(spec, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    monkeypatch.setattr(dbmod, "BUSY_TIMEOUT_S", 0.01)  # were a lock needed, opening would fail, not wait
    monkeypatch.setattr(dbmod, "RETRIES", 1)
    try:
        reader = HistoryStore(spec)
        assert len(list_runs(reader.db, RunFilter())[0]) == 1
        reader.close()
    finally:
        writer.execute("ROLLBACK")
        writer.close()
