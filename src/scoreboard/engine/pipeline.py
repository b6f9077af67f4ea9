"""One run end to end: plan -> execute (attempt log) -> summarize -> reports -> gates -> exit code."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from ..errors import ConfigError
from ..record.files import replace_atomic, reserve_run, write_new
from ..record.io import SCHEMA, dumps_report, is_synthetic, versions
from ..stats.gates import all_pass_gate, baseline_gates, fail_under_gates, load_baseline
from ..stats.summary import summarize
from ..suite.suite import Suite
from .attemptlog import AttemptLog
from .ledger import Budget, Ledger
from .progress import Progress
from .runner import Runner, RunState, ordered_attempts

DEFAULT_FORMATS = ("json", "md", "html")


@dataclass
class RunOptions:
    """How to run and where to write; everything else comes from the Suite."""

    argv: list[str] = field(default_factory=list)
    formats: tuple[str, ...] | None = None
    progress: bool = True
    grace_s: float | None = None
    #: the flags this run was started with (saved so `--resume` can rebuild the same suite)
    flags: dict = field(default_factory=dict)
    dry_run: bool = False
    resume_dir: str | None = None
    junit_path: str | None = None
    #: score's rule: exit 3 unless every case passes
    require_all_pass: bool = False
    #: extra fields for the report's `run` block (e.g. where a transcript came from)
    extra_run: dict | None = None
    #: write the JSON report exactly here (created exclusively; other formats beside it)
    #: instead of eval-results/<suite>/<UTC timestamp>.json
    output_json: str | None = None


@dataclass
class Outcome:
    report: dict
    paths: dict[str, Path]
    exit_code: int


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def build_report(suite: Suite, plan: dict, attempts: list[dict], *, run_id: str, status: str,
                 started_at: str, finished_at: str | None, argv: list[str], stop_reason: str | None = None,
                 extra_run: dict | None = None, require_all_pass: bool = False,
                 baseline: dict | None = None, requests: dict | None = None,
                 pairwise: dict | None = None) -> dict:
    """Assemble the JSON record of a run from its plan and attempts."""
    summary = summarize(plan, attempts, pairwise)
    variants = [v["name"] for v in plan["variants"]]
    gates = fail_under_gates(summary, suite.config.fail_under, variants)
    if require_all_pass:
        gates.append(all_pass_gate(summary, attempts))
    if baseline is not None:
        gates.extend(baseline_gates(baseline, plan, attempts, suite.config.gates))
    run = {"id": run_id, "suite": suite.name, "status": status, "started_at": started_at,
           "finished_at": finished_at, "argv": argv, "versions": versions(),
           "synthetic": is_synthetic(plan), "stop_reason": stop_reason}
    if extra_run:
        run.update(extra_run)
    report = {"schema": SCHEMA, "run": run, "plan": plan, "attempts": attempts, "summary": summary,
              "gates": gates}
    if requests is not None:
        report["requests"] = requests
    if pairwise is not None:
        report["pairwise"] = pairwise
    return report


def exit_code_for(report: dict) -> int:
    """0 completed and gates passed; 2 execution errors or a stopped run; 3 a gate failed."""
    statuses = {a["status"] for a in report["attempts"]}
    if report["run"]["status"] != "completed" or statuses & {"error", "interrupted", "not-run"}:
        return 2
    if any(not g["passed"] for g in report.get("gates", [])):
        return 3
    return 0


def check_gate_settings(suite: Suite) -> None:
    """Gate settings that name unknown variants fail before anything runs."""
    fail_under_gates({"variants": {}}, suite.config.fail_under, [v.name for v in suite.variants])


def _render(report: dict, fmt: str) -> str:
    if fmt == "json":
        return dumps_report(report, indent=None)
    if fmt == "md":
        from ..record.markdown import render_markdown

        return render_markdown(report)
    if fmt == "html":
        from ..record.html import render_html

        return render_html(report)
    if fmt == "junit":
        from ..record.junit import render_junit

        return render_junit(report)
    raise ConfigError(f"unknown report format {fmt!r}", field="format")


_EXT = {"json": ".json", "md": ".md", "html": ".html", "junit": ".junit.xml"}


async def run_async(suite: Suite, options: RunOptions | None = None) -> Outcome:
    """Run a suite and write its reports; the async core behind `run`."""
    options = options or RunOptions()
    check_gate_settings(suite)
    baseline = load_baseline(suite)
    plan = suite.plan()
    argv = scrub_argv(options.argv, suite)
    state = RunState()
    prior: list[dict] = []
    if options.resume_dir:
        stem, started_at, prior = open_resume(Path(options.resume_dir), plan)
        for record in prior:
            if record.get("kind") is None and record.get("status") in DONE_STATUSES:
                state.done[(record["case_id"], record["variant"], record["run"])] = record
    else:
        stem = _reserve(suite, options)
        started_at = now_iso()
        write_new(stem / "run.json", dumps_report({
            "schema": "scoreboard.run/v1", "run_id": stem.name, "suite": suite.name,
            "suite_source": str(Path(suite.source).resolve()) if suite.source else None,
            "cwd": os.getcwd(), "flags": options.flags, "dry_run": options.dry_run,
            "argv": argv, "started_at": started_at, "plan": plan}, indent=None))
    run_id = stem.name
    json_path = stem.with_name(stem.name + ".json")
    log = AttemptLog(stem / "attempts.jsonl")
    ledger = Ledger(Budget(**suite.config.budget.model_dump()), log)
    ledger.restore(prior)
    cache = None
    if suite.config.cache:
        from ..store.cache import ResponseCache

        cache = ResponseCache(suite.config.cache_path)
    total = len(suite.cases) * len(suite.variants) * suite.config.runs
    progress = Progress(total, suite.name, enabled=options.progress)
    progress.advance(len(state.done))
    checkpoint = _Checkpointer(suite, plan, state, json_path, run_id, started_at, argv,
                               ledger, exists=bool(options.resume_dir) and json_path.exists())

    def on_attempt(record: dict) -> None:
        progress.advance()
        checkpoint.maybe()

    judge = None
    if suite.judge is not None:
        from ..judges.client import Judge

        judge = Judge(suite.judge, ledger=ledger, runs=suite.config.judge_runs,
                      timeout_s=suite.config.timeout_ms / 1000, seed=suite.config.seed)
    runner = Runner(suite, log, state=state, on_attempt=on_attempt, ledger=ledger, cache=cache, judge=judge)
    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(runner.run())
    signals = _install_signals(loop, state, task, options.grace_s if options.grace_s is not None
                               else suite.config.grace_seconds)
    pairwise = None
    try:
        await _wait(task)
        if judge is not None and suite.config.pairwise and len(suite.variants) > 1 and not state.stopping:
            from ..judges.pairwise import judge_pairs

            rubric = suite.config.pairwise.rubric if not isinstance(suite.config.pairwise, bool) else None
            pairwise = await judge_pairs(plan, state.done, judge, rubric=rubric, state=state)
    finally:
        for sig in signals:
            loop.remove_signal_handler(sig)
        progress.close()
        for variant in suite.variants:
            await variant.subject.aclose()
        if suite.judge is not None:
            await suite.judge.aclose()
        if cache is not None:
            cache.close()
        log.close()
    status = "stopped" if state.stopping else "completed"
    attempts = ordered_attempts(suite, state.done, reason=state.stop_reason or "not run")
    for a in attempts:
        if a["status"] == "not-run" and (a["case_id"], a["variant"], a["run"]) in state.interrupted:
            a["status"] = "interrupted"
            a["error"] = f"interrupted ({state.stop_reason}); usage unknown"
    extra = dict(options.extra_run or {})
    if cache is not None:
        extra["cache"] = {"path": str(suite.config.cache_path), "hits": cache.hits, "misses": cache.misses}
    if options.resume_dir:
        extra["resumed"] = {"at": now_iso(), "attempts_reused": sum(
            1 for r in prior if r.get("kind") is None and r.get("status") in DONE_STATUSES)}
    report = build_report(suite, plan, attempts, run_id=run_id, status=status, started_at=started_at,
                          finished_at=now_iso(), argv=argv, stop_reason=state.stop_reason,
                          extra_run=extra, require_all_pass=options.require_all_pass, baseline=baseline,
                          requests=ledger.summary(), pairwise=pairwise)
    formats = options.formats or tuple(suite.config.formats or DEFAULT_FORMATS)
    paths = write_reports(report, stem, formats, first_json_written=checkpoint.written,
                          replace=bool(options.resume_dir))
    if options.junit_path:
        paths["junit"] = write_new(options.junit_path, _render(report, "junit"))
    _github_summary(report)
    return Outcome(report, paths, exit_code_for(report))


def scrub_argv(argv: list[str], suite: Suite) -> list[str]:
    """`argv` without the literal values of secret-looking headers given in a subject spec on
    the command line (`--subject '{"headers": {"Authorization": "Bearer sk-..."}}'`): the
    report records specs with those values hidden, and must not carry them in argv either."""
    from ..subjects._http import _SENSITIVE, ENV_REF

    secrets: set[str] = set()
    subjects = [v.subject for v in suite.variants] + ([suite.judge] if suite.judge is not None else [])
    for subject in subjects:
        headers = (getattr(subject, "options", None) or {}).get("headers") or {}
        for name, value in headers.items():
            if isinstance(value, str) and _SENSITIVE.search(name) and not ENV_REF.search(value):
                secrets.update(part for part in (value, *value.split()) if len(part) >= 8)
    if not secrets:
        return list(argv)
    out = []
    for arg in argv:
        for secret in sorted(secrets, key=len, reverse=True):
            arg = arg.replace(secret, "***")
        out.append(arg)
    return out


#: attempt statuses that count as finished: a resumed run never repeats them
DONE_STATUSES = ("passed", "failed", "error", "unassessed")


def open_resume(run_dir: Path, plan: dict) -> tuple[Path, str, list[dict]]:
    """Check that a stopped or killed run folder matches the suite as it is now; return its
    stem, start time and attempt log records. A changed fixture or suite is refused."""
    from .attemptlog import read_attempt_log

    run_dir = run_dir.resolve()
    meta_path = run_dir / "run.json"
    if not meta_path.exists():
        raise ConfigError("not a run folder (no run.json)", file=str(run_dir))
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    old = meta.get("plan", {})
    for key, what in (("fixture_hash", "the cases changed"), ("suite_hash", "the suite settings changed")):
        if old.get(key) != plan.get(key):
            raise ConfigError(f"cannot resume: {what} since the run started ({key} "
                              f"{str(old.get(key))[:12]}… != {str(plan.get(key))[:12]}…)",
                              file=str(meta_path), field=key)
    return run_dir, meta.get("started_at") or now_iso(), read_attempt_log(run_dir / "attempts.jsonl")


def _github_summary(report: dict) -> None:
    """Append the Markdown summary to $GITHUB_STEP_SUMMARY when running in GitHub Actions."""
    target = os.environ.get("GITHUB_STEP_SUMMARY")
    if not target:
        return
    from ..record.markdown import render_markdown

    try:
        with open(target, "a", encoding="utf-8") as handle:
            handle.write(render_markdown(report, failures=3) + "\n")
    except OSError as exc:
        print(f"scoreboard: warning: cannot append to GITHUB_STEP_SUMMARY: {exc}", file=sys.stderr)


def _reserve(suite: Suite, options: RunOptions) -> Path:
    """The run's stem: its folder holds run.json and the attempt log; reports sit beside it."""
    if not options.output_json:
        return reserve_run(Path(suite.config.output_dir) / suite.name)
    target = Path(options.output_json)
    if target.exists():
        raise ConfigError("refusing to overwrite an existing file", file=str(target))
    stem = target.with_suffix("") if target.suffix == ".json" else target
    stem.parent.mkdir(parents=True, exist_ok=True)
    try:
        stem.mkdir(mode=0o700)
    except FileExistsError:
        raise ConfigError("the run folder for this output already exists", file=str(stem)) from None
    return stem


