"""The one driver: plan -> execute (attempt log first) -> summary -> reports -> gates -> exit code.

Every command that writes a report comes through `run_async`: run, run --resume, score,
replay, rescore, import comparisons, import reviews. They differ only in where the cases come
from (the suite they build), which subject answers (a recorded subject for outputs that
already exist), and which attempts already exist: a resumed run's own log, or `Carried`
attempts (a rescored report's unfinished attempts, imported originals, carried reviews),
which enter the run's log as they are and are never dispatched again.

Memory stays flat in the number of attempts: an attempt is counted into the summary's per-case
accumulators and appended to the attempt log, then dropped; the index keeps where its line
is; the JSON report is streamed from the log.
"""

from __future__ import annotations

import asyncio
import gc
import os
from datetime import datetime, timezone
from itertools import chain
from pathlib import Path
from typing import Iterator

from ..errors import ConfigError, LogWriteError, ReportWriteError
from ..gcpause import collector_paused, fewer_collections
from ..jsonio import dumps_line, loads
from ..record.files import replace_atomic, write_new
from ..record.io import SCHEMA, is_synthetic, versions
from ..record.stream import json_chunks, report_chunks
from ..redact import KNOWN, literal_credentials, remember
from ..stats.gates import (  # dq, rubric, refuse: visual work (issue 17)
    all_pass_gate,
    baseline_field_gates,
    baseline_gates,
    dq_gates,
    fail_under_gates,
    metric_gates,
    refuse_unchecked,
    rubric_gates,
)
from ..stats.summary import Summarizer
from ..store.files import RunFolder, new_run_folder, open_run_folder
from ..store.locate import run_store
from ..suite.live import check_live_opt_in, check_live_plan
from ..suite.suite import Suite
from .attempt import RunState, not_run_record
from .attemptlog import AttemptLog, drop_torn_tail, scan_attempt_log
from .baseline import load_baseline
from .batches import WAITING_EXIT, batch_run_info, check_batch_settings, done_predicate, journal_key
from .checkpoints import Checkpointer
from .executor import Work, dispatch_units
from .executors import get_executor
from .index import DONE_STATUSES, AttemptIndex
from .ledger import Budget, Ledger
from .options import Carried, Outcome, RunOptions  # noqa: F401  (re-exported)
from .progress import Progress
from .reports import github_summary, render_reports, report_targets, scrub_argv
from .signals import install_signals, remove_signals

DEFAULT_FORMATS = ("json", "md", "html")
#: an Outcome of a run with at most this many attempts holds its report in memory; a larger one
#: reads it from its file on first use (so a million-attempt run never holds it)
EAGER_REPORT_ATTEMPTS = 10_000


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def check_gate_settings(suite: Suite) -> None:
    """Gate settings that name unknown variants fail before anything runs."""
    fail_under_gates({"variants": {}}, suite.config.fail_under, [v.name for v in suite.variants])
    names = [v.name for v in suite.variants]
    dq_gates({}, suite.config.min_dq, names)  # visual work (issue 17): pairs name known variants
    rubric_gates({}, suite.config.min_rubric, names)


def run_concurrency(suite: Suite) -> int:
    """--concurrency, else 4 (or less when a subject allows fewer at once)."""
    caps = [v.subject.default_max_concurrency for v in suite.variants if v.subject.default_max_concurrency]
    return suite.config.concurrency or (min([4, *caps]) if caps else 4)


