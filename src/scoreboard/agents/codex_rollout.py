"""A Codex session rollout (the JSONL Codex saves under ~/.codex/sessions) as one run.

Each line is `{"timestamp", "type", "payload"}` with `type` one of `session_meta`,
`turn_context`, `response_item` (messages, `function_call` / `custom_tool_call` /
`local_shell_call` / `web_search_call` and their outputs), `event_msg` (`task_started`,
`task_complete`, `turn_aborted`, `token_count`, `agent_message`, `exec_command_end`, ...)
and `compacted`. Tool calls are named as `codex exec --json` names them where the two
agree (a shell call is `command_execution`, `apply_patch` is `file_change`, a web search is
`web_search`), other tools by their own name. A rollout holds no cost and no duration (its
timestamps include the time a person took to answer): both stay unknown. Its final status is
read from the last task's `task_complete` / `turn_aborted`; a rollout without them (older
Codex, or a session cut off) leaves the status unknown, with a warning.
"""

from __future__ import annotations

import json
import re
import shlex

ROLLOUT_EVENTS = {"session_meta", "turn_context", "response_item", "event_msg", "compacted"}
#: response items that are no action: what was said and thought, a call's output, bookkeeping
_NOT_CALLS = {"message", "reasoning", "function_call_output", "custom_tool_call_output", "tool_search_output",
              "ghost_snapshot", "compaction", "compaction_summary", "other"}
_SHELL_TOOLS = {"shell", "shell_command", "exec_command", "container.exec", "local_shell"}
_EXIT = re.compile(r"\A\s*Exit code:\s*(-?\d+)")
#: the header a unified-exec call's output starts with (`exec_command`: "Chunk ID: ...\nWall time: ...
#: \nProcess exited with code N\n...\nOutput:\n<the command's own output>")
_PROCESS_EXIT = re.compile(r"^Process exited with code (-?\d+)$", re.M)


def is_rollout(events: list[dict]) -> bool:
    """Whether the events are a session rollout rather than `codex exec --json` output."""
    return any(e.get("type") in ROLLOUT_EVENTS and isinstance(e.get("payload"), dict) for e in events)


def _command(value) -> str | None:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return shlex.join(value)
    return value if isinstance(value, str) else None


def _arguments(raw) -> object:
    """A function call's arguments: the JSON string decoded, or the text as it is."""
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


def _call(payload: dict) -> dict | None:
    """A response item as a tool call, or None when it is no call."""
    kind = payload.get("type")
    cid = payload.get("call_id") if isinstance(payload.get("call_id"), str) else payload.get("id")
    if kind == "function_call":
        name, args = payload.get("name"), _arguments(payload.get("arguments"))
        if name in _SHELL_TOOLS and isinstance(args, dict):
            cmd = args.get("command", args.get("cmd"))
            return {"name": "command_execution", "tool": name, "args": {"command": _command(cmd)}, "id": cid}
        return {"name": name, "args": args, "id": cid}
    if kind == "custom_tool_call":
        name = payload.get("name")
        if name == "apply_patch":
            return {"name": "file_change", "tool": name, "args": {"patch": payload.get("input")}, "id": cid}
        return {"name": name, "args": payload.get("input"), "id": cid}
    if kind == "local_shell_call":
        action = payload.get("action") if isinstance(payload.get("action"), dict) else {}
        return {"name": "command_execution", "tool": "local_shell", "args": {"command": _command(action.get("command"))},
                "id": cid}
    if kind == "web_search_call":
        action = payload.get("action") if isinstance(payload.get("action"), dict) else {}
        return {"name": "web_search", "args": {"query": action.get("query")}, "id": cid}
    return None


def _exit_code(output) -> int | None:
    """The exit status a tool output records: `{"metadata": {"exit_code"}}`, "Exit code: N", or
    a unified-exec header's "Process exited with code N" (read only above its "Output:" line,
    so the command's own output cannot fake one; a process still running has none)."""
    if isinstance(output, dict):  # newer Codex: {"content": ..., "success": ...}
        output = output.get("content")
    if not isinstance(output, str):
        return None
    try:
        value = json.loads(output)
    except ValueError:
        value = None
    if isinstance(value, dict) and isinstance(value.get("metadata"), dict):
        code = value["metadata"].get("exit_code")
        return code if isinstance(code, int) and not isinstance(code, bool) else None
    match = _EXIT.match(output)
    if match is None and output.startswith("Chunk ID: "):
        match = _PROCESS_EXIT.search(output.split("\nOutput:", 1)[0])
    return int(match.group(1)) if match else None


