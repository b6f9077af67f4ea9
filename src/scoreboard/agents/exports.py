"""Readers of what agent CLIs print: one exported file -> one run record.

Formats (see tests/fixtures/agent_exports/README.md for captured examples):

- `claude-json`: `claude -p ... --output-format json`, one `{"type": "result", ...}` object.
  It carries no tool calls, so `tool_calls_known` is False for it.
- `claude-stream`: `claude -p ... --output-format stream-json --verbose`, JSONL events
  `system` / `assistant` / `user` / `result` (and `stream_event` with partial messages).
- `codex`: a session rollout saved under ~/.codex/sessions (agents/codex_rollout.py), or
  `codex exec --json ...`, JSONL events `thread.started`, `turn.started`,
  `item.started` / `item.completed`, `turn.completed {usage}` / `turn.failed`, `error`.
  Codex prints no cost and no duration: both stay None (unknown), never 0.

Token counts: Claude's `input_tokens` here is the whole prompt the model read
(`input_tokens + cache_creation_input_tokens + cache_read_input_tokens`); Codex's
`input_tokens` already includes its cached part.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..jsonio import loads as loads_json
from ..safefile import DEFAULT_MAX_FILE_BYTES, FileRefused, read_regular
from .codex_events import CODEX_OTHER_ITEMS, CODEX_TOOL_ITEMS, codex_call, codex_items
from .claude_session import add_subagent_calls, mark_refused
from .codex_rollout import ROLLOUT_EVENTS, is_rollout, parse_codex_rollout
from .export_lines import CLAUDE_EVENTS, CODEX_EVENTS, jsonl_events, detect_format, not_utf8, once_each

FORMATS = ("claude-json", "claude-stream", "codex")



@dataclass
class ExportedRun:
    """One agent run read from a CLI export. None means the CLI did not say."""

    id: str
    format: str
    status: str | None               # "completed" or "error"; None: a session log, which does not say
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


#: what the size error names: the setting, and the flag `score` raises it with
EXPORT_LIMIT_NAME = "limits.max_file_bytes; score --max-file-bytes raises it"


def read_export_bytes(path: str | Path, limit: int | None = None) -> bytes:
    """An export's bytes: a regular file (a FIFO or device is refused without blocking), bounded
    (16 MiB unless `limit` says otherwise: a long session log with images runs past it)."""
    try:
        return read_regular(path, limit=limit or DEFAULT_MAX_FILE_BYTES, limit_name=EXPORT_LIMIT_NAME)
    except FileRefused as exc:
        raise ConfigError(f"export file {exc.reason}", file=str(path)) from None


def read_export(path: str | Path, fmt: str = "auto", *, run_id: str | None = None,
                limit: int | None = None, raw: bytes | None = None) -> ExportedRun:
    """Read one exported file; `fmt` is one of FORMATS or "auto" (detected from content);
    `raw`, when given, is the file's bytes already read (so they are read once, and hashed as parsed)."""
    path = Path(path)
    shown = str(path)
    if raw is None:
        if path.is_dir():
            raise ConfigError("is a directory, expected an exported file", file=shown)
        raw = read_export_bytes(path, limit)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise not_utf8(raw, exc, shown) from None
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
        once_each(text, obj, shown)
        return parse_claude_json(obj, rid, shown)
    events, cut = jsonl_events(text, shown)
    run = parse_claude_stream(events, rid, shown) if fmt == "claude-stream" else parse_codex(events, rid, shown)
    if cut is not None:
        run.warnings.append(cut)
    if fmt == "claude-stream" and run.status is None:  # a saved session log: its sub-agents' own files
        add_subagent_calls(run, path, events, lambda file: read_export(file, fmt, limit=limit))
    return run


def _unknown_events(run: ExportedRun, events: list[dict], known: set[str]) -> None:
    """A warning naming the event types the reader does not know (they are skipped)."""
    unknown: dict[str, int] = {}
    for event in events:
        kind = event.get("type")
        if kind not in known:
            name = kind if isinstance(kind, str) else repr(kind)
            unknown[name] = unknown.get(name, 0) + 1
    if unknown:
        run.warnings.append("skipped events of unknown type: " +
                            ", ".join(f"{k} (x{n})" if n > 1 else k for k, n in unknown.items()))


def _figure(run: ExportedRun, source: dict, key: str, where: str, *, integer: bool = False) -> Any:
    """A count or amount the CLI printed; a negative, non-finite or mistyped value is unknown
    (None) with a warning, never a number that would pass a bound."""
    value = source.get(key)
    if value is None:
        return None
    good = not isinstance(value, bool) and isinstance(value, int if integer else (int, float))
    if good and isinstance(value, float):
        good = math.isfinite(value)
    if good and value >= 0:
        return value if integer else float(value)
    shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:40] + "…"
    run.warnings.append(f"{where}{key} is {shown}: not a usable figure, left unknown")
    return None