class _Run:
    """One run's moving parts: the folder, the log, the index, the accumulators, the ledger."""

    def __init__(self, suite: Suite, options: RunOptions):
        self.suite, self.options = suite, options
        self.carried = options.carried or Carried()
        self.plan = suite.plan()
        self.argv = scrub_argv(options.argv, suite)
        self.state = RunState()
        cfg = suite.config
        self.index = AttemptIndex([c.id for c in suite.cases], [v.name for v in suite.variants], cfg.runs)
        self.store = self.summary = None  # opened with the run (attach_store): nothing before the checks
        self.executor = get_executor(options.executor, options.executor_settings)
        self.formats = tuple(options.formats or cfg.formats or DEFAULT_FORMATS)
        self.reused = 0
        self.view = None
        self.cache = None
        self.judge = None

    # ---- opening: a new run folder, or a stopped one to resume
    def attach_store(self) -> None:
        """History store (issue 18): the store a run records into, opened once every check has
        passed (a refused run leaves no store behind); reviews it holds of this plan's cases
        join the carried ones, and the summary keeps those bound to this run's outputs."""
        self.store = self.options.store or run_store(self.suite.config.output_dir)
        held = getattr(self.store, "held_reviews", None)
        reviews = held(self.plan, self.carried.reviews) if held is not None else self.carried.reviews
        self.summary = Summarizer(self.plan, reviews=reviews)

    def open(self) -> None:
        options = self.options
        if options.resume_dir:
            self.folder, meta = open_run_folder(options.resume_dir)
            check_resumable(meta, self.plan, self.folder)
            self.started_at = meta.get("started_at") or now_iso()
            drop_torn_tail(self.folder.log_path)
        else:
            for target in report_targets(options.output_json, self.formats):
                if target.exists():
                    raise _exists(target)
            self.folder = new_run_folder(self.suite.config.output_dir, self.suite.name, options.output_json)
            self.started_at = now_iso()
            meta = self.meta()
            try:
                write_new(self.folder.meta_path, chain(json_chunks(meta), [b"\n"]))
            except OSError as exc:  # a full disk before anything ran: nothing is left behind
                self.folder.discard_if_empty()
                raise ReportWriteError(f"{self.folder.meta_path}: the run could not be started "
                                       f"({exc.strerror or exc}); nothing was run") from None
        self.attach_store()
        following = getattr(self.store, "begin_following", None)
        if following is not None:  # a large run's rows written by a process following the log
            following(meta, self.folder.log_path)
        else:
            self.store.begin(meta)
        # visual work (issue 17): the judge's instrument check, as this run found it
        self.instrument = None
        if getattr(self.suite, "stage", None) != "check":
            from .instrument import instrument_status

            self.instrument = instrument_status(self.suite, self.suite.config.trust_unchecked_judge)
        requests = self.restore() if options.resume_dir else []
        self.log = AttemptLog(self.folder.log_path)
        self.index.open(self.folder.log_path)
        self.ledger = Ledger(Budget(**self.suite.config.budget.model_dump()), self.log)
        self.ledger.journal.key = journal_key(self.folder.run_id)  # batch: true (engine/batches.py)
        self.ledger.restore(requests, done=done_predicate(self.index))
        for record in self.carried.records:
            self.finish(record, frozen=True)
        for key in self.carried.absent:
            pos = self.index.pos(*key)
            if pos is not None:
                self.index.freeze(pos, absent=True)

    def meta(self) -> dict:
        suite, options = self.suite, self.options
        return {"schema": "scoreboard.run/v1", "run_id": self.folder.run_id, "suite": suite.name,
                "suite_source": str(Path(suite.source).resolve()) if suite.source else None,
                "cwd": os.getcwd(), "flags": options.flags, "dry_run": options.dry_run,
                "executor": self.executor.name, "argv": self.argv, "started_at": self.started_at,
                "plan": self.plan}

    def restore(self) -> list[dict]:
        """Index the finished attempts of the resumed run's log; return its request records."""
        requests = []
        for offset, length, record in scan_attempt_log(self.folder.log_path):
            if record.get("kind") in ("request", "batch", "batch-result"):
                requests.append(record)
            elif record.get("status") in DONE_STATUSES:
                pos = self.index.pos(record.get("case_id"), record.get("variant"), record.get("run"))
                if pos is not None:
                    self.index.put(pos, record["status"], offset, length)
        self.index.open(self.folder.log_path)
        for pos in range(self.index.size):
            if self.index.recorded(pos):
                self.summary.add(self.index.read(pos))
                self.reused += 1
        return requests

    # ---- running
    def finish(self, record: dict, frozen: bool = False) -> None:
        """An attempt is finished: logged before anything else, indexed, counted, dropped. One
        the log cannot take (a full disk) is not counted: the run stops sending, and a resume
        runs it again."""
        try:
            offset, length = self.log.append(record)
        except LogWriteError as exc:
            if frozen:
                raise
            _stop_on_write_failure(self, str(exc))
            return
        pos = self.index.pos(record["case_id"], record["variant"], record["run"])
        if pos is not None:
            self.index.put(pos, record["status"], offset, length)
            if frozen:
                self.index.freeze(pos)
        self.summary.add(record)
        self.store.attempt(record)
        if not frozen:
            self.progress.advance()
            self.checkpoint.maybe()

    def lookup(self, case_id: str, variant: str, run: int) -> dict | None:
        """A finished attempt's record, read back from the log (None when not finished)."""
        pos = self.index.pos(case_id, variant, run)
        return None if pos is None else self.index.read(pos)

    async def execute(self) -> None:
        suite, cfg = self.suite, self.suite.config
        if cfg.cache:
            from ..store.cache import ResponseCache

            self.cache = ResponseCache(cfg.cache_path)
        if suite.judge is not None:
            from ..judges.client import Judge

            self.judge = Judge(suite.judge, ledger=self.ledger, runs=cfg.judge_runs,
                               timeout_s=cfg.timeout_ms / 1000, seed=cfg.seed)
        self.renderer = None
        if getattr(suite, "render", None) is not None:  # visual work (issue 17)
            from ..render.browser import Renderer, store_for

            self.renderer = Renderer(suite.render, store_for(self.folder.stem))
        index = self.index
        variants = len(suite.variants)
        units = dispatch_units(suite, lambda ci, vi, r: index.finished((ci * variants + vi) * cfg.runs + r))
        concurrency = run_concurrency(suite)
        for subject in [v.subject for v in suite.variants] + ([suite.judge] if suite.judge else []):
            prepare = getattr(subject, "prepare", None)
            if prepare is not None:
                prepare(concurrency)
        origin = {"source": str(Path(suite.source).resolve()) if suite.source else None,
                  "flags": self.options.flags, "cwd": os.getcwd(), "dry_run": self.options.dry_run}
        work = Work(suite, self.state, units, concurrency, cfg.timeout_ms / 1000, self.finish, self.lookup,
                    ledger=self.ledger, cache=self.cache, judge=self.judge, origin=origin,
                    renderer=self.renderer)
        loop = asyncio.get_running_loop()
        task = asyncio.ensure_future(self.executor.execute(work))
        grace = self.options.grace_s if self.options.grace_s is not None else cfg.grace_seconds
        self.state.on_interrupt.append(self.ledger.journal.interrupt)  # cancels submitted batches
        signals = install_signals(loop, self.state, task, grace)
        self.pairwise = self.carried.pairwise
        try:
            await _wait(task)
            # Pairs are judged once every output is in (not while attempts wait on batches).
            if self.judge is not None and cfg.pairwise and variants > 1 and not self.state.stopping \
                    and not self.index.count("waiting"):
                from ..judges.pairwise import judge_pairs

                rubric = cfg.pairwise.rubric if not isinstance(cfg.pairwise, bool) else None
                self.pairwise = await judge_pairs(self.plan, self.lookup, self.judge, rubric=rubric,
                                                  state=self.state, **self.pairwise_vision())
        finally:
            remove_signals(loop, signals)
            self.progress.close()
            if self.renderer is not None:
                await self.renderer.aclose()
            for variant in suite.variants:
                await variant.subject.aclose()
            if suite.judge is not None:
                await suite.judge.aclose()
            if self.cache is not None:
                self.cache.close()
            self.log.close()

    def pairwise_vision(self) -> dict:
        """Screenshots for the pairwise judge (issue 17): which shots, the store, the source."""
        pw = self.suite.config.pairwise
        images = getattr(pw, "images", False)
        if not images or self.renderer is None:
            return {}
        return {"images": "all" if images == "all" else "last", "store": self.renderer.store,
                "source": bool(getattr(pw, "source", True))}

    # ---- the record
    def unfinished(self, pos: int) -> dict:
        """The record of a planned attempt that did not finish in this run."""
        case_id, variant, run = self.index.key(pos)
        case = self.suite.cases[self.index.case_pos[case_id]]
        if (case_id, variant, run) in self.state.interrupted:
            return not_run_record(case, variant, run, f"interrupted ({self.state.stop_reason}); usage unknown",
                                  status="interrupted")
        return not_run_record(case, variant, run, self.state.stop_reason or "not run")

    def lines(self, final: bool) -> Iterator[bytes]:
        """Every attempt line in report order; unfinished attempts appear only in the final report."""
        index = self.index
        for pos in index.positions():
            line = index.line(pos)
            if line is not None:
                yield line
            elif final:
                yield dumps_line(self.unfinished(pos))[:-1]

    def attempts(self) -> Iterator[dict]:
        """The final report's attempts, read back from the log one at a time."""
        return (loads(line) for line in self.lines(final=True))

    def head(self, status: str, *, final: bool) -> dict:
        suite, options = self.suite, self.options
        summary = self.summary.summary(self.pairwise if final else None)
        variants = [v["name"] for v in self.plan["variants"]]
        # A run waiting on provider batches is not judged by its gates yet (--resume does).
        final_gates = final and status != "waiting"
        gates = fail_under_gates(summary, suite.config.fail_under, variants) if final_gates else []
        if final_gates:
            gates.extend(metric_gates(summary, suite.config.fail_under_metrics, variants))
        if final_gates and options.require_all_pass:
            gates.append(all_pass_gate(*self.summary.failing_cases()))
        if final_gates and self.baseline is not None:
            gates.extend(baseline_gates(self.baseline, self.plan, self.summary.case_outcomes(), suite.config.gates))
            gates.extend(baseline_field_gates(self.baseline, self.plan, self.summary.field_outcomes(),  # issue 13
                                              suite.config.gates))
        if final:  # visual work (issue 17): dQ and rubric means gate; an unchecked judge's gates refuse
            gates.extend(dq_gates(summary, suite.config.min_dq, variants))
            gates.extend(rubric_gates(summary, suite.config.min_rubric, variants))
            gates = refuse_unchecked(gates, self.instrument)
        if options.dry_run:
            gates = []  # the mock's outputs say nothing of the system: no gate judges them (run.dry_run says so)
        run = {"id": self.folder.run_id, "suite": suite.name, "status": status, "started_at": self.started_at,
               "finished_at": now_iso() if final else None, "argv": self.argv, "versions": versions(),
               "synthetic": is_synthetic(self.plan), "stop_reason": self.stop_reason if final else None,
               "executor": self.executor.name, "dry_run": options.dry_run}
        run.update(self.extra_run())
        run.update(batch_run_info(self.ledger.journal))
        head = {"schema": SCHEMA, "run": run, "plan": self.plan, "summary": summary, "gates": gates}
        if options.carried is None or self.judge is not None:
            head["requests"] = self.ledger.summary()
        if self.pairwise is not None and final:
            head["pairwise"] = self.pairwise
        reviews = self.summary.bound_reviews()
        if self.carried.reviews is not None or (reviews and any(reviews.values())):
            head["reviews"] = reviews if reviews is not None else self.carried.reviews
        if self.instrument is not None:
            head["instrument"] = self.instrument
        return head

    def extra_run(self) -> dict:
        extra = dict(self.options.extra_run or {})
        if self.cache is not None:
            extra["cache"] = {"path": str(self.suite.config.cache_path), "hits": self.cache.hits,
                              "misses": self.cache.misses}
        if self.options.resume_dir:
            extra["resumed"] = {"at": now_iso(), "attempts_reused": self.reused}
        extra.update(getattr(self, "finalized", None) or {})
        return extra

    def checkpoint_report(self) -> tuple[dict, Iterator[bytes]]:
        return self.head("running", final=False), self.lines(final=False)

    def conclude(self) -> tuple[str, str | None]:
        """The run's status and stop reason; unfinished attempts counted as not-run/interrupted."""
        for pos in self.index.positions():
            if not self.index.recorded(pos):
                self.summary.add(self.unfinished(pos))
        status, reason = self.carried.status or "completed", self.carried.stop_reason
        if self.state.stopping and status == "completed":
            status, reason = "stopped", self.state.stop_reason
        if self.index.count("waiting"):  # attempts wait on provider batches: finish with --resume
            status = "waiting"
        return status, reason