async def _wait(task: asyncio.Future) -> None:
    try:
        await task
    except asyncio.CancelledError:
        if not task.cancelled():
            raise


def write_reports(report: dict, stem: Path, formats, *, first_json_written: bool = False,
                  replace: bool = False) -> dict[str, Path]:
    """Write each format beside the run folder; JSON first, since it is the record.
    `replace` is for a resumed run, which completes its own earlier (partial) reports."""
    paths: dict[str, Path] = {}
    ordered = ["json"] + [f for f in formats if f != "json"] if "json" in formats else list(formats)
    for fmt in ordered:
        path = stem.with_name(stem.name + _EXT[fmt])
        text = _render(report, fmt)
        if replace or (fmt == "json" and first_json_written):
            replace_atomic(path, text)
        else:
            write_new(path, text)
        paths[fmt] = path
    return paths


class _Checkpointer:
    """Replaces the JSON report (status "running") every N attempts and every T seconds."""

    def __init__(self, suite: Suite, plan: dict, state: RunState, path: Path, run_id: str,
                 started_at: str, argv: list[str], ledger: Ledger | None = None, exists: bool = False):
        self.suite, self.plan, self.state, self.path = suite, plan, state, path
        self.ledger = ledger
        self.run_id, self.started_at, self.argv = run_id, started_at, argv
        cfg = suite.config
        self.every, self.seconds = cfg.checkpoint_every, cfg.checkpoint_seconds
        self.count = 0
        self.last = time.monotonic()
        self.written = exists
        # Rewriting a big report costs O(attempts): keep checkpoints under ~10% of the run's
        # time by waiting at least ten times as long as the last one took.
        self.min_gap = 5.0
        self.cost = 0.0

    def maybe(self) -> None:
        self.count += 1
        now = time.monotonic()
        gap = now - self.last
        if gap < max(self.min_gap, 10 * self.cost):
            return
        if gap >= self.seconds or self.count % self.every == 0:
            self.write()

    def write(self) -> None:
        started = time.monotonic()
        attempts = ordered_attempts(self.suite, self.state.done)
        report = build_report(self.suite, self.plan, attempts, run_id=self.run_id, status="running",
                              started_at=self.started_at, finished_at=None, argv=self.argv,
                              requests=self.ledger.summary() if self.ledger is not None else None)
        text = dumps_report(report, indent=None)
        if self.written:
            replace_atomic(self.path, text, sync=False)
        else:
            write_new(self.path, text)
            self.written = True
        done = time.monotonic()
        self.cost = done - started
        self.last = done