def parse_codex_rollout(run, events: list[dict], figure) -> None:
    """Fill `run` (an ExportedRun) from rollout lines; `figure` reads a count as exports.py does."""
    calls: dict[str, dict] = {}
    messages: list[str] = []
    agent_messages: list[str] = []
    tasks = 0
    ended: str | None = None  # how the last task ended: "completed", "aborted" or None
    errors: list[str] = []
    usage = None
    skipped: dict[str, int] = {}
    for event in events:
        payload = event.get("payload") if isinstance(event.get("payload"), dict) else {}
        kind, ptype = event.get("type"), payload.get("type")
        if kind == "session_meta":
            run.session_id = payload.get("id") if isinstance(payload.get("id"), str) else run.session_id
        elif kind == "turn_context" and isinstance(payload.get("model"), str):
            run.model = payload["model"]
        elif kind == "response_item":
            call = _call(payload)
            if call is not None:
                cid = call["id"] if isinstance(call["id"], str) else None
                if cid is not None and cid in calls:
                    run.warnings.append(f"codex call_id {cid!r} appears more than once: counted once")
                    continue
                run.tool_calls.append(call)
                if cid is not None:
                    calls[cid] = call
            elif ptype in ("function_call_output", "custom_tool_call_output") and payload.get("call_id") in calls:
                code = _exit_code(payload.get("output"))
                target = calls[payload["call_id"]]
                if code is not None and "exit_code" not in target:
                    target["exit_code"], target["is_error"] = code, code != 0
            elif ptype == "message" and payload.get("role") == "assistant" and isinstance(payload.get("content"), list):
                text = "".join(b.get("text") for b in payload["content"]
                               if isinstance(b, dict) and b.get("type") == "output_text" and isinstance(b.get("text"), str))
                if text:
                    messages.append(text)
            elif ptype not in _NOT_CALLS:  # a newer Codex's item: perhaps an action, never silently nothing
                skipped[str(ptype)] = skipped.get(str(ptype), 0) + 1
        elif kind == "event_msg":
            if ptype == "task_started":
                tasks, ended, errors = tasks + 1, None, []
            elif ptype == "task_complete":
                ended = "completed"
            elif ptype == "turn_aborted":
                ended = "aborted"
                errors.append(f"the turn was aborted ({payload.get('reason')})")
            elif ptype == "error" and isinstance(payload.get("message"), str):
                errors.append(payload["message"])
            elif ptype == "agent_message" and isinstance(payload.get("message"), str):
                agent_messages.append(payload["message"])
            elif ptype == "exec_command_end" and payload.get("call_id") in calls:
                code = payload.get("exit_code")
                if isinstance(code, int) and not isinstance(code, bool):
                    target = calls[payload["call_id"]]
                    target["exit_code"], target["is_error"] = code, code != 0
            elif ptype == "token_count":
                info = payload.get("info")
                usage = info.get("total_token_usage") if isinstance(info, dict) else None
    if skipped:
        run.warnings.append("skipped rollout items of unknown type (not counted as tool calls): " +
                            ", ".join(f"{k} (x{n})" if n > 1 else k for k, n in skipped.items()))
    run.output = (messages or agent_messages or [None])[-1]
    run.num_turns = tasks or None
    if isinstance(usage, dict):
        run.input_tokens = figure(run, usage, "input_tokens", "token_count total_token_usage.", integer=True)
        run.output_tokens = figure(run, usage, "output_tokens", "token_count total_token_usage.", integer=True)
    if ended == "completed":
        run.status = "completed"
    elif ended == "aborted" or (tasks and errors):
        run.status = "error"
        run.error = "; ".join(dict.fromkeys(errors)) or "the turn was aborted"
    else:
        run.status = None
        run.warnings.append("a Codex session rollout (as saved under ~/.codex/sessions), not `codex exec --json` "
                            "output: its last task records no end, so the run's final status is unknown "
                            "(capture with codex exec --json)")


