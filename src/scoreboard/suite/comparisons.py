"""`import comparisons`: outputs made elsewhere for a report's cases, graded as extra variants."""

from __future__ import annotations

import math
from datetime import datetime
from pathlib import Path
from typing import Any, Union

from pydantic import (
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    field_validator,
)
from pydantic_core import PydanticCustomError

from ..engine.pipeline import (
    Outcome,
    RunOptions,
)
from ..errors import ConfigError
from ..hashing import canonical_json, sha256_bytes
from ..subjects.values import Output
from ..validation import Strict, parse_model
from .from_report import (
    INTEGRITY_CHECKS,
    HeldOutputs,
    RecordedVariant,
    load_source,
    recorded_variants,
    run_recorded,
    source_gates,
    suite_from_report,
)
from .load import _unique
from .suite import Variant

# --------------------------------------------------------------------------------------------
# import comparisons

IMPORT_NOTE = ("outputs made elsewhere and imported; no request was made. Matching hashes establish "
               "internal consistency only: they do not authenticate the provider, model version, "
               "prompt or execution")
MAX_ENTRIES = 100_000
MAX_SETTINGS = 20

Setting = Union[StrictStr, StrictBool, StrictInt, StrictFloat, None]


class OutputRecord(Strict):
    text: str | None = None
    json_: Any = Field(None, alias="json")
    tool_calls: list[dict] = Field(default_factory=list)
    status: str | None = None


class ComparisonEntry(Strict):
    """One output produced elsewhere for a case of the report."""

    case_id: str = Field(min_length=1)
    input_hash: str = Field(min_length=1)
    provider: str = Field(min_length=1)
    model: str = Field(min_length=1)
    model_version: str = Field(min_length=1)
    settings: dict[str, Setting]
    output: Union[str, OutputRecord]
    generated_at: str

    @field_validator("settings")
    @classmethod
    def _settings(cls, value: dict) -> dict:
        if len(value) > MAX_SETTINGS:
            raise PydanticCustomError("settings", f"at most {MAX_SETTINGS} settings, got {len(value)}")
        for key, v in value.items():
            if isinstance(v, float) and not math.isfinite(v):
                raise PydanticCustomError("settings", f"setting {key!r} must be a finite number, got {v}")
        return value

    @field_validator("generated_at")
    @classmethod
    def _iso(cls, value: str) -> str:
        try:
            datetime.fromisoformat(value)
        except ValueError:
            raise PydanticCustomError("timestamp", f"not an ISO 8601 timestamp: {value!r}") from None
        if len(value) <= 10:
            raise PydanticCustomError("timestamp", f"needs a date and a time (ISO 8601), got {value!r}")
        return value

    def identity(self) -> tuple:
        return (self.provider, self.model, self.model_version, canonical_json(self.settings))

    def to_output(self) -> dict:
        out = Output(text=self.output) if isinstance(self.output, str) else Output.from_dict(self.output.model_dump(by_alias=True))
        return out.to_dict()


def read_comparisons(path: str, plan: dict) -> tuple[str | None, list[ComparisonEntry]]:
    """Validate a comparisons file against the report's plan; the first problem is one ConfigError."""
    from ..jsonio import read_entries_file

    version, doc = read_entries_file(path, "comparisons")
    if len(doc) > MAX_ENTRIES:
        raise ConfigError(f"more than {MAX_ENTRIES} entries", file=path, field="entries")
    hashes = {c["id"]: c.get("input_hash") for c in plan["cases"]}
    seen: dict[tuple, int] = {}
    entries = []
    for i, raw in enumerate(doc):
        cid = raw.get("case_id") if isinstance(raw, dict) and isinstance(raw.get("case_id"), str) else None
        entry = parse_model(ComparisonEntry, raw, file=path, case_id=cid, prefix=f"entries[{i}]")
        if entry.case_id not in hashes:
            raise ConfigError("case id not in the report's plan", file=path, case_id=cid, field=f"entries[{i}].case_id")
        if entry.input_hash != hashes[entry.case_id]:
            raise ConfigError(f"input hash does not match the report's case (expected {hashes[entry.case_id]})",
                              file=path, case_id=cid, field=f"entries[{i}].input_hash")
        key = (entry.case_id, *entry.identity())
        if key in seen:
            raise ConfigError(f"duplicate of entries[{seen[key]}] (same case, provider, model, model_version "
                              "and settings)", file=path, case_id=cid, field=f"entries[{i}]")
        seen[key] = i
        entries.append(entry)
    if not entries:
        raise ConfigError("no entries to import", file=path, field="entries")
    return version, entries


