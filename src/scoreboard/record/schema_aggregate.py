"""The aggregate over a suite's stages as typed models (`scoreboard aggregate`, issue 17): the
stage reports it was made from (by path and SHA-256), the screen's figures and the held-out
figures in separate sections (never pooled), the screen's pick, the held-out confirmation, the
disjointness of the two case sets, the judge check and the gates on the held-out figures."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, StrictBool, StrictFloat, StrictInt, StrictStr

from .schema import Gate, InstrumentStatus, Lineage
from .schema_base import Closed, Interval, Num
from .schema_judge import QualityDifference
from .schema_summary import Comparison

AGGREGATE_SCHEMA = "scoreboard.aggregate/v1"

Figure = Literal["dq", "pass_rate"]


class StageRef(Closed):
    """One stage report the aggregate was made from: where it lies (relative to the aggregate's
    folder) and the SHA-256 of its bytes, so `verify` reads the same report again."""

    stage: Literal["screen", "heldout", "check"]
    path: StrictStr
    sha256: StrictStr
    run_id: StrictStr
    suite: StrictStr
    status: StrictStr
    started_at: StrictStr | None = None
    fixture_hash: StrictStr | None = None
    suite_hash: StrictStr | None = None
    cases: StrictInt
    judge_hash: StrictStr | None = None


class VariantFigures(Closed):
    """One variant's figures in one stage."""

    attempts: StrictInt
    passed: StrictInt
    cases: StrictInt | None = None
    pass_rate: StrictFloat | None
    pass_rate_ci: Interval | None = None
    #: blind pointwise quality: mean per dimension, 0-3 (absent without a pointwise grader)
    quality: dict[str, StrictFloat] | None = None


class StageSection(Closed):
    """The figures of one stage, as its own report states them."""

    stage: Literal["screen", "heldout"]
    run_id: StrictStr
    cases: list[StrictStr]
    selection: dict[str, Any] | None = None
    variants: dict[str, VariantFigures]
    dq: list[QualityDifference] = Field(default_factory=list)
    comparisons: list[Comparison] = Field(default_factory=list)
    instrument: InstrumentStatus | None = None


class Pick(Closed):
    """The screen's pick on the primary figure (variant null, with why, when none is ahead)."""

    figure: Figure
    variant: StrictStr | None
    runner_up: StrictStr | None
    margin: Num | None
    why: StrictStr | None = None
    ci: Interval | None = None
    cases: StrictInt
    words: StrictStr


class PairedTests(Closed):
    """The held-out paired tests of the pick against the runner-up (case = unit)."""

    cases: StrictInt
    t_test_p: Num | None
    t_test_why: StrictStr | None = None
    t_statistic: Num | None = None
    sign_test_p: Num | None
    positive: StrictInt
    negative: StrictInt
    zero: StrictInt
    mcnemar_p: Num | None = None


class Confirmation(Closed):
    """Whether the held-out stage confirms the pick (stats/aggregate.py)."""

    verdict: Literal["confirmed", "not-confirmed", "reversed", "not-comparable", "not-independent", "no-pick"]
    confirmed: StrictBool
    figure: Figure
    value: Num | None
    ci: Interval | None = None
    tests: PairedTests | None = None
    cases: StrictInt
    small_sample: StrictBool
    flags: list[StrictStr] = Field(default_factory=list)
    words: StrictStr


class Overlap(Closed):
    heldout: StrictStr
    screen: StrictStr
    input_hash: StrictStr | None


class Disjointness(Closed):
    """Held-out cases against screened ones, by input hash."""

    disjoint: StrictBool
    screen_cases: StrictInt
    heldout_cases: StrictInt
    overlap: list[Overlap] = Field(default_factory=list)


class JudgeCheck(Closed):
    """The judge's instrument check as the aggregate found it: from the check report when one was
    given (same judge hash), else as the held-out report recorded it."""

    status: Literal["passed", "failed", "never-run"]
    judge_hash: StrictStr
    source: StrictStr
    trusted: StrictBool = False
    accuracy: Num | None = None
    reasons: list[StrictStr] = Field(default_factory=list)
    words: StrictStr


class AggregateSettings(Closed):
    """The gates asked for (on the held-out figures)."""

    min_dq: dict[str, Num] | None = None
    fail_under: Num | dict[str, Num] | None = None
    trust_unchecked_judge: StrictBool = False


class Aggregate(Closed):
    """One report over the stages' reports: `scoreboard verify` recomputes it from them."""

    schema_: Literal["scoreboard.aggregate/v1"] = Field(alias="schema")
    created_at: StrictStr
    scoreboard_version: StrictStr
    suite: StrictStr
    lineage: Lineage
    stages: list[StageRef]
    settings: AggregateSettings
    primary: Figure
    screen: StageSection
    heldout: StageSection
    disjointness: Disjointness
    pick: Pick
    confirmation: Confirmation
    judge_check: JudgeCheck | None = None
    gates: list[Gate] = Field(default_factory=list)
