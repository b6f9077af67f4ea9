"""`claude-cli` and `codex-cli` subjects: the user's local agent CLI, once per attempt,
non-interactively, in a fresh empty directory under ./.scoreboard-tmp/ (removed afterwards,
also on timeout or cancellation, when the whole process group is killed).

Both run locked down: no tools, no MCP, no web search, no session persistence, no user
instruction files (CLAUDE.md / AGENTS.md), no telemetry, no retries (fail fast). API-key
variables are removed from the child's environment unless `keep_api_keys: true`, so the
user's subscription login is used; variables named in the subject's `env` option are always
passed. stderr is never recorded (arbitrary diagnostics must not land in reports); stdout is
read up to `max_response_bytes` (past it the process group is killed: an execution error).

One CLI call is one request in the run's ledger: reserved before the process starts and
completed after it, with the usage the CLI printed (unknown when it printed none).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
from pathlib import Path
from typing import Any, ClassVar

from ..agents.exports import ExportedRun, parse_claude_json, parse_codex
from ..agents.trajectory import claude_trajectory, codex_trajectory, json_lines
from ..errors import ConfigError, SubjectError
from ..redact import PROVIDER_KEY_VARS as API_KEY_VARS
from ._bounded import run_process
from ._cli_util import TMP_ROOT, last_json, make_root, remove_root, spawn_error  # noqa: F401  (TMP_ROOT re-exported)
from ._http import ENV_REF, expand_env, scrub
from .agent_profile import claude_tools, model_endpoints, parse_agent, toml_string
from .base import Subject, check_keys, too_large
from .values import Measurements, Output, Result, SubjectRequest

# API_KEY_VARS: variables that make a CLI bill an API key instead of the user's subscription login
_COMMON = {"binary", "model", "keep_api_keys", "env", "extra_args", "agent"}
_SENSITIVE = re.compile(r"auth|key|token|secret|password", re.IGNORECASE)
_STATUS = re.compile(r"\b(?:status|API Error:?)\s*(\d{3})\b", re.IGNORECASE)
_QUOTA = re.compile(r"quota|credit balance|usage limit|billing", re.IGNORECASE)
#: seconds to wait for the output pipes to close once the CLI itself has exited
_PIPE_GRACE_S = 5.0


class AgentCLISubject(Subject):
    """Shared machinery; subclasses give the argv, extra environment and the output parser."""

    remote: ClassVar[bool] = True
    has_model: ClassVar[bool] = True
    # Origin 000: --concurrency defaults to 1 and is at most 8 for the local agent CLIs (each
    # process holds 150-200 MB), counted over every agent CLI variant of the run together.
    default_max_concurrency: ClassVar[int | None] = 8
    default_concurrency: ClassVar[int | None] = 1
    concurrency_group: ClassVar[str | None] = "agent-cli"
    #: runs in an agent task's workspace and sandbox (in agent mode)
    agent_workspace: ClassVar[bool] = True
    default_binary: ClassVar[str] = ""
    install_hint: ClassVar[str] = ""
    extra_options: ClassVar[set[str]] = set()

    def parse(self, spec: dict) -> dict:
        kind = self.kind
        check_keys(spec, _COMMON | self.extra_options, kind)
        opts = {k: v for k, v in spec.items() if k != "type"}
        for key in ("binary", "model"):
            if key in opts and opts[key] is not None and (not isinstance(opts[key], str) or not opts[key]):
                raise ConfigError(f"subject {kind!r}: {key!r} must be a nonempty string", field=f"subject.{key}")
        if not isinstance(opts.get("keep_api_keys", False), bool):
            raise ConfigError(f"subject {kind!r}: 'keep_api_keys' must be true or false",
                              field="subject.keep_api_keys")
        env = opts.get("env", {})
        if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, (str, int, float))
                                                and not isinstance(v, bool) for k, v in env.items()):
            raise ConfigError(f"subject {kind!r}: 'env' must map variable names to strings",
                              field="subject.env")
        args = opts.get("extra_args", [])
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise ConfigError(f"subject {kind!r}: 'extra_args' must be a list of strings",
                              field="subject.extra_args")
        if "agent" in opts:
            opts["agent"] = parse_agent(opts["agent"], kind)
        self.parse_more(opts)
        return opts

    @property
    def agent_mode(self) -> bool:
        """True when the subject runs as an agent (tools on, in a task's workspace)."""
        return "agent" in self.options

    def parse_more(self, opts: dict) -> None:
        """Validate the kind's own options."""

    @property
    def spec(self) -> dict:
        """The saved form: literal values of secret-looking `env` variables hidden."""
        out = {"type": self.kind, **self.options}
        if out.get("env"):
            out["env"] = {k: (v if not _SENSITIVE.search(k) or ENV_REF.fullmatch(str(v).strip()) else "***")
                          for k, v in out["env"].items()}
        return out

    def check(self) -> None:
        """A missing CLI or an unset ${VAR} in `env` is a one-line ConfigError before anything runs."""
        self.binary_path()
        missing = sorted({n for v in self.options.get("env", {}).values()
                          for n in ENV_REF.findall(str(v)) if n not in os.environ})
        if missing:
            raise ConfigError(f"{self.kind}: environment variable {missing[0]} used in 'env' is not set")

    def secrets(self) -> set[str]:
        """Secret-looking `env` values (expanded), the provider keys in the environment, and
        codex's `api_key_env`."""
        found: set[str] = {os.environ[n] for n in API_KEY_VARS if os.environ.get(n)}
        for name, value in self.options.get("env", {}).items():
            if _SENSITIVE.search(name) or any(_SENSITIVE.search(v) for v in ENV_REF.findall(str(value))):
                found.add(_expand(str(value), set()))
        env = self.options.get("api_key_env")
        if env and os.environ.get(env):
            found.add(os.environ[env])
        return found

    @property
    def agent_network(self) -> str | None:
        """The profile's network policy in agent mode ("loopback" or "all")."""
        return self.options["agent"]["network"] if self.agent_mode else None

    def agent_allow(self) -> list[str]:
        """The hosts the profile lets through the egress proxy beside the model (`network: {allow}`)."""
        return list(self.options["agent"].get("allow") or []) if self.agent_mode else []

    def agent_endpoints(self) -> list[str]:
        """Where the CLI sends its model requests (forwarded into a loopback-only sandbox when on
        loopback, else admitted by its egress proxy)."""
        return model_endpoints(self.kind, self.options, self.child_env(Path("."), set()))

    def agent_programs(self) -> list[str]:
        """The files the agent runs from (shown read-only inside a sandbox that hides their folder)."""
        return [os.path.realpath(self.binary_path())]

    def binary_path(self) -> str:
        name = self.options.get("binary") or self.default_binary
        if os.sep in name or (os.altsep and os.altsep in name):
            path = Path(name).expanduser()
            path = path if path.is_absolute() else self.base_dir / path
            found = str(path) if os.access(path, os.X_OK) and path.is_file() else None
        else:
            found = shutil.which(name)
        if found is None:
            where = "" if os.sep in name else " on PATH"
            raise ConfigError(f"{self.kind}: {name!r} not found{where}; install with {self.install_hint}")
        return found

    # ------------------------------------------------------------------ hooks

    def command(self, binary: str, request: SubjectRequest, prompt: str, root: Path) -> list[str]:
        raise NotImplementedError  # pragma: no cover - interface

    def fixed_env(self, root: Path) -> dict[str, str]:
        """Variables this kind always sets (before the user's `env`)."""
        return {}

    def forced_env(self, root: Path) -> dict[str, str]:
        """Variables this kind sets after the user's `env` (they win)."""
        return {}

    def parse_output(self, stdout: str) -> ExportedRun | None:
        raise NotImplementedError  # pragma: no cover - interface

    def parse_agent_output(self, stdout: str, cap: int) -> ExportedRun | None:
        raise NotImplementedError  # pragma: no cover - interface

    # ------------------------------------------------------------------ running

    def child_env(self, root: Path, secrets: set[str]) -> dict[str, str]:
        env = dict(os.environ)
        if not self.options.get("keep_api_keys", False):
            for name in API_KEY_VARS:
                env.pop(name, None)
        env.update(self.fixed_env(root))
        for name, value in self.options.get("env", {}).items():
            expanded = _expand(str(value), secrets)
            env[name] = expanded
            if _SENSITIVE.search(name) and expanded:
                secrets.add(expanded)
        env.update(self.forced_env(root))
        return env

    def fail(self, message: str, secrets: set[str], **kw) -> SubjectError:
        return SubjectError(scrub(f"{self.kind}: {message}", secrets), **kw)

    async def run(self, request: SubjectRequest) -> Result:
        prompt = request.input if isinstance(request.input, str) else \
            json.dumps(request.input, ensure_ascii=False)
        try:
            binary = self.binary_path()
        except ConfigError as exc:
            raise SubjectError(str(exc), kind="config") from None
        secrets: set[str] = set()
        ws = request.workspace
        if ws is not None and not self.agent_mode:
            raise SubjectError(f"{self.kind}: an agent task needs the subject in agent mode "
                               "(give it 'agent: {}' or a permission profile)", kind="config")
        root = Path(ws.config_dir) if ws is not None else make_root(self.kind)
        ticket = None
        ledger = request.ledger
        try:
            if ws is not None:
                work = Path(ws.path)
                binary = os.path.realpath(binary)  # the path the sandbox shows (no link through a hidden folder)
            else:
                work = root / "work"
                work.mkdir()
            argv = self.command(binary, request, prompt, root)
            env = self.child_env(root, secrets)
            if ws is not None:
                env.update(ws.env)
                env.update(self.workspace_env(root, ws.isolated))
                argv = ws.argv(argv, env)
            if ledger is not None:
                ticket = await ledger.acquire(request.attempt, role=request.role, subject=self.label)
            try:
                done = await run_process(argv, env=env, cwd=work, limit=self.max_response_bytes,
                                         pipe_grace_s=_PIPE_GRACE_S, kill_after=True)
            except BaseException as exc:
                if ticket is not None:
                    reason = "cancelled" if isinstance(exc, (asyncio.CancelledError, TimeoutError)) \
                        else f"{type(exc).__name__}"
                    ledger.complete(ticket, ok=False, error=reason)
                if isinstance(exc, OSError):
                    raise self.fail(spawn_error(exc, binary), secrets, kind="config") from None
                raise
            try:
                if done.over_limit:
                    raise self.fail(f"{too_large('its output', self.max_response_bytes)} (the CLI was killed)",
                                    secrets, kind="too-large")
                result = self.result(done.stdout.decode("utf-8", "replace"), done.returncode, secrets,
                                     ws.max_tool_output_bytes if ws is not None else None)
            except SubjectError as err:
                if ticket is not None:
                    ledger.complete(ticket, ok=False, status=err.status, error=str(err))
                raise
            if ticket is not None:
                m = result.measurements
                ledger.complete(ticket, ok=True, input_tokens=m.input_tokens,
                                output_tokens=m.output_tokens, cost_usd=m.cost_usd)
            return result
        finally:
            if ws is None:
                remove_root(root)

    def workspace_env(self, root: Path, isolated: bool) -> dict[str, str]:
        """Variables of an agent run in a task's workspace (its config kept private when isolated)."""
        return {}

    @property
    def label(self) -> str:
        model = self.options.get("model")
        return f"{self.kind}:{model}" if model else self.kind

    def result(self, stdout: str, returncode: int, secrets: set[str], cap: int | None = None) -> Result:
        """The Result from what the CLI printed, or a SubjectError. In agent mode the event
        stream is read: tool calls with their commands and outputs (cut at `cap` bytes)."""
        run = self.parse_agent_output(stdout, cap or 8192) if self.agent_mode else self.parse_output(stdout)
        if run is None:
            raise self.fail(f"the CLI exited with status {returncode} without a JSON result "
                            "(its stderr is not recorded; run it by hand to see why)", secrets,
                            kind="invalid-response")
        if run.status != "completed":
            raise self.error_of(run.error or f"the CLI exited with status {returncode}", secrets)
        if run.output is None:
            raise self.fail("the CLI finished without an answer", secrets, kind="invalid-response")
        measurements = Measurements(input_tokens=run.input_tokens, output_tokens=run.output_tokens,
                                    cost_usd=run.cost_usd, requests=1)
        extra: dict[str, Any] = {"cli": self.kind}
        if run.cost_usd is not None:
            extra["cost_is_estimate"] = True
        for key in ("num_turns", "model"):
            if getattr(run, key) is not None:
                extra[key] = getattr(run, key)
        if run.latency_ms is not None:
            extra["cli_duration_ms"] = run.latency_ms
        if run.warnings:
            extra["warnings"] = [scrub(w, secrets)[:300] for w in run.warnings]
        if self.agent_mode:
            extra["agent"] = {"profile": self.options["agent"], "tool_output_cap_bytes": cap or 8192,
                              "trajectory_known": run.tool_calls_known}
        output = Output(text=run.output, tool_calls=run.tool_calls, status=run.status)
        return Result(output, measurements, extra)

    def error_of(self, detail: str, secrets: set[str]) -> SubjectError:
        """A SubjectError classified like the HTTP subjects' (quota stops the run)."""
        detail = detail.strip()[:300]
        match = _STATUS.search(detail)
        status = int(match.group(1)) if match else None
        if status == 402 or _QUOTA.search(detail):
            return self.fail(f"quota or billing limit reached, stopping the run: {detail}", secrets,
                             kind="quota", status=status, stop_run=True)
        if status in (401, 403) or "log in" in detail.lower() or "/login" in detail:
            return self.fail(detail, secrets, kind="auth", status=status)
        if status == 429:
            # The CLI retried already; a 429 that outlasted it stops the run like a quota does.
            return self.fail(f"{detail} (rate limited: stopping the run, no later request is sent)", secrets,
                             kind="rate-limit", status=status, stop_run=True)
        if status is not None and (status >= 500 or status in (408, 409)):
            return self.fail(detail, secrets, kind="server-error", status=status, retryable=True)
        return self.fail(detail, secrets, kind="error", status=status)


class ClaudeCLISubject(AgentCLISubject):
    """`claude -p`: the skill replaces the system prompt; tools, MCP, slash commands off."""

    kind = "claude-cli"
    default_binary = "claude"
    install_hint = "npm install -g @anthropic-ai/claude-code"
    extra_options: ClassVar[set[str]] = {"max_turns"}
    #: where Claude Code finds project skills (an agent task installs a skill folder there)
    skills_dir: ClassVar[str] = ".claude/skills"

    def parse_more(self, opts: dict) -> None:
        turns = opts.get("max_turns")
        if turns is not None and (not isinstance(turns, int) or isinstance(turns, bool) or turns < 1):
            raise ConfigError("subject 'claude-cli': 'max_turns' must be a positive integer",
                              field="subject.max_turns")

    def command(self, binary: str, request: SubjectRequest, prompt: str, root: Path) -> list[str]:
        if self.agent_mode:
            return self.agent_command(binary, request, prompt)
        argv = [binary, "-p", "--output-format", "json", "--safe-mode", "--tools", "",
                "--strict-mcp-config", "--disable-slash-commands", "--no-session-persistence",
                "--permission-mode", "dontAsk",
                # Always replaced, so a variant without a skill is not given Claude Code's
                # own (much longer) coding-agent prompt while its sibling is not.
                "--system-prompt", request.skill or ""]
        if self.options.get("model"):
            argv += ["--model", self.options["model"]]
        if self.options.get("max_turns"):
            argv += ["--max-turns", str(self.options["max_turns"])]
        return argv + list(self.options.get("extra_args", [])) + ["--", prompt]

    def agent_command(self, binary: str, request: SubjectRequest, prompt: str) -> list[str]:
        """Agent mode: Claude Code's own prompt and the profile's tools, pre-approved (anything
        else is denied without asking); the skill is appended to the system prompt."""
        tools = claude_tools(self.options["agent"])
        argv = [binary, "-p", "--output-format", "stream-json", "--verbose", "--strict-mcp-config",
                "--disable-slash-commands", "--no-session-persistence", "--permission-mode", "dontAsk",
                "--tools", ",".join(tools), "--allowedTools", ",".join(tools)]
        if request.skill:
            argv += ["--append-system-prompt", request.skill]
        if self.options.get("model"):
            argv += ["--model", self.options["model"]]
        if self.options.get("max_turns"):
            argv += ["--max-turns", str(self.options["max_turns"])]
        return argv + list(self.options.get("extra_args", [])) + ["--", prompt]

    def fixed_env(self, root: Path) -> dict[str, str]:
        return {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "CLAUDE_CODE_MAX_RETRIES": "0"}

    def workspace_env(self, root: Path, isolated: bool) -> dict[str, str]:
        return {"CLAUDE_CONFIG_DIR": str(root / ".claude")} if isolated else {}

    def parse_output(self, stdout: str) -> ExportedRun | None:
        obj = last_json(stdout)
        if not isinstance(obj, dict) or obj.get("type") != "result":
            return None
        return parse_claude_json(obj, "claude-cli")

    def parse_agent_output(self, stdout: str, cap: int) -> ExportedRun | None:
        events = json_lines(stdout)
        if not any(e.get("type") == "result" for e in events):
            return None
        return claude_trajectory(events, cap)


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
        argv = [binary, "exec", "--json", "--skip-git-repo-check", "--ephemeral", "--ignore-rules"]
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

    def parse_agent_output(self, stdout: str, cap: int) -> ExportedRun | None:
        events = json_lines(stdout)
        return codex_trajectory(events, cap) if events else None

    def parse_output(self, stdout: str) -> ExportedRun | None:
        events = json_lines(stdout)
        if not events:
            return None
        return parse_codex(events, "codex-cli")


def _expand(value: str, secrets: set[str]) -> str:
    try:
        return expand_env(value, secrets)
    except KeyError:  # check() names it before a run; at run time an unset variable is empty
        return ENV_REF.sub(lambda m: os.environ.get(m.group(1), ""), value)
