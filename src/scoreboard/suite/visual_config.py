"""The suite settings of open-ended and visual work: `render:` (see render/settings.py),
`instrument:` (the judge's instrument check) and `stages:` (screen and held-out stages)."""

from __future__ import annotations

from pydantic import Field, model_validator

from ..render.degrade import DEGRADATIONS
from ..validation import StrictSettings

STAGES = ("check", "screen", "heldout", "judge")


class InstrumentConfig(StrictSettings):
    """Calibration controls and the bar the judge must clear before its verdicts are used."""

    #: control files (JSONL): {"id", "input", "output" (text or "@file"), "rubric"?, "degraded"?: {name: text or "@file"}}
    controls: str | list[str]
    #: degraded copies scoreboard makes of every good control
    degrade: list[str] = Field(default_factory=lambda: list(DEGRADATIONS))
    #: times each control is judged (self-agreement is measured over them)
    repeats: int = Field(3, ge=2, le=20)
    #: least share of (good, degraded) pairs the judge must rank good above degraded
    min_accuracy: float = Field(0.9, ge=0, le=1)
    #: least share of controls whose repeated scores all agree
    min_self_agreement: float = Field(0.8, ge=0, le=1)
    #: position bias: a pairwise judge fails when its first-slot preference is significant at this level
    position_alpha: float = Field(0.05, gt=0, lt=1)
    #: also check the judge in pairwise mode (default: when the suite judges pairwise)
    pairwise: bool | None = None
    #: folder the check's result is kept in (default <output_dir>/<suite>/checks)
    results: str | None = None

    @model_validator(mode="after")
    def _known(self):
        bad = [d for d in self.degrade if d not in DEGRADATIONS]
        if bad:
            raise ValueError(f"unknown degradation {bad[0]!r} (known: {', '.join(DEGRADATIONS)})")
        return self


class ScreenConfig(StrictSettings):
    """The screen stage's subset: the first k cases, a seeded sample, or k per category."""

    first: int | None = Field(None, ge=1)
    sample: int | None = Field(None, ge=1)
    per_category: int | None = Field(None, ge=1)
    seed: int = 0

    @model_validator(mode="after")
    def _one(self):
        chosen = [k for k in ("first", "sample", "per_category") if getattr(self, k) is not None]
        if len(chosen) != 1:
            raise ValueError("the screen stage takes exactly one of first, sample, per_category")
        return self


class StagesConfig(StrictSettings):
    """A suite's named stages (`scoreboard run SUITE --stage screen|heldout|check`)."""

    screen: ScreenConfig | None = None
    #: the split the held-out stage runs (default "heldout")
    heldout: str = "heldout"
