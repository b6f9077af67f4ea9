"""The run's ledger for the Ray executor: one service (a Ray actor on the driver's node) that
reserves and completes every request of every worker, and each worker's view of it with the
Ledger interface the subjects use. Reservation and the budget check happen in the service, one
call at a time, so no schedule of workers can overspend; the service writes the request records
(pending before sending, completed after) to the run's attempt log."""

from __future__ import annotations

import asyncio
import itertools
import uuid
from typing import Any

from ..errors import BudgetExceeded
from ..redact import KNOWN
from .attemptlog import AttemptLog, scan_attempt_log
from .ledger import Budget, Ledger, Ticket, over_bound

WORKER_LOST = "worker lost mid-attempt: usage unknown"
#: how a request in flight when an interrupt's grace ran out ends, as in a local run
CANCELLED = "cancelled"


class LedgerService:
    """The run's ledger in one process (a Ray actor on the driver's node): workers reserve and
    complete requests here, one call at a time, so the budget holds for any schedule."""

    def __init__(self, budget: dict, log_path: str, state: dict):
        self.log = AttemptLog(log_path)
        self.ledger = Ledger(Budget(**budget), self.log)
        self.ledger.absorb(state)
        self.open: dict[int, Ticket] = {}
        #: the worker's name of each reservation not yet acknowledged by a completion
        self.nonces: dict[str, int] = {}
        #: requests reserved per attempt by this run's part (an earlier part's, restored from
        #: the log, were not sent by any worker of this one)
        self.reserved_here: dict[tuple, int] = {}

    def reserve(self, attempt: list, bounds: dict, nonce: str) -> dict:
        if self.ledger.halted is None and self.ledger._waits(tuple(attempt), bounds):
            return {"wait": True}  # refused only by other attempts' requests in flight (ledger_wait.py)
        try:
            ticket = self.ledger.reserve(tuple(attempt), **bounds)
        except BudgetExceeded as exc:
            return {"exceeded": str(exc), "exhausted": self.ledger.exhausted, "halted": self.ledger.halted}
        self.open[ticket.id] = ticket
        self.nonces[nonce] = ticket.id
        self.reserved_here[ticket.attempt] = self.reserved_here.get(ticket.attempt, 0) + 1
        return {"id": ticket.id}

    def reserve_many(self, items: list[list]) -> list[dict]:
        """Several reservations in one call, in order (a worker's requests of one moment)."""
        return [self.reserve(attempt, bounds, nonce) for attempt, bounds, nonce in items]

    def complete_many(self, items: list[list]) -> None:
        for ticket_id, outcome in items:
            self.complete(ticket_id, outcome)

    def withdraw(self, nonce: str) -> None:
        """The worker stopped waiting for this reservation (its attempt timed out or was
        cancelled): the request was never sent, and is closed as cancelled."""
        ticket_id = self.nonces.pop(nonce, None)
        if ticket_id is not None:
            self.complete(ticket_id, {"ok": False, "error": "cancelled"})

    def complete(self, ticket_id: int, outcome: dict) -> None:
        ticket = self.open.pop(ticket_id, None)
        self.nonces.pop(outcome.pop("nonce", None), None)
        if ticket is not None:
            if outcome.get("never_sent"):  # it never left: not one of its attempt's requests
                self.reserved_here[ticket.attempt] = self.reserved_here.get(ticket.attempt, 1) - 1
            self.ledger.complete(ticket, **outcome)

    def halt(self, reason: str, attempt: tuple | None = None) -> None:
        self.ledger.halt(reason, None if attempt is None else tuple(attempt))

    def requests_of(self, attempt: list) -> int:
        """Requests `attempt` reserved in this part of the run (a lost worker's attempt that
        reserved none is run again)."""
        return self.reserved_here.get(tuple(attempt), 0)

    def abandon(self, attempts: list[list], error: str = WORKER_LOST) -> int:
        """Close the requests lost workers left open: possibly billed, usage unknown. With
        `error` CANCELLED (an interrupt's grace ran out, the workers alive): failed, usage
        unknown, as a local run closes a request it cancels."""
        keys = {tuple(a) for a in attempts}
        lost = [t for t in self.open.values() if t.attempt in keys]
        for ticket in lost:
            del self.open[ticket.id]
            self.ledger.complete(ticket, ok=False, error=error, possibly_billed=error == WORKER_LOST)
        return len(lost)

    def live(self) -> dict:
        """The counts so far, requests in flight among them as reserved (a checkpoint's)."""
        return self.ledger.snapshot()

    def state(self) -> dict:
        """The counts, handed back to the driver (requests still open are closed first)."""
        self.abandon([list(t.attempt) for t in self.open.values()])
        return self.ledger.snapshot()

    def close(self) -> None:
        self.log.close()


