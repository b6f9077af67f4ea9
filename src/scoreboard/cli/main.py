"""Command line: thin commands over library functions; errors -> one line + exit code.

Exit codes: 0 completed (gates passed); 1 invalid usage or input, nothing run;
2 execution errors or a stopped run; 3 a quality gate failed.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Callable

from .. import __version__

COMMANDS: dict[str, Callable] = {}


class _Parser(argparse.ArgumentParser):
    """argparse exits 2 on bad usage; our contract says 1, with one line."""

    def error(self, message: str):  # noqa: D401
        self.exit(1, f"{self.prog}: error: {message}\n")


def _run_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("suite", nargs="?", help="suite file (YAML, TOML or JSON); flags override its settings")
    p.add_argument("--cases", action="append", metavar="FILE", help="case file (JSONL or {cases: [...]}); repeatable")
    p.add_argument("--skill", metavar="PATH", help="instruction file or folder with SKILL.md (variant A)")
    p.add_argument("--vs", metavar="PATH", help="second instruction file (variant B)")
    p.add_argument("--subject", metavar="SPEC", help="subject, e.g. python:pkg.mod:fn, 'command:./bin {input}', recorded:out.jsonl")
    p.add_argument("--vs-subject", metavar="SPEC", help="second subject to compare against --subject")
    p.add_argument("--grader", action="append", metavar="SPEC",
                   help='default grader for cases naming none: a name or JSON, e.g. \'{"regex": "^42$"}\'; repeatable')
    p.add_argument("--runs", type=int, metavar="N", help="repeat every case N times per variant")
    p.add_argument("--concurrency", type=int, metavar="N", help="attempts at once (default 4)")
    p.add_argument("--timeout", type=int, metavar="MS", help="deadline per attempt in ms (default 120000)")
    p.add_argument("--category", action="append", metavar="NAME", help="only cases of this category; repeatable")
    p.add_argument("--case", action="append", metavar="ID", help="only this case id; repeatable")
    p.add_argument("--name", help="suite name (report folder)")
    p.add_argument("--output-dir", metavar="DIR", help="where reports go (default eval-results)")
    p.add_argument("--format", action="append", metavar="FMT",
                   help="report formats: json, md, html, junit (comma-separated or repeated; default json,md,html)")
    p.add_argument("--fail-under", action="append", metavar="RATE",
                   help="exit 3 when a variant's pass rate is below RATE; VARIANT=RATE for one variant")
    p.add_argument("--junit", metavar="FILE", help="also write JUnit XML to FILE")
    p.add_argument("--seed", type=int, help="seed for bootstrap intervals and shuffles")
    p.add_argument("--model", help="override the model of every model subject for this run")
    p.add_argument("--split", help="which cases run: default excludes cases marked heldout; 'heldout', 'all' or a split name")
    p.add_argument("--judge", metavar="SPEC", help="the judge subject for model-graded graders")
    p.add_argument("--judge-runs", type=int, metavar="K", help="ask each judgment K times (majority counts)")
    p.add_argument("--pairwise", action="store_true", default=None,
                   help="also have the judge compare every pair of variants per case, in both orders")
    p.add_argument("--max-requests", type=int, metavar="N", help="request budget across variants, judges and retries")
    p.add_argument("--max-cost", type=float, metavar="USD", help="cost budget in USD (needs prices)")
    p.add_argument("--max-tokens", type=int, metavar="N", help="token budget (input + output)")
    p.add_argument("--cache", action="store_true", default=None, help="reuse responses from the SQLite cache")
    p.add_argument("--grace", type=float, metavar="S", help="seconds to wait for in-flight attempts after SIGINT/SIGTERM")
    p.add_argument("--baseline", metavar="REPORT", help="baseline report for the regression gate")
    p.add_argument("--max-regression", type=float, metavar="DELTA", help="allowed pass-rate drop against --baseline")
    p.add_argument("--require-significance", action="store_true", default=None,
                   help="fail the baseline gate only when the paired test is significant")
    p.add_argument("--alpha", type=float, help="significance level for --require-significance (default 0.05)")
    p.add_argument("--resume", metavar="RUN_DIR", help="finish a stopped or killed run (its folder); done attempts are not repeated")
    p.add_argument("--dry-run", action="store_true", help="run everything against the mock subject (no model call)")
    p.add_argument("--json", action="store_true", help="print the report JSON on stdout (human lines go to stderr)")
    p.add_argument("--no-progress", action="store_true", help="no progress output")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="scoreboard", description="Evaluate LLM-powered systems: run cases against variants, "
                     "grade, compare honestly, write reports, gate CI.")
    parser.add_argument("--version", action="version", version=f"scoreboard {__version__}")
    parser.add_argument("--debug", dest="debug_top", action="store_true", help="show tracebacks")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    p = sub.add_parser("run", help="run a suite and write reports")
    _run_flags(p)
    p.add_argument("--debug", action="store_true", help=argparse.SUPPRESS)

    p = sub.add_parser("validate", help="check a case file or suite without running anything")
    p.add_argument("file", help="case file (JSONL, JSON or YAML) or suite file")
    p.add_argument("--debug", action="store_true", help=argparse.SUPPRESS)

    p = sub.add_parser("report", help="render a saved report again from its JSON alone")
    p.add_argument("report", help="REPORT.json")
    p.add_argument("--format", default="md", choices=["md", "html", "junit", "json"], help="output format (default md)")
    p.add_argument("--output", metavar="FILE", help="write to FILE (created exclusively) instead of stdout")
    p.add_argument("--debug", action="store_true", help=argparse.SUPPRESS)

    # Further commands live in scoreboard.cli.<module>: each defines NAME, HELP,
    # add_arguments(parser) and main(args) -> exit code, and imports heavy modules only in main.
    import importlib

    from .commands import MODULES

    for module_name in MODULES:
        module = importlib.import_module(f"scoreboard.cli.{module_name}")
        p = sub.add_parser(module.NAME, help=module.HELP, description=getattr(module, "DESCRIPTION", module.HELP),
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(p)
        p.add_argument("--debug", action="store_true", help=argparse.SUPPRESS)
        COMMANDS[module.NAME] = module.main
    return parser


def _flags(args: argparse.Namespace) -> dict:
    from ..stats.gates import parse_fail_under

    graders = None
    if args.grader:
        graders = []
        for raw in args.grader:
            raw = raw.strip()
            if raw.startswith(("{", "[", '"')):
                try:
                    graders.append(json.loads(raw))
                except ValueError as exc:
                    from ..errors import ConfigError

                    raise ConfigError(f"--grader JSON is invalid: {exc}", field="grader") from None
            else:
                graders.append(raw)
    formats = None
    if args.format:
        formats = [f.strip() for item in args.format for f in item.split(",") if f.strip()]
    return {"cases": args.cases, "skill": args.skill, "vs": args.vs, "subject": args.subject,
            "vs_subject": args.vs_subject, "graders": graders, "runs": args.runs,
            "concurrency": args.concurrency, "timeout_ms": args.timeout, "category": args.category,
            "case": args.case, "name": args.name, "output_dir": args.output_dir, "formats": formats,
            "fail_under": parse_fail_under(args.fail_under), "seed": args.seed, "model": args.model,
            "split": args.split, "judge": _judge_spec(args.judge), "judge_runs": args.judge_runs,
            "pairwise": args.pairwise,
            "max_requests": args.max_requests, "max_cost_usd": args.max_cost, "max_tokens": args.max_tokens,
            "cache": args.cache, "grace_seconds": args.grace, "baseline": args.baseline,
            "max_regression": args.max_regression, "require_significance": args.require_significance,
            "alpha": args.alpha}


def _judge_spec(raw: str | None):
    if raw is None:
        return None
    raw = raw.strip()
    if raw.startswith("{"):
        try:
            return json.loads(raw)
        except ValueError as exc:
            from ..errors import ConfigError

            raise ConfigError(f"--judge JSON is invalid: {exc}", field="judge") from None
    return raw


def cmd_run(args: argparse.Namespace) -> int:
    from ..engine.pipeline import RunOptions, run
    from ..suite.load import load_suite

    if args.resume:
        return _resume(args)
    flags = {k: v for k, v in _flags(args).items() if v is not None}
    suite = load_suite(args.suite, flags, dry_run=args.dry_run)
    options = RunOptions(argv=sys.argv[1:], progress=not args.no_progress, junit_path=args.junit,
                         flags=flags, dry_run=args.dry_run)
    outcome = run(suite, options)
    return _finish(args, outcome)


def _resume(args: argparse.Namespace) -> int:
    import os
    from pathlib import Path

    from ..engine.pipeline import RunOptions, run
    from ..errors import ConfigError
    from ..suite.load import load_suite

    given = {k: v for k, v in _flags(args).items() if v is not None}
    if args.suite or given or args.dry_run:
        raise ConfigError("--resume takes only the run folder: the run continues with its own settings",
                          field="resume")
    run_dir = Path(args.resume).resolve()
    meta_path = run_dir / "run.json"
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError("not a run folder (no run.json)", file=str(run_dir), field="resume") from None
    except ValueError as exc:
        raise ConfigError(f"run.json is not valid JSON: {exc}", file=str(meta_path)) from None
    # Relative paths in the saved flags meant the original working directory.
    if meta.get("cwd") and os.path.isdir(meta["cwd"]):
        os.chdir(meta["cwd"])
    suite = load_suite(meta.get("suite_source"), meta.get("flags") or {}, dry_run=bool(meta.get("dry_run")))
    options = RunOptions(argv=sys.argv[1:], progress=not args.no_progress, junit_path=args.junit,
                         flags=meta.get("flags") or {}, dry_run=bool(meta.get("dry_run")),
                         resume_dir=str(run_dir))
    return _finish(args, run(suite, options))


def _finish(args: argparse.Namespace, outcome) -> int:
    _print_outcome(outcome, to_stderr=args.json)
    if args.json:
        from ..record.io import dumps_report

        sys.stdout.write(dumps_report(outcome.report, indent=None))
    return outcome.exit_code


def _print_outcome(outcome, *, to_stderr: bool) -> None:
    from ..record.io import fmt_rate

    out = sys.stderr if to_stderr else sys.stdout
    report = outcome.report
    run = report["run"]
    print(f"{run['suite']}: {run['status']} ({run['id']})", file=out)
    for name, s in report["summary"]["variants"].items():
        judged = s["passed"] + s["failed"] + s["errors"]
        ci = s.get("pass_rate_ci") or {}
        interval = f" [95% CI {fmt_rate(ci['low'])}–{fmt_rate(ci['high'])}]" if ci.get("low") is not None else ""
        labels = (("errors", "error", "errors"), ("not_run", "not run", "not run"),
                  ("interrupted", "interrupted", "interrupted"), ("unassessed", "unassessed", "unassessed"))
        extra = "".join(f", {s[k]} {one if s[k] == 1 else many}" for k, one, many in labels if s.get(k))
        print(f"  {name}: pass rate {fmt_rate(s['pass_rate'])}{interval} ({s['passed']}/{judged}{extra})", file=out)
    for comp in report["summary"].get("comparisons", []):
        if comp.get("headline"):
            print(f"  {comp['headline']}", file=out)
    judges = report["summary"].get("judges") or {}
    for dq in judges.get("dq", []):
        ci = dq.get("ci") or {}
        interval = f" (95% CI {ci['low']:+.2f} to {ci['high']:+.2f})" if ci.get("low") is not None else ""
        print(f"  dQ {dq['a']} - {dq['b']}: {dq['dq']:+.2f}{interval} on {dq['cases']} cases "
              f"(blind pointwise quality, 0-3)", file=out)
    for pw in judges.get("pairwise", []):
        pc = pw.get("position_consistency")
        print(f"  pairwise {pw['a']} vs {pw['b']}: {pw['a_wins']} wins, {pw['b_wins']} losses, {pw['ties']} ties; "
              f"position consistency {'n/a' if pc is None else f'{pc:.0%}'}", file=out)
    failures = sum(v.get("judge_failures", 0) for v in judges.get("variants", {}).values())
    if failures:
        print(f"  judge failures (not assessed): {failures}", file=out)
    for gate in report.get("gates", []):
        print(f"  gate {'passed' if gate['passed'] else 'FAILED'}: {gate.get('description', gate['gate'])}", file=out)
    if run.get("stop_reason"):
        print(f"  stopped: {run['stop_reason']}", file=out)
    for fmt, path in outcome.paths.items():
        print(f"  {fmt}: {path}", file=out)


def cmd_validate(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ..suite.load import load_suite

    path = Path(args.file)
    if path.suffix.lower() in (".yaml", ".yml", ".toml", ".json") and _looks_like_suite(path):
        suite = load_suite(path)
        print(f"OK: suite {suite.name}: {len(suite.cases)} cases, {len(suite.variants)} variants "
              f"({', '.join(v.name for v in suite.variants)}), {suite.config.runs} run(s)")
        return 0
    from ..cases import load_cases
    from ..suite.config import SuiteConfig
    from ..suite.load import _resolve_graders

    if path.is_dir():
        from ..cases.gold import load_gold_dir

        cases, skipped = load_gold_dir(path)
        _resolve_graders(SuiteConfig(), cases)
        extra = f"; {len(skipped)} document(s) without a gold file would be skipped" if skipped else ""
        print(f"OK: gold directory {path}: {len(cases)} cases{extra}")
        return 0
    cases = load_cases(path)
    _resolve_graders(SuiteConfig(), [c for c in cases if c.graders or c.has_expected])
    no_grader = sum(1 for c in cases if not c.graders and not c.has_expected)
    note = f" ({no_grader} name no grader and no expected value: a suite must supply graders)" if no_grader else ""
    print(f"OK: {len(cases)} cases in {path}{note}")
    return 0


def _looks_like_suite(path) -> bool:
    from ..suite.load import read_suite_file

    try:
        data, _ = read_suite_file(path)
    except Exception:
        return False
    cases = data.get("cases")
    # A case document holds case objects; a suite names case files (a path or a list of paths).
    if isinstance(cases, list):
        return bool(cases) and all(isinstance(c, str) for c in cases)
    return True


def cmd_report(args: argparse.Namespace) -> int:
    from ..engine.pipeline import _render
    from ..record.files import write_new
    from ..record.io import load_report

    report = load_report(args.report)
    text = _render(report, args.format)
    if args.output:
        write_new(args.output, text)
        print(f"{args.format}: {args.output}")
    else:
        sys.stdout.write(text)
    return 0


COMMANDS.update({"run": cmd_run, "validate": cmd_validate, "report": cmd_report})


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `scoreboard` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.command:
        parser.print_help()
        return 1
    from ..errors import ScoreboardError

    args.debug = args.debug or args.debug_top
    try:
        return COMMANDS[args.command](args)
    except ScoreboardError as exc:
        if args.debug:
            raise
        print(f"scoreboard: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("scoreboard: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 1
    except Exception as exc:  # noqa: BLE001 - the last line of defence: one line, not a traceback
        if args.debug:
            raise
        print(f"scoreboard: internal error: {type(exc).__name__}: {exc} (rerun with --debug for a traceback)",
              file=sys.stderr)
        return 2
