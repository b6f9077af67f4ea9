"""`not`: another grader's verdict inverted, promptfoo's `not-` assertions.

`{not: {starts-with: "Sorry"}}` passes when the output does not start with "Sorry". The score is
the complement (1 - score), as promptfoo scores an inverted assertion (`score: inverse ? 1 -
score : score` in its rouge, bleu and similar handlers; 1 and 0 swap for the pass/fail ones).
A grade that was not assessed stays not assessed: not knowing is never turned into a pass (a
judge failure included, as promptfoo's llm-rubric returns a grader failure uninverted). `llm-judge`,
`classify` and `g-eval` may be inverted (a judge is then needed, as for the grader itself).
"""

from __future__ import annotations

import inspect
from typing import Any

from ..cases.case import Case
from .base import Grader, option_error, short
from .grade import Grade, GradeContext


class NotGrader(Grader):
    """Passes when the inner grader fails; its score is 1 - the inner score."""

    name = "not"

    @classmethod
    def parse_options(cls, value: Any) -> dict:
        """The inner grader's spec (a name or a one-key mapping)."""
        if not isinstance(value, (str, dict)) or not value:
            raise option_error(cls.name, f"the value is another grader's spec, got {short(value)}")
        return {"spec": value}

    def __init__(self, value: Any = None):
        from .registry import JUDGE_GRADERS, build_grader

        super().__init__(value)
        self.inner = build_grader(self.options["spec"])
        self.options = {"spec": self.inner.spec}  # canonical: rebuilt from the saved spec, the same options
        if self.inner.name in ("pairwise", "pointwise", "rubric-score", "not"):
            raise option_error(self.name, f"{self.inner.name!r} cannot be inverted")
        for flag in ("needs_judge", "remote"):
            if getattr(self.inner, flag, False):
                setattr(self, flag, True)
        if self.inner.name in JUDGE_GRADERS:
            self.needs_judge = True  # a model grades it: the suite needs a judge, verify cannot recompute

    @property
    def spec(self) -> Any:
        return {self.name: self.inner.spec}

    def check_case(self, case: Case) -> None:
        self.inner.check_case(case)

    async def grade(self, ctx: GradeContext) -> Grade:
        """Grade with the inner grader and invert its verdict."""
        grade = self.inner.grade(ctx)
        if inspect.isawaitable(grade):
            grade = await grade
        if grade.passed is None:
            return Grade(self.name, None, None, f"not assessed: {grade.reason}", grade.fields, grade.extra)
        # 1 - score, clamped to [0, 1] (promptfoo's llmRubric.ts clamps an inverted judge score)
        score = None if grade.score is None else min(1.0, max(0.0, 1.0 - grade.score))
        verdict = "failed as required" if not grade.passed else "passed, so the inverse fails"
        return Grade(self.name, not grade.passed, score, f"{self.inner.name} {verdict}: {grade.reason}",
                     grade.fields, grade.extra)
