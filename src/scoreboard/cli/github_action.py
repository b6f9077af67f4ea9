"""The step of the GitHub Action (action.yml at the repository root): run a suite, add the
comparison with a baseline to the step summary, set the step's outputs, comment on the pull
request, and exit with the run's exit code, so the suite's gates pass or fail the job.

    python -m scoreboard.cli.github_action SUITE [--baseline REPORT] [--max-regression D]
        [--args "MORE RUN FLAGS"] [--comment true|false]

It reads what GitHub sets: GITHUB_STEP_SUMMARY, GITHUB_OUTPUT, GITHUB_EVENT_PATH,
GITHUB_API_URL, GITHUB_REPOSITORY, GITHUB_SERVER_URL, GITHUB_RUN_ID, and GITHUB_TOKEN (the
action passes its `github-token` input). The run itself appends its Markdown report to the
step summary. Outputs: report, reports (every file, one a line, for upload-artifact), pass-rate
(with one variant), pass-rates (JSON), verdict (passed, gates-failed, errors, invalid, waiting:
exit code 4, attempts waiting on provider batches, or dry-run: `--dry-run`, exit code 0), exit-code,
comment.

A comment that cannot be posted (a fork's read-only token, the API down) is a warning: the exit
code stays the run's, since the gates, not the comment, decide the job.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import uuid
from pathlib import Path

VERDICT = {0: "passed", 1: "invalid", 2: "errors", 3: "gates-failed", 4: "waiting"}
#: the options that take a value: `--args --verbose` is read as `--args=--verbose` (argparse
#: would take a value that starts with "-" and holds no space for another option)
VALUED = ("--baseline", "--max-regression", "--args", "--comment")
#: GitHub refuses a step summary over 1 MiB and then shows none of it: what this step adds
#: (the run's report, the comparison, a warning) is kept under this many bytes
SUMMARY_LIMIT = 1_000_000
#: what is kept free of the run's report for the comparison and warnings after it
SUMMARY_RESERVE = 16_000


def joined(argv: list[str]) -> list[str]:
    """`argv` with each valued option joined to its value (`--args`, `-v` -> `--args=-v`)."""
    out, i = [], 0
    while i < len(argv):
        if argv[i] in VALUED and i + 1 < len(argv):
            out.append(f"{argv[i]}={argv[i + 1]}")
            i += 2
        else:
            out.append(argv[i])
            i += 1
    return out


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    from .main import Parser

    p = Parser(prog="python -m scoreboard.cli.github_action", description=__doc__,
               formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("suite", help="the suite file to run")
    p.add_argument("--baseline", default="", help="a baseline report to compare with (empty: none)")
    p.add_argument("--max-regression", default="", help="with --baseline, the pass-rate drop that fails the job "
                   "(empty: compare only)")
    p.add_argument("--args", default="", help="more `scoreboard run` flags, as one shell-quoted string")
    p.add_argument("--comment", default="true", choices=["true", "false"],
                   help="comment the comparison on the pull request when a baseline is given")
    try:
        return p.parse_args(joined(sys.argv[1:] if argv is None else list(argv)))
    except SystemExit as exc:  # the parser said what is wrong, in one line
        if exc.code:
            write_outputs({"verdict": VERDICT[1], "exit-code": str(exc.code)})
        raise


def run_argv(args: argparse.Namespace) -> list[str]:
    """The `scoreboard run` command line this step runs."""
    from ..errors import ConfigError

    try:
        more = shlex.split(args.args)
    except ValueError as exc:  # an unclosed quote
        raise ConfigError(f"cannot split {args.args[:200]!r} into flags: {exc}", flag="--args") from None
    argv = ["run", args.suite, "--no-progress", *more]
    if args.max_regression:
        if not args.baseline:
            raise ConfigError("--max-regression needs --baseline (the report to compare with)", field="max_regression")
        argv += ["--baseline", args.baseline, "--max-regression", args.max_regression]
    return argv


def main(argv: list[str] | None = None) -> int:
    """Run the step; the exit code is the run's (1 when nothing could run)."""
    from ..errors import ScoreboardError
    from ..redact import remember, scrub_known
    from .common import print_outcome
    from .main import build_parser, parse
    from .run import run_outcome

    args = parse_args(argv)
    token = os.environ.get("GITHUB_TOKEN", "")
    if token:
        remember(token)  # nothing this process prints or writes may carry it
    resume = stop_commands()
    summary_start = summary_size()
    try:
        line = run_argv(args)
        run_args = parse(build_parser()[0], line)  # a misspelt flag: did you mean
        run_args.debug = False
        run_args.command_line = line  # the report records the run this step made
        baseline = read_baseline(args.baseline)  # before the run: a wrong path costs no run
        outcome = run_outcome(run_args)
        print_outcome(outcome, to_stderr=False)
    except ScoreboardError as exc:
        print(scrub_known(f"scoreboard: error: {exc}"), file=sys.stderr)
        write_outputs({"verdict": VERDICT.get(exc.exit_code, "errors"), "exit-code": str(exc.exit_code)})
        return exc.exit_code
    except SystemExit as exc:  # bad flags in --args: the parser said which, in one line
        write_outputs({"verdict": VERDICT[1], "exit-code": str(exc.code)})
        raise
    finally:
        resume()
    from ..record.annotations import outcome_annotations

    for text in outcome_annotations(outcome):  # after resume(): the runner reads commands again
        print(scrub_known(text), flush=True)
    fit_summary(summary_start, outcome.paths)
    comparison = compare_with(baseline, outcome.paths["json"])
    if comparison is not None:
        from .github_comment import NOTHING_COMPARED, comparison_markdown

        if not comparison["shared_cases"]:
            print(f"scoreboard: warning: nothing was compared with the baseline {args.baseline}: "
                  f"{NOTHING_COMPARED[len('Nothing was compared: '):]}", file=sys.stderr)
        append_summary(comparison_markdown(comparison))
    comment = "skipped"
    if args.baseline and args.comment == "true":
        comment = post_comment(outcome.head, outcome.exit_code, comparison, token)
    write_outputs(outputs(outcome, comment))
    return outcome.exit_code


