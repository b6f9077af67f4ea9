"""Answers read only up to a limit: HTTP bodies (plain and streamed) and child processes' output.

A hostile or broken server or program can answer with gigabytes; holding them all (and then
copies for decoding, parsing and the report) took 1.5 GB for three 100 MB answers. So every
reader stops at the subject's `max_response_bytes`: what lies past it is never read, the
connection is dropped (aiohttp closes a connection whose body was not read to the end) or the
process group is killed, and the caller turns it into an execution error naming the limit.
"""

from __future__ import annotations

import asyncio
import secrets
from dataclasses import dataclass
from pathlib import Path

from ..reaper import TAG_VAR, group_alive, kill_group, sweep, unwatch, watch

_CHUNK = 1 << 16
#: how often a program's end is looked for while its stdout is still open
_POLL_S = 0.1
#: how much of stderr is kept (its tail) when a subject keeps it for error messages
STDERR_TAIL = 1 << 16
#: how long an error body may send nothing before what came of it is taken as the whole
HEAD_IDLE_S = 2.0
#: how long an error body is read in all: one sent a byte at a time never pauses HEAD_IDLE_S,
#: and read to the attempt's deadline its status (a 503 a retry gets past) was a timeout
HEAD_TOTAL_S = 5.0


async def read_body(resp, limit: int, end=None, head: bool = False, probe=None) -> tuple[bytes, bool]:
    """(the body of an aiohttp response up to `limit` bytes, whether it had more). The limit
    holds after decompression: a small gzip body may stand for a huge one. `end(buf, start)`,
    when given, says whether what was read (new bytes from `start`) holds the end of the answer
    (a stream's last event): reading stops there, whether or not the server closes the body.
    `head`: a body declared larger than the limit is still read up to it (an error body's first
    64 KiB hold its message), else it is not read at all; and a body the server stops sending
    for HEAD_IDLE_S (held open, never ended), or still sends after HEAD_TOTAL_S, is what came by
    then: an error's status and words are not lost to the attempt's timeout. `probe` (a
    SentProbe), when given, counts the bytes read as they come (what a timeout says it cut)."""
    length = resp.content_length
    encoded = (resp.headers.get("Content-Encoding") or "identity").lower() != "identity"
    if length is not None and length > limit and not encoded and not head:
        return b"", True  # declared too large: not read at all
    if length is not None and length <= limit and not encoded and end is None and not head:
        return await resp.read(), False  # the declared length is within the limit: one read
    buf = bytearray()
    if probe is not None:
        probe.read = 0
    chunks = resp.content.iter_chunked(_CHUNK)
    loop = asyncio.get_running_loop()
    stop = loop.time() + HEAD_TOTAL_S
    while True:
        try:
            chunk = await (asyncio.wait_for(anext(chunks), min(HEAD_IDLE_S, max(0.0, stop - loop.time())))
                           if head else anext(chunks))
        except StopAsyncIteration:
            break
        except TimeoutError:  # an error body held open: read as far as it came
            if head:
                break
            raise
        start = len(buf)
        buf += chunk
        if probe is not None:
            probe.read = len(buf)
        if len(buf) > limit:
            return bytes(buf[:limit]), True
        if end is not None and end(buf, start):
            return bytes(buf), False
    return bytes(buf), False


async def read_pipe(stream, limit: int, on_over=None, buf: bytearray | None = None) -> tuple[bytes, bool]:
    """(what a pipe gave, up to `limit` bytes; whether it had more). Past the limit `on_over()`
    is called (it kills the writer) and the pipe is drained to its end unkept: asyncio reports a
    process ended only once its pipes are closed. `buf`: where it is gathered (what came before
    a cancellation stays readable there)."""
    buf = bytearray() if buf is None else buf
    while True:
        chunk = await stream.read(_CHUNK)
        if not chunk:
            return bytes(buf), False
        buf += chunk
        if len(buf) > limit:
            del buf[limit:]
            if on_over is not None:
                on_over()
            while await stream.read(_CHUNK):
                pass
            return bytes(buf), True


async def read_tail(stream, keep: int) -> bytes:
    """The last `keep` bytes of a pipe, read to its end (the rest is dropped as it comes)."""
    buf = bytearray()
    while True:
        chunk = await stream.read(_CHUNK)
        if not chunk:
            return bytes(buf)
        buf += chunk
        if len(buf) > 2 * keep:
            del buf[:-keep]


@dataclass
class Finished:
    """How a child process ended: its stdout (up to the limit), the tail of its stderr when kept,
    its exit status, whether stdout went past the limit (the group was then killed), and whether
    it left a process running once it ended (killed: in its group, or one that left it)."""

    stdout: bytes
    stderr: bytes
    returncode: int | None
    over_limit: bool
    left_running: bool = False


#: how long a group's last members are given to finish exiting before they count as left running
SETTLE_S = 1.0


async def _still_running(pgid: int) -> bool:
    """Whether the group still has a live member once the ones already on their way out have
    gone: a sandbox's own processes (bubblewrap's inner init) are still exiting for a moment after
    the program ended, which read as "left a process running" for an agent that left nothing."""
    loop = asyncio.get_running_loop()
    end = loop.time() + SETTLE_S
    while group_alive(pgid):
        if loop.time() >= end:
            return True
        await asyncio.sleep(0.02)
    return False


