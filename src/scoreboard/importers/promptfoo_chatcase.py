"""A text prompt that a test's vars make JSON: promptfoo's openai chat provider (and ollama:chat)
runs parseChatPrompt (src/providers/shared.ts) on each rendered prompt, so what a case sends
depends on its vars. Per case and per text prompt, the converted template is rendered with the
case's vars as the suite will render it, then read as parseChatPrompt reads it:

- trimmed text starting `- role:` is YAML messages;
- else JSON.parse: a value is sent as the request's `messages` (a list of `{role, content}`
  messages is a chat; any other value the API refuses, and promptfoo's row errors);
- text JSON.parse refuses that looksLikeJson (`{...}`, or `[` followed by `"`, `{`, `[`, a digit,
  `-`, `true`/`false`/`null` or nothing, ending `]`) throws "Chat Completion prompt is not a valid
  JSON string": the row errors;
- anything else is sent as one user message, as the suite sends it.

A case whose every prompt errors on a suite whose every variant is such a chat provider gets a
grader that always fails (a note), as promptfoo's row errors; a case that would error or send
messages only on some variant or prompt, or that sends messages (a case cannot carry its own
messages beside the suite's prompt), is listed for each chat variant."""

from __future__ import annotations

import re
from typing import Any

from ..errors import shorten
from ..templating.js import js_json_parse, js_trim

_LOOKS = re.compile(r'^(?:["{\[\d-]|true|false|null)')


def setup(prompts: dict[str, Any], json_names: tuple, variants: dict[str, dict]) -> dict | None:
    """What each case is checked against: the text prompts (compiled) and the chat variants."""
    chat = [n for n, v in variants.items() if (v.get("subject") or {}).get("type") == "openai"]
    texts = {n: t for n, t in prompts.items()  # `- role:` YAML as written is listed per prompt (promptfoo_chat)
             if n not in json_names and isinstance(t, str) and not js_trim(t).startswith("- role:")}
    if not chat or not texts:
        return None
    from ..templating import environment

    compiled = {}
    for name, text in texts.items():
        try:
            compiled[name] = environment("empty").from_string(text)
        except Exception:  # noqa: BLE001 - the suite refuses it when it loads, naming the prompt
            continue
    return {"prompts": compiled, "chat": chat, "all_chat": len(chat) == len(variants)}


def looks_like_json(text: str) -> bool:
    """promptfoo's looksLikeJson (src/providers/shared.ts) on the trimmed prompt."""
    t = js_trim(text)
    if t.startswith("{") and t.endswith("}"):
        return True
    if t.startswith("[") and t.endswith("]"):
        after = js_trim(t[1:])  # t ends with "]": only its start is trimmed, as trimStart
        return not after or _LOOKS.match(after) is not None
    return False


def parsed(text: str) -> tuple[str, Any]:
    """What parseChatPrompt makes of a rendered prompt: ("text", None), ("yaml", None),
    ("messages", list), ("refused", value: JSON the API refuses as `messages`) or ("throws", why)."""
    if js_trim(text).startswith("- role:"):
        return "yaml", None
    try:
        value = js_json_parse(text)  # JSON.parse refuses NaN and Infinity
    except (ValueError, RecursionError) as exc:
        if looks_like_json(text):
            return "throws", f"Chat Completion prompt is not a valid JSON string: {str(exc).splitlines()[0]}"
        return "text", None
    if isinstance(value, list) and value and all(
            isinstance(m, dict) and isinstance(m.get("role"), str) and "content" in m for m in value):
        return "messages", value
    return "refused", value


def check(vars_: dict, where: str, ctx: Any) -> dict | None:
    """The always-failing grader for a case whose rendered prompt promptfoo's chat provider errors
    on (None otherwise); a case that cannot follow promptfoo is listed."""
    from .promptfoo_assert_code import runtime_spec

    chat = getattr(ctx, "chat_rows", None)
    if not chat:
        return None
    names = {**vars_, "vars": vars_}
    outcomes: dict[str, tuple[str, Any, str]] = {}
    for pname, template in chat["prompts"].items():
        try:
            text = template.render(names)
        except Exception:  # noqa: BLE001 - the suite's own render reports it, naming the case
            continue
        kind, value = parsed(text)
        outcomes[pname] = (kind, value, text)
    if not outcomes or all(k == "text" for k, _, _ in outcomes.values()):
        return None
    errors = {p: o for p, o in outcomes.items() if o[0] in ("refused", "throws")}
    if errors and len(errors) == len(chat["prompts"]) and chat["all_chat"]:
        kind, value, text = next(iter(errors.values()))
        reason = value if kind == "throws" else (
            f"API error: the rendered prompt {shorten(text, 60)!r} is JSON ({_js_type(value)}), which promptfoo's "
            "chat provider sends as the request's `messages`; the API refuses it")
        ctx.report.note(f"{where}: the rendered prompt {shorten(text, 60)!r} is "
                        + ("text promptfoo's chat provider throws on (it looks like JSON and is not)" if kind == "throws"
                           else "JSON but no list of messages, which promptfoo's chat provider sends as the "
                           "request's `messages` and the API refuses")
                        + ": promptfoo's row errors, so the case gets a grader that always fails")
        return runtime_spec(ctx, f"_pf.fail({reason!r})")
    for pname, (kind, value, text) in outcomes.items():
        if kind == "text":
            continue
        count = len(value) if kind == "messages" else 0
        what = {"yaml": "reads as YAML chat messages", "messages": f"sends as {count} chat messages",
                "refused": "sends as the request's `messages`, which the API refuses (the row errors)",
                "throws": "throws on (the row errors)"}[kind]
        why = ("a case cannot carry its own messages beside the suite's prompt" if kind in ("yaml", "messages")
               else "a case cannot fail for some prompts or variants only")
        for vname in chat["chat"]:
            ctx.report.skip(f"{where} prompt {pname!r} on variant {vname!r}",
                            f"not converted: the rendered prompt {shorten(text, 60)!r} is text promptfoo's chat "
                            f"provider {what}; the suite sends it as one user message ({why})")
    return None


def _js_type(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if value is None:
        return "null"
    return "an array" if isinstance(value, list) else "an object"
