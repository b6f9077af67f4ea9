"""Child processes of a task (the fixture, the checks): each in its own process group, output
bounded, the whole group killed at the end, on a timeout or on cancellation."""

from __future__ import annotations

import asyncio
import atexit
import os
import signal
import socket
from dataclasses import dataclass
from pathlib import Path

_CHUNK = 1 << 16


def free_port() -> int:
    """A port nobody listens on at 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def kill_group(pgid: int | None, sig: int = signal.SIGKILL) -> None:
    """Signal a whole process group (one started with start_new_session)."""
    if pgid is None:
        return
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


#: process groups of long-lived children (fixtures) still running: killed at exit, also on a
#: second Ctrl+C (engine/signals.py), which leaves without running anything else
_LIVE_GROUPS: set[int] = set()


def track_group(pgid: int) -> None:
    """Remember a child's process group until `untrack_group`: it is killed if we exit first."""
    _LIVE_GROUPS.add(pgid)


def untrack_group(pgid: int) -> None:
    _LIVE_GROUPS.discard(pgid)


def kill_tracked_groups() -> None:
    """SIGKILL every tracked group (at exit: nothing outlives scoreboard in its own session)."""
    for pgid in list(_LIVE_GROUPS):
        kill_group(pgid)
        _LIVE_GROUPS.discard(pgid)


atexit.register(kill_tracked_groups)


async def read_capped(stream, limit: int) -> tuple[bytes, int]:
    """(the first `limit` bytes of a pipe, the total it gave), read to its end."""
    buf = bytearray()
    total = 0
    while True:
        chunk = await stream.read(_CHUNK)
        if not chunk:
            return bytes(buf), total
        total += len(chunk)
        if len(buf) < limit:
            buf += chunk[: limit - len(buf)]


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
    """Run a command in its own group; keep the first `limit` bytes of stdout and stderr; past
    `timeout` seconds kill the group. The group is killed when it ends, whatever happens."""
    proc = await asyncio.create_subprocess_exec(*argv, cwd=str(cwd), env=env, stdin=asyncio.subprocess.DEVNULL,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                                                start_new_session=True)
    out = asyncio.ensure_future(read_capped(proc.stdout, limit))
    err = asyncio.ensure_future(read_capped(proc.stderr, limit))
    timed_out = False
    try:
        try:
            async with asyncio.timeout(timeout):
                await proc.wait()
        except TimeoutError:
            timed_out = True
            kill_group(proc.pid)
            await proc.wait()
        kill_group(proc.pid)  # nothing it started outlives it (and its pipes close)
        (stdout, total), (stderr, _) = await asyncio.gather(out, err)
    except BaseException:
        kill_group(proc.pid)
        out.cancel()
        err.cancel()
        raise
    return Ran(None if timed_out else proc.returncode, stdout, total, stderr, timed_out)