def import_comparisons(report_path: str, comparisons_path: str, output: str, *, allow_judge: bool = False,
                       formats: list[str] | None = None, argv: list[str] | None = None) -> Outcome:
    """Write a new report: the source's attempts unchanged plus one imported variant per
    (provider, model, model_version, settings), graded with the report's graders."""
    if Path(output).exists():
        raise ConfigError("refusing to overwrite an existing file", file=output)
    # The source's attempts are carried unchanged, so their grades must be today's too.
    source = load_source(report_path, blocking=INTEGRITY_CHECKS | {"grade", "status"})
    report = source.report
    if any(c.get("conversation") is not None for c in report["plan"]["cases"]):
        # A turn's output made elsewhere answered a different history than this report's turns.
        raise ConfigError("comparisons cannot be imported into a report with conversations yet",
                          file=report_path, field="plan.cases")
    version, entries = read_comparisons(comparisons_path, report["plan"])
    comparisons_sha = sha256_bytes(Path(comparisons_path).read_bytes())
    variants: list[Variant] = recorded_variants(source)
    taken = {v.name for v in variants}
    groups: dict[tuple, list[ComparisonEntry]] = {}
    for entry in entries:
        groups.setdefault(entry.identity(), []).append(entry)
    runs = report["plan"]["runs"]
    case_ids = [c["id"] for c in report["plan"]["cases"]]
    carried: dict[tuple, dict | None] = {(a["case_id"], a["variant"], a["run"]): dict(a)
                                         for a in report["attempts"]}
    measured: dict[tuple, dict] = {}
    unknown = {"latency_ms": None, "input_tokens": None, "output_tokens": None, "cost_usd": None,
               "requests": None}
    for group in groups.values():
        first = group[0]
        base = f"{first.provider}/{first.model}"
        name = _unique(base if base not in taken else f"{base}@{first.model_version}", taken)
        held = {(e.case_id, 0): {"output": e.to_output()} for e in group}
        spec = {"source": "comparisons", "file": comparisons_path, "sha256": comparisons_sha}
        entry = {"skill_path": None, "skill_hash": None, "params": {}, "imported": True,
                 "provider": first.provider, "model": first.model, "model_version": first.model_version,
                 "settings": first.settings, "generated_at": {e.case_id: e.generated_at for e in group}}
        variants.append(RecordedVariant(name, HeldOutputs(held, spec), entry=entry))
        for cid in case_ids:
            for r in range(runs):
                if (cid, r) not in held:
                    carried[(cid, name, r)] = None  # not supplied: no attempt, not a failure
                else:
                    measured[(cid, name, r)] = dict(unknown)
    specs = {c["id"]: c.get("graders") or [] for c in report["plan"]["cases"]}
    suite = suite_from_report(source, specs, variants, allow_judge=allow_judge, formats=formats)
    extra = {"imported": {**source.reference(), "comparisons": comparisons_path,
                          "comparisons_sha256": comparisons_sha, "version": version, "entries": len(entries),
                          "variants": [v.name for v in variants[len(report["plan"]["variants"]):]],
                          "subject_requests": 0, "source_requests": report.get("requests"),
                          "note": IMPORT_NOTE}}
    _, all_pass = source_gates(report)
    options = RunOptions(argv=list(argv or []), formats=tuple(formats) if formats else None, progress=False,
                         extra_run=extra, output_json=output, require_all_pass=all_pass)
    return run_recorded(suite, options, carried, measured, source)
