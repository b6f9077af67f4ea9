"""Hostile servers, round 24E: one suite whose every case meets a different misbehaving server
(bytes dripped forever in the headers or the body, an endless stream, a 10 GB Content-Length
then silence, a gzip bomb, HTTP/1.0 with no length held open, a connection cut mid-chunk, an
HTML page with status 200, a redirect to file://, NaN and absurd usage), run through the CLI
with a timeout, for a subject and for an llm-judge judge.

Each run must end on its own in bounded time and memory, write a report that verifies, leave
usage it could not read unknown (never a known 0), and give each attempt an error that names
what happened: a timeout says what the try was waiting for when it was cut (no answer's
headers yet, a body or stream still coming and how much of it), not a bare "timeout after N ms"
that reads the same for a server that never answered and one that streamed for the whole time.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import zlib
from pathlib import Path

from tests.test_hostile_servers_2 import RawServer, answer

ROOT = Path(__file__).resolve().parent.parent
HANG_GUARD_S = 240  # a generous bound on a whole CLI run: reaching it means the run hung
RSS_BOUND_KB = 1 << 20  # 1 GiB: a generous bound, not a measure
RETRIES = {"attempts": 2, "base_delay_s": 0.01, "max_delay_s": 0.02}
OK = (b'{"choices":[{"message":{"content":"hi"},"finish_reason":"stop"}],'
      b'"usage":{"prompt_tokens":NaN,"completion_tokens":1e999999}}')


def _gzip_bomb() -> bytes:
    """A gzip body of a few MB that inflates to 1 GiB of spaces (made a MiB at a time)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = b" " * (1 << 20)
    return b"".join(packer.compress(block) for _ in range(1024)) + packer.flush()


async def _drip(writer, byte: bytes) -> None:
    while True:
        writer.write(byte)
        await writer.drain()
        await asyncio.sleep(0.05)


