"""Self-contained HTML rendering of a report: inline CSS, JS and SVG; no network resource.

The page is drawn by the inline script from the report data embedded as JSON; every piece of
model output reaches the DOM through textContent only, its control and direction characters
spelt as escapes by templates/unseen.js (the viewer serves the same file). Big reports stay small and fast: the
embedded data holds only what the page shows (the attempts of the typed view: all of them, or
every one that did not pass and a sample of passes, which the page then says), long texts are
shortened when the file would otherwise pass SIZE_BUDGET, and the case table renders one page
of rows at a time.
"""

from __future__ import annotations

import contextvars
import html
import json
import re
from importlib import resources
from typing import Any

from ..jsonio import dumps_text, finite
from .agreement_words import agreement_lines, confusion_rows
from .fieldwords import DocumentErrors, absent_reason, fields_unknown
from .figures import left_out_words, one_sided_words, small_sample_words
from .io import escape_surrogates, models_text
from .mdtext import spell_unseen
from .pairwise_words import pairwise_failures
from .requests_text import notable, request_lines, tried
from .schema import Attempt, PlanCase
from .stop_words import resume_words
from .view import CaseTally, ReportView, as_view

SIZE_BUDGET = 18_000_000  # bytes of embedded data; the whole file must stay under 20 MB
DATA_VERSION = 1

# (longest text kept, longest field value kept, keep values of passing fields), gentlest first.
LEVELS = (
    (100_000, 20_000, True),
    (20_000, 2_000, True),
    (4_000, 500, False),
    (1_000, 200, False),
    (300, 80, False),
    (80, 40, False),
)

_SLOT = re.compile(r"@@([A-Z]+)@@")


def _template(name: str) -> str:
    return (resources.files("scoreboard.record") / "templates" / name).read_text(encoding="utf-8")


def embed_json(data: Any) -> str:
    """JSON that is safe inside <script type="application/json">: no `<`, `>`, `&`, U+2028/2029
    or lone surrogate survives as a raw character, so no output can close the script element."""
    # orjson first (a 10,000-attempt page: 0.01 s against 0.05 s); it refuses lone surrogates,
    # so text from it has none, and it writes NaN and infinities as null, as jsonio.finite does.
    text = dumps_text(data)
    fast = text is not None
    if not fast:
        try:
            text = json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        except ValueError:  # NaN or infinity somewhere: JSON has no spelling for them
            text = json.dumps(finite(data), ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    text = (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))
    if fast:
        return text
    # Characters outside strings are plain ASCII, so these only ever occur inside strings.
    return escape_surrogates(text)


class _Shrink:
    """Shortens texts and values for one size level."""

    def __init__(self, text_limit: int, value_limit: int, keep_passing: bool):
        self.text_limit, self.value_limit, self.keep_passing = text_limit, value_limit, keep_passing
        self.shortened = 0

    def text(self, value: Any) -> Any:
        if not isinstance(value, str) or len(value) <= self.text_limit:
            return value
        self.shortened += 1
        return value[:self.text_limit] + f"\n… [{len(value) - self.text_limit} more characters are in the JSON report]"

    def value(self, value: Any, limit: int | None = None) -> Any:
        """A JSON value, or an {"__omitted__": n} marker when its text is longer than the limit."""
        limit = self.value_limit if limit is None else limit
        if value is None or isinstance(value, (bool, int, float)):
            return value
        if isinstance(value, str):
            if len(value) <= limit:
                return value
            size = len(value)
        else:
            size = len(json.dumps(value, ensure_ascii=False, default=str))
            if size <= limit:
                return value
        self.shortened += 1
        return {"__omitted__": size}


