"""A batched request refused by `--max-cost`/`--max-tokens` only because other batches still hold
their reservations waits for them to settle (engine/ledger_batch_wait.py), against the loopback
fake batch provider: a run whose budget fits the batches' real costs but not their bounds
completes; a request that waiting cannot help is refused at once; a stop ends the wait.

Before the fix (the ledger never let a batched request wait), the first run below ended
`stopped` ("budget: cost budget of $0.0007 would be exceeded"; with tokens, "token budget of 280
would be exceeded") with attempts passed, passed, not-run, not-run and 2 requests sent: the
second batch was refused while the first still held its reservations (2 x $0.000283), though
it spent $0.000032 once read, and only `--resume` would have sent the rest."""

from __future__ import annotations

import asyncio
import json

import pytest

from scoreboard.engine.ledger import Budget, Ledger
from scoreboard.engine.pipeline import RunOptions, run
from scoreboard.errors import BatchNotSent, BudgetExceeded
from scoreboard.suite.load import load_suite
from tests.cli_inprocess import run_cli
from tests.servers.fake_batches import FakeBatches
from tests.subjects import ListLog, make, req
from tests.subjects.test_batch import FAST, PRICE, suite_flags

#: the bounds of one request of `suite_flags` ("What is i+1?", max_tokens 50, PRICE at the batch
#: discount): $0.000283 and 140 tokens, each about 18 times what the fake's answer spends
BUDGETS = [{"max_cost_usd": 0.0007}, {"max_tokens": 350}]


@pytest.fixture
def srv():
    with FakeBatches() as server:
        yield server


def _records(folder) -> list[dict]:
    (log,) = folder.rglob("attempts.jsonl")
    return [json.loads(line) for line in log.read_text().splitlines()]


@pytest.mark.parametrize("budget", BUDGETS, ids=["cost", "tokens"])
def test_a_budget_that_fits_the_real_costs_but_not_the_bounds_completes(tmp_path, srv, budget):
    outcome = run(load_suite(None, suite_flags(tmp_path, srv, 4, {**FAST, "size": 2}, concurrency=8, **budget)),
                  RunOptions(progress=False))
    report = outcome.report
    assert report["run"]["status"] == "completed", report["run"].get("stop_reason")
    assert [a["status"] for a in report["attempts"]] == ["passed"] * 4
    assert outcome.exit_code == 0
    requests = report["requests"]
    assert requests["sent"] == requests["completed"] == 4 and requests["exhausted"] is None
    records = _records(tmp_path / "out")
    pending = [r for r in records if r.get("kind") == "request" and r["state"] == "pending"]
    field, limit = next(iter(budget.items()))
    bound = {"max_cost_usd": "bound_cost", "max_tokens": "bound_tokens"}[field]
    bounds = [r[bound] for r in pending]
    # two bounds fit the budget, three do not: the second batch could not be reserved beside the first
    assert len(set(bounds)) == 1 and 2 * bounds[0] <= limit < 3 * bounds[0]
    spent = requests["cost_spent_usd"] if field == "max_cost_usd" else requests["tokens_spent"]
    assert spent <= limit  # never broken
    # two batches, the second reserved and submitted only once the first's results were read
    assert len(srv.batches) == 2 and len(srv.submitted) == 4
    at = {(r.get("kind"), r.get("event") or r.get("state"), r.get("submission") or r.get("id")): i
          for i, r in enumerate(records)}
    first, second = dict.fromkeys(r["submission"] for r in records if r.get("kind") == "batch")
    ids = [r["id"] for r in pending]
    assert max(at["request", "completed", i] for i in ids[:2]) < at["request", "pending", ids[2]] \
        < at["batch", "submitting", second]
    assert at["batch", "submitting", first] < at["request", "pending", ids[2]]
    verified = run_cli(["verify", str(outcome.paths["json"])], tmp_path)
    assert verified.returncode == 0, verified.stdout + verified.stderr


