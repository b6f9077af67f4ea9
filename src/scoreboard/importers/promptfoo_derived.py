"""promptfoo's derivedMetrics as scoreboard's derived metrics (promptfoo.py's config, its cases
already converted: the metrics their graders declare)."""

from __future__ import annotations

from typing import Any

from ..stats.gates import is_builtin_figure
from ..stats.metrics import ExpressionError, parse_expression
from .common import Report


def declared_metrics(cases: list[dict]) -> set[str]:
    """Every metric name the converted cases' graders declare (`metric:` beside a grader, at any
    depth of a grader list)."""
    names: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            if isinstance(value.get("metric"), str):
                names.add(value["metric"])
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    for case in cases:
        walk(case.get("graders"))
    return names


def derived_metrics(value: Any, report: Report, declared: set[str]) -> dict[str, dict]:
    """derivedMetrics as derived metrics over the metrics' totals (src/evaluator.ts
    updateDerivedMetrics: mathjs evaluates each expression over the prompt's namedScores, which
    sum every row's weighted assertion scores, with `__count` the rows evaluated; an earlier
    derived metric's value is in scope of a later one). One named like a metric an assertion
    declares is listed, not converted: promptfoo writes its value over that named score (which
    later rows then add to), and scoreboard refuses two figures of one name."""
    out: dict[str, dict] = {}
    for i, item in enumerate(value or []):
        where = f"derivedMetrics.{i}"
        if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not isinstance(item.get("value"), str):
            report.skip(where, "a derived metric is {name, value: expression} (functions are not converted)")
            continue
        if item["name"] in declared:
            report.skip(where, f"{item['name']!r} is also an assertion's metric: promptfoo writes the derived value "
                        "over that named score, and scoreboard keeps one figure per name (rename one of them)")
            continue
        if is_builtin_figure(item["name"]):
            report.skip(where, f"{item['name']!r} is the name of a figure every scoreboard run has (a gate on it "
                        "reads that figure): rename the derived metric")
            continue
        expression = item["value"].replace("^", "**")  # mathjs' power operator
        try:
            parse_expression(expression)
        except ExpressionError as exc:
            report.skip(where, f"{exc} (mathjs functions beyond these are not converted)")
            continue
        out[item["name"]] = {"expression": expression, "aggregate": "sum"}
    if out:
        report.note("derivedMetrics: evaluated over each metric's total over the variant's attempts and __count "
                    "(its attempts), as promptfoo does; where promptfoo shows 0 for an expression it cannot "
                    "evaluate (a metric no attempt scored) or Infinity/NaN (a division by zero), scoreboard "
                    "shows the value as undefined (n/a)")
    return out
