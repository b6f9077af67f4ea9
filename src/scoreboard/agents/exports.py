"""Readers of what agent CLIs print: one exported file -> one run record.

Formats (see tests/fixtures/agent_exports/README.md for captured examples):

- `claude-json`: `claude -p ... --output-format json`, one `{"type": "result", ...}` object.
  It carries no tool calls, so `tool_calls_known` is False for it.
- `claude-stream`: `claude -p ... --output-format stream-json --verbose`, JSONL events
  `system` / `assistant` / `user` / `result` (and `stream_event` with partial messages).
- `codex`: `codex exec --json ...`, JSONL events `thread.started`, `turn.started`,
  `item.started` / `item.completed`, `turn.completed {usage}` / `turn.failed`, `error`.
  Codex prints no cost and no duration: both stay None (unknown), never 0.

Token counts: Claude's `input_tokens` here is the whole prompt the model read
(`input_tokens + cache_creation_input_tokens + cache_read_input_tokens`); Codex's
`input_tokens` already includes its cached part.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..jsonio import loads as loads_json
from ..safefile import DEFAULT_MAX_FILE_BYTES, FileRefused, read_regular

FORMATS = ("claude-json", "claude-stream", "codex")

_CLAUDE_EVENTS = {"system", "assistant", "user", "result", "stream_event"}
_CODEX_EVENTS = {"thread.started", "turn.started", "turn.completed", "turn.failed",
                 "item.started", "item.updated", "item.completed", "error"}
# Codex item types that are the agent acting (a "tool call" for graders); the name used
# for grading is the item type, except MCP calls, which use the MCP tool's own name.
_CODEX_TOOL_ITEMS = {"command_execution", "file_change", "web_search", "mcp_tool_call"}


@dataclass
class ExportedRun:
    """One agent run read from a CLI export. None means the CLI did not say."""

    id: str
    format: str
    status: str                      # "completed" or "error"
    output: str | None
    tool_calls: list[dict] = field(default_factory=list)
    tool_calls_known: bool = True
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    latency_ms: float | None = None
    num_turns: int | None = None
    error: str | None = None
    session_id: str | None = None
    model: str | None = None
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        """The record as a plain mapping (what tests and `--json` show)."""
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def read_export_bytes(path: str | Path) -> bytes:
    """An export's bytes: a regular file (a FIFO or device is refused without blocking), bounded."""
    try:
        return read_regular(path, limit=DEFAULT_MAX_FILE_BYTES, limit_name="limits.max_file_bytes")
    except FileRefused as exc:
        raise ConfigError(f"export file {exc.reason}", file=str(path)) from None


def read_export(path: str | Path, fmt: str = "auto", *, run_id: str | None = None) -> ExportedRun:
    """Read one exported file; `fmt` is one of FORMATS or "auto" (detected from content)."""
    path = Path(path)
    shown = str(path)
    if path.is_dir():
        raise ConfigError("is a directory, expected an exported file", file=shown)
    try:
        text = read_export_bytes(path).decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ConfigError("file is not valid UTF-8", file=shown) from None
    if fmt == "auto":
        fmt = detect_format(text)
        if fmt is None:
            raise ConfigError("not a recognised agent export (claude-json, claude-stream, codex)",
                              file=shown)
    if fmt not in FORMATS:
        raise ConfigError(f"unknown export format {fmt!r} (known: {', '.join(FORMATS)})",
                          field="from")
    rid = run_id or path.stem
    if fmt == "claude-json":
        try:
            obj = loads_json(text)
        except ValueError as exc:
            raise ConfigError(f"invalid JSON: {exc}", file=shown) from None
        return parse_claude_json(obj, rid, shown)
    events = _jsonl(text, shown)
    if fmt == "claude-stream":
        return parse_claude_stream(events, rid, shown)
    return parse_codex(events, rid, shown)


