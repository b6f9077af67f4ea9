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
(bool, reason), or {"passed": bool, "reason": str}.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..jsonio import loads
from .procs import run_bounded
from .spec import Check

_MODULES: dict[tuple[str, float], Any] = {}


@dataclass
class CheckContext:
    """What a Python check reads: the workspace, the fixture's address, the mode, the agent's
    final message and tool calls, the fixture's audit (None when it has none)."""

    workspace: Path
    fixture_url: str | None
    mode: str
    output: str | None
    tool_calls: list[dict] = field(default_factory=list)
    audit: dict | None = None
    env: dict[str, str] = field(default_factory=dict)
    #: the attempt's id at a shared fixture (its requests carry it in X-Scoreboard-Attempt)
    attempt_id: str | None = None


async def run_checks(checks: list[Check], folder: Path, ctx: CheckContext, files: dict[str, Path]) -> list[dict]:
    """Every check's {name, passed, reason}, in order."""
    results = []
    for check in checks:
        if check.run is not None:
            result = await _run_command(check, folder, ctx, files)
        else:
            result = await _run_python(check, folder, ctx)
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


async def _run_command(check: Check, folder: Path, ctx: CheckContext, files: dict[str, Path]) -> dict:
    argv = list(check.run or [])
    if argv and argv[0] in ("python", "python3"):
        argv[0] = sys.executable  # the interpreter scoreboard runs under: same as the user's
    try:
        ran = await run_bounded(argv, cwd=folder, env=check_env(ctx, files), timeout=check.timeout)
    except OSError as exc:
        return {"passed": None, "reason": f"could not start {argv[0]!r}: {exc.strerror or exc}"}
    if ran.timed_out:
        return {"passed": None, "reason": f"the check timed out after {check.timeout:g} s"}
    lines = [ln.strip() for ln in ran.stdout.decode("utf-8", "replace").splitlines() if ln.strip()]
    last = lines[-1] if lines else ""
    verdict: dict | None = None
    if last.startswith("{"):
        try:
            parsed = loads(last)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict) and isinstance(parsed.get("passed"), (bool, type(None))):
            verdict = parsed
    if ran.returncode not in (0, 1) and verdict is None:
        tail = ran.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
        return {"passed": None, "reason": f"the check exited with status {ran.returncode}: {tail[0][:300]}".rstrip(": ")}
    if verdict is not None:
        return {"passed": verdict["passed"], "reason": str(verdict.get("reason") or "")[:500]}
    passed = ran.returncode == 0
    return {"passed": passed, "reason": last[:500] or ("exit 0" if passed else "exit 1")}


async def _run_python(check: Check, folder: Path, ctx: CheckContext) -> dict:
    rel, _, name = (check.python or "").rpartition(":")
    try:
        function = _load_function(folder / rel, name)
    except Exception as exc:  # noqa: BLE001  (a broken check is not assessed, never a pass)
        return {"passed": None, "reason": f"could not load {check.python}: {type(exc).__name__}: {exc}"[:500]}
    try:
        value = await asyncio.wait_for(asyncio.to_thread(function, ctx), check.timeout)
    except TimeoutError:
        return {"passed": None, "reason": f"the check timed out after {check.timeout:g} s"}
    except Exception as exc:  # noqa: BLE001  (user code: its failure is the check's verdict)
        return {"passed": None, "reason": f"the check raised {type(exc).__name__}: {exc}"[:500]}
    return _verdict(value)


def _verdict(value: Any) -> dict:
    if isinstance(value, bool):
        return {"passed": value, "reason": "passed" if value else "failed"}
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], bool):
        return {"passed": value[0], "reason": str(value[1])[:500]}
    if isinstance(value, dict) and isinstance(value.get("passed"), (bool, type(None))):
        return {"passed": value["passed"], "reason": str(value.get("reason") or "")[:500]}
    return {"passed": None, "reason": f"the check returned {type(value).__name__}; return a bool, "
                                      "(bool, reason) or {passed, reason}"}


def _load_function(path: Path, name: str):
    key = (str(path), path.stat().st_mtime)
    module = _MODULES.get(key)
    if module is None:
        spec = importlib.util.spec_from_file_location(f"scoreboard_check_{abs(hash(key))}", path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot import {path}")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _MODULES[key] = module
    function = getattr(module, name, None)
    if not callable(function):
        raise TypeError(f"{path.name} has no function {name!r}")
    return function
