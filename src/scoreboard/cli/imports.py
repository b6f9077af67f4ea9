"""`scoreboard import KIND ...`: bring outside material into scoreboard's files.

    scoreboard import comparisons REPORT.json COMPARISONS.json --output NEW.json
    scoreboard import csv --csv corrections.csv --map input=doc,expected=fixed --output cases.jsonl

Sub-commands are listed in SUBCOMMANDS: name -> (help, add_arguments(parser), main(args) -> int).
Add one with `SUBCOMMANDS["reviews"] = (HELP, *lazy("import_reviews"))`, where the module
scoreboard.cli.import_reviews defines add_arguments and main.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable

from ..words import plural
from .common import add_format_flag, check_report_output, finish, out_stream, parse_formats

NAME = "import"
HELP = ("import outside material: comparison outputs or reviews into a report, a CSV into cases, a promptfoo "
        "config, OpenAI Evals entries or Inspect AI tasks into a suite")
DESCRIPTION = ("Import outside material. KIND is one of the sub-commands below; "
               "`scoreboard import KIND --help` describes each.")


def lazy(module: str) -> tuple[Callable, Callable]:
    """(add_arguments, main) of scoreboard.cli.<module> (argparse-level at import time)."""

    def add(parser: argparse.ArgumentParser) -> None:
        loaded = importlib.import_module(f"scoreboard.cli.{module}")
        parser.description = getattr(loaded, "DESCRIPTION", None) or parser.description
        loaded.add_arguments(parser)

    def main(args: argparse.Namespace) -> int:
        return importlib.import_module(f"scoreboard.cli.{module}").main(args)

    return add, main


def _suites(kind: str) -> tuple[Callable, Callable]:
    """(add_arguments, main) of one importer in scoreboard.cli.import_suites."""

    def add(parser: argparse.ArgumentParser) -> None:
        getattr(importlib.import_module("scoreboard.cli.import_suites"), f"add_{kind}_arguments")(parser)

    def main(args: argparse.Namespace) -> int:
        return getattr(importlib.import_module("scoreboard.cli.import_suites"), f"{kind}_main")(args)

    return add, main


# ---- import comparisons

COMPARISONS_HELP = "grade outputs made elsewhere for a report's cases as extra variants (no request is made)"
COMPARISONS_DESCRIPTION = """Import outputs produced elsewhere for the same cases of a report.

COMPARISONS.json is {"version"?: "...", "entries": [...]} or a bare list of entries, each
{case_id, input_hash, provider, model, model_version, settings, output, generated_at}: copy
case_id and input_hash from the report; settings holds string, finite-number, boolean or null
values (at most 20); output is the text (kept exactly, at most 24,000 characters:
--max-output-chars) or {text, json, tool_calls, status}; generated_at is an ISO 8601 timestamp.
At most 100 entries (--max-entries). Each (provider, model, model_version, settings) becomes a variant named
provider/model (marked "imported": true in the plan), graded with the report's graders; the
report's own attempts are carried over unchanged. Any invalid entry: exit 1, nothing written.

Matching hashes establish internal consistency only; they do not authenticate a provider,
model version, prompt or execution."""


def add_comparisons_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("report", metavar="REPORT.json", help="the report whose cases the outputs answer")
    p.add_argument("comparisons", metavar="COMPARISONS.json", help="the outputs made elsewhere")
    p.add_argument("--output", required=True, metavar="NEW.json", help="the new report (created exclusively)")
    p.add_argument("--allow-judge", action="store_true", help="allow graders that call a model")
    p.add_argument("--max-entries", type=int, metavar="N", default=100,
                   help="the most entries the comparisons file may hold (default 100)")
    p.add_argument("--max-output-chars", type=int, metavar="N", default=24_000,
                   help="the most characters of one imported output (default 24000)")
    add_format_flag(p, "json")
    p.add_argument("--json", action="store_true", help="print the report JSON on stdout (human lines go to stderr)")


def comparisons_main(args: argparse.Namespace) -> int:
    from ..engine.reruns import import_comparisons
    from ..errors import ConfigError
    from ..record.terminal import printable

    for flag in ("max_entries", "max_output_chars"):
        if getattr(args, flag) < 1:
            raise ConfigError(f"--{flag.replace('_', '-')} takes a positive number, got {getattr(args, flag)}",
                              field=flag)
    check_report_output(args.output)
    outcome = import_comparisons(args.report, args.comparisons, args.output, allow_judge=args.allow_judge,
                                 formats=parse_formats(args.format), argv=args.command_line,
                                 max_entries=args.max_entries, max_output_chars=args.max_output_chars)
    info = outcome.head["run"]["imported"]
    # the variants are named by the file's provider and model: spelt, as every printed name is
    print(printable(f"imported {plural(info['entries'], 'output')} from {args.comparisons} as "
                    f"{', '.join(info['variants'])}; no request was made"), file=out_stream(args.json))
    return finish(args, outcome)


#: sub-command name -> (help, add_arguments(parser), main(args) -> exit code)
SUBCOMMANDS: dict[str, tuple[str, Callable, Callable]] = {
    "comparisons": (COMPARISONS_HELP, add_comparisons_arguments, comparisons_main),
    "csv": ("turn a spreadsheet of corrections into a JSONL case file", *lazy("import_csv")),
    "reviews": ("attach human or model reviews of a report's outputs, bound by hashes", *lazy("import_reviews")),
    # issue 15: other tools' suites
    "promptfoo": ("convert a promptfoo config into a scoreboard suite", *_suites("promptfoo")),
    "openai-evals": ("convert OpenAI Evals registry entries into a scoreboard suite", *_suites("evals")),
    "inspect": ("convert an Inspect AI task file (@task functions, read without running it) into suites",
                *_suites("inspect")),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="import_kind", metavar="KIND", parser_class=type(parser))
    sub.required = True
    for name, (help_text, add, _) in SUBCOMMANDS.items():
        description = COMPARISONS_DESCRIPTION if name == "comparisons" else help_text
        p = sub.add_parser(name, help=help_text, description=description,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        add(p)
        # SUPPRESS: `scoreboard import --debug KIND` keeps working (no default overwrites it)
        p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)


def main(args: argparse.Namespace) -> int:
    return SUBCOMMANDS[args.import_kind][2](args)
