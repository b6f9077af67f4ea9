"""The benchmarks measure scoreboard as installed, with its modules' bytecode compiled.

`pip install` compiles a package's bytecode at install time, and an editable checkout writes
it at its first import, unless PYTHONDONTWRITEBYTECODE is set (as it is in some sandboxes and
CI images): then every process compiles every module from source, 0.15 s of each run's start
here. `scripts/setup.sh` compiles it; this does the same for a benchmark (6 ms when it is up to
date), so a stale or missing cache is never what is measured."""

from __future__ import annotations

import compileall
import importlib.util
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[1] / "src" / "scoreboard"


def compiled() -> None:
    """Write the bytecode of every module of the scoreboard package this process will import
    (another build's tree when PYTHONPATH names it, as benchmarks/ab_builds.sh does; else this
    checkout's) that lacks it or is stale. Found without importing it."""
    spec = importlib.util.find_spec("scoreboard")
    package = Path(spec.origin).parent if spec is not None and spec.origin else CHECKOUT
    compileall.compile_dir(str(package), quiet=1)
