"""Reviews: judgments of a report's outputs made elsewhere, by people or by models.

    scoreboard import reviews REPORT.json REVIEWS.json --output NEW.json

A reviews file is {"version"?: str, "entries": [...]} or a bare list of entries, each
{case_id, input_hash, output_hash, reviewer_id, reviewer_kind: "human" | "model",
rubric_version, ratings: {correctness?, usefulness?, coherence?, creativity?: 1-5 or null},
verdict?: true | false, notes}: at most 500 entries (MAX_REVIEWS). A review is
bound to the report by hashes: the case's input hash and the output hash of one of that
case's attempts. Human and model reviews are kept apart (report["reviews"]["human"] and
["model"], counted apart in summary["reviews"]); no aggregate score is made from them.

When a report holds judge verdicts and human verdicts on the same outputs, the summary's
`judge_agreement` says how far the judge can be trusted (confusion matrix, Cohen's kappa,
true and false positive rates with the human verdict taken as truth) and what the judge's
pass rate becomes once corrected for the judge's errors (Rogan-Gladen), with an interval.
Everything here is computed from the report alone, so `verify` can recompute it.

Matching hashes establish internal consistency only: they do not authenticate a reviewer,
a rubric or the review itself.
"""

from __future__ import annotations

import unicodedata
from collections import defaultdict
from typing import Annotated, Literal

from pydantic import Field, StrictBool, StrictInt, field_validator

from ..errors import ConfigError
from ..hashing import output_text_hash
from ..stats.agreement import KINDS

#: graders whose verdicts are a model's judgment (the judge in `judge_agreement`)
from ..validation import Strict, parse_model


#: the most entries one reviews file may hold (--max-entries changes it)
MAX_REVIEWS = 500
#: the rating dimensions a review may give, each an integer 1-5 or null (not assessed)
DIMENSIONS = ("correctness", "usefulness", "coherence", "creativity")
Rating = Annotated[StrictInt, Field(ge=1, le=5)] | None
#: the longest reviewer id or rubric version, in characters (at most 800 bytes of UTF-8: the
#: history store indexes both as written, words.KEY_BYTES); the viewer's review form's limit too
MAX_NAME = 200
#: the longest note, in characters (the viewer's review form's limit too)
MAX_NOTE = 10_000


class Ratings(Strict):
    """The four named dimensions, each 1-5 or null (not assessed); an omitted one is null."""

    correctness: Rating = None
    usefulness: Rating = None
    coherence: Rating = None
    creativity: Rating = None


class ReviewEntry(Strict):
    """One review of one output of a report."""

    case_id: str = Field(min_length=1)
    input_hash: str = Field(min_length=1)
    output_hash: str = Field(min_length=1)
    reviewer_id: str = Field(min_length=1)
    reviewer_kind: Literal["human", "model"]
    rubric_version: str = Field(min_length=1)
    ratings: Ratings
    verdict: StrictBool | None = None
    notes: str = Field(min_length=1)

    @field_validator("reviewer_id", "rubric_version")
    @classmethod
    def _name(cls, value: str) -> str:
        # the viewer's review form's rules: a name the store can index and the terminal can print
        # (an escape would forge the lines that show it; PostgreSQL refuses a NUL)
        if not value.strip():
            raise ValueError("must not be blank")
        if len(value) > MAX_NAME:
            raise ValueError(f"is {len(value):,} characters long, over the {MAX_NAME} a reviewer id or rubric "
                             "version may have")
        bad = next((c for c in value if unicodedata.category(c) == "Cc"), None)
        if bad is not None:
            raise ValueError(f"holds the control character U+{ord(bad):04X}")
        return value

    @field_validator("notes")
    @classmethod
    def _notes(cls, value: str) -> str:
        # the viewer's review form's rules: a note says why in words (blank says nothing), may break
        # lines, holds no NUL (the store turned one into U+FFFD; PostgreSQL refuses it)
        if not value.strip():
            raise ValueError("must not be blank (a review says why, in words)")
        if len(value) > MAX_NOTE:
            raise ValueError(f"is {len(value):,} characters long, over the {MAX_NOTE:,} a note may have")
        if "\x00" in value:
            raise ValueError("holds the control character U+0000")
        return value

    def identity(self) -> tuple:
        # The kind is part of who reviewed: one label may appear once as a person and once as a
        # model (their judgments stay separate records).
        return (self.case_id, self.output_hash, self.reviewer_id, self.reviewer_kind, self.rubric_version)


# ---------------------------------------------------------------------------------------------
# Reading and binding


def _read_doc(path: str, data: bytes | None = None) -> tuple[str | None, list, list[int] | None]:
    """(version, entries, the line of each CSV row: None for JSON) of a reviews file."""
    from ..jsonio import read_entries_bytes, read_entries_file
    from .reviews_csv import is_csv, read_reviews_csv

    if is_csv(path):
        from ..safefile import DEFAULT_MAX_FILE_BYTES

        data = read_entries_bytes(path, "reviews") if data is None else data
        entries, starts = read_reviews_csv(path, data, DEFAULT_MAX_FILE_BYTES)
        return None, entries, starts
    return (*read_entries_file(path, "reviews", data), None)


