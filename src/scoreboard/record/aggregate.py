"""`scoreboard aggregate`: one record over a suite's stage reports (issue 17), and its check.

The stage reports are read bounded (regular files only, at most MAX_STAGE_REPORT_BYTES), each
must pass `verify`, and the screen and held-out reports must come from the same suite (their
`plan.lineage`). The aggregate names each report by path (relative to the aggregate's folder)
and by the SHA-256 of its bytes; `verify_aggregate` reads them again (confined to that folder,
or --root) and recomputes the whole aggregate from them."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..errors import ConfigError
from ..hashing import sha256_bytes
from ..jsonio import loads as loads_json
from ..stats import aggregate as figures
from ..stats.gates import dq_gates, fail_under_gates, refuse_unchecked
from .diff import deep_diff
from .schema_aggregate import AGGREGATE_SCHEMA, Aggregate

#: the largest stage report an aggregate reads (a report is held in memory to be verified)
MAX_STAGE_REPORT_BYTES = 256 * 1024 * 1024
#: keys of the record that say when and by what it was made, not what it found
NOT_RECOMPUTED = ("created_at", "scoreboard_version")


@dataclass
class StageFile:
    """A stage report's bytes, how to name it in an error, and how the aggregate records it."""

    shown: str
    recorded: str
    data: bytes
    folder: Path


def read_stage_files(paths: list[str]) -> list[StageFile]:
    """The stage reports named on the command line (regular files, bounded), each recorded by its
    real path until `relative_to` names them from the aggregate's folder."""
    from .io import read_report_bytes

    out = []
    for name in paths:
        data = read_report_bytes(name, limit=MAX_STAGE_REPORT_BYTES)
        real = Path(os.path.realpath(name))
        out.append(StageFile(name, str(real), data, real.parent))
    return out


def relative_to(record: dict, folder: Path) -> dict:
    """The record with each stage report named relative to `folder` (where the record is written)."""
    real = os.path.realpath(folder)
    for ref in record["stages"]:
        ref["path"] = os.path.relpath(ref["path"], real)
    return record


def heldout_path(record: dict) -> Path:
    """Where the held-out report lies (while the record still names stage reports by real path)."""
    return Path(next(r["path"] for r in record["stages"] if r["stage"] == "heldout"))


def stage_files_of(record: dict, path: str | os.PathLike, root: str | os.PathLike | None) -> list[StageFile]:
    """The stage reports an aggregate names, read again inside its folder (or `root`)."""
    from ..safefile import FileRefused, read_inside, resolve_inside

    base = Path(path).resolve().parent
    top = Path(root).resolve() if root else base
    out = []
    for i, ref in enumerate(record.get("stages") or []):
        name = ref.get("path") if isinstance(ref, dict) else None
        if not isinstance(name, str):
            raise ConfigError("a stage report's path is missing", file=str(path), field=f"stages[{i}].path")
        try:
            real = resolve_inside(name, base, top)
            data = read_inside(name, base, top, limit=MAX_STAGE_REPORT_BYTES, limit_name="stage report size limit")
        except FileRefused as exc:
            raise ConfigError(f"stage report {name!r} {exc.reason}", file=str(path), field=f"stages[{i}].path") from None
        out.append(StageFile(str(base / name), name, data, real.parent))
    return out


def _stage_of(report: dict, shown: str, path: str) -> str:
    stage = report["plan"].get("stage")
    if stage not in ("screen", "heldout", "check"):
        raise ConfigError("is not a stage report (plan.stage is not set): aggregate takes the reports of "
                          "`scoreboard run SUITE --stage screen|heldout|check`", file=shown, field="plan.stage")
    status = report["run"].get("status")
    if status == "running":
        from ..store.liveness import checkpoint_of

        raise ConfigError(f"is {checkpoint_of(path)}, not a finished stage", file=shown,
                          field="run.status")
    if report["run"].get("dry_run"):
        raise ConfigError("is a dry run (outputs from the mock subject): nothing to aggregate", file=shown,
                          field="run.dry_run")
    return stage


