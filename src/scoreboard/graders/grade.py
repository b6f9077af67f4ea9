"""What a grader sees (GradeContext) and what it returns (Grade)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..cases.case import Case
from ..subjects.values import Measurements, Output


@dataclass(slots=True)
class Grade:
    """One grader's verdict. passed=None means not assessed (never a silent fail)."""

    grader: str
    passed: bool | None
    score: float | None = None
    reason: str = ""
    fields: list[dict] | None = None
    extra: dict | None = None

    def to_dict(self) -> dict:
        out = {"grader": self.grader, "passed": self.passed, "score": self.score,
               "reason": self.reason, "fields": self.fields}
        if self.extra:
            out.update(self.extra)
        return out


@dataclass(slots=True)
class GradeContext:
    """What a grader sees. New fields may be added; graders read only what they need."""

    case: Case
    output: Output
    measurements: Measurements
    judge: Any = None
    run: int = 0
    error: str | None = None

    @property
    def expected(self) -> Any:
        return self.case.expected
