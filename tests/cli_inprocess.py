"""`python -m scoreboard ARGS` without the process: `scoreboard.cli.main.main(ARGS)` run in the
test's own process, in the folder and environment the subprocess would have had, its standard
output and error captured, its result as a `subprocess.CompletedProcess`.

For tests about what a command says and writes, not about the process (signals, exit on kill,
a real process's stdout): each `python -m scoreboard` spends about 0.7 s of CPU importing.
The environment is swapped for the call's (and restored), as is the working directory; the
streams are text wrappers over bytes, as a pipe is (so `.buffer` works, and `isatty()` is
false). argparse's exits (`--help`, a usage error) give their code as a process's would."""

from __future__ import annotations

import asyncio
import io
import os
import subprocess
import sys
import threading
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

_CHECKOUT = Path(__file__).resolve().parent.parent


def _stream() -> io.TextIOWrapper:
    return io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="replace", newline="", write_through=True)


def _text(stream: io.TextIOWrapper) -> str:
    stream.flush()
    data = stream.buffer.getvalue().decode("utf-8", errors="replace")
    return data.replace("\r\n", "\n")  # what text=True's universal newlines give


def run_cli(args, cwd: Path | str, env: dict | None = None) -> subprocess.CompletedProcess:
    """`subprocess.run([sys.executable, "-m", "scoreboard", *args], cwd=cwd, env=env,
    capture_output=True, text=True)`, in-process. Where this thread runs an event loop (a
    module's Playwright browser: asyncio.run cannot nest in it), in a thread of its own."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _run_cli(args, cwd, env)
    box: dict = {}

    def call() -> None:
        try:
            box["done"] = _run_cli(args, cwd, env)
        except BaseException as exc:  # handed to the caller
            box["raised"] = exc

    worker = threading.Thread(target=call, name="run_cli")
    worker.start()
    worker.join()
    if "raised" in box:
        raise box["raised"]
    return box["done"]


def _run_cli(args, cwd: Path | str, env: dict | None = None) -> subprocess.CompletedProcess:
    from scoreboard.cli.main import main

    argv = [str(a) for a in args]
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    before = dict(sys.modules)
    out, err = _stream(), _stream()
    try:
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        os.chdir(cwd)
        with redirect_stdout(out), redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as exc:  # argparse: --help, --version, a usage error
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
                if exc.code is not None and not isinstance(exc.code, int):
                    print(exc.code, file=sys.stderr)
            except KeyboardInterrupt:
                print("scoreboard: interrupted", file=sys.stderr)
                code = 130
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        _forget_user_modules(before)
    return subprocess.CompletedProcess([sys.executable, "-m", "scoreboard", *argv], code, _text(out), _text(err))


def _forget_user_modules(before: dict) -> None:
    """Drop the modules this call imported from outside the installed packages and this checkout
    (a suite's checks.py, subject, graders), as a process's end would: a test that rewrites one
    and runs again must get the new file, not the one cached here. One that replaced a module of
    the same name (another test's `subj` from another folder) is put back as it was: kept, the
    next call found its own folder's module cached, imported under another environment."""
    installed = tuple(os.path.realpath(p) for p in {sys.prefix, sys.base_prefix, str(_CHECKOUT)})
    for name, module in before.items():  # one the call dropped (replaced by nothing): back
        if name not in sys.modules and not str(getattr(module, "__file__", "") or "").startswith(installed):
            sys.modules[name] = module
    for name, module in list(sys.modules.items()):
        if before.get(name) is module:
            continue
        path = getattr(module, "__file__", None)
        if path and not os.path.realpath(path).startswith(installed):
            if name in before:
                sys.modules[name] = before[name]
            else:
                del sys.modules[name]