def take_back(ray, service: Any, ledger: Ledger) -> None:
    """The service's counts into the driver's ledger, and the service closed. A service lost
    mid-run (its process killed) wrote every record it took to the attempt log: the counts are
    read from there, as a resume reads them (a request it reserved and never ended is possibly
    billed, usage unknown, never free)."""
    try:
        ledger.absorb(ray.get(service.state.remote()))
        ray.get(service.close.remote())
    except ray.exceptions.RayError:
        fresh = Ledger(ledger.budget)
        fresh.restore([r for _, _, r in scan_attempt_log(ledger.log.path)
                       if r.get("kind") in ("request", "batch", "batch-result", "stop")])
        state = fresh.snapshot()
        state["halted"] = ledger.halted or state["halted"]
        ledger.absorb(state)
    ray.kill(service)


def live_counts(ray, service: Any, ledger: Ledger):
    """A hook bringing the service's counts so far into the driver's ledger, which a checkpoint
    reports (`take_back` replaces them with the final ones); a service that does not answer
    leaves them as they were, and a halt the driver made stays."""
    def sync() -> None:
        try:
            state = ray.get(service.live.remote(), timeout=10)
        except (ray.exceptions.RayError, TimeoutError):
            return
        state["halted"] = ledger.halted or state["halted"]
        ledger.absorb(state)

    return sync