def _attempt(a: Attempt, variant_index: dict[str, int], shrink: _Shrink) -> dict:
    out: dict[str, Any] = {"v": variant_index[a.variant], "r": a.run, "s": a.status}
    output = a.output
    if output is not None:
        if output.text is not None:
            out["o"] = shrink.text(output.text)
        elif output.json_ is not None:  # the text usually repeats the parsed JSON: keep one
            out["j"] = shrink.value(output.json_, shrink.text_limit)
        if output.tool_calls:
            out["t"] = shrink.value(output.tool_calls, shrink.text_limit)
        if output.status is not None:
            out["os"] = output.status
    if a.error:
        out["e"] = shrink.text(a.error)
    # the fields are plain numbers and flags: what model_dump(exclude_none=True) gives, 10x faster
    measured = {k: v for k, v in a.measurements.__dict__.items() if v is not None}
    if measured:
        out["m"] = measured
    grades = []
    for g in a.grades:
        grade: dict[str, Any] = {"n": g.grader, "p": g.passed}
        if g.score is not None:
            grade["sc"] = g.score
        extra = g.model_extra or {}
        if extra.get("record_only") is True:  # a choice recorded, no verdict (classify record_only)
            grade["ro"] = str(extra["choice"]) if isinstance(extra.get("choice"), str) else ""
        if g.reason:
            grade["re"] = shrink.text(g.reason)
        fields = []
        for f in g.fields or ():
            field: dict[str, Any] = {"p": f.path, "ok": f.passed}
            if shrink.keep_passing or not f.passed:
                field["x"] = shrink.value(f.expected)
                field["y"] = shrink.value(f.actual)
                absent = absent_reason(f)
                if absent:  # the output held no value here: the page says so, not "null"
                    field["ya"] = absent
            if f.reason:
                field["re"] = shrink.text(f.reason)
            fields.append(field)
        if fields:
            grade["f"] = fields
        grades.append(grade)
    if grades:
        out["g"] = grades
    if a.render is not None and _THUMBS.get() is not None:  # visual work (issue 17)
        out["rd"] = _render_summary(a.render, _THUMBS.get())
    return out


# --- visual work (issue 17): screenshots as thumbnails that open full size ---
_THUMBS: contextvars.ContextVar = contextvars.ContextVar("thumbs", default=None)
#: thumbnails embedded in one page at most (each a few KB); later shots are listed as links
MAX_THUMBS = 300
#: bytes of thumbnails embedded in one page at most, inside SIZE_BUDGET (photo-like pages make
#: thumbnails of 100 KB: 300 of them were 40 MB, outside the budget the rest shrinks to fit);
#: past it shots are listed as links that open the full screenshot
THUMB_BYTES = 6_000_000
_SHOT_PATH = re.compile(r"^[A-Za-z0-9._-]+/screenshots/[0-9a-f]{64}\.png$")


class _Thumbs:
    """Thumbnails of the screenshots beside the report, made once each, checked against their hash."""

    def __init__(self, base_dir):
        self.base_dir, self.made, self.bytes = base_dir, {}, 0

    def get(self, shot) -> str | None:
        if self.base_dir is None or not _SHOT_PATH.match(shot.path):
            return None
        if shot.sha256 not in self.made:
            if len(self.made) >= MAX_THUMBS or self.bytes >= THUMB_BYTES:
                return None
            try:
                import base64
                from pathlib import Path

                from ..render.pixels import thumbnail
                from ..render.store import read_shot

                png = thumbnail(read_shot(Path(self.base_dir) / shot.path, shot.sha256))
                if self.bytes + len(png) > THUMB_BYTES:  # the budget is spent: this and later shots as links
                    self.bytes = THUMB_BYTES
                    png = None
                else:
                    self.bytes += len(png)
                self.made[shot.sha256] = png and "data:image/png;base64," + base64.b64encode(png).decode("ascii")
            except Exception:  # noqa: BLE001 - a missing or changed shot is shown without a thumbnail
                self.made[shot.sha256] = None
        return self.made[shot.sha256]


def _render_summary(r, thumbs: _Thumbs) -> dict:
    shots = [{"h": s.sha256, "m": s.moment_ms, "fp": s.full_page,
              "p": s.path if _SHOT_PATH.match(s.path) else None, "th": thumbs.get(s)} for s in r.shots]
    return {"k": r.kind, "sh": shots, "ce": len(r.console_errors) + len(r.page_errors), "bl": r.blocked_requests,
            "blank": r.blank, "err": r.error}
# --- end visual work ---


