"""The "loopback only" network policy, enforced: the agent runs in its own network namespace
(`bwrap --unshare-net`: no interface but its own loopback, so no other address, and no port of
this machine's loopback, can be reached), and the few loopback services it needs are forwarded
into it:

    agent -> 127.0.0.1:PORT (inside)  -- forwarder inside the sandbox (INSIDE, stdlib Python)
          -> Unix socket DIR/PORT      -- a folder bind-mounted read-only into the sandbox
          -> 127.0.0.1:PORT (outside)  -- Bridge, in scoreboard's event loop

The ports forwarded are the task's fixture (or the attempt's proxy of a shared one) and the
agent's model endpoint when it is on loopback. Inside, the same port numbers answer, so the
URLs the agent was given work unchanged. A model endpoint that is not on loopback (a real
provider) cannot be forwarded this way: the policy is then not enforced, and the attempt's
record says so and why (`network: "open (not enforced)"`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

ENFORCED = "loopback (enforced)"
OPEN = "open (not enforced)"
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})
#: the longest Unix socket path Linux takes, with room for the port's name
_MAX_SOCKET_DIR = 96

#: the forwarder run inside the sandbox before the agent: `python -I -c INSIDE DIR PORTS -- ARGV`
INSIDE = r'''
import os, signal, socket, subprocess, sys, threading
sock_dir, ports, argv = sys.argv[1], [int(p) for p in sys.argv[2].split(",") if p], sys.argv[4:]
def pump(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass
def handle(conn, path):
    up = socket.socket(socket.AF_UNIX)
    try:
        up.connect(path)
    except OSError:
        conn.close(); up.close(); return
    back = threading.Thread(target=pump, args=(up, conn), daemon=True)
    back.start(); pump(conn, up); back.join(); conn.close(); up.close()
def serve(listener, path):
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        threading.Thread(target=handle, args=(conn, path), daemon=True).start()
for port in ports:
    for family, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
        try:
            listener = socket.socket(family)
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind((host, port)); listener.listen(128)
        except OSError:
            if family == socket.AF_INET:
                raise
            continue
        threading.Thread(target=serve, args=(listener, os.path.join(sock_dir, str(port))), daemon=True).start()
child = subprocess.Popen(argv)
for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(sig, lambda s, f: child.send_signal(s))
code = child.wait()
sys.exit(code if code >= 0 else 128 - code)
'''


@functools.lru_cache(maxsize=1)
def netns_works(bwrap: str) -> bool:
    """Whether bwrap can give a process its own network namespace here."""
    try:
        probe = subprocess.run([bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-net",
                                "--unshare-pid", "--die-with-parent", "true"],
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               timeout=20, check=False)
    except (OSError, subprocess.SubprocessError):
        return False
    return probe.returncode == 0


def interpreter() -> tuple[str, list[Path]]:
    """The Python that runs the forwarder inside the sandbox, and the folders it needs (its
    program and standard library), to show read-only when a hidden folder holds them."""
    program = os.path.realpath(sys.executable)
    return program, [Path(program), Path(os.path.realpath(sys.base_prefix))]


def loopback_port(url: str) -> int | None:
    """The port of `url` when its host is loopback, else None."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    if (parts.hostname or "") not in LOOPBACK_HOSTS and f"[{parts.hostname}]" not in LOOPBACK_HOSTS:
        return None
    return port or (443 if parts.scheme == "https" else 80)


@dataclass
class NetPolicy:
    """What one attempt's network is: `wanted` is the profile's ("loopback", "all" or None:
    the subject has no profile); `reason` says why a wanted loopback policy is not enforced."""

    wanted: str | None
    enforced: bool = False
    reason: str | None = None
    sock_dir: Path | None = None
    #: port -> what it serves ("fixture", "model")
    ports: dict[int, str] = field(default_factory=dict)
    python: str = ""

    def describe(self) -> dict:
        out: dict = {"network": ENFORCED if self.enforced else OPEN}
        if self.enforced:
            out["reachable"] = [f"127.0.0.1:{p} ({what})" for p, what in sorted(self.ports.items())]
        elif self.wanted == "loopback":
            out["network_note"] = f"the profile asks for loopback only, not enforced: {self.reason}"
        elif self.wanted == "all":
            out["network_note"] = "the profile allows every address (network: all)"
        else:
            out["network_note"] = self.reason or "the agent's subject sets no network policy"
        return out

    def wrap(self, argv: list[str]) -> tuple[list[str], list[str]]:
        """(bwrap arguments, argv run inside): the namespace, the socket folder, the forwarder."""
        if not self.enforced or self.sock_dir is None:
            return [], list(argv)
        ports = ",".join(str(p) for p in sorted(self.ports))
        return (["--unshare-net", "--ro-bind", str(self.sock_dir), str(self.sock_dir)],
                [self.python, "-I", "-c", INSIDE, str(self.sock_dir), ports, "--", *argv])


def plan(wanted: str | None, bwrap: str | None, endpoints: list[str] | None, root: Path) -> NetPolicy:
    """The attempt's policy. `endpoints`: the URLs the agent's own program must reach (its
    model), None when the subject cannot say."""
    policy = NetPolicy(wanted)
    if wanted != "loopback":
        return policy
    if bwrap is None:
        policy.reason = "no sandbox (bubblewrap) works here"
        return policy
    if not netns_works(bwrap):
        policy.reason = "bubblewrap cannot make a network namespace here (--unshare-net failed)"
        return policy
    for url in endpoints or []:
        port = loopback_port(url)
        if port is None:
            policy.reason = (f"the agent's model endpoint {url} is not on loopback, and only loopback "
                             "services can be forwarded into the sandbox")
            return policy
        policy.ports[port] = "model"
    policy.sock_dir = root / "net"
    if len(str(policy.sock_dir)) > _MAX_SOCKET_DIR:
        policy.sock_dir = Path(tempfile.mkdtemp(prefix="sbnet-", dir="/tmp"))
    policy.sock_dir.mkdir(mode=0o700, exist_ok=True)
    policy.python = interpreter()[0]
    policy.enforced = True
    return policy


class Bridge:
    """The outside half: a Unix socket per forwarded port, relaying to 127.0.0.1:port."""

    def __init__(self, policy: NetPolicy):
        self.policy = policy
        self.servers: list[asyncio.AbstractServer] = []
        self.tasks: set[asyncio.Task] = set()

    async def start(self) -> None:
        if not self.policy.enforced or self.policy.sock_dir is None:
            return
        for port in self.policy.ports:
            path = self.policy.sock_dir / str(port)
            self.servers.append(await asyncio.start_unix_server(functools.partial(self._relay, port),
                                                                path=str(path)))

    async def _relay(self, port: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        self.tasks.add(task)
        up_writer = None
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", port)
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        except OSError:
            pass  # the service is gone: the agent sees its connection closed
        finally:
            for w in (writer, up_writer):
                if w is not None:
                    w.close()
            self.tasks.discard(task)

    async def close(self) -> None:
        for server in self.servers:
            server.close()
        for task in list(self.tasks):
            task.cancel()
        for task in list(self.tasks):
            with contextlib.suppress(BaseException):
                await task
        sock_dir = self.policy.sock_dir
        if sock_dir is not None and sock_dir.name.startswith("sbnet-"):
            shutil.rmtree(sock_dir, ignore_errors=True)


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (OSError, ConnectionError):
        pass
