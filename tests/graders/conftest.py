"""Shared helper for grader tests: build a GradeContext in one call."""

from __future__ import annotations

from typing import Any

import pytest

from scoreboard.cases.case import MISSING, Case
from scoreboard.graders.grade import GradeContext
from scoreboard.subjects.values import Measurements, Output


def _make_ctx(text: str | None = None, expected: Any = MISSING, *, json: Any = None,
              tool_calls: list | None = None, status: str | None = None,
              latency_ms: float | None = None) -> GradeContext:
    case = Case(id="c1", input="x", expected=expected, source="cases.jsonl", line=3)
    output = Output(text=text, json=json, tool_calls=tool_calls or [], status=status)
    return GradeContext(case, output, Measurements(latency_ms=latency_ms))


@pytest.fixture
def ctx():
    """A factory: ctx(text, expected, json=..., tool_calls=..., status=..., latency_ms=...)."""
    return _make_ctx