def _case(c: PlanCase, shrink: _Shrink) -> dict:
    entry: dict[str, Any] = {"id": c.id, "a": []}
    if c.category:
        entry["cat"] = c.category
    if c.tags:
        entry["tags"] = c.tags
    if "input" in c.model_fields_set:
        value = c.input
        entry["in"] = shrink.text(value) if isinstance(value, str) else shrink.value(value, shrink.text_limit)
    if c.expected is not None:
        entry["x"] = shrink.value(c.expected, shrink.text_limit)
    return entry


def page_data(view: ReportView, level: int = 0) -> dict:
    """What the page uses, in a compact shape (short keys per attempt; hashes and specs left out)."""
    view = as_view(view)
    report = view.report
    shrink = _Shrink(*LEVELS[level])
    plan = report.plan
    variants = [v.name for v in plan.variants]
    plan_variants = [{k: value for k, value in v.model_dump(include=VARIANT_KEYS, exclude_unset=True).items()
                      if value is not None} for v in plan.variants]
    case_ids = []
    for case_id, variant in view.tallies:  # every attempt's case and variant, in report order
        if variant not in variants:
            variants.append(variant)
            plan_variants.append({"name": variant})
        case_ids.append(case_id)
    variant_index = {name: i for i, name in enumerate(variants)}
    # every plan case in plan order with its category, also those a capped view holds no attempt of
    # (report.plan.cases then lists only the cases shown: the category filter and the plan order
    # would see the rest as uncategorised, after them)
    shown = {c.id: _case(c, shrink) for c in plan.cases}
    cases = [shown.pop(cid, None) or ({"id": cid, "a": [], "cat": cat} if cat else {"id": cid, "a": []})
             for cid, cat in view.cases()]
    cases += shown.values()
    by_id = {entry["id"]: entry for entry in cases}
    for case_id in case_ids:
        if case_id not in by_id:  # attempts for a case the plan does not list: still shown
            by_id[case_id] = {"id": case_id, "a": []}
            cases.append(by_id[case_id])
    for a in report.attempts:
        by_id[a.case_id]["a"].append(_attempt(a, variant_index, shrink))
    if not view.complete:
        # The page counts each case's runs from these figures, not from the attempts it holds.
        for entry in cases:
            entry["n"] = [_counts(view.tallies.get((entry["id"], name))) for name in variants]
    errored = DocumentErrors(view)
    for entry in cases:  # per-document field counts over every run: [correct, graded] or null
        counts = [view.field_counts(entry["id"], name) for name in variants]
        errors = [errored(entry["id"], name) for name in variants]
        if any(counts) or any(errors):
            entry["fd"] = [list(c) if c else None for c in counts]
        if any(errors):  # the runs that errored: no fields to grade, listed beside the counts
            entry["fe"] = errors
    plan_out = {k: value for k, value in plan.model_dump(include=PLAN_KEYS).items() if value is not None}
    plan_out["variants"] = plan_variants
    plan_out["model_text"] = models_text(plan)
    data = {"version": DATA_VERSION, "run": report.run.model_dump(by_alias=True, exclude_unset=True),
            "plan": plan_out, "summary": report.summary.model_dump(exclude_unset=True),
            "gates": [g.model_dump(exclude_unset=True) for g in report.gates], "cases": cases}
    unknown = {name: words for name in variants  # every attempt errored: field accuracy unknown, said
               for words in [fields_unknown(report.summary.variants.get(name), report)] if words}
    if unknown:
        data["fields_unknown"] = unknown
    notes = [one_sided_words(c, report.summary) for c in report.summary.comparisons or ()]
    if any(notes):  # cases a pair leaves out because one variant never judged them, beside its flags
        data["pair_notes"] = notes
    if report.run.status == "stopped":  # what finishes it, as the terminal and Markdown say it
        data["finish_words"] = resume_words(report.run.stop_reason, "")
    left_out = {}  # what each derived total left out of its totals and __count, and why
    for name, vs in report.summary.variants.items():
        words = {k: left_out_words(f) for k, f in (vs.derived_metrics or {}).items()}
        if any(words.values()):
            left_out[name] = {k: w for k, w in words.items() if w}
    if left_out:
        data["derived_left_out"] = left_out
    small = small_sample_words(report.summary, plan)  # said once, as the terminal and Markdown say it
    if small:
        data["small_sample"] = small
    if shrink.shortened:
        data["shortened"] = {"count": shrink.shortened, "text_limit": shrink.text_limit,
                             "value_limit": shrink.value_limit, "passing_values_kept": shrink.keep_passing}
    if view.omitted:
        data["omitted"] = {**view.omitted, "shown": len(report.attempts)}
    refused = _egress_refused(report.attempts)
    if refused:
        data["egress_refused"] = refused
    unjudged = pairwise_failures(report.pairwise)  # why a pair's comparisons were not judged
    if unjudged:
        data["pairwise_failures"] = {f"{a}\u0000{b}": lines for (a, b), lines in unjudged.items()}
    agreement = report.summary.judge_agreement
    if agreement is not None:  # judge vs human reviews, in the words the Markdown and terminal use
        block = agreement.model_dump(exclude_unset=True)
        data["agreement"] = {"lines": agreement_lines(block, confusion=False), "confusion": confusion_rows(block)}
    if tried(report.requests):  # what the run sent and how each ended
        data["requests"] = {"lines": request_lines(report.requests), "notable": notable(report.requests)}
    from .visual import check_lines, lead_lines  # visual work (issue 17): dQ and the judge check first

    from .render_facts import blocked_line

    lead = lead_lines(report, view.renders) + check_lines(report)
    lead += [line for line in [blocked_line(view.renders)] if line]  # blocked requests: counted, never silent
    if lead:
        data["lead"] = lead
    return data


