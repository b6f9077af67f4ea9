"""Hostile servers, part 2: raw loopback servers that answer what no provider should, driven
through the CLI (real suites, real reports) and, where a wait would be long, in process.

Each run must end on its own (no timeout of the harness hides a hang), record every failure as
an error of its own attempt, keep the other attempts, print no traceback, leave usage it could
not read unknown (null, never 0), and write a report that `scoreboard verify` accepts."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Self

import pytest

from scoreboard.errors import BatchPending
from scoreboard.subjects import batch_results
from tests.subjects import make, req

ROOT = Path(__file__).resolve().parent.parent
RETRIES = {"attempts": 2, "base_delay_s": 0.01, "max_delay_s": 0.02}
HANG_GUARD_S = 240  # a generous bound on a whole CLI run: reaching it means the run hung


# --------------------------------------------------------------------------- a raw server


class RawServer:
    """An HTTP/1.1 server on 127.0.0.1 (its own loop, in a thread) that hands each request to
    `handler(path, body, writer)`, which writes whatever bytes it likes."""

    def __init__(self, handler):
        self.handler = handler
        self.loop = asyncio.new_event_loop()
        self.port = 0
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._main, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> Self:
        self._thread.start()
        assert self._ready.wait(10)
        return self

    def __exit__(self, *exc) -> None:
        self.loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_until_complete(self._serve())

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        server = await asyncio.start_server(self._client, "127.0.0.1", 0)
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        async with server:
            await self._stop.wait()
            server.close()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _client(self, reader, writer) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = re.search(rb"(?i)\r\ncontent-length: *(\d+)", head)
                body = await reader.readexactly(int(length.group(1))) if length else b""
                await self.handler(head.split(b" ")[1].decode(), body, writer)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()


def answer(body: bytes, status: str = "200 OK", headers: tuple = ()) -> bytes:
    lines = [f"HTTP/1.1 {status}", f"Content-Length: {len(body)}", "Content-Type: application/json", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def case_of(body: bytes) -> int:
    """Which case a request is for (its input is "q<n>")."""
    return int(re.search(rb'"q(\d+)"', body).group(1))


# --------------------------------------------------------------------------- running a suite


def run_suite(tmp_path: Path, subject: dict, n: int, **settings) -> tuple[subprocess.CompletedProcess, dict]:
    """`scoreboard run` on n cases (inputs q0..q<n-1>, expected "hi"); (the process, its report).
    The report must verify."""
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "input": f"q{i}", "expected": "hi"})
                                                  + "\n" for i in range(n)))
    suite = {"name": "hostile", "cases": "cases.jsonl", "output_dir": "out", "formats": ["json", "md", "html"],
             "timeout_ms": 60_000, "subject": {"retries": RETRIES, **subject}, **settings}
    (tmp_path / "suite.json").write_text(json.dumps(suite))
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.run([sys.executable, "-m", "scoreboard", "run", "suite.json", "--no-progress"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=HANG_GUARD_S, check=False)
    for text in (proc.stdout, proc.stderr):
        assert "Traceback" not in text and "internal error" not in text, text
    [path] = (tmp_path / "out" / "hostile").glob("*.json")
    checked = subprocess.run([sys.executable, "-m", "scoreboard", "verify", str(path)], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=HANG_GUARD_S, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    return proc, json.loads(path.read_text())


def by_case(report: dict) -> dict:
    return {a["case_id"]: a for a in report["attempts"]}


def chat(text="hi", finish="stop", model="m", usage=None) -> dict:
    body = {"model": model, "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                         "finish_reason": finish}]}
    if usage is not None:
        body["usage"] = usage
    return body


# --------------------------------------------------------------------------- streams


def sse_events(*events: bytes, hold: bool) -> bytes:
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(e), e) for e in events)
    return head + chunks + (b"" if hold else b"0\r\n\r\n")


OPENAI_STREAM = [b'data: {"model":"m","choices":[{"index":0,"delta":{"content":"h"}}]}\n\n',
                 b'data: {"model":"m","choices":[{"index":0,"delta":{"content":"i"},"finish_reason":"stop"}]}\n\n',
                 b'data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}}\n\n',
                 b"data: [DONE]\n\n"]
ANTHROPIC_STREAM = [
    b"event: %s\ndata: %s\n\n" % (event["type"].encode(), json.dumps(event).encode()) for event in (
        {"type": "message_start", "message": {"model": "m", "usage": {"input_tokens": 3}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hi"}},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}},
        {"type": "message_stop"})]


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_stream_held_open_after_its_last_event_is_answered(tmp_path, kind):
    """The server sends the whole stream, then neither closes it nor ends the chunked body: the
    answer is read up to its last event ([DONE], message_stop), not lost to the timeout."""
    events = OPENAI_STREAM if kind == "openai" else ANTHROPIC_STREAM

    async def handler(path, body, writer):
        writer.write(sse_events(*events, hold=True))
        await writer.drain()
        await asyncio.sleep(3600)  # held open

    with RawServer(handler) as srv:
        base = srv.url + ("/v1" if kind == "openai" else "")
        proc, report = run_suite(tmp_path, {"type": kind, "base_url": base, "model": "m", "stream": True}, 2)
    assert proc.returncode == 0, proc.stderr
    for attempt in report["attempts"]:
        assert attempt["status"] == "passed" and attempt["output"]["text"] == "hi"
        assert (attempt["measurements"]["input_tokens"], attempt["measurements"]["output_tokens"]) == (3, 2)


# --------------------------------------------------------------------------- values no report can hold

#: case -> (the answer's raw JSON body, what the attempt must record)
ODD_BODIES = {
    # lone surrogates (JSON escapes) in the text, the model and the finish reason; a pair split
    # across two escapes is one character
    0: ((b'{"model":"\\udc00","choices":[{"message":{"content":"h\\ud800i \\ud83d\\ude00"},'
         b'"finish_reason":"\\ud800"}],"usage":{"prompt_tokens":3,"completion_tokens":2}}'),
        {"text": "h\ufffdi \U0001f600", "status": "\ufffd", "tokens": (3, 2)}),
    # counts no count can be: past 2**53, a float, NaN, infinite, negative, a string, a bool
    1: (b'{"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1'
        + b"0" * 40 + b',"completion_tokens":1e300}}',
        {"text": "hi", "status": "stop", "tokens": (None, None)}),
    2: ((b'{"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}],'
         b'"usage":{"prompt_tokens":NaN,"completion_tokens":1e999}}'),
        {"text": "hi", "status": "stop", "tokens": (None, None)}),
    3: ((b'{"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}],'
         b'"usage":{"prompt_tokens":-3,"completion_tokens":"7"}}'),
        {"text": "hi", "status": "stop", "tokens": (None, None)}),
    # a finish reason and a model that are not text: unknown, the answer kept
    4: ((b'{"model":[1],"choices":[{"message":{"content":"hi"},"finish_reason":{"a":1}}],'
         b'"usage":{"prompt_tokens":true,"completion_tokens":2}}'),
        {"text": "hi", "status": None, "tokens": (None, 2)}),
    # text that is not text: an error of this attempt, said as the subject's
    5: (b'{"choices":[{"message":{"content":5},"finish_reason":"stop"}]}',
        {"error": "openai: unexpected response shape (TypeError: the answer's text is int, not a string)"}),
}


def test_values_no_report_can_hold_are_replaced_or_unknown(tmp_path):
    async def handler(path, body, writer):
        writer.write(answer(ODD_BODIES[case_of(body)][0]))

    with RawServer(handler) as srv:
        subject = {"type": "openai", "base_url": srv.url + "/v1", "model": "m"}
        proc, report = run_suite(tmp_path, subject, len(ODD_BODIES), cache=True)
    assert proc.returncode == 2, proc.stderr  # one attempt is an error
    assert "warning" not in proc.stderr  # the history store and the cache took every answer
    attempts = by_case(report)
    for i, (_, want) in ODD_BODIES.items():
        attempt = attempts[f"c{i}"]
        if "error" in want:
            assert attempt["status"] == "error" and attempt["error"] == want["error"]
            continue
        assert attempt["status"] in ("passed", "failed"), attempt.get("error")
        assert attempt["output"]["text"] == want["text"] and attempt["output"]["status"] == want["status"]
        measured = attempt["measurements"]
        assert (measured["input_tokens"], measured["output_tokens"]) == want["tokens"]


def test_http_subject_counts_and_costs_past_any_number(tmp_path):
    bodies = {0: b'{"out":"hi","in":1e300,"tok":1' + b"0" * 30 + b',"cost":NaN}',
              1: b'{"out":"hi","in":3,"tok":2,"cost":1e999}',
              2: b'{"out":"hi","in":3,"tok":2,"cost":1' + b"0" * 400 + b"}",
              3: b'{"out":"hi","in":1e999,"tok":2,"cost":0.5}'}

    async def handler(path, body, writer):
        writer.write(answer(bodies[case_of(body)]))

    with RawServer(handler) as srv:
        subject = {"type": "http", "url": srv.url + "/gen", "body": {"q": "{{input}}"}, "output_path": "out",
                   "input_tokens_path": "in", "output_tokens_path": "tok", "cost_path": "cost"}
        _, report = run_suite(tmp_path, subject, len(bodies))
    attempts = by_case(report)
    for i in range(3):
        measured = attempts[f"c{i}"]["measurements"]
        assert attempts[f"c{i}"]["output"]["text"] == "hi"
        assert measured["cost_usd"] is None  # NaN, infinite, past a float: unknown, never 0
    assert (attempts["c0"]["measurements"]["input_tokens"], attempts["c0"]["measurements"]["output_tokens"]) == \
        (None, None)
    assert attempts["c3"]["error"] == "http: 'in' (input_tokens_path) is not an integer"


# --------------------------------------------------------------------------- answers aiohttp cannot parse


def test_malformed_http_answers_are_one_line_errors(tmp_path):
    async def handler(path, body, writer):
        case = case_of(body)
        if case == 0:  # headers that never end
            writer.write(b"HTTP/1.1 200 OK\r\n" + b"".join(b"X-H%d: v\r\n" % i for i in range(200_000)))
        elif case == 1:  # no status line, just bytes
            writer.write(b"a" * (1 << 20))
        elif case == 2:  # an encoding it never asked for
            writer.write(answer(b"\x0b\x02\x80" + b"x" * 100, headers=("Content-Encoding: br",)))
        else:
            writer.write(answer(json.dumps(chat()).encode()))

    with RawServer(handler) as srv:
        _, report = run_suite(tmp_path, {"type": "openai", "base_url": srv.url + "/v1", "model": "m"}, 4)
    attempts = by_case(report)
    assert attempts["c3"]["status"] == "passed"  # the others' failures took nothing from it
    for i in range(3):
        error = attempts[f"c{i}"]["error"]
        assert error.startswith("openai: malformed HTTP answer: ") and "\n" not in error, error
        assert "400, message=" not in error and len(error) < 300, error


# --------------------------------------------------------------------------- batches


class HostileBatches:
    """Anthropic Message Batches, answering with `results(ids, writer)` for the results file;
    a batch ends on its first look. `retrieve_first`: raw bytes for the first retrieve."""

    def __init__(self, results, retrieve_first: bytes | None = None):
        self.results, self.retrieve_first = results, retrieve_first
        self.batches: dict[str, list[str]] = {}
        self.retrieves = 0

    async def __call__(self, path, body, writer):
        if path == "/v1/messages/batches":
            batch_id = f"msgbatch_{len(self.batches)}"
            self.batches[batch_id] = [r["custom_id"] for r in json.loads(body)["requests"]]
            writer.write(answer(json.dumps({"id": batch_id, "processing_status": "in_progress"}).encode()))
        elif path.endswith("/results"):
            await self.results(self.batches[path.split("/")[-2]], writer)
        else:
            self.retrieves += 1
            if self.retrieve_first is not None and self.retrieves == 1:
                writer.write(self.retrieve_first)
                return
            batch_id = path.rsplit("/", 1)[1]
            writer.write(answer(json.dumps({"id": batch_id, "processing_status": "ended",
                                            "request_counts": {"succeeded": len(self.batches[batch_id])}}).encode()))


def result_line(custom_id: str, text: str = "hi") -> bytes:
    message = {"type": "message", "model": "m", "content": [{"type": "text", "text": text}],
               "stop_reason": "end_turn", "usage": {"input_tokens": 3, "output_tokens": 2}}
    return json.dumps({"custom_id": custom_id, "result": {"type": "succeeded", "message": message}}).encode() + b"\n"


def chunked(writer, data: bytes) -> None:
    writer.write(b"%x\r\n%s\r\n" % (len(data), data))


CHUNKED_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/binary\r\nTransfer-Encoding: chunked\r\n\r\n"
FAST_BATCH = {"size": 2, "wait_s": 0.05, "poll_s": 0.05, "poll_max_s": 0.1}


def batch_suite(tmp_path: Path, server) -> tuple[subprocess.CompletedProcess, dict]:
    with RawServer(server) as srv:
        subject = {"type": "anthropic", "base_url": srv.url, "model": "m", "batch": FAST_BATCH}
        return run_suite(tmp_path, subject, 2)


def test_batch_results_with_lines_that_are_not_results(tmp_path):
    """A line that is not JSON, one that names another run's request, and one longer than
    max_response_bytes are skipped: the request whose line was spoiled is an error saying
    why, the other keeps its answer (before, one bad line left every attempt waiting)."""

    async def results(ids, writer):
        spoiled = b"{not json\n" + result_line("zz-not-ours") + b"x" * (5 << 20) + b"\n"
        writer.write(answer(spoiled + result_line(ids[1])))

    proc, report = batch_suite(tmp_path, HostileBatches(results))
    assert proc.returncode == 2, proc.stderr
    attempts = by_case(report)
    assert attempts["c1"]["status"] == "passed" and attempts["c1"]["measurements"]["input_tokens"] == 3
    error = attempts["c0"]["error"]
    assert "without a result for this request" in error
    assert "2 lines of its results could not be read" in error and "1 result line(s) named no request" in error


def test_batch_results_that_never_end_are_read_no_further_than_answers_can_be(tmp_path):
    async def results(ids, writer):
        writer.write(CHUNKED_HEAD)
        chunked(writer, result_line(ids[0]))
        foreign = result_line("zz-not-ours") * 500
        while True:  # foreign lines for ever
            chunked(writer, foreign)
            await writer.drain()

    _, report = batch_suite(tmp_path, HostileBatches(results))
    attempts = by_case(report)
    assert attempts["c0"]["status"] == "passed"
    assert "its results are larger than its requests' answers can be" in attempts["c1"]["error"]
    assert report["run"]["status"] == "completed"


def test_a_batch_retry_after_of_years_is_not_waited_for(tmp_path):
    """A 429 with Retry-After: 1e9 on a retrieve: the next poll asks again (before, the run
    slept for 31 years)."""
    slow = answer(b'{"error":{"message":"slow down"}}', "429 Too Many Requests", ("Retry-After: 1e9",))

    async def results(ids, writer):
        writer.write(answer(b"".join(result_line(i) for i in ids)))

    server = HostileBatches(results, retrieve_first=slow)
    proc, report = batch_suite(tmp_path, server)
    assert proc.returncode == 0, proc.stderr
    assert [a["status"] for a in report["attempts"]] == ["passed", "passed"]
    assert server.retrieves >= 2


async def run_two(subject) -> list:
    """Cases c0 and c1 (inputs q0, q1) through `subject` at once: results or exceptions."""
    try:
        return await asyncio.gather(*(subject.run(req(f"q{i}", case_id=f"c{i}")) for i in range(2)),
                                    return_exceptions=True)
    finally:
        await subject.aclose()


def test_a_results_download_that_stalls_or_breaks_is_read_again_then_waits(monkeypatch):
    """In process (the idle bound is 120 s): a download that sends one line then nothing, and one
    cut mid-line, are retried on later polls; what was read is kept, the rest waits for
    --resume (before, a stall hung the run and a cut one failed the whole batch)."""
    monkeypatch.setattr(batch_results, "IDLE_S", 0.3)

    async def results(ids, writer):
        writer.write(CHUNKED_HEAD)
        chunked(writer, result_line(ids[0]) + b'{"custom_id": "')
        await writer.drain()
        if len(server.batches) == 1:
            await asyncio.sleep(3600)  # first batch: a stall
        writer.transport.abort()  # second: the connection drops mid-line

    server = HostileBatches(results)
    with RawServer(server) as srv:
        for _ in range(2):
            subject = make("anthropic", None, base_url=srv.url, batch=FAST_BATCH, api_key_env="SB_UNSET")
            first, second = asyncio.run(asyncio.wait_for(run_two(subject), HANG_GUARD_S))
            assert first.output.text == "hi"
            assert isinstance(second, BatchPending), second
