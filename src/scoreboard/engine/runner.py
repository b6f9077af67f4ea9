"""The async engine: variants x cases x runs -> attempts, with bounded concurrency.

Every finished attempt is appended to the attempt log before anything else happens. The
runner never raises for a subject or grader failure: those become `error` attempts.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from ..errors import BudgetExceeded, SubjectError
from ..graders.grade import Grade, GradeContext
from ..hashing import sha256_json
from ..judges.client import BoundJudge
from ..subjects.values import Measurements, Output, SubjectRequest
from ..suite.suite import Suite
from .attemptlog import AttemptLog


@dataclass
class RunState:
    """Mutable progress shared by the workers and the caller (signals, checkpoints)."""

    done: dict[tuple, dict] = field(default_factory=dict)
    stopping: bool = False
    stop_reason: str | None = None
    in_flight: int = 0
    in_flight_keys: set = field(default_factory=set)
    interrupted: set = field(default_factory=set)

    def stop(self, reason: str) -> None:
        if not self.stopping:
            self.stopping, self.stop_reason = True, reason


def attempt_key(record: dict) -> tuple:
    return (record["case_id"], record["variant"], record["run"])


async def grade_attempt(graders, ctx: GradeContext) -> tuple[list[Grade], str | None]:
    """Run every grader; an exception in one is recorded as that grade's failure, not raised."""
    grades: list[Grade] = []
    error = None
    for grader in graders:
        try:
            grade = grader.grade(ctx)
            if type(grade) is not Grade and inspect.isawaitable(grade):
                grade = await grade
        except Exception as exc:  # a grader bug is data, never a lost attempt
            grade = Grade(grader.name, None, None, f"grader raised {type(exc).__name__}: {exc}")
            error = error or f"grader {grader.name!r} raised {type(exc).__name__}: {exc}"
        grades.append(grade)
    return grades, error


def attempt_status(grades: list[Grade], error: str | None) -> str:
    """passed when every grade passed; failed when any failed; unassessed when none could judge."""
    if error is not None:
        return "error"
    if any(g.passed is False for g in grades):
        return "failed"
    if grades and all(g.passed is True for g in grades):
        return "passed"
    return "unassessed"


