"""A throwaway PostgreSQL server for the tests: Debian's `postgresql` binaries (initdb,
pg_ctl) on a temporary folder and a free loopback port, run as an unprivileged user when the
tests run as root (PostgreSQL refuses root). Nothing but 127.0.0.1 is listened on."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path
from typing import Self


def pg_bin() -> Path | None:
    """The folder holding initdb and pg_ctl (PATH first, then Debian's versioned folders)."""
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return Path(os.path.realpath(found)).parent
    for folder in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if os.access(os.path.join(folder, "initdb"), os.X_OK):
            return Path(folder)
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Postgres:
    """initdb + pg_ctl start on enter, pg_ctl stop and remove on exit; `url(db)` to connect."""

    def __init__(self):
        self.bin = pg_bin()
        self.root = Path(tempfile.mkdtemp(prefix="scoreboard-pg-"))
        self.port = free_port()
        self.user = None
        if os.geteuid() == 0:
            for name in ("postgres", "nobody"):
                try:
                    self.user = pwd.getpwnam(name)
                    break
                except KeyError:
                    continue

    def _run(self, *args: str) -> subprocess.CompletedProcess:
        kwargs = {}
        if self.user is not None:
            kwargs = {"user": self.user.pw_uid, "group": self.user.pw_gid, "extra_groups": []}
        return subprocess.run([str(self.bin / args[0]), *args[1:]], capture_output=True, text=True, timeout=120,
                              cwd=self.root, env={"PATH": os.environ.get("PATH", ""), "LC_ALL": "C.UTF-8"},
                              check=False, **kwargs)

    def __enter__(self) -> Self:
        os.chmod(self.root, 0o700)
        if self.user is not None:
            os.chown(self.root, self.user.pw_uid, self.user.pw_gid)
        data = self.root / "data"
        done = self._run("initdb", "-D", str(data), "-U", "scoreboard", "--auth=trust", "-E", "UTF8", "--no-sync")
        if done.returncode:
            raise RuntimeError(f"initdb failed: {done.stderr or done.stdout}")
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=60"
        done = self._run("pg_ctl", "-D", str(data), "-o", options, "-l", str(self.root / "log"), "-w", "-t", "60",
                         "start")
        if done.returncode:
            log = (self.root / "log").read_text(errors="replace") if (self.root / "log").exists() else ""
            raise RuntimeError(f"pg_ctl start failed: {done.stderr or done.stdout} {log[-2000:]}")
        return self

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://scoreboard@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def __exit__(self, *exc) -> None:
        self._run("pg_ctl", "-D", str(self.root / "data"), "-m", "fast", "-w", "stop")
        shutil.rmtree(self.root, ignore_errors=True)
