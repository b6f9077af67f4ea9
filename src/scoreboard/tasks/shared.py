"""Shared fixtures (`environment.shared: true`): one fixture process per task and mode serves
every attempt of a run. It is started by the first attempt that needs it (on a free loopback
port, readiness awaited once; other attempts wait for that start), and stopped, its whole
process group, when the run's executor closes: at the end, on an error, on Ctrl+C (a second
Ctrl+C kills it before exiting: tasks/procs.py) and in a resumed run (which starts its own
when a new attempt needs it).

The fixture's canaries (`fixture: true`) are drawn once per shared fixture, so every attempt
it serves shares their values; a workspace canary stays fresh per attempt.
"""

from __future__ import annotations

import asyncio
import os

from . import canaries as canary
from .fixture import Fixture, FixtureError
from .load import TaskDef


class SharedFixtures:
    """The run's shared fixtures, by (task folder, mode); `close` stops them all."""

    def __init__(self) -> None:
        self._fixtures: dict[tuple[str, str], Fixture] = {}
        self._failed: dict[tuple[str, str], str] = {}
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}
        self.closed = False

    async def get(self, task: TaskDef, mode: str) -> Fixture:
        """The running fixture for `task` in `mode`, started if it is not yet (FixtureError when
        it could not start, or exited since)."""
        spec = task.spec
        assert spec.environment is not None
        key = (str(task.folder), mode)
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            if self.closed:
                raise FixtureError("the run is ending: the shared fixture was stopped")
            if key in self._failed:
                raise FixtureError(f"the shared fixture did not start: {self._failed[key]}")
            fixture = self._fixtures.get(key)
            if fixture is None:
                values = canary.new_values([c for c in spec.canaries if c.fixture])
                fixture = Fixture(spec.environment, task.folder / "environment", mode, values, tops=task.tops)
                try:
                    await fixture.start(dict(os.environ))
                except FixtureError as exc:
                    self._failed[key] = str(exc)
                    raise
                self._fixtures[key] = fixture
            if fixture.exited is not None:
                raise FixtureError(f"the shared fixture exited with status {fixture.exited} during the run"
                                   f"{await fixture.last_words()}")
            return fixture

    def started(self) -> int:
        """How many shared fixtures this run started."""
        return len(self._fixtures)

    def close(self) -> None:
        """Stop every shared fixture (its whole process group). Synchronous: it also runs while
        the run is being cancelled."""
        self.closed = True
        fixtures, self._fixtures = list(self._fixtures.values()), {}
        for fixture in fixtures:
            fixture.stop()

