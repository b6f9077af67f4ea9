"""Re-run everything downstream of execute from a report alone: `rescore` (grade recorded outputs
again, with the same or new graders) and `import comparisons` (outputs made elsewhere for the
same cases, graded as an extra variant). Both build a Suite from the report's plan whose
variants are `recorded` subjects holding outputs, so no subject is ever called.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..engine.attemptlog import AttemptLog
from ..engine.pipeline import (
    Outcome,
    RunOptions,
    _reserve,
    build_report,
    check_gate_settings,
    exit_code_for,
    now_iso,
    write_reports,
)
from ..engine.runner import Runner, RunState, ordered_attempts
from ..errors import ConfigError, SubjectError
from ..graders.registry import build_grader, split_spec
from ..hashing import canonical_json, sha256_bytes
from ..record.files import write_new
from ..record.io import dumps_report, load_report
from ..record.verify import (
    JUDGE_GRADERS,
    UNFINISHED,
    cases_from_plan,
    measurements_of,
    verify_report,
)
from ..subjects.base import Subject
from ..subjects.values import Output, Result, SubjectRequest
from ..validation import parse_model
from .config import SuiteConfig
from .suite import Suite, Variant

NO_REQUEST_NOTE = ("no subject request was made: outputs and measurements are the source's, "
                   "recorded when they were produced")
#: source-report checks whose failure means the outputs themselves cannot be trusted
INTEGRITY_CHECKS = frozenset({"structure", "plan", "hash", "lifecycle", "requests", "conversation"})


def judge_graders() -> frozenset[str]:
    from ..stats import summary as stats

    return JUDGE_GRADERS | frozenset(getattr(stats, "JUDGE_GRADERS", ()))


@dataclass
class Source:
    """A report read from disk, with the SHA-256 of its exact bytes."""

    path: str
    report: dict
    sha256: str

    @property
    def run_id(self) -> str | None:
        return self.report["run"].get("id")

    def reference(self) -> dict:
        return {"source_report": self.path, "source_run_id": self.run_id, "source_sha256": self.sha256}


def load_source(path: str, *, blocking: frozenset[str] = INTEGRITY_CHECKS) -> Source:
    """Read a report and refuse it when verify finds a mismatch of a blocking kind."""
    report = load_report(path)
    sha = sha256_bytes(Path(path).read_bytes())
    status = report["run"].get("status") if isinstance(report["run"], dict) else None
    if status == "running":
        raise ConfigError("the report is a checkpoint of a run still in progress (status running); "
                          "use its final report", file=path, field="run.status")
    result = verify_report(report)
    bad = [m for m in result.mismatches if m.get("check") in blocking]
    if bad:
        first = bad[0]
        raise ConfigError(f"the report fails verification ({len(bad)} mismatch(es), first {first['path']}: "
                          f"{first['what']}); run `scoreboard verify` on it", file=path, field=first["path"])
    return Source(path, report, sha)


# --------------------------------------------------------------------------------------------
# the recorded subject and variant over in-memory outputs


class HeldOutputs(Subject):
    """`recorded` subject over outputs held in memory, keyed by (case_id, run); never a model call."""

    kind = "recorded"

    def __init__(self, records: dict[tuple[str, int], dict], spec: dict):
        self.base_dir = Path.cwd()
        self.options = dict(spec)
        self.records = records

    @property
    def spec(self) -> dict:
        return {"type": self.kind, **self.options}

    async def run(self, request: SubjectRequest) -> Result:
        record = self.records.get((request.case_id, request.run))
        if record is None:
            raise SubjectError(f"no recorded output for case {request.case_id!r} run {request.run}",
                               kind="missing-output")
        if record.get("output") is None:
            # A recorded error stays the same error, word for word.
            raise SubjectError(record.get("error") or "no output recorded")
        return Result(Output.from_dict(record["output"]), measurements_of(record))


@dataclass
class RecordedVariant(Variant):
    """A variant whose plan entry is kept from its source (skill hash, params, import details)."""

    entry: dict = field(default_factory=dict)

    def describe(self) -> dict:
        return {**self.entry, "name": self.name, "subject": self.subject.spec}


class _RestoringLog:
    """Attempt log wrapper: a recorded attempt keeps its source measurements exactly (the runner
    would otherwise fill an unknown latency with the time it took to read the record)."""

    def __init__(self, log: AttemptLog, measured: dict[tuple, dict]):
        self.log, self.measured = log, measured

    def append(self, record: dict) -> None:
        key = (record.get("case_id"), record.get("variant"), record.get("run"))
        if key in self.measured:
            record["measurements"] = dict(self.measured[key])
        self.log.append(record)

    def close(self) -> None:
        self.log.close()


# --------------------------------------------------------------------------------------------
# report -> Suite -> new report


def build_case_graders(cases, specs_by_case: dict[str, list], *, allow_judge: bool, file: str | None):
    """Build each case's graders (distinct specs once); model graders need allow_judge."""
    judges = judge_graders()
    cache: dict[str, Any] = {}
    out: dict[str, list] = {}
    for case in cases:
        graders = []
        for spec in specs_by_case[case.id]:
            try:
                name, _ = split_spec(spec)
                if name in judges and not allow_judge:
                    raise ConfigError(f"grader {name!r} calls a model: pass --allow-judge to run it "
                                      "(nothing was run)")
                key = canonical_json(spec)
                if key not in cache:
                    cache[key] = build_grader(spec)
                graders.append(cache[key])
                cache[key].check_case(case)
            except ConfigError as exc:
                raise ConfigError(exc.detail, file=file, case_id=case.id, field=exc.field or "graders") from None
        if not graders:
            raise ConfigError("no grader for this case", file=file, case_id=case.id, field="graders")
        out[case.id] = graders
    return out


