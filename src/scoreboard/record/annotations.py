"""GitHub workflow annotations for a run (`::error` for a failed gate, `::warning`/`::error`
for failed/errored cases, pointing at the case file and line when known), printed under GitHub
Actions (GITHUB_ACTIONS=true) only.

Escaped as @actions/core's command.ts escapes them (escapeData: % CR LF; escapeProperty: also
: and ,), and properties with an empty value are left out, as there, so nothing a case id, a
file name or a reason holds can end the annotation or start another workflow command.
"""

from __future__ import annotations

import os
from pathlib import Path

from .mdtext import spell_unseen

#: case annotations printed at most (GitHub shows 10 warnings and 10 errors a step); then one line
MAX_CASES = 10
#: a reason is cut to this many characters (the report holds the whole)
MAX_REASON = 300


def escape_data(text) -> str:
    """As command.ts escapes a message, after spelling out every other control, direction or
    zero-width character (ESC, BEL: a reason or id must not colour or retitle the log)."""
    text = str(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return spell_unseen(text, keep_lines=True)  # tabs kept


def escape_property(text) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(name: str, message: str, **props) -> str:
    """`::name k=v,k=v::message`, as command.ts's Command.toString writes it."""
    shown = ",".join(f"{k}={escape_property(v)}" for k, v in props.items() if v not in (None, ""))
    return f"::{name}{' ' + shown if shown else ''}::{escape_data(message)}"


def _reason(attempt: dict) -> str:
    if attempt.get("error"):
        return str(attempt["error"])
    for grade in attempt.get("grades") or ():
        if grade.get("passed") is False:
            return f"{grade.get('grader')}: {grade.get('reason') or 'failed'}"
    return str(attempt.get("scoring_reason") or "")


def annotation_lines(gates, attempts, case_lines: dict | None = None, report_path: str = "") -> list[str]:
    """The annotations of a run's report (its gates, its attempts: an iterable, read once): each
    failed gate, then each (case, variant) that failed (warning) or errored (error), at most
    MAX_CASES, then a notice of how many more. `case_lines` maps a case id to (file, line)."""
    case_lines = case_lines or {}
    lines = [command("error", f"gate failed: {g.get('description') or g.get('gate')}", title="scoreboard gate")
             for g in gates or () if g.get("passed") is False]
    bad: dict[tuple[str, str], dict] = {}
    more: set = set()
    for a in attempts or ():
        if a.get("status") not in ("failed", "error"):
            continue
        key = (a.get("case_id"), a.get("variant"))
        if key not in bad and len(bad) >= MAX_CASES:
            more.add(key)
            continue
        entry = bad.setdefault(key, {"failed": 0, "error": 0, "reason": ""})
        entry[a["status"]] += 1
        entry["reason"] = entry["reason"] or _reason(a)
    for (case_id, variant), e in bad.items():
        kind = "error" if e["error"] else "warning"
        what = (f"{e['error']} errored" if e["error"] else "") + (", " if e["error"] and e["failed"] else "") \
            + (f"{e['failed']} failed" if e["failed"] else "")
        reason = e["reason"] if len(e["reason"]) <= MAX_REASON else e["reason"][:MAX_REASON] + "…"
        source, line = case_lines.get(case_id) or (None, None)
        lines.append(command(kind, f"case {case_id} ({variant}): {what}" + (f": {reason}" if reason else ""),
                             file=source, line=line, title=f"scoreboard case {'errored' if e['error'] else 'failed'}"))
    if more:
        lines.append(command("notice", f"{len(more)} more failed or errored case{'s' if len(more) != 1 else ''} not "
                             f"annotated" + (f": see {report_path}" if report_path else "")))
    return lines


def relative_path(source: str | None, cwd: Path | None = None) -> str:
    """A case file as an annotation (or a pytest failure) names it: relative to the working
    directory (`cwd`, resolved; default the current one) when inside it, as GitHub finds a file
    of the checkout and pytest names test files."""
    if not source:
        return ""
    try:
        return Path(source).resolve().relative_to(cwd or Path.cwd().resolve()).as_posix()
    except (ValueError, OSError):
        return source


def case_files(cases) -> dict[str | None, str]:
    """{case file: its `relative_path`} of the files the cases come from, each resolved once
    (10,000 cases of one file: one path resolved, not 10,000)."""
    cwd = Path.cwd().resolve()
    return {source: relative_path(source, cwd) for source in {c.source for c in cases}}


def case_lines(suite) -> dict | None:
    """{case id: (file, line)} of a suite's cases, for the annotations' `file=` and `line=`;
    None outside GitHub Actions, where nothing reads it."""
    if not in_github_actions():
        return None
    files = case_files(suite.cases)
    return {c.id: (files[c.source], c.line) for c in suite.cases if c.source or c.line}


def in_github_actions() -> bool:
    return os.environ.get("GITHUB_ACTIONS") == "true"


def outcome_annotations(outcome) -> list[str]:
    """The annotations of a finished run's Outcome (none outside GitHub Actions, none for a dry
    run, none without a JSON report)."""
    if not in_github_actions() or "json" not in outcome.paths or outcome.head["run"].get("dry_run"):
        return []
    from ..store.reportfile import ReportFile

    report = ReportFile(outcome.paths["json"])
    return annotation_lines(report.head.get("gates"), report.attempts(), getattr(outcome, "case_lines", None),
                            str(outcome.paths["json"]))
