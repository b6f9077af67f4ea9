"""A stored run checked against its report: the report file's SHA-256 against the one stored
with the run, and every attempt, case, variant and the summary row by row. The report is the
record; a mismatch says which side moved.

Every row the store derives from the report is checked too, since `history`, the viewer's
pages, trends and comparisons read those and not the attempts' records: the run's row (status,
times, counts, head), each variant's figures, each attempt's columns, each grade, and the
per-case and per-field tallies."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..hashing import canonical_json, file_sha256
from .history import HistoryStore
from .reportfile import ReportFile
from .rows import (
    attempt_position,
    attempt_row,
    grade_rows,
    head_of,
    parse,
    planned_attempts,
    positions,
    clean,
    run_key,
    variant_rows,
)
from .writes import FieldTally

#: the runs row's columns a report decides (git commit, branch and dirty flag come from where it ran)
_RUN_COLUMNS = ("run_id", "suite", "status", "started_at", "finished_at", "planned", "attempts", "variants", "head")
_ATTEMPT_COLUMNS = ("position", "status", "input_hash", "output_hash", "error", "latency_ms", "cost_usd",
                    "input_tokens", "output_tokens")

#: mismatches listed one by one before they are only counted
SHOWN = 20


@dataclass
class StoredCheck:
    """The outcome: what was compared and every mismatch (in words)."""

    key: str | None
    report: str
    checked: dict = field(default_factory=dict)
    mismatches: list[str] = field(default_factory=list)
    #: every mismatch found (those past SHOWN are counted in the last line, not listed)
    found: int = 0

    @property
    def ok(self) -> bool:
        return not self.mismatches

    @property
    def count(self) -> int:
        return max(self.found, len(self.mismatches))

    def to_dict(self) -> dict:
        return {"run_key": self.key, "report": self.report, "ok": self.ok, "checked": self.checked,
                "mismatch_count": self.count, "mismatches": self.mismatches}


def check_stored(store: HistoryStore, report_path: str | Path) -> StoredCheck:
    """Compare the store's copy of a report's run with the report file."""
    report = ReportFile(report_path)
    run = report.head["run"]
    key = run_key(run["suite"], run["id"], run.get("started_at"), run.get("uid"))
    out = StoredCheck(key, str(report_path))
    row = store.db.one("SELECT report_sha256, attempts FROM runs WHERE key = ?", (key,))
    if row is None:
        out.key = None
        out.mismatches.append(f"run {run['suite']}/{run['id']} is not in the store {store.location}")
        return out
    sha, _ = file_sha256(report.path)
    out.checked["report_sha256"] = sha
    if row[0] is None:  # recorded as it ran, never concluded there: there is no stored hash to differ from
        out.mismatches.append(f"the stored run never recorded its end (its process was killed, or the store failed "
                              f"during the run): `scoreboard store import {report_path}` stores it from its report")
    elif row[0] != sha:
        out.mismatches.append(f"report SHA-256 {sha[:16]}… differs from the stored {str(row[0])[:16]}… (the file "
                              "changed since it was stored, or the run was stored from another report)")
    _compare_attempts(store, key, report, out)
    cases = {c: parse(d) for c, d in store.db.rows("SELECT case_id, data FROM cases WHERE run_key = ?", (key,))}
    plan_cases = report.head["plan"].get("cases") or []
    out.checked["cases"] = len(plan_cases)
    for case in plan_cases:
        held = cases.pop(case["id"], None)
        if held is None or canonical_json(held) != canonical_json(case):
            _add(out, f"plan.cases[{case['id']!r}]: " + ("not stored" if held is None else "stored case differs"))
    for cid in cases:
        _add(out, f"plan.cases[{cid!r}]: stored but not in the report")
    summary = store.db.one("SELECT summary FROM summaries WHERE run_key = ?", (key,))
    if summary is None or canonical_json(parse(summary[0])) != canonical_json(report.head.get("summary")):
        _add(out, "summary: " + ("not stored" if summary is None else "stored summary differs from the report's"))
    _compare_derived(store, key, report, out)
    out.found = len(out.mismatches)
    if len(out.mismatches) > SHOWN:
        extra = len(out.mismatches) - SHOWN
        out.mismatches = out.mismatches[:SHOWN] + [f"… and {extra} more"]
    return out


def _compare_attempts(store: HistoryStore, key: str, report: ReportFile, out: StoredCheck) -> None:
    """Each attempt's record and columns, and its grades."""
    stored = {(row[0], row[1], row[2]): row[3:] for row in store.db.rows(
        f"SELECT case_id, variant, run, record, {', '.join(_ATTEMPT_COLUMNS)} FROM attempts WHERE run_key = ?",
        (key,))}
    grades = {(c, v, r, i): row for c, v, r, i, *row in store.db.rows(
        "SELECT case_id, variant, run, idx, grader, passed, score, reason FROM grades WHERE run_key = ?", (key,))}
    where_in_plan = positions(report.head["plan"])
    seen = 0
    for a in report.attempts():
        seen += 1
        ident = (a["case_id"], a["variant"], int(a.get("run") or 0))
        held = stored.pop(ident, None)
        where = f"attempts[{ident[0]!r}, {ident[1]!r}, run {ident[2]}]"
        if held is None:
            _add(out, f"{where}: not stored")
            continue
        if canonical_json(parse(held[0])) != canonical_json(a):
            _add(out, f"{where}: stored attempt differs from the report's")
        expected = attempt_row(key, attempt_position(a, where_in_plan), a)
        wanted = (expected[1], *expected[5:13])
        for name, found, value in zip(_ATTEMPT_COLUMNS, held[1:], wanted):
            if not _same(found, value):
                _add(out, f"{where}.{name}: stored {found!r}, the report's is {value!r}")
        for row in grade_rows(key, a):
            found = grades.pop((*ident, row[4]), None)
            if found is None or not all(_same(x, y) for x, y in zip(found, row[5:])):
                _add(out, f"{where}.grades[{row[4]}]: " + ("not stored" if found is None else
                                                           "stored grade differs from the report's"))
    for c, v, r in stored:
        _add(out, f"attempts[{c!r}, {v!r}, run {r}]: stored but not in the report")
    for c, v, r, i in grades:
        _add(out, f"attempts[{c!r}, {v!r}, run {r}].grades[{i}]: stored but not in the report")
    out.checked["attempts"] = seen


