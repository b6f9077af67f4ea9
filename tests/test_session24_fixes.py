"""Session 24's own fixes (the coordinator's), each with the defect it reproduces."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "SCOREBOARD_STORE": "none", "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "scoreboard", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def stored(tmp_path_factory) -> Path:
    """A store holding two runs of the demo suite."""
    work = tmp_path_factory.mktemp("store")
    shutil.copytree(ROOT / "examples" / "invoices", work / "invoices")
    for _ in range(2):
        done = _cli("run", "invoices/suite.yaml", "--output-dir", "out", "--store", str(work / "h.sqlite"),
                    "--no-progress", cwd=work)
        assert done.returncode == 0, done.stderr
    return work


@pytest.mark.parametrize(("table", "column"), [("runs", "variants"), ("runs", "head")])
def test_history_over_a_damaged_stored_value_names_the_run_and_the_column(stored, tmp_path, table, column):
    # One run's stored JSON damaged by hand: `history` said "the store holds a value that is not
    # valid JSON" and nothing of which run, so the fix it named (store import --replace of the
    # run's report) could not be followed in a store of hundreds of runs.
    db = tmp_path / "h.sqlite"
    with sqlite3.connect(stored / "h.sqlite") as src, sqlite3.connect(db) as dst:
        src.backup(dst)  # the store is in WAL mode: a copy of its main file alone may miss its rows
    with sqlite3.connect(db) as con:
        run_id, suite = con.execute("SELECT run_id, suite FROM runs ORDER BY started_at LIMIT 1").fetchone()
        con.execute(f"UPDATE {table} SET {column} = '[1,2' WHERE run_id = ?", (run_id,))
    done = _cli("history", "--store", str(db), cwd=tmp_path)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert f"in {table}.{column} of run {run_id!r} of suite {suite!r}" in lines[0]
    assert "store import --replace" in lines[0]
    assert "Traceback" not in done.stderr


def test_store_import_of_an_earlier_state_of_a_completed_run_is_refused_unless_replace(stored, tmp_path):
    # A teammate's stale copy of a run's report (a checkpoint: status running, fewer attempts)
    # imported into the shared store replaced the completed run the store held, without a word.
    import json

    db = tmp_path / "h.sqlite"
    with sqlite3.connect(stored / "h.sqlite") as src, sqlite3.connect(db) as dst:
        src.backup(dst)
    report = sorted((stored / "out").rglob("*.json"))
    report = [p for p in report if p.parent.name == "invoices" and p.name != "run.json"][0]
    data = json.loads(report.read_text())
    run_id = data["run"]["id"]
    data["run"]["status"] = "running"
    data["run"]["finished_at"] = None
    stale = tmp_path / "stale" / report.name
    stale.parent.mkdir()
    stale.write_text(json.dumps(data))
    done = _cli("store", "import", str(stale), "--store", str(db), cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "0 stored, 0 replaced" in done.stdout and "1 not stored" in done.stdout
    assert str(stale) in done.stderr and "field 'run.status'" in done.stderr and "--replace" in done.stderr
    with sqlite3.connect(db) as con:
        assert con.execute("SELECT status FROM runs WHERE run_id = ?", (run_id,)).fetchone()[0] == "completed"
    done = _cli("store", "import", str(stale), "--store", str(db), "--replace", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    with sqlite3.connect(db) as con:
        assert con.execute("SELECT status FROM runs WHERE run_id = ?", (run_id,)).fetchone()[0] == "running"
    done = _cli("store", "import", str(report), "--store", str(db), cwd=tmp_path)  # the completed one back
    assert done.returncode == 0 and "1 replaced" in done.stdout, done.stdout + done.stderr


def test_a_ray_workers_ledger_ends_its_limiters_waits_when_it_learns_the_run_stopped():
    # On Ray the worker's ledger had no `on_stop`: a subject's limiter in a worker registered
    # nothing, so attempts queued behind a 429's pause or sleeping before a retry there waited
    # out their timeout after the run had stopped (the driver's ledger wakes them since 24O).
    import asyncio

    from scoreboard.engine.ray_ledger import WorkerLedger
    from scoreboard.errors import BudgetExceeded
    from scoreboard.subjects._limits import Limiter

    class Remote:
        def __init__(self, answer):
            self.answer = answer

        def remote(self, *args):
            fut = asyncio.get_running_loop().create_future()
            fut.set_result(self.answer(*args))
            return fut

    class Service:
        reserve_many = Remote(lambda items: [{"exceeded": "the run stopped (quota)", "exhausted": None,
                                              "halted": "quota"} for _ in items])
        complete_many = Remote(lambda items: None)
        halt = Remote(lambda *a: None)

    async def scenario():
        ledger = WorkerLedger(Service())
        limiter = Limiter(1, None)
        limiter.watch(ledger)
        await limiter.acquire()  # the one slot, held
        queued = asyncio.ensure_future(limiter.acquire())
        sleeping = asyncio.ensure_future(limiter.sleep(60))
        await asyncio.sleep(0)
        with pytest.raises(BudgetExceeded):
            await ledger.acquire(("c", "v", 0))  # the service says the run stopped
        with pytest.raises(BudgetExceeded, match="the run stopped"):
            await asyncio.wait_for(queued, 2)
        assert await asyncio.wait_for(sleeping, 2) is False
        assert limiter.in_flight == 1  # the refused waiter took no slot

    asyncio.run(scenario())


def test_a_ray_workers_own_halt_ends_its_limiters_waits():
    import asyncio

    from scoreboard.engine.ray_ledger import WorkerLedger
    from scoreboard.subjects._limits import Limiter

    class Service:
        class halt:  # noqa: N801 - a Ray actor method's shape
            @staticmethod
            def remote(*args):
                return None

    async def scenario():
        ledger = WorkerLedger(Service())
        limiter = Limiter(None, None)
        limiter.watch(ledger)
        sleeping = asyncio.ensure_future(limiter.sleep(60))
        await asyncio.sleep(0)
        ledger.halt("quota: billing", attempt=("c", "v", 0))
        assert await asyncio.wait_for(sleeping, 2) is False

    asyncio.run(scenario())