async def _feed(proc, data: bytes) -> None:
    try:
        proc.stdin.write(data)
        await proc.stdin.drain()
    except (BrokenPipeError, ConnectionResetError):
        pass  # a program that does not read its input: its output still counts
    finally:
        try:
            proc.stdin.close()
        except (BrokenPipeError, ConnectionResetError):  # pragma: no cover - platform dependent
            pass


async def run_process(argv: list[str], *, env: dict[str, str], cwd: str | Path | None, limit: int,
                      stdin: bytes | None = None, keep_stderr: bool = False,
                      pipe_grace_s: float | None = None, kill_after: bool = False,
                      partial: bytearray | None = None) -> Finished:
    """Run a program in its own process group with bounded output.

    stdout is read up to `limit` bytes: past it the group is killed at once. stderr is kept
    (its last STDERR_TAIL bytes) only when asked, else discarded. With `pipe_grace_s`, a
    straggler holding stdout open after the program exited is waited for that long, then killed.
    `kill_after` kills the group once the program ended (nothing it started outlives it). On
    cancellation (a timeout) the whole group is killed before this re-raises. Whenever the group
    is killed, so is every process carrying its tag that left it (reaper.sweep). `partial`, when
    given, gathers stdout as it comes: what the program printed before a timeout cut it."""
    tag = secrets.token_hex(12)
    proc = await asyncio.create_subprocess_exec(
        *argv, stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE if keep_stderr else asyncio.subprocess.DEVNULL,
        env={**env, TAG_VAR: tag}, cwd=str(cwd) if cwd else None, start_new_session=True)
    watch(proc.pid, tag)  # killed (and what left its group) by the watcher should scoreboard be killed
    out = asyncio.ensure_future(read_pipe(proc.stdout, limit, lambda: kill_group(proc.pid), partial))
    err = asyncio.ensure_future(read_tail(proc.stderr, STDERR_TAIL)) if keep_stderr else None
    feed = asyncio.ensure_future(_feed(proc, stdin)) if stdin is not None else None
    readers = [t for t in (out, err, feed) if t is not None]
    stayed = False  # whether it left a process running when it ended
    try:
        if pipe_grace_s is not None:
            # asyncio's wait() returns only once the pipes are closed (Python 3.11), so the end
            # of the program itself is seen in `returncode`.
            pipes = [t for t in (out, err) if t is not None]
            while proc.returncode is None and not all(t.done() for t in pipes):
                await asyncio.wait([t for t in pipes if not t.done()], timeout=_POLL_S)
            held = [t for t in pipes if not t.done()]
            if held:  # the program ended; what it started holds its pipes
                _, left = await asyncio.wait(held, timeout=pipe_grace_s)
                if left:  # a straggler holds a pipe open (in the group, or one that left it)
                    stayed = True
                    kill_group(proc.pid)
                    await asyncio.to_thread(sweep, tag)
            while feed is not None and not feed.done() and proc.returncode is None:
                await asyncio.wait([feed], timeout=_POLL_S)
            if feed is not None and not feed.done():
                # the program ended without reading all its input, and what it left holds stdin
                # unread: the input is given up, or the answer it printed waited for the timeout
                proc.stdin.transport.abort()
        await proc.wait()  # past the limit, read_pipe has killed the group
        stdout, over = await out
        stderr = await err if err is not None else b""
        if feed is not None:
            await feed
    except BaseException:
        kill_group(proc.pid)
        sweep(tag)  # and what left its group (setsid, a daemon's double fork)
        for task in readers:
            task.cancel()
        await asyncio.shield(proc.wait())
        unwatch(proc.pid, tag)
        raise
    if kill_after or over:
        stayed = stayed or (not over and await _still_running(proc.pid))
        kill_group(proc.pid)
        swept = await asyncio.to_thread(sweep, tag)  # nothing it started outlives it, in its group or not
        stayed = stayed or (swept > 0 and not over)
    unwatch(proc.pid, tag)
    return Finished(stdout, stderr, proc.returncode, over, stayed)


def exit_words(returncode: int) -> str:
    """How a program ended, in words: "exited with status 3", "was killed by signal SIGKILL (9)"
    (a negative status), or for a status a shell gives a signal's death (128 + n) the signal
    it most likely was: "exited with status 139 (128 + SIGSEGV (11): killed by that signal?)"."""
    if returncode < 0:
        return f"was killed by signal {signal_name(-returncode)}"
    if 128 < returncode < 128 + 65:
        name = signal_name(returncode - 128)
        if not name.isdigit():
            return f"exited with status {returncode} (128 + {name}: killed by that signal?)"
    return f"exited with status {returncode}"


def signal_name(number: int) -> str:
    """`SIGKILL (9)`, or the number alone for one Python does not name."""
    import signal

    try:
        return f"{signal.Signals(number).name} ({number})"
    except ValueError:
        return str(number)