def detect_format(text: str) -> str | None:
    """claude-json, claude-stream or codex from the content; None when it is none of them."""
    stripped = text.strip()
    if not stripped:
        return None
    try:
        whole = loads_json(stripped)
    except ValueError:
        whole = None
    if isinstance(whole, dict) and whole.get("type") == "result" and "session_id" in whole:
        return "claude-json"
    if isinstance(whole, list) and whole and all(isinstance(e, dict) for e in whole):
        types = {e.get("type") for e in whole}
        if types & {"result", "assistant"} and types <= _CLAUDE_EVENTS:
            return "claude-stream"  # `--output-format json --verbose` prints the event list
    first = None
    for line in stripped.splitlines():
        if line.strip():
            try:
                first = loads_json(line)
            except ValueError:
                return None
            break
    if not isinstance(first, dict):
        return None
    kind = first.get("type")
    if kind in _CLAUDE_EVENTS:
        return "claude-stream"
    if kind in _CODEX_EVENTS:
        return "codex"
    return None


def _jsonl(text: str, shown: str) -> list[dict]:
    stripped = text.strip()
    if stripped.startswith("["):  # the claude `json --verbose` list of events
        try:
            value = loads_json(stripped)
        except ValueError:
            value = None
        if isinstance(value, list):
            return [e for e in value if isinstance(e, dict)]
    events = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = loads_json(line)
        except ValueError as exc:
            raise ConfigError(f"invalid JSON line: {exc}", file=shown, line=number) from None
        if not isinstance(value, dict):
            raise ConfigError("each line must be a JSON object (an event)", file=shown, line=number)
        events.append(value)
    return events


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _claude_input_tokens(usage: dict) -> int | None:
    base = _int(usage.get("input_tokens"))
    if base is None:
        return None
    return base + (_int(usage.get("cache_creation_input_tokens")) or 0) + \
        (_int(usage.get("cache_read_input_tokens")) or 0)


def _apply_claude_result(run: ExportedRun, result: dict) -> None:
    """Fill a run from Claude's final `result` object (the json format, or the stream's last event)."""
    usage = result.get("usage") if isinstance(result.get("usage"), dict) else {}
    run.output = result.get("result") if isinstance(result.get("result"), str) else run.output
    run.input_tokens = _claude_input_tokens(usage)
    run.output_tokens = _int(usage.get("output_tokens"))
    run.cost_usd = _num(result.get("total_cost_usd"))
    run.latency_ms = _num(result.get("duration_ms"))
    run.num_turns = _int(result.get("num_turns"))
    run.session_id = result.get("session_id") if isinstance(result.get("session_id"), str) else run.session_id
    models = result.get("modelUsage")
    if isinstance(models, dict) and len(models) == 1 and run.model is None:
        run.model = next(iter(models))
    # `subtype` stays "success" on API errors; `is_error` is the flag that tells.
    failed = result.get("is_error") is True or (result.get("subtype") not in (None, "success"))
    if failed:
        run.status = "error"
        detail = run.output if isinstance(run.output, str) and run.output else result.get("subtype")
        status = result.get("api_error_status")
        run.error = f"{detail} (API status {status})" if status else str(detail or "the CLI reported an error")
    else:
        run.status = "completed"
    denials = result.get("permission_denials")
    if isinstance(denials, list) and denials:
        names = [d.get("tool_name") for d in denials if isinstance(d, dict)]
        run.warnings.append("permission denied for: " + ", ".join(str(n) for n in names))


def parse_claude_json(obj: Any, run_id: str, shown: str = "<claude-json>") -> ExportedRun:
    """`claude -p --output-format json`: the final result object (no tool calls in this format)."""
    if isinstance(obj, list):  # `--output-format json --verbose` prints every event
        return parse_claude_stream([e for e in obj if isinstance(e, dict)], run_id, shown)
    if not isinstance(obj, dict) or obj.get("type") != "result":
        raise ConfigError('expected a Claude Code result object ({"type": "result", ...})', file=shown)
    run = ExportedRun(id=run_id, format="claude-json", status="error", output=None,
                      tool_calls_known=False)
    _apply_claude_result(run, obj)
    return run


