"""A suite file's settings (pydantic; unknown fields are errors): the same settings the flags hold."""

from __future__ import annotations

import re
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, StrictFloat, StrictInt, field_validator

# --- visual work (issue 17): render, instrument check, stages ---
from ..render.settings import RenderSettings
from ..safefile import DEFAULT_MAX_FILE_BYTES
from ..safeparse import Bounds
from ..validation import StrictSettings, each_once
from .visual_config import InstrumentConfig, StagesConfig

#: the most runs a suite plans (a report's plan.runs above it is none scoreboard wrote)
MAX_RUNS = 1000
#: the most times a suite asks each judgment (plan.judge_runs)
MAX_JUDGE_RUNS = 15

#: a gate's floor: a number (an int or a float), never a boolean
Floor = StrictInt | StrictFloat
#: a share in [0, 1] (a threshold): a number, never a boolean (pydantic would read `true` as 1.0)
Share = Annotated[StrictFloat, Field(ge=0, le=1)]

# --- end visual work ---


class ConversationLimits(StrictSettings):
    """Bounds on conversation fixtures (from the chat fixtures this grew from); configurable."""

    max_turns: int = Field(10, ge=1)
    max_question_chars: int = Field(2000, ge=1)
    max_assistant_chars: int = Field(24000, ge=1)
    max_messages: int = Field(40, ge=2)
    max_notes_chars: int = Field(12000, ge=0)
    max_note_paragraphs: int = Field(40, ge=0)
    #: offered options on one assistant message of a chat-message case
    max_options: int = Field(20, ge=0)
    max_conversation_chars: int = Field(50000, ge=1)
    max_file_bytes: int = Field(2 * 1024 * 1024, gt=0)


class LiveLimits(StrictSettings):
    """Bounds of a live comparison plan (a suite with `require_live: true`): how many case ids
    it may select, and the request budget it must set (origin 004: 1-10 ids, 1-20 requests)."""

    max_cases: int = Field(10, ge=1)
    max_requests: int = Field(20, ge=1)


class Limits(StrictSettings):
    """Bounds on what a case file may hold; each configurable per suite. `max_depth` and
    `max_number_chars` bound every JSON/YAML/TOML document read from a user file (see
    safeparse.py); a suite file itself is read under the defaults (its limits are inside it)."""

    max_file_bytes: int = Field(DEFAULT_MAX_FILE_BYTES, gt=0)
    #: cases in the whole suite (all its files, after `expand`)
    max_cases: int = Field(100_000, gt=0)
    #: the suite's case data in all (cases/budget.py): bytes read, and values parsed
    max_total_bytes: int = Field(256 * 1024 * 1024, gt=0)
    max_values: int = Field(5_000_000, gt=0)
    #: cases x variants x runs of one run (the engine's index and log grow with it)
    max_attempts: int = Field(10_000_000, gt=0)
    max_input_bytes: int = Field(1024 * 1024, gt=0)
    max_depth: int = Field(Bounds.max_depth, ge=2, le=1000)
    max_number_chars: int = Field(Bounds.max_number_chars, ge=1, le=4300)
    conversation: ConversationLimits = Field(default_factory=ConversationLimits)
    live: LiveLimits = Field(default_factory=LiveLimits)


class BudgetConfig(StrictSettings):
    """Run-wide limits across variants, judges and retries; a budget is never exceeded."""

    max_requests: int | None = Field(None, ge=0)
    max_cost_usd: float | None = Field(None, ge=0)
    max_tokens: int | None = Field(None, ge=0)


class Price(StrictSettings):
    """USD per million tokens; `batch_discount`: the fraction a provider batch API takes off both."""

    input_per_mtok: float = Field(ge=0)
    output_per_mtok: float = Field(ge=0)
    batch_discount: float | None = Field(None, ge=0, lt=1)


class GateConfig(StrictSettings):
    """Baseline regression gate."""

    baseline: str | None = None
    max_regression: float | None = Field(None, ge=0, le=1)
    require_significance: bool = False
    alpha: float = Field(0.05, gt=0, lt=1)


