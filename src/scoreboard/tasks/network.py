"""The "loopback only" network policy, enforced: the agent runs in its own network namespace
(`bwrap --unshare-net`: no interface but its own loopback, so no other address, and no port of
this machine's loopback, can be reached), and the few loopback services it needs are forwarded
into it:

    agent -> 127.0.0.1:PORT (inside)  -- forwarder inside the sandbox (INSIDE, stdlib Python)
          -> Unix socket DIR/PORT      -- a folder bind-mounted read-only into the sandbox
          -> 127.0.0.1:PORT (outside)  -- Bridge, in scoreboard's event loop

The ports forwarded are the task's fixture (or the attempt's proxy of a shared one), the
agent's model endpoint when it is on loopback (127.0.0.1, localhost, ::1), and each loopback
host:port the profile or the task allows (a local database or service: the proxy could not
serve it, as NO_PROXY sends those addresses direct). Inside, the same port numbers answer, so
the URLs the agent was given work unchanged.

Everything else goes through the egress allowlist (tasks/egress.py): one more forwarded port,
whose Unix socket is served by scoreboard's allowlisting HTTP proxy, named to the agent in
HTTPS_PROXY / HTTP_PROXY / ALL_PROXY (NO_PROXY: the forwarded loopback addresses). It admits
the model endpoint's host:port when the model is not on loopback (a real provider) and the
hosts the profile or the task allows (`network: {allow: [host:port]}`), refuses the rest with
403, and records every try.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from ..subjects.agent_profile import split_host_port
from .egress import EgressProxy, join_host_port, pipe

ENFORCED = "loopback (enforced)"
ALLOWLIST = "loopback + allowlist (enforced)"
OPEN = "open (not enforced)"
#: what the agent is told to bypass the proxy for (the forwarded loopback services)
NO_PROXY = "127.0.0.1,localhost,::1"
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
    #: port -> what it serves ("fixture", "model", "egress proxy")
    ports: dict[int, str] = field(default_factory=dict)
    python: str = ""
    #: "host:port" -> why it is allowed through the egress proxy ("model", "profile", "task")
    egress: dict[str, str] = field(default_factory=dict)
    #: the port the egress proxy answers on inside (chosen when the bridge starts)
    proxy_port: int | None = None

    def describe(self) -> dict:
        out: dict = {"network": (ALLOWLIST if self.egress else ENFORCED) if self.enforced else OPEN}
        if self.enforced:
            out["reachable"] = [f"127.0.0.1:{p} ({what})" for p, what in sorted(self.ports.items())]
            out["egress_allowed"] = [f"{h} ({why})" for h, why in sorted(self.egress.items())]
        elif self.wanted == "loopback":
            out["network_note"] = f"the profile asks for loopback only, not enforced: {self.reason}"
        elif self.wanted == "all":
            out["network_note"] = "the profile allows every address (network: all)"
        else:
            out["network_note"] = self.reason or "the agent's subject sets no network policy"
        return out

    def env(self) -> dict[str, str]:
        """The proxy variables of an enforced policy (both spellings: curl reads only the lower-case
        http_proxy), so proxy-aware programs go out through the allowlist."""
        if not self.enforced or self.proxy_port is None:
            return {}
        url = f"http://127.0.0.1:{self.proxy_port}"
        out = {}
        for name in ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY"):
            out[name] = out[name.lower()] = url
        out["NO_PROXY"] = out["no_proxy"] = NO_PROXY
        return out

    def wrap(self, argv: list[str]) -> list[str]:
        """The argv run inside: the forwarder first when the policy is enforced (the sandbox
        cuts the network and shows the socket folder read-only)."""
        if not self.enforced or self.sock_dir is None:
            return list(argv)
        ports = ",".join(str(p) for p in sorted(self.ports))
        return [self.python, "-I", "-c", INSIDE, str(self.sock_dir), ports, "--", *argv]


def plan(wanted: str | None, program: str | None, endpoints: list[str] | None, root: Path,
         allow: dict[str, str] | None = None, kind: str = "bwrap") -> NetPolicy:
    """The attempt's policy. `endpoints`: the URLs the agent's own program must reach (its
    model); a loopback one is forwarded, any other is allowed through the egress proxy.
    `allow`: more "host:port"s the egress proxy admits -> who allowed them ("profile", "task")."""
    policy = NetPolicy(wanted)
    if wanted != "loopback":
        return policy
    if program is None:  # the sandbox's program (bwrap, or docker with kind "docker")
        policy.reason = "no sandbox (bubblewrap) works here"
        return policy
    if kind == "bwrap" and not netns_works(program):
        policy.reason = "bubblewrap cannot make a network namespace here (--unshare-net failed)"
        return policy
    for url in endpoints or []:
        port = loopback_port(url)
        if port is not None:
            policy.ports[port] = "model"
            continue
        target = remote_target(url)
        if target is None:
            policy.reason = f"the agent's model endpoint {url!r} names no host the egress proxy could admit"
            return policy
        policy.egress.setdefault(target, "model")
    for target, why in (allow or {}).items():
        port = _loopback_target(target)
        if port is not None:  # a service of this machine's: forwarded in, as the fixture is
            policy.ports.setdefault(port, why)  # (the proxy could not reach it: NO_PROXY sends it direct)
        else:
            policy.egress.setdefault(target, why)
    policy.sock_dir = root / "net"
    if len(str(policy.sock_dir)) > _MAX_SOCKET_DIR:
        policy.sock_dir = Path(tempfile.mkdtemp(prefix="sbnet-", dir="/tmp"))
    policy.sock_dir.mkdir(mode=0o700, exist_ok=True)
    policy.python = interpreter()[0]
    policy.enforced = True
    return policy


def _loopback_target(target: str) -> int | None:
    """The port of an allowlist entry ("host:port") whose host is this machine's loopback."""
    try:
        host, port = split_host_port(target)
    except ValueError:
        return None
    return port if host in LOOPBACK_HOSTS else None  # (127.0.0.2 and the like go through the proxy)


