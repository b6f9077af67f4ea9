"""The `claude-cli` subject: Claude Code, once per attempt (agent_cli.py holds what both agent
CLIs share: the lock-down, the environment, the ledger, the errors)."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from ..agents.exports import ExportedRun, parse_claude_json
from ..agents.trajectory import claude_trajectory, json_lines
from ..errors import ConfigError
from ._cli_util import last_json
from .agent_cli import AgentCLISubject
from .agent_profile import claude_tools
from .values import SubjectRequest


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

    def agent_trajectory(self, events: list[dict], cap: int) -> ExportedRun:
        return claude_trajectory(events, cap)
