"""Whether a request the budget refuses waits for other batches to settle.

A batched request (subjects/batch.py) is reserved at its bound when its batch is submitted and
stays reserved until its result is collected, often for far less than the bound. A request of a
later batch that `--max-cost`/`--max-tokens` refused only because earlier batches still held
their reservations used to be refused at once: the run stopped "budget exhausted" with budget
to spare once those batches were read, and only `--resume` sent the rest. Now it waits, as a
request sent on its own waits on requests in flight (ledger_wait.py), until one of the
reservations it waits on ends (its result collected, its batch cancelled, expired or failed),
then is reserved or refused on what was really spent.

It waits only on what can end without it: requests of other attempts in flight on their own,
and batched requests of other attempts whose submission has begun ("submitting" journaled) and
that this run still polls. Never on a reservation of a batch still being formed (its
`_submit` is reserving its requests: batch_reserve.py), on one this run polls no longer
(detached at `poll_for_s`: its requests wait for `--resume`), nor on one restored from an
earlier part of the run and not yet claimed. A submission that has begun reserves nothing more
(every request of it was reserved before "submitting"), so it ends on the provider's schedule
and this run's polling deadline, whatever waits: a waiter waits only on things that wait on
nothing, so no cycle of waits can form. And it waits only when the request would fit were
every reservation it waits on to end having spent nothing: a request whose bound the budget
cannot hold beside what is spent and what nothing can free (its own batch's reservations among
them) is refused at once, as before. A request-count refusal waits only on requests in flight
on their own (a try that turns out never sent gives its request back; a batched request that
settles still counts as sent).

A request sent on its own waits the same way while batched requests hold reservations: refused
only because batches this run polls still hold their bounds, it waits for them to settle (it
used to be refused at once, and the run stopped with budget to spare). It is sent on its own,
so nothing waits on it before it is reserved: no cycle either.

The wait ends when a reservation ends (`Settling.closed` wakes every waiter), when a batch is
detached (`Ledger.recheck_waits`: it looks again, and is refused when nothing else can free the
budget), when the run stops (Ctrl+C, `--max-*`, a halt: `Settling.stop`), and when the batcher
closes (its task cancelled).
"""

from __future__ import annotations

from typing import Any


def _polled(journal: Any, custom_id: str) -> bool:
    """Whether a batched request's submission has begun and is polled by this run."""
    entry = journal.entries.get(custom_id)
    if entry is None:  # its batch is still being formed
        return False
    if (journal.submissions.get(entry[0]) or {}).get("state") == "ended":
        return False
    sub = journal.active.get(entry[0])
    return sub is not None and not getattr(sub, "detached", False) and not getattr(sub, "ended", False)


def batch_waits(ledger: Any, attempt: tuple, max_tokens: int | None, max_cost: float | None) -> bool:
    """A request (batched, or sent on its own while batched requests are open) refused now (by
    what is held, `refusal(...)[1]`): whether it waits for something in flight to end rather than
    being refused."""
    in_flight = ledger.settling.others(attempt)
    can_end = in_flight
    stuck_tokens, stuck_cost = 0, 0.0  # held by what cannot end without this request
    for custom_id, ticket in ledger.batch_open.items():
        if ticket.attempt != attempt and _polled(ledger.journal, custom_id):
            can_end += 1
        else:
            stuck_tokens += ticket.reserved_tokens
            stuck_cost += ticket.reserved_cost
    if not can_end:
        return False
    b = ledger.budget
    if b.max_requests is not None and ledger.sent >= b.max_requests and not in_flight:
        return False
    if b.max_tokens is not None and ledger.tokens_spent + stuck_tokens + (max_tokens or 0) > b.max_tokens:
        return False
    if b.max_cost_usd is not None and ledger.cost_spent + stuck_cost + (max_cost or 0.0) > b.max_cost_usd + 1e-12:
        return False
    return True
