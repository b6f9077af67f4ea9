"""The PostgreSQL side of store/db.py: a psycopg connection in autocommit mode, each write one
transaction, made again when the server dropped it between transactions."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from typing import Any

from ..errors import ConfigError
from .db import _MIGRATION_LOCK, _RUN_LOCK, Database, said


class PostgresDatabase(Database):
    """A connection that connects again when the server dropped it (a restart, a failover, an
    idle timeout) between transactions: a long-lived reader (the viewer) keeps answering."""

    kind = "postgresql"

    def __init__(self, conn: Any, location: str, spec: str):
        super().__init__(conn, location)
        self.spec = spec

    def sql(self, statement: str) -> str:
        return statement.replace("?", "%s")

    def _connected(self) -> None:
        """Connect again when the connection is gone (never inside a transaction: it died with it)."""
        if self.conn.closed or self.conn.broken:
            import psycopg

            try:
                self.conn = psycopg.connect(self.spec, autocommit=True, connect_timeout=10)
            except psycopg.Error as exc:
                raise ConfigError(f"lost the connection to the store and cannot connect again: {said(exc)}",
                                  file=self.location, field="store") from None

    def execute(self, statement: str, params: Sequence = ()) -> Any:
        from psycopg import OperationalError
        from psycopg.pq import TransactionStatus

        self._connected()
        idle = self.conn.info.transaction_status == TransactionStatus.IDLE
        try:
            return self.conn.execute(self.sql(statement), tuple(params))
        except OperationalError:
            if not idle or not (self.conn.closed or self.conn.broken):
                raise
        self._connected()  # dropped while idle: this statement never ran; once more on a new connection
        return self.conn.execute(self.sql(statement), tuple(params))

    def executemany(self, statement: str, rows: list[Sequence]) -> None:
        if rows:
            with self.conn.cursor() as cur:
                cur.executemany(self.sql(statement), rows)

    def rows(self, statement: str, params: Sequence = (), size: int = 1000) -> Iterator[tuple]:
        # A server-side cursor lives in a transaction; a named cursor streams the rows.
        with self._transaction(), self.conn.cursor(name=f"rows_{id(self)}_{time.monotonic_ns()}") as cur:
            cur.execute(self.sql(statement), tuple(params))
            while True:
                batch = cur.fetchmany(size)
                if not batch:
                    return
                yield from batch

    @contextmanager
    def write(self) -> Iterator[Database]:
        with self._transaction():
            yield self

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        """A transaction on a live connection. A connection the server dropped while it sat idle
        (a restart, a failover) looks open until its next statement, here the BEGIN: that one never
        ran, so it is sent once more on a new connection (a run's next batch of attempts is stored
        rather than the run giving up on the store for good)."""
        from psycopg import OperationalError
        from psycopg.pq import TransactionStatus

        self._connected()
        idle = self.conn.info.transaction_status == TransactionStatus.IDLE
        with ExitStack() as stack:
            try:
                stack.enter_context(self.conn.transaction())
            except OperationalError:
                if not idle or not (self.conn.closed or self.conn.broken):
                    raise
                self._connected()
                stack.enter_context(self.conn.transaction())
            yield

    def lock_migrations(self) -> None:
        self.execute("SELECT pg_advisory_xact_lock(?)", (_MIGRATION_LOCK,))

    def lock_run(self, key: str) -> None:
        """Two writers of one run's rows take turns (they deadlocked on its rows' indexes)."""
        self.execute("SELECT pg_advisory_xact_lock(?, hashtext(?))", (_RUN_LOCK, key))

    def has_migrations_table(self) -> bool:
        # a plain query, not to_regclass (whose catalog cache can lag behind a migration another
        # process committed while this one waited on the lock)
        return self.one("SELECT 1 FROM information_schema.tables WHERE table_schema = current_schema() "
                        "AND table_name = 'schema_migrations'") is not None

    def foreign_tables(self) -> list[str]:
        """Tables of ours that a database without `schema_migrations` already holds (a shared
        database may hold any others)."""
        from .migrations import TABLES

        return [n for (n,) in self.all("SELECT table_name FROM information_schema.tables WHERE "
                                       "table_schema = current_schema() ORDER BY table_name") if n in TABLES]
