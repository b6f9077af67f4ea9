"""A run killed with kill -9 (or whose machine lost power) stayed `running` forever in
`scoreboard history` and in the viewer: its row is written `running` at its start and nothing
is left to conclude it. A live run holds its folder's attempt log (an exclusive flock), so a
reader can tell: a run recorded as running whose folder nobody holds is shown `interrupted`,
with how to resume it; one really running in another process stays `running`. The recorded
row is not changed until a resume or an import stores the run again."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from scoreboard.store.liveness import annotate, held, this_host

SLOW = """import os, time
def answer(input, skill, run, params):
    time.sleep(float(os.environ.get("SLOW_S", "0.3")))
    return input
"""


def project(tmp_path: Path, n: int = 40) -> Path:
    (tmp_path / "slow.py").write_text(SLOW)
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "input": f"q{i}", "expected": f"q{i}"})
                                                  + "\n" for i in range(n)))
    (tmp_path / "suite.yaml").write_text('name: live\ncases: cases.jsonl\nsubject: {type: python, function: '
                                         '"slow:answer", thread: true}\ngraders: [exact]\nconcurrency: 1\n')
    return tmp_path


def scoreboard(cwd: Path, *args: str, store: str | None = None, background: bool = False, slow: float = 0.3):
    env = {**os.environ, "SCOREBOARD_STORE": store or str(cwd / "hist.sqlite"), "SLOW_S": str(slow)}
    argv = [sys.executable, "-m", "scoreboard", *args]
    if background:
        return subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=180)


def wait_for_lines(log: Path, n: int, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and proc.poll() is None:
        if log.exists() and log.read_bytes().count(b"\n") >= n:
            return
        time.sleep(0.05)
    raise AssertionError(f"the run wrote fewer than {n} lines to {log}: {proc.poll()}")


def history(work: Path, *args: str, store: str | None = None) -> list[dict]:
    done = scoreboard(work, "history", "--json", *args, store=store)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)["runs"]


def killed_run(work: Path, name: str, store: str | None = None) -> None:
    """A run started in its own process, killed with kill -9 after a few attempts."""
    proc = scoreboard(work, "run", "suite.yaml", "--output", f"{name}.json", "--format", "json", "--no-progress",
                      store=store, background=True)
    wait_for_lines(work / name / "attempts.jsonl", 3, proc)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)


def test_a_run_killed_with_kill_9_is_interrupted_in_history_and_a_live_one_is_running(tmp_path):
    work = project(tmp_path, n=300)  # a minute and a half a run: the live one is stopped before it ends
    killed_run(work, "dead")
    live = scoreboard(work, "run", "suite.yaml", "--output", "live.json", "--format", "json", "--no-progress",
                      background=True)
    try:
        wait_for_lines(work / "live" / "attempts.jsonl", 2, live)
        runs = {r["run_id"]: r for r in history(work)}
        dead = runs["dead"]
        assert dead["status"] == "interrupted" and dead["recorded_status"] == "running", dead
        assert f"scoreboard run --resume {work / 'dead'}" in dead["note"]
        assert runs["live"]["status"] == "running" and "recorded_status" not in runs["live"], runs["live"]
        # the filters say the same: --status running is the live one, interrupted the dead one
        assert [r["run_id"] for r in history(work, "--status", "running")] == ["live"]
        assert [r["run_id"] for r in history(work, "--status", "interrupted")] == ["dead"]
        text = scoreboard(work, "history")
        assert text.returncode == 0, text.stderr
        line = next(ln for ln in text.stdout.splitlines() if "  dead  " in ln)
        assert "interrupted (its process ended without concluding; resume with: scoreboard run --resume" in line
        assert "running" not in line.split("(")[0]
    finally:
        live.send_signal(signal.SIGKILL)
        live.communicate(timeout=60)
    # once it is killed too, it is interrupted as well
    assert {r["run_id"]: r["status"] for r in history(work)} == {"dead": "interrupted", "live": "interrupted"}
    # the recorded row is left as it was: only a resume (or an import) stores the run again
    with sqlite3.connect(work / "hist.sqlite") as db:
        assert db.execute("SELECT status FROM runs WHERE run_id = 'dead'").fetchone() == ("running",)
    resumed = scoreboard(work, "run", "--resume", "dead", "--no-progress", slow=0)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert {r["run_id"]: r["status"] for r in history(work)} == {"dead": "completed", "live": "interrupted"}


def test_the_viewer_api_shows_a_killed_run_as_interrupted(tmp_path):
    from tests.viewer.conftest import Served

    work = project(tmp_path, n=300)
    killed_run(work, "dead")
    served = Served("--store", str(work / "hist.sqlite"), cwd=work)
    try:
        with urllib.request.urlopen(served.base + "/api/runs", timeout=30) as response:
            (run,) = json.loads(response.read())["runs"]
        assert run["status"] == "interrupted" and "--resume" in run["note"], run
        with urllib.request.urlopen(f"{served.base}/api/runs/{run['key']}", timeout=30) as response:
            one = json.loads(response.read())
        assert one["status"] == "interrupted" and one["note"] == run["note"]
        with urllib.request.urlopen(served.base + "/api/runs?status=running", timeout=30) as response:
            assert json.loads(response.read())["runs"] == []
        with urllib.request.urlopen(served.base + "/api/runs?status=interrupted", timeout=30) as response:
            assert [r["key"] for r in json.loads(response.read())["runs"]] == [run["key"]]
    finally:
        served.stop()


@pytest.fixture(scope="module")
def postgres():
    """A throwaway PostgreSQL server (tests/store/pg.py), skipped without its binaries."""
    from tests.store.pg import Postgres, pg_bin

    if pg_bin() is None:
        pytest.skip("PostgreSQL binaries (initdb, pg_ctl) not found")
    pytest.importorskip("psycopg")
    with Postgres() as server:
        yield server


def test_a_killed_run_in_a_postgresql_store_is_interrupted(tmp_path, postgres):
    url = postgres.create_database("live")
    work = project(tmp_path, n=300)
    killed_run(work, "dead", store=url)
    (run,) = history(work, store=url)
    assert run["status"] == "interrupted" and run["folder"] == str(work / "dead"), run


def test_a_run_whose_folder_is_gone_is_interrupted_and_one_elsewhere_is_as_recorded(tmp_path):
    gone = str(tmp_path / "gone")
    run = annotate({"status": "running", "folder": gone, "host": this_host()})
    assert run["status"] == "interrupted" and "is gone" in run["note"]
    other = annotate({"status": "running", "folder": gone, "host": "another-machine.invalid"})
    assert other["status"] == "running" and "another-machine.invalid" in other["note"]
    old = annotate({"status": "running", "folder": None, "host": None})
    assert old["status"] == "running" and "unknown" in old["note"]
    assert held(gone) is False


def test_a_run_whose_report_concluded_but_whose_store_row_did_not_says_import(tmp_path):
    folder = tmp_path / "r"
    folder.mkdir()
    (folder / "attempts.jsonl").write_text("")
    (tmp_path / "r.json").write_text(json.dumps({"schema": "x", "run": {"id": "r", "status": "completed"}},
                                                separators=(",", ":")))
    run = annotate({"status": "running", "folder": str(folder), "host": this_host()})
    assert run["status"] == "interrupted" and f"scoreboard store import {tmp_path / 'r.json'}" in run["note"]


def test_a_store_made_before_folders_were_recorded_is_migrated_and_read(tmp_path):
    from scoreboard.store.db import open_database
    from scoreboard.store.migrations import MIGRATIONS

    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
               "applied_at TEXT NOT NULL)")
    for version, (name, statements) in enumerate(MIGRATIONS[:2], start=1):
        for statement in statements:
            db.execute(statement)
        db.execute("INSERT INTO schema_migrations VALUES (?, ?, 'then')", (version, name))
    db.execute("INSERT INTO runs (key, run_id, suite, status, recorded_at, source, variants) "
               "VALUES ('k', 'r', 's', 'running', 'then', 'live', '[]')")
    db.commit()
    db.close()
    done = scoreboard(tmp_path, "history", "--json", store=str(path))
    assert done.returncode == 0, done.stderr
    (run,) = json.loads(done.stdout)["runs"]
    assert run["status"] == "running" and run["folder"] is None and "unknown" in run["note"]
    opened = open_database(str(path))
    try:
        assert opened.one("SELECT MAX(version) FROM schema_migrations")[0] == len(MIGRATIONS)
    finally:
        opened.close()


def test_a_run_stores_its_end_before_it_lets_go_of_its_folder(tmp_path, monkeypatch):
    """The store's end was written after the run let go of its folder: a reader in that window
    (seconds, for a large run whose rows a writer process finishes) saw the row `running` and
    the folder free, a run whose process ended."""
    from scoreboard.engine.pipeline import RunOptions, run
    from scoreboard.suite.load import load_suite

    monkeypatch.chdir(tmp_path)
    (tmp_path / "cases.jsonl").write_text(json.dumps({"id": "c", "input": "q", "expected": "q"}) + "\n")
    (tmp_path / "echo.py").write_text("def answer(input, skill, run, params):\n    return input\n")
    (tmp_path / "suite.yaml").write_text('name: ends\ncases: cases.jsonl\nsubject: {type: python, function: '
                                         '"echo:answer"}\ngraders: [exact]\n')

    class Watching:
        name = "watching"
        folder = None
        held_at_finish = None

        def begin(self, meta):
            self.folder = meta["folder"]

        def attempt(self, record):
            pass

        def finish(self, head, paths):
            self.held_at_finish = held(self.folder)

    store = Watching()
    outcome = run(load_suite(tmp_path / "suite.yaml"), RunOptions(progress=False, store=store))
    assert outcome.head["run"]["status"] == "completed"
    assert store.folder and Path(store.folder).is_dir()
    assert store.held_at_finish is True  # (the run process's own open of the log: another description)
    assert held(store.folder) is False


def _report(tmp_path: Path, name: str, expected: str) -> Path:
    """A finished run's report made by a real run (3 cases, every one expecting `expected`)."""
    from scoreboard.engine.pipeline import RunOptions, run
    from scoreboard.suite.load import load_suite

    (tmp_path / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "input": "q", "expected": expected})
                                                  + "\n" for i in range(3)))
    (tmp_path / "echo.py").write_text("def answer(input, skill, run, params):\n    return input\n")
    (tmp_path / "suite.yaml").write_text('name: swap\ncases: cases.jsonl\nsubject: {type: python, function: '
                                         '"echo:answer"}\ngraders: [exact]\n')
    run(load_suite(tmp_path / "suite.yaml"), RunOptions(progress=False, output_json=str(tmp_path / name)))
    return tmp_path / name


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_a_store_failure_while_a_changed_report_replaces_its_run_keeps_the_old_copy(kind, tmp_path, monkeypatch,
                                                                                    request):
    """`store import` of a changed report deleted the stored run, then wrote the new one in
    several transactions: a failure (or a kill) between them left neither copy, the run
    half-stored with no status. It is one transaction now: the old copy stays whole."""
    import scoreboard.store.history as history_module
    from scoreboard.store.history import HistoryStore

    monkeypatch.setenv("SCOREBOARD_STORE", "none")
    monkeypatch.chdir(tmp_path)
    report = _report(tmp_path, "r.json", "q")  # every case passes
    spec = str(tmp_path / "h.sqlite") if kind == "sqlite" else \
        request.getfixturevalue("postgres").create_database(f"swap{os.getpid()}")
    store = HistoryStore(spec)
    try:
        assert store.store_report(report) == "stored"
        before = store.db.all("SELECT status, report_sha256, attempts FROM runs")
        kept = store.db.all("SELECT case_id, status FROM attempts ORDER BY position")
        # the same run's report, changed (its attempts fail now)
        data = json.loads(report.read_text())
        for a in data["attempts"]:
            a["status"] = "failed"
        report.write_text(json.dumps(data, separators=(",", ":")))
        calls = []
        real = history_module.write_attempts

        def failing(db, key, batch, where):
            calls.append(len(batch))
            if len(calls) == 2:
                raise OSError("disk full")
            return real(db, key, batch, where)

        monkeypatch.setattr(history_module, "FLUSH_EVERY", 1)
        monkeypatch.setattr(history_module, "write_attempts", failing)
        with pytest.raises(OSError):
            store.store_report(report)
        assert store.db.all("SELECT status, report_sha256, attempts FROM runs") == before
        assert store.db.all("SELECT case_id, status FROM attempts ORDER BY position") == kept
        assert before[0][0] == "completed" and [s for _, s in kept] == ["passed"] * 3
        monkeypatch.setattr(history_module, "write_attempts", real)
        assert store.store_report(report) == "replaced"
        assert [s for (s,) in store.db.all("SELECT status FROM attempts ORDER BY position")] == ["failed"] * 3
    finally:
        store.close()


