"""User Python: import a user's module by name from the folder of the file that names it, and
call a user's blocking function without letting it hold up the end of the run.

Python caches modules by name: two suites in one process (the pytest plugin, a test run, a
notebook) whose folders each hold a `subjects.py` would otherwise share the first one loaded.
Here the folder wins: the folder goes first on sys.path, and a cached module of that name loaded
from elsewhere is dropped (with its submodules) when the folder provides its own."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from . import daemon_pool
from .errors import did_you_mean


def _provides(top: str, folder: str) -> bool:
    base = Path(folder)
    return (base / f"{top}.py").is_file() or (base / top).is_dir()


def _inside(path: str | None, folder: str) -> bool:
    if not path:
        return False
    real, root = os.path.realpath(path), os.path.realpath(folder)
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


#: the folders of user code this process put on sys.path, each once
_USER_FOLDERS: list[str] = []


def prefer_folders(folders: list[str]) -> list[str]:
    """Put `folders` (first wins) first on sys.path, as absolute paths (the import system keeps
    one listing per sys.path entry, and a relative one ('.') would be another folder's after a
    chdir: the listing is refreshed by mtime alone). A module an earlier user folder provided
    (a `helpers.py` that another suite's code imported) whose name one of these folders provides
    too is dropped from the cache, so `import helpers` here finds this folder's. Only modules of
    user folders are dropped, never the standard library's or an installed package's."""
    folders = [os.path.abspath(f) for f in folders]
    for folder in reversed(folders):
        if folder in sys.path:
            sys.path.remove(folder)
        sys.path.insert(0, folder)
    others = [f.rstrip(os.sep) + os.sep for f in _USER_FOLDERS if f not in folders]
    _USER_FOLDERS.extend(f for f in folders if f not in _USER_FOLDERS)
    if not others:
        return folders
    mine = tuple(f.rstrip(os.sep) + os.sep for f in folders)
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if not isinstance(file, str) or not file.startswith(tuple(others)) or file.startswith(mine):
            continue
        if any(_provides(name.split(".")[0], f) for f in folders):
            del sys.modules[name]
    importlib.invalidate_caches()
    return folders


def import_from(module_name: str, folders: list[str]) -> ModuleType:
    """`importlib.import_module(module_name)` with `folders` (first wins) searched first."""
    folders = prefer_folders(folders)
    top = module_name.split(".")[0]
    home = next((f for f in folders if _provides(top, f)), None)
    cached = sys.modules.get(top)
    if home is not None and module_name == top and (top in sys.stdlib_module_names or (
            cached is not None and not any(_inside(getattr(cached, "__file__", None), f) for f in _USER_FOLDERS))):
        return _private(top, home)
    if home is not None and cached is not None and not _inside(getattr(cached, "__file__", None), home):
        for name in [n for n in sys.modules if n == top or n.startswith(top + ".")]:
            del sys.modules[name]
        importlib.invalidate_caches()
    try:
        with printing_to_stderr():
            return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if home is None or exc.name not in (top, module_name):
            raise
        # The folder holds it, but the import system's listing of the folder is older than the
        # file (a folder listed before the file was written, within its clock's resolution)
        importlib.invalidate_caches()
        with printing_to_stderr():
            return importlib.import_module(module_name)


class NotPython(ImportError):
    """A file importlib cannot load as Python source (import_file)."""


def import_file(path: Path) -> ModuleType:
    """A user's Python file loaded as a module of its own (named after its path, so each file is
    loaded once per process), its folder first on sys.path as `python file.py` has it (a
    `helpers.py` beside it imports, this folder's and not another suite's). What the file raises
    while it runs is the caller's to word."""
    import hashlib
    import importlib.util

    name = "scoreboard_user_" + hashlib.sha256(str(path).encode()).hexdigest()[:16]
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise NotPython(f"cannot load {str(path)!r} as a Python file")
    module = importlib.util.module_from_spec(spec)
    prefer_folders([str(path.resolve().parent)])
    with printing_to_stderr():
        spec.loader.exec_module(module)
    sys.modules[name] = module
    return module


def _private(top: str, home: str) -> ModuleType:
    """The user's module `top` that has the name of one this process uses (the standard
    library's `json`, `time`, scoreboard itself): loaded from its file without taking that name
    in sys.modules. Replacing it there made scoreboard's own later `import json` get the user's
    file (a grader then failed with "module 'json' has no attribute 'dumps'"), and a user's
    `scoreboard.py` stopped the run with an internal error."""
    import importlib.util

    path = Path(home) / f"{top}.py"
    if not path.is_file():
        raise ImportError(f"{os.path.join(home, top)} has the name of a module scoreboard uses "
                          f"(loaded from {getattr(sys.modules.get(top), '__file__', None) or 'the standard library'}): "
                          "rename the package", name=None)
    spec = importlib.util.spec_from_file_location(top, path)
    module = importlib.util.module_from_spec(spec)
    with printing_to_stderr():
        spec.loader.exec_module(module)
    return module


def printing_to_stderr() -> contextlib.AbstractContextManager:
    """While a user's module is imported: what its top level prints goes to stderr, never into
    the JSON a command puts on stdout (`plan --json`, `rescore --json`, `verify --json`)."""
    return contextlib.redirect_stdout(sys.stderr)


def in_daemon_thread(fn: Any, *args: Any, **kwargs: Any) -> asyncio.Future:
    """`fn(*args, **kwargs)` in a daemon thread (daemon_pool.py), as a future of the running loop. Not
    the loop's default executor (asyncio.to_thread): a function that never returns would keep one
    of its threads, and both asyncio.run's shutdown and the interpreter's exit wait for those, so
    the run would never end. Python cannot kill a thread: one that never returns runs on until
    the process exits."""
    loop = asyncio.get_running_loop()
    future = loop.create_future()

    def settle(ok: bool, value: Any) -> None:
        if not future.done():
            (future.set_result if ok else future.set_exception)(value)

    def work() -> None:
        try:
            outcome = (True, fn(*args, **kwargs))
        except BaseException as exc:  # handed to the awaiting coroutine
            outcome = (False, exc)
        try:
            loop.call_soon_threadsafe(settle, *outcome)
        except RuntimeError:  # the loop closed meanwhile (the caller had timed out)
            pass

    daemon_pool.submit(work)
    return future


def function_like(module: Any, name: str) -> str:
    """" (did you mean 'short'?)" when the module defines a function (or other callable) whose
    name is close to `name`, the one a spec misspelt; else ""."""
    names = [k for k, v in vars(module).items() if callable(v) and not k.startswith("_")
             and getattr(v, "__module__", None) == getattr(module, "__name__", None)]
    return did_you_mean(name, names)
