"""`scoreboard score`: score recorded agent runs (a transcript, or agent CLI exports) offline.

    scoreboard score TRANSCRIPT.json
    scoreboard score run1.jsonl run2.json --expect-contains "42" --required-tool Read
    scoreboard score --from codex out/*.jsonl --cases cases.json

A transcript file carries its own cases and runs (see scoreboard.cases.transcript_model). Any other
file is read as an agent CLI export (Claude Code `--output-format json` / `stream-json`,
Codex `exec --json`), detected from its content unless `--from` names the format; each
exported file is one run, whose id is the file name without its extension. Cases for
exports come from expectation flags (one case per file, every file held to the same
expectations) or from `--cases FILE` ({"cases": [...]} in the transcript's case shape,
matched to files by tag or id = file stem, else by position).

Exit codes: 0 every case passed; 1 invalid input (nothing written); 2 a case matched no
run (an execution error, in the report); 3 a case failed or was not assessed, or there are
no cases at all (the all-cases-pass rule needs at least one).
"""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

from .common import (
    add_format_flag,
    check_report_output,
    emit_report,
    number,
    out_stream,
    parse_formats,
    print_outcome,
)

NAME = "score"
HELP = "score recorded agent runs (a transcript or agent CLI exports) against their cases"
DESCRIPTION = __doc__

EXPORT_FORMATS = ("auto", "transcript", "claude-json", "claude-stream", "codex")


def add_report_arguments(p: argparse.ArgumentParser) -> None:
    """Flags shared by score and replay: where reports go and how results print."""
    p.add_argument("--output", metavar="FILE.json",
                   help="write the JSON report exactly here (created exclusively; other formats beside it)")
    p.add_argument("--output-dir", metavar="DIR", help="where reports go (default eval-results; "
                   "they land in DIR/<name>/)")
    add_format_flag(p, "json,md,html")
    p.add_argument("--name", help="report name (default: the transcript's file name without extension)")
    p.add_argument("--json", action="store_true", help="print the report JSON on stdout (the table goes to stderr)")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.add_argument("files", nargs="+", metavar="FILE",
                   help="a transcript JSON file, or one or more agent CLI exports")
    p.add_argument("--from", dest="source_format", choices=EXPORT_FORMATS, default="auto",
                   help="how to read FILE: transcript, claude-json, claude-stream, codex "
                        "(default auto: from the content)")
    p.add_argument("--max-file-bytes", type=number(int, above=0), default=None, metavar="BYTES",
                   help="the largest export file read (default 16 MiB; a long session log with images runs past it)")
    p.add_argument("--cases", metavar="FILE", help="cases for agent exports: {\"cases\": [...]} "
                   "with the transcript's case fields")
    g = p.add_argument_group("expectations for agent exports (every file must meet them)")
    g.add_argument("--expect-contains", action="append", metavar="TEXT", help="output contains TEXT; repeatable")
    g.add_argument("--forbid-contains", action="append", metavar="TEXT", help="output does not contain TEXT; repeatable")
    g.add_argument("--required-tool", action="append", metavar="NAME", help="tool NAME was called; repeatable")
    g.add_argument("--forbidden-tool", action="append", metavar="NAME", help="tool NAME was not called; repeatable")
    g.add_argument("--expect-status", metavar="STATUS", help="final status (default: completed; error scores failed runs)")
    # Per-case expectations, named apart from `run`'s whole-run budgets (--max-cost, --max-tokens);
    # the old spellings still work.
    g.add_argument("--expect-max-latency-ms", "--max-latency-ms", dest="max_latency_ms", type=number(float, above=0), metavar="MS",
                   help="each run's duration at most MS")
    g.add_argument("--expect-max-cost", "--max-cost", dest="max_cost", type=number(float, at_least=0), metavar="USD",
                   help="each run's estimated cost at most USD (unknown cost: not assessed)")
    g.add_argument("--expect-max-tokens", "--max-tokens", dest="max_tokens", type=number(int, at_least=0), metavar="N",
                   help="each run's input + output tokens at most N")
    add_report_arguments(p)


def expectations_from_flags(args: argparse.Namespace) -> dict:
    """The flags as transcript case fields."""
    out: dict = {}
    for flag, key in (("expect_contains", "expectedOutputContains"), ("forbid_contains", "forbiddenOutputContains"),
                      ("required_tool", "requiredTools"), ("forbidden_tool", "forbiddenTools"),
                      ("expect_status", "expectedStatus"), ("max_latency_ms", "maxLatencyMs"),
                      ("max_cost", "maxCost"), ("max_tokens", "maxTokens")):
        value = getattr(args, flag, None)
        if value is not None:
            out[key] = value
    return out


def report_formats(values: list[str] | None) -> list[str]:
    """--format values, or json, md and html."""
    return parse_formats(values) or ["json", "md", "html"]


def _is_export(path, limit: int | None = None) -> bool:
    """Whether the file reads as an agent export. A file that cannot be read at all (missing,
    over the size limit, a FIFO) is that one-line error now, whatever it was meant to be:
    guessing "a transcript" would only blame the flags for it."""
    from ..agents.exports import EXPORT_LIMIT_NAME, detect_format
    from ..errors import ConfigError
    from ..safefile import DEFAULT_MAX_FILE_BYTES, FileRefused, read_regular

    try:
        raw = read_regular(path, limit=limit or DEFAULT_MAX_FILE_BYTES, limit_name=EXPORT_LIMIT_NAME)
    except FileRefused as exc:
        raise ConfigError(f"file {exc.reason}", file=str(path)) from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        # A stray byte does not make an export a transcript: detect the format from the rest,
        # so the export reader names the line that is not UTF-8.
        text = raw.decode("utf-8-sig", errors="replace")
    return detect_format(text) is not None


