"""What a store's tables must hold at the schema version it records: the columns the migrations
make, read once from a scratch in-memory SQLite database they are applied to. A store whose
tables lack one (changed by hand, part of a database restored from an older backup) is refused
when it is opened, in one line naming the table and column, rather than each later query or
write failing as an internal error (`history`, the viewer's 500s, a run stepping aside)."""

from __future__ import annotations

import sqlite3
from functools import cache
from typing import Any

from ..errors import ConfigError
from .migrations import MIGRATIONS, TABLES

_COLUMNS = {
    "sqlite": "SELECT m.name, p.name FROM sqlite_master m, pragma_table_info(m.name) p WHERE m.type = 'table'",
    "postgresql": "SELECT table_name, column_name FROM information_schema.columns "
                  "WHERE table_schema = current_schema()",
}


@cache
def expected_columns() -> dict[str, frozenset[str]]:
    """Each table's columns once every migration is applied."""
    conn = sqlite3.connect(":memory:")
    try:
        for _, statements in MIGRATIONS:
            for statement in statements:
                statement(conn) if callable(statement) else conn.execute(statement)
        return {table: frozenset(row[1] for row in conn.execute(f"PRAGMA table_info({table})"))
                for table in sorted(TABLES - {"schema_migrations"})}
    finally:
        conn.close()


def check_tables(db: Any, version: int) -> None:
    """A one-line error when a table or column the schema's migrations made is not there."""
    held: dict[str, set[str]] = {}
    for table, column in db.all(_COLUMNS[db.kind]):
        held.setdefault(table, set()).add(column)
    for table, columns in expected_columns().items():
        if table not in held:
            lacking = f"table {table} is missing"
        elif columns - held[table]:
            lacking = f"table {table} has no column {sorted(columns - held[table])[0]}"
        else:
            continue
        raise ConfigError(f"the store's tables do not match its schema version {version}: {lacking} (changed "
                          "by hand?); restore it, or move it aside and `scoreboard store import eval-results/` "
                          "stores the runs again from their reports", file=db.location, field="store")
