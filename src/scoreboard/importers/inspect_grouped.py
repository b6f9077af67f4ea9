"""Inspect's `grouped(metric, group_key)` in `Task(metrics=[...])` (scorer/_metrics/grouped.py), as
scoreboard's pass rate by category.

grouped() splits the samples by str(sample.metadata[group_key]) and computes the metric on each
group, and (`all="samples"`, the default) on every sample as well. Over a scorer whose values are
C or I (match, includes, pattern, exact, answer, choice, and model_graded_qa / model_graded_fact
without partial credit or a grade pattern), accuracy() and mean() are the share of samples scored
C, that is scoreboard's pass rate, under the default `mean` epochs reducer (the runs of a sample
averaged, the samples averaged; scoreboard's category rate counts the same attempts). So the
cases entry gets `group_by: KEY` (cases/datasets_inspect.group_name: the same str(), a sample
without the key refused as grouped() refuses it) and the summary's per-category rates are
grouped()'s values, each with an interval by case; all="samples" is the variant's pass rate.
What does not fit is listed: another inner metric, a scorer with partial or numeric values,
another reducer, several scorers (a case passes only when all do), a second key (a case has one
category), all="groups" (the mean of the groups' values, which scoreboard does not report)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ..errors import ConfigError
from .inspect_parts import describe, line_of
from .inspect_values import Call

#: Inspect scorers whose value is C or I (CORRECT / INCORRECT) and nothing else
_PASS_FAIL = ("match", "includes", "pattern", "exact", "answer", "choice", "model_graded_qa", "model_graded_fact")
#: model_graded_* options that give other values (P, or whatever a grade pattern's group reads)
_OTHER_VALUES = ("partial_credit", "grade_pattern")


@dataclass
class Grouping:
    """A converted grouped(): the cases entry's `group_by`, the line it came from, and the notes
    the conversion adds once the cases are found to carry the key."""

    key: str
    line: int
    notes: list[str] = field(default_factory=list)
    #: stderr() / bootstrap_stderr() beside this grouped() alone: the pass rate's interval stands in
    #: for them while the grouped() stands; listed with it when it does not
    errors: list[str] = field(default_factory=list)


def _scorer_fits(scorer: list, reducers: list | None) -> str | None:
    """Why the converted scorers' pass rate is not grouped()'s accuracy, or None when it is."""
    if len(scorer) != 1:
        return ("with several scorers Inspect groups each scorer's values, and a scoreboard case passes only when "
                "every grader passes" if scorer else "no scorer was converted")
    spec = scorer[0]
    name = spec if isinstance(spec, str) else next(iter(spec))
    options = {} if isinstance(spec, str) else spec[name] or {}
    if name not in _PASS_FAIL:
        return f"scorer {name}() scores other values than C and I, so its accuracy is not the pass rate"
    given = [k for k in _OTHER_VALUES if isinstance(options, dict) and options.get(k)]
    if given:
        return f"scorer {name}({given[0]}=...) scores other values than C and I, so its accuracy is not the pass rate"
    others = [r for r in reducers or [] if r != "mean"]
    if others:
        return (f"under the epochs reducer {others[0]} a sample's value is its reduced runs, and scoreboard's "
                "category rate counts every run")
    return None


def read_grouped(items: list[Call], line: int, scorer: list, reducers: list | None,
                 left: list[tuple[int, str]]) -> Grouping | None:
    """The first convertible grouped() of Task(metrics=), or None; each one not converted (or
    the part of one) is appended to `left` as (line, why)."""
    grouping: Grouping | None = None
    for item in items:
        at = line_of(item, line)
        inner, key = item.arg(0, "metric"), item.arg(1, "group_key")
        plain = isinstance(inner, Call) and not inner.args and not inner.kwargs
        shown = f"grouped({inner.name + '()' if plain else describe(inner)}, {describe(key)})"
        extra = sorted(set(item.kwargs) - {"metric", "group_key", "all", "all_label", "name_template",
                                          "value_to_float"})
        if len(item.args) > 2 or extra:
            left.append((at, f"{shown}: {'argument ' + extra[0] if extra else 'a third positional argument'} "
                             "is not converted"))
            continue
        if not (plain and inner.name in ("accuracy", "mean")):
            left.append((at, f"{shown}: only grouped(accuracy()) and grouped(mean()) of a pass/fail scorer are "
                             "converted (scoreboard's pass rate by category)"))
            continue
        if not isinstance(key, str) or not key:
            left.append((at, f"{shown}: the group key is not a text written in the file: not converted"))
            continue
        if grouping is not None:
            if key != grouping.key:
                left.append((at, f"{shown}: a case has one category, and grouped() by {grouping.key!r} is the one "
                                 "converted"))
            continue
        why = _scorer_fits(scorer, reducers)
        if why is not None:
            left.append((at, f"{shown}: {why}: not converted"))
            continue
        grouping = Grouping(key, at)
        grouping.notes.append(
            f"Task(metrics=) {shown} (line {at}): each case's category is str() of its metadata's {key!r} (cases "
            f"`group_by: {key}`), and the summary's pass rate by category is grouped()'s {inner.name}() per group, "
            "each with a 95% interval by case")
        everything = item.kwargs.get("all", "samples")
        if everything == "samples":
            label = item.kwargs.get("all_label", "all")
            grouping.notes.append(f"{shown}: its {label!r} value (all='samples') is the variant's pass rate")
        elif everything == "groups":
            left.append((at, f"{shown}: all='groups' (the mean of the groups' values) is not reported; each group's "
                             "value and the pass rate over every case are"))
        elif everything is not False:
            left.append((at, f"{shown}: all={describe(everything)} is not converted"))
        template = item.kwargs.get("name_template")
        if template is not None and template != "{group_name}":
            grouping.notes.append(f"{shown}: name_template {describe(template)}: scoreboard names each category by "
                                  "its value")
    return grouping


def settle(grouping: Grouping | None, entry: dict, check: Callable[[], int], skip: Callable[[int, str], None],
           note: Callable[[str], None]) -> int:
    """`check()` (the cases loaded as `scoreboard run` loads them: their count); when a sample's
    metadata lacks the grouped() key, the grouped() is listed (Inspect's grouped() raises
    ValueError when it computes the metric: the eval ends in an error) and the cases entry
    (`entry`) is loaded again without its `group_by`; else the grouped()'s notes are added."""
    try:
        count = check()
    except ConfigError as exc:
        if grouping is None or exc.field != "group_by" or "group_by" not in entry:
            raise
        del entry["group_by"]
        case = f"case {exc.case_id}" if exc.case_id else "a sample"
        skip(grouping.line, f"Task(metrics=...) grouped(..., {grouping.key!r}): {case}: {exc.detail}; Inspect's "
                            "grouped() raises ValueError when it computes the metric: not converted" + "".join(
                                f"; {name}() without accuracy() or mean(): not converted" for name in grouping.errors))
        return check()
    if grouping is not None and "group_by" in entry:
        for text in grouping.notes:
            note(text)
        for name in grouping.errors:
            note(f"Task(metrics=) {name}() (line {grouping.line}): the pass rate's 95% interval by case stands in "
                 f"for Inspect's {name}() of the accuracy over every sample")
    return count