class PairwiseConfig(StrictSettings):
    """Pairwise judging of every pair of variants, asked in both orders."""

    rubric: str | None = None
    # --- visual work (issue 17): screenshots to the judge, with or without the source ---
    images: Literal["last", "all"] | bool = False
    source: bool = True
    # --- end visual work ---


class VariantConfig(StrictSettings):
    """A named subject configuration: subject + optional skill + params (+ its own prompt)."""

    name: str | None = None
    subject: str | dict | None = None
    skill: str | None = None
    params: dict = Field(default_factory=dict)
    description: str | None = None
    #: this variant's prompt template (text, chat messages, "@file" or {python: "module:function"}),
    #: rendered with case vars
    prompt: str | list[dict] | dict | None = None


# --- suites as people write them (issue 14): defaults, prompts, metrics, reducers ------------
class Defaults(StrictSettings):
    """What every case starts from: graders (a case's add to them unless it says `replace`),
    vars and metadata (a case's keys win), a threshold, a transform, vars to expand."""

    graders: list[str | dict] | None = None
    vars: dict | None = None
    metadata: dict | None = None
    threshold: Share | None = None
    transform: Any = None
    expand: list[str] | None = None
    #: a custom scoring function: "python:module:function" or "python-file:path.py:function"
    scoring: str | dict | None = None

    @field_validator("expand")
    @classmethod
    def _expand_each_once(cls, value: Any) -> Any:
        return each_once(value)  # expanded twice: every case made again under a doubled id


class Reducer(StrictSettings):
    """A per-case reduction of a variant's repeated runs: mean, max, median, mode, or
    at_least (k runs scoring at least `value`)."""

    kind: Literal["mean", "max", "median", "mode", "at_least"]
    k: int | None = Field(None, ge=1)
    value: Share = 1.0


class DerivedMetric(StrictSettings):
    """A derived metric with its aggregate: `mean` (each name is the metric's mean by case) or
    `sum` (each name is the metric's weighted score total over every attempt, and `__count` the
    number of attempts that ran: promptfoo's derivedMetrics)."""

    expression: str
    aggregate: Literal["mean", "sum"] = "mean"
    #: how it reads: "share" (a percentage) or "number"; unset: what the expression implies
    unit: Literal["share", "number"] | None = None
# --- end issue 14 block ------------------------------------------------------------------------


_BUDGET = " (a suite writes it under budget:, as budget: {{{}: ...}})"
_GATES = " (a suite writes it under gates:, as gates: {{{}: ...}})"
_DEFAULTS = " (a case's setting: give it every case under defaults:, as defaults: {{{}: ...}}, or in the case)"


