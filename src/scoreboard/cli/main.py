"""Command line: thin commands over library functions; errors -> one line + exit code.

Exit codes: 0 completed (gates passed); 1 invalid usage or input, nothing run;
2 execution errors or a stopped run; 3 a quality gate failed; 4 a run waits on provider
batches (`run --resume` collects them); 130 a second Ctrl+C.
"""

from __future__ import annotations

import argparse
import copy
import functools
import gc
import importlib
import importlib.util
import sys
from typing import Callable

from .. import __version__
from ..errors import closest
from ..gcpause import RUN_THRESHOLD
from .commands import MODULES


class Parser(argparse.ArgumentParser):
    """argparse exits 2 on bad usage; our contract says 1, with one line."""

    def error(self, message: str):  # noqa: D401
        self.exit(1, f"{self.prog}: error: {message}{_closest_choice(message)}\n")


def _closest_choice(message: str) -> str:
    """` (did you mean run?)` after argparse's `invalid choice: 'rnu' (choose from ...)`."""
    import re

    found = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)$", message)
    if not found:
        return ""
    choices = re.findall(r"'([^']*)'", found.group(2))
    close = closest(found.group(1), choices, 0.6)
    return f" (did you mean {close}?)" if close is not None else ""


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, Callable]]:
    """The parser with every command, and each command's main."""
    parser, modules = _build()
    return parser, {name: module.main for name, module in modules.items()}


def _build() -> tuple[argparse.ArgumentParser, dict]:
    """The parser with every command, and each command's module."""
    parser = Parser(prog="scoreboard", description="Evaluate LLM-powered systems: run cases against variants, "
                    "grade, compare honestly, write reports, gate CI.")
    parser.add_argument("--version", action="version", version=f"scoreboard {__version__}")
    parser.add_argument("--debug", dest="debug_top", action="store_true", help="show tracebacks")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    modules: dict = {}
    for module_name in MODULES:
        if importlib.util.find_spec(f"scoreboard.cli.{module_name}") is None:
            continue  # a command whose module this build does not ship
        module = importlib.import_module(f"scoreboard.cli.{module_name}")
        p = sub.add_parser(module.NAME, help=module.HELP, description=getattr(module, "DESCRIPTION", module.HELP),
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(p)
        p.add_argument("--debug", action="store_true", help=argparse.SUPPRESS)
        modules[module.NAME] = module
    return parser, modules


@functools.cache
def _parser() -> tuple[argparse.ArgumentParser, dict, set]:
    """The parser, built once a process (about 12 ms a build; tests call main thousands of
    times). Parsing leaves the parser as it was: every call gets a new Namespace, and a flag's
    values are copied before they are appended to; the one thing a parse hands out of the parser
    is a mutable default itself (`default=[]`), which main copies (fresh_defaults). A command's
    main is looked up on its module at each call."""
    parser, modules = _build()
    shared = {id(action.default) for p in _all_parsers(parser) for action in p._actions
              if isinstance(action.default, (list, dict, set))}
    return parser, modules, shared


def _all_parsers(parser: argparse.ArgumentParser):
    """`parser` and every (sub)command parser under it."""
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):  # an alias names the same parser
                yield from _all_parsers(sub)


def fresh_defaults(args: argparse.Namespace, shared: set) -> None:
    """A copy of each mutable default the parse put in `args`, so a command that appends to its
    list changes no later call's default."""
    for key, value in vars(args).items():
        if id(value) in shared:
            setattr(args, key, copy.deepcopy(value))


def console(argv: list[str] | None = None) -> int:
    """The `scoreboard` console script and `python -m scoreboard`: `main`, in a process that
    ends right after it. Everything the command wrote is closed by then, so the objects left are
    frozen out of the collector's way: the full collection at interpreter exit took about 0.45 s
    after a run of 10,000 attempts and freed nothing that mattered (memory goes back with the
    process; finalizers registered with atexit or weakref.finalize still run). Young-generation
    collections come every 10,000 net allocations, not 700 (see gcpause.fewer_collections):
    importing the commands and loading a suite set off about 190 of them."""
    gc.set_threshold(RUN_THRESHOLD, *gc.get_threshold()[1:])
    try:
        code = main(argv)
    except KeyboardInterrupt:  # Ctrl+C while the commands load or the flags parse: nothing ran yet
        print("scoreboard: interrupted", file=sys.stderr)
        code = 130
    gc.freeze()
    forget_interrupt_mark()
    if argv is None:  # the process's own command line: a caller passing argv (a test, a script) keeps its process
        leave_user_threads(code)
    return code


