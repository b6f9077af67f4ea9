"""The outcome of `verify`, the findings it is built from, and its human form."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from .chains import mismatch
from .diff import deep_diff
from .mdtext import spell_unseen

#: what verify checked, one of each (the keys name many: "3 input hashes", "1 input hash")
_ONE = {"input_hashes": "input hash", "attempts": "attempt", "screenshots": "screenshot", "grades": "grade",
        "gates": "gate", "requests": "request", "conversations": "conversation"}

NOTE = "Hashes prove internal consistency only; they do not authenticate a provider or a run."


@dataclass
class Verification:
    """The outcome of verifying one report."""

    ok: bool
    status: str | None
    mismatches: list[dict] = field(default_factory=list)
    not_recomputable: list[dict] = field(default_factory=list)
    checked: dict = field(default_factory=dict)
    #: fields that do not fit the report's typed schema (each a failure of verification too)
    schema_errors: list[dict] = field(default_factory=list)

    @property
    def partial(self) -> bool:
        """A checkpoint of a run still in progress: consistent at best, never complete."""
        return self.status == "running"

    def to_dict(self) -> dict:
        return {"ok": self.ok, "status": self.status, "partial": self.partial,
                "complete": self.ok and self.status == "completed",
                "mismatches": self.mismatches, "schema_errors": self.schema_errors,
                "not_recomputable": self.not_recomputable, "checked": self.checked, "note": NOTE}


class Findings:
    """What verifying one report has found so far: each check adds to it."""

    def __init__(self, report: dict):
        self.report = report
        self.mismatches: list[dict] = []
        self.schema_errors: list[dict] = []
        self.skipped: dict[str, dict] = {}
        self.checked: Counter = Counter()

    def add(self, path: str, expected: Any, found: Any, what: str, check: str) -> None:
        """One mismatch: `expected` recomputed, `found` in the report."""
        self.mismatches.append(mismatch(path, expected, found, what, check))

    def diff(self, expected: Any, found: Any, path: str, what: str, check: str) -> None:
        """A mismatch for every leaf where the recomputed value and the report's differ."""
        for p, e, f, kind in deep_diff(expected, found, path):
            note = {"missing": " (missing from the report)", "unexpected": " (not recomputed)",
                    "length": " (length)"}.get(kind, "")
            self.add(p, e, f, what + note, check)

    def skip(self, name: str, path: str, why: str) -> None:
        """A grader (or figure) that cannot be recomputed here, counted once per grade."""
        entry = self.skipped.setdefault(name, {"grader": name, "grades": 0, "first": path, "why": why})
        entry["grades"] += 1


def describe_value(value: Any, limit: int = 72) -> str:
    """A short printable form of an expected/found value."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def render_text(path: str, result: Verification, *, limit: int = 50, ended: str | None = None) -> str:
    """The human form of a verification; `ended`, for a checkpoint whose run's process is known
    to have ended: what to do (store/liveness.py), said instead of "still in progress"."""
    lines = []
    n = len(result.mismatches)
    of_run = f"that did not finish: {ended}" if ended else "still in progress"
    state = {"completed": "completed", "stopped": "stopped (not every planned attempt ran)",
             "running": f"partial, not complete (a checkpoint of a run {of_run})",
             "waiting": "waiting on provider batches (finish with --resume)"}.get(
        result.status if isinstance(result.status, str) else "", f"status {result.status!r}")
    if result.ok:
        counts = ", ".join(f"{v} {_ONE.get(k, k.replace('_', ' ')) if v == 1 else k.replace('_', ' ')}"
                           for k, v in sorted(result.checked.items()))
        lines.append(f"{path}: verified, no mismatch ({state}; checked {counts})")
    else:
        extra = f", {len(result.schema_errors)} field(s) outside the report schema" if result.schema_errors else ""
        lines.append(f"{path}: FAILED: {n} mismatch{'es' if n != 1 else ''}{extra} ({state})")
        for m in result.mismatches[:limit]:
            lines.append(f"  {m['path']}: {m['what']}: expected {describe_value(m['expected'])}, "
                         f"found {describe_value(m['found'])}")
        if n > limit:
            lines.append(f"  … and {n - limit} more (--json lists them all)")
        for m in result.schema_errors:
            lines.append(f"  {m['path']}: {m['what']}: {m['expected']} (found {describe_value(m['found'])})")
    for s in result.not_recomputable:
        label = s.get("grader") or (f"gate {s.get('gate')}" if s.get("gate") else s.get("first", "figure"))
        count = (f" ({s['grades']} grade{'s' if s['grades'] != 1 else ''}, first {s['first']})" if s.get("grades")
                 else f" ({s['first']})")
        lines.append(f"not recomputable offline: {label}{count}: {s['why']}")
    if result.status == "running":
        lines.append("partial, not complete: internally consistent at best; this is not a completed evaluation")
    lines.append(NOTE)
    # one line per finding: a newline or escape sequence in a found value is spelt out
    return "\n".join(spell_unseen(line) for line in lines) + "\n"


def numbers_past_double(value, *, limit: int = 20) -> list[tuple[str, int]]:
    """(JSON path, digits) of each whole number past a double's range (no float holds it), at
    most `limit`, or [("report", 0)] when none is found (the error came from elsewhere)."""
    import sys

    from .io import json_path

    found: list[tuple[str, int]] = []
    stack: list[tuple] = [(value, ())]
    while stack and len(found) < limit:
        item, path = stack.pop()
        if isinstance(item, dict):
            stack.extend((sub, path + (k,)) for k, sub in reversed(list(item.items())))
        elif isinstance(item, list):
            stack.extend((sub, path + (i,)) for i, sub in reversed(list(enumerate(item))))
        elif isinstance(item, int) and not isinstance(item, bool) and abs(item) > sys.float_info.max:
            found.append((json_path(path) or "report", len(str(abs(item)))))
    return found or [("report", 0)]