def _hostile(bomb: bytes):
    """case number -> what its server does."""

    async def drip_headers(w):
        w.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Slow: ")
        await _drip(w, b"a")

    async def silent(w):
        await asyncio.sleep(3600)

    async def drip_body(w):
        w.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
        await _drip(w, b"1\r\n \r\n")

    async def endless_stream(w):
        w.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
        event = b'data: {"choices":[{"index":0,"delta":{"content":"hh"}}]}\n\n'
        await _drip(w, b"%x\r\n%s\r\n" % (len(event), event))

    async def ten_gb(w):
        w.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 10000000000\r\n\r\n{")
        await asyncio.sleep(3600)

    async def gzip_bomb(w):
        w.write(answer(bomb, headers=("Content-Encoding: gzip",)))

    async def http10_held(w):
        w.write(b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n" + OK[:20])
        await asyncio.sleep(3600)

    async def cut_mid_chunk(w):
        w.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                b"100\r\n{\"choices\"")
        await w.drain()
        w.transport.abort()

    async def html_200(w):
        page = b"<html><h1>502 Bad Gateway</h1></html>"
        w.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n%s" % (len(page), page))

    async def redirect_file(w):
        w.write(answer(b"", "307 Temporary Redirect", ("Location: file:///etc/passwd",)))

    async def nan_usage(w):
        w.write(answer(OK))

    return [drip_headers, silent, drip_body, endless_stream, ten_gb, gzip_bomb, http10_held, cut_mid_chunk,
            html_200, redirect_file, nan_usage]


#: case number -> words its attempt's error must hold (None: it passes, its usage unknown)
EXPECTED = [
    ("timeout after 3000 ms (request sent, the server's answer had not begun",),
    ("timeout after 3000 ms (request sent, the server's answer had not begun",),
    ("timeout after 3000 ms (HTTP 200 answer, its body still coming: ", "bytes read, its end not seen)"),
    ("timeout after 3000 ms (HTTP 200 answer, its stream still coming: ", "its last event not seen)"),
    ("larger than max_response_bytes",),
    ("larger than max_response_bytes",),
    ("timeout after 3000 ms (HTTP 200 answer, its body still coming: 20 bytes read",),
    ("the response was truncated",),
    ("the server answered text/html: <html><h1>502 Bad Gateway</h1></html>",),
    ("HTTP 307: a redirect (to file:///etc/passwd) is not followed",),
    None,
]


def _server(handlers):
    async def handler(path, body, writer):
        import re

        n = int(re.search(rb"q(\d+)", body).group(1))
        await handlers[n](writer)

    return RawServer(handler)


#: `python -m scoreboard ARGS` that writes its own peak RSS (KB) to peak_kb.txt as it ends
PEAK_WRAP = """
import runpy, sys
sys.argv = ["scoreboard", *sys.argv[1:]]
try:
    runpy.run_module("scoreboard", run_name="__main__", alter_sys=True)
finally:
    with open("/proc/self/status") as status, open("peak_kb.txt", "w") as out:
        out.write(next(line.split()[1] for line in status if line.startswith("VmHWM:")))
"""


def _run_measured(argv: list[str], cwd: Path, env: dict) -> tuple[subprocess.CompletedProcess, int]:
    """Run one child (argv: PEAK_WRAP's) and return it with its own peak RSS (KB), as it read it
    itself at its end (VmHWM: per address space, new at exec).

    RUSAGE_CHILDREN would be the largest of every child this test worker ever waited for (a
    browser or a Ray worker from an earlier test file included), and wait4's counts from the
    worker's own RSS at the fork: neither is this run's."""
    out, err = cwd / "child.out", cwd / "child.err"
    with out.open("wb") as o, err.open("wb") as e:
        child = subprocess.Popen(argv, cwd=cwd, env=env, stdout=o, stderr=e, stdin=subprocess.DEVNULL)
        guard = threading.Timer(HANG_GUARD_S, child.kill)
        guard.start()
        try:
            _, status, usage = os.wait4(child.pid, 0)
        finally:
            guard.cancel()
    child.returncode = os.waitstatus_to_exitcode(status)
    assert child.returncode != -9, f"the run hung past {HANG_GUARD_S} s"
    del usage
    done = subprocess.CompletedProcess(argv, child.returncode, out.read_text(), err.read_text())
    return done, int((cwd / "peak_kb.txt").read_text())


def _run(tmp_path: Path, suite: dict, n: int) -> tuple[subprocess.CompletedProcess, dict]:
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "input": f"q{i}", "expected": "hi"})
                                                  + "\n" for i in range(n)))
    (tmp_path / "suite.json").write_text(json.dumps({"name": "h", "cases": "cases.jsonl", "output_dir": "out",
                                                     "timeout_ms": 3000, **suite}))
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "SCOREBOARD_STORE": "none", "SB_KEY": "k"}
    proc, maxrss_kb = _run_measured([sys.executable, "-c", PEAK_WRAP, "run", "suite.json", "--no-progress",
                                     "--max-cost", "1", "--concurrency", str(n)], tmp_path, env)
    assert maxrss_kb < RSS_BOUND_KB
    for text in (proc.stdout, proc.stderr):
        assert "Traceback" not in text and "internal error" not in text, text
    [path] = (tmp_path / "out" / "h").glob("*.json")
    checked = subprocess.run([sys.executable, "-m", "scoreboard", "verify", str(path)], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=HANG_GUARD_S, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    return proc, json.loads(path.read_text())


def _openai(url: str) -> dict:
    return {"type": "openai", "base_url": url + "/v1", "model": "m", "api_key_env": "SB_KEY", "retries": RETRIES,
            "params": {"max_tokens": 5}, "price": {"input_per_mtok": 1, "output_per_mtok": 1}}


def test_each_hostile_server_is_its_attempts_error_naming_what_happened(tmp_path):
    handlers = _hostile(_gzip_bomb())
    with _server(handlers) as srv:
        proc, report = _run(tmp_path, {"subject": _openai(srv.url)}, len(handlers))
    assert proc.returncode == 2, proc.stderr
    attempts = {a["case_id"]: a for a in report["attempts"]}
    for i, words in enumerate(EXPECTED):
        attempt = attempts[f"c{i}"]
        m = attempt["measurements"]
        if words is None:  # answered: its usage could not be read, so it is unknown, never 0
            assert attempt["status"] == "passed" and attempt["output"]["text"] == "hi"
            assert (m["input_tokens"], m["output_tokens"], m["cost_usd"]) == (None, None, None)
            continue
        assert attempt["status"] == "error", (i, attempt)
        for part in words:
            assert part in attempt["error"], (i, attempt["error"])
        assert "\n" not in attempt["error"] and len(attempt["error"]) < 1000
        assert (m["input_tokens"], m["output_tokens"], m["cost_usd"]) == (None, None, None), (i, m)
        assert m["requests"] >= 1
    spent = report["requests"]  # one request each (no retry of these), every usage unknown, the budget kept
    assert (spent["sent"], spent["failed"], spent["unknown_usage"]) == (len(handlers), len(handlers) - 1,
                                                                       len(handlers))
    assert spent["cost_spent_usd"] <= spent["budget"]["max_cost_usd"] and spent["exhausted"] is None


def test_a_judge_cut_by_the_timeout_says_what_it_was_waiting_for(tmp_path):
    handlers = _hostile(b"")
    # every case meets the judge that drips its body forever, then the one that never answers
    with _server([handlers[2], handlers[1]]) as srv:
        proc, report = _run(tmp_path, {"subject": "mock", "judge": _openai(srv.url),
                                       "graders": [{"llm-judge": {"rubric": "is it right?"}}]}, 2)
    grades = {a["case_id"]: a["grades"][0] for a in report["attempts"]}
    assert grades["c0"]["judge_failure"] is True and grades["c0"]["passed"] is None
    assert grades["c0"]["reason"].startswith("judge failure: judge timed out after 3s (HTTP 200 answer, its body "
                                             "still coming: "), grades["c0"]["reason"]
    assert "judge timed out after 3s (request sent, the server's answer had not begun" in grades["c1"]["reason"]
    for grade in grades.values():  # sent, possibly billed: unknown, never a known 0
        usage = grade["judge"]["usage"]
        assert usage["requests"] == 1 and usage["cost_usd"] is None and usage["input_tokens"] is None
