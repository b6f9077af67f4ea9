"""Differences between two JSON values, leaf by leaf, numbers equal within a tolerance: what
`verify` recomputed against what a report holds."""

from __future__ import annotations

import math
from typing import Any

from ..hashing import canonical_json
from .chains import jpath

TOLERANCE = 1e-9


def is_number(value: Any) -> bool:
    """A JSON number (a bool is not one)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def deep_diff(expected: Any, found: Any, path: str, tol: float = TOLERANCE) -> list[tuple[str, Any, Any, str]]:
    """Leaf differences (path, expected, found, kind); numbers equal within `tol`."""
    try:
        if canonical_json(expected) == canonical_json(found):
            return []
    except (TypeError, ValueError):  # NaN or a non-JSON value: compare piece by piece
        pass
    return _diff(expected, found, path, tol)


def _diff(expected: Any, found: Any, path: str, tol: float) -> list[tuple[str, Any, Any, str]]:
    if isinstance(expected, dict) and isinstance(found, dict):
        out = []
        for key in expected:
            if key not in found:
                out.append((jpath(path, key), expected[key], None, "missing"))
            else:
                out.extend(_diff(expected[key], found[key], jpath(path, key), tol))
        out.extend((jpath(path, k), None, found[k], "unexpected") for k in found if k not in expected)
        return out
    if isinstance(expected, list) and isinstance(found, list):
        if len(expected) != len(found):
            return [(path, f"{len(expected)} items", f"{len(found)} items", "length")]
        out = []
        for i, (e, f) in enumerate(zip(expected, found)):
            out.extend(_diff(e, f, jpath(path, i), tol))
        return out
    if is_number(expected) and is_number(found):
        if math.isclose(expected, found, rel_tol=tol, abs_tol=tol):
            return []
        return [(path, expected, found, "differs")]
    if type(expected) is type(found) and expected == found:
        return []
    return [(path, expected, found, "differs")]
