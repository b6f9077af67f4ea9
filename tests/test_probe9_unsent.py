"""Requests that never left are not "possibly billed".

A try whose connection was refused (nothing listening: no byte of the request was written) was
counted as a sent request with unknown usage: "9 requests sent: 0 answered, 9 failed", each
charged at its bound, so a run with `--max-cost` stopped for budget over money that cannot have
been spent. Such a try is now recorded apart (state "not-sent", `never_sent`: why): no usage, no
budget, and every rendering says "9 tries, 0 sent, 9 never sent (connection refused)". A request
cut after it was written (a server that closes at once, or that reads it and never answers)
stays possibly billed."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import threading
from pathlib import Path

import pytest

from scoreboard.engine.ledger import Budget, Ledger
from tests.cli_inprocess import run_cli
from tests.subjects import ListLog

ROOT = Path(__file__).resolve().parent.parent
PRICE = {"input_per_mtok": 1000, "output_per_mtok": 1000}  # $0.123 bound per request
RETRIES = {"attempts": 3, "base_delay_s": 0.001, "max_delay_s": 0.001}


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "SCOREBOARD_STORE": "none"}
    return run_cli(args, cwd, env)


def closed_port() -> int:
    """A loopback port with nothing listening (bound, then closed)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class RawServer:
    """A loopback TCP server: `close` accepts and closes at once without reading; `hang` reads the
    request and never answers."""

    def __init__(self, mode: str):
        self.mode, self.conns, self.requests = mode, [], 0
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            if self.mode == "close":  # a FIN: the client's connect has succeeded, it writes, then reads nothing
                conn.close()
                continue
            self.conns.append(conn)
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    break
                data += chunk
            self.requests += 1

    def close(self) -> None:
        self.sock.close()
        for c in self.conns:
            c.close()


def run_suite(tmp_path: Path, port: int, *flags: str, n: int = 3, retries=RETRIES):
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "input": f"q{i}", "expected": f"q{i}"})
                                                  + "\n" for i in range(n)))
    subject = {"type": "openai", "base_url": f"http://127.0.0.1:{port}/v1", "model": "m",
               "params": {"max_tokens": 50}, "price": PRICE, "retries": retries}
    (tmp_path / "suite.json").write_text(json.dumps({"name": "unsent", "cases": "cases.jsonl", "subject": subject,
                                                     "concurrency": 1, "formats": ["json", "md", "html"]}))
    proc = cli(tmp_path, "run", "suite.json", "--no-progress", *flags)
    [report] = (tmp_path / "eval-results" / "unsent").glob("*.json")
    return proc, report, json.loads(report.read_text())


def log_records(report: Path) -> list[dict]:
    log = report.with_suffix("") / "attempts.jsonl"
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_a_refused_connection_is_a_try_never_sent_and_spends_no_budget(tmp_path):
    proc, path, report = run_suite(tmp_path, closed_port(), "--max-cost", "0.5")
    req = report["requests"]
    # it was: "budget: cost budget of $0.5 would be exceeded" after 4 "requests sent" at $0.123 each
    assert report["run"]["status"] == "completed", proc.stdout + proc.stderr
    assert "stopped" not in proc.stdout
    assert (req["sent"], req["tries"], req["never_sent"]) == (0, 9, 9)
    assert req["never_sent_reasons"] == {"connection refused": 9}
    assert (req["failed"], req["unknown_usage"], req["tokens_spent"], req["cost_spent_usd"]) == (0, 0, 0, 0.0)
    assert req["exhausted"] is None and req["possibly_billed"] == []
    line = "9 tries, 0 sent, 9 never sent (connection refused)"
    assert line in proc.stdout
    assert line in path.with_suffix(".md").read_text()
    assert line in path.with_suffix(".html").read_text()
    for a in report["attempts"]:  # nothing left, so nothing spent: known 0, not unknown
        m = a["measurements"]
        assert (m["requests"], m["input_tokens"], m["output_tokens"], m["cost_usd"]) == (0, 0, 0, 0.0)
        assert "(after 3 tries, 3 never sent)" in a["error"]
    ends = [r for r in log_records(path) if r.get("kind") == "request" and r["state"] != "pending"]
    assert len(ends) == 9 and {(r["state"], r["never_sent"]) for r in ends} == {("not-sent", "connection refused")}
    assert "usage" not in json.dumps(ends)
    ok = cli(tmp_path, "verify", str(path))
    assert ok.returncode == 0, ok.stdout + ok.stderr