def source_gates(report: dict) -> tuple[dict | None, bool]:
    """(fail_under setting, require_all_pass) that reproduce the source's gates."""
    fail_under = {g["variant"]: g["threshold"] for g in report.get("gates") or []
                  if g.get("gate") == "fail-under" and g.get("variant") is not None}
    all_pass = any(g.get("gate") == "all-pass" for g in report.get("gates") or [])
    return fail_under or None, all_pass


def suite_from_report(source: Source, specs_by_case: dict[str, list], variants: list[Variant], *,
                      allow_judge: bool, graders_file: str | None = None, output_dir: str | None = None,
                      formats: list[str] | None = None, judge: Any = None, judge_runs: int | None = None,
                      max_requests: int | None = None) -> Suite:
    """The Suite a report's plan describes, with the given graders and (recorded) variants."""
    plan = source.report["plan"]
    cases = cases_from_plan(plan["cases"])
    for case in cases:
        case.graders = specs_by_case[case.id]
    graders = build_case_graders(cases, specs_by_case, allow_judge=allow_judge,
                                 file=graders_file or source.path)
    fail_under, _ = source_gates(source.report)
    settings = {"name": source.report["run"].get("suite") or "suite", "runs": plan["runs"],
                "seed": plan.get("seed", 0), "fail_under": fail_under}
    if output_dir:
        settings["output_dir"] = output_dir
    if formats:
        settings["formats"] = formats
    if judge is not None:
        settings["judge"] = judge
    if judge_runs is not None:
        settings["judge_runs"] = judge_runs
    if max_requests is not None:
        settings["budget"] = {"max_requests": max_requests}
    config = parse_model(SuiteConfig, settings, file=source.path)
    from .load import _build_judge

    suite = Suite(settings["name"], config, cases, variants, graders, Path.cwd(), source.path, cases)
    suite.judge = _build_judge(config, graders, Path.cwd(), False)
    suite.carried_reviews = source.report.get("reviews")
    return suite


