"""Per-subject request limits for the HTTP subjects: an adaptive concurrency cap (halved on a
429, recovered after successes), requests-per-minute pacing, and the `retries` option."""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any

from ..errors import ConfigError

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

    async def acquire(self) -> int:
        """Take a slot (waiting for the cap, the pace and any Retry-After pause); returns the
        generation to pass to on_rate_limited."""
        cap = self.cap
        if cap is None or (self.in_flight < cap and not self._waiters):
            self.in_flight += 1
        else:
            fut = asyncio.get_running_loop().create_future()
            self._waiters.append(fut)
            try:
                await fut  # release() hands the slot over (in_flight already counts us)
            except BaseException:
                if fut.done() and not fut.cancelled():
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
        if start > now:
            await asyncio.sleep(start - now)

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
