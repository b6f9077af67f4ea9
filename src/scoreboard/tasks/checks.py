"""Checks run after the agent finished: they read the workspace and query the fixture's state
themselves, whatever the agent claimed. Each gives {name, passed, reason}; passed None means
the check could not say (it crashed or timed out), never a pass.

A command check (`run:`) runs in the task folder with SCOREBOARD_WORKSPACE,
SCOREBOARD_FIXTURE_URL, SCOREBOARD_MODE, SCOREBOARD_OUTPUT_FILE (the agent's final message) and
SCOREBOARD_AUDIT_FILE (the fixture's audit as JSON) in its environment (and, at a shared
fixture, SCOREBOARD_ATTEMPT_ID; its SCOREBOARD_FIXTURE_URL is the attempt's proxy, which adds
the attempt's header). Exit 0 passes, exit 1
fails, anything else is not assessed; the reason is the last line it printed, or the "reason"
of a JSON object {"passed", "reason"} on that line (whose "passed" then decides).

A Python check (`python: checks/x.py:fn`) is called with a CheckContext; it returns a bool,
(bool, reason), or {"passed": bool, "reason": str}. It runs in a child process of its own, in
the task folder with the same environment, under its timeout (tasks/check_context.py): one
that hangs, exits or is interrupted is not assessed and never stops the run.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

from ..jsonio import loads
from .check_context import REASON_CHARS, CheckContext, verdict
from .gitguard import git_env, overrides
from .procs import run_bounded
from .spec import Check

__all__ = ["CheckContext", "check_env", "run_checks"]

#: the most bytes of a Python check's verdict file that are read
MAX_VERDICT_BYTES = 64 << 10
#: what the child process of a Python check runs (tasks/check_context.py)
_CHILD = ("import sys; sys.path[0] = {root!r}\n"
          "from scoreboard.tasks.check_context import child_main; child_main(sys.argv[1:])")


async def run_checks(checks: list[Check], folder: Path, ctx: CheckContext, files: dict[str, Path]) -> list[dict]:
    """Every check's {name, passed, reason}, in order. Their environment overrides the git
    settings that would run a command the agent chose (tasks/gitguard.py)."""
    results = []
    env = check_env(ctx, files)
    if checks:
        git_env(env, await asyncio.to_thread(overrides, ctx.workspace))
    for check in checks:
        if check.run is not None:
            result = await _run_command(check, folder, env)
        else:
            result = await _run_python(check, folder, ctx, files, env)
        results.append({"name": check.name, **result})
    return results


def check_env(ctx: CheckContext, files: dict[str, Path]) -> dict[str, str]:
    env = dict(os.environ)
    env.update(ctx.env)
    env.update({"SCOREBOARD_WORKSPACE": str(ctx.workspace), "SCOREBOARD_MODE": ctx.mode,
                "SCOREBOARD_OUTPUT_FILE": str(files["output"]), "SCOREBOARD_AUDIT_FILE": str(files["audit"])})
    if ctx.fixture_url:
        env["SCOREBOARD_FIXTURE_URL"] = ctx.fixture_url
    if ctx.attempt_id:
        env["SCOREBOARD_ATTEMPT_ID"] = ctx.attempt_id
    return env


async def _run_command(check: Check, folder: Path, env: dict[str, str]) -> dict:
    argv = list(check.run or [])
    if argv and argv[0] in ("python", "python3"):
        argv[0] = sys.executable  # the interpreter scoreboard runs under: same as the user's
    try:
        ran = await run_bounded(argv, cwd=folder, env=env, timeout=check.timeout)
    except OSError as exc:
        return {"passed": None, "reason": f"could not start {argv[0]!r}: {exc.strerror or exc}"}
    if ran.timed_out:
        return {"passed": None, "reason": f"the check timed out after {check.timeout:g} s"}
    lines = [ln.strip() for ln in ran.stdout.decode("utf-8", "replace").splitlines() if ln.strip()]
    last = lines[-1] if lines else ""
    said: dict | None = None
    if last.startswith("{"):
        try:
            parsed = loads(last)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict) and isinstance(parsed.get("passed"), (bool, type(None))):
            said = parsed
    if ran.returncode not in (0, 1) and said is None:
        tail = ran.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
        return {"passed": None, "reason": f"the check {_ended(ran.returncode)}: {tail[0][:300]}".rstrip(": ")}
    if said is not None:
        return verdict(said)
    passed = ran.returncode == 0
    return {"passed": passed, "reason": last[:REASON_CHARS] or ("exit 0" if passed else "exit 1")}


def _ended(returncode: int | None) -> str:
    """How a check's process ended, in words: a signal by its name, not a negative status."""
    if returncode is not None and returncode < 0:
        try:
            return f"was killed by signal {signal.Signals(-returncode).name} ({-returncode})"
        except ValueError:
            return f"was killed by signal {-returncode}"
    return f"exited with status {returncode}"


def _read_verdict(path: Path) -> object:
    """What the check's child wrote (None when nothing usable)."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_VERDICT_BYTES + 1)
        return loads(raw) if len(raw) <= MAX_VERDICT_BYTES else None
    except (OSError, ValueError):
        return None


async def _run_python(check: Check, folder: Path, ctx: CheckContext, files: dict[str, Path],
                      env: dict[str, str]) -> dict:
    """A Python check runs in a child process of its own (tasks/check_context.py), in the task
    folder, killed with its whole group at its timeout: a check that hangs, exits the
    interpreter or is interrupted is not assessed, and the run goes on."""
    work = files["output"].parent
    tag = f"check-{os.getpid()}-{id(ctx):x}-{check.name}"
    ctx_file, result_file = work / f"{tag}.context.json", work / f"{tag}.verdict.json"
    ctx_file.write_text(ctx.to_json(), encoding="utf-8")
    result_file.unlink(missing_ok=True)
    root = str(Path(__file__).resolve().parents[2])  # the folder holding the scoreboard package
    argv = [sys.executable, "-c", _CHILD.format(root=root), str(ctx_file), str(result_file), check.python or ""]
    try:
        try:
            ran = await run_bounded(argv, cwd=folder, env=env, timeout=check.timeout)
        except OSError as exc:
            return {"passed": None, "reason": f"could not start Python for {check.python}: {exc.strerror or exc}"}
        if ran.timed_out:
            return {"passed": None, "reason": f"the check timed out after {check.timeout:g} s"}
        value = _read_verdict(result_file)
        if not isinstance(value, dict) or "passed" not in value:
            tail = ran.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
            return {"passed": None, "reason": f"the check {_ended(ran.returncode)} without a verdict: "
                                              f"{tail[0][:300]}".rstrip(": ")}
        return verdict(value)
    finally:
        ctx_file.unlink(missing_ok=True)
        result_file.unlink(missing_ok=True)
