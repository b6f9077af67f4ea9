"""The cases an importer writes, laid out so that the suite loads them as written.

A suite's loader holds case files to `limits:` (suite/config.py Limits) that the tools suites are
imported from do not have: a file of at most 16 MiB, an input of at most 1 MiB, a chat-message
input of at most 40 messages, 2,000 characters per user message, 24,000 per assistant message and
50,000 in all, 100,000 cases, 256 MiB and 5,000,000 values in all. An imported sample is sent as
the original tool sends it, so instead of refusing it the importer:

- splits the cases into files of at most the default `max_file_bytes` (`cases.jsonl`, or
  `cases-1.jsonl`, `cases-2.jsonl`, ... when they need several);
- writes into the suite's `limits:` only what its cases need beyond the defaults (none for most
  suites), and says so in the conversion report.

The order of a chat's messages is another matter: a case's messages are a chat's (system messages
first, a user message before an assistant's, a tool result after its call), which
`order_problem` checks so that a sample in another order is listed as not converted.
"""

from __future__ import annotations

import json
from typing import Any

from ..cases.budget import count_values
from ..cases.conversation import check_messages
from ..suite.config import ConversationLimits, Limits

_UNBOUNDED = ConversationLimits(max_turns=10**9, max_question_chars=10**12, max_assistant_chars=10**12,
                                max_messages=10**9, max_options=10**9, max_conversation_chars=10**12)


def order_problem(messages: list[dict]) -> str | None:
    """Why a case cannot hold these chat messages in this order (None when it can)."""
    problem = check_messages(messages, _UNBOUNDED)
    if problem is None:
        return None
    field, message = problem
    return f"input{field}: {message}"


def _needs(cases: list[dict], default: Limits) -> dict:
    """The conversation and input limits the cases need beyond the defaults."""
    need = {"max_input_bytes": 0, "max_messages": 0, "max_question_chars": 0, "max_assistant_chars": 0,
            "max_conversation_chars": 0}
    for case in cases:
        raw = case.get("input")
        if isinstance(raw, str):
            need["max_input_bytes"] = max(need["max_input_bytes"], len(raw.encode("utf-8")))
            continue
        if not isinstance(raw, list):
            continue
        contents = [(m.get("role"), str(m.get("content", ""))) for m in raw if isinstance(m, dict)]
        need["max_input_bytes"] = max(need["max_input_bytes"], sum(len(c.encode("utf-8")) for _, c in contents))
        need["max_messages"] = max(need["max_messages"], len(contents))
        need["max_conversation_chars"] = max(need["max_conversation_chars"], sum(len(c) for _, c in contents))
        for role, content in contents:
            key = {"user": "max_question_chars", "assistant": "max_assistant_chars"}.get(role)
            if key:
                need[key] = max(need[key], len(content))
    out: dict[str, Any] = {}
    if need["max_input_bytes"] > default.max_input_bytes:
        out["max_input_bytes"] = need["max_input_bytes"]
    conversation = {k: v for k, v in need.items() if k != "max_input_bytes" and v > getattr(default.conversation, k)}
    if conversation:
        out["conversation"] = conversation
    return out


def case_files(cases: list[dict]) -> tuple[dict[str, str], str | list[str], dict]:
    """The case files ({name: JSONL text}), the suite's `cases:` value, and the `limits:` the
    suite needs beyond the defaults (empty for most imports)."""
    default = Limits()
    parts: list[list[str]] = [[]]
    size = 0
    for case in cases:
        line = json.dumps(case, ensure_ascii=False) + "\n"
        n = len(line.encode("utf-8"))
        if parts[-1] and size + n > default.max_file_bytes:
            parts.append([])
            size = 0
        parts[-1].append(line)
        size += n
    texts = ["".join(p) for p in parts]
    if len(texts) == 1:
        files: dict[str, str] = {"cases.jsonl": texts[0]}
        listed: str | list[str] = "cases.jsonl"
    else:
        files = {f"cases-{i}.jsonl": text for i, text in enumerate(texts, start=1)}
        listed = list(files)
    sizes = [len(t.encode("utf-8")) for t in texts]
    limits: dict[str, Any] = {}
    if max(sizes) > default.max_file_bytes:  # one case alone is larger than a file may be
        limits["max_file_bytes"] = max(sizes)
    if sum(sizes) > default.max_total_bytes:
        limits["max_total_bytes"] = sum(sizes)
    if len(cases) > default.max_cases:
        limits["max_cases"] = len(cases)
    if len(cases) > default.max_attempts:
        limits["max_attempts"] = len(cases)
    values = sum(count_values(c) for c in cases)
    if values > default.max_values:
        limits["max_values"] = values
    limits.update(_needs(cases, default))
    return files, listed, limits


def limits_note(limits: dict) -> str:
    """The conversion report's words for the limits a suite was given."""
    flat = []
    for key, value in limits.items():
        if isinstance(value, dict):
            flat += [f"{key}.{k}: {v:,}" for k, v in value.items()]
        else:
            flat.append(f"{key}: {value:,}")
    return ("limits: the suite's `limits:` raise " + ", ".join(flat) + " (the defaults would refuse these cases; "
            "the original tool sends them as they are)")
