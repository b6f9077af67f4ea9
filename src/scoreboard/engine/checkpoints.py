"""Checkpoints: the JSON report (status "running") rewritten every N attempts and T seconds, so
a reader can follow a long run; the attempt log, not the checkpoint, is what --resume uses."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable, Iterable

from ..record.files import replace_atomic, write_new
from ..record.stream import report_chunks


class Checkpointer:
    """Writes the report built by `make` ((head, attempt lines)) when enough attempts and time
    have passed, never more than ~10% of the run's time."""

    def __init__(self, path: Path, make: Callable[[], tuple[dict, Iterable[bytes]]], *, every: int,
                 seconds: float, exists: bool = False):
        self.path, self.make = path, make
        self.every, self.seconds = every, seconds
        self.count = 0
        self.last = time.monotonic()
        self.written = exists
        # Rewriting a big report costs O(attempts): keep checkpoints under ~10% of the run's
        # time by waiting at least ten times as long as the last one took.
        self.min_gap = 5.0
        self.cost = 0.0

    def maybe(self) -> None:
        self.count += 1
        now = time.monotonic()
        gap = now - self.last
        if gap < max(self.min_gap, 10 * self.cost):
            return
        if gap >= self.seconds or self.count % self.every == 0:
            self.write()

    def write(self) -> None:
        started = time.monotonic()
        head, lines = self.make()
        chunks = report_chunks(head, lines)
        if self.written:
            replace_atomic(self.path, chunks, sync=False)
        else:
            write_new(self.path, chunks)
            self.written = True
        done = time.monotonic()
        self.cost = done - started
        self.last = done
