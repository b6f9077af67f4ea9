"""The schema of a case record as written in a case file (unknown fields are errors)."""

from __future__ import annotations

from typing import Any, Literal, Union

from pydantic import Field, field_validator

from ..validation import Strict


class Message(Strict):
    role: Literal["system", "user", "assistant", "tool"]
    content: str


class CaseRecord(Strict):
    """One case as written in a case file."""

    id: str = Field(min_length=1)
    input: Union[str, list[Message], None] = None
    expected: Any = None
    grader: Union[str, dict, None] = None
    graders: list[Union[str, dict]] | None = None
    fields: list[Union[str, dict]] | None = None
    category: str | None = None
    tags: list[str] = Field(default_factory=list)
    metadata: dict = Field(default_factory=dict)
    synthetic: bool | None = None
    rubric: Union[str, dict, None] = None
    notes: str | None = None
    split: str | None = None
    turns: list[dict] | None = None
    conversation: dict | None = None

    @field_validator("id")
    @classmethod
    def _id_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must be a nonempty string")
        return value
