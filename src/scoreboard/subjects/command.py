"""`command` subject: any executable. The input goes in an `{input}` argument or on stdin
(`{vars}` is the case's vars as JSON, `{run}`, `{seed}`, `{skill_file}` likewise); stdout is the
output (`trim: true`: JavaScript's `String.prototype.trim`, then ANSI escape sequences removed,
as promptfoo's exec provider reads it); a nonzero exit is an execution error; a timeout kills the whole
process group. The program runs in the folder of the suite file that names it (the working
directory for --subject), so `./v1.sh` there means the suite's own script. stdout is read up to `max_response_bytes` (past it the group is killed and the
attempt is an error naming the limit). stderr is not persisted (unless `keep_stderr`: its tail),
so arbitrary diagnostics never land in reports."""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path

from ..errors import ConfigError, SubjectError
from ..jsonio import loads as loads_json
from ..redact import ENV_REF, PROVIDER_KEY_VARS, SENSITIVE_NAME, inherited_secrets, scrub_all
from ..templating.js import ANSI_ESCAPE, js_trim
from ._bounded import exit_words, run_process
from .agent_profile import parse_network
from .base import Subject, check_keys, to_result, too_large
from .values import Output, Result, SubjectRequest

_PLACEHOLDER = re.compile(r"\{(input|skill_file|run|seed|vars)\}")
#: what an attempt says of a program that left a process running (a daemon it forked): it was
#: killed once the program ended, which the attempt did not say (subject_info.left_running)
_LEFT = "it left a process running when it ended, which was killed"
#: how long stdout is read after the program exited, while a child it left holds it open
_PIPE_GRACE_S = 2.0