class Runner:
    """Runs a suite's plan; `state.done` holds every finished attempt keyed by attempt_key."""

    def __init__(self, suite: Suite, log: AttemptLog, *, concurrency: int | None = None,
                 timeout_s: float | None = None, state: RunState | None = None,
                 on_attempt: Callable[[dict], None] | None = None, ledger: Any = None,
                 cache: Any = None, judge: Any = None):
        self.suite = suite
        self.log = log
        self.ledger = ledger
        self.cache = cache
        self.judge = judge
        cfg = suite.config
        caps = [v.subject.default_max_concurrency for v in suite.variants if v.subject.default_max_concurrency]
        default = min([4, *caps]) if caps else 4
        self.concurrency = concurrency or cfg.concurrency or default
        self.timeout_s = timeout_s if timeout_s is not None else cfg.timeout_ms / 1000
        self.state = state or RunState()
        self.on_attempt = on_attempt
        self._turns: dict[str, list[int]] = {}
        for index, case in enumerate(suite.cases):
            if case.conversation is not None:
                self._turns.setdefault(case.conversation["id"], []).append(index)
        self._limits = {v.name: asyncio.Semaphore(v.subject.default_max_concurrency)
                        for v in suite.variants
                        if v.subject.default_max_concurrency
                        and v.subject.default_max_concurrency < self.concurrency}

    def plan_items(self) -> list[tuple[int, int, int]]:
        """Dispatch order: run by run, so an early stop leaves whole runs, variants interleaved."""
        n_var = len(self.suite.variants)
        # A conversation is dispatched once, at its first turn; its turns then run in order.
        return [(ci, vi, r) for r in range(self.suite.config.runs)
                for ci, case in enumerate(self.suite.cases)
                if case.conversation is None or self._turns[case.conversation["id"]][0] == ci
                for vi in range(n_var)]

    async def run(self) -> dict[tuple, dict]:
        items = [it for it in self.plan_items() if not self._finished(it)]
        iterator = iter(items)
        workers = [asyncio.create_task(self._worker(iterator)) for _ in range(min(self.concurrency, len(items)) or 0)]
        if workers:
            await asyncio.gather(*workers)
        return self.state.done

    def _key(self, item: tuple[int, int, int]) -> tuple:
        ci, vi, r = item
        return (self.suite.cases[ci].id, self.suite.variants[vi].name, r)

    def _finished(self, item: tuple[int, int, int]) -> bool:
        ci, vi, r = item
        case = self.suite.cases[ci]
        if case.conversation is None:
            return self._key(item) in self.state.done
        return all(self._key((i, vi, r)) in self.state.done for i in self._turns[case.conversation["id"]])

    def _finish(self, record: dict) -> None:
        # Logged before anything else happens: a crash after this loses nothing.
        self.log.append(record)
        self.state.done[attempt_key(record)] = record
        if self.on_attempt is not None:
            self.on_attempt(record)

    async def _worker(self, iterator) -> None:
        for item in iterator:
            if self.state.stopping:
                return
            if self.suite.cases[item[0]].conversation is not None:
                if not await self.conversation(*item):
                    return
                continue
            record = await self.attempt(*item)
            if record is None:  # the budget ran out before this attempt sent anything
                return
            self._finish(record)

    async def conversation(self, ci: int, vi: int, run: int) -> bool:
        """Run a conversation's turns in order: each turn's input holds the actual earlier
        replies. An execution failure stops the later turns (not-run); a failed expectation
        does not. Turns already in the log (a resumed run) are reused, not repeated.
        Returns False when the budget stopped the run."""
        from ..cases.conversation import check_history, turn_messages

        conv = self.suite.cases[ci].conversation
        variant = self.suite.variants[vi]
        replies: list[str] = []
        broken: str | None = None
        for k, index in enumerate(self._turns[conv["id"]]):
            case = self.suite.cases[index]
            key = (case.id, variant.name, run)
            done = self.state.done.get(key)
            if done is not None:
                if done["status"] in ("error", "not-run", "interrupted"):
                    broken = broken or conv["turns"][k]["id"]
                replies.append(((done.get("output") or {}).get("text")) or "")
                continue
            if broken is not None:
                self._finish(not_run_record(case, variant.name, run,
                                            f"not run: turn {broken!r} of this conversation failed"))
                continue
            if self.state.stopping:
                return True
            messages = turn_messages(conv, k, replies)
            problem = check_history(conv, k, messages, conv["limits"])
            if problem is not None:
                record = error_record(case, variant.name, run,
                                      f"turn not sent: {problem} (history is never shortened to fit)")
            else:
                record = await self.attempt(index, vi, run, input_override=messages)
                if record is None:
                    return False
            record["turn"] = {"conversation": conv["id"], "index": k, "id": conv["turns"][k]["id"]}
            record["chain_input_hash"] = sha256_json(messages)
            self._finish(record)
            if record["status"] == "error":
                broken = conv["turns"][k]["id"]
            replies.append(((record.get("output") or {}).get("text")) or "")
        return True

    async def attempt(self, ci: int, vi: int, run: int, input_override: Any = None) -> dict | None:
        """Execute and grade one attempt; returns its record, or None when the budget stopped
        the run before this attempt sent any request (it stays not-run)."""
        case = self.suite.cases[ci]
        variant = self.suite.variants[vi]
        params = variant.params
        if case.conversation is not None and case.conversation["shared"].get("seed") is not None:
            params = {**params, "seed": case.conversation["shared"]["seed"]}
        value = case.input if input_override is None else input_override
        if isinstance(value, list):
            # Each request gets its own messages: a subject that appends to them must not change
            # the case (or the next run's input).
            value = [dict(m) if isinstance(m, dict) else m for m in value]
        request = SubjectRequest(case.id, value, variant.skill, run, params, self.timeout_s, variant.name,
                                 self.ledger)
        limit = self._limits.get(variant.name)
        key = (case.id, variant.name, run)
        self.state.in_flight += 1
        self.state.in_flight_keys.add(key)
        start = time.perf_counter()
        output: Output | None = None
        measurements = Measurements()
        error = None
        extra = None
        try:
            if case.input_error is not None:
                raise SubjectError(case.input_error, kind="input")
            if limit is not None:
                async with limit:
                    result = await self._call(variant.subject, request)
            else:
                result = await self._call(variant.subject, request)
            output, measurements, extra = result.output, result.measurements, result.extra
        except BudgetExceeded as exc:
            self.state.stop(f"budget: {exc}")
            if not (self.ledger and self.ledger.by_attempt.get(key)):
                return None
            halted = getattr(self.ledger, "halted", None) is not None
            error = f"{'the run stopped' if halted else 'budget ran out'} during this attempt: {exc}"
        except TimeoutError:
            error = f"timeout after {self.timeout_s * 1000:.0f} ms"
        except SubjectError as exc:
            error = str(exc)
            # A subject that sent requests before failing says how many (and how long).
            if isinstance(getattr(exc, "measurements", None), Measurements):
                measurements = exc.measurements
            if exc.stop_run:
                self.state.stop(str(exc))
                if self.ledger is not None:
                    self.ledger.halt(str(exc))
        except Exception as exc:  # a subject bug is a visible error attempt
            error = f"{type(exc).__name__}: {exc}"
        finally:
            self.state.in_flight -= 1
            self.state.in_flight_keys.discard(key)
        if measurements.latency_ms is None and variant.subject.timed_by_harness:
            measurements.latency_ms = round((time.perf_counter() - start) * 1000, 3)
        grades: list[Grade] = []
        if output is not None:
            judge = BoundJudge(self.judge, key) if self.judge is not None else None
            ctx = GradeContext(case, output, measurements, judge, run, error)
            grades, grade_error = await grade_attempt(self.suite.graders[case.id], ctx)
            if self.ledger is not None and (self.ledger.exhausted or self.ledger.halted):
                # A judge call ran the budget out or hit a quota: its grade says "not judged";
                # the run stops too.
                self.state.stop(f"budget: {self.ledger.exhausted}" if self.ledger.exhausted
                                else str(self.ledger.halted))
            error = error or grade_error
            out = output.to_dict()
            output_hash = sha256_json(out)
        else:
            out = None
            output_hash = None
        record = {
            "case_id": case.id, "variant": variant.name, "run": run,
            "status": attempt_status(grades, error), "input_hash": case.input_hash,
            "output": out, "output_hash": output_hash, "error": error,
            "measurements": measurements.to_dict(), "grades": [g.to_dict() for g in grades],
        }
        if extra:
            record["subject_info"] = extra
        return record

    async def _call(self, subject, request: SubjectRequest):
        key = None
        if self.cache is not None and subject.kind not in ("mock", "recorded"):
            key = self.cache.key(subject.spec, request)
            hit = self.cache.get(key)
            if hit is not None:
                return hit
        if getattr(subject, "inline", False):
            # A sync function on the loop cannot be interrupted: it checks its own deadline.
            result = await subject.run(request)
        else:
            async with asyncio.timeout(self.timeout_s):
                result = await subject.run(request)
        if key is not None:
            self.cache.put(key, subject.kind, result)
        return result


