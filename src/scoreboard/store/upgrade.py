"""Applying the history store's migrations (store/migrations.py) on open: in order, in one write
transaction, recorded in `schema_migrations`; a store already up to date is only read and its
tables checked (store/tables.py); another program's database, or a newer schema, is refused."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from ..errors import ConfigError
from .migrations import MIGRATIONS
from .tables import check_tables


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def migrate(db: Any, *, create: bool = True) -> list[int]:
    """Apply the migrations this database lacks, in order, in one transaction; return them.
    A store already up to date is only read (no lock taken)."""
    have = schema_version(db) if db.has_migrations_table() else None
    if have is None:
        refuse_foreign(db)
        if not create:
            raise ConfigError("no history store in this database yet (a run given this --store records one); "
                              "reading never creates one", file=db.location, field="store")
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
            for statement in statements:  # a step in Python (a hash SQL cannot compute) is given the database
                statement(db) if callable(statement) else db.execute(statement)
            db.execute("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                       (version, name, now_iso()))
            applied.append(version)
        check_tables(db, len(MIGRATIONS))
    return applied


def refuse_foreign(db: Any) -> None:
    """A one-line error for a database that holds tables scoreboard did not make and no record
    of its migrations (another program's): it is never written into."""
    if db.has_migrations_table():
        return
    foreign = db.foreign_tables()
    if foreign:
        shown = ", ".join(foreign[:5]) + (", ..." if len(foreign) > 5 else "")
        raise ConfigError(f"not a scoreboard history store: the database already holds tables that scoreboard "
                          f"did not make ({shown}); name another store", file=db.location, field="store")


def _newer(db: Any, have: int) -> ConfigError:
    return ConfigError(f"the store's schema is version {have}, newer than this scoreboard knows "
                       f"({len(MIGRATIONS)}): upgrade scoreboard", file=db.location, field="store")


def schema_version(db: Any) -> int:
    return db.one("SELECT MAX(version) FROM schema_migrations")[0] or 0