def _bound() -> float:
    """The cost bound of one `question` request, as the ledger reserves it (a server of its own)."""
    log = ListLog()
    with FakeBatches() as other:
        results = _run_all(make("openai", other, batch=FAST, price=PRICE, params={"max_tokens": 50}),
                           [question(0)], Ledger(Budget(), log))
    assert not isinstance(results[0], BaseException)
    return next(r["bound_cost"] for r in log.records if r.get("state") == "pending")


def question(i: int, text: str | None = None):
    return req(text or f"What is {i}+1?", case_id=f"c{i}")


def _run_all(subject, requests, ledger):
    async def main():
        try:
            for r in requests:
                r.ledger = ledger
            return await asyncio.gather(*(subject.run(r) for r in requests), return_exceptions=True)
        finally:
            await subject.aclose()

    return asyncio.run(main())


async def _until(predicate, what: str) -> None:
    """Yield to the loop (and the fake's thread) until `predicate()`; fails after 10 s."""
    for _ in range(1000):
        if predicate():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"never: {what}")


def test_a_request_that_waiting_cannot_help_is_refused_at_once(srv):
    """Its bound alone is more than the budget: refused while another batch is still open,
    without waiting for it (that batch is held until the refusal is seen)."""
    bound = _bound()
    srv.hold = True
    ledger = Ledger(Budget(max_cost_usd=2.5 * bound), ListLog())
    subject = make("openai", srv, batch={**FAST, "size": 2}, price=PRICE, params={"max_tokens": 50})
    requests = [question(0), question(1)]
    long = question(9, "Say this back: " + "word " * 200)
    for r in (*requests, long):
        r.ledger = ledger

    async def main():
        try:
            short = [asyncio.ensure_future(subject.run(r)) for r in requests]
            await _until(lambda: len(srv.batches) == 1, "the first batch created")
            with pytest.raises(BudgetExceeded, match="cost budget"):
                await asyncio.wait_for(subject.run(long), 10)
            assert len(ledger.batch_open) == 2  # refused while the other batch still held its bounds
            srv.release()
            return await asyncio.gather(*short)
        finally:
            await subject.aclose()

    done = asyncio.run(main())
    assert [r.output.text for r in done] == ["ANSWER: 1", "ANSWER: 2"]
    assert len(srv.submitted) == 2 and ledger.sent == 2


@pytest.mark.parametrize("stop", ["interrupt", "stop", "halt"])
def test_a_stop_during_the_wait_ends_it(srv, stop):
    """One batch of one request is held open; the next batch's first request is reserved, its
    second waits on the held batch; the run stops. The waiting request is refused (not sent);
    the one reserved beside it is released unsent after an interrupt or a halt, and goes after
    any other stop (as a request that needs no wait does)."""
    bound = _bound()
    srv.hold = True
    log = ListLog()
    ledger = Ledger(Budget(max_cost_usd=2.5 * bound), log)
    subject = make("openai", srv, batch={**FAST, "size": 2}, price=PRICE, params={"max_tokens": 50})
    a, b0, b1 = question(0), question(1), question(2)
    for r in (a, b0, b1):
        r.ledger = ledger

    async def main():
        try:
            first = asyncio.ensure_future(subject.run(a))
            await _until(lambda: len(srv.batches) == 1, "the first batch created")
            second = [asyncio.ensure_future(subject.run(r)) for r in (b0, b1)]
            await _until(lambda: ledger.sent == 2 and ledger.settling._waiters, "the second batch waiting")
            if stop == "interrupt":  # what Ctrl+C does (engine/signals.py)
                ledger.stop_waits("interrupted by SIGINT")
                ledger.journal.interrupt("interrupted by SIGINT")
            elif stop == "halt":
                ledger.halt("provider quota exhausted")
            else:
                ledger.stop_waits("a budget ran out")
            if stop != "stop":
                ended = await asyncio.wait_for(asyncio.gather(*second, return_exceptions=True), 10)
            else:
                refused = await asyncio.wait_for(asyncio.gather(second[1], return_exceptions=True), 10)
            srv.release()
            if stop == "stop":
                ended = [await asyncio.wait_for(second[0], 10), *refused]
            await asyncio.wait_for(asyncio.gather(first, return_exceptions=True), 10)
            return ended
        finally:
            await subject.aclose()

    ended = asyncio.run(main())
    assert isinstance(ended[1], BudgetExceeded) and getattr(ended[1], "cut_by_stop", False)
    if stop == "stop":
        assert ended[0].output.text == "ANSWER: 2"
        assert len(srv.submitted) == 2 and ledger.sent == 2
    else:
        assert isinstance(ended[0], BatchNotSent)
        assert len(srv.submitted) == 1 and ledger.sent == 1  # b0's reservation released, never uploaded
        ends = [r for r in log.records if r.get("kind") == "request" and r["state"] == "not-sent"]
        assert len(ends) == 1 and "before its batch was submitted" in ends[0]["error"]
    assert not ledger.batch_open


