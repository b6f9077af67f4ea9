"""How long a run polls its provider batches (`poll_for_s`), and how long one look may take.

`poll_for_s` bounds the whole of this run's polling: the waits between looks, and each look
itself (a retrieve, a search for a submission, a results download that stalls), which is cut
off when the deadline comes. A look that was cut off read nothing: its batch's attempts wait
for `--resume`. So that `poll_for_s: 0` (or a batch submitted after the deadline) still
collects a batch that has ended, a batch first looked at once the deadline has passed gets
that one look, of at most LOOK_S (its results download may stall that long, no longer). An
interrupted run (Ctrl+C) keeps looking, without this bound, for the grace period: its batches
are being cancelled.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any

#: the longest the first look at a batch may run past this run's polling deadline
LOOK_S = 10.0


class Clock:
    """One run's polling deadline (None: poll until every batch ends)."""

    def __init__(self, poll_for_s: float | None):
        loop = asyncio.get_running_loop()
        self.deadline = None if poll_for_s is None else loop.time() + poll_for_s

    def left(self) -> float | None:
        """Seconds until the deadline (None: no deadline; 0 once it passed)."""
        if self.deadline is None:
            return None
        return max(0.0, self.deadline - asyncio.get_running_loop().time())

    def past(self) -> bool:
        return self.deadline is not None and self.left() == 0.0

    def limit(self, first: bool) -> float | None:
        """How long a look starting now may take (None: unbounded): until the deadline, or
        LOOK_S for a batch's first look that starts after it."""
        left = self.left()
        if left is None:
            return None
        return LOOK_S if first and left == 0.0 else left

    async def look(self, call: Awaitable[Any], *, first: bool, subject: Any) -> Any:
        """Await `call`, cut off when this look's time is up: then a retryable error (nothing
        was read; the caller's deadline check leaves its attempts waiting)."""
        limit = self.limit(first)
        if limit is None:
            return await call
        try:
            async with asyncio.timeout(limit):
                return await call
        except TimeoutError:
            raise subject.fail(f"no answer within this run's poll_for_s ({limit:.3g} s left for this look)",
                               kind="connection", retryable=True) from None
