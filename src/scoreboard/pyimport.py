"""Import a user's module by name from the folder of the file that names it.

Python caches modules by name: two suites in one process (the pytest plugin, a test run, a
notebook) whose folders each hold a `subjects.py` would otherwise share the first one loaded.
Here the folder wins: the folder goes first on sys.path, and a cached module of that name loaded
from elsewhere is dropped (with its submodules) when the folder provides its own."""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from types import ModuleType


def _provides(top: str, folder: str) -> bool:
    base = Path(folder)
    return (base / f"{top}.py").is_file() or (base / top).is_dir()


def _inside(path: str | None, folder: str) -> bool:
    if not path:
        return False
    real, root = os.path.realpath(path), os.path.realpath(folder)
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


def import_from(module_name: str, folders: list[str]) -> ModuleType:
    """`importlib.import_module(module_name)` with `folders` (first wins) searched first."""
    for folder in reversed(folders):
        if folder in sys.path:
            sys.path.remove(folder)
        sys.path.insert(0, folder)
    top = module_name.split(".")[0]
    home = next((f for f in folders if _provides(top, f)), None)
    cached = sys.modules.get(top)
    if home is not None and cached is not None and not _inside(getattr(cached, "__file__", None), home):
        for name in [n for n in sys.modules if n == top or n.startswith(top + ".")]:
            del sys.modules[name]
        importlib.invalidate_caches()
    return importlib.import_module(module_name)