def _install_signals(loop, state: RunState, task: asyncio.Future, grace_s: float) -> list[int]:
    """SIGINT/SIGTERM: stop dispatching, let in-flight attempts finish for `grace_s`, then
    cancel them (recorded as interrupted). A second SIGINT exits at once."""
    installed = []

    def first(sig_name: str) -> None:
        if state.stopping:
            if sig_name == "SIGINT":
                print("scoreboard: second interrupt, exiting now (the attempt log is intact)",
                      file=sys.stderr, flush=True)
                os._exit(130)
            return
        state.stop(f"interrupted by {sig_name}")
        print(f"scoreboard: {sig_name}: no new attempts; waiting up to {grace_s:g}s for "
              f"{state.in_flight} in flight (interrupt again to exit now)", file=sys.stderr, flush=True)

        def expire() -> None:
            if not task.done():
                state.interrupted.update(state.in_flight_keys)
                task.cancel()

        loop.call_later(grace_s, expire)

    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, first, sig.name)
            installed.append(sig)
        except (NotImplementedError, RuntimeError, ValueError):
            pass
    return installed


def run(suite: Suite, options: RunOptions | None = None) -> Outcome:
    """Run a suite synchronously (the one sync entry point over `run_async`)."""
    return asyncio.run(run_async(suite, options))
