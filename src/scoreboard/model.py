"""Pydantic schemas for everything read from users: case records and suite files.

Every model forbids unknown fields, so a typo is an error naming the field, not a silent no-op.
"""

from __future__ import annotations

import re
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
    conversation: dict | None = None

    @field_validator("id")
    @classmethod
    def _id_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must be a nonempty string")
        return value


class ConversationLimits(Strict):
    """Bounds on conversation fixtures (from the chat fixtures this grew from); configurable."""

    max_turns: int = Field(10, ge=1)
    max_question_chars: int = Field(2000, ge=1)
    max_assistant_chars: int = Field(24000, ge=1)
    max_messages: int = Field(40, ge=2)
    max_notes_chars: int = Field(12000, ge=0)
    max_conversation_chars: int = Field(50000, ge=1)
    max_file_bytes: int = Field(2 * 1024 * 1024, gt=0)


class Limits(Strict):
    """Bounds on what a case file may hold; each configurable per suite."""

    max_file_bytes: int = Field(16 * 1024 * 1024, gt=0)
    max_cases: int = Field(100_000, gt=0)
    max_input_bytes: int = Field(1024 * 1024, gt=0)
    conversation: ConversationLimits = Field(default_factory=ConversationLimits)


class BudgetConfig(Strict):
    """Run-wide limits across variants, judges and retries; a budget is never exceeded."""

    max_requests: int | None = Field(None, ge=0)
    max_cost_usd: float | None = Field(None, ge=0)
    max_tokens: int | None = Field(None, ge=0)


class Price(Strict):
    """USD per million tokens."""

    input_per_mtok: float = Field(ge=0)
    output_per_mtok: float = Field(ge=0)


class GateConfig(Strict):
    """Baseline regression gate."""

    baseline: str | None = None
    max_regression: float | None = Field(None, ge=0, le=1)
    require_significance: bool = False
    alpha: float = Field(0.05, gt=0, lt=1)


class PairwiseConfig(Strict):
    """Pairwise judging of every pair of variants, asked in both orders."""

    rubric: str | None = None


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
    budget: BudgetConfig = Field(default_factory=BudgetConfig)
    prices: dict[str, Price] = Field(default_factory=dict)
    model: str | None = None
    split: str | None = None
    cache: bool = False
    cache_path: str = ".scoreboard-cache/responses.sqlite"
    grace_seconds: float = Field(30.0, ge=0)
    gates: GateConfig = Field(default_factory=GateConfig)
    judge: Union[str, dict, None] = None
    judge_runs: int = Field(1, ge=1, le=15)
    pairwise: Union[bool, "PairwiseConfig", None] = None

    @field_validator("category", "case", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value


# pydantic names each branch of a union in the error location ("str", "list[Message]",
# "dict[any,any]"); those tags mean nothing to a user writing a case or suite file. A part is
# taken as a tag only where errors of two or more branches diverge, so a user's own key (a
# variant named "str") is never dropped.
_UNION_TAG = re.compile(r"^(?:str|int|float|bool|bytes|none|[A-Za-z_]\w*\[.*\])$")


def _union_points(errors: list[dict]) -> dict[tuple, set]:
    seen: dict[tuple, set] = {}
    for e in errors:
        loc = tuple(e.get("loc", ()))
        for i, part in enumerate(loc):
            if isinstance(part, str) and _UNION_TAG.match(part):
                seen.setdefault(loc[:i], set()).add(part)
    return {prefix: parts for prefix, parts in seen.items() if len(parts) > 1}


def _clean_loc(loc: tuple, points: dict[tuple, set]) -> tuple:
    return tuple(p for i, p in enumerate(loc) if p not in points.get(loc[:i], ()))


def _pick_error(errors: list[dict], points: dict[tuple, set]) -> tuple[dict, list[dict]]:
    """The error to report, and the sibling union branches that failed at the same place.

    A union reports one error per branch; the useful one is the branch the value got
    furthest into (a list of messages with a bad `role`), not "should be a valid string"."""
    first = errors[0]
    loc = tuple(first.get("loc", ()))
    tag_at = next((i for i, p in enumerate(loc) if p in points.get(loc[:i], ())), None)
    if tag_at is None:
        return first, [first]
    prefix = loc[:tag_at]
    branches = [e for e in errors if tuple(e.get("loc", ()))[:tag_at] == prefix
                and len(e.get("loc", ())) > tag_at and e["loc"][tag_at] in points[prefix]]
    best = max(branches, key=lambda e: len(_clean_loc(tuple(e["loc"]), points)))
    best_loc = _clean_loc(tuple(best["loc"]), points)

    def at_branch(e: dict) -> bool:  # failed on the branch's own type, not inside it
        raw = tuple(e["loc"])
        return _clean_loc(raw, points) == best_loc and raw[-1] in points.get(raw[:-1], ())

    if not at_branch(best):
        return best, [best]
    # The value matched no branch at all: say what each branch wanted.
    return best, [e for e in branches if at_branch(e)]


def first_error(exc: ValidationError) -> tuple[str, str]:
    """(field path, message) of a pydantic error, phrased for one line."""
    errors = exc.errors()
    points = _union_points(errors)
    err, siblings = _pick_error(errors, points)
    loc = ".".join(str(p) for p in _clean_loc(tuple(err.get("loc", ())), points))
    kind = err.get("type", "")
    if kind == "extra_forbidden":
        return loc, "unknown field"
    if kind == "missing":
        return loc, "required field is missing"
    msg = err.get("msg", "invalid value")
    if len(siblings) > 1:
        wanted = []
        for e in siblings:
            text = e.get("msg", "invalid value")
            text = text[len("Input should be "):] if text.startswith("Input should be ") else text
            if text not in wanted:
                wanted.append(text)
        msg = "Input should be " + " or ".join(wanted)
    if (kind.startswith("literal_error") or kind.endswith("_type") or kind == "union_tag_invalid"
            or len(siblings) > 1):
        got = err.get("input")
        got_s = repr(got)
        if len(got_s) > 60:
            got_s = got_s[:57] + "..."
        msg = f"{msg} (got {got_s})"
    return loc, " ".join(msg.split())


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
