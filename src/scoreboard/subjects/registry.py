"""Subject registry: kind -> class, imported lazily; spec strings parsed here."""

from __future__ import annotations

import importlib
import json
import shlex
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .base import Subject

SUBJECTS: dict[str, str] = {
    "python": "scoreboard.subjects.python:PythonSubject",
    "command": "scoreboard.subjects.command:CommandSubject",
    "recorded": "scoreboard.subjects.recorded:RecordedSubject",
    "mock": "scoreboard.subjects.mock:MockSubject",
    "openai": "scoreboard.subjects.openai:OpenAISubject",
    "anthropic": "scoreboard.subjects.anthropic:AnthropicSubject",
    "http": "scoreboard.subjects.http:HttpSubject",
    "claude-cli": "scoreboard.subjects.claude_cli:ClaudeCLISubject",
    "codex-cli": "scoreboard.subjects.codex_cli:CodexCLISubject",
}


def parse_subject_spec(spec: Any) -> dict:
    """`python:pkg.mod:fn`, `command:./x {input}`, `recorded:out.jsonl`, `mock`, JSON, or a mapping."""
    if isinstance(spec, dict):
        if "type" not in spec:
            raise ConfigError("a subject mapping needs 'type'", field="subject.type")
        return dict(spec)
    if not isinstance(spec, str) or not spec.strip():
        raise ConfigError(f"invalid subject {spec!r}", field="subject")
    text = spec.strip()
    if text.startswith("{"):
        try:
            value = json.loads(text)
        except ValueError as exc:
            raise ConfigError(f"subject JSON is invalid: {exc}", field="subject") from None
        return parse_subject_spec(value)
    kind, _, rest = text.partition(":")
    if kind == "python":
        return {"type": "python", "function": rest}
    if kind == "command":
        return {"type": "command", "argv": shlex.split(rest)}
    if kind == "recorded":
        return {"type": "recorded", "path": rest}
    if kind == "mock":
        return {"type": "mock", **({"default": rest} if rest else {})}
    if kind in SUBJECTS:
        return {"type": kind, **({"model": rest} if rest else {})}
    known = ", ".join(sorted(SUBJECTS))
    raise ConfigError(f"unknown subject kind {kind!r} in {spec!r}{spec_hint(text, kind)} (known: {known})",
                      field="subject")


def spec_hint(text: str, kind: str) -> str:
    """What the user probably meant by a subject spec with no known kind: a program path
    (`./v1.sh` -> `command:./v1.sh {input}`), a model name, or a misspelt kind."""
    from ..validation import did_you_mean

    if ":" not in text:
        program = shlex.split(text)[0] if text.strip() else text
        if "/" in program or program.endswith((".sh", ".py", ".js", ".rb", ".pl", ".exe")):
            argv = text if "{input}" in text else f"{text} {{input}}"
            if program.endswith(".py") and " " not in text:
                module = Path(program).stem
                return (f"; a program is run as 'command:{argv}' (or 'command:python3 {argv}'), and a function "
                        f"in a Python module as 'python:{module}:FUNCTION'")
            return f"; a program is run as 'command:{argv}' (the input in place of {{input}}, else on stdin)"
        if text.startswith(("gpt-", "o1", "o3", "o4", "chatgpt-")):
            return f"; a model is named with its API, e.g. 'openai:{text}'"
        if text.startswith("claude-"):
            return f"; a model is named with its API, e.g. 'anthropic:{text}'"
    return did_you_mean(kind, SUBJECTS)


def subject_class(kind: str) -> type[Subject]:
    """The class registered for a subject kind (imported on first use)."""
    target = SUBJECTS.get(kind)
    if target is None:
        known = ", ".join(sorted(SUBJECTS))
        raise ConfigError(f"unknown subject type {kind!r} (known: {known})", field="subject.type")
    module, attr = target.split(":")
    return getattr(importlib.import_module(module), attr)


def build_subject(spec: Any, base_dir: Path) -> Subject:
    """Build a subject from a spec string or mapping."""
    parsed = parse_subject_spec(spec)
    return subject_class(parsed["type"])(parsed, base_dir)


def register(kind: str, target: str) -> None:
    """Register a subject class ("module:Class") under `kind`."""
    SUBJECTS[kind] = target
