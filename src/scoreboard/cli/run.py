"""`scoreboard run`: run a suite (or finish a stopped one with --resume) and write its reports.

    scoreboard run suite.yaml
    scoreboard run --cases cases.jsonl --subject python:app:answer --vs-subject python:app:answer2
    scoreboard run --resume eval-results/invoices/20261130T043840Z

Exit codes: 0 completed and every gate passed; 1 invalid usage or input (nothing run);
2 execution errors or a stopped run; 3 a quality gate failed; 130 a second Ctrl+C (the
attempt log is intact: finish with --resume).
"""

from __future__ import annotations

import argparse
import sys

from .common import add_format_flag, add_suite_flags, finish, suite_flags

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
    g = p.add_argument_group("running")
    g.add_argument("--resume", metavar="RUN_DIR",
                   help="finish a stopped or killed run (its folder); finished attempts are not repeated")
    g.add_argument("--cache", action="store_true", default=None, help="reuse responses from the SQLite cache")
    g.add_argument("--grace", type=float, metavar="S",
                   help="seconds to wait for in-flight attempts after SIGINT/SIGTERM")
    g.add_argument("--executor", metavar="NAME", help="where attempts run: local (default, asyncio in this "
                   "process) or ray (Ray actors: a local Ray instance, or a cluster with --ray-address); "
                   "with --resume, the executor that finishes the run")
    g.add_argument("--ray-address", metavar="HOST:PORT", help="the Ray cluster for --executor ray (default: "
                   "a local Ray instance started for the run)")


def main(args: argparse.Namespace) -> int:
    """Load the suite (or the stopped run) and run it."""
    return finish(args, run_outcome(args))


def run_outcome(args: argparse.Namespace):
    """The Outcome of `scoreboard run` with these arguments (the GitHub Action's step reads it)."""
    from ..engine.pipeline import RunOptions, run
    from ..errors import ConfigError
    from ..suite.load import load_suite

    if args.resume:
        return run(*_resumed(args))
    if args.output and args.output_dir:
        raise ConfigError("give --output or --output-dir, not both", field="output")
    flags = suite_flags(args)
    settings = executor_settings(args)
    suite = load_suite(args.suite, flags, dry_run=args.dry_run)
    options = RunOptions(argv=sys.argv[1:], progress=not args.no_progress, junit_path=args.junit,
                         flags=flags, dry_run=args.dry_run, output_json=args.output, executor=args.executor,
                         executor_settings=settings, hold_report=False)
    return run(suite, options)


def _resumed(args: argparse.Namespace):
    """(suite, options) of a stopped run, rebuilt from its run.json."""
    import os

    from ..engine.pipeline import RunOptions
    from ..errors import ConfigError
    from ..store.files import open_run_folder
    from ..suite.load import load_suite

    if args.suite or suite_flags(args) or args.dry_run or args.output:
        raise ConfigError("--resume takes only the run folder (and --executor): the run continues with its own "
                          "settings", field="resume")
    settings = executor_settings(args)
    folder, meta = open_run_folder(args.resume)
    # Relative paths in the saved flags meant the original working directory.
    if meta.get("cwd") and os.path.isdir(meta["cwd"]):
        os.chdir(meta["cwd"])
    flags = meta.get("flags") or {}
    suite = load_suite(meta.get("suite_source"), flags, dry_run=bool(meta.get("dry_run")))
    options = RunOptions(argv=sys.argv[1:], progress=not args.no_progress, junit_path=args.junit, flags=flags,
                         dry_run=bool(meta.get("dry_run")), resume_dir=str(folder.stem),
                         executor=args.executor or meta.get("executor"), executor_settings=settings,
                         hold_report=False)
    return suite, options


def executor_settings(args: argparse.Namespace) -> dict:
    """The executor's own flags (--ray-address), refused for an executor that takes none."""
    from ..errors import ConfigError

    if args.ray_address is None:
        return {}
    if args.executor != "ray":
        raise ConfigError("--ray-address goes with --executor ray", field="ray_address")
    return {"address": args.ray_address}
