"""Calibration controls for a judge's instrument check: known-good outputs the suite supplies
(and, optionally, degraded ones it supplies too), each with the task it answers.

One JSON object per line (or a JSON/YAML document {"controls": [...]})::

    {"id": "bakery", "input": "A landing page for a bakery ...", "output": "@good/bakery.html",
     "rubric": "...", "degraded": {"lorem": "@bad/bakery-lorem.html"}}

`output` and each degraded output are text, or "@relative/path" read like an `@` input: inside
the controls file's root, a regular UTF-8 file within limits.max_input_bytes. `input` is text
(or `@path`) or chat messages, held to the same rules as a case's: max_input_bytes, and the
conversation limits and chat order for messages. Ids and degraded names are one-line ids.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from pydantic import Field, field_validator

from ..errors import ConfigError
from ..hashing import sha256_json
from ..suite.config import Limits
from ..validation import Strict, one_line_id, parse_model
from .case import Case
from .formats import iter_case_records
from .loader import chat_input, read_at_file
from .schema import Message


class ControlRecord(Strict):
    id: str = Field(min_length=1)
    input: str | list[Message]
    output: str = Field(min_length=1)
    rubric: str | dict | None = None
    category: str | None = None
    notes: str | None = None
    degraded: dict[str, str] = Field(default_factory=dict)

    @field_validator("id")
    @classmethod
    def _id_one_line(cls, value: str) -> str:
        return one_line_id(value)  # a newline or an escape would forge report and terminal lines

    @field_validator("degraded")
    @classmethod
    def _names_one_line(cls, value: dict[str, str]) -> dict[str, str]:
        for name in value:  # each becomes a condition (a variant) named `supplied:NAME`
            one_line_id(name)
        return value


@dataclass
class Control:
    """One control: the case it answers, its good output and the degraded outputs supplied."""

    case: Case
    good: str
    supplied: dict[str, str]


def load_controls(path: str | os.PathLike, limits: Limits | None = None, *, root: str | os.PathLike | None = None,
                  inside: str | os.PathLike | None = None, reserved: tuple[str, ...] = ()) -> list[Control]:
    """Every control of one file; one ConfigError naming the file, line, control and field."""
    limits = limits or Limits()
    path = Path(path)
    shown = str(path)
    base = path.parent
    root = Path(root) if root is not None else base
    out: list[Control] = []
    seen: set[str] = set()
    for line, raw in iter_case_records(path, limits, inside=inside):
        cid = raw.get("id") if isinstance(raw.get("id"), str) else None
        record = parse_model(ControlRecord, raw, file=shown, line=line, case_id=cid)
        if record.id in seen:
            raise ConfigError("duplicate control id", file=shown, line=line, case_id=record.id, field="id")
        seen.add(record.id)

        def text(value: str, field: str, line: int | None = line, cid: str = record.id) -> str:
            if value.startswith("@"):
                return read_at_file(value[1:], base, root, limits, file=shown, line=line, case_id=cid, field=field)
            size = len(value.encode("utf-8"))
            if size > limits.max_input_bytes:  # inline text is held to the bound an @ file is
                raise ConfigError(f"{size} bytes, over the limit of {limits.max_input_bytes} (limits.max_input_bytes)",
                                  file=shown, line=line, case_id=cid, field=field)
            return value

        supplied = {}
        for name, value in record.degraded.items():
            if name == "good" or name in reserved:
                raise ConfigError(f"a supplied degraded control may not be named {name!r} (scoreboard makes "
                                  "that one)", file=shown, line=line, case_id=record.id, field=f"degraded.{name}")
            supplied[name] = text(value, f"degraded.{name}")
        value = text(record.input, "input") if isinstance(record.input, str) else \
            _messages(record.input, limits, file=shown, line=line, case_id=record.id)
        case = Case(id=record.id, input=value, category=record.category, notes=record.notes,
                    rubric=record.rubric, source=shown, line=line)
        case.input_hash = sha256_json(case.input)
        out.append(Control(case, text(record.output, "output"), supplied))
    if not out:
        raise ConfigError("no controls in file", file=shown)
    return out


def _messages(messages: list[Message], limits: Limits, *, file: str, line: int | None, case_id: str) -> list[dict]:
    """A control's chat-message input, held to a case's rules (size, conversation limits, order)."""
    return chat_input(messages, limits, {"file": file, "line": line, "case_id": case_id, "field": "input"})
