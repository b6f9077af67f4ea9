"""Tool-call arguments for the `tool-calls` grader: per-argument checks and validation against
the tool definitions the variant offered.

`args: {TOOL: {ARG: CHECK}}`: some call of TOOL must satisfy every CHECK. A CHECK is a value
(strict JSON equality), `{equals: V}`, `{regex: PATTERN}` (re.search on a string argument) or
`{schema: {...}}` (JSON Schema). `args_mode: exact` also refuses arguments not listed (default
`subset`). `validate: true`: every call names a tool the variant offered (its subject's `tools`,
OpenAI `{type: function, function: {name, parameters}}` or Anthropic `{name, input_schema}`) and
its arguments validate against that tool's parameter schema. Arguments recorded as a JSON string
(OpenAI's `arguments`) are parsed first.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..bounded_regex import search as bounded_search
from .base import option_error, short
from .exact import strict_equal


def call_name(call: Any) -> str | None:
    """The tool name of one recorded call ({"name"} or OpenAI-style {"function": {"name"}})."""
    if not isinstance(call, dict):
        return None
    name = call.get("name")
    if name is None and isinstance(call.get("function"), dict):
        name = call["function"].get("name")
    return name if isinstance(name, str) else None


def parse_arg_checks(value: dict) -> dict:
    """The canonical `args`, `args_mode` and `validate` options (only those given)."""
    out: dict = {}
    args = value.get("args")
    if args is not None:
        if not isinstance(args, dict) or not all(isinstance(v, dict) for v in args.values()):
            raise option_error("tool-calls", f"'args' maps tool names to {{argument: check}}, got {short(args)}")
        for tool, checks in args.items():
            for arg, check in checks.items():
                if isinstance(check, dict) and len(check) == 1 and next(iter(check)) in ("regex", "schema", "equals"):
                    kind, spec = next(iter(check.items()))
                    if kind == "regex":
                        try:
                            re.compile(spec)
                        except (re.error, TypeError) as exc:
                            raise option_error("tool-calls", f"invalid regex for {tool}.{arg}: {exc}") from None
                    if kind == "schema":
                        from jsonschema.exceptions import SchemaError

                        from ..bounded_regex import validator_for

                        try:
                            validator_for(spec).check_schema(spec)
                        except (SchemaError, TypeError) as exc:
                            raise option_error("tool-calls", f"invalid schema for {tool}.{arg}: {exc}") from None
        out["args"] = args
        mode = value.get("args_mode", "subset")
        if mode not in ("subset", "exact"):
            raise option_error("tool-calls", f"'args_mode' is subset or exact, got {short(mode)}")
        out["args_mode"] = mode
    if value.get("validate", False):
        if value["validate"] is not True:
            raise option_error("tool-calls", "'validate' must be true or false")
        out["validate"] = True
    return out


def call_args(call: Any) -> tuple[Any, str | None]:
    """(arguments as a value, problem) of a recorded call."""
    if not isinstance(call, dict):
        return None, "not a call object"
    raw = call.get("args", call.get("arguments", call.get("input")))
    if raw is None and isinstance(call.get("function"), dict):
        raw = call["function"].get("arguments")
    if isinstance(raw, str):
        try:
            raw = json.loads(raw) if raw.strip() else {}
        except (ValueError, RecursionError):
            return None, f"arguments are not JSON: {short(raw, 60)}"
    return ({} if raw is None else raw), None


def _check_one(value: Any, check: Any) -> str | None:
    if isinstance(check, dict) and len(check) == 1 and next(iter(check)) in ("regex", "schema", "equals"):
        kind, spec = next(iter(check.items()))
        if kind == "regex":
            if not isinstance(value, str) or bounded_search(spec, value) is None:
                return f"{short(value, 40)} does not match /{spec}/"
            return None
        if kind == "schema":
            from ..bounded_regex import validator_for

            errors = list(validator_for(spec)(spec).iter_errors(value))
            return f"{errors[0].message}" if errors else None
        check = spec
    return None if strict_equal(check, value) else f"expected {short(check, 40)}, got {short(value, 40)}"


def _tool_schemas(tools: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for t in tools or []:
        if not isinstance(t, dict):
            continue
        fn = t.get("function") if isinstance(t.get("function"), dict) else t
        name = fn.get("name")
        if isinstance(name, str):
            out[name] = fn.get("parameters", fn.get("input_schema", {"type": "object"}))
    return out


def check_calls(options: dict, calls: list, tools: Any) -> list[str]:
    """Problems with the calls' arguments and against the offered tools ([] when none)."""
    problems: list[str] = []
    for tool, checks in (options.get("args") or {}).items():
        tried = [c for c in calls if call_name(c) == tool]
        if not tried:
            problems.append(f"args: no call of {tool}")
            continue
        last = ""
        for call in tried:
            args, bad = call_args(call)
            if bad or not isinstance(args, dict):
                last = bad or "arguments are not an object"
                continue
            issues = []
            for arg, check in checks.items():
                if arg not in args:
                    issues.append(f"{arg} missing")
                else:
                    found = _check_one(args[arg], check)
                    if found:
                        issues.append(f"{arg}: {found}")
            if options.get("args_mode") == "exact":
                issues += [f"{arg} not expected" for arg in args if arg not in checks]
            if not issues:
                last = ""
                break
            last = "; ".join(issues)
        if last:
            problems.append(f"args of {tool}: {last}")
    if options.get("validate"):
        schemas = _tool_schemas(tools)
        if not schemas:
            problems.append("validate: the variant offered no tool definitions")
        for i, call in enumerate(calls):
            name = call_name(call)
            if name not in schemas:
                problems.append(f"call {i + 1}: {name or '?'} is not a tool the variant offered")
                continue
            args, bad = call_args(call)
            if bad:
                problems.append(f"call {i + 1} ({name}): {bad}")
                continue
            from ..bounded_regex import validator_for

            schema = schemas[name]
            errors = list(validator_for(schema)(schema).iter_errors(args))
            if errors:
                problems.append(f"call {i + 1} ({name}): {short(errors[0].message, 100)}")
    return problems