class CommandSubject(Subject):
    kind = "command"
    takes_params = False
    params_hint = "put the value in the command's arguments or env"
    #: runs in an agent task's workspace and sandbox (any command-line agent)
    agent_workspace = True

    def parse(self, spec: dict) -> dict:
        check_keys(spec, {"argv", "env", "cwd", "keep_stderr", "model_free", "network", "trim"}, self.kind)
        parse_network(spec.get("network", "all"), "subject.network", "command subject: 'network'")
        if not isinstance(spec.get("trim", False), bool):
            raise ConfigError("command subject: 'trim' must be true or false", field="subject.trim")
        if not isinstance(spec.get("model_free", False), bool):
            raise ConfigError("command subject: 'model_free' must be true or false", field="subject.model_free")
        argv = spec.get("argv")
        if isinstance(argv, str):
            import shlex

            argv = shlex.split(argv)
        if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
            raise ConfigError("command subject needs 'argv': a nonempty list of strings", field="subject.argv")
        env = spec.get("env", {})
        if not isinstance(env, dict):
            raise ConfigError("command subject: 'env' must be a mapping", field="subject.env")
        for name, value in env.items():
            if isinstance(value, bool) or not isinstance(value, (str, int)):
                # the program got Python's spelling: `true` as "True", an empty value as "None"
                shown = "an empty value" if value is None else \
                    f"a {type(value).__name__} ({json.dumps(value, default=repr)})"
                raise ConfigError(f"command subject: env.{name} is {shown}; an environment variable is text: "
                                  "quote it (\"true\", \"1.50\", \"\")", field=f"subject.env.{name}")
        fields = [(f"env.{k}", f"{k}{v}") for k, v in env.items()] + [(f"argv[{i}]", a) for i, a in enumerate(argv)]
        for field, value in fields:
            if "\0" in value:
                raise ConfigError(f"command subject: {field} holds a NUL byte (no program argument or "
                                  "environment variable can)", field=f"subject.{field}")
        return {**{k: v for k, v in spec.items() if k != "type"}, "argv": argv}

    def check(self) -> None:
        """A missing or non-executable program fails before anything runs."""
        import shutil

        program = self.options["argv"][0]
        if "{" in program:
            return  # a placeholder in the program itself is only known per attempt
        cwd = self.workdir()
        if os.sep in program:
            path = Path(program) if os.path.isabs(program) else cwd / program
            where = "" if os.path.isabs(program) else f" in {os.path.abspath(cwd)}"
            if not path.exists():
                raise ConfigError(f"command subject: {program!r} not found{where} (a command's paths are "
                                  "relative to the folder of the suite file that names it, or to the current "
                                  "directory for --subject)", field="subject.argv")
            if not os.access(path, os.X_OK):
                raise ConfigError(f"command subject: {program!r}{where} is not executable (chmod +x, or "
                                  f"name its interpreter first, e.g. 'bash {program}')", field="subject.argv")
        elif shutil.which(program) is None:
            raise ConfigError(f"command subject: {program!r} not found on PATH", field="subject.argv")
        for name, value in self.options.get("env", {}).items():
            unset = [n for n in ENV_REF.findall(str(value)) if n not in os.environ]
            if unset:
                raise ConfigError(f"command subject: environment variable {unset[0]} used in env.{name} is not set",
                                  field=f"subject.env.{name}")

    def workdir(self) -> Path:
        """Where the program runs, and what its relative paths mean: the folder of the suite
        file that names it (the working directory for --subject), or `cwd` under it."""
        cwd = self.options.get("cwd")
        return self.base_dir / cwd if cwd else self.base_dir

    @property
    def agent_network(self) -> str:
        """An agent task's network policy: `network: loopback` reaches only the task's fixture
        (and, with {allow: [host:port]}, those hosts through the egress proxy)."""
        return parse_network(self.options.get("network", "all"), "subject.network", "command subject")[0]

    def agent_allow(self) -> list[str]:
        """The hosts the egress proxy admits for this agent (`network: {allow: [...]}`)."""
        return parse_network(self.options.get("network", "all"), "subject.network", "command subject")[1] or []

    def agent_programs(self) -> list[str]:
        """The files named in argv (the program, a script): an agent task runs them from its
        workspace, so they are passed as absolute paths and shown read-only in the sandbox."""
        return [str(p) for p in (self._file_arg(a) for a in self.options["argv"]) if p is not None]

    def _file_arg(self, arg: str) -> Path | None:
        if "{" in arg or arg.startswith("-") or (os.sep not in arg and not arg.endswith((".py", ".sh", ".js"))):
            return None
        path = Path(arg) if os.path.isabs(arg) else self.workdir() / arg
        return Path(os.path.realpath(path)) if path.is_file() else None

    def secrets(self) -> set[str]:
        """Secret-looking `env` values (expanded; or naming a secret-looking variable), and the
        credentials the child inherits (provider keys and every variable so named)."""
        found = {_expanded(v) for k, v in self.options.get("env", {}).items()
                 if SENSITIVE_NAME.search(k) or any(SENSITIVE_NAME.search(n) for n in ENV_REF.findall(str(v)))}
        return found | inherited_secrets() | {os.environ[n] for n in PROVIDER_KEY_VARS if os.environ.get(n)}

    def child_env(self) -> dict[str, str]:
        """The environment the program gets: scoreboard's, with `env` on top (${VAR} read now)."""
        return {**os.environ, **{k: _expanded(v) for k, v in self.options.get("env", {}).items()}}

    async def run(self, request: SubjectRequest) -> Result:
        text = request.input if isinstance(request.input, str) else json.dumps(request.input, ensure_ascii=False)
        skill_file = None
        try:
            argv = self.options["argv"]
            env = self.child_env()
            env["SCOREBOARD_RUN"] = str(request.run)
            env["SCOREBOARD_CASE_ID"] = request.case_id
            seed = "" if request.seed is None else str(request.seed)
            if request.seed is not None:
                env["SCOREBOARD_SEED"] = seed
            ws = request.workspace
            installed = ws.env.get("SCOREBOARD_SKILL_FILE") if ws is not None else None
            if installed:  # an agent task installed the skill in its workspace
                env["SCOREBOARD_SKILL_FILE"] = installed
            elif request.skill is not None:
                # in a task's sandbox only its private TMPDIR is readable beside the workspace
                fd, skill_file = tempfile.mkstemp(prefix="scoreboard-skill-", suffix=".md",
                                                  dir=ws.env.get("TMPDIR") if ws is not None else None)
                with os.fdopen(fd, "w", encoding="utf-8") as handle:
                    handle.write(request.skill)
                env["SCOREBOARD_SKILL_FILE"] = skill_file
            uses_placeholder = any("{input}" in a for a in argv)
            if uses_placeholder and "\0" in text:
                raise SubjectError("command: the input holds a NUL byte, which no program argument can carry "
                                   "(not run; an argv without {input} passes the input on stdin)", kind="input")
            values = {"input": text, "skill_file": installed or skill_file or "", "run": str(request.run),
                      "seed": seed, "vars": json.dumps(request.vars or {}, ensure_ascii=False)}
            # one pass, so an input holding "{run}" or "{vars}" is passed as it is
            final = [_PLACEHOLDER.sub(lambda m: values[m.group(1)], a) for a in argv]
            where = self.workdir()
            if ws is not None:  # an agent task: in its workspace, inside its sandbox
                env.update(ws.env)
                final = [str(p) if (p := self._file_arg(a)) is not None else a for a in final]
                where, final = Path(ws.path), ws.argv(final, env)
            limit = self.max_response_bytes
            try:
                done = await run_process(final, env=env, cwd=where, limit=limit,
                                         stdin=None if uses_placeholder else text.encode("utf-8"),
                                         keep_stderr=bool(self.options.get("keep_stderr")),
                                         pipe_grace_s=_PIPE_GRACE_S, kill_after=True)
            except FileNotFoundError:
                raise SubjectError(f"command not found: {final[0]}") from None
            except PermissionError:
                raise SubjectError(f"command is not executable: {final[0]}") from None
            if ws is not None and done.left_running:
                ws.left_running = True
            if done.over_limit:
                raise SubjectError(f"command: {too_large('its stdout', limit)} (the process was killed)",
                                   kind="too-large")
            if done.returncode != 0:
                detail = ""
                if self.options.get("keep_stderr") and done.stderr:
                    detail = ": " + done.stderr.decode("utf-8", "replace").strip()[-300:]
                how = exit_words(done.returncode)
                if done.left_running and ws is None:
                    how += f" ({_LEFT})"
                raise SubjectError(scrub_all(f"command {how}{detail}", self.secrets()))
            text, bad = _decoded(done.stdout)
            if self.options.get("trim"):
                text = ANSI_ESCAPE.sub("", js_trim(text))
            if ws is not None:
                result = agent_result(text, ws.max_tool_output_bytes)
            else:  # model_free: the program calls no model, so tokens, cost and requests are a known zero
                result = to_result(text, model_free=bool(self.options.get("model_free")))
            if done.left_running and ws is None:  # (an agent task's own record says it)
                result.extra = {**(result.extra or {}), "left_running": _LEFT}
            if bad:  # the answer is not what the program printed: the attempt says so
                result.extra = {**(result.extra or {}), "output_repaired": {"invalid_utf8": bad}}
            return result
        finally:
            if skill_file:
                os.unlink(skill_file)