def recorded_variants(source: Source) -> list[RecordedVariant]:
    """One recorded variant per source variant, holding that variant's recorded attempts."""
    by_variant: dict[str, dict] = {v["name"]: {} for v in source.report["plan"]["variants"]}
    for a in source.report["attempts"]:
        by_variant[a["variant"]][(a["case_id"], a["run"])] = a
    out = []
    for entry in source.report["plan"]["variants"]:
        spec = {"source": "report", "run_id": source.run_id, "variant": entry["name"],
                "original": entry.get("subject")}
        out.append(RecordedVariant(entry["name"], HeldOutputs(by_variant[entry["name"]], spec),
                                   params=dict(entry.get("params") or {}), skill_path=entry.get("skill_path"),
                                   entry=dict(entry)))
    return out


async def run_recorded_async(suite: Suite, options: RunOptions, carried: dict[tuple, dict | None],
                             measured: dict[tuple, dict], *, status: str = "completed",
                             stop_reason: str | None = None) -> Outcome:
    """evaluate.run_async for recorded subjects: `carried` attempts are kept exactly (a None value:
    no attempt exists, e.g. a run an import did not supply); the rest run through the runner.
    `status` and `stop_reason` are the source's: a stopped source stays stopped.
    No signals, progress or checkpoints: nothing here waits on a model unless judges are allowed."""
    check_gate_settings(suite)
    plan = suite.plan()
    started_at = now_iso()
    stem = _reserve(suite, options)
    write_new(stem / "run.json", dumps_report({
        "schema": "scoreboard.run/v1", "run_id": stem.name, "suite": suite.name, "suite_source": suite.source,
        "argv": options.argv, "started_at": started_at, "plan": plan}, indent=None))
    log = _RestoringLog(AttemptLog(stem / "attempts.jsonl"), measured)
    ledger = judge = None
    if suite.judge is not None:
        # Judges allowed (--allow-judge): their requests are reserved and recorded like a run's.
        from ..engine.ledger import Budget, Ledger
        from ..judges.client import Judge

        ledger = Ledger(Budget(**suite.config.budget.model_dump()), log.log)
        judge = Judge(suite.judge, ledger=ledger, runs=suite.config.judge_runs,
                      timeout_s=suite.config.timeout_ms / 1000, seed=suite.config.seed)
    try:
        for record in carried.values():
            if record is not None:
                log.log.append(record)
        state = RunState(done=dict(carried))
        await Runner(suite, log, state=state, ledger=ledger, judge=judge).run()
    finally:
        log.close()
        if suite.judge is not None:
            await suite.judge.aclose()
    if state.stopping and status == "completed":
        status, stop_reason = "stopped", state.stop_reason
    done = {k: v for k, v in state.done.items() if v is not None}
    # A rescore stopped by its judge budget lists the attempts it did not reach as not-run.
    attempts = ordered_attempts(suite, done, reason=state.stop_reason if state.stopping else None)
    report = build_report(suite, plan, attempts, run_id=stem.name, status=status,
                          started_at=started_at, finished_at=now_iso(), argv=options.argv,
                          stop_reason=stop_reason, extra_run=options.extra_run,
                          require_all_pass=options.require_all_pass,
                          requests=ledger.summary() if ledger is not None else None)
    if source_reviews := getattr(suite, "carried_reviews", None):
        # Reviews are bound to output hashes, which a re-grade leaves unchanged: they carry over.
        from ..stats.summary import summarize

        report["reviews"] = source_reviews
        report["summary"] = summarize(plan, attempts, None, reviews=source_reviews)
    formats = options.formats or tuple(suite.config.formats or ())
    formats = ("json", *[f for f in formats if f != "json"])  # the JSON record, always
    paths = write_reports(report, stem, formats)
    return Outcome(report, paths, exit_code_for(report))


def run_recorded(suite: Suite, options: RunOptions, carried: dict[tuple, dict | None],
                 measured: dict[tuple, dict], source: Source) -> Outcome:
    """Sync entry point over `run_recorded_async`, keeping the source's status."""
    run = source.report["run"]
    status = run.get("status")
    stop = f"source report: {run.get('stop_reason') or 'stopped'}" if status == "stopped" else None
    return asyncio.run(run_recorded_async(suite, options, carried, measured, status=status, stop_reason=stop))


