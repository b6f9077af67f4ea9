"""`batch: true` subjects against the loopback fake of both batch APIs, in process: what goes on
the wire (file upload, create, retrieve, results download), how requests are grouped, polling
backoff, cost at the batch price, the budget reserved at submission, and reconciling a
submission whose create had no recorded answer."""

from __future__ import annotations

import asyncio
import json
import time
from email.parser import BytesParser
from email.policy import HTTP
from pathlib import Path

import pytest

from scoreboard.engine.ledger import Budget, Ledger
from scoreboard.engine.pipeline import RunOptions, run
from scoreboard.errors import BatchPending, ConfigError
from scoreboard.subjects import batch as batch_mod
from scoreboard.subjects.batch_journal import Journal
from scoreboard.suite.load import load_suite
from tests.servers.fake_batches import FakeBatches
from tests.subjects import KEY_ENV, ListLog, make, req

PRICE = {"input_per_mtok": 2.0, "output_per_mtok": 8.0, "batch_discount": 0.5}
FAST = {"size": 10, "wait_s": 0.05, "poll_s": 0.01, "poll_max_s": 0.02}


@pytest.fixture
def srv():
    with FakeBatches() as server:
        yield server


def run_all(subject, requests, ledger=None):
    """Send `requests` at once through one subject; results (or exceptions) in order."""

    async def main():
        try:
            for r in requests:
                r.ledger = ledger
            return await asyncio.gather(*(subject.run(r) for r in requests), return_exceptions=True)
        finally:
            await subject.aclose()

    return asyncio.run(main())


def questions(n: int) -> list:
    return [req(f"What is {i}+1?", case_id=f"c{i}") for i in range(n)]