def _verified(file: StageFile) -> dict:
    """The report of a stage file, once it has passed `verify` (a one-line error otherwise)."""
    from .io import parse_report, report_from_bytes
    from .verify import verify_report

    report = report_from_bytes(file.data, file.shown)
    parse_report(report, file.shown)
    result = verify_report(report, base_dir=file.folder)
    if not result.ok:
        first = (result.mismatches or result.schema_errors)[0]
        raise ConfigError(f"fails verify ({len(result.mismatches) + len(result.schema_errors)} mismatch(es); first "
                          f"{first['path']}: {first['what']}): see scoreboard verify {file.shown}", file=file.shown)
    return report


def _classify(files: list[StageFile]) -> dict[str, tuple[StageFile, dict]]:
    stages: dict[str, tuple[StageFile, dict]] = {}
    for file in files:
        report = _verified(file)
        stage = _stage_of(report, file.shown, file.recorded)
        if stage in stages:
            raise ConfigError(f"two {stage} reports: {stages[stage][0].shown} and {file.shown} (give one of each)",
                              file=file.shown, field="plan.stage")
        stages[stage] = (file, report)
    for needed in ("screen", "heldout"):
        if needed not in stages:
            raise ConfigError(f"no {needed} report among {', '.join(f.shown for f in files)}: aggregate needs a "
                              f"screen report and a held-out report (scoreboard run SUITE --stage {needed})",
                              field="plan.stage")
    return stages


def _same_suite(stages: dict[str, tuple[StageFile, dict]]) -> dict:
    """The shared lineage of the screen and held-out reports; a one-line error naming what differs."""
    (sf, screen), (hf, held) = stages["screen"], stages["heldout"]
    for file, report in ((sf, screen), (hf, held)):
        if not report["plan"].get("lineage"):
            raise ConfigError("records no plan.lineage (made before stages recorded the suite they were drawn "
                              "from): run the stage again", file=file.shown, field="plan.lineage")
    a, b = screen["plan"]["lineage"], held["plan"]["lineage"]
    for key, what in (("cases", "case sets (any split)"), ("variants", "variants"), ("settings", "suite settings")):
        if a.get(key) != b.get(key):
            raise ConfigError(f"the screen report {sf.shown} and the held-out report {hf.shown} come from "
                              f"different suites: their {what} differ", file=hf.shown, field=f"plan.lineage.{key}")
    if "check" in stages:
        cf, check = stages["check"]
        inst = check["summary"].get("instrument") or {}
        judged = held.get("instrument") or {}
        if not judged:
            raise ConfigError(f"the held-out report {hf.shown} uses no judge: a check report does not apply",
                              file=cf.shown, field="summary.instrument")
        if inst.get("judge_hash") != judged.get("judge_hash"):
            raise ConfigError(f"the check report checked another judge ({str(inst.get('judge_hash'))[:12]}) than the "
                              f"held-out run used ({str(judged.get('judge_hash'))[:12]})", file=cf.shown,
                              field="summary.instrument.judge_hash")
    return a


def _section(report: dict) -> dict:
    summary = report["summary"]
    variants = {}
    judges = (summary.get("judges") or {}).get("variants") or {}
    for v in (x["name"] for x in report["plan"]["variants"]):
        s = (summary.get("variants") or {}).get(v) or {}
        block = {"attempts": s.get("attempts", 0), "passed": s.get("passed", 0), "cases": s.get("cases"),
                 "pass_rate": s.get("pass_rate"), "pass_rate_ci": s.get("pass_rate_ci")}
        if (judges.get(v) or {}).get("pointwise"):
            block["quality"] = judges[v]["pointwise"]
        variants[v] = block
    out = {"stage": report["plan"]["stage"], "run_id": report["run"]["id"],
           "cases": [c["id"] for c in report["plan"]["cases"]], "selection": report["plan"].get("stage_selection"),
           "variants": variants, "dq": (summary.get("judges") or {}).get("dq") or [],
           "comparisons": summary.get("comparisons") or []}
    if report.get("instrument"):
        out["instrument"] = report["instrument"]
    return out


