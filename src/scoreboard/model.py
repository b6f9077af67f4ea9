"""Pydantic schemas for everything read from users: case records and suite files.

Every model forbids unknown fields, so a typo is an error naming the field, not a silent no-op.
"""

from __future__ import annotations

from typing import Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .errors import ConfigError


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False)


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

    @field_validator("id")
    @classmethod
    def _id_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must be a nonempty string")
        return value


class Limits(Strict):
    """Bounds on what a case file may hold; each configurable per suite."""

    max_file_bytes: int = Field(16 * 1024 * 1024, gt=0)
    max_cases: int = Field(100_000, gt=0)
    max_input_bytes: int = Field(1024 * 1024, gt=0)


class VariantConfig(Strict):
    """A named subject configuration: subject + optional skill + params."""

    name: str | None = None
    subject: Union[str, dict, None] = None
    skill: str | None = None
    params: dict = Field(default_factory=dict)
    description: str | None = None


class SuiteConfig(Strict):
    """A suite file: every setting the command-line flags hold."""

    name: str | None = None
    description: str | None = None
    cases: Union[str, list[str], None] = None
    graders: list[Union[str, dict]] | None = None
    subject: Union[str, dict, None] = None
    variants: Union[dict[str, VariantConfig], list[VariantConfig], None] = None
    runs: int = Field(1, ge=1, le=1000)
    concurrency: int | None = Field(None, ge=1, le=10_000)
    timeout_ms: int = Field(120_000, gt=0)
    category: list[str] | None = None
    case: list[str] | None = None
    output_dir: str = "eval-results"
    formats: list[Literal["json", "md", "html", "junit"]] | None = None
    fail_under: Union[float, dict[str, float], None] = None
    limits: Limits = Field(default_factory=Limits)
    seed: int = 0
    checkpoint_every: int = Field(100, ge=1)
    checkpoint_seconds: float = Field(10.0, gt=0)

    @field_validator("category", "case", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value


def first_error(exc: ValidationError) -> tuple[str, str]:
    """(field path, message) of a pydantic error, phrased for one line."""
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err.get("loc", ()))
    kind = err.get("type", "")
    if kind == "extra_forbidden":
        return loc, "unknown field"
    if kind == "missing":
        return loc, "required field is missing"
    msg = err.get("msg", "invalid value")
    if kind.startswith("literal_error") or kind.endswith("_type") or kind == "union_tag_invalid":
        got = err.get("input")
        got_s = repr(got)
        if len(got_s) > 60:
            got_s = got_s[:57] + "..."
        msg = f"{msg} (got {got_s})"
    return loc, msg


def parse_model(model: type[BaseModel], data: Any, *, file: str | None = None,
                line: int | None = None, case_id: str | None = None, prefix: str = "") -> Any:
    """Validate `data` against `model`; a failure is one ConfigError naming the field."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        loc, msg = first_error(exc)
        if prefix:
            loc = f"{prefix}.{loc}" if loc else prefix
        raise ConfigError(msg, file=file, line=line, case_id=case_id, field=loc or None) from None
