"""What the renderers read: the typed report with a bounded number of attempts, plus per-case
counts taken from every attempt.

A run may hold a million attempts; the Markdown, HTML and JUnit renderings must not need them
all in memory. `build_view` reads the attempts once, in report order. It counts every attempt
into a CaseTally per (case, variant), and keeps at most `cap` attempts as typed models: every
attempt that did not pass first (those are what a reader opens a report for), then an evenly
spread, deterministic sample of passes. What was left out is stated in `omitted`, and the
renderings say so; the JSON report always holds every attempt.
"""

from __future__ import annotations

import heapq
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import TypeAdapter, ValidationError

from ..errors import ConfigError
from ..gcpause import collector_paused
from .io import invalid_report, parse_report
from .render_facts import RenderFacts
from .schema import Attempt, Report

#: a run with at most this many attempts is rendered whole (every attempt a typed model: about
#: 11 KB each, 0.1-0.25 s to validate 10,000; benchmarks/view_bench.py)
ATTEMPT_CAP = 10_000
#: a larger run keeps this many: every attempt that did not pass first, then a sample of passes
SAMPLE_CAP = 2_000

OMITTED_NOTE = ("this rendering shows every attempt that did not pass (up to the cap) and an evenly "
                "spread sample of passes; the JSON report holds every attempt")

# status -> CaseTally counter
_COUNTER = {"passed": "passed", "failed": "failed", "error": "errors", "unassessed": "unassessed",
            "not-run": "not_run", "interrupted": "interrupted", "not-graded": "not_graded",
            "waiting": "waiting"}
_SLOT = {status: i for i, status in enumerate(_COUNTER)}


@dataclass(slots=True)
class CaseTally:
    """One (case, variant) over all its runs, counted from every attempt."""

    runs: int = 0
    passed: int = 0
    failed: int = 0
    errors: int = 0
    unassessed: int = 0
    not_run: int = 0
    interrupted: int = 0
    #: issue 14: attempts of a case with no grader (recorded, never graded)
    not_graded: int = 0
    #: runs waiting on a provider batch (a waiting run)
    waiting: int = 0
    #: sum of the known latencies (None when none is known)
    latency_ms_total: float | None = None
    #: fields graded correct and fields graded over every run (None: no field was graded)
    fields_correct: int | None = None
    fields_total: int | None = None

    @property
    def judged(self) -> int:
        """Runs with a verdict: passed, failed or errored."""
        return self.passed + self.failed + self.errors

    @property
    def not_passed(self) -> int:
        """Runs that failed, errored or were interrupted."""
        return self.failed + self.errors + self.interrupted


