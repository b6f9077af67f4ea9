"""A derived metric's unit, from its definition, never from one run's value: the suite's `unit`
(share or number) when it declares one, else what the expression implies when that is certain.
Over means (each named metric a mean of scores in 0..1) the expression's range is bounded by
interval arithmetic: a share when every value it can take lies in 0..1 (`(a + b) / 2`, `a * b`,
`min(a, b)`, `recall * 0.1`), else a number (`precision * 100`, `q * 2`, and `2 * p * r / (p + r)`,
whose divisor can be 0: declare `unit: share` for it). A total (`aggregate: sum`) is a number."""

from __future__ import annotations

import ast
import math
from typing import Any

from .metrics import parse_expression

UNITS = ("share", "number")

_Range = tuple[float, float]


def _mul(a: _Range, b: _Range) -> _Range:
    products = [x * y for x in a for y in b if not (math.isinf(x) and y == 0 or math.isinf(y) and x == 0)]
    return (min(products), max(products)) if products else (-math.inf, math.inf)


def _range(node: ast.AST) -> _Range:
    """The values a node can take with every name in 0..1 (a superset: interval arithmetic)."""
    if isinstance(node, ast.Expression):
        return _range(node.body)
    if isinstance(node, ast.Constant):
        return (float(node.value), float(node.value))
    if isinstance(node, ast.Name):
        return (0.0, 1.0)
    if isinstance(node, ast.UnaryOp):
        low, high = _range(node.operand)
        return (-high, -low) if isinstance(node.op, ast.USub) else (low, high)
    if isinstance(node, ast.Call):
        args = [_range(a) for a in node.args]
        kind = node.func.id
        if kind == "min":
            return (min(a[0] for a in args), min(a[1] for a in args))
        if kind == "max":
            return (max(a[0] for a in args), max(a[1] for a in args))
        (low, high), = args
        if kind == "abs":
            return (0.0 if low <= 0 <= high else min(abs(low), abs(high)), max(abs(low), abs(high)))
        return (math.sqrt(max(low, 0.0)), math.sqrt(max(high, 0.0)))  # sqrt: undefined below 0
    left, right = _range(node.left), _range(node.right)
    if isinstance(node.op, ast.Add):
        return (left[0] + right[0], left[1] + right[1])
    if isinstance(node.op, ast.Sub):
        return (left[0] - right[1], left[1] - right[0])
    if isinstance(node.op, ast.Mult):
        return _mul(left, right)
    if isinstance(node.op, ast.Div):
        if right[0] <= 0 <= right[1]:
            return (-math.inf, math.inf)  # the divisor can be 0 (or near it): unbounded
        return _mul(left, (1 / right[1], 1 / right[0]))
    # a power: bounded only for a base in 0..1 and a constant exponent of at least 0
    if isinstance(node.right, ast.Constant) and right[0] >= 0 and 0 <= left[0] and left[1] <= 1:
        return (0.0, 1.0)
    return (-math.inf, math.inf)


def implied_unit(expression: str, aggregate: str = "mean") -> str:
    """"share" when the expression over metric means can only lie in 0..1, else "number"."""
    if aggregate == "sum":
        return "number"
    try:
        low, high = _range(parse_expression(expression))
    except (ValueError, OverflowError, ZeroDivisionError):
        return "number"
    return "share" if 0 <= low and high <= 1 else "number"


def derived_unit(spec: Any, inlined: str | None = None) -> str:
    """A derived metric's unit: its declared `unit`, else the one its (inlined) expression implies."""
    if isinstance(spec, dict) and spec.get("unit") in UNITS:
        return spec["unit"]
    expression = spec if isinstance(spec, str) else spec["expression"]
    aggregate = "mean" if isinstance(spec, str) else spec.get("aggregate") or "mean"
    return implied_unit(inlined or expression, aggregate)


def reads_as_number(figure: Any) -> bool:
    """Whether a derived metric's figure (a dict or a schema model) reads as a number: by its
    recorded `unit` (statistics version 21), else as earlier builds decided, by its aggregate and
    whether its value or interval leaves 0..1."""
    get = figure.get if isinstance(figure, dict) else (lambda k: getattr(figure, k, None))
    if figure is None:
        return False
    if get("unit") in UNITS:
        return get("unit") == "number"
    ci = get("ci")
    ci_get = ci.get if isinstance(ci, dict) else (lambda k: getattr(ci, k, None))
    bounds = [x for x in (get("value"), *((ci_get("low"), ci_get("high")) if ci is not None else ()))
              if isinstance(x, (int, float))]
    return get("aggregate") == "sum" or not all(0 <= x <= 1 for x in bounds)
