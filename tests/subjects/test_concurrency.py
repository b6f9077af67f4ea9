"""`--concurrency N` gives N requests in flight for every HTTP subject, unless the subject's
spec sets a lower `max_concurrency`: checked against the loopback server's own count of
requests in flight at once. The server holds each answer until N requests are in flight
(`until_in_flight`), so its peak is what the client delivered, not what the timing allowed;
a client that under-delivers is seen as a lower peak after the hold runs out."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import pytest

from tests.servers.fake_provider import FakeProvider
from tests.subjects import make, req

ROUTE = {"openai": "chat", "anthropic": "messages", "http": "generic"}


def held_until(n: int, **behaviour) -> dict:
    """Answers held until n requests are in flight at once (at most 5 s: a failure stays short)."""
    return {"until_in_flight": n, "hold_s": 5, **behaviour}


def drive(subject, n: int, *, prepare: int | None = None, waves: int = 1) -> list:
    """`waves` rounds of n concurrent run() calls on one loop; the subject is closed after."""

    async def main():
        if prepare is not None:
            subject.prepare(prepare)
        out = []
        try:
            for w in range(waves):
                out += await asyncio.gather(*(subject.run(req(f"What is {i}+1?", case_id=f"c{w}-{i}"))
                                              for i in range(n)))
        finally:
            await subject.aclose()
        return out

    return asyncio.run(main())


@pytest.mark.parametrize("kind,n", [("openai", 200), ("openai", 120), ("anthropic", 200), ("http", 200)])
def test_n_calls_are_n_requests_in_flight(kind, n):
    with FakeProvider() as srv:
        srv.set_default(ROUTE[kind], held_until(n))
        results = drive(make(kind, srv), n)
        assert srv.max_in_flight == n
        assert len(srv.requests_to(ROUTE[kind])) == n
        assert [r.output.text for r in results] == [f"ANSWER: {i + 1}" for i in range(n)]


@pytest.mark.parametrize("kind", ["openai", "anthropic", "http"])
def test_prepared_subject_carries_the_runs_concurrency(kind):
    with FakeProvider() as srv:
        srv.set_default(ROUTE[kind], held_until(150))
        drive(make(kind, srv), 150, prepare=150)
        assert srv.max_in_flight == 150


@pytest.mark.parametrize("kind", ["openai", "anthropic", "http"])
def test_spec_max_concurrency_caps_below_the_run(kind):
    with FakeProvider() as srv:
        # held until 10 are in flight, then 50 ms: a cap that leaks shows as a peak above 10
        srv.set_default(ROUTE[kind], held_until(10, latency_ms=50))
        results = drive(make(kind, srv, max_concurrency=10), 60, prepare=200)
        assert len(results) == 60
        assert srv.max_in_flight == 10


def test_spec_max_concurrency_above_the_run_is_reached_from_the_start():
    # the adaptive limiter starts at the full cap (it only shrinks on a 429)
    with FakeProvider() as srv:
        srv.set_default("chat", held_until(200))
        drive(make("openai", srv, max_concurrency=500), 200, prepare=200)
        assert srv.max_in_flight == 200


def test_a_larger_prepare_after_requests_grows_the_pool():
    with FakeProvider() as srv:
        subject = make("openai", srv)

        async def main():
            try:
                subject.prepare(20)
                await asyncio.gather(*(subject.run(req(case_id=f"a{i}")) for i in range(20)))
                first = srv.max_in_flight
                srv.reset()
                srv.set_default("chat", held_until(80))
                subject.prepare(80)  # the open 20-connection pool is too small now
                await asyncio.gather(*(subject.run(req(case_id=f"b{i}")) for i in range(80)))
                return first
            finally:
                await subject.aclose()

        first = asyncio.run(main())
        assert first <= 20
        assert srv.max_in_flight == 80


def test_connections_are_kept_alive_across_waves():
    with FakeProvider() as srv:
        srv.set_default("chat", held_until(100))
        drive(make("openai", srv), 100, waves=3)
        reqs = srv.requests_to("chat")
        assert len(reqs) == 300 and srv.max_in_flight == 100
        # one connection per request in flight, reused by the later waves
        assert len({tuple(r["peer"]) for r in reqs}) == 100


def test_an_unbounded_limiter_shrinks_only_on_a_429_and_grows_back():
    with FakeProvider() as srv:
        subject = make("openai", srv)
        srv.push("chat", {"status": 429, "retry_after": 0})

        async def main():
            try:
                await subject.run(req())  # a 429, then the retry succeeds
                halved = subject._limiter.cap
                await asyncio.gather(*(subject.run(req(case_id=f"c{i}")) for i in range(30)))
                return halved, subject._limiter.cap
            finally:
                await subject.aclose()

        halved, after = asyncio.run(main())
        assert halved == 1  # one request was in flight when the 429 came
        assert after is None  # back to no cap once it grew past where it was


def test_cli_concurrency_150_gives_150_requests_in_flight(tmp_path):
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps({"id": f"c{i}", "input": f"What is {i}+1?", "expected": str(i + 1),
                                         "grader": "contains"}) + "\n" for i in range(300)),
                     encoding="utf-8")
    with FakeProvider() as srv:
        srv.set_default("chat", held_until(150))
        subject = json.dumps({"type": "openai", "base_url": srv.base_url + "/v1", "model": "fake-model"})
        res = subprocess.run([sys.executable, "-m", "scoreboard", "run", "--cases", str(cases),
                              "--subject", subject, "--concurrency", "150", "--name", "conc",
                              "--output-dir", str(tmp_path / "out"), "--format", "json", "--no-progress"],
                             cwd=tmp_path, env=dict(os.environ),
                             capture_output=True, text=True, timeout=120)
        assert res.returncode == 0, res.stderr
        assert len(srv.requests_to("chat")) == 300
        assert srv.max_in_flight == 150
    (report,) = (tmp_path / "out" / "conc").glob("*.json")
    attempts = json.loads(report.read_text(encoding="utf-8"))["attempts"]
    assert [a["status"] for a in attempts] == ["passed"] * 300