def test_openai_wire_file_upload_create_poll_and_output_file(srv, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-test-abcdef123456")
    srv.polls_to_end = 2
    subject = make("openai", srv, batch=FAST, price=PRICE, params={"temperature": 0})
    results = run_all(subject, questions(3))
    assert [r.output.text for r in results] == ["ANSWER: 1", "ANSWER: 2", "ANSWER: 3"]
    paths = [(r["method"], r["path"]) for r in srv.requests]
    assert paths[:2] == [("POST", "/v1/files"), ("POST", "/v1/batches")]
    (batch_id,) = srv.batches
    assert paths[2:4] == [("GET", f"/v1/batches/{batch_id}")] * 2  # ended on the second look
    assert set(paths[4:]) == {("GET", f"/v1/files/{batch_id}-output/content"),
                              ("GET", f"/v1/files/{batch_id}-errors/content")}
    assert all(r["headers"]["authorization"] == "Bearer sk-test-abcdef123456" for r in srv.requests)
    # the upload: multipart, purpose "batch", one JSONL line per request
    upload = srv.requests[0]
    form = BytesParser(policy=HTTP).parsebytes(
        b"Content-Type: " + upload["headers"]["content-type"].encode() + b"\r\n\r\n" + upload["body"].encode())
    parts = {p.get_param("name", header="content-disposition"): p.get_payload(decode=True) for p in form.iter_parts()}
    assert parts["purpose"] == b"batch"
    lines = [json.loads(line) for line in parts["file"].decode().splitlines()]
    assert [(x["method"], x["url"]) for x in lines] == [("POST", "/v1/chat/completions")] * 3
    assert len({x["custom_id"] for x in lines}) == 3
    assert lines[0]["body"] == {"model": "fake-model", "temperature": 0,
                                "messages": [{"role": "user", "content": "What is 0+1?"}]}
    create = srv.requests[1]["json"]
    assert create["input_file_id"] in srv.files and create["completion_window"] == "24h"
    assert create["endpoint"] == "/v1/chat/completions" and create["metadata"]["scoreboard_submission"]
    # each answer matched back by its custom id, and said where it came from
    for r, line in zip(results, lines):
        assert r.extra["batch"] == {"provider": "openai", "id": batch_id, "custom_id": line["custom_id"]}
        assert r.measurements.latency_ms is None  # a batch's wait is not the model's latency


def test_anthropic_wire_message_batches_and_results(srv, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-ant-test-123456")
    subject = make("anthropic", srv, batch=FAST, price=PRICE, max_tokens=64)
    results = run_all(subject, questions(2))
    assert [r.output.text for r in results] == ["ANSWER: 1", "ANSWER: 2"]
    (batch_id,) = srv.batches
    paths = [(r["method"], r["path"]) for r in srv.requests]
    assert paths == [("POST", "/v1/messages/batches"), ("GET", f"/v1/messages/batches/{batch_id}"),
                     ("GET", f"/v1/messages/batches/{batch_id}/results")]
    assert all(r["headers"]["x-api-key"] == "sk-ant-test-123456" for r in srv.requests)
    create = srv.requests[0]["json"]
    assert [r["params"] for r in create["requests"]] == [
        {"model": "fake-model", "max_tokens": 64, "messages": [{"role": "user", "content": f"What is {i}+1?"}]}
        for i in range(2)]
    assert len({r["custom_id"] for r in create["requests"]}) == 2


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_requests_grouped_by_size_then_by_wait(srv, kind):
    subject = make(kind, srv, batch={**FAST, "size": 3})
    results = run_all(subject, questions(7))
    assert [r.output.text for r in results] == [f"ANSWER: {i + 1}" for i in range(7)]
    assert sorted(len(b["requests"]) for b in srv.batches.values()) == [1, 3, 3]


def test_polling_backs_off_to_its_ceiling(srv, monkeypatch):
    srv.polls_to_end = 6
    waits = []
    real = batch_mod.Batcher._sleep

    async def record(self, sub, wait):
        waits.append(wait)
        await real(self, sub, 0)

    monkeypatch.setattr(batch_mod.Batcher, "_sleep", record)
    monkeypatch.setattr(batch_mod.random, "uniform", lambda a, b: 1.0)
    subject = make("openai", srv, batch={**FAST, "poll_s": 1.0, "poll_max_s": 6.0})
    (result,) = run_all(subject, questions(1))
    assert result.output.text == "ANSWER: 1"
    assert waits == [1.0, 2.0, 4.0, 6.0, 6.0]  # doubled each time, never past poll_max_s


@pytest.mark.parametrize(("price", "expect"), [
    (PRICE, lambda i, o: (i * 1.0 + o * 4.0) / 1e6),                           # half of both rates
    ({"input_per_mtok": 2.0, "output_per_mtok": 8.0}, lambda i, o: None),     # no batch price: unknown
    (None, lambda i, o: None)])
def test_cost_at_the_batch_price_or_unknown(srv, price, expect):
    subject = make("openai", srv, batch=FAST, **({"price": price} if price else {}))
    (result,) = run_all(subject, questions(1))
    m = result.measurements
    assert m.input_tokens and m.output_tokens and m.requests == 1
    want = expect(m.input_tokens, m.output_tokens)
    assert m.cost_usd == (pytest.approx(want) if want is not None else None)


def test_batch_option_is_checked():
    with pytest.raises(ConfigError, match="batch.size"):
        make("openai", None, batch={"size": 0})
    with pytest.raises(ConfigError, match="'batch' is true or"):
        make("anthropic", None, batch={"sise": 5})
    with pytest.raises(ConfigError, match="does not stream"):
        make("openai", None, batch=True, stream=True)
    with pytest.raises(ConfigError, match="batch_discount"):
        make("openai", None, batch=True, price={**PRICE, "batch_discount": 1.5})


def test_every_request_reserved_in_the_ledger_before_upload(srv):
    log = ListLog()
    ledger = Ledger(Budget(max_requests=4), log)
    subject = make("openai", srv, batch=FAST)
    results = run_all(subject, questions(6), ledger)
    sent = [r for r in results if not isinstance(r, BaseException)]
    refused = [r for r in results if isinstance(r, BaseException)]
    assert len(sent) == 4 and len(refused) == 2 and all("budget" in str(e) for e in refused)
    assert len(srv.submitted) == 4 and ledger.sent == 4 and ledger.completed == 4
    kinds = [(r.get("kind"), r.get("state") or r.get("event")) for r in log.records]
    # the budget running out is logged (a resume keeps the run stopped), whenever the refusal came
    assert sum(1 for kind, _ in kinds if kind == "stop") == 1
    kinds = [k for k in kinds if k[0] != "stop"]
    # four reservations, then the submission journaled, all before its batch came back
    assert kinds[:5] == [("request", "pending")] * 4 + [("batch", "submitting")]
    assert ("batch", "submitted") in kinds and ("batch", "ended") in kinds


def suite_flags(tmp: Path, srv: FakeBatches, n: int, batch: dict, **extra) -> dict:
    rows = [{"id": f"c{i}", "input": f"What is {i}+1?", "expected": f"ANSWER: {i + 1}", "graders": ["contains"]}
            for i in range(n)]
    (tmp / "cases.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    subject = {"type": "openai", "base_url": srv.base_url + "/v1", "model": "m", "batch": batch, "price": PRICE,
               "params": {"max_tokens": 50}}
    return {"cases": [str(tmp / "cases.jsonl")], "subject": subject, "output_dir": str(tmp / "out"),
            "formats": ["json"], **extra}


@pytest.mark.parametrize(("budget", "fits"), [({"max_requests": 5}, 5), ({"max_cost_usd": 0.0021}, None)])
def test_a_budget_is_never_exceeded_by_a_batch(tmp_path, srv, budget, fits):
    outcome = run(load_suite(None, suite_flags(tmp_path, srv, 9, {**FAST, "size": 100}, **budget)),
                  RunOptions(progress=False))
    report = outcome.report
    submitted = len(srv.submitted)
    assert report["requests"]["sent"] == submitted < 9
    if fits is not None:
        assert submitted == fits
    else:  # each request is reserved at its bound (prompt + max output at the batch price)
        assert report["requests"]["cost_spent_usd"] <= 0.0021
    statuses = [a["status"] for a in report["attempts"]]
    assert statuses.count("passed") == submitted and statuses.count("not-run") == 9 - submitted
    assert report["run"]["status"] == "stopped" and "budget" in report["run"]["stop_reason"]


def resume_journal(kind: str, srv: FakeBatches, began: float, n: int = 2):
    """A journal as a resumed run rebuilds it: one submission whose create had no recorded answer."""
    journal = Journal(key="sbtest")
    sub = "sbtest-1"
    subject = make(kind, srv, batch={**FAST, "poll_for_s": 0.5, "settle_s": 60})
    reqs = questions(n)
    rows = []
    for i, r in enumerate(reqs):
        body, _, _ = subject.build(r)
        body.pop("stream", None)
        body.pop("stream_options", None)
        rows.append([f"{sub}-{i}", list(r.attempt), "subject", batch_mod.sha256_json(body)])
    journal.restore([{"kind": "batch", "event": "submitting", "submission": sub, "provider": kind,
                      "subject": "x", "requests": rows, "t": began}])
    return subject, journal, reqs, rows


class JournalLedger:
    """What the batcher reads of a ledger: its journal (no budget here)."""

    def __init__(self, journal):
        self.journal = journal

    async def acquire(self, attempt, **kw):
        return None

    def batch_ticket(self, custom_id):
        return None


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_recent_unresolved_submission_waits_then_is_sent_once(srv, kind):
    subject, journal, reqs, _ = resume_journal(kind, srv, began=time.time())
    results = run_all(subject, reqs, JournalLedger(journal))
    # no batch found, but the create might still land (it began under settle_s ago): wait, send nothing
    assert all(isinstance(r, BatchPending) for r in results) and not srv.batches
    subject, journal, reqs, _ = resume_journal(kind, srv, began=time.time() - 120)
    results = run_all(subject, reqs, JournalLedger(journal))
    assert [r.output.text for r in results] == ["ANSWER: 1", "ANSWER: 2"]
    assert len(srv.batches) == 1 and sorted(srv.prompts()) == ["What is 0+1?", "What is 1+1?"]
    assert journal.submissions["sbtest-1"]["status"] == "not-created"


def test_anthropic_reconcile_waits_for_a_candidate_then_knows_it_by_custom_ids(srv):
    srv.hold = True
    subject, journal, reqs, rows = resume_journal("anthropic", srv, began=time.time() - 120)
    # someone else's batch of the same size, and ours, both made after the submission began
    theirs = srv._make("anthropic", [("other-0", {"messages": [{"role": "user", "content": "x"}]}),
                                     ("other-1", {"messages": [{"role": "user", "content": "y"}]})], {})
    ours = srv._make("anthropic", [(cid, {"messages": [{"role": "user", "content": f"What is {i}+1?"}]})
                                   for i, (cid, *_) in enumerate(rows)], {})
    results = run_all(subject, reqs, JournalLedger(journal))
    assert all(isinstance(r, BatchPending) for r in results)  # candidates still running: cannot tell
    srv.release()
    subject, journal, reqs, _ = resume_journal("anthropic", srv, began=time.time() - 120)
    results = run_all(subject, reqs, JournalLedger(journal))
    assert [r.output.text for r in results] == ["ANSWER: 1", "ANSWER: 2"]
    assert journal.submissions["sbtest-1"]["batch_id"] == ours["id"] != theirs["id"]
    assert len(srv.batches) == 2  # nothing sent again


def test_the_suite_price_table_carries_the_batch_discount(tmp_path, srv):
    flags = suite_flags(tmp_path, srv, 2, FAST)
    subject = {k: v for k, v in flags["subject"].items() if k != "price"}
    suite = {"name": "prices", "cases": "cases.jsonl", "subject": subject, "formats": ["json"],
             "output_dir": str(tmp_path / "out"), "prices": {"m": PRICE}}
    (tmp_path / "suite.json").write_text(json.dumps(suite))
    outcome = run(load_suite(tmp_path / "suite.json"), RunOptions(progress=False))
    for a in outcome.report["attempts"]:
        m = a["measurements"]
        assert m["cost_usd"] == pytest.approx((m["input_tokens"] * 1.0 + m["output_tokens"] * 4.0) / 1e6)


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_results_that_cannot_be_read_are_read_again_then_wait(srv, kind):
    srv.fail_results = 2  # two downloads fail: the next poll reads them
    subject = make(kind, srv, batch=FAST)
    results = run_all(subject, questions(2))
    assert [r.output.text for r in results] == ["ANSWER: 1", "ANSWER: 2"]
    assert len(srv.batches) == 1
    srv.fail_results = 10_000  # the results never come: the attempts wait, nothing is called an error
    subject = make(kind, srv, batch=FAST)
    results = run_all(subject, questions(2))
    assert all(isinstance(r, BatchPending) for r in results), results
    assert len(srv.batches) == 2


def test_a_submission_killed_before_it_was_recorded_is_never_sent_nor_its_name_taken_again(srv):
    """kill -9 after a submission's requests were reserved in the ledger, before its
    "submitting" record: nothing was uploaded. A resumed run counts none of them as sent, and
    gives its next submission a new number; before, it took the killed one's number again, so
    the same custom ids were reserved twice: the orphan reservations then matched a live
    submission and stayed open as sent forever (report: 101 sent, 96 at the provider), and a
    custom id could reach the provider in two batches (found by the batched kill -9 test)."""
    # what the killed run left: two reservations for submission sbkill-1, nothing else
    orphans = [{"kind": "request", "id": i + 1, "state": "pending", "attempt": [f"c{i}", "v", 0], "role": "subject",
                "subject": "openai:m", "bound_tokens": 100, "bound_cost": 0.001,
                "batch": {"custom_id": f"sbkill-1-{i}", "submission": "sbkill-1"}} for i in range(2)]
    resumed = Ledger(Budget(max_requests=2), ListLog())
    resumed.journal.key = "sbkill"
    resumed.restore(orphans)
    assert resumed.sent == 0 and not resumed.batch_open and not resumed.possibly_billed
    submission, ids = resumed.journal.allocate(2)
    assert submission == "sbkill-2" and not set(ids) & {"sbkill-1-0", "sbkill-1-1"}
    # and the resumed run sends both within its budget of 2, each once
    subject = make("openai", srv, batch=FAST)
    results = run_all(subject, questions(2), resumed)
    assert [r.output.text for r in results] == ["ANSWER: 1", "ANSWER: 2"]
    custom_ids = [s["custom_id"] for s in srv.submitted]
    assert len(custom_ids) == len(set(custom_ids)) == 2 and resumed.sent == 2
    assert not any(cid.startswith("sbkill-1-") for cid in custom_ids)
