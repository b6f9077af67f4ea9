"""What every report model shares: closed and open shapes, numbers kept as written, intervals."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, StrictBool, StrictFloat, StrictInt, StrictStr, model_validator

#: a JSON number kept as written: an integer stays an integer (token counts), a float a float
Num = StrictInt | StrictFloat


class Closed(BaseModel):
    """A shape scoreboard writes: unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, defer_build=True)

    @classmethod
    def model_rebuild(cls, **kwargs: Any) -> bool | None:
        """Built on first use (defer_build), after the models it names in `parts_built_first`: its
        schema then reuses theirs, where each was built again at its own first dump (a report's
        run, plan, summary: 23 ms of CPU in every process that rendered a report)."""
        for part in cls.__dict__.get("parts_built_first", ()):
            part.model_rebuild()
        kwargs["_parent_namespace_depth"] = kwargs.get("_parent_namespace_depth", 2) + 1  # this frame
        return super().model_rebuild(**kwargs)


class Open(BaseModel):
    """A shape others extend: unknown keys are kept as they are."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, defer_build=True)


class Interval(Closed):
    """An interval estimate; low/high are null when no draw defined the statistic."""

    low: StrictFloat | None
    high: StrictFloat | None
    level: StrictFloat | None = None
    method: StrictStr | None = None
    unit: StrictStr | None = None
    cases: StrictInt | None = None
    small_sample: StrictBool | None = None
    resamples: StrictInt | None = None
    undefined_draws: StrictInt | None = None
    #: Wilson on the effective number of cases: how many cases' worth of evidence the data held
    effective_cases: Num | None = None
    #: Student t with no spread: Wilson's bound on the share of cases that could differ was taken
    adjusted: StrictBool | None = None

    @model_validator(mode="after")
    def _both_bounds_or_neither(self) -> "Interval":
        # every interval scoreboard writes has both bounds or neither; a report edited to hold
        # one is refused by its path, not read (and rendered) as a half-interval
        if (self.low is None) != (self.high is None):
            raise ValueError("low and high are both numbers or both null")
        return self


class Detectable(Closed):
    """The smallest true difference the paired t test detects with `power` at `alpha`; for
    pass/fail outcomes of one run a side, `power_method` says the power is exact and
    `discordance` is the share of cases the variants disagree on that it assumes."""

    value: Num | None
    power: Num
    alpha: Num
    difference_sd: Num | None = None
    sd_from: StrictStr
    cases: StrictInt
    test: StrictStr
    discordance: Num | None = None
    power_method: StrictStr | None = None


class MeasurementSummary(Closed):
    """A measurement over attempts: what is known, what is not; total is null if any is unknown."""

    known_count: StrictInt
    unknown_count: StrictInt
    known_subtotal: Num | None
    total: Num | None
    mean: Num | None = None
    median: Num | None = None
    p95: Num | None = None