def test_the_polling_deadline_ends_the_wait(srv):
    """`poll_for_s` passes with the batch waited on still open: this run polls it no longer (its
    attempt waits for --resume, its reservation held), so the request waiting on it is refused
    then, rather than waiting on a batch nothing will read."""
    bound = _bound()
    srv.hold = True
    ledger = Ledger(Budget(max_cost_usd=2.5 * bound), ListLog())
    subject = make("openai", srv, batch={**FAST, "size": 2, "poll_for_s": 0.3}, price=PRICE,
                   params={"max_tokens": 50})
    a, b0, b1 = question(0), question(1), question(2)
    for r in (a, b0, b1):
        r.ledger = ledger

    async def main():
        try:
            first = asyncio.ensure_future(subject.run(a))
            await _until(lambda: len(srv.batches) == 1, "the first batch created")
            second = [asyncio.ensure_future(subject.run(r)) for r in (b0, b1)]
            return await asyncio.wait_for(asyncio.gather(first, *second, return_exceptions=True), 20)
        finally:
            await subject.aclose()

    ended = asyncio.run(main())
    assert [type(e).__name__ for e in ended] == ["BatchPending", "BatchPending", "BudgetExceeded"]
    assert not getattr(ended[2], "cut_by_stop", False) and "cost budget" in str(ended[2])
    assert ledger.sent == 2 and len(ledger.batch_open) == 2  # both held for --resume, never broken


def test_a_request_sent_on_its_own_waits_for_a_polled_batch_too(srv, fake_provider):
    """A request sent on its own (not batched) that the cost budget refuses only because a batch
    this run polls holds its bound waits for that batch to settle, then is sent. Before, it was
    refused at once (`cost budget ... would be exceeded`) with the budget to spare once the batch
    was read, and the run stopped early."""
    bound = _bound()  # one batched request's bound; the same request sent on its own: twice that
    srv.hold = True
    fake_provider.set_default("chat", {"reply": "ANSWER: 2", "usage": {"prompt_tokens": 5, "completion_tokens": 3}})
    ledger = Ledger(Budget(max_cost_usd=2.5 * bound), ListLog())
    batched = make("openai", srv, batch={**FAST, "size": 1}, price=PRICE, params={"max_tokens": 50})
    alone = make("openai", fake_provider, price=PRICE, params={"max_tokens": 50})
    first, second = question(0), question(1)
    first.ledger = second.ledger = ledger

    async def main():
        try:
            held = asyncio.ensure_future(batched.run(first))
            await _until(lambda: len(srv.batches) == 1 and ledger.batch_open, "the batch submitted")
            waiting = asyncio.ensure_future(alone.run(second))
            await _until(lambda: ledger.settling._waiters, "the request waiting")
            assert not waiting.done() and not fake_provider.requests_to("chat")  # nothing sent yet
            srv.release()
            return await asyncio.wait_for(asyncio.gather(held, waiting), 10)
        finally:
            await batched.aclose()
            await alone.aclose()

    done = asyncio.run(main())
    assert [r.output.text for r in done] == ["ANSWER: 1", "ANSWER: 2"]
    assert ledger.sent == 2 and len(fake_provider.requests_to("chat")) == 1
    assert ledger.cost_spent <= 2.5 * bound and not ledger.batch_open