class WorkerLedger:
    """A worker's view of the ledger service, with the Ledger interface the subjects use:
    `acquire` awaits the service's reservation, `complete` tells it how a request ended.

    Calls of one moment travel together: the reservations and completions made before the
    worker's event loop comes round again go in one call each (completions first, so the
    budget they release is there for the reservations), and one worker's calls reach the
    service in the order they were made."""

    def __init__(self, service: Any):
        self.service = service
        self.by_attempt: dict[tuple, int] = {}
        self.over_bound: dict[tuple, list[dict]] = {}
        self.nonces: dict[int, str] = {}
        self.exhausted: str | None = None
        self.halted: str | None = None
        self._reserves: list[tuple] = []
        self._completes: list[list] = []
        self._scheduled = False
        self._on_stop: list = []
        self.stop_reason: str | None = None

    def on_stop(self, callback) -> None:
        """`callback(reason)` once this worker learns the run stopped (a refusal, a halt, the
        service lost, the driver's stop): a subject's limiter in this worker then ends its waits,
        as in the driver; at once when it has already learned it."""
        if self.stop_reason is not None:
            callback(self.stop_reason)
            return
        self._on_stop.append(callback)

    def stopped(self, reason: str) -> None:
        """The run stopped: the waits registered here end (once), and any registered later ends
        at once, as the driver's ledger does (ledger_wait.Settling.stop)."""
        self.stop_reason = self.stop_reason or reason
        callbacks, self._on_stop = self._on_stop, []
        for callback in callbacks:
            callback(reason)

    @property
    def exhausted_here(self) -> bool:
        """A worker learns of a spent budget only from a refusal in this part of the run."""
        return self.exhausted is not None

    async def acquire(self, attempt: tuple, *, role: str = "subject", subject: str = "",
                      max_tokens: int | None = None, max_cost: float | None = None,
                      max_output_tokens: int | None = None, unbounded: str | None = None) -> Ticket:
        if self.halted is not None:
            raise BudgetExceeded(f"the run stopped ({self.halted}); no later request is sent")
        bounds = {"role": role, "subject": subject, "max_tokens": max_tokens, "max_cost": max_cost,
                  "max_output_tokens": max_output_tokens, "unbounded": unbounded}
        loop = asyncio.get_running_loop()
        for pause in itertools.chain((0.01, 0.02, 0.05, 0.1), itertools.repeat(0.2)):
            item = (list(attempt), bounds, uuid.uuid4().hex, loop.create_future())
            self._reserves.append(item)
            self._schedule(loop)
            try:
                reply = await item[3]
            except asyncio.CancelledError:
                if item in self._reserves:  # not sent yet: nothing to take back
                    self._reserves.remove(item)
                else:  # reaches the service after the reservation
                    self.service.withdraw.remote(item[2])
                raise
            except Exception as exc:  # the service is gone (its process killed): nothing more may be sent
                self.halted = self.halted or f"the run's ledger service was lost ({type(exc).__name__})"
                self.stopped(self.halted)
                raise BudgetExceeded(f"{self.halted}: no request can be reserved") from None
            if "wait" not in reply:
                break
            await asyncio.sleep(pause)  # other attempts' requests in flight may give budget back
        if "exceeded" in reply:
            self.exhausted = self.exhausted or reply["exhausted"]
            self.halted = self.halted or reply["halted"]
            self.stopped(self.halted or self.exhausted or reply["exceeded"])
            raise BudgetExceeded(reply["exceeded"])
        self.by_attempt[attempt] = self.by_attempt.get(attempt, 0) + 1
        ticket = Ticket(reply["id"], attempt, role, subject, max_tokens or 0, max_cost or 0.0,
                        bound_tokens=max_tokens, bound_cost=max_cost, bound_output=max_output_tokens)
        self.nonces[ticket.id] = item[2]
        return ticket

    def reserve(self, attempt: tuple, **bounds: Any) -> Ticket:
        raise RuntimeError("a worker's ledger reserves through `await acquire(...)`")

    def complete(self, ticket: Ticket, *, ok: bool, status: int | None = None,
                 input_tokens: int | None = None, output_tokens: int | None = None,
                 cost_usd: float | None = None, error: str | None = None, never_sent: str | None = None) -> None:
        over = over_bound(ticket, input_tokens, output_tokens, cost_usd)
        if never_sent:  # never left: not this attempt's request (as the service's ledger counts it)
            self.by_attempt[ticket.attempt] = self.by_attempt.get(ticket.attempt, 1) - 1
        if over is not None:
            self.over_bound.setdefault(ticket.attempt, []).append(over)
        outcome = {"ok": ok, "status": status, "input_tokens": input_tokens, "output_tokens": output_tokens,
                   "cost_usd": cost_usd, "error": KNOWN.scrub(error) if error and KNOWN else error,
                   "nonce": self.nonces.pop(ticket.id, None), **({"never_sent": never_sent} if never_sent else {})}
        self._completes.append([ticket.id, outcome])
        self._schedule(asyncio.get_running_loop())

    def _schedule(self, loop: asyncio.AbstractEventLoop) -> None:
        if not self._scheduled:
            self._scheduled = True
            loop.call_soon(self.send)

    def send(self) -> None:
        """Send what waits: the completions, then the reservations."""
        self._scheduled = False
        completes, self._completes = self._completes, []
        if completes:
            self.service.complete_many.remote(completes)
        reserves, self._reserves = self._reserves, []
        if reserves:
            ref = self.service.reserve_many.remote([item[:3] for item in reserves])
            asyncio.ensure_future(self._deliver(ref, reserves))

    @staticmethod
    async def _deliver(ref, reserves: list[tuple]) -> None:
        try:
            replies = await ref
        except BaseException as exc:  # the service is gone: every waiting request fails with it
            for item in reserves:
                if not item[3].done():
                    item[3].set_exception(exc)
            return
        for item, reply in zip(reserves, replies):
            if not item[3].done():
                item[3].set_result(reply)

    def take_over_bound(self, attempt: tuple) -> list[dict]:
        return self.over_bound.pop(attempt, [])

    def halt(self, reason: str, attempt: tuple | None = None) -> None:
        self.halted = self.halted or reason
        self.service.halt.remote(reason, None if attempt is None else list(attempt))
        self.stopped(self.halted)