async def run_async(suite: Suite, options: RunOptions | None = None) -> Outcome:
    """Run a suite and write its reports; the async core behind every command that writes one."""
    with fewer_collections():
        return await _run_async(suite, options or RunOptions())


async def _run_async(suite: Suite, options: RunOptions) -> Outcome:
    if options.resume_dir:  # a completed run is left as it is: its report is never rewritten
        folder, meta = open_run_folder(options.resume_dir)
        done = completed_outcome(folder)
        if done is not None:
            check_resumable(meta, suite.plan(), folder)  # a changed suite is refused, as for any resume
            return done
    check_gate_settings(suite)
    check_live_plan(suite)  # origin 004: a live comparison plan is bounded, and sends only with --live
    check_live_opt_in(suite, live=options.live, dry_run=options.dry_run)
    check_batch_settings(suite, options)
    check_flag_credentials(options.flags)
    remember_credentials(suite)
    r = _Run(suite, options)
    check_executor = getattr(r.executor, "check", None)
    if check_executor is not None:  # before anything is written: what the executor cannot run
        check_executor(suite, options)
    r.baseline = load_baseline(suite)
    r.open()
    cfg = suite.config
    r.progress = Progress(sum(1 for _ in r.index.positions()), suite.name, enabled=options.progress)
    r.progress.advance(r.reused)
    json_path = r.folder.report_path(".json")
    r.checkpoint = Checkpointer(json_path, r.checkpoint_report, every=cfg.checkpoint_every,
                                seconds=cfg.checkpoint_seconds,
                                exists=bool(options.resume_dir) and json_path.exists(),
                                on_failure=lambda reason: _stop_on_write_failure(r, reason))
    if options.carried is not None:
        r.checkpoint.min_gap = float("inf")  # nothing here waits on a model unless judges run
    r.pairwise = None
    # What exists now (cases, plan, graders, subjects) lives for the whole run: moved out of the
    # cyclic collector's way, it is not traversed again at every full collection.
    gc.freeze()
    try:
        await r.execute()
        if options.finalize is not None:
            r.finalized = options.finalize(r.lookup)
        status, r.stop_reason = r.conclude()
        head = KNOWN.scrub_value(r.head(status, final=True))
        try:
            # the view and the pages: many objects, no cycles; the view lives until the run
            # ends (unfrozen below, with the rest)
            with collector_paused(keep=True):
                paths = write_record(r, head, json_path)
        except (OSError, ConfigError) as exc:
            raise _write_failed(r, json_path, exc) from None
        if getattr(suite, "stage", None) == "check":  # visual work (issue 17): keep the check's result
            from .instrument import save_check

            kept = save_check(suite, head, json_path)
            if kept is not None:
                paths["check"] = kept
        github_summary(head, r.attempts, r.view)
    finally:
        r.index.close()
        gc.unfreeze()
    r.store.finish(head, paths)
    if options.store is None and hasattr(r.store, "close"):
        r.store.close()  # the run opened it (history store, issue 18)
    outcome = Outcome(head, paths, exit_code_for(head, r.summary))
    outcome.record = r.view.report if r.view is not None else None
    if options.hold_report and sum(t.attempts for t in r.summary.tallies.values()) <= EAGER_REPORT_ATTEMPTS:
        outcome.report  # noqa: B018  (small: read now, so it outlives the files)
    return outcome


