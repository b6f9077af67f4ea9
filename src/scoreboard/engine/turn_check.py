"""Whether a conversation's turn can be sent with the subject's earlier replies as its history."""

from __future__ import annotations

from ..cases.conversation import check_history


def turn_problem(subject, conv: dict, k: int, messages: list[dict], outputs: list[dict]) -> str | None:
    """Why turn k cannot be sent as the subject's earlier replies were (None when it can); the
    history is never shortened or altered to fit. A turn's history carries each earlier reply
    as its text (so its chain hash, verify and `export turns`), so a reply that made tool calls
    cannot be carried: no tool result follows them, and a chat API needs each call's result right
    after it (openai: a tool message per tool_call_id; anthropic: a tool_result per tool_use).
    Then what the subject's API refuses of the history (anthropic: an empty earlier reply)."""
    problem = check_history(conv, k, messages, conv["limits"])
    if problem is not None:
        return f"{problem} (history is never shortened to fit)"
    if subject.kind == "recorded":  # its outputs exist already: nothing is sent
        return None
    for earlier, output in enumerate(outputs):
        calls = [c for c in output.get("tool_calls") or () if isinstance(c, dict)]
        if calls:
            names = ", ".join(sorted({repr(str(c.get("name")))[:60] for c in calls}))
            return (f"the reply to turn {conv['turns'][earlier]['id']!r} made tool calls ({names}) that no tool "
                    "result follows: a turn's history carries an earlier reply as its text, and a chat API needs "
                    "each call's result after it (the history is never altered to fit)")
    check = getattr(subject, "input_problem", None)
    found = check(messages) if check is not None else None
    if found is None:
        return None
    field, reason = found
    index = int(field.split(".")[1])
    if messages[index]["role"] == "assistant":  # message 2j+1 is the reply to turn j
        return f"the reply to turn {conv['turns'][index // 2]['id']!r}: {reason} (the history is never altered to fit)"
    return f"{field}: {reason}"
