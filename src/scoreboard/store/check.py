"""A stored run checked against its report: the report file's SHA-256 against the one stored
with the run, and every attempt, case, variant and the summary row by row. The report is the
record; a mismatch says which side moved."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..hashing import canonical_json
from .history import HistoryStore
from .reportfile import ReportFile
from .rows import file_sha256, parse, run_key

#: mismatches listed one by one before they are only counted
SHOWN = 20


@dataclass
class StoredCheck:
    """The outcome: what was compared and every mismatch (in words)."""

    key: str | None
    report: str
    checked: dict = field(default_factory=dict)
    mismatches: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.mismatches

    def to_dict(self) -> dict:
        return {"run_key": self.key, "report": self.report, "ok": self.ok, "checked": self.checked,
                "mismatches": self.mismatches}


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
    if row[0] != sha:
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
    if len(out.mismatches) > SHOWN:
        extra = len(out.mismatches) - SHOWN
        out.mismatches = out.mismatches[:SHOWN] + [f"… and {extra} more"]
    return out


def _compare_attempts(store: HistoryStore, key: str, report: ReportFile, out: StoredCheck) -> None:
    stored = {(c, v, r): rec for c, v, r, rec in store.db.rows(
        "SELECT case_id, variant, run, record FROM attempts WHERE run_key = ?", (key,))}
    seen = 0
    for a in report.attempts():
        seen += 1
        ident = (a["case_id"], a["variant"], int(a.get("run") or 0))
        held = stored.pop(ident, None)
        where = f"attempts[{ident[0]!r}, {ident[1]!r}, run {ident[2]}]"
        if held is None:
            _add(out, f"{where}: not stored")
        elif canonical_json(parse(held)) != canonical_json(a):
            _add(out, f"{where}: stored attempt differs from the report's")
    for c, v, r in stored:
        _add(out, f"attempts[{c!r}, {v!r}, run {r}]: stored but not in the report")
    out.checked["attempts"] = seen


def _add(out: StoredCheck, text: str) -> None:
    out.mismatches.append(text)
