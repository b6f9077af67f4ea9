"""`scoreboard import promptfoo CONFIG --output DIR` and `scoreboard import openai-evals
REGISTRY.yaml --output DIR`: another tool's suite as scoreboard files. The conversion report is
printed and saved as DIR/conversion-report.md; exit 0 when everything converted, 3 when
anything was left out (listed item by item), 1 on invalid input (nothing written)."""

from __future__ import annotations

import argparse

from ..words import plural

PROMPTFOO_DESCRIPTION = """Convert a promptfoo config (promptfooconfig.yaml) into DIR/suite.yaml and
DIR/cases.jsonl (with the files it references copied into DIR), runnable with
`scoreboard run DIR/suite.yaml`. Nothing is run. Exit 0: everything converted; 3: some items were
not converted (see the report); 1: invalid input, nothing written."""

EVALS_DESCRIPTION = """Convert OpenAI Evals registry entries (Match, Includes, FuzzyMatch, JsonMatch,
ModelBasedClassify) and their samples JSONL into DIR/suite.yaml and DIR/cases.jsonl."""


def add_promptfoo_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = PROMPTFOO_DESCRIPTION
    parser.add_argument("config", metavar="CONFIG", help="promptfooconfig.yaml (or .json)")
    parser.add_argument("--output", required=True, metavar="DIR", help="a new (or empty) folder")
    parser.add_argument("--run-code", action="store_true",
                        help="run the config's transformVars code while importing (it runs with your "
                             "permissions; without this flag it is listed as not converted and nothing "
                             "the config names is executed)")


def add_evals_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = EVALS_DESCRIPTION
    parser.add_argument("registry", metavar="REGISTRY.yaml", help="an evals registry file")
    parser.add_argument("--eval", dest="eval_name", metavar="NAME", help="only this entry (default: every entry)")
    parser.add_argument("--output", required=True, metavar="DIR", help="a new (or empty) folder")
    from .common import number

    parser.add_argument("--max-file-bytes", type=number(int, above=0), default=None, metavar="BYTES",
                        help="read samples files (unpacked) up to this size (default 16 MiB); the suite "
                             "written raises its limits to what its cases need")
    parser.add_argument("--hf-dataset", nargs=2, action="append", default=[], metavar=("URL", "FILE"),
                        help="a local JSONL copy of a dataset MultipleChoice downloads (hf://hendrycks_test?"
                             "name=anatomy&split=validation): its rows, as Dataset.to_json writes them")


INSPECT_DESCRIPTION = """Convert the Inspect AI tasks of a task file (its @task functions) into DIR/suite.yaml
(several tasks: DIR/<task>/suite.yaml, or the one --task names) with their dataset copied into DIR.
The file is read statically: it is parsed, never imported or run, and no model is called. Exit 0:
everything converted; 3: some items were not converted (see DIR/conversion-report.md, FILE:LINE
each); 1: invalid input (a syntax error, no @task, a path leaving the file's folder), nothing
written."""


def add_inspect_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = INSPECT_DESCRIPTION
    parser.add_argument("taskfile", metavar="TASKFILE.py", help="a Python file with @task functions")
    parser.add_argument("--output", required=True, metavar="DIR", help="a new (or empty) folder")
    parser.add_argument("--task", metavar="NAME", help="only this task (default: every task of the file)")
    parser.add_argument("--model", metavar="MODEL", help="the subject: openai/NAME, anthropic/NAME or an "
                        "OpenAI-compatible base URL (default: the Task's model=, else a placeholder)")
    parser.add_argument("--dataset", metavar="FILE", help="a local copy (.jsonl, .json or .csv) of the dataset the "
                        "task downloads (hf_dataset, example_dataset, a remote path), read in its place")
    parser.add_argument("-T", "--task-arg", action="append", default=[], metavar="NAME=VALUE",
                        help="a task parameter's value, as Inspect's -T gives it (VALUE read as YAML, a text with "
                        "commas a list); the task function's `if`s are read with it (repeatable)")


def inspect_main(args: argparse.Namespace) -> int:
    from ..importers.inspect_task import import_inspect

    out, report, written = import_inspect(args.taskfile, args.output, task=args.task, model=args.model,
                                          dataset=args.dataset, task_args=args.task_arg)
    if len(written) == 1:
        return _finish(out / written[0].removesuffix("suite.yaml"), report)
    print(report.text(), end="")
    for rel in written:
        print(f"wrote {out / rel}; run it with: scoreboard run {out / rel}")
    if report.left_out:
        print(f"{plural(len(report.left_out), 'item')} {'was' if len(report.left_out) == 1 else 'were'} not "
              f"converted (listed above and in {out / 'conversion-report.md'})")
        return 3
    return 0


def _finish(out, report) -> int:
    print(report.text(), end="")
    if report.counts.get("cases", 0):
        print(f"wrote {out / 'suite.yaml'} ({plural(report.counts.get('cases', 0), 'case')}); "
              f"run it with: scoreboard run {out / 'suite.yaml'}")
    else:  # `run` refuses a suite without cases
        print(f"wrote {out / 'suite.yaml'} (0 cases): no case was converted, so there is nothing to run")
    if report.left_out:
        print(f"{plural(len(report.left_out), 'item')} {'was' if len(report.left_out) == 1 else 'were'} not "
              f"converted (listed above and in "
              f"{out / 'conversion-report.md'})")
        return 3
    return 0


def promptfoo_main(args: argparse.Namespace) -> int:
    from ..importers.promptfoo import import_promptfoo

    return _finish(*import_promptfoo(args.config, args.output, run_code=args.run_code))


def evals_main(args: argparse.Namespace) -> int:
    from ..importers.openai_evals import import_openai_evals

    return _finish(*import_openai_evals(args.registry, args.output, only=args.eval_name,
                                        max_file_bytes=args.max_file_bytes,
                                        hf_datasets=dict(args.hf_dataset)))