def parse_claude_stream(events: list[dict], run_id: str, shown: str = "<claude-stream>") -> ExportedRun:
    """`claude -p --output-format stream-json --verbose`: tool calls from assistant messages,
    tool errors from the tool results, final figures from the `result` event."""
    run = ExportedRun(id=run_id, format="claude-stream", status="error", output=None)
    texts: list[str] = []
    by_id: dict[str, dict] = {}
    result = None
    for event in events:
        kind = event.get("type")
        if kind == "system" and event.get("subtype") == "init":
            run.session_id = event.get("session_id") if isinstance(event.get("session_id"), str) else None
            run.model = event.get("model") if isinstance(event.get("model"), str) else None
        elif kind == "assistant":
            message = event.get("message") if isinstance(event.get("message"), dict) else {}
            for block in message.get("content") or []:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "text" and isinstance(block.get("text"), str):
                    texts.append(block["text"])
                elif block.get("type") in ("tool_use", "server_tool_use", "mcp_tool_use"):
                    call = {"name": block.get("name"), "args": block.get("input"), "id": block.get("id")}
                    run.tool_calls.append(call)
                    if isinstance(block.get("id"), str):
                        by_id[block["id"]] = call
        elif kind == "user":
            message = event.get("message") if isinstance(event.get("message"), dict) else {}
            content = message.get("content")
            for block in content if isinstance(content, list) else []:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    call = by_id.get(block.get("tool_use_id"))
                    if call is not None:
                        call["is_error"] = block.get("is_error") is True
        elif kind == "result":
            result = event
    if result is None:
        run.output = texts[-1] if texts else None
        run.error = "the stream ended without a result event (the CLI was cut off)"
        return run
    _apply_claude_result(run, result)
    if run.output is None and texts:
        run.output = texts[-1]
    return run


def parse_codex(events: list[dict], run_id: str, shown: str = "<codex>") -> ExportedRun:
    """`codex exec --json`: the last agent message is the output; tool items are tool calls;
    usage summed over completed turns; no cost and no duration in this format."""
    run = ExportedRun(id=run_id, format="codex", status="error", output=None)
    items: dict[str, dict] = {}
    order: list[str] = []
    messages: list[str] = []
    usage_in = usage_out = None
    # a completed turn without a count makes that sum unknown, never the sum of the other turns
    in_unknown = out_unknown = False
    turns = 0
    completed = failed = False
    errors: list[str] = []
    for event in events:
        kind = event.get("type")
        if kind == "thread.started":
            run.session_id = event.get("thread_id") if isinstance(event.get("thread_id"), str) else None
        elif kind == "turn.started":
            turns += 1
        elif kind in ("item.started", "item.updated", "item.completed"):
            item = event.get("item")
            if not isinstance(item, dict):
                continue
            key = str(item.get("id", len(order)))
            if key not in items:
                order.append(key)
            items[key] = item
        elif kind == "turn.completed":
            completed = True
            usage = event.get("usage") if isinstance(event.get("usage"), dict) else {}
            i, o = _int(usage.get("input_tokens")), _int(usage.get("output_tokens"))
            in_unknown, out_unknown = in_unknown or i is None, out_unknown or o is None
            usage_in = None if i is None else (usage_in or 0) + i
            usage_out = None if o is None else (usage_out or 0) + o
        elif kind == "turn.failed":
            failed = True
            err = event.get("error")
            errors.append(err.get("message") if isinstance(err, dict) else str(err))
        elif kind == "error":
            errors.append(str(event.get("message")))
    for key in order:
        item = items[key]
        itype = item.get("type")
        if itype == "agent_message" and isinstance(item.get("text"), str):
            messages.append(item["text"])
        elif itype == "error":
            run.warnings.append(f"codex error item: {item.get('message')}")
        elif itype in _CODEX_TOOL_ITEMS:
            run.tool_calls.append(_codex_call(item))
    run.output = messages[-1] if messages else None
    run.num_turns = turns or None
    if completed and not failed:
        run.status = "completed"
        run.input_tokens = None if in_unknown else usage_in
        run.output_tokens = None if out_unknown else usage_out
    else:
        run.status = "error"
        run.error = "; ".join(dict.fromkeys(e for e in errors if e)) or \
            "the stream ended without turn.completed (the CLI was cut off)"
    return run


def _codex_call(item: dict) -> dict:
    itype = item.get("type")
    if itype == "command_execution":
        call = {"name": itype, "args": {"command": item.get("command")}, "exit_code": item.get("exit_code")}
        call["is_error"] = item.get("exit_code") not in (0, None) or item.get("status") == "failed"
        return call
    if itype == "mcp_tool_call":
        return {"name": item.get("tool"), "args": item.get("arguments"), "server": item.get("server"),
                "is_error": item.get("status") == "failed" or bool(item.get("error"))}
    if itype == "web_search":
        return {"name": itype, "args": {"query": item.get("query")}}
    return {"name": itype, "args": {"changes": item.get("changes")},
            "is_error": item.get("status") == "failed"}