#: how Codex answers the model a call it refuses itself (its tool router), before anything runs
_REFUSALS = ("unsupported call: ", "unsupported custom tool call: ", "failed to parse function arguments")


def _response_items(events: list[dict]):
    """The payloads of a rollout's `response_item` events (a model's messages and tool calls)."""
    for event in events:
        if isinstance(event, dict) and event.get("type") == "response_item" and isinstance(event.get("payload"), dict):
            yield event["payload"]


def _output(said: str, cap: int) -> dict:
    """A call's output as recorded: its first `cap` bytes, its whole size, whether it was cut."""
    text = said.encode("utf-8")[:cap].decode("utf-8", "ignore")
    return {"output": text, "output_bytes": len(said.encode("utf-8")), "output_truncated": len(text) < len(said)}


def refused_calls(events: list[dict], cap: int) -> list[dict]:
    """The calls a rollout shows Codex refusing itself (a tool it does not offer, arguments it
    cannot parse), which `codex exec --json` never prints: each as a call marked `denied`
    (attempted, not executed), its refusal as its output (the first `cap` bytes)."""
    calls: dict[str, dict] = {}
    out = []
    for payload in _response_items(events):
        if payload.get("type") in ("function_call", "custom_tool_call") and isinstance(payload.get("call_id"), str):
            calls.setdefault(payload["call_id"], payload)
        elif payload.get("type") in ("function_call_output", "custom_tool_call_output"):
            said = payload.get("output")
            said = said.get("content") if isinstance(said, dict) else said
            call = calls.pop(payload.get("call_id"), None) if isinstance(payload.get("call_id"), str) else None
            if call is None or not isinstance(said, str) or not said.startswith(_REFUSALS):
                continue
            raw = call.get("arguments") if call.get("type") == "function_call" else call.get("input")
            out.append({"name": call.get("name") if isinstance(call.get("name"), str) else None,
                        "args": _arguments(raw), "id": call["call_id"], "denied": True, "is_error": True,
                        "refused_by": "codex", **_output(said, cap)})
    return out


def _own_output(output) -> str:
    """A shell call's output as the command printed it (a unified-exec header left out)."""
    if isinstance(output, dict):
        output = output.get("content")
    if not isinstance(output, str):
        return ""
    if output.startswith("Chunk ID: ") and "\nOutput:\n" in output:
        return output.split("\nOutput:\n", 1)[1]
    return output


def unstreamed_commands(events: list[dict], streamed: list[dict], cap: int, line=str) -> list[dict]:
    """The shell commands a rollout shows run that `codex exec --json` did not print (its stream
    can drop the item of a command that ended at once, e.g. one its own sandbox failed to
    start): each as a `command_execution` call with its exit status and output (the first `cap`
    bytes), `source: "rollout"`. A command the stream printed (same command line, counted) is
    not added again. `line` gives the command line a shell wrapper runs (both sides compare so,
    and an added call's `command` is it)."""
    seen: dict[str, int] = {}
    for call in streamed:
        if call.get("name") == "command_execution" and not call.get("denied"):
            key = line(str((call.get("args") or {}).get("command")))
            seen[key] = seen.get(key, 0) + 1
    calls: dict[str, dict] = {}
    out = []
    for payload in _response_items(events):
        call = _call(payload) if payload.get("type") == "function_call" else None
        if call is not None and call["name"] == "command_execution" and isinstance(call["id"], str) \
                and isinstance(call["args"]["command"], str):
            calls.setdefault(call["id"], call)
        elif payload.get("type") == "function_call_output" and payload.get("call_id") in calls:
            call = calls.pop(payload["call_id"])
            key = line(str(call["args"]["command"]))
            if seen.get(key, 0) > 0:
                seen[key] -= 1
                continue
            said = _own_output(payload.get("output"))
            if said.startswith(_REFUSALS):  # refused by Codex, never run: refused_calls has it
                continue
            code = _exit_code(payload.get("output"))
            out.append({"name": "command_execution", "args": {"command": call["args"]["command"]}, "command": key,
                        "id": call["id"], "exit_code": code, "is_error": code not in (0, None), **_output(said, cap),
                        "source": "rollout"})
    return out
