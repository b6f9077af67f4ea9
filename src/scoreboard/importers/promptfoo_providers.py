"""promptfoo providers as scoreboard variants: openai:*, anthropic:*, OpenAI-compatible servers
(apiBaseUrl), echo, exec: and python: providers. Any other provider is listed as not converted
and its variant is left without a subject for the user to fill in."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from .common import Report, Source

_PARAMS = {"temperature": "temperature", "max_tokens": "max_tokens", "top_p": "top_p", "seed": "seed",
           "stop": "stop", "response_format": "response_format", "presence_penalty": "presence_penalty",
           "frequency_penalty": "frequency_penalty", "max_completion_tokens": "max_completion_tokens"}
_OPENAI_KINDS = ("chat", "completion", "responses", "embedding", "embeddings", "assistant", "realtime", "image")

ADAPTER = '''"""The promptfoo python provider {name}, called as promptfoo calls it (call_api(prompt,
options, context)); written by `scoreboard import promptfoo`."""

import importlib.util
import pathlib

_spec = importlib.util.spec_from_file_location("promptfoo_provider", pathlib.Path(__file__).resolve().parent / {name!r})
_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_module)
CONFIG = {config!r}


def call(input, skill, run, params):
    prompt = input if isinstance(input, str) else __import__("json").dumps(input)
    result = getattr(_module, {function!r})(prompt, {{"config": {{**CONFIG, **(params or {{}})}}}}, {{"vars": {{}}}})
    if isinstance(result, dict):
        if result.get("error"):
            raise RuntimeError(str(result["error"]))
        return result.get("output")
    return result
'''


def provider_subject(provider: Any) -> dict | None:
    """A scoreboard subject spec for a promptfoo openai/anthropic provider id or object, or None."""
    pid, config = (provider, {}) if isinstance(provider, str) else (provider.get("id"), provider.get("config") or {})
    if not isinstance(pid, str):
        return None
    parts = pid.split(":")
    params = {_PARAMS[k]: v for k, v in config.items() if k in _PARAMS}
    if parts[0] == "openai" and len(parts) >= 2:
        kind = parts[1] if len(parts) > 2 else "chat"
        if kind != "chat":
            return None
        spec: dict[str, Any] = {"type": "openai", "model": ":".join(parts[2:] if len(parts) > 2 else parts[1:])}
        base = config.get("apiBaseUrl") or (f"https://{config['apiHost']}/v1" if config.get("apiHost") else None)
        if base:
            spec["base_url"] = base
        if config.get("apiKeyEnvar"):
            spec["api_key_env"] = config["apiKeyEnvar"]
        if config.get("tools"):
            spec["tools"] = config["tools"]
        if params:
            spec["params"] = params
        return spec
    if parts[0] == "anthropic" and len(parts) >= 2:
        model = parts[-1]
        if len(parts) > 2 and parts[1] != "messages":
            return None
        spec = {"type": "anthropic", "model": model}
        if params:
            spec["params"] = params
        return spec
    return None


def _exec_argv(command: str) -> list[str]:
    """promptfoo's parseScriptParts: whitespace-separated, "double" or 'single' quoted parts."""
    return [m.group(1) or m.group(2) or m.group(0) for m in re.finditer(r"""[^\s"']+|"([^"]*)"|'([^']*)'""", command)]


def convert_providers(value: Any, source: Source, report: Report, copied: dict[str, str]) -> tuple[dict, Any]:
    """({variant name: variant config}, a judge spec derived from the providers or None)."""
    import json

    items: list = value if isinstance(value, list) else ([value] if value is not None else [])
    variants: dict[str, dict] = {}
    for i, item in enumerate(items):
        where = f"providers.{i}"
        if isinstance(item, dict) and "id" not in item and len(item) == 1:  # {"openai:gpt-4": {config}}
            (pid, body), = item.items()
            item = {"id": pid, **(body or {})}
        pid = item if isinstance(item, str) else (item.get("id") if isinstance(item, dict) else None)
        config = (item.get("config") or {}) if isinstance(item, dict) else {}
        if not isinstance(pid, str):
            report.skip(where, "a provider is an id or {id, label, config}")
            continue
        label = (item.get("label") if isinstance(item, dict) else None) or pid
        name = re.sub(r"[^A-Za-z0-9._:/-]+", "-", str(label)).replace(":", "-").strip("-") or f"provider-{i + 1}"
        while name in variants:
            name += "-2"
        subject = provider_subject(item)
        if subject is None and pid == "echo":
            subject = {"type": "mock"}  # echoes the rendered prompt, as promptfoo's echo provider
        elif subject is None and pid.startswith("exec:"):
            # src/providers/scriptCompletion.ts: argv = parseScriptParts(cmd) + [prompt,
            # JSON(options), JSON(context)], the output stdout.trim() with ANSI escapes stripped
            options = {k: v for k, v in item.items() if k != "id"} if isinstance(item, dict) else {}
            subject = {"type": "command", "trim": True, "argv": _exec_argv(pid[len("exec:"):].strip()) + [
                "{input}", json.dumps(options), '{"vars": {vars}}']}
            report.note(f"{where}: exec provider: its context argument holds the test's vars only (promptfoo "
                        "also passes the prompt object and the test)")
        elif subject is None and (pid.startswith("python:") or (pid.startswith("file://") and ".py" in pid)):
            ref = pid.split(":", 1)[1] if pid.startswith("python:") else pid[len("file://"):]
            file, _, function = ref.partition(":")
            copied[file] = source.read_text(file, where)
            adapter = f"provider_{Path(file).stem}_{i + 1}.py"
            copied[adapter] = ADAPTER.format(name=file, config=config, function=function or "call_api")
            subject = {"type": "python", "function": f"{adapter[:-3]}:call"}
        if subject is None:
            report.skip(where, f"provider {pid!r} is not converted: fill in variants.{name}.subject")
            variants[name] = {"description": f"promptfoo provider {pid}: not converted, fill in a subject"}
            continue
        for key in set(config) - set(_PARAMS) - {"apiBaseUrl", "apiHost", "apiKeyEnvar", "tools"}:
            if subject["type"] in ("openai", "anthropic"):
                report.skip(f"{where}.config.{key}", "this provider setting is not converted")
        variants[name] = {"subject": subject}
    if not variants:
        report.skip("providers", "no provider: the suite has no variant (add one under variants:)")
    return variants, None