def test_verify_of_a_killed_runs_checkpoint_says_its_process_ended_and_how_to_resume(tmp_path):
    """`scoreboard verify` of the checkpoint a run killed with kill -9 left said "a checkpoint
    of a run still in progress": nothing was, and nothing said to resume it."""
    work = project(tmp_path, n=300)  # a minute and a half: killed long before it ends
    suite = work / "suite.yaml"
    suite.write_text(suite.read_text() + "checkpoint_every: 2\ncheckpoint_seconds: 0.2\n")
    proc = scoreboard(work, "run", "suite.yaml", "--output", "k.json", "--format", "json", "--no-progress",
                      store="none", background=True)
    try:
        deadline = time.monotonic() + 90
        while not (work / "k.json").exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert (work / "k.json").exists(), "no checkpoint was written"
        live = scoreboard(work, "verify", "k.json", store="none")
        assert "a checkpoint of a run still in progress" in live.stdout, live.stdout + live.stderr
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
    done = scoreboard(work, "verify", "k.json", store="none")
    assert done.returncode == 0, done.stdout + done.stderr
    first = done.stdout.splitlines()[0]
    assert "still in progress" not in first, first
    assert f"its process ended without concluding; resume with: scoreboard run --resume {work / 'k'}" in first
    data = json.loads(scoreboard(work, "verify", "k.json", "--json", store="none").stdout)
    assert data["partial"] is True and f"--resume {work / 'k'}" in data["interrupted"]
    # rescore (and replay, aggregate) refuse it in one line that says the same, not "still in progress"
    refused = scoreboard(work, "rescore", "k.json", store="none")
    assert refused.returncode == 1, refused.stdout + refused.stderr
    (line,) = refused.stderr.strip().splitlines()
    assert "k.json" in line and "run.status" in line and "still in progress" not in line, line
    assert f"a checkpoint of a run that did not finish (its process ended without concluding; resume with: " \
           f"scoreboard run --resume {work / 'k'})" in line, line


def test_a_checkpoint_whose_folder_is_still_held_is_still_in_progress(tmp_path):
    from scoreboard.store.files import RunFolder
    from scoreboard.store.liveness import checkpoint_of

    folder = RunFolder(tmp_path / "r")
    folder.stem.mkdir()
    (folder.stem / "run.json").write_text("{}")
    (tmp_path / "r.json").write_text("{}")
    fd = folder.hold()
    try:
        assert checkpoint_of(tmp_path / "r.json") == "a checkpoint of a run still in progress"
    finally:
        os.close(fd)
    assert "did not finish" in checkpoint_of(tmp_path / "r.json")
    assert checkpoint_of(tmp_path / "elsewhere.json") == "a checkpoint of a run still in progress"  # unknown