class SuiteConfig(StrictSettings):
    """A suite file: every setting the command-line flags hold."""

    #: where a suite writes what a flag of this name sets (validation: said beside "unknown field")
    UNKNOWN_HINTS: ClassVar[dict[str, str]] = {
        "fail_under_fields": " (a suite writes the field-accuracy gate as fail_under_metrics: {fields: 0.9}; "
                             "--fail-under-fields is the flag's name)",
        "max_cost": _BUDGET.format("max_cost_usd"),
        **{k: _BUDGET.format(k) for k in ("max_requests", "max_cost_usd", "max_tokens")},
        **{k: _GATES.format(k) for k in ("baseline", "max_regression", "require_significance", "alpha")},
        **{k: _DEFAULTS.format(k) for k in ("threshold", "transform", "scoring", "expand", "vars", "metadata")},
        **{f"gates.{k}": f" (a suite writes it at the top level, as {k}: ...)" for k in (
            "fail_under", "fail_under_metrics", "min_dq", "min_rubric", "max_dq_drop")}}

    name: str | None = None
    description: str | None = None
    #: case files or gold folders, or dataset readers {format: inspect|hf, path, columns?} (cases/datasets.py)
    cases: str | dict | list[str | dict] | None = None
    graders: list[str | dict] | None = None
    subject: str | dict | None = None
    variants: dict[str, VariantConfig] | list[VariantConfig] | None = None
    runs: int = Field(1, ge=1, le=MAX_RUNS)
    concurrency: int | None = Field(None, ge=1, le=10_000)
    timeout_ms: int = Field(120_000, gt=0)
    category: list[str] | None = None
    case: list[str] | None = None
    output_dir: str = "eval-results"
    formats: list[Literal["json", "md", "html", "junit"]] | None = None
    #: a number, never a boolean (`true` is no floor; pydantic would read it as 1.0)
    fail_under: Floor | dict[str, Floor] | None = None
    #: least values of other summary figures: {"pass@3": 0.8, "careful:fields": 0.9, "field:total": 0.95}
    fail_under_metrics: dict[str, Floor] | None = None
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
    judge: str | dict | None = None
    judge_runs: int = Field(1, ge=1, le=MAX_JUDGE_RUNS)
    pairwise: bool | PairwiseConfig | None = None
    #: a run sends requests only with an explicit --live (see suite/live.py)
    require_live: bool = False
    #: agent tasks: refuse to run where no sandbox works (else attempts say "not isolated")
    require_isolation: bool = False
    # --- issue 14: templates, defaults, metrics, reducers (see Defaults, Reducer above)
    #: one prompt template for every variant (text, chat messages, "@file" or {python: "module:function"})
    prompt: str | list[dict] | dict | None = None
    #: several prompts: a prompt axis crossed with the variants ({name: template} or a list)
    prompts: dict[str, str | list[dict] | dict] | list[str | list[dict] | dict] | None = None
    defaults: Defaults = Field(default_factory=Defaults)
    #: an undefined name in a prompt template: "error" (names the case), or "empty": it and any
    #: attribute of it print nothing, as Nunjucks renders them (imported promptfoo suites)
    template_undefined: Literal["error", "empty"] = "error"
    #: {name: expression over named metrics}, e.g. {f1: "2 * precision * recall / (precision + recall)"},
    #: or {name: {expression, aggregate: sum}} over the metrics' totals and `__count`
    derived_metrics: dict[str, str | DerivedMetric] | None = None
    #: per-case reducers over repeated runs: ["max", "mode", {kind: at_least, k: 2}]
    reducers: list[Literal["mean", "max", "median", "mode"] | Reducer] | None = None
    #: python graders (and transforms, scoring) named in case files run only with this set
    allow_case_code: bool = False
    # --- end issue 14
    # --- visual work (issue 17): render outputs, check the judge, named stages, dQ gates ---
    render: bool | RenderSettings | None = None
    instrument: InstrumentConfig | None = None
    stages: StagesConfig | None = None
    #: least dQ: {"*": 0.2} every pair as recorded (first minus second), {"careful/basic": 0.2} one pair
    min_dq: dict[str, Floor] | None = None
    #: least rubric-score mean per variant ({"*": 3.5} or {"careful": 4})
    min_rubric: dict[str, Floor] | None = None
    #: baseline gate on quality: the most the pointwise quality may drop against the baseline (0-3)
    max_dq_drop: float | None = Field(None, ge=0, le=3)
    #: gates on a judge's figures pass even when its instrument check failed or never ran
    trust_unchecked_judge: bool = False
    # --- end visual work ---

    @classmethod
    def value_hint(cls, loc: tuple, value: Any) -> str:
        """Inspect's reducer names (`at_least_2`, `pass_at_2`, `pass_k_2`): how this suite writes them."""
        if loc[:1] != ("reducers",) or not isinstance(value, str):
            return ""
        if len(loc) == 3 and loc[2] == "kind" and value in ("pass_at", "pass_k"):  # {kind: pass_at, k: 2}
            figure = "pass@K" if value == "pass_at" else "pass^K"
            return (f" (Inspect's {value}: the summary reports {figure} whenever a case runs more than once, no "
                    f"reducer needed; gate it with fail_under_metrics: {{'{figure.replace('K', '2')}': 0.8}})")
        found = re.fullmatch(r"(at_least|pass_at|pass_k)_(\d+)", value)
        if len(loc) != 2 or found is None:
            return ""
        kind, k = found.groups()
        if kind == "at_least":
            return f" (Inspect's {value}: write {{kind: at_least, k: {k}}})"
        figure = ("pass@" if kind == "pass_at" else "pass^") + k
        return (f" (Inspect's {value}: the summary reports {figure} whenever a case runs more than once, no reducer "
                f"needed; gate it with fail_under_metrics: {{'{figure}': 0.8}})")

    @field_validator("category", "case", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value
