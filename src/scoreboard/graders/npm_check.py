"""Graders that run an npm package's own code in the Node workers (graders/node_pool.py): where
the package is found, and one call of a checker file with the verdicts a failure leaves.

A package is looked up in the node_modules folders SCOREBOARD_NODE_PATH names (separated by the
path separator; when it is set, only those), else ./node_modules of the folder scoreboard runs in,
else the global npm root (`npm root -g`). A package not found, no Node.js, a timeout, a worker
that failed or a package that cannot load leave the grade not assessed, saying why: never a
verdict. Used by `sql` (node-sql-parser) and `meteor` (natural)."""

from __future__ import annotations

import os
import subprocess
from functools import lru_cache
from pathlib import Path
from typing import Any

from .base import Grader
from .grade import Grade, cut_reason
from .javascript import call_node, node_path

ENV = "SCOREBOARD_NODE_PATH"


@lru_cache(maxsize=1)
def _global_root() -> str | None:
    """`npm root -g` (None without npm, or when it fails)."""
    import shutil

    npm = shutil.which("npm")
    if npm is None:
        return None
    try:
        done = subprocess.run([npm, "root", "-g"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    root = done.stdout.strip()
    return root if done.returncode == 0 and root else None


def search_folders() -> list[str]:
    """The node_modules folders looked in for a package, in order (see the module)."""
    named = os.environ.get(ENV)
    if named is not None:
        return [p for p in named.split(os.pathsep) if p]
    folders = [str(Path.cwd() / "node_modules")]
    root = _global_root()
    if root:
        folders.append(root)
    return folders


def find_package(package: str) -> str | None:
    """The node_modules folder that holds `package` (None when none does)."""
    for folder in search_folders():
        if (Path(folder) / package / "package.json").is_file():
            return str(Path(folder).resolve())
    return None


async def check_in_node(grader: Grader, *, package: str, install_hint: str, checker: Path, output: Any,
                        context: dict, timeout_s: float, what: str) -> dict | Grade:
    """Call `checker`'s `check(output, context)` in a Node worker with `context["module"]` the
    folder holding `package`: its result (a dict without `error`), or the not-assessed grade that
    says why there is none (`what` names the work in a timeout's words)."""
    node = node_path()
    if node is None:
        return grader.unassessed("Node.js is not installed (node is not on PATH)")
    folder = find_package(package)
    if folder is None:
        looked = ", ".join(search_folders()) or f"{ENV} names no folder"
        return grader.unassessed(f"{install_hint} (looked in: {looked})")
    job = {"file": str(checker), "function": "check", "output": output, "context": {"module": folder, **context}}
    result = await call_node(grader, node, job, timeout_s, what)
    if isinstance(result, Grade):
        return result
    if isinstance(result, dict) and "error" in result:  # the package failed to load (a broken install)
        message = str(result["error"]).removeprefix("Custom function threw error: ")
        return grader.unassessed(cut_reason(f"{package} in {folder} could not run: {message}", 500))
    return result
