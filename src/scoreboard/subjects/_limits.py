"""Per-subject request limits for the HTTP subjects: an adaptive concurrency cap (halved on a
429, recovered after successes), requests-per-minute pacing, and the `retries` option.

Every wait here (a place in the queue, the pace, a Retry-After pause, the sleep before a retry)
ends at once when the run stops: the run's ledger calls `stop` (a wake-up registered by
`watch`; subjects never import the engine), and a request that would have to wait is not
sent (BudgetExceeded, `cut_by_stop`), nor is a retry made."""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any

from ..errors import BudgetExceeded, ConfigError

RETRY_DEFAULTS = {"attempts": 4, "base_delay_s": 0.5, "max_delay_s": 30.0}
#: consecutive successes after which a cap lowered by a 429 grows back by one
RECOVER_AFTER = 10


class Limiter:
    """Per-subject concurrency cap (adaptive) and request pacing (requests per minute)."""

    def __init__(self, max_concurrency: int | None, requests_per_minute: float | None,
                 recover_after: int = RECOVER_AFTER):
        self.max = max_concurrency
        self.cap = max_concurrency  # effective cap; None means unbounded
        self.in_flight = 0
        self.recover_after = recover_after
        self.interval = 60.0 / requests_per_minute if requests_per_minute else 0.0
        self._next_slot = 0.0
        self._paused_until = 0.0
        self._waiters: deque = deque()
        self._gen = 0  # bumped on each decrease: one 429 storm halves once, not once per request
        self._ok = 0
        self._ceiling: int | None = None
        #: the ledger whose stop ends this limiter's waits, and why it stopped (None: running)
        self.ledger: object = None
        self.stopped: str | None = None
        self._sleepers: set = set()  # the pace, pause and retry waits under way

    def watch(self, ledger) -> None:
        """Let `ledger` (the run's, duck-typed: `on_stop(callback)`) end this limiter's waits
        when the run stops; a ledger without that hook (a Ray worker's) ends none."""
        self.ledger, self.stopped = ledger, None
        hook = getattr(ledger, "on_stop", None)
        if hook is not None:
            hook(lambda reason: self.stop(reason) if self.ledger is ledger else None)

    def stop(self, reason: str) -> None:
        """The run stopped: every wait ends now, and no later request waits."""
        if self.stopped is not None:
            return
        self.stopped = reason
        waiters, self._waiters = self._waiters, deque()
        for fut in waiters:
            if not fut.done():
                fut.set_exception(self.refusal())
        for fut in list(self._sleepers):
            if not fut.done():
                fut.set_result(False)

    def refusal(self) -> BudgetExceeded:
        exc = BudgetExceeded(f"the run stopped ({self.stopped}); no later request is sent")
        exc.cut_by_stop = True
        return exc

    async def sleep(self, delay: float) -> bool:
        """Wait `delay` seconds; False (at once) when the run stops meanwhile or had stopped."""
        if self.stopped is not None:
            return False
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        handle = loop.call_later(delay, lambda: fut.done() or fut.set_result(True))
        self._sleepers.add(fut)
        try:
            return await fut
        finally:
            handle.cancel()
            self._sleepers.discard(fut)

    async def acquire(self) -> int:
        """Take a slot (waiting for the cap, the pace and any Retry-After pause); returns the
        generation to pass to on_rate_limited. Once the run stopped, a request that would wait
        raises BudgetExceeded (one that needs no wait still goes: an interrupted run's grace)."""
        cap = self.cap
        if cap is None or (self.in_flight < cap and not self._waiters):
            self.in_flight += 1
        elif self.stopped is not None:
            raise self.refusal()
        else:
            fut = asyncio.get_running_loop().create_future()
            self._waiters.append(fut)
            try:
                await fut  # release() hands the slot over (in_flight already counts us)
            except BaseException:
                if fut.done() and not fut.cancelled() and fut.exception() is None:
                    self.release()
                else:
                    try:
                        self._waiters.remove(fut)
                    except ValueError:
                        pass
                raise
        gen = self._gen
        if self.interval or self._paused_until:
            try:
                await self._pace()
            except BaseException:
                self.release()
                raise
        return gen

    async def _pace(self) -> None:
        loop = asyncio.get_running_loop()
        now = loop.time()
        start = max(now, self._paused_until)
        if self.interval:
            start = max(start, self._next_slot)
            self._next_slot = start + self.interval
        if start > now and not await self.sleep(start - now):
            raise self.refusal()

    def release(self) -> None:
        self.in_flight -= 1
        if self._waiters:
            self._wake()

    def _wake(self) -> None:
        waiters = self._waiters
        while waiters and (self.cap is None or self.in_flight < self.cap):
            fut = waiters.popleft()
            if not fut.done():
                self.in_flight += 1
                fut.set_result(None)

    def on_success(self) -> None:
        if self.cap is None or self.cap == self.max:
            return
        self._ok += 1
        if self._ok >= self.recover_after:
            self._ok = 0
            self.cap += 1
            if self.max is None and self._ceiling is not None and self.cap >= self._ceiling:
                self.cap = None  # back to where it was before the first 429
            self._wake()

    def on_rate_limited(self, gen: int, retry_after: float | None) -> None:
        if retry_after:
            until = asyncio.get_running_loop().time() + retry_after
            self._paused_until = max(self._paused_until, until)
        if gen != self._gen:
            return  # already reduced for this burst
        self._gen += 1
        current = self.cap if self.cap is not None else max(self.in_flight + 1, 1)
        if self.max is None and self._ceiling is None:
            self._ceiling = current
        self.cap = max(1, current // 2)
        self._ok = 0


def _positive(spec: dict, key: str, kind: str, typ=int) -> Any:
    value = spec.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, typ) or value <= 0:
        raise ConfigError(f"subject {kind!r}: {key!r} must be a positive number", field=f"subject.{key}")
    return value


def parse_retries(value: Any, kind: str) -> dict:
    """The `retries` option: {attempts, base_delay_s, max_delay_s}; attempts counts every request."""
    if value is None:
        return dict(RETRY_DEFAULTS)
    if not isinstance(value, dict) or set(value) - set(RETRY_DEFAULTS):
        raise ConfigError(f"subject {kind!r}: 'retries' is {{attempts, base_delay_s, max_delay_s}}",
                          field="subject.retries")
    out = {**RETRY_DEFAULTS, **value}
    attempts = out["attempts"]
    if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
        raise ConfigError(f"subject {kind!r}: retries.attempts must be an integer >= 1",
                          field="subject.retries.attempts")
    for key in ("base_delay_s", "max_delay_s"):
        v = out[key]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
            raise ConfigError(f"subject {kind!r}: retries.{key} must be a number >= 0",
                              field=f"subject.retries.{key}")
        out[key] = float(v)
    return out
