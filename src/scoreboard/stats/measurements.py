"""Summaries of numbers that may be unknown: unknown is counted, never taken as zero."""

from __future__ import annotations

from array import array
from typing import Any


def measurement_summary(values: list[Any]) -> dict:
    """{known_count, unknown_count, known_subtotal, total, mean, median, p95}; unknown is never 0."""
    known = sorted(v for v in values if v is not None)
    n = len(known)
    unknown = len(values) - n
    subtotal = sum(known) if n else None
    # An empty set has no total either: nothing was measured, which is not a measured zero.
    out = {"known_count": n, "unknown_count": unknown, "known_subtotal": subtotal,
           "total": subtotal if unknown == 0 and n else None}
    if n:
        out["mean"] = subtotal / n
        mid = n // 2
        out["median"] = known[mid] if n % 2 else (known[mid - 1] + known[mid]) / 2
        out["p95"] = _percentile(known, 0.95)
    else:
        out["mean"] = out["median"] = out["p95"] = None
    return out


def _percentile(sorted_values: list[float], q: float) -> float:
    # Linear interpolation between closest ranks (numpy's default), without importing numpy.
    if len(sorted_values) == 1:
        return sorted_values[0]
    pos = (len(sorted_values) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


class MeasureAccumulator:
    """The values of one measurement, added one attempt at a time in a few bytes each (not a
    Python object per value); `summary()` equals `measurement_summary` over the same values."""

    __slots__ = ("ints", "floats", "unknown")

    def __init__(self) -> None:
        self.ints = array("q")
        self.floats = array("d")
        self.unknown = 0

    def add(self, value: Any) -> None:
        if value is None:
            self.unknown += 1
        elif type(value) is int and -(1 << 63) <= value < (1 << 63):
            self.ints.append(value)
        else:
            self.floats.append(value)

    def __len__(self) -> int:
        return len(self.ints) + len(self.floats) + self.unknown

    def values(self) -> list[Any]:
        """Every value added, unknowns as None (order not kept: summaries sort anyway)."""
        return [*self.ints, *self.floats, *([None] * self.unknown)]

    def summary(self) -> dict:
        """{known_count, unknown_count, known_subtotal, total, mean, median, p95}."""
        return measurement_summary(self.values())