def _ref(stage: str, file: StageFile, report: dict) -> dict:
    plan, run = report["plan"], report["run"]
    judge = (report.get("instrument") or {}).get("judge_hash") or \
        (report["summary"].get("instrument") or {}).get("judge_hash")
    return {"stage": stage, "path": file.recorded, "sha256": sha256_bytes(file.data), "run_id": run["id"],
            "suite": run.get("suite") or "", "status": run.get("status") or "", "started_at": run.get("started_at"),
            "fixture_hash": plan.get("fixture_hash"), "suite_hash": plan.get("suite_hash"),
            "cases": len(plan["cases"]), "judge_hash": judge}


def _pick(screen: dict, variants: list[str]) -> dict:
    summary = screen["summary"]
    figure = figures.primary_figure(summary)
    chosen = figures.pick(summary, variants, figure)
    cases, ci = len(screen["plan"]["cases"]), None
    if chosen["variant"] is not None:
        a, b = chosen["variant"], chosen["runner_up"]
        found = figures.dq_of(summary, a, b) if figure == "dq" else figures.comparison_of(summary, a, b)
        ci = (found or {}).get("ci" if figure == "dq" else "mean_difference_ci")
        cases = (found or {}).get("cases", cases)
        what = "dQ" if figure == "dq" else "pass-rate difference"
        shown = f"{chosen['margin']:+.2f}" if figure == "dq" else f"{chosen['margin'] * 100:+.1f} points"
        interval = "" if not ci or ci.get("low") is None else \
            (f" (95% CI {ci['low']:+.2f} to {ci['high']:+.2f})" if figure == "dq"
             else f" (95% CI {ci['low'] * 100:+.1f} to {ci['high'] * 100:+.1f} points)")
        words = f"the screen picked {a} over {b} on {what}: {shown}{interval} on {cases} screened cases"
        if cases < figures.SMALL_CASES:
            words += f" (small sample: fewer than {figures.SMALL_CASES} cases)"
    else:
        words = f"the screen picked no variant: {chosen['why']}"
    return {**chosen, "ci": ci, "cases": cases, "words": words}


def _judge_check(stages: dict, trust: bool) -> dict | None:
    held = stages["heldout"][1]
    recorded = held.get("instrument")
    if not recorded:
        return None
    trusted = bool(trust or recorded.get("trusted"))
    if "check" in stages:
        check = stages["check"][1]
        inst = check["summary"]["instrument"]
        out = {"status": "passed" if inst.get("passed") else "failed", "judge_hash": inst["judge_hash"],
               "source": f"check report {check['run']['id']}", "trusted": trusted,
               "accuracy": (inst.get("accuracy") or {}).get("value"), "reasons": list(inst.get("reasons") or [])}
    else:
        out = {"status": recorded["status"], "judge_hash": recorded["judge_hash"], "source": "held-out report",
               "trusted": trusted, "accuracy": recorded.get("accuracy"), "reasons": list(recorded.get("reasons") or [])}
    if out["status"] == "passed":
        acc = "" if out["accuracy"] is None else f"; good above degraded {out['accuracy']:.1%}"
        out["words"] = f"judge check passed ({out['source']}{acc})"
    else:
        why = "FAILED" if out["status"] == "failed" else "never ran"
        out["words"] = f"judge check {why}: the judge's figures are unverified" + \
            (f" ({'; '.join(out['reasons'])})" if out["reasons"] else "") + \
            ("; trusted by --trust-unchecked-judge" if trusted else "")
    return out


def _gates(held: dict, settings: dict, judge_check: dict | None) -> list[dict]:
    summary = held["summary"]
    variants = [v["name"] for v in held["plan"]["variants"]]
    gates = fail_under_gates(summary, settings.get("fail_under"), variants) + \
        dq_gates(summary, settings.get("min_dq"), variants)
    if judge_check is not None:
        gates = refuse_unchecked(gates, {"status": judge_check["status"], "trusted": judge_check["trusted"]})
    return [{**g, "description": f"held-out: {g['description']}"} for g in gates]


