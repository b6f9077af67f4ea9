"""Child processes of a task (the fixture, the checks): each in its own process group, output
bounded (its last 64 KiB kept), the whole group killed at the end, on a timeout or on cancellation.

A process may leave its group (setsid, a daemon's double fork) and so outlive the group's kill,
holding the pipes it inherited. Every child is therefore started with a tag of its own in its
environment (SCOREBOARD_PROC_TAG), which its descendants inherit: when the child is done, the
processes still carrying the tag are killed too (`sweep`, Linux /proc), and the output of one
that escaped even that is not waited for past a short grace.
"""

from __future__ import annotations

import asyncio
import atexit
import secrets
import socket
from dataclasses import dataclass
from pathlib import Path

from ..reaper import TAG_VAR, kill_group, sweep, unwatch, watch

__all__ = ["TAG_VAR", "ATTEMPT_TAG_VAR", "PIPE_GRACE_S", "new_tag", "sweep", "free_port", "kill_group", "track_group", "untrack_group",
           "kill_tracked_groups", "Ran", "run_bounded"]

_CHUNK = 1 << 16
#: the variable carrying an attempt's tag into its agent (and so to everything the agent starts)
ATTEMPT_TAG_VAR = "SCOREBOARD_ATTEMPT_TAG"
#: how long the output pipes of an ended command are read before they are given up on
PIPE_GRACE_S = 2.0


def new_tag() -> str:
    """A fresh tag for one child process and its descendants."""
    return secrets.token_hex(12)


def free_port() -> int:
    """A port nobody listens on at 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


#: process groups of long-lived children (fixtures) still running: killed at exit, also on a
#: second Ctrl+C (engine/signals.py), which leaves without running anything else
_LIVE_GROUPS: dict[int, str | None] = {}


def track_group(pgid: int, tag: str | None = None) -> None:
    """Remember a child's process group (and its tag) until `untrack_group`: it is killed if we
    exit first."""
    _LIVE_GROUPS[pgid] = tag
    watch(pgid, tag)  # and by the watcher if we are killed (reaper.py)


def untrack_group(pgid: int) -> None:
    if pgid in _LIVE_GROUPS:
        unwatch(pgid, _LIVE_GROUPS.pop(pgid))


def kill_tracked_groups() -> None:
    """SIGKILL every tracked group and what left it (at exit: nothing outlives scoreboard)."""
    for pgid, tag in list(_LIVE_GROUPS.items()):
        kill_group(pgid)
        sweep(tag)
        untrack_group(pgid)


atexit.register(kill_tracked_groups)


@dataclass
class Ran:
    """How a bounded command ended. `returncode` None: it was killed at its timeout."""

    returncode: int | None
    stdout: bytes
    stdout_bytes: int
    stderr: bytes
    timed_out: bool


async def run_bounded(argv: list[str], *, cwd: Path, env: dict[str, str], timeout: float,
                      limit: int = 64 << 10) -> Ran:
    """Run a command in its own group; keep the last `limit` bytes of stdout and stderr (a
    check's verdict is its last line, however much it printed before); past
    `timeout` seconds kill the group. The group, and whatever it started that left the group,
    is killed when it ends, whatever happens; a pipe held open by a process that escaped is
    read for at most PIPE_GRACE_S more."""
    tag = new_tag()
    loop = asyncio.get_running_loop()
    transport, protocol = await loop.subprocess_exec(
        lambda: _Protocol(limit=_CHUNK, loop=loop), *argv, cwd=str(cwd), env={**env, TAG_VAR: tag},
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        start_new_session=True)
    proc = asyncio.subprocess.Process(transport, protocol, loop)
    watch(proc.pid, tag)  # killed by the watcher should scoreboard be killed meanwhile
    out_buf, err_buf = _Capped(limit), _Capped(limit)
    out = asyncio.ensure_future(out_buf.drain(proc.stdout))
    err = asyncio.ensure_future(err_buf.drain(proc.stderr))
    timed_out = False
    try:
        try:
            # its exit, not its pipes' end (Process.wait() waits for both before Python 3.12)
            async with asyncio.timeout(timeout):
                await protocol.exited.wait()
        except TimeoutError:
            timed_out = True
            kill_group(proc.pid)
            await protocol.exited.wait()
        kill_group(proc.pid)  # nothing it started outlives it (and its pipes close)
        await asyncio.to_thread(sweep, tag)  # nor what left its group
        _, pending = await asyncio.wait([out, err], timeout=PIPE_GRACE_S)
        if pending:  # a pipe still held by a process that escaped: keep what came so far
            for task in pending:
                task.cancel()
            transport.close()
    except BaseException:
        kill_group(proc.pid)
        sweep(tag)
        out.cancel()
        err.cancel()
        transport.close()
        raise
    finally:
        unwatch(proc.pid, tag)
    return Ran(None if timed_out else transport.get_returncode(), bytes(out_buf.buf), out_buf.total,
               bytes(err_buf.buf), timed_out)


class _Protocol(asyncio.subprocess.SubprocessStreamProtocol):
    """The usual protocol, telling when the process itself has exited."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.exited = asyncio.Event()

    def process_exited(self) -> None:
        super().process_exited()
        self.exited.set()


class _Capped:
    """The last `limit` bytes of a pipe and the total it gave, kept as they come (a check's
    last line, its verdict, comes after whatever it printed before)."""

    def __init__(self, limit: int):
        self.limit, self.buf, self.total = limit, bytearray(), 0

    async def drain(self, stream) -> None:
        while True:
            chunk = await stream.read(_CHUNK)
            if not chunk:
                return
            self.total += len(chunk)
            self.buf += chunk
            if len(self.buf) > self.limit:
                del self.buf[: len(self.buf) - self.limit]
