"""Command line: thin commands over library functions; errors -> one line + exit code.

Exit codes: 0 completed (gates passed); 1 invalid usage or input, nothing run;
2 execution errors or a stopped run; 3 a quality gate failed; 130 a second Ctrl+C.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import importlib.util
import sys
from typing import Callable

from .. import __version__
from ..gcpause import RUN_THRESHOLD
from .commands import MODULES


class Parser(argparse.ArgumentParser):
    """argparse exits 2 on bad usage; our contract says 1, with one line."""

    def error(self, message: str):  # noqa: D401
        self.exit(1, f"{self.prog}: error: {message}\n")


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, Callable]]:
    """The parser with every command, and each command's main."""
    parser = Parser(prog="scoreboard", description="Evaluate LLM-powered systems: run cases against variants, "
                    "grade, compare honestly, write reports, gate CI.")
    parser.add_argument("--version", action="version", version=f"scoreboard {__version__}")
    parser.add_argument("--debug", dest="debug_top", action="store_true", help="show tracebacks")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    commands: dict[str, Callable] = {}
    for module_name in MODULES:
        if importlib.util.find_spec(f"scoreboard.cli.{module_name}") is None:
            continue  # a command whose module this build does not ship
        module = importlib.import_module(f"scoreboard.cli.{module_name}")
        p = sub.add_parser(module.NAME, help=module.HELP, description=getattr(module, "DESCRIPTION", module.HELP),
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(p)
        p.add_argument("--debug", action="store_true", help=argparse.SUPPRESS)
        commands[module.NAME] = module.main
    return parser, commands


def console(argv: list[str] | None = None) -> int:
    """The `scoreboard` console script and `python -m scoreboard`: `main`, in a process that
    ends right after it. Everything the command wrote is closed by then, so the objects left are
    frozen out of the collector's way: the full collection at interpreter exit took about 0.45 s
    after a run of 10,000 attempts and freed nothing that mattered (memory goes back with the
    process; finalizers registered with atexit or weakref.finalize still run). Young-generation
    collections come every 10,000 net allocations, not 700 (see gcpause.fewer_collections):
    importing the commands and loading a suite set off about 190 of them."""
    gc.set_threshold(RUN_THRESHOLD, *gc.get_threshold()[1:])
    code = main(argv)
    gc.freeze()
    return code


def main(argv: list[str] | None = None) -> int:
    """Run one command (in-process callers: tests, the pytest plugin, benchmarks)."""
    parser, commands = build_parser()
    args = parser.parse_args(argv)
    if not args.command:
        parser.print_help()
        return 1
    from ..errors import ScoreboardError
    from ..redact import scrub_known  # the error line is written too: no known credential in it

    args.debug = getattr(args, "debug", False) or args.debug_top
    try:
        return commands[args.command](args)
    except ScoreboardError as exc:
        if args.debug:
            raise
        for line in exc.lines() if hasattr(exc, "lines") else [str(exc)]:  # several input errors: a line each
            print(scrub_known(f"scoreboard: error: {line}"), file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("scoreboard: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 1
    except Exception as exc:  # noqa: BLE001 - the last line of defence: one line, not a traceback
        if args.debug:
            raise
        print(scrub_known(f"scoreboard: internal error: {type(exc).__name__}: {exc} (rerun with --debug for a "
                          "traceback)"), file=sys.stderr)
        return 2
