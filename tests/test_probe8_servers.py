"""Hostile and broken HTTP servers behind subjects (probe 8): raw loopback servers that answer
as real providers and gateways sometimes do, driven through `scoreboard run` on real suite files.

Each run must end on its own, record every failure as an error of its own attempt with a clear
reason, leave usage it could not read unknown (null, never 0), and write a report that
`scoreboard verify` accepts."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HANG_GUARD_S = 240  # a generous bound on a whole CLI run: reaching it means the run hung


class Server:
    """HTTP/1.1 on 127.0.0.1, port 0, in a thread: `handler(n, body, writer)` writes whatever
    bytes it likes for the n-th request (from 1); the connection is closed after each."""

    def __init__(self, handler):
        self.handler, self.seen = handler, []
        self._ready = threading.Event()
        self._thread = threading.Thread(target=asyncio.run, args=(self._serve(),), daemon=True)

    def __enter__(self):
        self._thread.start()
        assert self._ready.wait(10)
        return self

    def __exit__(self, *exc):
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def _serve(self):
        self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
        server = await asyncio.start_server(self._client, "127.0.0.1", 0)
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        async with server:
            await self._stop.wait()
            for task in [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]:
                task.cancel()

    async def _client(self, reader, writer):
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            length = re.search(rb"(?i)\r\ncontent-length: *(\d+)", head)
            body = await reader.readexactly(int(length.group(1))) if length else b""
            self.seen.append(body)
            await self.handler(len(self.seen), body, writer)
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass
        finally:
            writer.close()


def answer(body: bytes, status: str = "200 OK", ctype: str = "application/json", headers: tuple = ()) -> bytes:
    head = [f"HTTP/1.1 {status}", f"Content-Type: {ctype}", f"Content-Length: {len(body)}",
            "Connection: close", *headers]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def stream(events: bytes) -> bytes:
    """An SSE answer with no Content-Length: it ends where the server closes the connection."""
    return b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n" + events


CHAT_OK = json.dumps({"choices": [{"index": 0, "message": {"content": "hi"}, "finish_reason": "stop"}],
                      "usage": {"prompt_tokens": 3, "completion_tokens": 2}}).encode()


def run_suite(folder: Path, subject: dict, cases: int = 1, *args: str) -> tuple[subprocess.CompletedProcess, dict]:
    """`scoreboard run` of a suite of `cases` cases (c0, c1, ...; input "hi", graded by contains),
    then `scoreboard verify` of its report, which must accept it."""
    folder.mkdir(exist_ok=True)
    (folder / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "input": "hi", "expected": "hi"}) + "\n"
                                                for i in range(cases)))
    (folder / "suite.yaml").write_text("name: s\ncases: cases.jsonl\ngraders: [contains]\nsubject: "
                                       + json.dumps(subject) + "\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "SCOREBOARD_STORE": "none"}
    done = subprocess.run([sys.executable, "-m", "scoreboard", "run", "suite.yaml", "--no-progress", "--format",
                           "json", "--output", "rep", *args], cwd=folder, env=env, capture_output=True, text=True,
                          timeout=HANG_GUARD_S, check=False)
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    report = json.loads((folder / "rep.json").read_text())
    checked = subprocess.run([sys.executable, "-m", "scoreboard", "verify", "rep.json"], cwd=folder, env=env,
                             capture_output=True, text=True, timeout=HANG_GUARD_S, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    return done, report


def by_case(report: dict) -> dict:
    return {a["case_id"]: a for a in report["attempts"]}


def openai(srv: Server, **kw) -> dict:
    return {"type": "openai", "base_url": srv.url + "/v1", "model": "m", "params": {"max_tokens": 10},
            "retries": {"attempts": 2, "base_delay_s": 0.01, "max_delay_s": 0.02}, **kw}


def anthropic(srv: Server, **kw) -> dict:
    return {"type": "anthropic", "base_url": srv.url, "model": "m",
            "retries": {"attempts": 2, "base_delay_s": 0.01, "max_delay_s": 0.02}, **kw}


# --------------------------------------------------------------------------- error bodies past 64 KiB


def test_an_error_body_past_64_kib_with_a_length_still_gives_its_message(tmp_path):
    """A 4xx that echoes a long prompt back (a validation error) declares a Content-Length past
    the 64 KiB an error body may take. Its first 64 KiB were not read at all, so the error said
    'HTTP 400: (empty body)': the provider's reason was lost, and a quota 4xx of that size was
    retried like any other instead of stopping the run."""
    echo = "x" * 200_000

    async def handler(n, body, writer):
        if n == 1:
            writer.write(answer(json.dumps({"error": {"message": "prompt is too long for this model",
                                                      "type": "invalid_request_error"}, "input": echo}).encode(),
                                "400 Bad Request"))
        else:
            writer.write(answer(json.dumps({"error": {"message": "You exceeded your current quota",
                                                      "type": "insufficient_quota"}, "input": echo}).encode(),
                                "403 Forbidden"))

    with Server(handler) as srv:
        done, report = run_suite(tmp_path / "w", openai(srv), 3, "--concurrency", "1")
        seen = len(srv.seen)
    attempts = by_case(report)
    assert attempts["c0"]["status"] == "error"
    assert attempts["c0"]["error"] == "openai: HTTP 400: prompt is too long for this model", attempts["c0"]
    assert "quota or billing limit reached" in attempts["c1"]["error"], attempts["c1"]
    assert "You exceeded your current quota" in attempts["c1"]["error"]
    assert attempts["c2"]["status"] == "not-run" and seen == 2  # the quota error stopped the run
    assert report["run"]["status"] == "stopped" and done.returncode == 2, done.stderr


# --------------------------------------------------------------------------- quota said in a 200


def test_a_quota_error_in_a_200_answer_or_a_stream_event_stops_the_run(tmp_path):
    """Gateways answer 200 with an error body, and stream an error event once the status line
    is sent (OpenRouter, LiteLLM, Anthropic's `event: error`). A quota or billing error said that
    way was read as a transient provider error: retried, then the next case sent, and the next,
    every one refused. Now it stops the run as the same error with a 402 or 403 status does."""
    quota = {"error": {"message": "You exceeded your current quota", "type": "insufficient_quota"}}
    billing = {"type": "error", "error": {"type": "billing_error", "message": "Your credit balance is too low"}}

    async def chat(n, body, writer):
        writer.write(answer(json.dumps(quota).encode()))

    async def sse(n, body, writer):
        start = {"type": "message_start", "message": {"model": "m", "usage": {"input_tokens": 5}}}
        writer.write(stream(b"event: message_start\ndata: " + json.dumps(start).encode() + b"\n\n"
                            b"event: error\ndata: " + json.dumps(billing).encode() + b"\n\n"))

    for name, handler, spec in (("openai", chat, openai), ("anthropic", sse, lambda s: anthropic(s, stream=True))):
        with Server(handler) as srv:
            done, report = run_suite(tmp_path / name, spec(srv), 3, "--concurrency", "1")
            seen = len(srv.seen)
        attempts = by_case(report)
        assert "quota or billing limit reached, stopping the run" in attempts["c0"]["error"], attempts["c0"]
        assert attempts["c0"]["measurements"]["input_tokens"] is None
        assert [attempts[c]["status"] for c in ("c1", "c2")] == ["not-run", "not-run"], name
        assert seen == 1, (name, seen)  # not retried, and no later case sent
        assert report["run"]["status"] == "stopped" and done.returncode == 2, done.stderr


# --------------------------------------------------------------------------- Retry-After past the timeout


def test_a_retry_after_longer_than_an_attempt_does_not_time_out_the_attempts_after_it(tmp_path):
    """A 429 whose Retry-After (1e9, garbage from a gateway, or a minute against a 2 s timeout)
    outlasts an attempt paused the subject's every request for a whole attempt's timeout: the
    next case waited in the queue, sent its request too late and was recorded 'timeout after 3000 ms'. A
    pause no attempt can outlast is not imposed on the others; they ask the server themselves."""
    async def handler(n, body, writer):
        if n == 1:
            writer.write(answer(b'{"error":{"message":"upstream failed"}}', "500 Internal Server Error"))
        elif n == 2:
            writer.write(answer(b'{"error":{"message":"slow down"}}', "429 Too Many Requests",
                                headers=("Retry-After: 1e9",)))
        else:
            await asyncio.sleep(1)  # an answer takes a while: one sent at the pause's end is too late
            writer.write(answer(CHAT_OK))

    with Server(handler) as srv:
        done, report = run_suite(tmp_path / "w", openai(srv), 3, "--concurrency", "1", "--timeout", "3000")
    attempts = by_case(report)
    assert attempts["c0"]["status"] == "error" and "HTTP 429: slow down" in attempts["c0"]["error"]
    assert attempts["c0"]["measurements"]["requests"] == 2
    for case in ("c1", "c2"):
        assert attempts[case]["status"] == "passed", attempts[case]
        assert attempts[case]["measurements"]["requests"] == 1


# --------------------------------------------------------------------------- a stream cut inside an event


def test_a_stream_cut_inside_an_event_is_called_truncated_not_invalid_json(tmp_path):
    """A server that drops the connection in the middle of an event's data line: the attempt
    said 'response is not valid JSON (Unterminated string ...)', blaming the server's JSON for a
    stream that was cut. A whole event that is no JSON is still called so."""
    delta = json.dumps({"choices": [{"index": 0, "delta": {"content": "hi"}}]}).encode()
    cut = {"openai": b"data: " + delta + b"\n\ndata: {\"choices\": [{\"index\": 0, \"de",
           "anthropic": b"event: message_start\ndata: {\"type\": \"message_start\", \"message\": {\"model\": \"m\"}}"
                        b"\n\nevent: content_block_delta\ndata: {\"type\": \"content_block_delta\", \"in"}

    for name, spec in (("openai", openai), ("anthropic", anthropic)):
        async def handler(n, body, writer, name=name):
            if n == 1:
                writer.write(stream(cut[name]))
            else:
                writer.write(stream(b"data: {not json}\n\n"))

        with Server(handler) as srv:
            _, report = run_suite(tmp_path / name, spec(srv, stream=True), 2, "--concurrency", "1")
        attempts = by_case(report)
        assert attempts["c0"]["error"] == f"{name}: stream ended before it finished (truncated inside an event)", \
            attempts["c0"]
        assert attempts["c0"]["measurements"]["output_tokens"] is None
        assert "response is not valid JSON" in attempts["c1"]["error"], attempts["c1"]