def remote_target(url: str) -> str | None:
    """"host:port" of a URL (the scheme's port when it names none), None when it has no host."""
    try:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80 if parts.scheme == "http" else None)
    except ValueError:
        return None
    if not parts.hostname or port is None:
        return None
    return join_host_port(parts.hostname.lower().rstrip("."), port)


class Bridge:
    """The outside half: a Unix socket per forwarded port, relaying to 127.0.0.1:port, and the
    egress proxy's socket (served by the proxy itself, so it has no port on this machine)."""

    def __init__(self, policy: NetPolicy):
        self.policy = policy
        self.servers: list[asyncio.AbstractServer] = []
        self.tasks: set[asyncio.Task] = set()
        self.egress: EgressProxy | None = None

    async def start(self) -> None:
        """Serve the forwarded ports and start the egress proxy (call after every port is known)."""
        if not self.policy.enforced or self.policy.sock_dir is None:
            return
        for port in list(self.policy.ports):
            path = self.policy.sock_dir / str(port)
            self.servers.append(await asyncio.start_unix_server(functools.partial(self._relay, port),
                                                                path=str(path)))
        # Inside the namespace only the forwarded ports are taken, so any other number will do.
        port = 20000 + secrets.randbelow(40000)
        while port in self.policy.ports:
            port = 20000 + secrets.randbelow(40000)
        self.egress = EgressProxy(dict(self.policy.egress))
        await self.egress.start_unix(str(self.policy.sock_dir / str(port)))
        self.policy.proxy_port = port
        self.policy.ports[port] = "egress proxy"

    async def _relay(self, port: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        self.tasks.add(task)
        up_writer = None
        try:
            try:
                up_reader, up_writer = await asyncio.open_connection("127.0.0.1", port)
            except OSError:  # an allowed [::1]:PORT service that listens on IPv6 alone
                up_reader, up_writer = await asyncio.open_connection("::1", port)
            await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
        except OSError:
            pass  # the service is gone: the agent sees its connection closed
        finally:
            for w in (writer, up_writer):
                if w is not None:
                    w.close()
            self.tasks.discard(task)

    async def close(self) -> None:
        if self.egress is not None:
            await self.egress.close()
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