def leave_user_threads(code: int) -> None:
    """End the process now when user code (a python subject, grader or transform) left threads of
    its own running (a poller, a non-daemon worker): the interpreter's exit waits for every such
    thread, so `scoreboard run` hung after writing its report, for as long as they ran (for
    ever, for a thread that never returns). scoreboard's own threads are daemon threads; the
    atexit handlers still run."""
    import atexit
    import os
    import threading

    left = [t for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon and t.is_alive()]
    if not left:
        return
    from ..record.mdtext import spell_unseen

    names = sorted({spell_unseen(t.name[:80]) for t in left})
    print(f"scoreboard: not waiting for {len(left)} thread(s) that user code left running "
          f"({', '.join(names[:3])}{', ...' if len(names) > 3 else ''})", file=sys.stderr)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    atexit._run_exitfuncs()
    os._exit(code)


def forget_interrupt_mark() -> None:
    """Let the process end with the status scoreboard chose. CPython marks a KeyboardInterrupt
    that escapes code run by exec() of a string (dataclasses and namedtuple build their methods
    that way while a module imports) as never handled, whoever catches it afterwards; at exit the
    interpreter then kills itself with SIGINT instead of returning 130 (a Ctrl+C as scoreboard
    starts: 9 of 80 start-ups interrupted at random). Each such exec() clears the mark first, so
    one that raises nothing leaves it clear."""
    exec("pass")  # noqa: S102 - a constant: see above


