"""Small helpers of the agent CLI subjects: the per-call temporary folder, reading the CLI's
JSON result, and the message of a failed start."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from ..errors import SubjectError
from ..jsonio import loads
from ..reaper import unwatch_folder, watch_folder

#: the folder (under the working directory) that holds each CLI call's throwaway directory
TMP_ROOT = ".scoreboard-tmp"


def last_json(stdout: str) -> Any:
    text = stdout.strip()
    try:
        return loads(text)
    except ValueError:
        pass
    for line in reversed(text.splitlines()):
        if line.startswith("{"):
            try:
                return loads(line)
            except ValueError:
                continue
    return None


def make_root(kind: str) -> Path:
    base = Path.cwd() / TMP_ROOT
    for _ in range(3):  # a sibling call may remove the (empty) parent between the two steps
        base.mkdir(mode=0o700, exist_ok=True)
        try:
            root = Path(tempfile.mkdtemp(prefix=f"{kind}-", dir=base))
            watch_folder(root)  # an agent CLI's home (its config, its session files): removed if we are killed
            return root
        except FileNotFoundError:
            continue
    raise SubjectError(f"{kind}: could not create a temporary directory under {base}", kind="config")


def remove_root(root: Path) -> None:
    shutil.rmtree(root, ignore_errors=True)
    if root.exists():  # a dying child may still have been writing: once more
        shutil.rmtree(root, ignore_errors=True)
    if not os.path.lexists(root):
        unwatch_folder(root)
    try:
        root.parent.rmdir()  # only when no other call is using it
    except OSError:
        pass


def spawn_error(exc: OSError, binary: str) -> str:
    if getattr(exc, "errno", None) == 7:  # E2BIG
        return "the prompt or skill is too long to pass on the command line"
    return f"could not start {binary}: {exc.strerror or type(exc).__name__}"
