"""The schema of a case record as written in a case file (unknown fields are errors)."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, StrictBool, StrictFloat, field_validator, model_validator

from ..validation import Strict, each_once, one_line_id


class Message(Strict):
    role: Literal["system", "user", "assistant", "tool"]
    content: str
    #: the participant's name (OpenAI's chat `name`, as OpenAI Evals' few-shot `example_user`):
    #: sent as written by the openai subject; the anthropic subject refuses it (no such field)
    name: str | None = None
    #: the options an assistant message offered (so a later "the second one" can be tested)
    options: list[str] | None = None

    @model_validator(mode="after")
    def _options_on_assistant(self) -> Message:
        if self.options is not None and self.role != "assistant":
            raise ValueError("only an assistant message may carry options")
        return self


class CaseRecord(Strict):
    """One case as written in a case file."""

    #: another tool's name for a case field (a suite migrated by hand): said beside "unknown field"
    UNKNOWN_HINTS: ClassVar[dict[str, str]] = {
        "assert": " (promptfoo's assert: a case writes graders: [{contains: ...}], each {NAME: OPTIONS})",
        "expected_output": " (DeepEval's expected_output: a case writes expected)",
        "target": " (Inspect's target: a case writes expected)",
        "ideal": " (OpenAI Evals' ideal: a case writes expected)",
        "actual_output": " (DeepEval's actual_output is what the subject answers, never a case's: a case "
                         "writes input, or vars for the suite's prompt)",
        **{k: f" (DeepEval's {k}: a case keeps it in metadata: {{{k}: [...]}}, which a judge prompt reads as "
              f"{{{{ metadata.{k} }}}})" for k in ("context", "retrieval_context")},
        "description": " (promptfoo's description: a case writes notes)",
        "options": " (promptfoo's test options: a case writes transform, threshold or graders itself)"}

    id: str = Field(min_length=1)
    input: str | list[Message] | None = None
    expected: Any = None
    grader: str | dict | None = None
    graders: list[str | dict] | None = None
    fields: list[str | dict] | None = None
    category: str | None = None
    tags: list[str] = Field(default_factory=list)
    metadata: dict = Field(default_factory=dict)
    synthetic: StrictBool | None = None
    rubric: str | dict | None = None
    notes: str | None = None
    split: str | None = None
    turns: list[dict] | None = None
    conversation: dict | None = None
    #: template variables (any JSON), rendered into the suite's or variant's prompt
    vars: Any = None
    #: the case passes when the weighted mean score of its graders reaches this (0..1): a
    #: number, never a boolean or a string (pydantic would read `true` as 1.0, "0.5" as 0.5)
    threshold: Annotated[StrictFloat, Field(ge=0, le=1)] | None = None
    #: applied to the output before every grader of this case (graders/transforms.py)
    transform: Any = None
    #: the case's graders replace the suite defaults' graders instead of adding to them
    replace: StrictBool = False
    #: var names whose list value makes one case per value
    expand: list[str] | None = None

    @field_validator("id")
    @classmethod
    def _id_not_blank(cls, value: str) -> str:
        return one_line_id(value)

    @field_validator("expand")
    @classmethod
    def _expand_each_once(cls, value: Any) -> Any:
        return each_once(value)  # expanded twice: every case made again under a doubled id


def case_graders(record: CaseRecord, raw: dict, prefix: str = "") -> tuple[list | None, tuple[str, ...] | None]:
    """The grader specs a case names for itself (None: use the suite's), and beside each the field
    of the case it came from (`grader`, `graders.1`, `fields`, after `prefix`), so an error about a
    spec names what the case wrote."""
    specs: list = []
    fields: list[str] = []
    if record.grader is not None:
        specs.append(record.grader)
        fields.append(f"{prefix}grader")
    if record.graders:
        specs.extend(record.graders)
        fields.extend(f"{prefix}graders.{i}" for i in range(len(record.graders)))
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
                fields.append(f"{prefix}fields")
        if typed:
            specs.append({"fields": {"fields": typed}})
            fields.append(f"{prefix}fields")
    if not specs and record.graders is not None:
        return [], ()  # `graders: []`: recorded, never graded
    return (specs, tuple(fields)) if specs else (None, None)
