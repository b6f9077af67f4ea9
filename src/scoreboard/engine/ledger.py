"""The request ledger: every model request of a run (subjects, judges, retries) is reserved
against the budget before it is sent, recorded as pending in the attempt log, and completed
after. A budget is never exceeded under any concurrency, because reservation and the check
happen in one step on the event loop (no await between them).

That guarantee rests on the provider reporting no more than the request allowed. One that
reports more (400,016 tokens for a request bounded at 1,000; $12 against a $0.05 budget) is
flagged on its attempt ("provider reported more usage than the request allowed"), and when the
spend it reports breaks a budget the run stops: no later request is reserved.

A batched request (subjects/batch.py) is reserved when its batch is submitted and stays so
until its result is collected, across resumes (`restore`; the `journal` rebuilds its batches).
One refused only because other batches still hold their reservations waits for them to settle
(ledger_batch_wait.py).
"""

from __future__ import annotations

import itertools
import time
from typing import Any

from ..errors import BudgetExceeded, LogWriteError
from ..subjects.batch_journal import Journal
from .ledger_batch_wait import batch_waits
from .ledger_wait import Settling
from .ledger_records import OVER_BOUND, Budget, Ticket, billed_entry, ledger_summary, over_bound, request_records_summary  # noqa: F401  (re-exported)
from .ledger_restore import restore_ledger