def write_record(r: _Run, head: dict, json_path: Path) -> dict[str, Path]:
    """The JSON report streamed from the log (it replaces the run's own checkpoint, or a
    resumed run's partial report), then the other formats beside it."""
    replace = bool(r.options.resume_dir)
    chunks = report_chunks(head, r.lines(final=True))
    if replace or r.checkpoint.written:
        replace_atomic(json_path, chunks)
    else:
        write_new(json_path, chunks)
    paths = {"json": json_path}
    written = getattr(r.store, "report_written", None)  # optional: a store that works beside the run
    if written is not None:
        written(head, json_path)
    others = [f for f in r.formats if f != "json"]
    rendered, r.view = render_reports(json_path, head, r.attempts, others, replace=replace,
                                      junit_path=r.options.junit_path)
    paths.update(rendered)
    return paths


def _stop_on_write_failure(r: _Run, reason: str) -> None:
    """A checkpoint or an attempt log line could not be written: no later request is sent, the
    run ends stopped."""
    r.state.stop(reason)
    r.ledger.halt(reason)


def _write_failed(r: _Run, json_path: Path, exc: BaseException) -> ReportWriteError:
    """The final report could not be written: an execution failure (exit 2), not bad input."""
    detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    kept = " (the last checkpoint there is partial)" if r.checkpoint.written else ""
    return ReportWriteError(f"{json_path}: the report could not be written ({detail}){kept}; the attempt "
                            f"log {r.folder.log_path} is intact: finish with scoreboard run --resume "
                            f"{r.folder.stem}")


