"""`scoreboard rescore`: grade a report's recorded outputs again, with no subject call.

    scoreboard rescore REPORT.json                         # pure re-grade with the report's graders
    scoreboard rescore REPORT.json --graders graders.yaml  # new or changed graders
    scoreboard rescore REPORT.json --graders g.json --output rescored.json

--graders FILE (YAML or JSON) is either a list of grader specs for every case, or
{"default": [...], "cases": {"case-id": [...]}} (cases it does not name keep their graders).
The new report's plan holds the new graders; run.rescore records the source report (path,
run id, SHA-256) and the previous graders. Outputs, subject errors and measurements are the source's:
no subject request is made. Model graders (llm-judge, rubric-score, pointwise, pairwise) run
only with --allow-judge; without it the command stops before anything runs.

Exit codes: as `run` (0 passed, 1 invalid input: nothing written, 2 errors or a stopped
source, 3 a gate failed).
"""

from __future__ import annotations

import argparse

from ..words import plural
from .common import add_format_flag, check_report_output, finish, judge_spec, number, out_stream, parse_formats

NAME = "rescore"
HELP = "grade a report's recorded outputs again (same or new graders); no subject is called"
DESCRIPTION = __doc__


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("report", metavar="REPORT.json", help="the source report")
    p.add_argument("--graders", metavar="FILE", help="grader specs (YAML or JSON): a list for every case, "
                   "or {default: [...], cases: {id: [...]}}; default: the report's own")
    p.add_argument("--allow-judge", action="store_true", help="allow graders that call a model")
    p.add_argument("--judge", metavar="SPEC", help="the judge subject for model graders (with --allow-judge)")
    p.add_argument("--judge-runs", type=number(int, at_least=1), metavar="K", help="ask each judgment K times")
    p.add_argument("--max-requests", type=number(int, at_least=0), metavar="N", help="request budget for the judges")
    p.add_argument("--output", metavar="NEW.json", help="write the JSON report exactly here (created exclusively; "
                   "'-' is refused: --json prints the report on stdout)")
    p.add_argument("--output-dir", metavar="DIR", help="where reports go (default eval-results)")
    add_format_flag(p, "json")
    p.add_argument("--json", action="store_true", help="print the report JSON on stdout (human lines go to stderr)")


def main(args: argparse.Namespace) -> int:
    from ..engine.reruns import rescore
    from ..errors import ConfigError
    from ..record.terminal import printable

    if args.output and args.output_dir:
        raise ConfigError("give --output or --output-dir, not both", field="output")
    check_report_output(args.output)
    outcome = rescore(args.report, graders_file=args.graders, allow_judge=args.allow_judge,
                      output=args.output, output_dir=args.output_dir, formats=parse_formats(args.format),
                      argv=args.command_line, judge=judge_spec(args.judge), judge_runs=args.judge_runs,
                      max_requests=args.max_requests)
    info = outcome.head["run"]["rescore"]
    changed = info["changed_cases"]
    print(printable(f"rescored {args.report} (run {info['source_run_id']}): graders changed for {len(changed)} of "
                    f"{plural(len(info['previous_graders']), 'case')}; no subject request was made"),
          file=out_stream(args.json))
    was, now = info.get("source_statistics_version"), outcome.head["summary"].get("methods", {}).get("version")
    if was != now:
        print(f"statistics computed with version {now}; the source's summary used "
              f"{'no stated version' if was is None else f'version {was}'}, so its figures may differ for "
              "that reason alone (README: Statistics)", file=out_stream(args.json))
    return finish(args, outcome)