def stop_commands():
    """On a GitHub runner, stop it reading workflow commands (`::set-output ...::`, `::add-mask::`,
    `##[...]`) in what the run prints (case ids, outputs, reasons, error bodies) until the returned
    function is called; elsewhere nothing is printed."""
    if os.environ.get("GITHUB_ACTIONS") != "true":
        return lambda: None
    token = uuid.uuid4().hex
    print(f"::stop-commands::{token}", flush=True)
    return lambda: print(f"::{token}::", flush=True)


def read_baseline(baseline: str):
    """The baseline report (None without one); one that cannot be read is invalid input, said
    before anything runs, as `scoreboard run --baseline` says it."""
    if not baseline:
        return None
    from ..errors import ConfigError, ScoreboardError
    from ..record.io import read_report

    try:
        return read_report(baseline)
    except ScoreboardError as exc:
        raise ConfigError(str(exc), field="baseline") from None


def compare_with(baseline, report: Path) -> dict | None:
    """The comparison of the baseline report with this run's (None without a baseline, or when
    this run's report cannot be read: said on stderr)."""
    if baseline is None:
        return None
    from ..errors import ScoreboardError
    from ..record.io import read_report
    from .compare import compare_reports

    try:
        return compare_reports(baseline, read_report(report))
    except ScoreboardError as exc:
        print(f"scoreboard: warning: no comparison with the baseline: {exc}", file=sys.stderr)
        return None


def post_comment(head: dict, exit_code: int, comparison: dict | None, token: str) -> str:
    """Comment on the pull request: "created", "updated", "skipped" (no pull request, no token)
    or "failed" (said on stderr and in the step summary; the exit code is not changed)."""
    from ..redact import scrub_known
    from .github_comment import (
        CommentError,
        GitHub,
        comment_body,
        fork_of,
        marker,
        pull_request_number,
    )

    env = os.environ
    try:
        number = pull_request_number(env.get("GITHUB_EVENT_PATH"))
        if number is None:
            print("scoreboard: not a pull request event: no comment")
            return "skipped"
        if not token:
            print("scoreboard: no GITHUB_TOKEN: no comment")
            return "skipped"
        api = GitHub(env.get("GITHUB_API_URL", "https://api.github.com"), env.get("GITHUB_REPOSITORY", ""), token)
        done = api.upsert(number, comment_body(head, exit_code, comparison, footer()), marker(head["run"]["suite"]))
    except CommentError as exc:
        fork = fork_of(env.get("GITHUB_EVENT_PATH"), env.get("GITHUB_REPOSITORY", "")) \
            if exc.status == 403 and not exc.rate_limited else None
        why = (f" (the pull request comes from the fork {fork}: a `pull_request` workflow's token is read-only "
               "for a fork's pull request, so it cannot comment)") if fork else ""
        message = scrub_known(f"scoreboard: warning: could not comment on the pull request: {exc}{why} "
                              "(the job's result is the run's: exit code unchanged)")
        from ..record.mdtext import inline
        from ..record.terminal import printable

        print(printable(message), file=sys.stderr)

        append_summary(f"> ⚠️ {inline(message)}\n")  # the message may quote an API's error body
        return "failed"
    print(f"scoreboard: pull request #{number}: comment {done}")
    return done


