"""Progress: a rich bar on a terminal, otherwise one plain line at every 10%."""

from __future__ import annotations

import sys
import time


class Progress:
    """Counts finished attempts; `advance()` is cheap enough for the hot path."""

    def __init__(self, total: int, label: str, enabled: bool = True, stream=None):
        self.total, self.label, self.done = total, label, 0
        self.stream = stream or sys.stderr
        self.enabled = enabled and total > 0
        self._bar = None
        self._next_pct = 10
        self._start = time.perf_counter()
        self._last_draw = 0.0
        if self.enabled and getattr(self.stream, "isatty", lambda: False)():
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                TextColumn,
                TimeElapsedColumn,
            )
            from rich.progress import Progress as RichProgress

            self._bar = RichProgress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                     TimeElapsedColumn(), console=Console(file=self.stream), transient=True)
            self._task = self._bar.add_task(label, total=total)
            self._bar.start()

    def advance(self, n: int = 1) -> None:
        if not self.enabled:
            return
        self.done += n
        if self._bar is not None:
            now = time.perf_counter()
            if now - self._last_draw > 0.1 or self.done >= self.total:
                self._bar.update(self._task, completed=self.done)
                self._last_draw = now
            return
        pct = self.done * 100 // self.total
        if pct >= self._next_pct:
            elapsed = time.perf_counter() - self._start
            print(f"{self.label}: {self.done}/{self.total} attempts ({pct}%) in {elapsed:.1f}s",
                  file=self.stream, flush=True)
            self._next_pct = (pct // 10 + 1) * 10

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
