"""The connection pool of one HTTP subject: an aiohttp session per event loop, sized so that it
is never the tightest limit on the requests in flight."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import aiohttp

from ._unsent import ProbingConnector


def connection_limit(max_concurrency: int | None, prepared: int | None) -> int:
    """The aiohttp connector's `limit` (0: none) for a subject capped at `max_concurrency`
    requests (its Limiter) and prepared for `prepared` run() calls at once.

    A cap in the connector queues requests silently: a fixed one (it was 64) gave
    `--concurrency 200` only 64 requests in flight, with no trace in the report. So the pool
    holds the run's number when the caller said it (Subject.prepare), the spec's
    `max_concurrency` when that is lower (the Limiter holds requests to it anyway), and has no
    cap otherwise: the caller's concurrency and the Limiter are then the only bounds."""
    bounds = [n for n in (max_concurrency, prepared) if n]
    return min(bounds) if bounds else 0


def _drop(session: aiohttp.ClientSession) -> None:
    """Close a session of another (finished) loop synchronously: its transports, no await."""
    connector = session.connector
    session.detach()
    try:
        connector._close()  # noqa: SLF001 - the synchronous close of its transports
    except Exception:
        pass


class Pool:
    """One subject's aiohttp session, opened lazily inside the running loop."""

    def __init__(self, max_concurrency: int | None):
        self.max_concurrency = max_concurrency
        self.prepared: int | None = None  # the most run() calls at once the caller announced
        self.loop: asyncio.AbstractEventLoop | None = None
        self._session: aiohttp.ClientSession | None = None
        self._retired: list[aiohttp.ClientSession] = []  # outgrown by prepare(); closed by aclose()

    @property
    def limit(self) -> int:
        return connection_limit(self.max_concurrency, self.prepared)

    def prepare(self, concurrency: int) -> None:
        """Make room for `concurrency` requests at once (the largest number asked wins)."""
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
            raise ValueError(f"concurrency must be a positive integer, not {concurrency!r}")
        self.prepared = max(self.prepared or 0, concurrency)
        session = self._session
        connector = session.connector if session is not None and not session.closed else None
        if connector is not None and connector.limit and connector.limit < self.limit:
            # The next request opens a larger pool; this one stays open for the requests it
            # carries and is closed with the subject.
            self._retired.append(session)
            self._session = None

    def session(self, loop: asyncio.AbstractEventLoop,
                headers: Callable[[], dict[str, str]]) -> aiohttp.ClientSession:
        """The session for `loop`, opened now if there is none (`headers`: sent with every request)."""
        session = self._session
        if session is not None and self.loop is loop and not session.closed:
            return session
        if self.loop is not loop:
            # sessions of another (finished) loop cannot be awaited closed from here
            for old in (session, *self._retired):
                if old is not None and not old.closed:
                    _drop(old)
            self._retired = []
        fixed = {"Content-Type": "application/json", **headers()}
        # limit_per_host=0: all of a subject's requests go to one host, so a per-host cap would
        # be the same silent cap as `limit`.
        connector = ProbingConnector(limit=self.limit, limit_per_host=0)
        self._session = aiohttp.ClientSession(connector=connector, headers=fixed, trust_env=False,
                                              timeout=aiohttp.ClientTimeout(total=None))
        self.loop = loop
        return self._session

    async def aclose(self) -> None:
        """Close every session (awaited in its own loop, dropped from another)."""
        sessions = [*self._retired, self._session]
        self._session, self._retired = None, []
        same_loop = self.loop is asyncio.get_running_loop()
        for session in sessions:
            if session is not None and not session.closed:
                if same_loop:
                    await session.close()
                else:
                    _drop(session)
        self.loop = None