def not_run_record(case, variant_name: str, run: int, reason: str, status: str = "not-run") -> dict:
    """The record of a planned attempt that never finished (stopped run, interrupted)."""
    return {"case_id": case.id, "variant": variant_name, "run": run, "status": status,
            "input_hash": case.input_hash, "output": None, "output_hash": None, "error": reason,
            "measurements": Measurements().to_dict(), "grades": []}


def error_record(case, variant_name: str, run: int, reason: str) -> dict:
    """The record of an attempt that failed before any subject was called."""
    return {**not_run_record(case, variant_name, run, reason, status="error")}


def ordered_attempts(suite: Suite, done: dict[tuple, dict], reason: str | None = None) -> list[dict]:
    """Attempts in the report's deterministic order (case, variant, run), whatever finished first.
    Planned attempts that did not finish are included as not-run when `reason` is given."""
    out: list[dict] = []
    for case in suite.cases:
        for variant in suite.variants:
            for run in range(suite.config.runs):
                record = done.get((case.id, variant.name, run))
                if record is None:
                    if reason is None:
                        continue
                    record = not_run_record(case, variant.name, run, reason)
                out.append(record)
    return out


def attempt_order_key(suite: Suite) -> Callable[[dict], Any]:
    case_pos = {c.id: i for i, c in enumerate(suite.cases)}
    var_pos = {v.name: i for i, v in enumerate(suite.variants)}
    return lambda a: (case_pos.get(a["case_id"], 1 << 30), var_pos.get(a["variant"], 1 << 30), a["run"])
