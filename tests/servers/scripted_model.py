"""A loopback model that plays a scripted agent: it answers Anthropic Messages and OpenAI
Responses requests with the next step of a script, chosen by how many tool results the
conversation already holds (so retries and side requests cannot shift the script).

    steps = [bash("curl -s \"$SHOP_URL/api/search?q=blue\""), bash("cat notes.txt"), say("Done.")]
    with ScriptedModel(steps) as model:
        ... point Claude Code at model.base_url, Codex at model.base_url + "/v1" ...

A step is a behaviour of tests.servers.fake_provider (`{"tool_calls": [...]}` or
`{"reply": ...}`), or a callable `(request_json, tool_outputs) -> behaviour` that can read
what the tools returned so far (the text of every tool result, oldest first). `bash(cmd)`
gives the shell call of whichever CLI asks: Claude Code's `Bash` tool or Codex's shell tool
(its name read from the tools the request offers). Past the end of the script the model says
"done". Requests that offer no tools (Claude Code's side calls) get a short text answer.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from aiohttp import web

from tests.servers.fake_provider import RECORD, FakeProvider, _closed_response, _Dropped

Step = dict | Callable[[dict, list[str]], dict]


def bash(command: str) -> dict:
    """A step: run `command` in the CLI's shell tool."""
    return {"shell": command}


def say(text: str) -> dict:
    """A step: the final message."""
    return {"reply": text}


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_text(c.get("text") if isinstance(c, dict) and "text" in c else
                               c.get("content") if isinstance(c, dict) else c) for c in content)
    return "" if content is None else str(content)


def tool_outputs(req: dict) -> list[str]:
    """The text of every tool result in a Messages or Responses request, oldest first."""
    out: list[str] = []
    for message in req.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                out.append(_text(block.get("content")))
    for item in req.get("input") or [] if isinstance(req.get("input"), list) else []:
        if isinstance(item, dict) and item.get("type") in ("function_call_output", "custom_tool_call_output"):
            output = item.get("output")
            out.append(output if isinstance(output, str) else json.dumps(output))
    return out


def tool_names(req: dict) -> list[str]:
    """The names of the tools a request offers."""
    return [t.get("name") or t.get("type") for t in req.get("tools") or [] if isinstance(t, dict)]


def _shell_call(req: dict, command: str) -> dict:
    names = tool_names(req)
    if "Bash" in names:
        return {"name": "Bash", "args": {"command": command, "description": "run a command"}}
    if "exec_command" in names:
        return {"name": "exec_command", "args": {"cmd": command}}
    if "shell_command" in names:
        return {"name": "shell_command", "args": {"command": command}}
    if "shell" in names:
        return {"name": "shell", "args": {"command": ["bash", "-lc", command]}}
    raise RuntimeError(f"the request offers no shell tool (tools: {names})")


class ScriptedModel(FakeProvider):
    """FakeProvider whose answers follow `steps` by conversation position (see the module doc)."""

    def __init__(self, steps: list[Step], **kw):
        super().__init__(**kw)
        self.steps = list(steps)

    def behaviour_for(self, req: dict) -> dict:
        if not req.get("tools"):
            return {"reply": "ok"}
        outputs = tool_outputs(req)
        step: Any = self.steps[len(outputs)] if len(outputs) < len(self.steps) else say("done")
        if callable(step):
            step = step(req, outputs)
        step = dict(step)
        if "shell" in step:
            commands = step.pop("shell")
            commands = commands if isinstance(commands, list) else [commands]
            step["tool_calls"] = [_shell_call(req, c) for c in commands]
        return step

    async def _run(self, request: web.Request, route: str, render) -> web.StreamResponse:
        req = request[RECORD]["json"]
        req = req if isinstance(req, dict) else {}
        b = self.behaviour_for(req)
        streaming = bool(req.get("stream"))
        try:
            early = await self._pre(request, route, b, streaming)
            if early is not None:
                return early
            return await render(request, req, b, streaming)
        except (_Dropped, ConnectionError):
            return _closed_response()
