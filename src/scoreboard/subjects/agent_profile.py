"""The agent-mode permission profile of the agent CLI subjects (`agent:` in a claude-cli or
codex-cli subject): which tools, whether the shell is on, and what the agent may reach over the
network (`loopback`: the task's sandbox cuts every other address when it can, see
tasks/network.py, and the model endpoint, when not on loopback, goes through the egress
allowlist proxy, tasks/egress.py; `{allow: [host:port]}`: the same, with more hosts allowed;
`all`: nothing is cut and web tools stay)."""

from __future__ import annotations

import json
from typing import Any

from ..errors import ConfigError

#: the agent-mode permission profile's keys (see parse_agent)
_AGENT_KEYS = {"tools", "shell", "network"}
_NETWORK = ("loopback", "all")


def split_host_port(value: str) -> tuple[str, int]:
    """("host", port) from "host:port" or "[v6]:port"; ValueError when it is not one."""
    text = value.strip()
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ValueError(f"{value!r} is not host:port")
    if host.startswith("["):
        if not host.endswith("]") or len(host) < 3:
            raise ValueError(f"{value!r} is not host:port")
        host = host[1:-1]
    elif ":" in host:
        raise ValueError(f"{value!r}: write an IPv6 address in brackets, [::1]:443")
    number = int(port)
    if not 0 < number < 65536:
        raise ValueError(f"{value!r}: the port is not between 1 and 65535")
    if any(c.isspace() or c in "/?#@" for c in host):
        raise ValueError(f"{value!r}: not a host name")
    return host.lower().rstrip("."), number


def join_host_port(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def parse_allow(value: Any, where: str, label: str = "") -> list[str]:
    """An egress allowlist: a list of "host:port" (normalized, duplicates dropped); a ConfigError
    naming the field `where` (its message starting with `label`) otherwise."""
    label = label or where
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{label}: 'allow' is a nonempty list of host:port, e.g. [api.anthropic.com:443]",
                          field=where)
    out: list[str] = []
    for item in value:
        try:
            target = join_host_port(*split_host_port(item))
        except ValueError as exc:
            raise ConfigError(f"{label}: {exc} (write host:port, e.g. api.anthropic.com:443)", field=where) from None
        if target not in out:
            out.append(target)
    return out


def parse_network(value: Any, where: str, label: str) -> tuple[str, list[str] | None]:
    """A network setting: "loopback", "all", or {allow: [host:port]} (loopback plus those hosts
    through the egress proxy) -> (policy, allowlist or None). Errors name the field `where`."""
    if isinstance(value, dict):
        unknown = sorted(set(value) - {"allow"})
        if unknown or "allow" not in value:
            raise ConfigError(f"{label}: a network mapping has one key, 'allow' (a list of host:port)",
                              field=f"{where}.{unknown[0]}" if unknown else where)
        return "loopback", parse_allow(value["allow"], f"{where}.allow", label)
    if value not in _NETWORK:
        raise ConfigError(f"{label}: network is loopback (every other address cut), all, or "
                          "{allow: [host:port]} (loopback plus those hosts)", field=where)
    return value, None


def parse_agent(value: Any, kind: str) -> dict:
    """The agent-mode permission profile: {tools (Claude Code tool names; default its file and
    shell tools), shell (bool, default true), network ("loopback": no web tools, "all", or
    {allow: [host:port]}, saved as network "loopback" plus `allow`)}."""
    if value is None or value is True:
        value = {}
    if not isinstance(value, dict):
        raise ConfigError(f"subject {kind!r}: 'agent' is a permission profile {{tools, shell, network}}",
                          field="subject.agent")
    unknown = sorted(set(value) - _AGENT_KEYS)
    if unknown:
        raise ConfigError(f"subject {kind!r}: unknown permission setting (allowed: {', '.join(sorted(_AGENT_KEYS))})",
                          field=f"subject.agent.{unknown[0]}")
    tools = value.get("tools")
    if tools is not None and (not isinstance(tools, list) or not all(isinstance(t, str) and t for t in tools)):
        raise ConfigError(f"subject {kind!r}: 'agent.tools' must be a list of tool names", field="subject.agent.tools")
    shell = value.get("shell", True)
    if not isinstance(shell, bool):
        raise ConfigError(f"subject {kind!r}: 'agent.shell' must be true or false", field="subject.agent.shell")
    network, allow = parse_network(value.get("network", "loopback"), "subject.agent.network",
                                   f"subject {kind!r}: 'agent.network'")
    return {"tools": tools, "shell": shell, "network": network, **({"allow": allow} if allow else {})}


#: Claude Code's tools an agent gets by default (file tools and the shell)
CLAUDE_DEFAULT_TOOLS = ("Bash", "Read", "Write", "Edit", "Glob", "Grep")
_CLAUDE_WEB_TOOLS = ("WebFetch", "WebSearch")


def claude_tools(profile: dict) -> list[str]:
    """The Claude Code tools a profile allows: the shell only with `shell`, web tools only with
    network "all"."""
    tools = list(profile["tools"]) if profile["tools"] is not None else list(CLAUDE_DEFAULT_TOOLS)
    if profile["network"] == "all" and profile["tools"] is None:
        tools += list(_CLAUDE_WEB_TOOLS)
    if not profile["shell"]:
        tools = [t for t in tools if t not in ("Bash", "BashOutput", "KillShell")]
    if profile["network"] != "all":
        tools = [t for t in tools if t not in _CLAUDE_WEB_TOOLS]
    return tools


def toml_string(text: str) -> str:
    """`text` as a TOML basic string (JSON escapes, minus the ones TOML lacks)."""
    out = json.dumps(text, ensure_ascii=False)
    return out.replace("\x7f", "\\u007f")


#: where each CLI sends its model requests when nothing points it elsewhere
DEFAULT_ENDPOINTS = {"claude-cli": "https://api.anthropic.com", "codex-cli": "https://api.openai.com/v1"}


def model_endpoints(kind: str, options: dict, env: dict[str, str]) -> list[str]:
    """The URL an agent CLI sends its model requests to: claude-cli's ANTHROPIC_BASE_URL (the
    subject's `env`, expanded, else the environment's), codex-cli's `base_url`; else the
    vendor's own (not on loopback)."""
    if kind == "codex-cli" and options.get("base_url"):
        return [options["base_url"]]
    if kind == "claude-cli" and env.get("ANTHROPIC_BASE_URL"):
        return [env["ANTHROPIC_BASE_URL"]]
    return [DEFAULT_ENDPOINTS.get(kind, "https://")]
