"""One small connection layer over SQLite (the default, a file in WAL mode) and PostgreSQL (by
URL, through psycopg): the history store writes one dialect of SQL (`?` placeholders, `ON
CONFLICT` upserts) and this module runs it on either. Migrations are a plain ordered list
(store/migrations.py), applied on open inside one write transaction and recorded in the
database's `schema_migrations` table, so two processes opening a new store at once apply them
once.

Concurrent writers lose nothing: SQLite takes its write lock up front (BEGIN IMMEDIATE) and
waits for it (busy timeout, then retries); PostgreSQL serialises the migration step with an
advisory lock and runs every write in a transaction.

Opening reads the schema version first and takes no lock when nothing is to migrate, so a
reader never waits on a writer and a read-only store (a file or folder it may not write) is
still read. A database that scoreboard did not make (tables but no `schema_migrations`) is
refused, never written into; so is anything but a regular file.
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
from .sqlitefile import connect, file_uri
from .migrations import MIGRATIONS
from .tables import check_tables
from .urls import is_url, shown_location

#: how long a writer waits for another's lock before retrying, and how often it retries
BUSY_TIMEOUT_S = 30.0
RETRIES = 8
#: PostgreSQL advisory lock key of the migration step ("scoreboard" as a number)
_MIGRATION_LOCK = 0x5C0_2EB0A2D
#: the first key of a run's advisory lock (the second is its key's hash)
_RUN_LOCK = 0x5C0_2EB0
POSTGRES_HINT = "the PostgreSQL store needs psycopg: pip install 'scoreboard[postgres]'"


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


class Database:
    """A connection to the history database; `kind` is "sqlite" or "postgresql"."""

    kind = "sqlite"

    def __init__(self, conn: Any, location: str, readonly: bool = False):
        self.conn = conn
        self.location = location
        #: opened read-only (the file or its folder may not be written): a write is a one-line error
        self.readonly = readonly

    # ---- statements
    def sql(self, statement: str) -> str:
        return statement

    def execute(self, statement: str, params: Sequence = ()) -> Any:
        try:
            return self.conn.execute(self.sql(statement), tuple(params))
        except sqlite3.DatabaseError as exc:
            raise damaged(exc, self.location) from None

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
            try:
                batch = cursor.fetchmany(size)
            except sqlite3.DatabaseError as exc:
                raise damaged(exc, self.location) from None
            if not batch:
                return
            yield from batch

    @contextmanager
    def write(self) -> Iterator[Database]:
        """One write transaction, retried when another writer holds the lock."""
        if self.readonly:
            raise read_only(self.location)
        for attempt in range(RETRIES):
            try:
                self.conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                if "readonly" in str(exc).lower():
                    raise read_only(self.location) from None
                if not _busy(exc):
                    raise
                if attempt == RETRIES - 1:
                    raise locked(self.location) from None
                time.sleep(0.05 * (attempt + 1))
                continue
            break
        try:
            yield self
        except sqlite3.OperationalError as exc:
            self.conn.execute("ROLLBACK")
            if "readonly" in str(exc).lower():
                raise read_only(self.location) from None
            raise
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    def lock_migrations(self) -> None:
        """Nothing to do in SQLite: BEGIN IMMEDIATE already holds the only write lock."""

    def lock_run(self, key: str) -> None:
        """Hold a run's key until the transaction ends (SQLite: the write lock already does)."""

    def has_migrations_table(self) -> bool:
        return self.one("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'") is not None

    def foreign_tables(self) -> list[str]:
        """Tables a store without `schema_migrations` already holds: any at all (a SQLite file
        with tables and no migrations record is another program's database)."""
        return [n for (n,) in self.all("SELECT name FROM sqlite_master WHERE type = 'table' "
                                       "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name")]

    def close(self) -> None:
        self.conn.close()


def damaged(exc: sqlite3.DatabaseError, location: str) -> Exception:
    """A SQLite file whose pages are damaged ('database disk image is malformed') is a one-line
    error naming it, not an internal error; any other failure (busy, read-only) is left as it is."""
    if type(exc) is not sqlite3.DatabaseError or "malformed" not in str(exc):
        return exc  # (a file that is no database at all is refused on opening: 'cannot open the store')
    return ConfigError(f"the store is damaged ({exc}): move it aside and `scoreboard store import eval-results/` "
                       "stores the runs again from their reports", file=location, field="store")


def read_only(location: str) -> ConfigError:
    return ConfigError("the store is read-only here (the file or its folder may not be written): it can be "
                       "read, not changed", file=location, field="store")


def locked(location: str) -> ConfigError:
    """Another process held the store's write lock past every wait (a stuck writer)."""
    return ConfigError(f"the store is locked by another process writing to it (waited {RETRIES} x "
                       f"{BUSY_TIMEOUT_S:g} s): try again when it is done, or stop it", file=location, field="store")


def said(exc: Exception) -> str:
    """A database's message on one plain line (libpq's spans lines: 'refused' newline, tab, 'Is the server...')."""
    return " ".join(str(exc).split())


