"""One small connection layer over SQLite (the default, a file in WAL mode) and PostgreSQL (by
URL, through psycopg): the history store writes one dialect of SQL (`?` placeholders, `ON
CONFLICT` upserts) and this module runs it on either. Migrations are a plain ordered list
(store/migrations.py), applied on open inside one write transaction and recorded in the
database's `schema_migrations` table, so two processes opening a new store at once apply them
once.

Concurrent writers lose nothing: SQLite takes its write lock up front (BEGIN IMMEDIATE) and
waits for it (busy timeout, then retries); PostgreSQL serialises the migration step with an
advisory lock and runs every write in a transaction.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..record.files import make_private_dirs
from .migrations import MIGRATIONS

#: how long a writer waits for another's lock before retrying, and how often it retries
BUSY_TIMEOUT_S = 30.0
RETRIES = 8
#: PostgreSQL advisory lock key of the migration step ("scoreboard" as a number)
_MIGRATION_LOCK = 0x5C0_2EB0A2D
POSTGRES_HINT = "the PostgreSQL store needs psycopg: pip install 'scoreboard[postgres]'"


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def is_url(spec: str) -> bool:
    return spec.startswith(("postgresql://", "postgres://"))


def shown_location(spec: str) -> str:
    """A store's location as it may be printed: a URL without its password."""
    if not is_url(spec):
        return spec
    scheme, _, rest = spec.partition("://")
    if "@" in rest.split("/", 1)[0]:
        auth, _, host = rest.partition("@")
        user = auth.split(":", 1)[0]
        return f"{scheme}://{user}:***@{host}" if ":" in auth else f"{scheme}://{user}@{host}"
    return spec


class Database:
    """A connection to the history database; `kind` is "sqlite" or "postgresql"."""

    kind = "sqlite"

    def __init__(self, conn: Any, location: str):
        self.conn = conn
        self.location = location

    # ---- statements
    def sql(self, statement: str) -> str:
        return statement

    def execute(self, statement: str, params: Sequence = ()) -> Any:
        return self.conn.execute(self.sql(statement), tuple(params))

    def executemany(self, statement: str, rows: list[Sequence]) -> None:
        if rows:
            self.conn.executemany(self.sql(statement), rows)

    def all(self, statement: str, params: Sequence = ()) -> list[tuple]:
        return list(self.execute(statement, params).fetchall())

    def one(self, statement: str, params: Sequence = ()) -> tuple | None:
        return self.execute(statement, params).fetchone()

    def rows(self, statement: str, params: Sequence = (), size: int = 1000) -> Iterator[tuple]:
        """Rows of a query fetched in batches (a large result is never held whole)."""
        cursor = self.execute(statement, params)
        while True:
            batch = cursor.fetchmany(size)
            if not batch:
                return
            yield from batch

    @contextmanager
    def write(self) -> Iterator[Database]:
        """One write transaction, retried when another writer holds the lock."""
        for attempt in range(RETRIES):
            try:
                self.conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                if not _busy(exc) or attempt == RETRIES - 1:
                    raise
                time.sleep(0.05 * (attempt + 1))
                continue
            break
        try:
            yield self
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    def lock_migrations(self) -> None:
        """Nothing to do in SQLite: BEGIN IMMEDIATE already holds the only write lock."""

    def close(self) -> None:
        self.conn.close()


def _busy(exc: Exception) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


class PostgresDatabase(Database):
    kind = "postgresql"

    def sql(self, statement: str) -> str:
        return statement.replace("?", "%s")

    def executemany(self, statement: str, rows: list[Sequence]) -> None:
        if rows:
            with self.conn.cursor() as cur:
                cur.executemany(self.sql(statement), rows)

    def rows(self, statement: str, params: Sequence = (), size: int = 1000) -> Iterator[tuple]:
        # A server-side cursor lives in a transaction; a named cursor streams the rows.
        with self.conn.transaction(), self.conn.cursor(name=f"rows_{id(self)}_{time.monotonic_ns()}") as cur:
            cur.execute(self.sql(statement), tuple(params))
            while True:
                batch = cur.fetchmany(size)
                if not batch:
                    return
                yield from batch

    @contextmanager
    def write(self) -> Iterator[Database]:
        with self.conn.transaction():
            yield self

    def lock_migrations(self) -> None:
        self.execute("SELECT pg_advisory_xact_lock(?)", (_MIGRATION_LOCK,))


def open_database(spec: str) -> Database:
    """Open (creating and migrating) the database a store spec names: a PostgreSQL URL, or the
    path of a SQLite file (created owner-only in an owner-only folder)."""
    if is_url(spec):
        try:
            import psycopg
        except ImportError:
            raise ConfigError(POSTGRES_HINT, field="store") from None
        try:
            conn = psycopg.connect(spec, autocommit=True, connect_timeout=10)
        except psycopg.Error as exc:
            raise ConfigError(f"cannot connect to the store {shown_location(spec)}: {str(exc).strip()}",
                              field="store") from None
        db: Database = PostgresDatabase(conn, shown_location(spec))
    else:
        path = Path(spec)
        try:
            make_private_dirs(path.parent)
            if not path.exists():
                os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
            conn = sqlite3.connect(path, isolation_level=None, timeout=BUSY_TIMEOUT_S, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
        except (OSError, sqlite3.Error) as exc:
            raise ConfigError(f"cannot open the store: {exc}", file=str(path), field="store") from None
        db = Database(conn, str(path))
    try:
        migrate(db)
    except Exception:
        db.close()
        raise
    return db


def migrate(db: Database) -> list[int]:
    """Apply the migrations this database lacks, in order, in one transaction; return them."""
    applied: list[int] = []
    with db.write():
        db.lock_migrations()
        db.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, "
                   "name TEXT NOT NULL, applied_at TEXT NOT NULL)")
        have = db.one("SELECT MAX(version) FROM schema_migrations")[0] or 0
        if have > len(MIGRATIONS):
            raise ConfigError(f"the store's schema is version {have}, newer than this scoreboard knows "
                              f"({len(MIGRATIONS)}): upgrade scoreboard", file=db.location, field="store")
        for version, (name, statements) in enumerate(MIGRATIONS[have:], start=have + 1):
            for statement in statements:
                db.execute(statement)
            db.execute("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                       (version, name, now_iso()))
            applied.append(version)
    return applied


def schema_version(db: Database) -> int:
    return db.one("SELECT MAX(version) FROM schema_migrations")[0] or 0
