"""Reviews: judgments of a report's outputs made elsewhere, by people or by models.

    scoreboard import reviews REPORT.json REVIEWS.json --output NEW.json

A reviews file is {"version"?: str, "entries": [...]} or a bare list of entries, each
{case_id, input_hash, output_hash, reviewer_id, reviewer_kind: "human" | "model",
rubric_version, ratings: {name: integer or null}, verdict?: true | false, notes}. A review is
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

from collections import defaultdict
from typing import Literal

from pydantic import Field, StrictBool, StrictInt

from ..errors import ConfigError
from ..stats.agreement import KINDS

#: graders whose verdicts are a model's judgment (the judge in `judge_agreement`)
from ..validation import Strict, parse_model


class ReviewEntry(Strict):
    """One review of one output of a report."""

    case_id: str = Field(min_length=1)
    input_hash: str = Field(min_length=1)
    output_hash: str = Field(min_length=1)
    reviewer_id: str = Field(min_length=1)
    reviewer_kind: Literal["human", "model"]
    rubric_version: str = Field(min_length=1)
    ratings: dict[str, StrictInt | None]
    verdict: StrictBool | None = None
    notes: str = Field(min_length=1)

    def identity(self) -> tuple:
        return (self.case_id, self.output_hash, self.reviewer_id, self.rubric_version)


# ---------------------------------------------------------------------------------------------
# Reading and binding


def _read_doc(path: str) -> tuple[str | None, list]:
    from ..jsonio import read_entries_file

    return read_entries_file(path, "reviews")


def read_reviews(path: str, report: dict) -> tuple[str | None, list[dict]]:
    """Validate a reviews file against a report: the first problem is one ConfigError naming
    the file, the entry, the case and the field. Returns (version, entries as dicts)."""
    version, doc = _read_doc(path)
    plan_hashes = {c["id"]: c.get("input_hash") for c in report["plan"]["cases"]}
    outputs: dict[str, set[str]] = defaultdict(set)
    for a in report["attempts"]:
        if a.get("output_hash"):
            outputs[a["case_id"]].add(a["output_hash"])
    held = report.get("reviews") or {}
    seen: dict[tuple, str] = {}
    for kind in KINDS:
        for e in held.get(kind) or ():
            seen[(e["case_id"], e["output_hash"], e["reviewer_id"], e["rubric_version"])] = "an entry already in the report"
    entries: list[dict] = []
    for i, raw in enumerate(doc):
        cid = raw.get("case_id") if isinstance(raw, dict) and isinstance(raw.get("case_id"), str) else None
        where = f"entries[{i}]"
        entry = parse_model(ReviewEntry, raw, file=path, case_id=cid, prefix=where)
        if entry.case_id not in plan_hashes:
            raise ConfigError("case id not in the report's plan", file=path, case_id=cid, field=f"{where}.case_id")
        if entry.input_hash != plan_hashes[entry.case_id]:
            raise ConfigError(f"input hash does not match the report's case (expected {plan_hashes[entry.case_id]})",
                              file=path, case_id=cid, field=f"{where}.input_hash")
        if entry.output_hash not in outputs[entry.case_id]:
            raise ConfigError("output hash matches no output of this case in the report (copy it from an "
                              "attempt's output_hash)", file=path, case_id=cid, field=f"{where}.output_hash")
        key = entry.identity()
        if key in seen:
            raise ConfigError(f"duplicate of {seen[key]} (same case, output hash, reviewer and rubric version)",
                              file=path, case_id=cid, field=where)
        seen[key] = where
        entries.append(entry.model_dump(exclude_none=False))
    if not entries:
        raise ConfigError("no entries to import", file=path, field="entries")
    return version, entries


def attach_reviews(report: dict, entries: list[dict]) -> dict:
    """report["reviews"] with the new entries added, human and model apart (a new mapping)."""
    held = report.get("reviews") or {}
    out = {kind: list(held.get(kind) or ()) for kind in KINDS}
    for e in entries:
        out[e["reviewer_kind"]].append(e)
    return out