def test_a_request_budget_is_not_spent_by_tries_that_never_left(tmp_path):
    proc, _, report = run_suite(tmp_path, closed_port(), "--max-requests", "1")
    assert report["run"]["status"] == "completed", proc.stdout + proc.stderr
    assert [a["status"] for a in report["attempts"]] == ["error"] * 3  # none "not-run" for a budget
    assert report["requests"]["never_sent"] == 9 and report["requests"]["sent"] == 0


@pytest.mark.parametrize("mode", ["close", "hang"])
def test_a_request_cut_after_it_was_written_stays_possibly_billed(tmp_path, mode):
    srv = RawServer(mode)
    try:
        flags = ("--timeout", "1500") if mode == "hang" else ()
        proc, path, report = run_suite(tmp_path, srv.port, *flags, n=1, retries={"attempts": 1})
    finally:
        srv.close()
    req = report["requests"]
    assert req["sent"] == 1 and "never_sent" not in req and "tries" not in req, proc.stdout + proc.stderr
    assert req["unknown_usage"] == 1 and req["cost_spent_usd"] == pytest.approx(0.123)  # its bound: unknown, not 0
    [attempt] = report["attempts"]
    assert attempt["measurements"]["cost_usd"] is None and attempt["measurements"]["requests"] in (1, None)
    ends = [r for r in log_records(path) if r.get("kind") == "request" and r["state"] != "pending"]
    assert [r["state"] for r in ends] == ["failed"] and "never_sent" not in ends[0]


def test_resume_keeps_the_never_sent_count_and_older_logs_load_as_before():
    log = ListLog()
    ledger = Ledger(Budget(max_requests=1), log)
    t1 = ledger.reserve(("c0", "v", 0), max_tokens=10)
    ledger.complete(t1, ok=False, error="refused", never_sent="connection refused")
    t2 = ledger.reserve(("c0", "v", 0), max_tokens=10)  # the budget of 1 was given back
    ledger.complete(t2, ok=True, input_tokens=3, output_tokens=4, cost_usd=0.01)
    before = ledger.summary()
    assert (before["sent"], before["tries"], before["never_sent"]) == (1, 2, 1)
    assert before["by_role"] == {"subject": 1} and ledger.by_attempt == {("c0", "v", 0): 1}
    again = Ledger(Budget(max_requests=5))
    again.restore(log.records)
    assert again.summary() == {**before, "budget": again.budget.to_dict()}
    # an older log: a batched request's not-sent end has no `never_sent`: not a try, as before
    old = [{"kind": "request", "id": 1, "state": "pending", "attempt": ["c", "v", 0], "role": "subject"},
           {"kind": "request", "id": 1, "state": "not-sent", "attempt": ["c", "v", 0], "error": "no batch"}]
    legacy = Ledger(Budget())
    legacy.restore(old)
    s = legacy.summary()
    assert s["sent"] == 0 and "never_sent" not in s and "tries" not in s


def test_verify_refuses_usage_claimed_for_tries_that_never_left(tmp_path):
    _, path, report = run_suite(tmp_path, closed_port(), n=1, retries={"attempts": 2})
    for key, value, field in (("tokens_spent", 123, "requests.tokens_spent"),
                              ("unknown_usage", 2, "requests.unknown_usage"),
                              ("tries", 5, "requests.tries"),
                              ("never_sent_reasons", {"connection refused": 1}, "requests.never_sent_reasons")):
        bad = json.loads(json.dumps(report))
        bad["requests"][key] = value
        target = tmp_path / f"bad-{key}.json"
        target.write_text(json.dumps(bad))
        out = cli(tmp_path, "verify", str(target), "--json")
        assert out.returncode != 0
        assert field in [m["path"] for m in json.loads(out.stdout)["mismatches"]], (key, out.stdout)


