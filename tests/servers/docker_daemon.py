"""A throwaway Docker daemon for the Docker-sandbox tests: `dockerd` (Debian `docker.io`) started
as root on a Unix socket in a temporary folder, with its own data and exec roots, no bridge
and no iptables rules (so it touches nothing of this machine's network), and stopped after.

    with DockerDaemon() as daemon:      # daemon.host: unix:///tmp/sbdock-.../sock
        ... DOCKER_HOST=daemon.host docker run ...

`DockerDaemon.why_not()` says why it cannot start here (no dockerd, not root), or None.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Self


def unmount_under(root: Path) -> None:
    """Unmount what dockerd left mounted under `root` (its network namespace file), deepest first."""
    with open("/proc/self/mounts", encoding="utf-8") as handle:
        points = [line.split()[1] for line in handle if line.split()[1].startswith(str(root) + "/")]
    for point in sorted(points, key=len, reverse=True):
        subprocess.run(["umount", "-l", point], capture_output=True, check=False)


class DockerDaemon:
    """dockerd on a private socket; `host` is its DOCKER_HOST."""

    def __init__(self):
        self.root = Path(tempfile.mkdtemp(prefix="sbdock-", dir="/tmp"))
        self.socket = self.root / "sock"
        self.process: subprocess.Popen | None = None

    @staticmethod
    def why_not() -> str | None:
        if shutil.which("dockerd") is None or shutil.which("docker") is None:
            return "dockerd is not installed (apt-get install docker.io)"
        if os.geteuid() != 0:
            return "dockerd needs root"
        return None

    @property
    def host(self) -> str:
        return f"unix://{self.socket}"

    def start(self) -> DockerDaemon:
        log = open(self.root / "log", "wb")  # noqa: SIM115  (closed with the process)
        self.process = subprocess.Popen(
            ["dockerd", "--data-root", str(self.root / "data"), "--exec-root", str(self.root / "exec"),
             "--pidfile", str(self.root / "pid"), "-H", self.host, "--iptables=false", "--ip6tables=false",
             "--bridge=none"],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"dockerd exited: {(self.root / 'log').read_text()[-2000:]}")
            done = subprocess.run(["docker", "-H", self.host, "version", "--format", "{{.Server.Version}}"],
                                  capture_output=True, check=False)
            if done.returncode == 0:
                return self
            time.sleep(0.3)
        self.stop()
        raise RuntimeError("dockerd did not answer within 60 s")

    def containers(self, prefix: str = "scoreboard-agent-") -> list[str]:
        """Names of the daemon's containers (running or not) starting with `prefix`."""
        done = subprocess.run(["docker", "-H", self.host, "ps", "-a", "--format", "{{.Names}}"],
                              capture_output=True, text=True, check=True)
        return [n for n in done.stdout.split() if n.startswith(prefix)]

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            for sig, wait in ((signal.SIGTERM, 20), (signal.SIGKILL, 5)):
                try:
                    os.killpg(self.process.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    self.process.wait(wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
        unmount_under(self.root)
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