def _claude_input_tokens(run: ExportedRun, usage: dict) -> int | None:
    """Input tokens with the cache writes and reads; unknown when any part printed is no
    count (a total without it would read as known and smaller than it was)."""
    total = _figure(run, usage, "input_tokens", "usage.", integer=True)
    for key in ("cache_creation_input_tokens", "cache_read_input_tokens"):
        part = _figure(run, usage, key, "usage.", integer=True)
        if part is None and usage.get(key) is not None:
            return None
        if total is not None and part is not None:
            total += part
    return total


def _apply_claude_result(run: ExportedRun, result: dict) -> None:
    """Fill a run from Claude's final `result` object (the json format, or the stream's last event)."""
    usage = result.get("usage") if isinstance(result.get("usage"), dict) else {}
    run.output = result.get("result") if isinstance(result.get("result"), str) else run.output
    run.input_tokens = _claude_input_tokens(run, usage)
    run.output_tokens = _figure(run, usage, "output_tokens", "usage.", integer=True)
    run.cost_usd = _figure(run, result, "total_cost_usd", "")
    run.latency_ms = _figure(run, result, "duration_ms", "")
    run.num_turns = _figure(run, result, "num_turns", "", integer=True)
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
        if _none_reported(run, run.input_tokens, run.output_tokens, run.num_turns):
            run.input_tokens = run.output_tokens = run.cost_usd = None  # its cost is priced from them
    denials = result.get("permission_denials")
    if isinstance(denials, list) and denials:
        names = [d.get("tool_name") for d in denials if isinstance(d, dict)]
        run.warnings.append("permission denied for: " + ", ".join(str(n) for n in names))


def mark_denied(calls: list[dict], denials: Any) -> None:
    """Calls the permission system denied (the result's `permission_denials`, by tool_use id)
    carry `denied: True`: the agent attempted them, nothing was executed."""
    ids = {d.get("tool_use_id") for d in denials if isinstance(d, dict)} if isinstance(denials, list) else set()
    for call in calls:
        if isinstance(call.get("id"), str) and call["id"] in ids:
            call["denied"] = True


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


def _blocks(event: dict) -> list:
    message = event.get("message") if isinstance(event.get("message"), dict) else {}
    content = message.get("content")
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _claude_tool_errors(events: list[dict]) -> dict[str, bool]:
    """tool_use_id -> whether its tool_result is an error, wherever the result stands."""
    errors: dict[str, bool] = {}
    for event in events:
        if event.get("type") == "user":
            for block in _blocks(event):
                if block.get("type") == "tool_result" and isinstance(block.get("tool_use_id"), str):
                    errors[block["tool_use_id"]] = block.get("is_error") is True
    return errors


def _session_fields(run: ExportedRun, events: list[dict]) -> None:
    """The session id and model where no init event gave them (a saved session log names its
    session on every line, `sessionId`, and the model on each main-chain assistant message)."""
    if run.session_id is None:
        run.session_id = next((e["sessionId"] for e in events if isinstance(e.get("sessionId"), str)), None)
    if run.model is None:
        for event in events:
            message = event.get("message") if isinstance(event.get("message"), dict) else {}
            model = message.get("model")
            if event.get("type") == "assistant" and isinstance(model, str) and model != "<synthetic>" \
                    and not event.get("parent_tool_use_id") and event.get("isSidechain") is not True:
                run.model = model


def parse_claude_stream(events: list[dict], run_id: str, shown: str = "<claude-stream>") -> ExportedRun:
    """`claude -p --output-format stream-json --verbose`: tool calls from assistant messages,
    tool errors from the tool results, final figures from the `result` event. A tool_use id
    seen twice (an event printed twice) is one call."""
    run = ExportedRun(id=run_id, format="claude-stream", status="error", output=None)
    texts: list[str] = []
    results = _claude_tool_errors(events)
    seen: set[str] = set()
    result = None
    for event in events:
        kind = event.get("type")
        if kind == "system" and event.get("subtype") == "init":
            run.session_id = event.get("session_id") if isinstance(event.get("session_id"), str) else None
            run.model = event.get("model") if isinstance(event.get("model"), str) else None
        elif kind == "assistant":
            for block in _blocks(event):
                # a sub-agent's message (parent_tool_use_id set) is not the run's answer
                if block.get("type") == "text" and isinstance(block.get("text"), str) and \
                        not event.get("parent_tool_use_id") and event.get("isSidechain") is not True:
                    texts.append(block["text"])
                elif block.get("type") in ("tool_use", "server_tool_use", "mcp_tool_use"):
                    bid = block.get("id") if isinstance(block.get("id"), str) else None
                    if bid in seen:
                        run.warnings.append(f"tool_use id {bid!r} appears more than once: counted once")
                        continue
                    call = {"name": block.get("name"), "args": block.get("input"), "id": block.get("id")}
                    parent = event.get("parent_tool_use_id")
                    if isinstance(parent, str) and parent:  # a sub-agent's call (Task tool), not the run's own
                        call["subagent_of"] = parent
                    elif event.get("isSidechain") is True:  # an older session log keeps sub-agents inline
                        agent = event.get("agentId")
                        call["subagent_of"] = f"agent-{agent}" if isinstance(agent, str) and agent else "sidechain"
                    if bid is not None:
                        seen.add(bid)
                        if bid in results:
                            call["is_error"] = results[bid]
                    run.tool_calls.append(call)
        elif kind == "result":
            result = event
    _session_fields(run, events)
    _unknown_events(run, events, CLAUDE_EVENTS)
    if result is None:
        run.output = texts[-1] if texts else None
        mark_refused(run.tool_calls, events)
        if any("parentUuid" in e or "isSidechain" in e for e in events):  # fields of a saved session
            run.status = None
            run.warnings.append("a Claude Code session log (as saved under ~/.claude/projects), not a `claude -p` "
                                "export: it has no result event, so the run's final status, duration and cost "
                                "are unknown (capture with claude -p ... --output-format stream-json --verbose)")
        else:
            run.error = "the stream ended without a result event (the CLI was cut off)"
        return run
    _apply_claude_result(run, result)
    mark_denied(run.tool_calls, result.get("permission_denials"))
    if run.output is None and texts:
        run.output = texts[-1]
    return run