# --------------------------------------------------------------------------------------------
# rescore


def read_graders_file(path: str, case_ids: list[str]) -> dict[str, list]:
    """--graders FILE: a list of specs for every case, or {default: [...], cases: {id: [...]}}.
    Returns the specs of each case it covers (cases it does not cover keep their own)."""
    try:
        text = Path(path).read_bytes().decode("utf-8-sig")
    except FileNotFoundError:
        raise ConfigError("graders file not found", file=path) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read graders file: {exc}", file=path) from None
    try:
        if path.lower().endswith(".json"):
            data = json.loads(text)
        else:
            import yaml

            data = yaml.safe_load(text)
    except Exception as exc:  # each parser has its own error type; all are user errors here
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ConfigError(f"cannot parse graders file: {first}", file=path) from None
    if isinstance(data, list):
        data = {"default": data}
    if not isinstance(data, dict):
        raise ConfigError("a graders file is a list of grader specs or {default: [...], cases: {id: [...]}}",
                          file=path)
    unknown = sorted(set(data) - {"default", "cases"})
    if unknown:
        raise ConfigError("unknown field (allowed: default, cases)", file=path, field=unknown[0])
    default, per_case = data.get("default"), data.get("cases") or {}
    if default is not None and (not isinstance(default, list) or not default):
        raise ConfigError("'default' must be a nonempty list of grader specs", file=path, field="default")
    if not isinstance(per_case, dict):
        raise ConfigError("'cases' must map case ids to lists of grader specs", file=path, field="cases")
    out: dict[str, list] = {}
    for cid, specs in per_case.items():
        if cid not in case_ids:
            raise ConfigError("case id not in the report's plan", file=path, case_id=str(cid), field=f"cases.{cid}")
        if not isinstance(specs, list) or not specs:
            raise ConfigError("must be a nonempty list of grader specs", file=path, case_id=cid, field=f"cases.{cid}")
        out[cid] = specs
    for cid in case_ids:
        if cid not in out and default is not None:
            out[cid] = default
    return out


def rescore(report_path: str, *, graders_file: str | None = None, allow_judge: bool = False,
            output: str | None = None, output_dir: str | None = None, formats: list[str] | None = None,
            argv: list[str] | None = None, judge: Any = None, judge_runs: int | None = None,
            max_requests: int | None = None) -> Outcome:
    """Grade a report's recorded outputs again and write a new report; no subject is called."""
    if output and Path(output).exists():
        raise ConfigError("refusing to overwrite an existing file", file=output)
    source = load_source(report_path)
    report = source.report
    previous = {c["id"]: c.get("graders") or [] for c in report["plan"]["cases"]}
    specs = dict(previous)
    if graders_file:
        specs.update(read_graders_file(graders_file, list(previous)))
    variants = recorded_variants(source)
    suite = suite_from_report(source, specs, variants, allow_judge=allow_judge,
                              graders_file=graders_file if graders_file else None, output_dir=output_dir,
                              formats=formats, judge=judge, judge_runs=judge_runs, max_requests=max_requests)
    carried = {(a["case_id"], a["variant"], a["run"]): dict(a) for a in report["attempts"]
               if a["status"] in UNFINISHED}
    measured = {(a["case_id"], a["variant"], a["run"]): dict(a.get("measurements") or {})
                for a in report["attempts"]}
    changed = sorted(cid for cid in previous if canonical_json(previous[cid]) != canonical_json(
        [g.spec for g in suite.graders[cid]]))
    extra = {"rescore": {**source.reference(), "graders_file": graders_file, "previous_graders": previous,
                         "changed_cases": changed, "allow_judge": allow_judge, "subject_requests": 0,
                         "source_requests": report.get("requests"), "note": NO_REQUEST_NOTE}}
    _, all_pass = source_gates(report)
    options = RunOptions(argv=list(argv or []), formats=tuple(formats) if formats else None, progress=False,
                         extra_run=extra, output_json=output, require_all_pass=all_pass)
    return run_recorded(suite, options, carried, measured, source)
