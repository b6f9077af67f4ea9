"""The Ray executor: attempts run on Ray actors, on a local Ray instance started for the run or on
a cluster (`--executor ray --ray-address HOST:PORT`), with every guarantee of a local run
(README, "On a Ray cluster").

- **The driver keeps the record.** Finished attempts come back to the driver, which appends them
  to the one attempt log in completion order (the report is ordered as always).
- **The budget is never exceeded.** Every request is reserved in one ledger service (a Ray
  actor pinned to the driver's node, holding the run's `Ledger`) before a worker may send it,
  in one step, whatever the number of workers; it appends the request records to the same
  attempt log. The driver hands its ledger's counts to the service before the attempts and
  takes them back after.
- **Specs, not closures.** A worker loads the suite itself (same file, flags and working
  directory) and refuses to run one that differs from the driver's (`Suite.identity`).
- **Secrets through the environment**, never task arguments or a job's runtime environment.
- **A lost worker.** Its in-flight attempts that had reserved no request are run again on
  another worker; one that had is recorded `interrupted` (usage unknown), and each request it
  left open is closed in the ledger as possibly billed, never as free.
- **A stop** (a signal, a budget, a quota) is told to every worker: their waits end as the
  driver's do.
"""

from __future__ import annotations

import asyncio
import gc
import os
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..redact import remember
from .attempt import AttemptRunner, RunState, not_run_record
from .executor import Work, variant_limits
from .ray_address import check_address
from .ray_entry import import_ray as _ray
from .ray_entry import init_ray
from .ray_ledger import CANCELLED, WORKER_LOST, LedgerService, WorkerLedger, live_counts, take_back

OBJECT_STORE_BYTES = 256 * 1024 * 1024  # a local instance's: records are small, and /dev/shm often is too
#: workers replaced after losses before the run stops (a node that keeps killing them)
MAX_REPLACEMENTS = 16
#: the most units one call to a worker carries
MAX_CHUNK = 32


def load_origin(origin: dict):
    """The suite an origin names, loaded as the driver loaded it."""
    from ..suite.load import load_suite

    if origin.get("cwd"):
        os.chdir(origin["cwd"])
    return load_suite(origin.get("source"), origin.get("flags") or {}, dry_run=bool(origin.get("dry_run")))


class AttemptWorker:
    """One Ray actor running attempts of the run's suite, several at once on its event loop."""

    def __init__(self, origin: dict, identity: str, service: Any, concurrency: int, timeout_s: float):
        from ..judges.client import Judge

        suite = load_origin(origin)
        if suite.identity() != identity:
            raise ConfigError("this worker loaded a different suite than the driver (are the suite's files "
                              "the same on every node?)", field="executor")
        remember(*suite.secrets())
        self.suite = suite
        self.ledger = WorkerLedger(service)
        cfg = suite.config
        judge = None
        if suite.judge is not None:
            judge = Judge(suite.judge, ledger=self.ledger, runs=cfg.judge_runs, timeout_s=cfg.timeout_ms / 1000,
                          seed=cfg.seed)
        for subject in [v.subject for v in suite.variants] + ([suite.judge] if suite.judge else []):
            prepare = getattr(subject, "prepare", None)
            if prepare is not None:
                prepare(concurrency)
        self.state = RunState()
        self.runner = AttemptRunner(suite, self.state, timeout_s=timeout_s, ledger=self.ledger, judge=judge,
                                    limits=variant_limits(suite, concurrency))

    def pid(self) -> int:
        return os.getpid()

    def stop(self, reason: str) -> None:
        """The driver's run stopped: this worker's waits end as the driver's do (a retry wait cut:
        its attempt interrupted), and its runner sees the run stopping."""
        self.state.stop(reason)
        self.ledger.stopped(reason)

    async def run(self, ci: int, vi: int, r: int, done: dict) -> dict:
        """Run one unit (an attempt, or a conversation's turns); its records, and why the run
        should stop (the budget ran out, a quota), if it should."""
        records: list[dict] = []
        state = self.state
        if self.suite.cases[ci].conversation is not None:
            await self.runner.conversation(ci, vi, r, records.append, lambda cid, v, run: done.get(cid))
        else:
            record = await self.runner.attempt(ci, vi, r)
            if record is not None:
                records.append(record)
        return {"records": records, "stop": state.stop_reason if state.stopping else None}

    async def run_many(self, units: list[list]):
        """Run several units at once, yielding the results of those that finished together as
        they finish (a Ray streaming call: the driver logs them as they arrive)."""
        pending = {asyncio.ensure_future(self._unit(*u)) for u in units}
        while pending:
            finished, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            yield [task.result() for task in finished]

    async def _unit(self, ci: int, vi: int, r: int, done: dict) -> dict:
        return {"unit": [ci, vi, r], **await self.run(ci, vi, r, done)}

    async def flush(self) -> None:
        """Return once the service has every call this worker made (calls from one caller reach
        an actor in order, so one answered call means the earlier ones were handled)."""
        self.ledger.send()
        await self.ledger.service.requests_of.remote([])

    async def close(self) -> None:
        self.runner.close()  # this worker's shared task fixtures
        for subject in [v.subject for v in self.suite.variants] + ([self.suite.judge] if self.suite.judge else []):
            await subject.aclose()