def read_reviews(path: str, report: dict, *, max_entries: int = MAX_REVIEWS,
                 data: bytes | None = None) -> tuple[str | None, list[dict]]:
    """Validate a reviews file against a report: the first problem is one ConfigError naming
    the file, the entry, the case and the field. Returns (version, entries as dicts)."""
    version, doc, rows = _read_doc(path, data)
    if len(doc) > max_entries:
        raise ConfigError(f"{len(doc)} entries, more than the {max_entries} allowed (--max-entries)",
                          file=path, field="entries")
    plan_hashes = {c["id"]: c.get("input_hash") for c in report["plan"]["cases"]}
    outputs: dict[str, set[str]] = defaultdict(set)
    # An output's text hash (SHA-256 of the canonical JSON of its text alone) binds a review too:
    # it is the output hash other tools give. It resolves to the output hash of the whole output.
    by_text: dict[tuple[str, str], set[str]] = defaultdict(set)
    # A case whose variants were sent different prompts has one input hash per variant (each
    # attempt's own) beside the case's hash over all of them: either binds a review of it.
    sent: dict[tuple[str, str], set[str]] = defaultdict(set)
    for a in report["attempts"]:
        if a.get("output_hash"):
            outputs[a["case_id"]].add(a["output_hash"])
            if a.get("input_hash"):
                sent[(a["case_id"], a["input_hash"])].add(a["output_hash"])
            text_hash = output_text_hash(a.get("output"))
            if text_hash is not None:
                by_text[(a["case_id"], text_hash)].add(a["output_hash"])
    held = report.get("reviews") or {}
    seen: dict[tuple, str] = {}
    for kind in KINDS:
        for e in held.get(kind) or ():
            seen[(e["case_id"], e["output_hash"], e["reviewer_id"], kind, e["rubric_version"])] = \
                "an entry already in the report"
    try:
        entries = _bind(path, doc, plan_hashes, outputs, by_text, sent, seen)
    except ConfigError as exc:  # named with the line of its entry's field (a CSV's: its row and column)
        from ..located import with_lines
        from .reviews_csv import located

        raise (with_lines(exc, path) if rows is None else located(exc, path, rows)) from None
    if not entries:
        raise ConfigError("no entries to import", file=path, field="entries")
    return version, entries


def _bind(path: str, doc: list, plan_hashes: dict, outputs: dict, by_text: dict, sent: dict,
          seen: dict) -> list[dict]:
    """Each entry validated and bound to the report's outputs (read_reviews' walk)."""
    entries: list[dict] = []
    for i, raw in enumerate(doc):
        cid = raw.get("case_id") if isinstance(raw, dict) and isinstance(raw.get("case_id"), str) else None
        where = f"entries[{i}]"
        entry = parse_model(ReviewEntry, raw, file=path, case_id=cid, prefix=where)
        if entry.case_id not in plan_hashes:
            raise ConfigError("case id not in the report's plan", file=path, case_id=cid, field=f"{where}.case_id")
        if entry.input_hash != plan_hashes[entry.case_id] and (entry.case_id, entry.input_hash) not in sent:
            raise ConfigError(f"input hash does not match the report's case (expected {plan_hashes[entry.case_id]})",
                              file=path, case_id=cid, field=f"{where}.input_hash")
        if entry.output_hash not in outputs[entry.case_id]:
            whole = by_text.get((entry.case_id, entry.output_hash), set())
            if len(whole) > 1:
                raise ConfigError("output text hash matches outputs that differ beyond their text (JSON, tool "
                                  "calls or status): give the attempt's output_hash", file=path, case_id=cid,
                                  field=f"{where}.output_hash")
            if not whole:
                raise ConfigError("output hash matches no output of this case in the report (copy an "
                                  "attempt's output_hash or output_text_hash)", file=path, case_id=cid,
                                  field=f"{where}.output_hash")
            entry.output_hash = next(iter(whole))
        if entry.input_hash != plan_hashes[entry.case_id] and entry.output_hash not in sent[(entry.case_id, entry.input_hash)]:
            raise ConfigError("output hash is not of an output answering this input hash (an attempt's input_hash "
                              "binds that attempt's outputs only)", file=path, case_id=cid,
                              field=f"{where}.output_hash")
        key = entry.identity()
        if key in seen:
            raise ConfigError(f"duplicate of {seen[key]} (same case, output hash, reviewer, reviewer kind and "
                              "rubric version)",
                              file=path, case_id=cid, field=where)
        seen[key] = where
        entries.append(entry.model_dump(exclude_none=False))
    return entries


def attach_reviews(report: dict, entries: list[dict]) -> dict:
    """report["reviews"] with the new entries added, human and model apart (a new mapping)."""
    held = report.get("reviews") or {}
    out = {kind: list(held.get(kind) or ()) for kind in KINDS}
    for e in entries:
        out[e["reviewer_kind"]].append(e)
    return out
