"""Executors run attempts; the engine keeps the attempt log, the ledger and the budget.

An executor is handed the work (which planned attempts to run, in dispatch order) and a
`finish` callback. It calls `finish(record)` once per finished attempt, in any order, from the
engine's event loop; the engine logs the record before anything else happens and keeps
nothing of it in memory. Nothing above the executor may assume an attempt ran in this
process: whatever the engine needs later (a conversation's earlier reply, pairwise judging,
the report) it reads back from the log through `Work.lookup`.

`LocalExecutor` (asyncio workers in this process) is the default. Another executor (a cluster)
is one module implementing `Executor`, chosen with `--executor`.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Protocol

from ..suite.suite import Suite
from .attempt import AttemptRunner, RunState

#: a worker whose attempts never suspend gives the event loop a turn this often (seconds), so a
#: Ctrl-C is seen between attempts without a loop turn per attempt (about 10 us each)
YIELD_S = 0.01


@dataclass
class Work:
    """What an executor needs: the suite (subjects and graders by spec), the run's shared
    services (ledger, cache, judge), the attempts still to run, and the engine's callbacks."""

    suite: Suite
    state: RunState
    #: (case index, variant index, run) to dispatch, consumed once, lazily (a million attempts
    #: are not a million tuples held at once)
    units: Iterable[tuple[int, int, int]]
    concurrency: int
    timeout_s: float
    finish: Callable[[dict], None]
    lookup: Callable[[str, str, int], dict | None]
    ledger: Any = None
    cache: Any = None
    judge: Any = None
    #: how to load the same suite elsewhere: {source, flags, cwd, dry_run}
    origin: dict | None = None
    #: renders outputs to screenshots (render.browser.Renderer) when the suite renders
    renderer: Any = None
    #: the run's Checkpointer (engine/checkpoints.py), when it writes checkpoints
    checkpoint: Any = None


class Executor(Protocol):
    """Runs a run's attempts and hands each finished one to `work.finish`."""

    name: str

    async def execute(self, work: Work) -> None:
        """Run every unit of `work` (or until `work.state.stopping`); return when all are done."""


def dispatch_units(suite: Suite, finished: Callable[[int, int, int], bool]) -> Iterator[tuple[int, int, int]]:
    """(case index, variant index, run) still to run, run by run (so an early stop leaves whole
    runs), variants interleaved; a conversation is one unit, at its first turn."""
    first_turn: dict[str, int] = {}
    turns: dict[str, list[int]] = {}
    for ci, case in enumerate(suite.cases):
        if case.conversation is not None:
            first_turn.setdefault(case.conversation["id"], ci)
            turns.setdefault(case.conversation["id"], []).append(ci)
    for r in range(suite.config.runs):
        for ci, case in enumerate(suite.cases):
            conv = case.conversation
            if conv is not None and first_turn[conv["id"]] != ci:
                continue
            for vi in range(len(suite.variants)):
                members = turns[conv["id"]] if conv is not None else (ci,)
                if not all(finished(i, vi, r) for i in members):
                    yield ci, vi, r


def variant_limit(subject, given: int | None, concurrency: int) -> int:
    """Attempts at once for one subject: --concurrency (or the kind's own default when it was
    not given, else the run's), never above the kind's cap."""
    want = given if given else (subject.default_concurrency or concurrency)
    cap = subject.default_max_concurrency
    return min(want, cap) if cap else want


def variant_limits(suite: Suite, concurrency: int) -> dict[str, asyncio.Semaphore]:
    """A semaphore per variant whose subject allows fewer attempts at once than the run;
    variants whose subjects name one concurrency group (the agent CLIs) share one semaphore,
    so the limit counts their processes together."""
    given = suite.config.concurrency
    shared: dict[str, asyncio.Semaphore] = {}
    out = {}
    for v in suite.variants:
        limit = variant_limit(v.subject, given, concurrency)
        group = v.subject.concurrency_group
        if limit >= concurrency and group is None:
            continue
        if group is None:
            out[v.name] = asyncio.Semaphore(limit)
        else:
            out[v.name] = shared.setdefault(group, asyncio.Semaphore(limit))
    return out


