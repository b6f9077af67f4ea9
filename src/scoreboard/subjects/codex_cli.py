"""The `codex-cli` subject: the Codex CLI, once per attempt (agent_cli.py holds what both agent
CLIs share: the lock-down, the environment, the ledger, the errors)."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
from pathlib import Path
from typing import ClassVar

from ..agents.codex_rollout import refused_calls, unstreamed_commands
from ..agents.exports import ExportedRun, parse_codex
from ..agents.trajectory import codex_trajectory, json_lines, shell_line
from ..errors import ConfigError
from .agent_cli import AgentCLISubject
from .agent_profile import toml_string
from .values import Result, SubjectRequest


#: the most rollout files read after one attempt (Codex saves one per session)
MAX_ROLLOUTS = 100

#: the first line a command's output has when Codex's own sandbox could not start it (bubblewrap's
#: own error prefix, or its helper `codex-linux-sandbox` missing or refused): the command never ran
SANDBOX_FAILED = re.compile(r"^(?:bwrap: .+|.*\bcodex-linux-sandbox\b.*(?:No such file|not found|denied|[Ff]ailed).*)$")
#: how to get a working sandbox, in the error of an attempt whose Codex sandbox could not run
SANDBOX_HINT = ("let scoreboard sandbox the agent (bubblewrap installed and working, `apt-get install bubblewrap`, "
                "or Docker, and no `sandbox: off` in task.yaml): Codex then runs inside it without a sandbox of "
                "its own; or repair Codex's sandbox (its codex-linux-sandbox helper)")


def sandbox_failure(calls: list[dict] | None) -> str | None:
    """The first line of the first command Codex's own sandbox failed to start (exit status not
    0 and that line bubblewrap's or its helper's error), else None."""
    for call in calls or []:
        if not isinstance(call, dict) or not isinstance(call.get("command"), str) or call.get("exit_code") == 0 \
                or call.get("denied"):
            continue
        lines = str(call.get("output") or "").strip().splitlines()
        if lines and SANDBOX_FAILED.match(lines[0].strip()):
            return lines[0].strip()[:300]
    return None


def own_folder(path: Path) -> bool:
    """Whether `path` is a folder itself, not a link to one (the agent can write its HOME: a
    codex-home or sessions linked out of the attempt's folder leads to files not its own)."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def rollout_files(sessions: Path) -> list[Path]:
    """The rollout files under `sessions` (regular files only, never through a link; at most
    MAX_ROLLOUTS of them)."""
    found: list[Path] = []
    if not own_folder(sessions) or not own_folder(sessions.parent):
        return found
    for top, dirs, files in os.walk(sessions, followlinks=False):
        dirs.sort()
        found += [Path(top) / f for f in sorted(files) if f.startswith("rollout-") and f.endswith(".jsonl")]
        if len(found) >= MAX_ROLLOUTS:
            return found[:MAX_ROLLOUTS]
    return found


def read_lines(path: Path, limit: int) -> list[dict]:
    """A rollout's JSON lines, read without following a link (the agent can write its HOME),
    at most `limit` bytes; an unreadable or non-JSON line is skipped."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return []
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return []
        raw = handle.read(limit)
    events = []
    for line in raw.decode("utf-8", "replace").splitlines():
        try:
            event = json.loads(line)
        except (ValueError, RecursionError):  # a line nested deeper than Python's reader goes
            continue
        if isinstance(event, dict):
            events.append(event)
    return events


class CodexCLISubject(AgentCLISubject):
    """`codex exec --json`: the skill as developer instructions; shell, web search, sub-agents
    off; read-only sandbox; with `base_url`, a throwaway CODEX_HOME naming a local provider."""

    kind = "codex-cli"
    default_binary = "codex"
    install_hint = "npm install -g @openai/codex"
    extra_options: ClassVar[set[str]] = {"base_url", "api_key_env"}
    #: where Codex finds repository skills (an agent task installs a skill folder there)
    skills_dir: ClassVar[str] = ".agents/skills"

    def parse_more(self, opts: dict) -> None:
        for key in ("base_url", "api_key_env"):
            if key in opts and (not isinstance(opts[key], str) or not opts[key]):
                raise ConfigError(f"subject 'codex-cli': {key!r} must be a nonempty string",
                                  field=f"subject.{key}")
        if "api_key_env" in opts and "base_url" not in opts:
            raise ConfigError("subject 'codex-cli': 'api_key_env' needs 'base_url'", field="subject.api_key_env")
        if "base_url" in opts and "CODEX_HOME" in opts.get("env", {}):
            raise ConfigError("subject 'codex-cli': 'env.CODEX_HOME' cannot be combined with 'base_url' "
                              "(base_url uses a throwaway CODEX_HOME)", field="subject.env")

    def command(self, binary: str, request: SubjectRequest, prompt: str, root: Path) -> list[str]:
        argv = [binary, "exec", "--json", "--skip-git-repo-check", "--ignore-rules"]
        if not self.keeps_rollout:  # saved only where it is the attempt's own (read, then removed)
            argv.insert(4, "--ephemeral")
        argv += self.tool_args(request)
        for feature in ("multi_agent", "goals", "view_image", "unbounded_connection_retries"):
            argv += ["--disable", feature]
        # No telemetry or plugin look-ups; none of the repository's AGENTS.md or skills, and no
        # per-call context (the random cwd) in the prompt, so every attempt sends the same text.
        overrides = ["analytics.enabled=false", "features.plugins=false"]
        if not self.agent_mode:  # an agent reads its workspace's AGENTS.md and skills, as a user's would
            overrides += ["project_doc_max_bytes=0", "skills.include_instructions=false",
                          "include_permissions_instructions=false", "include_environment_context=false"]
        for override in overrides:
            argv += ["-c", override]
        if "base_url" in self.options:
            self._write_config(root / "codex-home")
        else:
            argv.append("--ignore-user-config")  # the login in CODEX_HOME still applies
        if self.options.get("model"):
            argv += ["-m", self.options["model"]]
        if request.skill:
            argv += ["-c", "developer_instructions=" + toml_string(request.skill)]
        return argv + list(self.options.get("extra_args", [])) + ["--", prompt]

    def tool_args(self, request: SubjectRequest) -> list[str]:
        """Sandbox and tools: none outside agent mode; in it, the shell per the profile, inside
        the task's sandbox when it has one (Codex's own sandbox otherwise)."""
        profile = self.options.get("agent")
        if profile is None:
            return ["--sandbox", "read-only", "-c", 'approval_policy="never"', "-c", 'web_search="disabled"',
                    "--disable", "shell_tool", "--disable", "unified_exec"]
        isolated = request.workspace is not None and request.workspace.isolated
        argv = ["--sandbox", "danger-full-access" if isolated else "workspace-write",
                "-c", 'approval_policy="never"',
                "-c", 'web_search="live"' if profile["network"] == "all" else 'web_search="disabled"']
        if not profile["shell"]:
            argv += ["--disable", "shell_tool", "--disable", "unified_exec"]
        if not isolated:
            network = "true" if profile["network"] == "all" else "false"
            argv += ["-c", f"sandbox_workspace_write.network_access={network}"]
        return argv

    def _write_config(self, home: Path) -> None:
        home.mkdir(exist_ok=True)
        lines = ['model_provider = "local"', 'approval_policy = "never"', 'sandbox_mode = "read-only"']
        if self.options.get("model"):
            lines.insert(0, "model = " + toml_string(self.options["model"]))
        lines += ["[model_providers.local]", 'name = "local"',
                  "base_url = " + toml_string(self.options["base_url"]), 'wire_api = "responses"',
                  "request_max_retries = 0", "stream_max_retries = 0"]
        if self.options.get("api_key_env"):
            lines.append("env_key = " + toml_string(self.options["api_key_env"]))
        lines += ["[analytics]", "enabled = false", "[features]", "plugins = false"]
        (home / "config.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")

    def forced_env(self, root: Path) -> dict[str, str]:
        if "base_url" not in self.options:
            return {}
        env = {"CODEX_HOME": str(root / "codex-home")}
        name = self.options.get("api_key_env")
        if name and name in os.environ:
            env[name] = os.environ[name]  # named explicitly: passed even when keys are stripped
        return env

    @property
    def keeps_rollout(self) -> bool:
        """Whether Codex saves its session rollout: in agent mode with `base_url`, where its
        CODEX_HOME is the attempt's private one (never the user's ~/.codex)."""
        return self.agent_mode and "base_url" in self.options

    def agent_done(self, root: Path, calls: list[dict] | None, cap: int) -> None:
        """Add to `calls` what only Codex's rollout records: the commands its event stream did not
        print (`source: "rollout"`), and the calls Codex refused itself (a tool it does not offer,
        arguments it cannot parse), marked denied; then remove the rollout."""
        if not self.keeps_rollout:
            return
        sessions = root / "codex-home" / "sessions"
        try:
            if calls is not None:
                left = self.max_response_bytes  # over all the rollouts together
                for path in rollout_files(sessions):
                    if left <= 0:
                        break
                    events = read_lines(path, left)
                    calls.extend(unstreamed_commands(events, calls, cap, shell_line) + refused_calls(events, cap))
                    try:
                        left -= max(1, os.lstat(path).st_size)
                    except OSError:
                        left -= 1
        finally:
            self.forget_session(root)

    def forget_session(self, root: Path) -> None:
        """Remove the session Codex saved: the rollout and the databases that copy the
        conversation (nothing of it stays, and the canary scan of the private HOME never reads
        a canary the agent was shown as one it wrote)."""
        if not self.keeps_rollout:
            return
        home = root / "codex-home"
        if not own_folder(home):  # a link out of the attempt's folder: removed, never followed
            if os.path.islink(home):
                os.unlink(home)
            return
        for name in ("sessions", "archived_sessions"):
            if os.path.islink(home / name):
                os.unlink(home / name)
            shutil.rmtree(home / name, ignore_errors=True)
        for path in [*home.glob("thread_history_*.sqlite*"), *home.glob("state_*.sqlite*")]:
            if path.is_file() and not path.is_symlink():
                path.unlink(missing_ok=True)

    def refuse_setup_failure(self, result: Result, isolated: bool, secrets: set[str]) -> None:
        """Where Codex ran under its own sandbox (no sandbox of scoreboard's) and that sandbox
        could not start a command, the attempt is an error of the setup, never the agent's."""
        failed = None if isolated else sandbox_failure(result.output.tool_calls)
        if failed is None:
            return
        err = self.fail(f"Codex's own sandbox could not run here, so the agent's commands never ran "
                        f"({failed!r}): {SANDBOX_HINT}", secrets, kind="sandbox")
        err.measurements = result.measurements  # what the turns spent stays with the error
        err.tool_calls = result.output.tool_calls  # the commands it failed, from the rollout too
        raise err

    def parse_agent_output(self, stdout: str, cap: int) -> ExportedRun | None:
        events = json_lines(stdout)
        return codex_trajectory(events, cap) if events else None

    def agent_trajectory(self, events: list[dict], cap: int) -> ExportedRun:
        return codex_trajectory(events, cap)

    def parse_output(self, stdout: str) -> ExportedRun | None:
        events = json_lines(stdout)
        if not events:
            return None
        return parse_codex(events, "codex-cli")
