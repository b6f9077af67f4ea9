"""A variant's running tally: per-case counters and measurement arrays updated one attempt at a
time (the attempts themselves are never kept), from which its summary figures are computed."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from ..record.constants import MEASUREMENT_KEYS
from .counts import CaseCounts, CaseIndex
from .measurements import MeasureAccumulator
from .methods import computing_version
from .metrics import add_errored, add_scores, counts_scores, metric_totals

JUDGED = ("passed", "failed", "error")


def field_keys(pairs) -> dict[tuple[str, str], str]:
    """(grader, path) -> the key shown in field_accuracy: the path, or grader:path when two graders grade it."""
    graders_of: dict[str, set[str]] = defaultdict(set)
    for grader, path in pairs:
        graders_of[path].add(grader)
    return {(gr, path): (path if len(grs) == 1 else f"{gr}:{path}")
            for path, grs in graders_of.items() for gr in grs}


def without(totals: dict, part: dict) -> dict:
    """Per-case (total, attempts) with `part`'s taken out (a case left with none dropped)."""
    out = {}
    for name, per in totals.items():
        gone = part.get(name) or {}
        kept = {c: (v[0] - gone[c][0], v[1] - gone[c][1]) if c in gone else v for c, v in per.items()}
        out[name] = {c: v for c, v in kept.items() if v[1]}
    return out


def undecided_names(grades: list[dict]) -> set[str]:
    """The named metrics a grade of weight other than 0 names and could not decide (its grader
    raised, returned `pass: null`, or its judge failed): unknown on that attempt, as
    graders.scoring.named_scores leaves them out."""
    out: set[str] = set()
    for g in grades:
        if (g.get("score") is None or g.get("passed") is None) and g.get("weight", 1) and not g.get("record_only"):
            out.update(n for n in (g.get("metric"), *(g.get("named_scores") or ())) if isinstance(n, str) and n)
    return out


#: the graders that grade an output field by field (field accuracy's graders)
FIELD_GRADERS = ("fields", "json-fields")


def grades_fields(spec: Any) -> bool:
    """Whether a planned grader spec grades fields: `fields`/`json-fields` by name, with or
    without modifiers beside it (`{fields: [...], weight: 2}`)."""
    if isinstance(spec, str):
        return spec in FIELD_GRADERS
    return isinstance(spec, dict) and any(k in FIELD_GRADERS for k in spec)