def test_an_attempt_timing_out_while_still_connecting_sent_nothing(tmp_path):
    """A listener whose accept queue is full drops the SYN: the connect hangs until the attempt's
    timeout cancels it, before a byte of the request was written (it read "possibly billed")."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(0)
    fill = []
    for _ in range(4):  # never accepted: the queue stays full
        c = socket.socket()
        c.setblocking(False)
        c.connect_ex(srv.getsockname())
        fill.append(c)
    try:
        proc, path, report = run_suite(tmp_path, srv.getsockname()[1], "--timeout", "800", "--max-requests", "2",
                                       n=2, retries={"attempts": 1})
    finally:
        for c in (*fill, srv):
            c.close()
    req = report["requests"]
    assert [a["error"] for a in report["attempts"]] == [
        "timeout after 800 ms (connecting to the server, no request sent yet)"] * 2, proc.stdout + proc.stderr
    assert (req["sent"], req["never_sent"], req["possibly_billed"]) == (0, 2, [])
    assert req["never_sent_reasons"] == {"cancelled before sending": 2} and req["cost_spent_usd"] == 0.0
    assert "2 tries, 0 sent, 2 never sent (cancelled before sending)" in proc.stdout


def test_a_judge_whose_requests_never_left_spent_a_known_zero(tmp_path):
    """Each grade's judge usage read "1 request, cost unknown" though no try reached the judge."""
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "input": f"q{i}"}) + "\n"
                                                  for i in range(2)))
    judge = {"type": "openai", "base_url": f"http://127.0.0.1:{closed_port()}/v1", "model": "j",
             "params": {"max_tokens": 50}, "price": {"input_per_mtok": 100, "output_per_mtok": 100},
             "retries": {"attempts": 2, "base_delay_s": 0.001}}
    (tmp_path / "suite.json").write_text(json.dumps({
        "name": "unsent", "cases": "cases.jsonl", "formats": ["json"], "judge": judge, "concurrency": 1,
        "subject": {"type": "mock", "outputs": {"c0": "a", "c1": "b"}},
        "graders": [{"llm-judge": {"prompt": "Is {{ output }} right?"}}]}))
    proc = cli(tmp_path, "run", "suite.json", "--no-progress", "--max-cost", "0.2")  # a judge call's bound: ~$0.06
    [path] = (tmp_path / "eval-results" / "unsent").glob("*.json")
    report = json.loads(path.read_text())
    assert report["run"]["status"] == "completed", proc.stdout + proc.stderr
    assert report["requests"]["never_sent"] == 4 and report["requests"]["sent"] == 0
    for a in report["attempts"]:
        [grade] = a["grades"]
        assert grade["judge_failure"] is True
        assert grade["judge"]["usage"] == {"requests": 0, "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0}
    usage = report["summary"]["judges"]["variants"]["mock"]["usage"]
    assert usage["cost_usd"]["unknown_count"] == 0 and usage["cost_usd"]["total"] == 0.0


def test_a_resumed_run_keeps_the_tries_that_never_left(tmp_path, fake_provider):
    """The first part: variant `gone` is refused (never sent), variant `live` gets a 402 that stops
    the run; the resumed part finishes. The report still counts the refused tries of the first."""
    fake_provider.push("chat", 402)
    fake_provider.set_default("chat", {"reply": "q"})
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "input": "q", "expected": "q"}) + "\n"
                                                  for i in range(3)))
    common = {"type": "openai", "model": "m", "params": {"max_tokens": 50}, "price": PRICE,
              "retries": {"attempts": 2, "base_delay_s": 0.001}}
    suite = {"name": "unsent", "cases": "cases.jsonl", "concurrency": 1, "formats": ["json", "md"],
             "variants": {"gone": {"subject": {**common, "base_url": f"http://127.0.0.1:{closed_port()}/v1"}},
                          "live": {"subject": {**common, "base_url": fake_provider.base_url + "/v1"}}}}
    (tmp_path / "suite.json").write_text(json.dumps(suite))
    first = cli(tmp_path, "run", "suite.json", "--no-progress")
    [path] = (tmp_path / "eval-results" / "unsent").glob("*.json")
    report = json.loads(path.read_text())
    assert report["run"]["status"] == "stopped", first.stdout + first.stderr
    before = report["requests"]
    assert before["sent"] == 1 and before["never_sent"] >= 2 and before["tries"] == 1 + before["never_sent"]
    second = cli(tmp_path, "run", "--resume", str(path.with_suffix("")), "--no-progress")
    report = json.loads(path.read_text())
    req = report["requests"]
    assert report["run"]["status"] == "completed", second.stdout + second.stderr
    assert req["never_sent"] == 6 and req["never_sent_reasons"] == {"connection refused": 6}  # 3 cases x 2 tries
    assert req["sent"] == 1 + req["completed"] and req["completed"] >= 2 and req["tries"] == req["sent"] + 6
    line = f"{req['tries']} tries, {req['sent']} sent, 6 never sent (connection refused): {req['completed']} answered"
    assert line in path.with_suffix(".md").read_text()
    ok = cli(tmp_path, "verify", str(path))
    assert ok.returncode == 0, ok.stdout + ok.stderr


