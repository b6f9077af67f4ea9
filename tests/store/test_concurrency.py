"""Several runs writing to one store at once, each from its own process, in small interleaved
batches: every attempt of every run is stored, and each stored run matches its report."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest

from scoreboard.store.check import check_stored
from scoreboard.store.history import HistoryStore
from scoreboard.store.migrations import MIGRATIONS

from .test_store import N, make_suite

WRITERS = 4
pytestmark = pytest.mark.slow  # spawned processes import the package: tens of seconds


def _writer(spec: str, folder: str, index: int) -> str:
    """One process: a run of its own suite into the shared store, 3 attempts per transaction."""
    from scoreboard.engine.pipeline import RunOptions, run
    from scoreboard.suite.load import load_suite

    HistoryStore.flush_every = 3
    suite_file = make_suite(Path(folder) / f"w{index}", name=f"writer{index}", runs=3)
    store = HistoryStore(spec, tags=[f"w{index}"])
    try:
        outcome = run(load_suite(suite_file), RunOptions(progress=False, store=store))
    finally:
        store.close()
    return str(outcome.paths["json"])


def test_concurrent_runs_lose_nothing(store_spec, tmp_path):
    HistoryStore(store_spec).close()  # created and migrated; the writers also race to open it
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(WRITERS) as pool:
        reports = pool.starmap(_writer, [(store_spec, str(tmp_path), i) for i in range(WRITERS)])
    store = HistoryStore(store_spec)
    try:
        assert store.db.one("SELECT COUNT(*) FROM runs")[0] == WRITERS
        assert store.db.one("SELECT COUNT(*) FROM attempts")[0] == WRITERS * N * 2 * 3
        for path in reports:
            check = check_stored(store, path)
            assert check.ok, check.mismatches
    finally:
        store.close()


def test_new_store_opened_by_many_processes_at_once_migrates_once(store_spec):
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(WRITERS) as pool:
        versions = pool.map(_open_version, [store_spec] * WRITERS)
    assert set(versions) == {len(MIGRATIONS)}
    store = HistoryStore(store_spec)
    try:  # each migration applied once, by one of them
        assert store.db.one("SELECT COUNT(*) FROM schema_migrations")[0] == len(MIGRATIONS)
    finally:
        store.close()


def _open_version(spec: str) -> int:
    from scoreboard.store.db import schema_version

    store = HistoryStore(spec)
    try:
        return schema_version(store.db)
    finally:
        store.close()
