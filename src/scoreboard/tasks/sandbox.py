"""Where an agent runs: bubblewrap on Linux (the workspace, a private HOME and TMPDIR writable,
the rest of the filesystem read-only, the user's home, the task folder and the working
directory hidden), or nowhere special ("not isolated", said on every attempt).

The agent CLI itself runs inside the sandbox, so the tools it runs (its shell) inherit it.
The network is cut when the agent's profile asks for loopback only and it can be enforced
(tasks/network.py: its own network namespace, the fixture and a loopback model forwarded in);
otherwise it is open, and every attempt's record says which.
"""

from __future__ import annotations

import functools
import os
import pwd
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from .network import NetPolicy

#: the sandbox programs scoreboard knows, in the order it tries them
BWRAP = "bwrap"
INSTALL_HINT = "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap)"


@functools.lru_cache(maxsize=1)
def bwrap_path() -> str | None:
    """The bwrap program when it works here (it needs user namespaces or root), else None."""
    path = shutil.which(BWRAP)
    if path is None:
        return None
    try:
        probe = subprocess.run([path, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                                "--unshare-pid", "--die-with-parent", "true"],
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               timeout=20, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return path if probe.returncode == 0 else None


def real_homes() -> list[Path]:
    """The user's home folders: $HOME and the password database's entry."""
    found: list[Path] = []
    for value in (os.environ.get("HOME"), _pw_home()):
        if value and os.path.isdir(value):
            path = Path(os.path.realpath(value))
            if path != Path("/") and path not in found:
                found.append(path)
    return found


def _pw_home() -> str | None:
    try:
        return pwd.getpwuid(os.getuid()).pw_dir
    except (KeyError, OSError):
        return None


@dataclass
class Sandbox:
    """How one attempt's agent is wrapped. `kind` is "bwrap" or "none"."""

    kind: str
    root: Path
    workspace: Path
    home: Path
    tmp: Path
    hidden: list[Path] = field(default_factory=list)
    #: read-only paths shown again inside a hidden one (the agent's own program)
    reveal: list[Path] = field(default_factory=list)
    program: str | None = None
    #: the attempt's network policy (tasks/network.py); None: open, no profile asked
    net: NetPolicy | None = None

    @property
    def isolated(self) -> bool:
        return self.kind != "none"

    def describe(self) -> dict:
        """What the report says about where the agent ran."""
        net = (self.net or NetPolicy(None)).describe()
        if not self.isolated:
            return {"isolated": False, "kind": "none",
                    "note": "not isolated: the agent ran with the user's permissions (no sandbox available)", **net}
        return {"isolated": True, "kind": self.kind,
                "writable": ["workspace", "private HOME", "private TMPDIR"],
                "hidden": [str(p) for p in self.hidden], **net}

    def env(self) -> dict[str, str]:
        """Variables every agent gets in the sandbox (its private HOME and TMPDIR)."""
        if not self.isolated:
            return {}
        return {"HOME": str(self.home), "TMPDIR": str(self.tmp), "XDG_CONFIG_HOME": str(self.home / ".config"),
                "XDG_CACHE_HOME": str(self.home / ".cache")}

    def wrap(self, argv: list[str], env: dict[str, str] | None = None) -> list[str]:
        """`argv` run inside the sandbox (unchanged when not isolated). The cwd is the workspace."""
        if not self.isolated:
            return list(argv)
        args = [self.program or BWRAP, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                "--tmpfs", "/tmp", "--tmpfs", "/var/tmp", "--tmpfs", "/dev/shm"]
        for path in self.hidden:
            if not _covers(path, self.root):
                args += ["--tmpfs", str(path)]
        for path in self.reveal:
            args += ["--ro-bind", str(path), str(path)]
        for path in (self.workspace, self.home, self.tmp):
            args += ["--bind", str(path), str(path)]
        net_args, argv = self.net.wrap(list(argv)) if self.net is not None else ([], list(argv))
        args += net_args
        args += ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent",
                 "--chdir", str(self.workspace), "--"]
        return args + list(argv)


def _covers(outer: Path, inner: Path) -> bool:
    try:
        inner.relative_to(outer)
        return True
    except ValueError:
        return False


def make_sandbox(root: Path, workspace: Path, *, want: str, hide: list[Path], programs: list[str]) -> Sandbox:
    """The sandbox for one attempt. `want`: "required" (no sandbox is an error), "preferred"
    (none available: not isolated), "off". `hide`: folders the agent must not read beside the
    user's homes (the task folder, the working directory). `programs`: the agent's executables,
    shown read-only again when a hidden folder holds them."""
    home, tmp = root / "home", root / "tmp"
    home.mkdir(mode=0o700, exist_ok=True)
    tmp.mkdir(mode=0o700, exist_ok=True)
    program = bwrap_path() if want != "off" else None
    if program is None:
        if want == "required":
            raise SandboxUnavailable(f"the task requires a sandbox and none works here: {INSTALL_HINT}")
        return Sandbox("none", root, workspace, home, tmp)
    hidden: list[Path] = []
    for path in real_homes() + [Path(os.path.realpath(p)) for p in hide]:
        if path.is_dir() and path not in hidden and not _covers(path, root) and path != Path("/"):
            hidden.append(path)
    reveal: list[Path] = []
    masked = hidden + [Path("/tmp"), Path("/var/tmp"), Path("/dev/shm")]
    for program_path in programs:
        real = Path(os.path.realpath(program_path))
        if any(_covers(h, real) for h in masked):
            top = _install_root(real)
            if top not in reveal and not any(_covers(top, h) for h in hidden):
                reveal.append(top)
    return Sandbox(BWRAP, root, workspace, home, tmp, hidden, reveal, program)


def _install_root(program: Path) -> Path:
    """What to show for an agent's program: its node_modules' parent (npm installs need their
    sibling packages), else the program file alone."""
    for parent in program.parents:
        if parent.name == "node_modules":
            return parent.parent
    return program


class SandboxUnavailable(Exception):
    """A task that requires isolation where no sandbox works."""