class Ledger:
    """Reserves, records and totals requests. `log` is the run's AttemptLog (or None)."""

    def __init__(self, budget: Budget | None = None, log: Any = None, start_id: int = 1):
        self.budget = budget or Budget()
        self.log = log
        self._ids = itertools.count(start_id)
        self.sent = 0  # reserved requests, retries included: what a provider may have seen
        #: tries that failed before a byte was written (connection refused, ...), by reason: no usage, no budget
        self.unsent, self.unsent_reasons = 0, {}
        self.completed = 0
        self.failed = 0
        #: what the budget was charged: reported usage plus the bound of each request whose usage
        #: is unknown (never zero for it). The split: reported (`*_known`), charged at a bound
        #: (`*_bounded`) and how many requests were charged so (`*_bounded_requests`)
        self.tokens_spent = 0
        self.cost_spent = 0.0
        self.tokens_known = self.tokens_bounded = self.tokens_bounded_requests = 0
        self.cost_known, self.cost_bounded, self.cost_bounded_requests = 0.0, 0.0, 0
        self._reserved_tokens = 0
        self._reserved_cost = 0.0
        self.unknown_usage = 0
        #: requests whose tokens (or cost) are unknown and were not charged a bound either: the
        #: totals then miss them (tokens_spent says partial, cost_spent_usd is null)
        self.tokens_missing = 0
        self.cost_missing = 0
        self.by_attempt: dict[tuple, int] = {}
        self.by_role: dict[str, int] = {}
        self.exhausted: str | None = None
        self.exhausted_here = False  # the budget ran out in this part of the run (not only an earlier one)
        #: set when the run stopped for a reason that forbids any later request (quota, billing)
        self.halted: str | None = None
        self.restored_unresolved = 0
        #: pending records of an earlier part of the run that never ended: possibly billed
        self.possibly_billed: list[dict] = []
        #: requests whose reported usage passed their bound, by attempt (taken by the runner)
        self.over_bound: dict[tuple, list[dict]] = {}
        #: batched requests reserved and not yet answered: custom id -> ticket
        self.batch_open: dict[str, Ticket] = {}
        #: the run's batches (submissions, custom ids, results): written to the same log
        self.journal = Journal(log.append if log is not None else None)
        #: requests in flight, and who waits for one to end (ledger_wait.py)
        self.settling = Settling()

    def reserve(self, attempt: tuple, *, role: str = "subject", subject: str = "",
                max_tokens: int | None = None, max_cost: float | None = None,
                max_output_tokens: int | None = None, unbounded: str | None = None,
                batch: dict | None = None) -> Ticket:
        """Reserve one request or raise BudgetExceeded. `max_tokens`/`max_cost` bound what this
        request can spend (needed when the budget limits tokens or cost); `max_output_tokens`
        is the request's own cap on output (its max_tokens parameter), when it has one."""
        if self.halted is not None:
            raise BudgetExceeded(f"the run stopped ({self.halted}); no later request is sent")
        if (refused := self.refusal(max_tokens, max_cost, unbounded)) is not None:
            self._exhaust(refused[0])
        ticket = Ticket(next(self._ids), attempt, role, subject, max_tokens or 0, max_cost or 0.0,
                        bound_tokens=max_tokens, bound_cost=max_cost, bound_output=max_output_tokens,
                        batch=batch["custom_id"] if batch else None)
        self.sent += 1
        self._reserved_tokens += ticket.reserved_tokens
        self._reserved_cost += ticket.reserved_cost
        self.by_attempt[attempt] = self.by_attempt.get(attempt, 0) + 1
        self.by_role[role] = self.by_role.get(role, 0) + 1
        if ticket.batch is not None:
            self.batch_open[ticket.batch] = ticket
        self.settling.opened(ticket)
        if self.log is not None:
            # Written before the request is sent: a crash leaves it pending = possibly billed.
            record = {"kind": "request", "id": ticket.id, "state": "pending", "attempt": list(attempt),
                      "role": role, "subject": subject, "bound_tokens": max_tokens, "bound_cost": max_cost}
            if batch:
                record["batch"] = batch
            try:
                self.log.append(record)
            except LogWriteError as exc:  # not recorded, so not sent: released, and the run stops
                self._release(ticket)
                self.halt(str(exc))
                raise BudgetExceeded(f"the run stopped ({exc}); no later request is sent") from None
        return ticket

    def refusal(self, max_tokens: int | None, max_cost: float | None, unbounded: str | None) -> tuple[str, bool] | None:
        """Why the budget refuses a request of these bounds now, and whether requests in flight
        ending could change that (None: it is not refused)."""
        b = self.budget
        if b.max_requests is not None and self.sent >= b.max_requests:
            return f"request budget of {b.max_requests} used up", True
        if b.max_tokens is not None:
            if max_tokens is None:
                return ("token budget set but this request's token bound is unknown"
                        + (f" ({unbounded})" if unbounded else "")), False
            if self.tokens_spent + self._reserved_tokens + max_tokens > b.max_tokens:
                return f"token budget of {b.max_tokens} would be exceeded", True
        if b.max_cost_usd is not None:
            if max_cost is None:
                return ("cost budget set but this request's cost bound is unknown "
                        f"({unbounded or 'no price, or no max_tokens'})"), False
            if self.cost_spent + self._reserved_cost + max_cost > b.max_cost_usd + 1e-12:
                return f"cost budget of ${b.max_cost_usd:g} would be exceeded", True
        return None

    async def acquire(self, attempt: tuple, **bounds: Any) -> Ticket:
        """`reserve` for callers on an event loop (no await between the check and the reservation),
        first waiting while only other attempts' requests in flight refuse it (ledger_wait.py)."""
        while self.halted is None and self._waits(attempt, bounds):
            await self.settling.wait()
        return self.reserve(attempt, **bounds)

    def _waits(self, attempt: tuple, bounds: dict) -> bool:
        """Refused now only by what other attempts' requests in flight hold: for a batched request,
        and for any request while batched requests hold reservations, what other attempts'
        requests in flight and the batches this run polls hold (`batch_waits`,
        ledger_batch_wait.py); else whether other attempts have requests in flight."""
        refused = self.refusal(bounds.get("max_tokens"), bounds.get("max_cost"), bounds.get("unbounded"))
        if not (refused and refused[1]):
            return False
        if bounds.get("batch") or self.batch_open:
            return batch_waits(self, attempt, bounds.get("max_tokens"), bounds.get("max_cost"))
        return bool(self.settling.others(attempt))

    def recheck_waits(self) -> None:
        """A batch this run polls no longer (its requests stay reserved, for --resume): requests
        waiting on it look again, and are refused when nothing else can free the budget."""
        self.settling.wake()

    def complete(self, ticket: Ticket, *, ok: bool, status: int | None = None,
                 input_tokens: int | None = None, output_tokens: int | None = None,
                 cost_usd: float | None = None, error: str | None = None, never_sent: str | None = None,
                 possibly_billed: bool = False) -> None:
        """Record how a reserved request ended and release its reservation. A negative count or
        cost reported by a provider is unknown (it would hand budget back), never subtracted.
        `never_sent` (why): the try failed before any byte of it was written, so it spent nothing.
        `possibly_billed`: it ended without an answer that says what it cost (a cancelled batch,
        results gone, a lost worker): listed, and said so in its end record, so a resumed run
        lists it too."""
        if never_sent is not None:
            return self._not_sent(ticket, never_sent, error)
        input_tokens, output_tokens, cost_usd = (v if v is None or v >= 0 else None
                                                 for v in (input_tokens, output_tokens, cost_usd))
        if ticket.batch is not None:
            self.batch_open.pop(ticket.batch, None)
        self._reserved_tokens -= ticket.reserved_tokens
        self._reserved_cost -= ticket.reserved_cost
        self.settling.closed(ticket)
        if ok:
            self.completed += 1
        else:
            self.failed += 1
        if possibly_billed:
            self.possibly_billed.append(billed_entry(ticket.id, ticket.attempt, ticket.role, ticket.batch))
        self._count_usage(input_tokens, output_tokens, cost_usd, ticket.bound_tokens, ticket.bound_cost)
        over = over_bound(ticket, input_tokens, output_tokens, cost_usd)
        if over is not None:
            self.over_bound.setdefault(ticket.attempt, []).append(over)
            broken = self._broken_budget()
            if broken is not None:
                self._note_exhausted(broken)
                self.halt(broken)
        if self.log is not None:
            end = {"kind": "request", "id": ticket.id, "state": "completed" if ok else "failed",
                   "attempt": list(ticket.attempt), "status": status,
                   "input_tokens": input_tokens, "output_tokens": output_tokens,
                   "cost_usd": cost_usd, "error": error,
                   "elapsed_ms": round((time.monotonic() - ticket.started) * 1000, 3)}
            if over is not None:
                end["over_bound"] = over
            if possibly_billed:
                end["possibly_billed"] = True
            self._append_end(end)

    def unsend(self, ticket: Ticket, reason: str) -> None:
        """A reserved batched request that never left (its batch was never created): released
        and no longer counted as sent; its attempt may send it again."""
        self._release(ticket)
        if self.log is not None:
            self._append_end({"kind": "request", "id": ticket.id, "state": "not-sent",
                              "attempt": list(ticket.attempt), "error": reason})

    def _not_sent(self, ticket: Ticket, reason: str, error: str | None) -> None:
        self._release(ticket)
        self._count_unsent(reason)
        if self.log is not None:
            self._append_end({"kind": "request", "id": ticket.id, "state": "not-sent", "never_sent": reason,
                              "attempt": list(ticket.attempt), "error": error})

    def _count_unsent(self, reason: str) -> None:
        self.unsent += 1
        self.unsent_reasons[reason] = self.unsent_reasons.get(reason, 0) + 1

    def _release(self, ticket: Ticket) -> None:
        """A reservation undone: the request was never sent."""
        if ticket.batch is not None:
            self.batch_open.pop(ticket.batch, None)
        self._reserved_tokens -= ticket.reserved_tokens
        self._reserved_cost -= ticket.reserved_cost
        self.sent -= 1
        self.settling.closed(ticket)
        for counts, key in ((self.by_attempt, ticket.attempt), (self.by_role, ticket.role)):
            counts[key] = counts.get(key, 1) - 1
            if counts[key] == 0:  # nothing of it sent: no row saying 0
                del counts[key]

    def _append_end(self, record: dict) -> None:
        """How a request ended, logged; when the log cannot take it the run stops sending (the
        request stays pending in the log: possibly billed, the way a crash leaves it)."""
        try:
            self.log.append(record)
        except LogWriteError as exc:
            self.halt(str(exc))

    def _count_usage(self, input_tokens: int | None, output_tokens: int | None, cost_usd: float | None,
                     bound_tokens: int | None, bound_cost: float | None) -> None:
        """Add one ended request's usage to the totals. Unknown usage still spends budget: its
        bound counts, never zero, kept apart from what providers reported; with no bound either,
        the total is marked as missing it."""
        if input_tokens is None and output_tokens is None:
            self.unknown_usage += 1
            if bound_tokens is None:
                self.tokens_missing += 1
            else:
                self.tokens_bounded += bound_tokens
                self.tokens_bounded_requests += 1
            self.tokens_spent += bound_tokens or 0
        else:
            self.tokens_known += (input_tokens or 0) + (output_tokens or 0)
            self.tokens_spent += (input_tokens or 0) + (output_tokens or 0)
        if cost_usd is not None:
            self.cost_spent += cost_usd
            self.cost_known += cost_usd
        elif bound_cost is not None:
            self.cost_spent += bound_cost
            self.cost_bounded += bound_cost
            self.cost_bounded_requests += 1
        else:
            self.cost_missing += 1

    def _broken_budget(self) -> str | None:
        """Why the spend now recorded breaks a budget (None: it does not)."""
        b = self.budget
        if b.max_tokens is not None and self.tokens_spent > b.max_tokens:
            return (f"token budget of {b.max_tokens} broken: {self.tokens_spent:,} tokens spent "
                    f"({OVER_BOUND})")
        if b.max_cost_usd is not None and self.cost_spent > b.max_cost_usd + 1e-12:
            return f"cost budget of ${b.max_cost_usd:g} broken: ${self.cost_spent:g} spent ({OVER_BOUND})"
        return None

    def take_over_bound(self, attempt: tuple) -> list[dict]:
        """The over-bound requests of an attempt (forgotten here once taken)."""
        return self.over_bound.pop(attempt, [])

    def batch_ticket(self, custom_id: str) -> Ticket | None:
        """The open reservation of a batched request (None: answered, or not this run's)."""
        return self.batch_open.get(custom_id)

    def restore(self, records: list[dict], done=None) -> None:
        """Count the requests an earlier (stopped or killed) part of this run already made, so a
        resumed run's budget includes them (ledger_restore.py)."""
        restore_ledger(self, records, done)

    #: the counters a ledger hands to another one (the Ray executor's ledger service and back)
    _STATE = ("sent", "unsent", "unsent_reasons", "completed", "failed", "tokens_spent", "cost_spent",
              "tokens_known", "tokens_bounded", "tokens_bounded_requests", "cost_known", "cost_bounded",
              "cost_bounded_requests",
              "unknown_usage", "tokens_missing", "cost_missing", "by_attempt", "by_role", "exhausted", "halted", "restored_unresolved",
              "possibly_billed", "over_bound")

    def snapshot(self) -> dict:
        """Everything this ledger has counted (no reservation may be outstanding), with the next
        request id; `absorb` makes another ledger continue from it."""
        state = {name: getattr(self, name) for name in self._STATE}
        state["by_attempt"] = [[list(k), v] for k, v in self.by_attempt.items()]
        state["over_bound"] = [[list(k), v] for k, v in self.over_bound.items()]
        state["next_id"] = next(self._ids)
        self._ids = itertools.count(state["next_id"])
        return state

    def absorb(self, state: dict) -> None:
        """Continue from another ledger's snapshot (replacing what this one counted)."""
        for name in self._STATE:
            value = state[name]
            if name in ("by_attempt", "over_bound"):
                value = {tuple(k): v for k, v in value}
            setattr(self, name, value)
        self._ids = itertools.count(state["next_id"])

    def halt(self, reason: str, attempt: tuple | None = None) -> None:
        """Refuse every later reservation (a provider said quota or billing: retries and
        attempts still in flight must not send more); every wait for one ends now. With
        `attempt` (one the stop cut short) it is said in the log (`cut`)."""
        self.halted = self.halted or reason
        self.settling.stop(self.halted)
        if attempt is not None:
            self.cut(attempt, self.halted)

    def cut(self, attempt: tuple, reason: str) -> None:
        """An attempt the run's stop cut short, said in the log: a resume runs it again."""
        if self.log is not None:
            try:
                self.log.append({"kind": "stop", "halted": reason, "attempt": list(attempt)})
            except LogWriteError:
                pass  # a resume keeps this attempt's error

    def on_stop(self, callback) -> None:
        """`callback(reason)` once the run stops (a subject's limiter ends its waits)."""
        self.settling.on_stop(callback)

    def stop_waits(self, reason: str) -> None:
        """The run stopped (an interrupt, a spent budget, ...): requests waiting to be reserved
        or sent end now, not sent; those that need no wait still go (an interrupt's grace)."""
        self.settling.stop(reason)

    def _exhaust(self, reason: str):
        self._note_exhausted(reason)
        raise BudgetExceeded(reason)

    def _note_exhausted(self, reason: str) -> None:
        """The budget ran out: said once in the log, so a resumed run (the same budget) still
        says it stopped, with this reason, even when it has nothing left to run."""
        self.exhausted_here = True
        if self.exhausted is not None:
            return
        self.exhausted = reason
        if self.log is not None:
            try:
                self.log.append({"kind": "stop", "exhausted": reason})
            except LogWriteError:
                pass  # the refusal stands; only a resume's report would miss the reason

    def summary(self) -> dict:  # the report's `requests` block
        return ledger_summary(self)