def load_source(args: argparse.Namespace):
    """The Transcript to score: a transcript file, or agent exports with their cases."""
    from pathlib import Path

    from ..cases.transcript import load_exports, load_transcript
    from ..errors import ConfigError

    paths = [Path(f) for f in args.files]
    expectations = expectations_from_flags(args)
    fmt = args.source_format
    if fmt == "auto":
        # A single file is a transcript unless its content is recognisably an agent export,
        # so a broken transcript gets the transcript's own error message.
        as_transcript = len(paths) == 1 and not _is_export(paths[0], args.max_file_bytes)
    else:
        as_transcript = fmt == "transcript"
    if as_transcript:
        if len(paths) > 1:
            raise ConfigError("give one transcript file (several files are read as agent exports)", field="files")
        if expectations or args.cases:
            guessed = "this file is not a Claude Code or Codex export, so it is read as a transcript, which " \
                if fmt == "auto" else "a transcript "
            raise ConfigError(f"{guessed}carries its own cases: expectation flags and --cases apply to agent "
                              "exports (--from claude-json, claude-stream or codex names one)", file=str(paths[0]),
                              field="cases")
        return load_transcript(paths[0])
    return load_exports(paths, fmt, cases_file=args.cases, expectations=expectations, name=args.name,
                        max_file_bytes=args.max_file_bytes)


def output_of(args: argparse.Namespace) -> str | None:
    """--output, refused beside --output-dir."""
    from ..errors import ConfigError

    if args.output and args.output_dir:
        raise ConfigError("give --output or --output-dir, not both", field="output")
    check_report_output(args.output)
    return args.output


def case_rows(report: dict, matches: list[dict], run_label=None) -> list[tuple[str, str, str, str]]:
    """(case, matched run, status, reasons) per attempt, in report order."""
    by_case = {m["case_id"]: m for m in matches}
    rows = []
    for attempt in report["attempts"]:
        m = by_case.get(attempt["case_id"], {})
        if run_label is not None:
            run = run_label
        elif m.get("run_id"):
            run = f"{m['run_id']} ({m['matched_by']})"
        else:
            run = "-"
        if attempt.get("error"):
            reasons = attempt["error"]
        else:
            reasons = "; ".join(f"{g['grader']}: {g['reason']}" + ("" if g["passed"] is False else " (not assessed)")
                                for g in attempt.get("grades", []) if g["passed"] is not True)
        rows.append((attempt["case_id"], run, attempt["status"], reasons))
    return rows


def print_table(rows: list[tuple[str, ...]], headers: tuple[str, ...], out: TextIO, title: str | None = None) -> None:
    """A rich table on a terminal, tab-free aligned plain text otherwise; every cell as the
    terminal may print it (a run id or reason with ESC, CR or U+202E is shown escaped)."""
    from ..record.terminal import printable

    rows = [tuple(printable(str(c)) for c in row) for row in rows]
    title = printable(title) if title else title
    if out.isatty():
        from rich.console import Console
        from rich.table import Table

        table = Table(title=title)
        for h in headers:
            table.add_column(h, overflow="fold")
        for row in rows:
            table.add_row(*[_style(c) for c in row])
        Console(file=out).print(table)
        return
    if title:
        print(title, file=out)
    widths = [max([len(h)] + [len(str(r[i])) for r in rows]) for i, h in enumerate(headers)]
    widths[-1] = 0  # the last column is not padded
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip(), file=out)
    for row in rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip(), file=out)


def _style(cell: str) -> str:
    from rich.markup import escape

    colour = {"passed": "green", "failed": "red", "error": "red", "unassessed": "yellow"}.get(cell)
    return f"[{colour}]{cell}[/{colour}]" if colour else escape(str(cell))


def finish(outcome, rows: list[tuple[str, ...]], headers: tuple[str, ...], *, as_json: bool,
           extra_lines: list[str] | None = None) -> int:
    """Print the table, summary lines and report paths (stderr with --json); return the exit code."""
    out = out_stream(as_json)
    print_table(rows, headers, out)
    for line in extra_lines or []:
        print(line, file=out)
    print_outcome(outcome, to_stderr=as_json)
    if as_json:
        emit_report(outcome)
    return outcome.exit_code


def main(args: argparse.Namespace) -> int:
    from ..cases.transcript import transcript_suite
    from ..engine.pipeline import RunOptions, run
    from ..subjects.recorded import RecordedSubject

    from ..redact import inherited_secrets, remember, scrub_known

    formats = report_formats(args.format)  # bad flags before any file is read
    # an agent's export holds what its tools printed (`env`, a curl with its key): the agent ran
    # with this environment's credentials, which no report, log or store may hold
    remember(*inherited_secrets())
    transcript = load_source(args)
    subject = RecordedSubject.holding(transcript.recorded(), {"transcript": transcript.source})
    suite = transcript_suite(transcript, subject, variant="recorded", output_dir=args.output_dir,
                             formats=formats, name=args.name)
    from ..record.terminal import printable

    for warning in transcript.warnings:
        print(scrub_known(printable(f"scoreboard: warning: {warning}")), file=sys.stderr)
    if not suite.cases:
        print("scoreboard: the transcript has no cases: score fails (every case must pass, and there "
              "must be at least one)", file=sys.stderr)
    outcome = run(suite, RunOptions(argv=args.command_line, formats=tuple(formats), progress=False,
                                    require_all_pass=True, extra_run=transcript.run_info(),
                                    output_json=output_of(args)))
    rows = case_rows(outcome.report, transcript.matches)
    return finish(outcome, rows, ("case", "matched run", "status", "reasons"), as_json=args.json)