def completed_outcome(folder: RunFolder) -> Outcome | None:
    """The Outcome of a run whose JSON report already says `completed` (None when there is no
    such report: a stopped, killed, checkpointed or waiting run). Nothing is written: resuming a
    completed run leaves every file byte for byte as it was; the exit code is the one the
    finished run had."""
    from ..record.constants import EXTENSIONS
    from ..store.files import report_head, report_sections

    json_path = folder.report_path(".json")
    run = report_head(json_path) if json_path.is_file() else None
    if not run or run.get("status") != "completed":
        return None
    # its sections without the attempts (never loaded whole: it may hold a million)
    report = report_sections(json_path)
    if report is None or not isinstance(report.get("run"), dict):
        return None  # unreadable: let the resume rebuild it from the attempt log
    paths = {fmt: folder.report_path(ext) for fmt, ext in EXTENSIONS.items() if folder.report_path(ext).is_file()}
    return Outcome(report, paths, exit_code_of_report(report), already_complete=True)


def exit_code_of_report(head: dict) -> int:
    """exit_code_for, read from a written report's head (its summary counts and gates)."""
    variants = ((head.get("summary") or {}).get("variants") or {}).values()
    troubled = sum((v.get("errors") or 0) + (v.get("interrupted") or 0) + (v.get("not_run") or 0)
                   for v in variants if isinstance(v, dict))
    return _exit_code(head["run"].get("status"), troubled, head.get("gates") or [])