def _busy(exc: Exception) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


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
            raise ConfigError(f"cannot connect to the store {shown_location(spec)}: {said(exc)}",
                              field="store") from None
        from .postgres import PostgresDatabase

        db: Database = PostgresDatabase(conn, shown_location(spec), spec)
        errors: tuple = (psycopg.Error,)
    else:
        db = _open_sqlite(Path(spec))
        errors = (sqlite3.Error,)
    try:
        migrate(db)
    except errors as exc:
        db.close()
        raise ConfigError(f"cannot open the store: {said(exc)}", file=db.location, field="store") from None
    except BaseException:
        db.close()
        raise
    return db


def _open_sqlite(path: Path) -> Database:
    """A SQLite file: a regular one (created owner-only when absent, never through a dangling
    symlink), in WAL mode; read-only when it or its folder may not be written."""
    from ..safefile import FileRefused, check_regular

    def refused(message: str) -> ConfigError:
        return ConfigError(message, file=str(path), field="store")

    try:
        check_regular(path)
    except FileRefused as exc:
        if not exc.missing:
            raise refused(f"the store {exc.reason} (a SQLite file is expected)") from None
        if path.is_symlink():
            raise refused(f"the store is a symlink to a missing file ({os.readlink(path)}): name the file "
                          "itself") from None
        try:
            make_private_dirs(path.parent)
            os.close(os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600))
        except FileExistsError:
            pass  # made meanwhile (a sibling run)
        except OSError as exc:
            raise refused(f"cannot open the store: {exc.strerror or exc}") from None
    try:
        if not os.access(path, os.W_OK):
            return Database(_read_only_sqlite(path), str(path), readonly=True)
        conn = connect(file_uri(path), timeout=BUSY_TIMEOUT_S)
        try:
            # another program's database is refused before anything (even its journal mode) changes
            refuse_foreign(Database(conn, str(path)))
            conn.execute("PRAGMA journal_mode=WAL")
        except ConfigError:
            conn.close()
            raise
        except sqlite3.OperationalError as exc:
            if "readonly" not in str(exc).lower():
                raise
            conn.close()
            return Database(_read_only_sqlite(path), str(path), readonly=True)
        conn.execute("PRAGMA synchronous=NORMAL")
    except sqlite3.Error as exc:
        raise refused(f"cannot open the store: {exc}") from None
    return Database(conn, str(path))


def _read_only_sqlite(path: Path) -> sqlite3.Connection:
    """A connection that only reads. A WAL database needs its -shm file: when that cannot be
    made and no -wal file exists, no writer has the database open, and it is read as immutable."""
    uri = file_uri(path.resolve())
    conn = connect(uri + "?mode=ro", timeout=BUSY_TIMEOUT_S)
    try:
        conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        return conn
    except sqlite3.OperationalError:
        conn.close()
        if Path(str(path) + "-wal").exists():
            raise
    return connect(uri + "?immutable=1")


def migrate(db: Database) -> list[int]:
    """Apply the migrations this database lacks, in order, in one transaction; return them.
    A store already up to date is only read (no lock taken)."""
    have = schema_version(db) if db.has_migrations_table() else None
    if have is None:
        refuse_foreign(db)
    if have is not None and have > len(MIGRATIONS):
        raise _newer(db, have)
    if have == len(MIGRATIONS):
        check_tables(db, have)
        return []
    if db.readonly:
        raise ConfigError(f"the store is read-only here and its schema (version {have or 0}) is older than this "
                          f"scoreboard's ({len(MIGRATIONS)}): open it once where it can be written",
                          file=db.location, field="store")
    applied: list[int] = []
    with db.write():
        db.lock_migrations()
        refuse_foreign(db)
        db.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, "
                   "name TEXT NOT NULL, applied_at TEXT NOT NULL)")
        have = db.one("SELECT MAX(version) FROM schema_migrations")[0] or 0
        if have > len(MIGRATIONS):
            raise _newer(db, have)
        for version, (name, statements) in enumerate(MIGRATIONS[have:], start=have + 1):
            for statement in statements:
                db.execute(statement)
            db.execute("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                       (version, name, now_iso()))
            applied.append(version)
        check_tables(db, len(MIGRATIONS))
    return applied


def refuse_foreign(db: Database) -> None:
    """A one-line error for a database that holds tables scoreboard did not make and no record
    of its migrations (another program's): it is never written into."""
    if db.has_migrations_table():
        return
    foreign = db.foreign_tables()
    if foreign:
        shown = ", ".join(foreign[:5]) + (", ..." if len(foreign) > 5 else "")
        raise ConfigError(f"not a scoreboard history store: the database already holds tables that scoreboard "
                          f"did not make ({shown}); name another store", file=db.location, field="store")


def _newer(db: Database, have: int) -> ConfigError:
    return ConfigError(f"the store's schema is version {have}, newer than this scoreboard knows "
                       f"({len(MIGRATIONS)}): upgrade scoreboard", file=db.location, field="store")


def schema_version(db: Database) -> int:
    return db.one("SELECT MAX(version) FROM schema_migrations")[0] or 0