def batch_windows(suite: Suite, judge: Any, concurrency: int,
                  limits: dict[str, asyncio.Semaphore]) -> dict[int, asyncio.Semaphore]:
    """Variants whose attempts wait on provider batches (their subject's, or the judge's): how
    many of their attempts may wait at once. A batch fills only when many requests are out
    together, so such attempts do not hold a worker; a variant whose own subject does not batch
    (only its judge does) still sends at most `concurrency` subject requests at once."""
    judge_window = getattr(getattr(judge, "subject", None), "batch_window", None)
    shared = None
    windows = {}
    for vi, variant in enumerate(suite.variants):
        own = getattr(variant.subject, "batch_window", None)
        if own or judge_window:
            windows[vi] = asyncio.Semaphore(own or judge_window)
            if not own and variant.name not in limits:
                shared = shared or asyncio.Semaphore(concurrency)
                limits[variant.name] = shared
    return windows


class LocalExecutor:
    """asyncio workers in this process pulling from one shared iterator (no task per attempt,
    except for attempts that wait on a provider batch: see batch_windows)."""

    name = "local"

    async def execute(self, work: Work) -> None:
        limits = variant_limits(work.suite, work.concurrency)
        windows = batch_windows(work.suite, work.judge, work.concurrency, limits)
        runner = AttemptRunner(work.suite, work.state, timeout_s=work.timeout_s, ledger=work.ledger,
                               cache=work.cache, judge=work.judge, renderer=work.renderer, limits=limits)
        iterator = iter(work.units)
        waiting: set[asyncio.Task] = set()
        # Workers pull from one shared iterator; one that finds it empty ends at once.
        workers = [asyncio.create_task(self._worker(runner, iterator, work, windows, waiting))
                   for _ in range(work.concurrency)]
        try:
            await asyncio.gather(*workers)
            while waiting:
                await asyncio.gather(*list(waiting))
        finally:  # also when the run is cancelled (Ctrl+C past the grace period) or fails
            for worker in workers:
                worker.cancel()
            for task in waiting:
                task.cancel()
            if waiting:
                await asyncio.gather(*list(waiting), return_exceptions=True)
            runner.close()

    @staticmethod
    async def _batched(runner: AttemptRunner, work: Work, unit: tuple, window: asyncio.Semaphore) -> None:
        """One attempt that waits on a batch, in a task of its own (it holds a window slot)."""
        ci, vi, r = unit
        try:
            if work.suite.cases[ci].conversation is not None:
                await runner.conversation(ci, vi, r, work.finish, work.lookup)
                return
            record = await runner.attempt(ci, vi, r)
            if record is not None:
                work.finish(record)
        finally:
            window.release()

    @classmethod
    async def _worker(cls, runner: AttemptRunner, iterator: Iterator, work: Work,
                      windows: dict[int, asyncio.Semaphore] | None = None, waiting: set | None = None) -> None:
        cases = work.suite.cases
        turned = time.monotonic()
        for ci, vi, r in iterator:
            if work.state.stopping:
                return
            window = windows.get(vi) if windows else None
            if window is not None:
                await window.acquire()
                if work.state.stopping:
                    window.release()
                    return
                task = asyncio.ensure_future(cls._batched(runner, work, (ci, vi, r), window))
                waiting.add(task)
                task.add_done_callback(waiting.discard)
                continue
            if cases[ci].conversation is not None:
                if not await runner.conversation(ci, vi, r, work.finish, work.lookup):
                    return
            else:
                record = await runner.attempt(ci, vi, r)
                if record is None:  # the budget ran out before this attempt sent anything
                    return
                work.finish(record)
            # An attempt that never suspends (a sync python subject runs on the loop, a cache hit)
            # gives the loop no turn: without this, a Ctrl-C (and every timer) waited for the
            # whole run. A turn once YIELD_S has passed lets the signal handler stop dispatching.
            if time.monotonic() - turned >= YIELD_S:
                await asyncio.sleep(0)
                turned = time.monotonic()
