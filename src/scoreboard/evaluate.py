"""One run end to end: plan -> execute (attempt log) -> summarize -> reports -> gates -> exit code."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .attemptlog import AttemptLog
from .errors import ConfigError
from .gates import fail_under_gates
from .hashing import sha256_json
from .progress import Progress
from .reports.files import replace_atomic, reserve_run, write_new
from .reports.json_report import SCHEMA, dumps_report, is_synthetic, versions
from .runner import Runner, RunState, ordered_attempts
from .stats import summarize
from .suite import Suite

DEFAULT_FORMATS = ("json", "md", "html")


@dataclass
class RunOptions:
    """How to run and where to write; everything else comes from the Suite."""

    argv: list[str] = field(default_factory=list)
    formats: tuple[str, ...] | None = None
    progress: bool = True
    grace_s: float = 30.0
    junit_path: str | None = None
    write_files: bool = True


@dataclass
class Outcome:
    report: dict
    paths: dict[str, Path]
    exit_code: int


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def build_report(suite: Suite, plan: dict, attempts: list[dict], *, run_id: str, status: str,
                 started_at: str, finished_at: str | None, argv: list[str], stop_reason: str | None = None,
                 extra_run: dict | None = None) -> dict:
    """Assemble the JSON record of a run from its plan and attempts."""
    summary = summarize(plan, attempts)
    variants = [v["name"] for v in plan["variants"]]
    gates = fail_under_gates(summary, suite.config.fail_under, variants)
    run = {"id": run_id, "suite": suite.name, "status": status, "started_at": started_at,
           "finished_at": finished_at, "argv": argv, "versions": versions(),
           "synthetic": is_synthetic(plan), "stop_reason": stop_reason}
    if extra_run:
        run.update(extra_run)
    return {"schema": SCHEMA, "run": run, "plan": plan, "attempts": attempts, "summary": summary,
            "gates": gates}


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
        from .reports.markdown import render_markdown

        return render_markdown(report)
    if fmt == "html":
        from .reports.html import render_html

        return render_html(report)
    if fmt == "junit":
        from .reports.junit import render_junit

        return render_junit(report)
    raise ConfigError(f"unknown report format {fmt!r}", field="format")


_EXT = {"json": ".json", "md": ".md", "html": ".html", "junit": ".junit.xml"}


async def run_async(suite: Suite, options: RunOptions | None = None) -> Outcome:
    """Run a suite and write its reports; the async core behind `run`."""
    options = options or RunOptions()
    check_gate_settings(suite)
    plan = suite.plan()
    started_at = now_iso()
    state = RunState()
    stem = reserve_run(Path(suite.config.output_dir) / suite.name)
    run_id = stem.name
    json_path = stem.with_name(stem.name + ".json")
    write_new(stem / "run.json", dumps_report({
        "schema": "scoreboard.run/v1", "run_id": run_id, "suite": suite.name, "suite_source": suite.source,
        "argv": options.argv, "started_at": started_at, "plan": plan}, indent=None))
    log = AttemptLog(stem / "attempts.jsonl")
    total = len(suite.cases) * len(suite.variants) * suite.config.runs
    progress = Progress(total, suite.name, enabled=options.progress)
    checkpoint = _Checkpointer(suite, plan, state, json_path, run_id, started_at, options.argv)

    def on_attempt(record: dict) -> None:
        progress.advance()
        checkpoint.maybe()

    runner = Runner(suite, log, state=state, on_attempt=on_attempt)
    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(runner.run())
    signals = _install_signals(loop, state, task, options.grace_s)
    try:
        await _wait(task)
    finally:
        for sig in signals:
            loop.remove_signal_handler(sig)
        progress.close()
        log.close()
    status = "stopped" if state.stopping else "completed"
    attempts = ordered_attempts(suite, state.done, reason=state.stop_reason or "not run")
    for a in attempts:
        if a["status"] == "not-run" and (a["case_id"], a["variant"], a["run"]) in state.interrupted:
            a["status"] = "interrupted"
            a["error"] = f"interrupted ({state.stop_reason}); usage unknown"
    report = build_report(suite, plan, attempts, run_id=run_id, status=status, started_at=started_at,
                          finished_at=now_iso(), argv=options.argv, stop_reason=state.stop_reason)
    paths = write_reports(report, stem, options.formats or tuple(suite.config.formats or DEFAULT_FORMATS),
                          first_json_written=checkpoint.written)
    if options.junit_path:
        paths["junit"] = write_new(options.junit_path, _render(report, "junit"))
    return Outcome(report, paths, exit_code_for(report))


async def _wait(task: asyncio.Future) -> None:
    try:
        await task
    except asyncio.CancelledError:
        if not task.cancelled():
            raise


def write_reports(report: dict, stem: Path, formats, *, first_json_written: bool = False) -> dict[str, Path]:
    """Write each format beside the run folder; JSON first, since it is the record."""
    paths: dict[str, Path] = {}
    ordered = ["json"] + [f for f in formats if f != "json"] if "json" in formats else list(formats)
    for fmt in ordered:
        path = stem.with_name(stem.name + _EXT[fmt])
        text = _render(report, fmt)
        if fmt == "json" and first_json_written:
            replace_atomic(path, text)
        else:
            write_new(path, text)
        paths[fmt] = path
    return paths


class _Checkpointer:
    """Replaces the JSON report (status "running") every N attempts and every T seconds."""

    def __init__(self, suite: Suite, plan: dict, state: RunState, path: Path, run_id: str,
                 started_at: str, argv: list[str]):
        self.suite, self.plan, self.state, self.path = suite, plan, state, path
        self.run_id, self.started_at, self.argv = run_id, started_at, argv
        cfg = suite.config
        self.every, self.seconds = cfg.checkpoint_every, cfg.checkpoint_seconds
        self.count = 0
        self.last = time.monotonic()
        self.written = False
        # Rewriting a big report costs O(attempts); never do it more than once a second.
        self.min_gap = 1.0

    def maybe(self) -> None:
        self.count += 1
        now = time.monotonic()
        due = now - self.last >= self.seconds or (self.count % self.every == 0 and now - self.last >= self.min_gap)
        if due:
            self.write()

    def write(self) -> None:
        attempts = ordered_attempts(self.suite, self.state.done)
        report = build_report(self.suite, self.plan, attempts, run_id=self.run_id, status="running",
                              started_at=self.started_at, finished_at=None, argv=self.argv)
        text = dumps_report(report, indent=None)
        if self.written:
            replace_atomic(self.path, text)
        else:
            write_new(self.path, text)
            self.written = True
        self.last = time.monotonic()


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
