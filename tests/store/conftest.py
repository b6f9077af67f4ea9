"""The store tests run on both backends: SQLite in a temporary folder, and PostgreSQL on a
server the tests start themselves (tests/store/pg.py)."""

from __future__ import annotations

import itertools
import os

import pytest

from .pg import Postgres, pg_bin

_count = itertools.count()


@pytest.fixture(scope="session")
def postgres():
    """One PostgreSQL server for the session (skipped, with the reason, without the binaries)."""
    if pg_bin() is None:
        pytest.skip("PostgreSQL binaries (initdb, pg_ctl) not found: scripts/setup.sh --test installs Debian's "
                    "postgresql")
    pytest.importorskip("psycopg", reason="psycopg is not installed: pip install 'scoreboard[postgres]'")
    with Postgres() as server:
        yield server


@pytest.fixture(params=["sqlite", "postgresql"])
def store_spec(request, tmp_path) -> str:
    """A fresh, empty store of each kind: a SQLite path, or a new PostgreSQL database's URL."""
    if request.param == "sqlite":
        return str(tmp_path / "hist" / "history.sqlite")
    server = request.getfixturevalue("postgres")
    return server.create_database(f"t{os.getpid()}_{next(_count)}")
