"""A review made in the viewer, checked and turned into the record `import reviews` reads: a
human review bound to the case's input hash and the output's hash, ratings 1-5 on named
dimensions, a pass/fail verdict or none, a note."""

from __future__ import annotations

import unicodedata
from typing import Any

from pydantic import ValidationError

from ..judges.reviews import MAX_NAME, MAX_NOTE, ReviewEntry
from ..store.db import Database
from ..store.migrations import case_key
from ..store.shape import MAX_NAME as MAX_ID


class ReviewError(ValueError):
    """A review the viewer refuses, with the reason in words."""


def _text(form: dict, name: str, limit: int, *, exact: bool = False) -> str:
    value = form.get(name)
    if not isinstance(value, str) or not value.strip():
        raise ReviewError(f"{name}: required")
    if len(value) > limit:
        raise ReviewError(f"{name}: longer than {limit} characters")
    # a name holds no control character (an escape would forge the lines that print it later; a
    # NUL was a 500 on PostgreSQL, which refuses one in text); a note may break lines, not hold a NUL
    bad = next((c for c in value if c == "\x00" or (name != "notes" and unicodedata.category(c) == "Cc")), None)
    if bad is not None:
        raise ReviewError(f"{name}: holds the control character U+{ord(bad):04X}")
    return value if exact else value.strip()


def review_from_form(db: Database, form: Any, dimensions: tuple[str, ...]) -> tuple[dict, str]:
    """(the review entry, the run it was made in) from the page's form; ReviewError when the
    form does not name an output of the run or a value is out of range."""
    if not isinstance(form, dict):
        raise ReviewError("a review is a JSON object")
    known = {"run", "case_id", "output_hash", "reviewer_id", "rubric_version", "verdict", "ratings", "notes"}
    extra = sorted(set(form) - known)
    if extra:
        raise ReviewError(f"unknown field {extra[0]!r}")
    run, output_hash = (_text(form, n, MAX_NAME) for n in ("run", "output_hash"))
    # a case id is any the case loader takes (up to 4,096 characters, kept as written): the 200 of
    # a reviewer's name refused a review of a case with a longer one
    case_id = _text(form, "case_id", MAX_ID, exact=True)
    row = db.one("SELECT input_hash FROM cases WHERE run_key = ? AND case_key = ?", (run, case_key(case_id)))
    if row is None:
        raise ReviewError("case_id: not a case of this run")
    if db.one("SELECT 1 FROM attempts WHERE run_key = ? AND case_key = ? AND output_hash = ? LIMIT 1",
              (run, case_key(case_id), output_hash)) is None:
        raise ReviewError("output_hash: matches no output of this case in this run")
    verdict = form.get("verdict")
    if verdict not in ("pass", "fail", None, ""):
        raise ReviewError("verdict: pass, fail or none")
    ratings: dict[str, int | None] = {}
    raw = form.get("ratings") or {}
    if not isinstance(raw, dict):
        raise ReviewError("ratings: an object of dimension -> 1..5")
    for name, value in raw.items():
        if name not in dimensions:
            raise ReviewError(f"ratings: unknown dimension {name!r} (known: {', '.join(dimensions)})")
        if value in (None, ""):
            continue
        if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= 5:
            raise ReviewError(f"ratings.{name}: a whole number from 1 to 5")
        ratings[name] = value
    entry = {"case_id": case_id, "input_hash": row[0], "output_hash": output_hash,
             "reviewer_id": _text(form, "reviewer_id", MAX_NAME), "reviewer_kind": "human",
             "rubric_version": _text(form, "rubric_version", MAX_NAME), "ratings": ratings,
             "verdict": None if verdict in (None, "") else verdict == "pass",
             "notes": _text(form, "notes", MAX_NOTE)}
    try:
        ReviewEntry.model_validate(entry)  # the record `import reviews` reads, exactly
    except ValidationError as exc:
        raise ReviewError(str(exc.errors()[0].get("msg"))) from None
    return entry, run