def build_aggregate(files: list[StageFile], settings: dict, *, created_at: str) -> dict:
    """The aggregate record of the stage reports in `files` (any order), gates per `settings`
    ({min_dq, fail_under, trust_unchecked_judge}) on the held-out figures."""
    from .. import __version__

    stages = _classify(files)
    lineage = _same_suite(stages)
    screen, held = stages["screen"][1], stages["heldout"][1]
    variants = [v["name"] for v in screen["plan"]["variants"]]
    disjoint = figures.disjoint(screen["plan"]["cases"], held["plan"]["cases"])
    chosen = _pick(screen, variants)
    confirmation = figures.confirmation(held, chosen, len(disjoint["overlap"]))
    judge_check = _judge_check(stages, bool(settings.get("trust_unchecked_judge")))
    record = {"schema": AGGREGATE_SCHEMA, "created_at": created_at, "scoreboard_version": __version__,
              "suite": screen["run"].get("suite") or "", "lineage": lineage,
              "stages": [_ref(s, *stages[s]) for s in ("screen", "heldout", "check") if s in stages],
              "settings": {"min_dq": settings.get("min_dq"), "fail_under": settings.get("fail_under"),
                           "trust_unchecked_judge": bool(settings.get("trust_unchecked_judge"))},
              "primary": chosen["figure"], "screen": _section(screen), "heldout": _section(held),
              "disjointness": disjoint, "pick": chosen, "confirmation": confirmation,
              "judge_check": judge_check, "gates": _gates(held, settings, judge_check)}
    Aggregate.model_validate(record)  # what is written fits the schema that reads it
    return record


def is_aggregate(data: bytes) -> bool:
    """Whether a JSON file's start names the aggregate schema."""
    return f'"schema": "{AGGREGATE_SCHEMA}"'.encode() in data[:512] or \
        f'"schema":"{AGGREGATE_SCHEMA}"'.encode() in data[:512]


def verify_aggregate(path: str | os.PathLike, data: bytes, root: str | os.PathLike | None = None) -> dict:
    """Recompute an aggregate from the stage reports it names (their bytes must still hash to what
    it recorded) and name every difference: {ok, mismatches, checked}."""
    from .chains import mismatch
    from .io import json_path

    shown = str(path)
    try:
        record = loads_json(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ConfigError(f"aggregate is not valid JSON: {exc}", file=shown) from None
    mismatches = []
    try:
        Aggregate.model_validate(record)
    except ValidationError as exc:
        from ..validation import error_list

        for loc, message, found in error_list(exc)[:5]:
            shown = found if isinstance(found, (str, int, float, bool, type(None))) else type(found).__name__
            mismatches.append(mismatch(json_path(loc) or "aggregate", message, shown,
                                       "does not fit the aggregate schema", "schema"))
        return {"ok": False, "mismatches": mismatches, "checked": {}}
    files = stage_files_of(record, path, root)
    for i, (ref, file) in enumerate(zip(record["stages"], files)):
        if sha256_bytes(file.data) != ref["sha256"]:
            mismatches.append(mismatch(f"stages[{i}].sha256", sha256_bytes(file.data), ref["sha256"],
                                       "the stage report changed since the aggregate was made", "hash"))
    if mismatches:
        return {"ok": False, "mismatches": mismatches, "checked": {"stage_reports": len(files)}}
    try:
        again = build_aggregate(files, record["settings"], created_at=record["created_at"])
    except ConfigError as exc:
        if exc.file:  # a stage report's own problem names that report
            raise
        # the stages it lists make no aggregate (a stage dropped or named twice): the record's fault
        return {"ok": False, "checked": {"stage_reports": len(files)},
                "mismatches": [mismatch("stages", "a screen and a held-out report (and at most one check "
                                        "report)", [ref.get("stage") for ref in record["stages"]],
                                        f"the stage reports it names make no aggregate: {exc.detail}", "aggregate")]}
    for key in NOT_RECOMPUTED:
        again[key] = record.get(key)
    for p, e, f, kind in deep_diff(again, record, ""):
        mismatches.append(mismatch(p or "aggregate", e, f, "differs from the aggregate recomputed from its "
                                   "stage reports" + (f" ({kind})" if kind != "differs" else ""), "aggregate"))
    return {"ok": not mismatches, "mismatches": mismatches,
            "checked": {"stage_reports": len(files), "aggregate": 1}}


def aggregate_output(record: dict) -> Any:
    """The record as typed models (for the renderings)."""
    return Aggregate.model_validate(record)
