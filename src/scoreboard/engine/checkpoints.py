"""Checkpoints: the JSON report (status "running") rewritten every N attempts and T seconds, so
a reader can follow a long run; the attempt log, not the checkpoint, is what --resume uses.

A checkpoint that cannot be written (a full disk, a path taken meanwhile) stops the run: no
later request is sent (`on_failure`), the last checkpoint that was written stays as it was, and
the run ends as stopped (exit 2), never as invalid input."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable, Iterable

from ..errors import ScoreboardError
from ..record.files import replace_atomic, write_new
from ..record.stream import report_chunks


class Checkpointer:
    """Writes the report built by `make` ((head, attempt lines)) when enough attempts and time
    have passed, never more than ~10% of the run's time."""

    def __init__(self, path: Path, make: Callable[[], tuple[dict, Iterable[bytes]]], *, every: int,
                 seconds: float, exists: bool = False, on_failure: Callable[[str], None] | None = None):
        self.path, self.make = path, make
        self.on_failure = on_failure
        #: why the last write failed (None: no write failed); no checkpoint is tried after one
        self.failed: str | None = None
        self.every, self.seconds = every, seconds
        self.count = 0
        self.last = time.monotonic()
        self.written = exists
        # Rewriting a big report costs O(attempts): keep checkpoints under ~10% of the run's
        # time by waiting at least ten times as long as the last one took.
        self.min_gap = 5.0
        self.cost = 0.0
        #: called before each checkpoint is built: an executor whose counts live elsewhere (the
        #: Ray ledger service) brings them into the run's ledger first
        self.before: list[Callable[[], None]] = []

    def maybe(self) -> None:
        self.count += 1
        if self.failed is not None:
            return
        now = time.monotonic()
        gap = now - self.last
        if gap < max(self.min_gap, 10 * self.cost):
            return
        if gap >= self.seconds or self.count % self.every == 0:
            self.write()

    def write(self) -> None:
        started = time.monotonic()
        for hook in self.before:
            hook()
        head, lines = self.make()
        chunks = report_chunks(head, lines)
        try:
            if self.written:
                replace_atomic(self.path, chunks, sync=False)
            else:
                write_new(self.path, chunks)
                self.written = True
        except (OSError, ScoreboardError) as exc:
            detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            self.failed = f"checkpoint write failed ({self.path}: {detail})"
            if self.on_failure is not None:
                self.on_failure(self.failed)
            return
        done = time.monotonic()
        self.cost = done - started
        self.last = done