def test_the_ray_ledger_service_counts_a_never_sent_try_as_no_request_of_its_attempt(tmp_path):
    """A lost worker's attempt that sent nothing is run again (requests_of == 0): a try that never
    left is not one of its requests, and the service's ledger counts it apart."""
    from scoreboard.engine.ray_ledger import LedgerService

    service = LedgerService(Budget(max_requests=1).to_dict(), str(tmp_path / "attempts.jsonl"), Ledger().snapshot())
    first = service.reserve(["c0", "v", 0], {"max_tokens": 10}, "n1")
    service.complete(first["id"], {"ok": False, "error": "refused", "never_sent": "connection refused", "nonce": "n1"})
    assert service.requests_of(["c0", "v", 0]) == 0
    second = service.reserve(["c0", "v", 0], {"max_tokens": 10}, "n2")  # the request budget was given back
    assert "id" in second
    service.complete(second["id"], {"ok": True, "input_tokens": 1, "output_tokens": 1, "nonce": "n2"})
    assert service.requests_of(["c0", "v", 0]) == 1
    state = service.state()
    service.close()
    assert (state["sent"], state["unsent"], state["unsent_reasons"]) == (1, 1, {"connection refused": 1})


def test_the_probe_rides_the_connector_not_aiohttp_tracing():
    # A trace config makes aiohttp build and await a signal for every stage of every request
    # (25-40 us of CPU a request, measured against the kit's mock); the connector marks the
    # try's probe instead, and only once it has a connection.
    import asyncio

    from scoreboard.subjects._pool import Pool
    from scoreboard.subjects._unsent import ProbingConnector, SentProbe, probing

    async def check():
        server = await asyncio.start_server(lambda r, w: w.close(), "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        pool = Pool(8)
        session = pool.session(asyncio.get_running_loop(), dict)
        assert isinstance(session.connector, ProbingConnector)
        assert not session.trace_configs
        refused = socket.socket()
        refused.bind(("127.0.0.1", 0))
        dead = refused.getsockname()[1]
        refused.close()
        outcomes = {}
        for name, url in (("refused", f"http://127.0.0.1:{dead}/"), ("accepted", f"http://127.0.0.1:{port}/")):
            probe = SentProbe()
            probing(probe)
            try:
                async with session.post(url, data=b"{}") as resp:
                    await resp.read()
            except Exception:
                pass
            outcomes[name] = probe.sent
        await pool.aclose()
        server.close()
        return outcomes

    assert asyncio.run(check()) == {"refused": False, "accepted": True}
