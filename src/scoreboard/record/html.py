"""Self-contained HTML rendering of a report: inline CSS, JS and SVG; no network resource.

The page is drawn by the inline script from the report data embedded as JSON; every piece of
model output reaches the DOM through textContent only. Big reports stay small and fast: the
embedded data holds only what the page shows, long texts are shortened when the file would
otherwise pass SIZE_BUDGET, and the case table renders one page of rows at a time.
"""

from __future__ import annotations

import html
import json
import math
import re
from importlib import resources
from typing import Any

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

_SURROGATE = re.compile("[\ud800-\udfff]")
_SLOT = re.compile(r"@@([A-Z]+)@@")


def _template(name: str) -> str:
    return (resources.files("scoreboard.record") / "templates" / name).read_text(encoding="utf-8")


def embed_json(data: Any) -> str:
    """JSON that is safe inside <script type="application/json">: no `<`, `>`, `&`, U+2028/2029
    or lone surrogate survives as a raw character, so no output can close the script element."""
    try:
        text = json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except ValueError:  # NaN or infinity somewhere: JSON has no spelling for them
        text = json.dumps(_finite(data), ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    text = (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))
    # Characters outside strings are plain ASCII, so these only ever occur inside strings.
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


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


def _attempt(a: dict, variant_index: dict[str, int], shrink: _Shrink) -> dict:
    out: dict[str, Any] = {"v": variant_index[a["variant"]], "r": a.get("run", 0), "s": a.get("status")}
    output = a.get("output") or None
    if output:
        if output.get("text") is not None:
            out["o"] = shrink.text(output["text"])
        elif output.get("json") is not None:  # the text usually repeats the parsed JSON: keep one
            out["j"] = shrink.value(output["json"], shrink.text_limit)
        if output.get("tool_calls"):
            out["t"] = shrink.value(output["tool_calls"], shrink.text_limit)
        if output.get("status") is not None:
            out["os"] = output["status"]
    if a.get("error"):
        out["e"] = shrink.text(a["error"])
    measured = {k: v for k, v in (a.get("measurements") or {}).items() if v is not None}
    if measured:
        out["m"] = measured
    grades = []
    for g in a.get("grades") or []:
        grade: dict[str, Any] = {"n": g.get("grader"), "p": g.get("passed")}
        if g.get("score") is not None:
            grade["sc"] = g["score"]
        if g.get("reason"):
            grade["re"] = shrink.text(g["reason"])
        fields = []
        for f in g.get("fields") or []:
            field: dict[str, Any] = {"p": f.get("path"), "ok": f.get("passed")}
            if shrink.keep_passing or not f.get("passed"):
                field["x"] = shrink.value(f.get("expected"))
                field["y"] = shrink.value(f.get("actual"))
            if f.get("reason"):
                field["re"] = shrink.text(f["reason"])
            fields.append(field)
        if fields:
            grade["f"] = fields
        grades.append(grade)
    if grades:
        out["g"] = grades
    return out


def page_data(report: dict, level: int = 0) -> dict:
    """What the page uses, in a compact shape (short keys per attempt; hashes and specs left out)."""
    shrink = _Shrink(*LEVELS[level])
    plan = report.get("plan") or {}
    variants = [v.get("name") for v in plan.get("variants") or []]
    plan_variants = [{k: v.get(k) for k in ("name", "subject", "skill_path", "params") if v.get(k) is not None}
                     for v in plan.get("variants") or []]
    for a in report.get("attempts") or []:
        if a["variant"] not in variants:
            variants.append(a["variant"])
            plan_variants.append({"name": a["variant"]})
    variant_index = {name: i for i, name in enumerate(variants)}
    cases: list[dict] = []
    by_id: dict[str, dict] = {}
    for c in plan.get("cases") or []:
        entry: dict[str, Any] = {"id": c.get("id"), "a": []}
        if c.get("category"):
            entry["cat"] = c["category"]
        if c.get("tags"):
            entry["tags"] = c["tags"]
        if "input" in c:
            value = c["input"]
            entry["in"] = shrink.text(value) if isinstance(value, str) else shrink.value(value, shrink.text_limit)
        if c.get("expected") is not None:
            entry["x"] = shrink.value(c["expected"], shrink.text_limit)
        cases.append(entry)
        by_id[entry["id"]] = entry
    for a in report.get("attempts") or []:
        entry = by_id.get(a["case_id"])
        if entry is None:  # an attempt for a case the plan does not list: still shown
            entry = {"id": a["case_id"], "a": []}
            cases.append(entry)
            by_id[entry["id"]] = entry
        entry["a"].append(_attempt(a, variant_index, shrink))
    plan_out = {k: plan.get(k) for k in ("fixture_hash", "suite_hash", "runs", "split") if plan.get(k) is not None}
    plan_out["variants"] = plan_variants
    data = {"version": DATA_VERSION, "run": report.get("run") or {}, "plan": plan_out,
            "summary": report.get("summary") or {}, "gates": report.get("gates") or [], "cases": cases}
    if shrink.shortened:
        data["shortened"] = {"count": shrink.shortened, "text_limit": shrink.text_limit,
                             "value_limit": shrink.value_limit, "passing_values_kept": shrink.keep_passing}
    return data


def render_html(report: dict) -> str:
    """The whole report as one self-contained HTML page (works from file://, loads nothing)."""
    for level in range(len(LEVELS)):
        payload = embed_json(page_data(report, level))
        if len(payload.encode("utf-8")) <= SIZE_BUDGET:
            break
    suite = (report.get("run") or {}).get("suite") or "report"
    parts = {"TITLE": html.escape(f"scoreboard report: {suite}"), "CSS": _template("report.css"),
             "JS": _template("report.js"), "DATA": payload}
    # One pass, so nothing inside the data is ever treated as a slot.
    return _SLOT.sub(lambda m: parts[m.group(1)], _template("report.html"))