def _egress_refused(attempts: list[Attempt], limit: int = 200) -> list[dict]:
    """Agent-task attempts whose egress allowlist proxy refused a try: the hosts, per attempt."""
    out = []
    for a in attempts:
        task = (a.subject_info or {}).get("task")
        egress = task.get("egress") if isinstance(task, dict) else None
        if isinstance(egress, dict) and egress.get("refused"):
            out.append({"case": a.case_id, "variant": a.variant, "run": a.run, "refused": egress.get("refused"),
                        "hosts": [str(h)[:200] for h in (egress.get("refused_hosts") or [])[:20]]})
            if len(out) >= limit:
                break
    return out


VARIANT_KEYS = {"name", "subject", "skill_path", "params"}
PLAN_KEYS = {"fixture_hash", "suite_hash", "runs", "split"}


def _counts(t: CaseTally | None) -> list[int]:
    """[runs, passed, judged, errors, failed (failed, error, interrupted), not assessed, not run,
    interrupted]: an interrupted run (a stop cut it) is counted apart, never called an error."""
    if t is None:
        return [0, 0, 0, 0, 0, 0, 0, 0]
    return [t.runs, t.passed, t.judged, t.errors, t.not_passed, t.unassessed, t.not_run, t.interrupted]


def _no_script(view: ReportView) -> str:
    """What the page says with JavaScript off: the terminal's summary lines (pass rates with their
    counts, errors and not assessed, intervals, comparisons and their flags, gates), escaped."""
    from .terminal import summary_lines

    lines = summary_lines(view.report, {}, getattr(view, "renders", None))
    return html.escape("\n".join(lines))


def render_html(view: ReportView) -> str:
    """The whole report as one self-contained HTML page (works from file://, loads nothing)."""
    view = as_view(view)
    token = _THUMBS.set(_Thumbs(getattr(view, "base_dir", None)))  # visual work (issue 17)
    try:
        for level in range(len(LEVELS)):
            payload = embed_json(page_data(view, level))
            if len(payload.encode("utf-8")) <= SIZE_BUDGET:
                break
    finally:
        _THUMBS.reset(token)
    suite = view.report.run.suite or "report"
    dry = "DRY RUN (mock subject): " if view.report.run.dry_run else ""
    parts = {"TITLE": html.escape(f"{dry}scoreboard report: {spell_unseen(suite)}"), "CSS": _template("report.css"),
             "JS": _template("unseen.js") + "\n" + _template("report.js"), "DATA": payload,
             "SUMMARY": _no_script(view)}
    # One pass, so nothing inside the data is ever treated as a slot.
    return _SLOT.sub(lambda m: parts[m.group(1)], _template("report.html"))