def _compare_derived(store: HistoryStore, key: str, report: ReportFile, out: StoredCheck) -> None:
    """The rows read in place of the records: the run's, each variant's figures, the tallies."""
    head, db = report.head, store.db
    run = head.get("run") or {}
    expected_run = (run.get("id"), run.get("suite"), run.get("status"), run.get("started_at"), run.get("finished_at"),
                    planned_attempts(head.get("plan") or {}), out.checked.get("attempts"),
                    [v["name"] for v in (head.get("plan") or {}).get("variants") or ()], head_of(head))
    row = db.one(f"SELECT {', '.join(_RUN_COLUMNS)} FROM runs WHERE key = ?", (key,))
    for name, found, value in zip(_RUN_COLUMNS, row, expected_run):
        if name in ("variants", "head"):
            found, value = parse(found), value
            differs = canonical_json(found) != canonical_json(value)
        else:
            differs = not _same(found, value)
        if differs:
            _add(out, f"run.{name}: stored " + ("value differs from the report's" if name == "head" else
                                               f"{found!r}, the report's is {value!r}"))
    variants = {r[2]: r for r in db.all("SELECT run_key, position, name, spec, attempts, passed, failed, errors, "
                                        "unassessed, not_run, pass_rate, ci_low, ci_high, ci_method, field_accuracy, "
                                        "fa_low, fa_high, cost_per_case, errors_not_graded, units FROM variants "
                                        "WHERE run_key = ?", (key,))}
    for want in variant_rows(key, head.get("plan") or {}, head.get("summary")):
        found = variants.pop(want[2], None)
        same = found is not None and all(_same(x, y) for x, y in zip(found[4:], want[4:], strict=True))
        if not same or found[1] != want[1] \
                or canonical_json(parse(found[3])) != canonical_json(parse(want[3])):
            _add(out, f"variants[{want[2]!r}]: " + ("not stored" if found is None else
                                                    "stored figures differ from the report's summary"))
    for name in variants:
        _add(out, f"variants[{name!r}]: stored but not in the report")
    _compare_tallies(db, key, report, out)


def _compare_tallies(db, key: str, report: ReportFile, out: StoredCheck) -> None:
    """Per-case outcomes (what comparisons and trends count) and per-field hits."""
    plan = report.head.get("plan") or {}
    cases = {c["id"]: (i, c.get("input_hash"), c.get("category")) for i, c in enumerate(plan.get("cases") or ())}
    tallies: dict[tuple, list[int]] = {}
    fields = FieldTally(plan)
    for a in report.attempts():
        if a["case_id"] not in cases:
            continue
        t = tallies.setdefault((a["variant"], a["case_id"]), [0, 0, 0, 0, 0, 0])
        status = a.get("status")
        t[0] += status == "passed"
        t[1] += status in ("passed", "failed", "error")
        t[2] += status == "passed"
        t[3] += status == "failed"
        t[4] += status == "error"
        t[5] += status not in ("passed", "failed", "error")
        fields.add(a)
    for variant, cid, position, input_hash, category, *counts in db.rows(
            "SELECT variant, case_id, position, input_hash, category, hits, tries, passed, failed, errors, other "
            "FROM case_results WHERE run_key = ?", (key,)):
        want = tallies.pop((variant, cid), None)
        i, h, cat = cases.get(cid, (None, None, None))
        if want is None or [int(n) for n in counts] != want or (position, input_hash) != (i, h) \
                or category != clean(cat if cat is None else str(cat)):
            _add(out, f"case_results[{variant!r}, {cid!r}]: " + ("stored but not in the report" if want is None
                                                                 else "stored tally differs from the report's attempts"))
    for variant, cid in tallies:
        _add(out, f"case_results[{variant!r}, {cid!r}]: not stored")
    expected = {(v, f, c): (h, t) for _, v, f, c, h, t, *_ in fields.rows(key)}
    for variant, field_, cid, hits, tries in db.rows(
            "SELECT variant, field, case_id, hits, tries FROM field_results WHERE run_key = ?", (key,)):
        if expected.pop((variant, field_, cid), None) != (int(hits), int(tries)):
            _add(out, f"field_results[{variant!r}, {field_!r}, {cid!r}]: stored tally differs from the report's")
    for variant, field_, cid in expected:
        _add(out, f"field_results[{variant!r}, {field_!r}, {cid!r}]: not stored")


def _same(found, value) -> bool:
    """A stored column equal to what the report gives it (a flag is stored 0/1; a number may
    come back as a float)."""
    if isinstance(value, bool):
        value = int(value)
    if isinstance(found, (int, float)) and isinstance(value, (int, float)):
        return float(found) == float(value)
    return found == value


def _add(out: StoredCheck, text: str) -> None:
    out.mismatches.append(text)
