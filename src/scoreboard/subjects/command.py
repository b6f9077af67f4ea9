"""`command` subject: any executable. The input goes in an `{input}` argument or on stdin;
stdout is the output; a nonzero exit is an execution error; a timeout kills the whole
process group. stderr is not persisted (unless `keep_stderr`), so arbitrary diagnostics
never land in reports."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import tempfile
from pathlib import Path

from ..errors import ConfigError, SubjectError
from .base import Subject, check_keys
from .values import Output, Result, SubjectRequest


class CommandSubject(Subject):
    kind = "command"

    def parse(self, spec: dict) -> dict:
        check_keys(spec, {"argv", "env", "cwd", "keep_stderr"}, self.kind)
        argv = spec.get("argv")
        if isinstance(argv, str):
            import shlex

            argv = shlex.split(argv)
        if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
            raise ConfigError("command subject needs 'argv': a nonempty list of strings", field="subject.argv")
        env = spec.get("env", {})
        if not isinstance(env, dict):
            raise ConfigError("command subject: 'env' must be a mapping", field="subject.env")
        return {**{k: v for k, v in spec.items() if k != "type"}, "argv": argv}

    def check(self) -> None:
        """A missing or non-executable program fails before anything runs."""
        import shutil

        program = self.options["argv"][0]
        if "{" in program:
            return  # a placeholder in the program itself is only known per attempt
        cwd = self.base_dir / self.options["cwd"] if self.options.get("cwd") else None
        if os.sep in program:
            path = Path(program) if os.path.isabs(program) else (cwd or Path.cwd()) / program
            if not path.exists():
                raise ConfigError(f"command subject: {program!r} not found", field="subject.argv")
            if not os.access(path, os.X_OK):
                raise ConfigError(f"command subject: {program!r} is not executable", field="subject.argv")
        elif shutil.which(program) is None:
            raise ConfigError(f"command subject: {program!r} not found on PATH", field="subject.argv")

    async def run(self, request: SubjectRequest) -> Result:
        text = request.input if isinstance(request.input, str) else json.dumps(request.input, ensure_ascii=False)
        skill_file = None
        try:
            argv = self.options["argv"]
            env = dict(os.environ)
            env.update({k: str(v) for k, v in self.options.get("env", {}).items()})
            env["SCOREBOARD_RUN"] = str(request.run)
            env["SCOREBOARD_CASE_ID"] = request.case_id
            if request.skill is not None:
                fd, skill_file = tempfile.mkstemp(prefix="scoreboard-skill-", suffix=".md")
                with os.fdopen(fd, "w", encoding="utf-8") as handle:
                    handle.write(request.skill)
                env["SCOREBOARD_SKILL_FILE"] = skill_file
            uses_placeholder = any("{input}" in a for a in argv)
            final = [a.replace("{input}", text).replace("{skill_file}", skill_file or "")
                     .replace("{run}", str(request.run)) for a in argv]
            cwd = self.options.get("cwd")
            try:
                proc = await asyncio.create_subprocess_exec(
                    *final, stdin=asyncio.subprocess.DEVNULL if uses_placeholder else asyncio.subprocess.PIPE,
                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env,
                    cwd=str(self.base_dir / cwd) if cwd else None, start_new_session=True)
            except FileNotFoundError:
                raise SubjectError(f"command not found: {final[0]}") from None
            except PermissionError:
                raise SubjectError(f"command is not executable: {final[0]}") from None
            try:
                stdout, stderr = await proc.communicate(None if uses_placeholder else text.encode("utf-8"))
            except BaseException:
                # Timeout or cancellation: the whole group goes, not just the direct child.
                _kill_group(proc)
                await proc.wait()
                raise
            if proc.returncode != 0:
                detail = ""
                if self.options.get("keep_stderr") and stderr:
                    detail = ": " + stderr.decode("utf-8", "replace").strip()[-300:]
                raise SubjectError(f"command exited with status {proc.returncode}{detail}")
            return Result(Output(text=stdout.decode("utf-8", "replace")))
        finally:
            if skill_file:
                os.unlink(skill_file)


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