def exit_code_for(head: dict, summary: Summarizer) -> int:
    """0 completed and gates passed; 2 execution errors or a stopped run; 3 a gate failed;
    4 waiting on provider batches (finish with --resume)."""
    troubled = sum(t.counts["error"] + t.counts["interrupted"] + t.counts["not-run"]
                   for t in summary.tallies.values())
    return _exit_code(head["run"]["status"], troubled, head.get("gates", []))


def _exit_code(status: str | None, troubled: int, gates: list) -> int:
    """The exit code of a run from its status, its errored/interrupted/not-run attempts and gates."""
    if status == "waiting":
        return WAITING_EXIT
    if status != "completed" or troubled:
        return 2
    if any(not g.get("passed") for g in gates):
        return 3
    return 0


def check_flag_credentials(flags: dict | None) -> None:
    """A credential written out on the command line is refused: the flags are saved in run.json
    (so --resume can rebuild the run) and show in `ps`, and a key must be in neither."""
    from ..errors import ConfigError

    where = literal_credentials(flags or {})
    if where is not None:
        raise ConfigError("a credential given literally on the command line is refused (the flags are "
                          "saved in run.json for --resume and show in ps): put it in an environment "
                          'variable and name it, as "${VAR}" in the header, api_key_env or '
                          "bearer_token_env; a URL takes no user:password@", field=where)


def remember_credentials(suite: Suite) -> None:
    """Tell the run-wide scrubber every credential the suite's subjects and judge will use."""
    remember(*suite.secrets())


def check_resumable(meta: dict, plan: dict, folder: RunFolder) -> None:
    """A changed fixture or suite cannot be resumed: the attempts already run answered another plan."""
    from ..errors import ConfigError

    old = meta.get("plan") or {}
    for key, what in (("fixture_hash", "the cases changed"), ("suite_hash", "the suite settings changed")):
        if old.get(key) != plan.get(key):
            raise ConfigError(f"cannot resume: {what} since the run started ({key} "
                              f"{str(old.get(key))[:12]}… != {str(plan.get(key))[:12]}…)",
                              file=str(folder.meta_path), field=key)


def _exists(target: Path):
    from ..errors import ConfigError

    return ConfigError("refusing to overwrite an existing file", file=str(target))


async def _wait(task: asyncio.Future) -> None:
    try:
        await task
    except asyncio.CancelledError:
        if not task.cancelled():
            raise


def run(suite: Suite, options: RunOptions | None = None) -> Outcome:
    """Run a suite synchronously (the one sync entry point over `run_async`)."""
    return asyncio.run(run_async(suite, options))