def _none_reported(run: ExportedRun, input_tokens: Any, output_tokens: Any, turns: Any) -> bool:
    """A completed model turn read a prompt, so 0 input and 0 output tokens is no count: the
    model server reported no usage and the CLI printed zeros for it. Unknown, never 0."""
    if input_tokens != 0 or output_tokens != 0 or not isinstance(turns, int) or turns < 1:
        return False
    run.warnings.append("the CLI reported 0 input and 0 output tokens for a completed model turn (the model "
                        "server reported no usage): tokens and cost left unknown")
    return True


def _codex_usage(run: ExportedRun, events: list[dict]) -> tuple[int | None, int | None]:
    """Input and output tokens summed over completed turns; a turn without a count makes
    that sum unknown, never the sum of the other turns (0 and 0 is no count: _none_reported)."""
    sums: list[int | None] = [0, 0]
    completed = False
    for event in events:
        if event.get("type") != "turn.completed":
            continue
        completed = True
        usage = event.get("usage") if isinstance(event.get("usage"), dict) else {}
        for i, key in enumerate(("input_tokens", "output_tokens")):
            value = _figure(run, usage, key, "turn.completed usage.", integer=True)
            sums[i] = None if value is None or sums[i] is None else sums[i] + value
        if _none_reported(run, usage.get("input_tokens"), usage.get("output_tokens"), 1):
            sums = [None, None]
    return (sums[0], sums[1]) if completed else (None, None)


def parse_codex(events: list[dict], run_id: str, shown: str = "<codex>") -> ExportedRun:
    """`codex exec --json`: the last agent message is the output; tool items are tool calls;
    usage summed over completed turns; no cost and no duration in this format. A turn that
    started and never ended (the stream was cut) makes the run an error."""
    run = ExportedRun(id=run_id, format="codex", status="error", output=None)
    if is_rollout(events) and not any(e.get("type") in CODEX_EVENTS for e in events):
        parse_codex_rollout(run, events, _figure)  # a session saved under ~/.codex/sessions
        _unknown_events(run, events, ROLLOUT_EVENTS)
        return run
    turns = 0
    completed = failed = open_turn = False
    errors: list[str] = []
    for event in events:
        kind = event.get("type")
        if kind == "thread.started":
            run.session_id = event.get("thread_id") if isinstance(event.get("thread_id"), str) else None
        elif kind == "turn.started":
            turns, open_turn = turns + 1, True
        elif kind == "turn.completed":
            completed, open_turn = True, False
        elif kind == "turn.failed":
            failed, open_turn = True, False
            err = event.get("error")
            errors.append(err.get("message") if isinstance(err, dict) else str(err))
        elif kind == "error":
            errors.append(str(event.get("message")))
    messages: list[str] = []
    skipped: dict[str, int] = {}
    for item in codex_items(events, run.warnings):
        itype = item.get("type")
        if itype == "agent_message" and isinstance(item.get("text"), str):
            messages.append(item["text"])
        elif itype == "error":
            run.warnings.append(f"codex error item: {item.get('message')}")
        elif itype in CODEX_TOOL_ITEMS:
            run.tool_calls.append(codex_call(item))
        elif itype not in CODEX_OTHER_ITEMS:
            skipped[str(itype)] = skipped.get(str(itype), 0) + 1
    if skipped:  # a newer Codex's item: perhaps an action, never silently nothing
        run.warnings.append("skipped codex items of unknown type (not counted as tool calls): " +
                            ", ".join(f"{k} (x{n})" if n > 1 else k for k, n in skipped.items()))
    _unknown_events(run, events, CODEX_EVENTS)
    run.output = messages[-1] if messages else None
    run.num_turns = turns or None
    if completed and not failed and not open_turn:
        run.status = "completed"
        run.input_tokens, run.output_tokens = _codex_usage(run, events)
    else:
        run.status = "error"
        cut = f"turn {turns} started and the stream ended before turn.completed (the CLI was cut off)" \
            if open_turn and completed else "the stream ended without turn.completed (the CLI was cut off)"
        run.error = "; ".join(dict.fromkeys(e for e in errors if e)) or cut
    return run