def footer() -> str:
    """A link to the workflow run, when GitHub says which."""
    env = os.environ
    if env.get("GITHUB_SERVER_URL") and env.get("GITHUB_REPOSITORY") and env.get("GITHUB_RUN_ID"):
        url = f"{env['GITHUB_SERVER_URL']}/{env['GITHUB_REPOSITORY']}/actions/runs/{env['GITHUB_RUN_ID']}"
        return f"<sub>[workflow run]({url}): full report in the step summary and the uploaded artifact</sub>"
    return ""


def outputs(outcome, comment: str) -> dict[str, str]:
    """The step's outputs: absolute paths (upload-artifact resolves from the workspace, not the
    step's working directory), the pass rates, the verdict."""
    json_path = Path(outcome.paths["json"]).resolve()
    files = [str(Path(p).resolve()) for p in outcome.paths.values()]
    run_folder = json_path.with_suffix("")
    if run_folder.is_dir():
        files.append(str(run_folder))
    rates = {name: v.get("pass_rate") for name, v in outcome.head["summary"]["variants"].items()}
    only = next(iter(rates.values())) if len(rates) == 1 else None
    return {"report": str(json_path), "reports": "\n".join(files),
            "pass-rate": "" if only is None else f"{only:.4f}", "pass-rates": json.dumps(rates),
            "verdict": verdict(outcome.head, outcome.exit_code),
            "exit-code": str(outcome.exit_code), "comment": comment}


def verdict(head: dict, exit_code: int) -> str:
    """The step's verdict: the exit code's, or `dry-run` for a dry run that exited 0 (its gates
    were skipped and its figures are the mock's: it passed nothing)."""
    if exit_code == 0 and (head.get("run") or {}).get("dry_run"):
        return "dry-run"
    return VERDICT.get(exit_code, str(exit_code))


def write_outputs(values: dict[str, str]) -> None:
    """Append to $GITHUB_OUTPUT (a value with newlines in GitHub's delimited form)."""
    target = os.environ.get("GITHUB_OUTPUT")
    if not target:
        return
    lines = []
    for name, value in values.items():
        if "\n" in value:
            delimiter = f"ghadelimiter_{uuid.uuid4().hex}"
            lines.append(f"{name}<<{delimiter}\n{value}\n{delimiter}\n")
        else:
            lines.append(f"{name}={value}\n")
    try:
        with open(target, "a", encoding="utf-8") as handle:
            handle.write("".join(lines))
    except OSError as exc:  # the job's result is still the run's
        print(f"scoreboard: warning: cannot write the step's outputs to GITHUB_OUTPUT: {exc}", file=sys.stderr)


def append_summary(text: str) -> None:
    """Append Markdown to $GITHUB_STEP_SUMMARY (after the run's own report)."""
    target = os.environ.get("GITHUB_STEP_SUMMARY")
    if not target:
        return
    data = (text + "\n").encode("utf-8")
    room = SUMMARY_LIMIT - summary_size()
    if len(data) > room:  # past GitHub's limit the whole summary would be lost
        cut = data[:max(0, room - 200)]
        data = cut[:cut.rfind(b"\n") + 1] + "\n> ⚠️ cut short: GitHub shows at most 1 MiB of a step summary\n".encode()
        if len(data) > room:
            return
    try:
        with open(target, "ab") as handle:
            handle.write(data)
    except OSError as exc:
        print(f"scoreboard: warning: cannot append to GITHUB_STEP_SUMMARY: {exc}", file=sys.stderr)


def summary_size() -> int:
    """The size of $GITHUB_STEP_SUMMARY now (0 when unset or not there)."""
    target = os.environ.get("GITHUB_STEP_SUMMARY")
    try:
        return os.stat(target).st_size if target else 0
    except OSError:
        return 0


def fit_summary(start: int, paths: dict) -> None:
    """Keep what the run appended to $GITHUB_STEP_SUMMARY (from byte `start`) within GitHub's
    limit, less room for what follows: cut at a line's end, with a note naming the whole report,
    since GitHub shows nothing of a summary over the limit."""
    target = os.environ.get("GITHUB_STEP_SUMMARY")
    budget = max(0, SUMMARY_LIMIT - SUMMARY_RESERVE - start)
    if not target or summary_size() <= start + budget:
        return
    whole = Path(paths.get("md") or paths["json"]).name
    try:
        with open(target, "r+b") as handle:
            handle.seek(start)
            kept = handle.read(budget)
            kept = kept[:kept.rfind(b"\n") + 1]
            handle.seek(start + len(kept))
            handle.truncate()
            handle.write(f"\n> ⚠️ The report is cut short here: GitHub shows at most 1 MiB of a step summary. "
                         f"The whole report is {whole} in the uploaded artifact.\n".encode())
    except OSError as exc:
        print(f"scoreboard: warning: cannot fit GITHUB_STEP_SUMMARY within GitHub's limit: {exc}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