def main(argv: list[str] | None = None) -> int:
    """Run one command (in-process callers: tests, the pytest plugin, benchmarks)."""
    parser, modules, shared = _parser()
    line = [str(a) for a in (sys.argv[1:] if argv is None else argv)]
    args = parse(parser, line)
    fresh_defaults(args, shared)
    # what a report records as its command line: this call's, never the host process's (a
    # report written through the pytest plugin recorded pytest's own arguments)
    args.command_line = line
    if not args.command:
        parser.print_help()
        return 1
    from ..errors import ScoreboardError
    from ..record.mdtext import spell_unseen  # a name from a file (a variant's) spelt, never acted on
    from ..redact import scrub_known  # the error line is written too: no known credential in it

    args.debug = getattr(args, "debug", False) or args.debug_top
    try:
        refuse_stdout_where_files_are_written(args)
        refuse_names_of_another_format(args, line)
        return modules[args.command].main(args)
    except ScoreboardError as exc:
        if args.debug:
            raise
        for said in error_lines(exc, line):  # several input errors: a line each
            print(scrub_known(f"scoreboard: error: {spell_unseen(said)}"), file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("scoreboard: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 1
    except Exception as exc:  # noqa: BLE001 - the last line of defence: one line, not a traceback
        if args.debug:
            raise
        print(scrub_known(f"scoreboard: internal error: {type(exc).__name__}: {spell_unseen(str(exc))} (rerun with "
                          "--debug for a traceback)"), file=sys.stderr)
        return 2


#: the commands whose --output may be `-`: standard output, as `report` has always taken it
STDOUT_OUTPUT = ("report", "schema", "plan", "footprint", "store")


def refuse_stdout_where_files_are_written(args: argparse.Namespace) -> None:
    """`--output -` means standard output for the commands that write one document; the others
    write a report (and its Markdown, HTML beside it) or a folder, and a file named `-` is never
    what was meant: one line naming the flag, before anything runs."""
    if args.command in STDOUT_OUTPUT:
        return
    from ..errors import ConfigError

    for dest in ("output", "html", "out"):  # compare's --output is its page; import csv's --out an alias
        if getattr(args, dest, None) == "-":
            hint = " (--json prints the result on stdout)" if hasattr(args, "json") else ""
            raise ConfigError(f"'-' is no file: scoreboard {args.command} writes files, not standard output; name "
                              f"a file{hint}", field="output")


#: the commands whose --output is one JSON document (import csv: JSON Lines), whatever its name says
JSON_OUTPUT = {"verify": "JSON", "plan": "JSON", "schema": "JSON", "footprint": "JSON", "store reviews": "JSON",
               "import csv": "JSON Lines"}


def refuse_names_of_another_format(args: argparse.Namespace, argv: list[str]) -> None:
    """An --output named as another format (`plan --output plan.md`, `verify --output v.html`)
    would hold JSON: one line naming the flag, before anything runs. A command writing a report
    and its renderings beside it says which name to give (check_report_output)."""
    from ..errors import ConfigError
    from .common import check_report_output

    kind = next(filter(None, (getattr(args, k, None) for k in ("import_kind", "store_command", "export_kind"))), None)
    command = " ".join(filter(None, (args.command, kind)))
    output = getattr(args, "out" if command == "import csv" else "output", None)
    if not isinstance(output, str) or output == "-":
        return
    if args.command in ("export", "aggregate"):  # a report, its other formats beside it
        check_report_output(output)
    elif command in JSON_OUTPUT and output.lower().endswith((".md", ".html", ".htm", ".xml")):
        raise ConfigError(f"{output!r}: scoreboard {command} writes {JSON_OUTPUT[command]} there; give a name "
                          f"ending {'.jsonl' if command == 'import csv' else '.json'}",
                          flag="--out" if _given("--out", argv) is not None else "--output")


def parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """`parser.parse_args(argv)`, but a flag the command does not take is reported by that command
    (`scoreboard run: error: ...`), with the flag it most resembles (`--fail-undr`: did you mean
    --fail-under?)."""
    args, extras = parser.parse_known_args(argv)
    if extras:
        target = _command_parser(parser, argv)
        known = [o for action in target._actions for o in action.option_strings if o.startswith("--")]
        hints = []
        for extra in extras:
            name = extra.partition("=")[0]
            if not name.startswith("--"):
                continue
            close = closest(name, known)
            if close is not None:
                hints.append((name, close))
        if len(hints) == 1:
            hint = f" (did you mean {hints[0][1]}?)"
        else:
            hint = "".join(f" ({name}: did you mean {close}?)" for name, close in hints)
        target.error(f"unrecognized arguments: {' '.join(extras)}{hint}")
    return args


def _command_parser(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.ArgumentParser:
    """The parser of the (sub)command that `argv` names (`import csv` -> its own parser)."""
    target = parser
    for token in argv:
        if token == "--":
            break
        sub = next((a for a in target._actions if isinstance(a, argparse._SubParsersAction)), None)
        if sub is None:
            break
        if token in sub.choices:
            target = sub.choices[token]
    return target


#: a setting's name -> its flag, where the flag is not `--` + the name with dashes
_FLAG_OF = {"timeout_ms": "--timeout", "max_cost_usd": "--max-cost", "grace_seconds": "--grace",
            "fail_under_metrics": "--fail-under-metric", "graders": "--grader", "formats": "--format"}


def error_lines(exc, argv: list[str]) -> list[str]:
    """The error's lines, each naming the flag it came from: an input error with no file, line
    or case behind it, about a setting whose flag is on this command line, was caused by that
    flag (`flag --format: ...`, not `field 'format': ...`)."""
    from ..errors import ConfigError

    if not isinstance(exc, ConfigError):
        return [str(exc)]
    errors = getattr(exc, "errors", None) or [exc]
    out = [str(_flagged(one, argv)) for one in errors]
    if getattr(exc, "capped", False):
        out.append(exc.lines()[-1])
    return out


def _given(flag: str, argv: list[str]) -> str | None:
    """The value `flag` has on the command line (the last one; "" for a switch), else None."""
    value = None
    for i, token in enumerate(argv):
        if token == "--":
            break
        if token == flag:
            value = argv[i + 1] if i + 1 < len(argv) else ""
        elif token.startswith(flag + "="):
            value = token[len(flag) + 1:]
    return value


def _flagged(one, argv: list[str]):
    """`one` naming the flag that caused it, or `one` itself."""
    from ..errors import ConfigError

    if one.flag or one.line is not None or one.case_id is not None or not one.field:
        return one
    head, _, rest = one.field.partition(".")
    flag = _FLAG_OF.get(head, "--" + head.replace("_", "-"))
    if one.file and not _names_value(one.file, _given(flag, argv)):
        return one  # a file is to blame (the suite file's setting), not the flag
    if head == "subject" and _given("--vs-subject", argv) is not None:
        # a subject error from the second subject flag names it (its value is quoted in the message)
        first, second = _given("--subject", argv), _given("--vs-subject", argv)
        if first is None or (repr(second) in one.detail and repr(first) not in one.detail):
            flag = "--vs-subject"
    if head == "fail_under_metrics" and _given("--fail-under-fields", argv) is not None and (
            _given(flag, argv) is None or ("'fields'" in one.detail and "fields" not in _given(flag, argv))):
        flag = "--fail-under-fields"  # its gates are `fields` metric gates: the error is that flag's
    if _given(flag, argv) is None:
        return one
    # a path inside the flag's value stays whole: `flag --subject, field 'subject.headers.Authorization'`
    # the field stays with a file named too (`--cases c.json`, its field 'cases' is the document's)
    return ConfigError(one.detail, flag=flag, file=one.file, field=one.field if rest or one.file else None)


def _names_value(file: str, value: str | None) -> bool:
    """Whether an error's file is the flag's own value (`--store /x.sqlite`: the error names /x.sqlite)."""
    import os

    if not value:
        return False
    if file == value or (value.startswith(("postgresql://", "postgres://")) and "://" in file):
        return True
    return os.path.abspath(file) == os.path.abspath(value)
