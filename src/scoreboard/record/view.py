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

import gc
import heapq
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pydantic import TypeAdapter, ValidationError

from ..errors import ConfigError
from .io import invalid_report, parse_report
from .schema import Attempt, Report

#: attempts kept as typed models in one view: validating 10,000 costs 0.1-0.25 s and about 80 MB
#: (benchmarks/view_bench.py), and the HTML page carries that many well inside its size budget.
ATTEMPT_CAP = 10_000

OMITTED_NOTE = ("this rendering shows every attempt that did not pass (up to the cap) and an evenly "
                "spread sample of passes; the JSON report holds every attempt")

# status -> CaseTally counter
_COUNTER = {"passed": "passed", "failed": "failed", "error": "errors", "unassessed": "unassessed",
            "not-run": "not_run", "interrupted": "interrupted"}
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
    #: sum of the known latencies (None when none is known)
    latency_ms_total: float | None = None

    @property
    def judged(self) -> int:
        """Runs with a verdict: passed, failed or errored."""
        return self.passed + self.failed + self.errors

    @property
    def not_passed(self) -> int:
        """Runs that failed, errored or were interrupted."""
        return self.failed + self.errors + self.interrupted


@dataclass
class ReportView:
    """The typed report with the attempts kept (all of them when `complete`), and tallies of all."""

    report: Report
    complete: bool
    total_attempts: int
    tallies: dict[tuple[str, str], CaseTally] = field(default_factory=dict)
    #: what was left out and why; None when complete
    omitted: dict | None = None

    def failures_total(self) -> int:
        """Attempts that failed, errored or were interrupted, over the whole run."""
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


def _tally(counts: dict[tuple[str, str], list], attempt: Any) -> bool:
    """Count one attempt; False when it is too malformed to count (validation will say why)."""
    try:
        key = (attempt["case_id"], attempt["variant"])
        slot = _SLOT[attempt["status"]]
        latency = (attempt.get("measurements") or {}).get("latency_ms")
        hash(key)
    except (KeyError, TypeError, AttributeError):
        return False
    row = counts.get(key)
    if row is None:
        row = counts[key] = [0] * (len(_SLOT) + 1) + [None]
    row[0] += 1
    row[slot + 1] += 1
    if isinstance(latency, (int, float)) and not isinstance(latency, bool):
        row[-1] = latency if row[-1] is None else row[-1] + latency
    return True


def build_view(head: dict, attempts: Iterable[dict], *, cap: int = ATTEMPT_CAP,
               passes_total: int | None = None, source: str = "report") -> ReportView:
    """The renderers' view of a report: `head` is the report without "attempts", `attempts` its
    attempts in report order (read once). `passes_total` (from the summary) spreads the sample
    of passes evenly over the whole run; `source` names the report in a validation error."""
    counts: dict[tuple[str, str], list] = {}
    others: list[tuple[int, Any]] = []  # attempts that did not pass, up to the cap
    others_omitted = 0
    passes = _PassSample(cap, passes_total)
    total = 0
    for seq, a in enumerate(attempts):
        total += 1
        if not _tally(counts, a):
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
    report = parse_report({**{k: v for k, v in head.items() if k != "attempts"}, "attempts": []}, source)
    report.attempts = _validate(kept, source)
    complete = len(kept) == total
    omitted = None
    if not complete:
        omitted = {"attempts": total, "kept": len(kept), "cap": cap,
                   "passes_omitted": passes.seen - len(chosen), "not_passed_omitted": others_omitted,
                   "note": OMITTED_NOTE}
    tallies = {key: CaseTally(*row[:-1], latency_ms_total=row[-1]) for key, row in counts.items()}
    return ReportView(report, complete, total, tallies, omitted)


_ATTEMPTS = TypeAdapter(list[Attempt])


def _validate(kept: list[tuple[int, Any]], source: str) -> list[Attempt]:
    """The kept attempts as typed models, in one validation call."""
    # Tens of thousands of fresh, acyclic objects would set off the cyclic collector again and
    # again (it doubled the cost in measurement); nothing here can form a cycle.
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _ATTEMPTS.validate_python([a for _, a in kept])
    except ValidationError as exc:
        index = exc.errors()[0]["loc"][0]
        raise invalid_report(exc, source, first=("attempts", kept[index][0])) from None
    finally:
        if enabled:
            gc.enable()


def view_of(report: dict, *, cap: int = ATTEMPT_CAP, source: str = "report") -> ReportView:
    """The view of a whole report already in memory (`scoreboard report`, `compare`)."""
    attempts = report.get("attempts") or []
    passes = sum(1 for a in attempts if isinstance(a, dict) and a.get("status") == "passed")
    return build_view(report, attempts, cap=cap, passes_total=passes, source=source)


def as_view(value: ReportView | dict) -> ReportView:
    """A view as it is, or the view of a report dict (callers that still hold the dict)."""
    return value if isinstance(value, ReportView) else view_of(value)