class RayExecutor:
    """Attempts as calls on Ray actors; the driver keeps the log, the ledger's counts and the report."""

    name = "ray"

    def __init__(self, address: str | None = None, workers: int | None = None):
        self.address = address
        self.workers = workers
        self.identity: str | None = None

    def check(self, suite, options) -> None:
        """Before anything is written: Ray is installed, the address answers, the suite can be loaded
        again from its file and flags (workers build it from specs), nothing asks what Ray cannot do."""
        _ray()
        check_address(self.address)
        if options.carried is not None and options.carried.records:
            raise ConfigError("the ray executor runs suites from files and flags; this command's attempts "
                              "are carried from elsewhere: run it with the local executor", field="executor")
        if suite.config.cache:
            raise ConfigError("--cache is not supported with --executor ray (the cache is one SQLite file "
                              "in this process); run without it or with the local executor", field="cache")
        origin = {"source": str(Path(suite.source).resolve()) if suite.source else None,
                  "flags": options.flags, "cwd": os.getcwd(), "dry_run": options.dry_run}
        self.identity = suite.identity()
        if load_origin(origin).identity() != self.identity:
            raise ConfigError("the ray executor needs a suite it can load again from its file and flags "
                              "(this one was built in Python): run it with the local executor", field="executor")

    async def execute(self, work: Work) -> None:
        ray = _ray()
        started = not ray.is_initialized()
        if started:
            os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # nothing leaves this machine
            init_ray(ray, self.address, OBJECT_STORE_BYTES)
        try:
            await self._execute(ray, work)
        finally:
            if started:
                # Ray objects still referenced (a finished stream's generator, a result) must go
                # while Ray is up: freed after shutdown, they end the process.
                gc.collect()
                ray.shutdown()

    async def _execute(self, ray, work: Work) -> None:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        identity = self.identity or work.suite.identity()
        ledger = work.ledger
        here = NodeAffinitySchedulingStrategy(node_id=ray.get_runtime_context().get_node_id(), soft=False)
        service = ray.remote(LedgerService).options(num_cpus=0, scheduling_strategy=here, max_concurrency=1).remote(
            ledger.budget.to_dict(), str(Path(ledger.log.path).resolve()), ledger.snapshot())
        count = self.workers or max(1, min(work.concurrency, int(ray.cluster_resources().get("CPU", 1))))
        per_worker = -(-work.concurrency // count)
        worker_class = ray.remote(AttemptWorker).options(num_cpus=0, max_concurrency=per_worker + 4,
                                                         scheduling_strategy="SPREAD")

        def new_worker():
            return worker_class.remote(work.origin, identity, service, per_worker, work.timeout_s)

        workers = [new_worker() for _ in range(count)]
        pool = _Pool(ray, work, service, workers, new_worker, per_worker)
        hooks = work.checkpoint.before if work.checkpoint is not None else []
        sync = live_counts(ray, service, ledger)
        hooks.append(sync)  # a checkpoint counts the requests the service has seen so far
        tell = pool.tell  # the run stopped here: every worker's waits end too
        work.state.on_stop.append(tell)
        try:
            try:  # a worker that cannot load the suite (a file missing on its node, a variable unset)
                await asyncio.gather(_wait_ref(service.requests_of.remote([])),
                                     *[_wait_ref(w.pid.remote()) for w in workers])
            except ray.exceptions.RayError as exc:
                work.state.stop(f"the Ray workers could not start: {_last_line(exc)}")
                return
            await pool.run()
        finally:
            hooks.remove(sync)
            work.state.on_stop.remove(tell)
            await pool.settle()
            pool.shutdown()  # every worker's last request records reach the service first
            take_back(ray, service, ledger)


class _Pool:
    """Dispatch: at most `concurrency` units in flight, sent to the least loaded worker in
    chunks (one call per chunk; the worker streams each unit's result back as it finishes, so
    the driver logs it at once); a lost worker's units are run again or interrupted."""

    def __init__(self, ray, work: Work, service, workers: list, new_worker, per_worker: int):
        self.ray, self.work, self.service = ray, work, service
        self.workers, self.new_worker, self.per_worker = workers, new_worker, per_worker
        self.load = {id(w): 0 for w in workers}
        #: units in flight, by unit: (worker, keys)
        self.flight: dict[tuple[int, int, int], tuple[Any, list]] = {}
        self.streams: set[asyncio.Task] = set()
        self.freed = asyncio.Event()
        self.replaced = 0
        self.again: list[tuple[int, int, int]] = []
        #: units per call: a few calls per worker fill the run's concurrency
        self.chunk = max(1, min(MAX_CHUNK, work.concurrency // (4 * max(1, len(workers)))))
        self.turns: dict[str, list[str]] = {}
        for case in work.suite.cases:
            if case.conversation is not None:
                self.turns.setdefault(case.conversation["id"], []).append(case.id)

    def keys(self, unit: tuple[int, int, int]) -> list[tuple[str, str, int]]:
        ci, vi, r = unit
        suite = self.work.suite
        case = suite.cases[ci]
        variant = suite.variants[vi].name
        if case.conversation is None:
            return [(case.id, variant, r)]
        return [(cid, variant, r) for cid in self.turns[case.conversation["id"]]]

    def done_turns(self, keys: list[tuple[str, str, int]]) -> dict:
        """A conversation's turns already finished (a resumed run): reused, not repeated."""
        done = {}
        if len(keys) > 1:
            for key in keys:
                found = self.work.lookup(*key)
                if found is not None:
                    done[key[0]] = found
        return done

    def dispatch(self, units: list[tuple[int, int, int]]) -> None:
        worker = min(self.workers, key=lambda w: self.load[id(w)])
        state = self.work.state
        payload = []
        for unit in units:
            keys = self.keys(unit)
            self.flight[unit] = (worker, keys)
            state.in_flight_keys.update(keys)
            state.in_flight += 1
            payload.append([*unit, self.done_turns(keys)])
        self.load[id(worker)] += len(units)
        stream = worker.run_many.options(num_returns="streaming").remote(payload)
        task = asyncio.ensure_future(self.consume(stream, worker, list(units)))
        self.streams.add(task)
        task.add_done_callback(self.streams.discard)

    async def consume(self, stream, worker, units: list[tuple[int, int, int]]) -> None:
        """Each result of one call, as the worker finishes it; what a dead worker never
        answered is lost."""
        try:
            async for ref in stream:
                for result in await ref:
                    self.collect(tuple(result["unit"]), result)
        except self.ray.exceptions.RayActorError as exc:
            refused = getattr(exc, "actor_init_failed", False)  # a replacement refused (the suite changed)
            if refused:
                self.work.state.stop(f"a replacement Ray worker could not start: {_last_line(exc)}")
            self.retire(worker, replace=not refused)  # the next would refuse too
            for unit in units:
                if unit in self.flight:
                    self.lost(unit)
        except self.ray.exceptions.RayError as exc:  # a worker's bug, not a lost worker: the run stops
            self.work.state.stop(f"a Ray worker failed: {_last_line(exc)}")
            for unit in units:
                if unit in self.flight:
                    self.lost(unit, retry=False)

    async def run(self) -> None:
        work = self.work
        state = work.state
        units = iter(work.units)
        exhausted = False
        try:
            while True:
                free = work.concurrency - len(self.flight)
                batch: list[tuple[int, int, int]] = []
                while not state.stopping and free - len(batch) > 0 and len(batch) < self.chunk:
                    if self.again:
                        batch.append(self.again.pop())
                        continue
                    unit = None if exhausted else next(units, None)
                    if unit is None:
                        exhausted = True
                        break
                    batch.append(unit)
                # Dispatch a whole chunk, or what is left, or whatever fits once little is in flight.
                if batch and (len(batch) == self.chunk or exhausted or state.stopping
                              or len(self.flight) < self.chunk):
                    self.dispatch(batch)
                    continue
                if batch:  # wait for room for a whole chunk: put them back in order
                    self.again.extend(reversed(batch))
                if not self.flight and (exhausted or state.stopping) and not (self.again and not state.stopping):
                    return
                self.freed.clear()
                await self.freed.wait()
        except asyncio.CancelledError:
            # The grace after a signal ran out: what is in flight stays in the state's in-flight keys
            # (recorded interrupted); its open requests end as a local run's do: no worker was lost.
            lost = [list(k) for (_, keys) in self.flight.values() for k in keys]
            for task in list(self.streams):
                task.cancel()
            self.ray.get(self.service.abandon.remote(lost, CANCELLED))
            raise

    def tell(self, reason: str) -> None:
        for worker in self.workers:
            worker.stop.remote(reason)

    def collect(self, unit: tuple[int, int, int], result: dict) -> None:
        worker, keys = self.flight.pop(unit)
        self.load[id(worker)] -= 1
        state = self.work.state
        state.in_flight -= 1
        state.in_flight_keys.difference_update(keys)
        for record in result["records"]:
            self.work.finish(record)
        if result["stop"]:
            state.stop(result["stop"])
        self.freed.set()

    def retire(self, worker, replace: bool = True) -> None:
        """A worker died: replace it (up to MAX_REPLACEMENTS, then the run stops)."""
        if worker not in self.workers:
            return
        self.workers.remove(worker)
        if not replace:
            return
        self.replaced += 1
        if self.replaced > MAX_REPLACEMENTS:
            self.work.state.stop(f"{self.replaced} Ray workers lost: the run stopped")
        else:
            replacement = self.new_worker()
            self.workers.append(replacement)
            self.load[id(replacement)] = 0

    def lost(self, unit: tuple[int, int, int], retry: bool = True) -> None:
        """A unit in flight on a worker that died: run again if it had sent nothing (and
        `retry`); otherwise interrupted (usage unknown), its open requests possibly billed."""
        _, keys = self.flight.pop(unit)
        state = self.work.state
        state.in_flight -= 1
        state.in_flight_keys.difference_update(keys)
        self.freed.set()
        ray = self.ray
        sent = sum(ray.get([self.service.requests_of.remote(list(k)) for k in keys]))
        if not sent:
            if retry:
                self.again.append(unit)
            return
        ray.get(self.service.abandon.remote([list(k) for k in keys]))
        cases = self.work.suite.cases
        for case_id, variant, run in keys:
            if self.work.lookup(case_id, variant, run) is None:
                case = next(c for c in cases if c.id == case_id)
                self.work.finish(not_run_record(case, variant, run, WORKER_LOST, status="interrupted"))

    async def settle(self) -> None:
        """Let every stream task end (cancelled ones included) before Ray goes."""
        await asyncio.gather(*self.streams, return_exceptions=True)

    def shutdown(self) -> None:
        ray = self.ray
        for method in ("flush", "close"):
            for worker in self.workers:
                try:
                    ray.get(getattr(worker, method).remote(), timeout=30)
                except ray.exceptions.RayError:  # a worker already gone has nothing to flush or close
                    pass
        for worker in self.workers:
            ray.kill(worker)


async def _wait_ref(ref):
    return await ref


def _last_line(exc: BaseException) -> str:
    """The last line of a remote error (its traceback is Ray's, the cause is at the end)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return (lines[-1] if lines else type(exc).__name__)[:300]
