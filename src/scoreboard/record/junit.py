"""JUnit XML rendering of a report: one <testsuite> per variant, one <testcase> per case."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections import defaultdict
from typing import Any

# Characters XML 1.0 forbids even when escaped (most C0 controls, lone surrogates, U+FFFE/FFFF).
_ILLEGAL = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
ERRORED = ("error", "interrupted")
MESSAGE_LIMIT = 1000
VALUE_LIMIT = 300


def clean(value: Any) -> str:
    """Text safe for XML 1.0: characters XML cannot carry are removed (escaping is ElementTree's job)."""
    return _ILLEGAL.sub("", "" if value is None else str(value))


def _short(value: Any, limit: int = VALUE_LIMIT) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[:limit] + f"… ({len(text) - limit} more characters)"


def _run_reasons(a: dict) -> list[str]:
    """Why one run did not pass: its error, then each grader that did not pass, with failing fields."""
    out = []
    if a.get("error"):
        out.append(f"error: {a['error']}")
    for g in a.get("grades") or []:
        if g.get("passed") is True:
            continue
        verdict = "not assessed" if g.get("passed") is None else "failed"
        out.append(f"{g.get('grader')}: {g.get('reason') or verdict}")
        for f in g.get("fields") or []:
            if not f.get("passed"):
                out.append(f"  {f.get('path')}: expected {_short(f.get('expected'))}, "
                           f"got {_short(f.get('actual'))}")
    if not out:
        out.append(a.get("status") or "failed")
    return out


def _testcase(parent: ET.Element, case_id: str, classname: str, attempts: list[dict]) -> str:
    """Add one <testcase>; returns its outcome: passed, failure, error or skipped."""
    tc = ET.SubElement(parent, "testcase", name=clean(case_id), classname=clean(classname))
    latencies = [a["measurements"].get("latency_ms") for a in attempts if a.get("measurements")]
    known = [v for v in latencies if v is not None]
    if known:
        tc.set("time", f"{sum(known) / 1000:.3f}")
    statuses = [a["status"] for a in attempts]
    bad = [a for a in attempts if a["status"] in ("failed",) + ERRORED]
    runs = len(attempts)
    if bad:
        kind = "error" if any(a["status"] in ERRORED for a in bad) else "failure"
        noun = "run" if runs == 1 else "runs"
        head = f"{len(bad)} of {runs} {noun} did not pass"
        details = []
        for a in bad:
            reasons = _run_reasons(a)
            details.append(f"run {a['run']} ({a['status']}): " + "\n".join(reasons))
        first = "; ".join(f"run {a['run']}: {_run_reasons(a)[0]}" for a in bad)
        message = f"{head}: {first}"
        if len(message) > MESSAGE_LIMIT:
            message = message[:MESSAGE_LIMIT] + "…"
        el = ET.SubElement(tc, kind, message=clean(message), type=clean(bad[0]["status"]))
        el.text = clean("\n\n".join(details))
        return kind
    if not attempts or all(s == "not-run" for s in statuses):
        reason = next((a.get("error") for a in attempts if a.get("error")), None) or "not run"
        ET.SubElement(tc, "skipped", message=clean(reason))
        return "skipped"
    if not any(s == "passed" for s in statuses):
        ET.SubElement(tc, "skipped", message="not assessed: no grader could judge this case")
        return "skipped"
    return "passed"


def render_junit(report: dict) -> str:
    """The report as JUnit XML: a case fails when any of its runs failed; errors are <error>."""
    run, plan = report.get("run") or {}, report.get("plan") or {}
    suite = str(run.get("suite") or "scoreboard")
    variants = [v["name"] for v in plan.get("variants") or []]
    case_ids = [c["id"] for c in plan.get("cases") or []]
    grouped: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for a in report.get("attempts") or []:
        grouped[(a["variant"], a["case_id"])].append(a)
        if a["variant"] not in variants:
            variants.append(a["variant"])
        if a["case_id"] not in case_ids:
            case_ids.append(a["case_id"])
    root = ET.Element("testsuites", name=clean(suite))
    totals = dict(tests=0, failures=0, errors=0, skipped=0)
    summary = (report.get("summary") or {}).get("variants") or {}
    for variant in variants:
        classname = f"{suite}.{variant}"
        ts = ET.SubElement(root, "testsuite", name=clean(classname))
        if run.get("started_at"):
            ts.set("timestamp", clean(str(run["started_at"]).removesuffix("Z")))
        props = ET.SubElement(ts, "properties")
        for key, value in (("variant", variant), ("run_status", run.get("status")),
                           ("fixture_hash", plan.get("fixture_hash")),
                           ("pass_rate", summary.get(variant, {}).get("pass_rate")),
                           ("stop_reason", run.get("stop_reason"))):
            if value is not None:
                ET.SubElement(props, "property", name=key, value=clean(value))
        counts = dict(tests=0, failures=0, errors=0, skipped=0)
        for case_id in case_ids:
            outcome = _testcase(ts, case_id, classname, sorted(grouped.get((variant, case_id), []),
                                                                 key=lambda a: a.get("run", 0)))
            counts["tests"] += 1
            key = {"failure": "failures", "error": "errors", "skipped": "skipped"}.get(outcome)
            if key:
                counts[key] += 1
        for key, value in counts.items():
            ts.set(key, str(value))
            totals[key] += value
    for key, value in totals.items():
        root.set(key, str(value))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
