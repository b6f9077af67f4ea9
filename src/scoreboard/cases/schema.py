"""The schema of a case record as written in a case file (unknown fields are errors)."""

from __future__ import annotations

from typing import Any, Literal, Union

from pydantic import Field, field_validator, model_validator

from ..validation import Strict


class Message(Strict):
    role: Literal["system", "user", "assistant", "tool"]
    content: str
    #: the options an assistant message offered (so a later "the second one" can be tested)
    options: list[str] | None = None

    @model_validator(mode="after")
    def _options_on_assistant(self) -> Message:
        if self.options is not None and self.role != "assistant":
            raise ValueError("only an assistant message may carry options")
        return self


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


def case_graders(record: CaseRecord, raw: dict) -> list | None:
    """The grader specs a case names for itself (None: use the suite's)."""
    specs: list = []
    if record.grader is not None:
        specs.append(record.grader)
    if record.graders:
        specs.extend(record.graders)
    if record.fields:
        typed = [f for f in record.fields if isinstance(f, dict)]
        paths = [f for f in record.fields if isinstance(f, str)]
        merged = False
        if paths:
            for index, spec in enumerate(specs):
                if spec == "json-fields":
                    specs[index] = {"json-fields": {"fields": paths}}
                    merged = True
            if not merged:
                specs.append({"json-fields": {"fields": paths}})
        if typed:
            specs.append({"fields": {"fields": typed}})
    return specs or None
