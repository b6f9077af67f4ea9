"""Long-lived Node.js workers for the `javascript` grader and `javascript` transforms.

Starting `node` costs tens of milliseconds, so a run does not start one per grade: each worker
(graders/js_assert.js in serve mode) reads one JSON job per line on stdin and writes one JSON
result per line on stdout, one job at a time. Idle workers are kept in a pool (as many as grades
run at once) and reused for the rest of the process. A job past its timeout kills that worker's
process group (the job is reported as timed out) and the next job starts a fresh worker, so a
runaway assertion never blocks the others. A worker whose stdout line would pass 1 MiB is killed
likewise. A worker's V8 heap is bounded (MAX_HEAP_MB): a grade that allocates past it ends the
worker, and the grade says it ran out of memory. Workers exit when their stdin closes (our
process ending) and are killed at exit.

This matches promptfoo, which evaluates every JavaScript assertion inside its one Node process
(module state and globals persist between assertions there too).
"""

from __future__ import annotations

import atexit
import json
import os
import select
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

RUNNER = Path(__file__).with_name("js_assert.js")
MAX_LINE = 1024 * 1024
#: a worker's V8 heap, in MB (node's own default is a share of the machine's memory, about 4 GB
#: here): a grade that allocates past it ends its worker, and the grade says it ran out of memory
MAX_HEAP_MB = 1024


class NodeTimeout(Exception):
    """The job ran past its timeout (its worker was killed)."""


class NodeFailure(Exception):
    """The worker died or answered something that is not a result line."""


class _Worker:
    def __init__(self, node: str):
        self.proc = subprocess.Popen([node, f"--max-old-space-size={MAX_HEAP_MB}", str(RUNNER), "--serve"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, start_new_session=True)
        self.buffer = b""

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                stream.close()
            except OSError:
                pass

    def _why_exited(self) -> str:
        """What a worker that closed its stdout without an answer died of, as far as it shows."""
        try:
            code = self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            code = None
        if code in (-signal.SIGABRT, 128 + signal.SIGABRT):  # V8's "Reached heap limit" aborts
            return f"the node worker ran out of memory (a grade's heap is bounded at {MAX_HEAP_MB} MB)"
        if code is not None and code < 0:
            return f"the node worker was killed by signal {-code} without an answer"
        return "the node worker exited without an answer" + (f" (exit code {code})" if code else "")

    def call(self, job: dict, timeout_s: float) -> dict:
        deadline = time.monotonic() + timeout_s
        try:
            self.proc.stdin.write(json.dumps(job).encode() + b"\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise NodeFailure("the node worker exited") from None
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise NodeTimeout(f"timed out after {timeout_s:g} s")
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                raise NodeFailure(self._why_exited())
            self.buffer += chunk
            if len(self.buffer) > MAX_LINE and b"\n" not in self.buffer:
                raise NodeFailure("the node worker's answer is over 1 MiB")
        line, _, self.buffer = self.buffer.partition(b"\n")
        try:
            return json.loads(line.decode("utf-8", "replace"))
        except ValueError:
            raise NodeFailure(f"node gave no result: {line[:200]!r}") from None


_idle: list[_Worker] = []
_all: set[_Worker] = set()
_lock = threading.Lock()
_started = 0


def workers_started() -> int:
    """How many node processes this process has started (for the benchmark)."""
    return _started


def call(node: str, job: dict, timeout_s: float) -> dict:
    """Run one job on an idle worker (a new one if none is idle); blocking."""
    global _started
    with _lock:
        worker = _idle.pop() if _idle else None
    if worker is None or worker.proc.poll() is not None:
        worker = _Worker(node)
        with _lock:
            _all.add(worker)
            _started += 1
    try:
        result = worker.call(job, timeout_s)
    except (NodeTimeout, NodeFailure):
        worker.kill()
        with _lock:
            _all.discard(worker)
        raise
    with _lock:
        _idle.append(worker)
    return result


async def call_async(node: str, job: dict, timeout_s: float) -> dict:
    """`call` from a coroutine (the wait happens on a thread). Without a running loop (verify
    driving a grade step by step, graders/code.py's call_user likewise) it is called directly:
    asyncio.to_thread needs a loop, and its RuntimeError would be recorded as the grade."""
    import asyncio

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return call(node, job, timeout_s)
    return await asyncio.to_thread(call, node, job, timeout_s)


def shutdown() -> None:
    """Kill every worker (also run at exit)."""
    with _lock:
        workers = list(_all)
        _all.clear()
        _idle.clear()
    for w in workers:
        w.kill()


atexit.register(shutdown)


def run_transform(node: str, transform: dict, value: Any, context: dict, timeout_s: float) -> dict:
    """A promptfoo transform (src/util/transform.ts) on `value`: {value, text} or {error}."""
    job = {"kind": "transform", **transform, "input": value, "context": context}
    return call(node, job, timeout_s)
