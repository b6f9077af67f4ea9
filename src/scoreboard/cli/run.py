"""`scoreboard run`: run a suite (or finish a stopped one with --resume) and write its reports.

    scoreboard run suite.yaml
    scoreboard run --cases cases.jsonl --subject python:app:answer --vs-subject python:app:answer2
    scoreboard run --resume eval-results/invoices/20261130T043840Z

Exit codes: 0 completed and every gate passed; 1 invalid usage or input (nothing run);
2 execution errors or a stopped run; 3 a quality gate failed; 4 attempts wait on provider
batches (collect them with --resume); 130 a second Ctrl+C (the attempt log is intact: finish
with --resume). --resume of a run that already completed changes nothing and exits with the
code that run finished with.
"""

from __future__ import annotations

import argparse
import sys
from functools import partial
from pathlib import Path

from ..record.annotations import case_lines
from .common import (
    add_format_flag,
    add_suite_flags,
    check_report_output,
    finish,
    out_stream,
    plural,
    print_preamble,
    stdout_for_json,
    suite_flags,
)
from .store import TAG_RULE, tag_arg

NAME = "run"
HELP = "run a suite and write reports"
DESCRIPTION = __doc__


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The suite flags, plus where reports go and how the run behaves."""
    add_suite_flags(p)
    g = p.add_argument_group("reports")
    g.add_argument("--output", metavar="FILE.json",
                   help="write the JSON report exactly here (created exclusively; other formats beside it)")
    g.add_argument("--output-dir", metavar="DIR", help="where reports go: DIR/<suite>/<UTC stamp>.json "
                   "(default eval-results)")
    add_format_flag(g, "json,md,html")
    g.add_argument("--junit", metavar="FILE", help="also write JUnit XML to FILE")
    g.add_argument("--json", action="store_true", help="print the report JSON on stdout (human lines go to stderr)")
    g.add_argument("--no-progress", action="store_true", help="no progress output")
    g.add_argument("--verbose", "-v", action="store_true",
                   help="after the run, one line per attempt grouped by category: PASS/FAIL, milliseconds, "
                        "and why each failure failed (the patterns a pattern grader missed or found)")
    g = p.add_argument_group("running")
    g.add_argument("--resume", metavar="RUN_DIR",
                   help="finish a stopped or killed run (its folder, not its report); finished attempts are not "
                        "repeated, and a completed run is left as it is")
    g.add_argument("--cache", action="store_true", default=None, help="reuse responses from the SQLite cache")
    g.add_argument("--grace", type=float, metavar="S",
                   help="seconds to wait for in-flight attempts after SIGINT/SIGTERM (default 30)")
    g.add_argument("--executor", metavar="NAME", help="where attempts run: local (default, asyncio in this "
                   "process) or ray (Ray actors: a local Ray instance, or a cluster with --ray-address); "
                   "with --resume, the executor that finishes the run")
    g.add_argument("--ray-address", metavar="HOST:PORT", help="the Ray cluster for --executor ray (default: "
                   "a local Ray instance started for the run)")
    g.add_argument("--stage", choices=("check", "screen", "heldout", "judge"),
                   help="run one stage: check (the judge's instrument check on calibration controls), screen "
                        "(the suite's stages.screen subset), heldout (the held-out cases); judge is "
                        "`scoreboard rescore REPORT --allow-judge`")
    # history store (issue 18)
    g.add_argument("--store", metavar="PATH|URL|none", help="record the run in this history store: a SQLite file, "
                   "a postgresql:// URL, or none (default: SCOREBOARD_STORE, else .scoreboard/history.sqlite "
                   "beside the output folder)")
    g.add_argument("--tag", action="append", metavar="TAG", type=tag_arg,
                   help=f"tag the run in the history store; repeatable ({TAG_RULE})")


def main(args: argparse.Namespace) -> int:
    """Load the suite (or the stopped run) and run it; with --verbose, the per-attempt lines
    first (stderr with --json); then the usual end."""
    with stdout_for_json(args.json):  # what a subject prints never lands in the JSON on stdout
        outcome = run_outcome(args)
    if getattr(args, "verbose", False):
        from ..record.terminal import print_cases

        report = outcome.report
        print_cases(report["plan"], report["attempts"], out_stream(args.json))
    elif getattr(outcome, "head", None) is not None:
        from ..record.terminal import first_error_line

        from ..engine.attemptlog import scan_attempt_log
        from ..store.files import RunFolder

        # read from the run's attempt log a line at a time up to the first error (never the
        # whole report into memory: a run may hold a million attempts)
        json_path = outcome.paths.get("json")
        log = RunFolder(Path(json_path).with_suffix("")).log_path if json_path else None
        attempts = (r for _, _, r in scan_attempt_log(log) if "case_id" in r) if log else ()
        line = first_error_line(outcome.head, attempts)
        if line:  # the summary counts the errors; this says why one happened
            print(line, file=out_stream(args.json))
    code = finish(args, outcome)
    from ..record.annotations import outcome_annotations

    for text in outcome_annotations(outcome):  # under GitHub Actions: after the summary
        print(text, file=out_stream(args.json))
    return code


def run_outcome(args: argparse.Namespace):
    """The Outcome of `scoreboard run` with these arguments (the GitHub Action's step reads it)."""
    from ..engine.pipeline import RunOptions, run
    from ..errors import ConfigError
    from ..suite.stages import load_staged

    if args.resume:
        done = _already_complete(args)
        if done is not None:
            return done
        import os

        here = os.getcwd()
        suite, options = _resumed(args)
        options.announce = partial(print_preamble, suite, out_stream(args.json), dry_run=options.dry_run)
        outcome = run(suite, options)
        outcome.case_lines = case_lines(suite)
        if os.getcwd() == here:  # the paths as a fresh run prints them (relative where they can be)
            outcome.paths = {fmt: Path(_shown(path)) for fmt, path in outcome.paths.items()}
        reused = (outcome.head["run"].get("resumed") or {}).get("attempts_reused") or 0
        print(f"resumed: {plural(reused, 'attempt')} reused from the run's log (not run again)",
              file=out_stream(args.json))
        return outcome
    if args.output and args.output_dir:
        raise ConfigError("give --output or --output-dir, not both", field="output")
    if args.output:
        check_report_output(args.output)
    flags = suite_flags(args)
    settings = executor_settings(args)
    suite = load_staged(args.suite, flags, dry_run=args.dry_run)
    options = RunOptions(argv=args.command_line, progress=not args.no_progress, junit_path=args.junit,
                         flags=flags, dry_run=args.dry_run, output_json=args.output, executor=args.executor,
                         executor_settings=settings, hold_report=False, live=bool(args.live),
                         extra_run={"live": True} if args.live else None,
                         store=_store(args, suite.config.output_dir),
                         announce=partial(print_preamble, suite, out_stream(args.json), dry_run=args.dry_run))
    outcome = run(suite, options)
    outcome.case_lines = case_lines(suite)
    return outcome


def _store(args: argparse.Namespace, output_dir: str):
    """The history store --store and --tag name (None: the run's default store)."""
    if not args.store and not args.tag:
        return None
    from ..store.locate import run_store

    return run_store(output_dir, args.store, tags=args.tag or ())


def _check_resume_flags(args: argparse.Namespace) -> None:
    """--resume takes the run folder and --executor; the run keeps its own settings."""
    from ..errors import ConfigError

    if args.suite or suite_flags(args) or args.dry_run or args.output:
        raise ConfigError("--resume takes only the run folder (and --executor): the run continues with its own "
                          "settings", field="resume")


def _already_complete(args: argparse.Namespace):
    """The Outcome of a run that had already completed (None otherwise): nothing runs, no file
    is written (its report stays byte for byte as it was), and stderr says so; the exit code is
    the one the finished run had."""
    from ..engine.outcomes import completed_outcome
    from ..store.files import open_run_folder

    _check_resume_flags(args)
    folder, meta = open_run_folder(args.resume)
    outcome = completed_outcome(folder)
    if outcome is not None:
        # a suite, cases or skill changed since the run is refused as for any resume: the user
        # would otherwise take the old report for one of the new suite
        import os

        from ..engine.preflight import check_resumable

        here = os.getcwd()
        try:
            suite = _saved_suite(meta)
            check_resumable(meta, suite.plan(), folder)
        finally:
            os.chdir(here)
        shown = _shown(outcome.paths["json"])
        print(f"scoreboard: run {folder.run_id} already completed: nothing to resume; its report {shown} "
              f"is left as it was (exit code {outcome.exit_code}, as the run finished)", file=sys.stderr)
        _render_missing(outcome, (meta.get("flags") or {}).get("formats") or suite.config.formats)
        outcome.paths = {fmt: Path(_shown(path)) for fmt, path in outcome.paths.items()}
    return outcome


def _render_missing(outcome, formats) -> None:
    """The renderings a completed run asked for that are not beside its report (a kill -9 after
    its JSON was written, before its Markdown or HTML was) written from the JSON alone; the
    files already there are left as they are."""
    from ..engine.reports import render_reports
    from ..engine.run import DEFAULT_FORMATS
    from ..store.reportfile import ReportFile

    missing = [f for f in (formats or DEFAULT_FORMATS) if f not in outcome.paths and f != "json"]
    if not missing:
        return
    report = ReportFile(outcome.paths["json"])
    paths, _ = render_reports(Path(outcome.paths["json"]), report.head, report.attempts, missing)
    outcome.paths.update(paths)
    print(f"scoreboard: wrote what the run stopped before writing: {', '.join(_shown(p) for p in paths.values())}",
          file=sys.stderr)


def _shown(path) -> str:
    """A path as a user gave it: relative to the working folder when it lies under it."""
    import os

    try:
        rel = os.path.relpath(path)
    except ValueError:
        return str(path)
    return str(path) if rel.startswith("..") else rel


def _resumed(args: argparse.Namespace):
    """(suite, options) of a stopped run, rebuilt from its run.json."""
    from ..engine.pipeline import RunOptions
    from ..store.files import open_run_folder

    _check_resume_flags(args)
    settings = executor_settings(args)
    folder, meta = open_run_folder(args.resume)
    suite = _saved_suite(meta)
    flags = meta.get("flags") or {}
    live = bool(flags.get("live"))
    _keep_store(args, meta)
    options = RunOptions(argv=args.command_line, progress=not args.no_progress, junit_path=args.junit, flags=flags,
                         dry_run=bool(meta.get("dry_run")), resume_dir=str(folder.stem),
                         executor=args.executor or meta.get("executor"), executor_settings=settings,
                         hold_report=False, live=live, extra_run={"live": True} if live else None,
                         store=_store(args, suite.config.output_dir))
    return suite, options


def _keep_store(args: argparse.Namespace, meta: dict) -> None:
    """A resume records into the store its run was started with (`--store` in its saved argv),
    unless --store or SCOREBOARD_STORE names one now: resumed into the default store, a run
    started with `--store postgresql://...` stayed `running` in the shared history for good. A
    password there was saved as `***`: the resume must be given the store again."""
    import os

    from ..errors import ConfigError
    from ..store.locate import ENV

    if args.store or os.environ.get(ENV):
        return
    argv, saved = list(meta.get("argv") or []), None
    for i, arg in enumerate(argv):
        if arg == "--store" and i + 1 < len(argv):
            saved = str(argv[i + 1])
        elif str(arg).startswith("--store="):
            saved = str(arg)[len("--store="):]
    if saved is None:
        return
    if "***" in saved:
        raise ConfigError(f"the run was recorded in the store {saved}, whose password is not saved: give "
                          "--store (or SCOREBOARD_STORE) with it to record the resume there, or --store none",
                          field="resume")
    args.store = saved


def _saved_suite(meta: dict):
    """The suite a run's run.json names, loaded from the run's working folder (relative paths in
    its saved flags meant that folder; the process is left there)."""
    import os

    from ..suite.stages import load_staged

    if meta.get("cwd") and os.path.isdir(meta["cwd"]):
        os.chdir(meta["cwd"])
    return load_staged(meta.get("suite_source"), meta.get("flags") or {}, dry_run=bool(meta.get("dry_run")))


def executor_settings(args: argparse.Namespace) -> dict:
    """The executor's own flags (--ray-address), refused for an executor that takes none."""
    from ..errors import ConfigError

    if args.executor is not None:  # an unknown name is refused before anything is loaded or printed
        from ..engine.executors import EXECUTORS

        if args.executor not in EXECUTORS:
            raise ConfigError(f"unknown executor {args.executor!r} (known: {', '.join(EXECUTORS)})",
                              flag="--executor")
    if args.ray_address is None:
        return {}
    if args.executor != "ray":
        raise ConfigError("--ray-address goes with --executor ray", flag="--ray-address")
    return {"address": args.ray_address}