class CaseTallies(Mapping):
    """(case_id, variant) -> CaseTally for every pair with an attempt, counted in flat arrays (a
    few bytes per pair, not an object), iterated in report order; pairs outside the plan last."""

    def __init__(self, case_ids: list[str], variants: list[str]):
        self.case_ids, self.variants = case_ids, variants
        self.case_pos = {cid: i for i, cid in enumerate(case_ids)}
        self.var_pos = {name: i for i, name in enumerate(variants)}
        size = len(case_ids) * len(variants)
        self.rows = [array("q", bytes(8 * size)) for _ in range(len(_SLOT) + 1)]
        self.latency = array("d", bytes(8 * size))
        self.latency_known = bytearray(size)
        # fields correct / graded per pair: allocated on the first attempt with field grades
        self.field_counts: tuple[array, array] | None = None
        self.extra: dict[tuple[str, str], list] = {}

    def count(self, key: tuple[str, str], slot: int, latency: Any, fields: tuple[int, int] | None = None) -> None:
        ci, vi = self.case_pos.get(key[0]), self.var_pos.get(key[1])
        if ci is None or vi is None:
            row = self.extra.get(key)
            if row is None:
                row = self.extra[key] = [0] * (len(_SLOT) + 1) + [None, None, None]
            row[0] += 1
            row[slot + 1] += 1
            if _number(latency):
                row[-3] = latency if row[-3] is None else row[-3] + latency
            if fields is not None:
                row[-2], row[-1] = (row[-2] or 0) + fields[0], (row[-1] or 0) + fields[1]
            return
        i = ci * len(self.variants) + vi
        self.rows[0][i] += 1
        self.rows[slot + 1][i] += 1
        if _number(latency):
            self.latency[i] += latency
            self.latency_known[i] = 1
        if fields is not None:
            if self.field_counts is None:
                size = len(self.latency_known)
                self.field_counts = (array("q", bytes(8 * size)), array("q", [-1]) * size)
            correct, graded = self.field_counts
            correct[i] += fields[0]
            graded[i] = max(graded[i], 0) + fields[1]

    def __getitem__(self, key: tuple[str, str]) -> CaseTally:
        row = self.extra.get(key)
        if row is not None:
            return CaseTally(*row[:-3], latency_ms_total=row[-3], fields_correct=row[-2], fields_total=row[-1])
        i = self._index(key)
        if i is None or not self.rows[0][i]:
            raise KeyError(key)
        correct = total = None
        if self.field_counts is not None and self.field_counts[1][i] >= 0:
            correct, total = self.field_counts[0][i], self.field_counts[1][i]
        return CaseTally(*[r[i] for r in self.rows],  # a list, not a generator: 2x faster here
                         latency_ms_total=self.latency[i] if self.latency_known[i] else None,
                         fields_correct=correct, fields_total=total)

    def verdicts(self, key: tuple[str, str]) -> tuple[int, int, int, int, int]:
        """(passed, judged, errors, unassessed, not run) of a pair, zeros when it has no attempt:
        what a cases table shows, read from the arrays without making a CaseTally."""
        row = self.extra.get(key)
        if row is not None:
            t = CaseTally(*row[:-3])
            return t.passed, t.judged, t.errors, t.unassessed, t.not_run
        i = self._index(key)
        if i is None:
            return 0, 0, 0, 0, 0
        rows = self.rows
        passed, errors = rows[_SLOT["passed"] + 1][i], rows[_SLOT["error"] + 1][i]
        return (passed, passed + rows[_SLOT["failed"] + 1][i] + errors, errors, rows[_SLOT["unassessed"] + 1][i],
                rows[_SLOT["not-run"] + 1][i])

    def _index(self, key) -> int | None:
        ci, vi = self.case_pos.get(key[0]), self.var_pos.get(key[1])
        return None if ci is None or vi is None else ci * len(self.variants) + vi

    def __contains__(self, key: object) -> bool:
        if key in self.extra:
            return True
        i = self._index(key) if isinstance(key, tuple) and len(key) == 2 else None
        return i is not None and self.rows[0][i] > 0

    def __iter__(self) -> Iterator[tuple[str, str]]:
        runs, n_var = self.rows[0], len(self.variants)
        for i in range(len(runs)):
            if runs[i]:
                yield self.case_ids[i // n_var], self.variants[i % n_var]
        yield from self.extra

    def __len__(self) -> int:
        return sum(1 for n in self.rows[0] if n) + len(self.extra)

    def total(self, *statuses: str) -> int:
        """Attempts of these statuses, over every pair."""
        slots = [_SLOT[s] for s in statuses]
        return (sum(sum(self.rows[s + 1]) for s in slots)
                + sum(row[s + 1] for row in self.extra.values() for s in slots))

    def cases_with(self, *statuses: str) -> int:
        """Distinct cases with at least one attempt of these statuses (read from the arrays,
        not a CaseTally per pair)."""
        n_var = len(self.variants)
        hit = bytearray(len(self.case_ids))
        for s in statuses:
            row = self.rows[_SLOT[s] + 1]
            for i, n in enumerate(row):
                if n:
                    hit[i // n_var] = 1
        extra = {cid for (cid, _), row in self.extra.items() if any(row[_SLOT[s] + 1] for s in statuses)}
        return sum(hit) + len(extra - {cid for cid, flag in zip(self.case_ids, hit) if flag})

    def fields(self, key: tuple[str, str]) -> tuple[int, int] | None:
        """(fields correct, fields graded) of a pair; None when no field of it was graded."""
        row = self.extra.get(key)
        if row is not None:
            return (row[-2], row[-1]) if row[-1] else None
        i = self._index(key)
        if i is None or self.field_counts is None or self.field_counts[1][i] <= 0:
            return None
        return self.field_counts[0][i], self.field_counts[1][i]

    def not_passed(self) -> int:
        """Attempts that failed, errored or were interrupted, over every pair."""
        slots = [_SLOT["failed"], _SLOT["error"], _SLOT["interrupted"]]
        return (sum(sum(self.rows[s + 1]) for s in slots)
                + sum(row[s + 1] for row in self.extra.values() for s in slots))


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@dataclass
class ReportView:
    """The typed report with the attempts kept (all of them when `complete`), and tallies of all.
    When attempts were left out of a run with many cases, `report.plan.cases` holds only the
    cases of the attempts kept; `total_cases` says how many the plan has."""

    report: Report
    complete: bool
    total_attempts: int
    tallies: Mapping = field(default_factory=dict)
    #: what was left out and why; None when complete
    omitted: dict | None = None
    total_cases: int = 0
    #: (case id, category) of every plan case, in plan order, even when report.plan.cases is cut
    case_list: list[tuple[str, str | None]] = field(default_factory=list)
    #: the report's folder, when known: renderings read screenshots from beside it (issue 17)
    base_dir: Any = None
    renders: dict | None = None  # per variant: blocked requests, pages not rendered (render_facts.py)

    def cases(self) -> list[tuple[str, str | None]]:
        """(case id, category) of every case of the plan."""
        return self.case_list or [(c.id, c.category) for c in self.report.plan.cases]

    def total(self, *statuses: str) -> int:
        """Attempts of these statuses over the whole run."""
        if isinstance(self.tallies, CaseTallies):
            return self.tallies.total(*statuses)
        return sum(getattr(t, _COUNTER[s]) for t in self.tallies.values() for s in statuses)

    def cases_with(self, *statuses: str) -> int:
        """Distinct cases with at least one attempt of these statuses."""
        if isinstance(self.tallies, CaseTallies):
            return self.tallies.cases_with(*statuses)
        return len({cid for (cid, _), t in self.tallies.items() if any(getattr(t, _COUNTER[s]) for s in statuses)})

    def verdicts(self, case_id: str, variant: str) -> tuple[int, int, int, int, int]:
        """(passed, judged, errors, unassessed, not run) of a case and variant over its runs."""
        if isinstance(self.tallies, CaseTallies):
            return self.tallies.verdicts((case_id, variant))
        t = self.tallies.get((case_id, variant))
        return (t.passed, t.judged, t.errors, t.unassessed, t.not_run) if t is not None else (0, 0, 0, 0, 0)

    def field_counts(self, case_id: str, variant: str) -> tuple[int, int] | None:
        """(fields correct, fields graded) of a case and variant over its runs; None: none graded."""
        if isinstance(self.tallies, CaseTallies):
            return self.tallies.fields((case_id, variant))
        t = self.tallies.get((case_id, variant))
        return (t.fields_correct, t.fields_total) if t is not None and t.fields_total else None

    def failures_total(self) -> int:
        """Attempts that failed, errored or were interrupted, over the whole run."""
        if isinstance(self.tallies, CaseTallies):
            return self.tallies.not_passed()
        return sum(t.not_passed for t in self.tallies.values())


class _PassSample:
    """Every k-th pass, in order, never more than `cap`: when the sample fills up, every other
    one is dropped and k doubles, so it stays evenly spread over the passes seen so far."""

    def __init__(self, cap: int, passes_total: int | None):
        self.cap = max(1, cap)
        self.stride = max(1, -(-passes_total // self.cap)) if passes_total else 1
        self.seen = 0
        self.kept: list[tuple[int, Any]] = []

    def add(self, seq: int, attempt: Any) -> None:
        if self.seen % self.stride == 0:
            self.kept.append((seq, attempt))
            if len(self.kept) > self.cap:
                self.kept = self.kept[::2]
                self.stride *= 2
        self.seen += 1

    def take(self, room: int) -> list[tuple[int, Any]]:
        """`room` of the kept passes, evenly spread (all of them when they fit)."""
        n = len(self.kept)
        if n <= room:
            return self.kept
        return [self.kept[i * n // room] for i in range(room)]


def _tally(tallies: CaseTallies, attempt: Any) -> bool:
    """Count one attempt; False when it is too malformed to count (validation will say why)."""
    try:
        key = (attempt["case_id"], attempt["variant"])
        slot = _SLOT[attempt["status"]]
        latency = (attempt.get("measurements") or {}).get("latency_ms")
        hash(key)
        fields = _field_counts(attempt)
    except (KeyError, TypeError, AttributeError):
        return False
    tallies.count(key, slot, latency, fields)
    return True


def _field_counts(attempt: dict) -> tuple[int, int] | None:
    """(fields correct, fields graded) of one attempt over all its graders; None when none was graded."""
    correct = total = 0
    for g in attempt.get("grades") or ():
        for f in g.get("fields") or ():
            total += 1
            correct += f.get("passed") is True
    return (correct, total) if total else None


def build_view(head: dict, attempts: Iterable[dict], *, cap: int = ATTEMPT_CAP,
               passes_total: int | None = None, source: str = "report") -> ReportView:
    """The renderers' view of a report: `head` is the report without "attempts", `attempts` its
    attempts in report order (read once). `passes_total` (from the summary) spreads the sample
    of passes evenly over the whole run; `source` names the report in a validation error."""
    plan = head.get("plan") if isinstance(head.get("plan"), dict) else {}
    plan_cases = plan.get("cases") if isinstance(plan.get("cases"), Sequence) else []
    # One pass over the cases (they may be made as they are read): ids and categories.
    case_list = [(c.get("id"), c.get("category")) for c in plan_cases if isinstance(c, dict)]
    tallies = CaseTallies([cid for cid, _ in case_list],
                          [v.get("name") for v in plan.get("variants") or () if isinstance(v, dict)])
    others: list[tuple[int, Any]] = []  # attempts that did not pass, up to the cap
    others_omitted = 0
    passes = _PassSample(cap, passes_total)
    total = 0
    renders = RenderFacts()
    for seq, a in enumerate(attempts):
        total += 1
        renders.add(a)
        if not _tally(tallies, a):
            _validate([(seq, a)], source)  # raises, naming the attempt's bad field
            raise ConfigError("not an attempt", file=source, field=f"attempts[{seq}]")
        if a["status"] == "passed":
            passes.add(seq, a)
        elif len(others) < cap:
            others.append((seq, a))
        else:
            others_omitted += 1
    chosen = passes.take(max(0, cap - len(others)))
    kept = list(heapq.merge(others, chosen, key=lambda pair: pair[0]))
    complete = len(kept) == total
    shown = {k: v for k, v in head.items() if k != "attempts"}
    cases_shown = len(plan_cases)
    if not complete and len(plan_cases) > cap:
        # A run with many cases: the typed plan holds the cases of the attempts kept, not all.
        wanted = {a.get("case_id") for _, a in kept}
        cases = [c for c in plan_cases if isinstance(c, dict) and c.get("id") in wanted]
        shown["plan"] = {**plan, "cases": cases}
        cases_shown = len(cases)
    elif plan_cases and not isinstance(plan_cases, list):
        shown["plan"] = {**plan, "cases": list(plan_cases)}
    report = parse_report({**shown, "attempts": []}, source)
    report.attempts = _validate(kept, source)
    omitted = None
    if not complete:
        omitted = {"attempts": total, "kept": len(kept), "cap": cap,
                   "passes_omitted": passes.seen - len(chosen), "not_passed_omitted": others_omitted,
                   "note": OMITTED_NOTE}
        if cases_shown < len(plan_cases):
            omitted["cases"] = len(plan_cases)
            omitted["cases_shown"] = cases_shown
    return ReportView(report, complete, total, tallies, omitted, total_cases=len(plan_cases), case_list=case_list,
                      renders=renders.result())


_ATTEMPTS = TypeAdapter(list[Attempt])


def _validate(kept: list[tuple[int, Any]], source: str) -> list[Attempt]:
    """The kept attempts as typed models, in one validation call."""
    # Tens of thousands of fresh, acyclic objects would set off the cyclic collector again and
    # again (it doubled the cost in measurement); nothing here can form a cycle.
    with collector_paused():
        try:
            return _ATTEMPTS.validate_python([a for _, a in kept])
        except ValidationError as exc:
            index = exc.errors()[0]["loc"][0]
            raise invalid_report(exc, source, first=("attempts", kept[index][0])) from None


def cap_for(total: int) -> int:
    """How many attempts a view of `total` keeps: all up to ATTEMPT_CAP, else SAMPLE_CAP."""
    return total if total <= ATTEMPT_CAP else SAMPLE_CAP


def view_of(report: dict, *, cap: int | None = None, source: str = "report") -> ReportView:
    """The view of a whole report already in memory (`scoreboard report`, `compare`)."""
    attempts = report.get("attempts") or []
    passes = sum(1 for a in attempts if isinstance(a, dict) and a.get("status") == "passed")
    return build_view(report, attempts, cap=cap_for(len(attempts)) if cap is None else cap,
                      passes_total=passes, source=source)


def as_view(value: ReportView | dict) -> ReportView:
    """A view as it is, or the view of a report dict (callers that still hold the dict)."""
    return value if isinstance(value, ReportView) else view_of(value)
