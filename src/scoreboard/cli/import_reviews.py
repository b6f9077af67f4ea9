"""`scoreboard import reviews REPORT.json REVIEWS.json --output NEW.json`: attach reviews made
elsewhere (people or models) to a report's outputs; no request is made.

Errors are raised as ConfigError (exit 1, one line, nothing written); the CLI prints them.
"""

from __future__ import annotations

import argparse

from ..words import plural
from .common import add_format_flag, check_report_output, emit_report, parse_formats

HELP = "attach human or model reviews of a report's outputs, bound by hashes (no request is made)"
DESCRIPTION = """Attach reviews of a report's outputs made elsewhere, by people or by models.

REVIEWS.json is {"version"?: "...", "entries": [...]} or a bare list of entries, each
{case_id, input_hash, output_hash, reviewer_id, reviewer_kind: "human" | "model",
rubric_version, ratings, verdict?: true | false, notes}; ratings name only correctness,
usefulness, coherence and creativity, each an integer 1-5 or null (not assessed; one left out is
null). At most 500 entries (--max-entries). Copy case_id, input_hash and output_hash from the
report: an attempt's output_hash, or its output_text_hash (SHA-256 of the canonical JSON string
of the output text alone). A reviewer_id or rubric_version is at most 200 characters, not blank,
without control characters. An unknown field, a case or hash that does not match the report, or a
duplicate (same case, output hash, reviewer id, reviewer kind and rubric version: one label may
review once as human and once as model) stops the import: exit 1, nothing written. A note is
not blank, at most 10,000 characters, without NUL. REVIEWS.csv (a name ending in .csv) is a sheet
as `scoreboard store reviews --output FILE.csv` writes it: one row per review, the columns above
with the four ratings as columns of their own; errors name its line, row and column.

The new report keeps human and model reviews apart (report.reviews.human / .model, counted
apart in summary.reviews); no aggregate score is made from them. When judge verdicts and human
verdicts cover the same outputs, summary.judge_agreement gives the confusion matrix, Cohen's
kappa, the judge's true and false positive rates and its pass rate corrected for judge error
(Rogan-Gladen) with a bootstrap interval. Matching hashes establish internal consistency only:
they do not authenticate a reviewer or a review."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The flags of `import reviews`."""
    p.add_argument("report", metavar="REPORT.json", help="the report whose outputs were reviewed")
    p.add_argument("reviews", metavar="REVIEWS.json", help="the reviews")
    p.add_argument("--output", required=True, metavar="NEW.json", help="the new report (created exclusively)")
    p.add_argument("--max-entries", type=int, metavar="N", default=500,
                   help="the most entries the reviews file may hold (default 500)")
    add_format_flag(p, "json")
    p.add_argument("--json", action="store_true", help="print the new report JSON on stdout (human lines go to stderr)")


def main(args: argparse.Namespace) -> int:
    """Import the reviews; print what was attached and where the new report is."""
    import sys

    from ..engine.reruns import import_reviews
    if args.max_entries < 1:
        from ..errors import ConfigError

        raise ConfigError(f"--max-entries takes a positive number, got {args.max_entries}", field="max_entries")
    check_report_output(args.output)
    report, paths = import_reviews(args.report, args.reviews, args.output, argv=args.command_line,
                                   formats=parse_formats(args.format), max_entries=args.max_entries)
    out = sys.stderr if args.json else sys.stdout
    info = report["run"]["reviews_imported"][-1]
    print(f"imported {plural(info['entries'], 'review')} from {args.reviews} ({info['human']} human, {info['model']} model); "
          "no request was made", file=out)
    agreement = report["summary"].get("judge_agreement")
    if agreement:
        kappa = agreement["kappa"]
        corrected = agreement["corrected_pass_rate"]
        rate, ci = corrected["value"], corrected.get("ci") or {}
        # the corrected rate is said with its interval, as every figure is (or why there is none)
        if rate is None:
            said = f"n/a ({corrected['why']})" if corrected.get("why") else "n/a"
        elif ci.get("low") is None or ci.get("high") is None:
            said = f"{rate * 100:.1f}% (no interval: every resample left the correction undefined)"
        else:
            said = (f"{rate * 100:.1f}% [95% CI {ci['low'] * 100:.1f}%–{ci['high'] * 100:.1f}%, bootstrap over "
                    f"cases]")
        cases = agreement.get("cases")
        print(f"  judge vs human on {agreement['n']} outputs"
              + (f" of {plural(cases, 'case')}" if isinstance(cases, int) else "")
              + f": kappa {'n/a' if kappa is None else f'{kappa:.2f}'}, corrected judge pass rate {said}"
              + (f" ({agreement['note']})" if agreement.get("note") else ""), file=out)
    for fmt, path in paths.items():
        print(f"  {fmt}: {path}", file=out)
    if args.json:
        emit_report(paths)
    return 0