class Tally:
    """Everything a variant's summary and comparisons need, updated one attempt at a time: flat
    per-case counters and compact measurement arrays, never the attempts themselves."""

    def __init__(self, cases: CaseIndex, categories: dict[str, str | None], ungraded: frozenset = frozenset(),
                 fielded: frozenset = frozenset()):
        self.index, self.categories = cases, categories
        #: statistics 21: a metric's total takes only the attempts on which it is known (20 added the
        #: named scores of a grade that could not decide, a metric the attempt holds as unknown)
        self.known_totals = computing_version() >= 21
        #: cases a grader grades field by field, and their errored attempts (no fields to grade):
        #: what field accuracy says it left out (statistics version 18; 17 counted every error)
        self.fielded, self.field_errors = fielded, 0
        #: cases no grader decides (not graded, record-only): their errors stay outside the rates
        self.ungraded = ungraded
        self.ungraded_errors = 0
        self.attempts = 0
        self.counts: dict[str, int] = defaultdict(int)
        self.per_run: dict[int, list[int]] = defaultdict(lambda: [0, 0])
        self.by_cat: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        self.cases = CaseCounts(cases)  # case_id -> (passed, judged)
        #: case_id -> (attempts that passed, attempts that ran): score's all-pass rule
        self.ran = CaseCounts(cases)
        self.fields: dict[tuple[str, str], CaseCounts] = {}  # (grader, path) -> case -> (hits, graded)
        self.measures: dict[str, MeasureAccumulator] = {key: MeasureAccumulator() for key in MEASUREMENT_KEYS}
        self._measures = list(self.measures.items())
        self.unknown_tokens = 0
        #: attempts whose provider reported more usage than a request allowed (engine/ledger.py)
        self.over_bound = 0
        self.graders: set[str] = set()
        #: attempts with at least one field-level grade (field accuracy's denominator, in attempts)
        self.field_attempts = 0
        #: case_id -> (fields correct, fields graded) over every field: overall field accuracy
        self.fields_all = CaseCounts(cases)
        # issue 14: named metrics and case scores as case -> [sum, attempts]; runs for reducers
        self.metric_sums: dict[str, dict[str, list]] = {}
        #: derived metrics with `aggregate: sum`: name -> case -> [weighted score total, attempts]
        self.metric_totals: dict[str, dict[str, list]] = {}
        #: the part of metric_totals (and of the attempts that ran) from unassessed attempts, whose
        #: scores are unknown: left out of a total since statistics version 17
        self.unassessed_totals: dict[str, dict[str, list]] = {}
        self.unassessed_ran: dict[str, int] = defaultdict(int)
        #: judged attempts on which a named metric is unknown (a grade naming it could not decide):
        #: (case, the unknown names, the attempt's known totals); a total reading one of those names
        #: leaves the attempt out, and out of `__count` (statistics version 21; 20 counted it there)
        self.undecided: list[tuple[str, frozenset, dict[str, float]]] = []
        self.score_sums: dict[str, list] = {}
        #: the errored attempts the scores count from: (has a score, its metrics' names)
        self.errored: list[tuple[bool, frozenset]] = []
        self.run_values: dict[str, list[float]] | None = None

    def add(self, a: dict) -> None:
        """Count one attempt."""
        self.attempts += 1
        status, cid = a["status"], a["case_id"]
        self.counts[status] += 1
        judged = status in JUDGED
        if judged and status == "error" and cid in self.ungraded:
            # A case no grader decides is never passed or failed: its error is counted (and
            # shown), but it is no failure of any rate, as its other attempts are no pass.
            self.ungraded_errors += 1
            judged = False
        if judged:
            ok = status == "passed"
            for slot in (self.per_run[a["run"]], self.by_cat[self.categories.get(cid) or "uncategorised"]):
                slot[0] += ok
                slot[1] += 1
            self.cases.add(cid, ok)
        if status not in ("not-run", "waiting"):  # nothing measured yet, not unknowns
            self.ran.add(cid, status == "passed")
            m = a["measurements"]
            for key, acc in self._measures:
                acc.add(m.get(key))
            self.unknown_tokens += m.get("input_tokens") is None or m.get("output_tokens") is None
            self.over_bound += bool((a.get("subject_info") or {}).get("usage_over_bound"))
        fielded = False
        for g in a["grades"]:
            self.graders.add(g["grader"])
            fielded = fielded or bool(g.get("fields"))
            for f in g.get("fields") or ():
                pair = (g["grader"], f["path"])
                counts = self.fields.get(pair)
                if counts is None:
                    counts = self.fields[pair] = CaseCounts(self.index)
                counts.add(cid, bool(f.get("passed")))
                self.fields_all.add(cid, bool(f.get("passed")))
        self.field_attempts += fielded
        if status == "error" and cid in self.fielded:
            self.field_errors += 1
        if counts_scores(status, cid in self.ungraded):  # judged or unassessed
            self._add_scores(a, cid, status)

    def _add_scores(self, a: dict, cid: str, status: str) -> None:
        """issue 14: named metrics, the case score, and the value a reducer reads."""
        score = a.get("score")
        add_scores(self.metric_sums, self.score_sums, cid, a.get("metrics"), score)
        add_errored(self.errored, status, a.get("metrics"), score)
        if status == "unassessed":
            self.unassessed_ran[cid] += 1
        known: dict[str, float] = {}
        if a.get("metrics"):
            for name, total in metric_totals(a["grades"]).items():
                if self.known_totals and name not in a["metrics"]:
                    continue
                known[name] = total
                for into in (self.metric_totals,) + ((self.unassessed_totals,) if status == "unassessed" else ()):
                    slot = into.setdefault(name, {}).setdefault(cid, [0.0, 0])
                    slot[0] += total
                    slot[1] += 1
        if self.known_totals and status != "unassessed":  # an unassessed one is left out whole
            unknown = undecided_names(a["grades"]) - set(a.get("metrics") or ())
            if unknown:
                self.undecided.append((cid, frozenset(unknown), known))
        if self.run_values is not None:
            if "score" in a:
                value = score
            else:
                value = 1.0 if status == "passed" else (0.0 if status in ("failed", "error") else None)
            if status == "error":
                value = 0.0
            if value is not None:
                self.run_values.setdefault(cid, []).append(value)

    def keyed_fields(self, keys: dict[tuple[str, str], str]) -> dict[str, CaseCounts]:
        """Field tallies under their field_accuracy keys."""
        return {keys[pair]: per for pair, per in self.fields.items()}