def _expanded(value) -> str:
    """An `env` value with each ${VAR} replaced by the environment's (check() refused an unset
    one before the run; one unset since is empty)."""
    return ENV_REF.sub(lambda m: os.environ.get(m.group(1), ""), str(value))


def _decoded(raw: bytes) -> tuple[str, int]:
    """(stdout as text, how many invalid UTF-8 sequences in it became U+FFFD)."""
    try:
        return raw.decode("utf-8"), 0
    except UnicodeDecodeError:
        text = raw.decode("utf-8", "replace")
        return text, text.count("\ufffd") - raw.count("\ufffd".encode("utf-8"))


def agent_result(stdout: str, cap: int) -> Result:
    """A command agent's answer. A program that prints one JSON object {"text", "tool_calls":
    [{"name", "args", "command"?, "exit_code"?, "output"?}]} reports its trajectory (outputs cut
    at `cap` bytes); any other output is its final message, its trajectory unknown."""
    value = None
    stripped = stdout.strip()
    if stripped.startswith("{"):
        try:
            value = loads_json(stripped)  # nesting past the parser is not JSON (no RecursionError)
        except ValueError:
            value = None
    calls = value.get("tool_calls") if isinstance(value, dict) else None
    if not isinstance(value, dict) or not isinstance(value.get("text"), (str, type(None))) \
            or not isinstance(calls, list) or not all(isinstance(c, dict) for c in calls):
        return Result(Output(text=stdout), extra={"agent": {"trajectory_known": False, "tool_output_cap_bytes": cap}})
    kept = []
    for call in calls:
        call = {k: v for k, v in call.items() if k in ("name", "args", "command", "exit_code", "output", "is_error")}
        if isinstance(call.get("output"), str):
            data = call["output"].encode("utf-8", "replace")
            call["output_bytes"], call["output_truncated"] = len(data), len(data) > cap
            call["output"] = data[:cap].decode("utf-8", "ignore")
        kept.append(call)
    return Result(Output(text=value.get("text"), tool_calls=kept, status="completed"),
                  extra={"agent": {"trajectory_known": True, "tool_output_cap_bytes": cap}})
