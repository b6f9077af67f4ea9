"""`scoreboard verify`: recompute a report offline and name every mismatch.

    scoreboard verify REPORT.json [--output NEW.json] [--json]

Recomputes, from the report alone: input hashes, the fixture hash, output hashes, every grade a
mechanical grader gives (model graders are listed as not recomputable offline), statuses, the
summary, the gates, the lifecycle (duplicates, unplanned or reordered attempts, a completed run
with attempts that did not run) and request counts against the recorded budget. Each mismatch
is named by its JSON path. A checkpoint (status running) can pass as internally consistent and
is reported as partial, not complete.

Hashes prove internal consistency only; they do not authenticate a provider or a run.

Exit codes: 0 no mismatch; 1 a mismatch, or the file is not a readable report.
"""

from __future__ import annotations

import argparse

NAME = "verify"
HELP = "recompute a report's hashes, grades, summary and lifecycle offline; name every mismatch"
DESCRIPTION = __doc__


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("report", metavar="REPORT.json", help="the report to verify")
    p.add_argument("--output", metavar="NEW.json",
                   help="save the revalidated report with a 'verification' section (created exclusively; "
                        "only when verification passes)")
    p.add_argument("--json", action="store_true", help="print the verification as JSON")
    p.add_argument("--store", nargs="?", const="", metavar="PATH|URL",
                   help="also check the run stored in this history store against the report (no value: the "
                        "default store)")


def main(args: argparse.Namespace) -> int:
    import json
    import sys
    from pathlib import Path

    from ..engine.pipeline import now_iso
    from ..errors import ConfigError
    from ..record.files import write_new
    from ..record.io import dumps_report, load_report
    from ..record.verify import render_text, verify_report

    if args.output and Path(args.output).exists():
        raise ConfigError("refusing to overwrite an existing file", file=args.output)
    report = load_report(args.report)
    result = verify_report(report, base_dir=Path(args.report).resolve().parent)
    saved = None
    if args.output and result.ok:
        revalidated = {k: v for k, v in report.items() if k != "verification"}
        revalidated["verification"] = {"verified_at": now_iso(), "ok": result.ok, "status": result.status,
                                       "partial": result.partial, "mismatches": result.mismatches,
                                       "not_recomputable": result.not_recomputable, "checked": result.checked,
                                       "note": result.to_dict()["note"]}
        saved = write_new(args.output, dumps_report(revalidated, indent=None))
    stored = _stored(args)
    if args.json:
        out = {"report": args.report, **result.to_dict(), "saved": str(saved) if saved else None}
        if stored is not None:
            out["stored"] = stored.to_dict()
        sys.stdout.write(json.dumps(out, ensure_ascii=False, indent=1) + "\n")
    else:
        sys.stdout.write(render_text(args.report, result))
        if saved:
            print(f"saved: {saved}")
        elif args.output:
            print(f"not saved: {args.output} (verification failed)")
        if stored is not None:
            print(f"stored run in {args.store or 'the history store'}: "
                  + ("matches the report" if stored.ok else f"{len(stored.mismatches)} mismatch(es)"))
            for line in stored.mismatches:
                print(f"  {line}")
    return 0 if result.ok and (stored is None or stored.ok) else 1


def _stored(args: argparse.Namespace):
    """--store: the stored run of this report checked against it (history store, issue 18)."""
    if args.store is None:
        return None
    from ..store.check import check_stored
    from ..store.locate import open_existing

    store = open_existing(args.store or None)
    try:
        return check_stored(store, args.report)
    finally:
        store.close()
