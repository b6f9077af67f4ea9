"""`scoreboard store`: the history store behind `history` and `view`.

    scoreboard store import eval-results/ [more reports or folders]   back-fill runs from reports
    scoreboard store verify RUN_OR_REPORT                              check a stored run against its report
    scoreboard store reviews [--run RUN] [--kind human] --output FILE  export reviews (`import reviews` reads them)
    scoreboard store tag RUN TAG [TAG ...] [--remove]                  label a run
    scoreboard store info                                              where it is, schema version, counts

Every sub-command takes --store PATH|URL, before or after its name (default: SCOREBOARD_STORE,
else .scoreboard/history.sqlite). Importing is idempotent: a report already stored (same SHA-256)
is left as it is (`--replace` stores it again); a changed report replaces its run, but not a completed
run with an earlier state of it (a checkpoint) unless --replace.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

NAME = "store"
HELP = "the history store: import reports, verify a stored run, export reviews, tag runs"
DESCRIPTION = __doc__


#: the rule every tag keeps, said in each --help that takes one
TAG_RULE = "a tag is 1 to 100 characters, not only spaces, with no line break or control character"
_MAX_TAG = 100


def tag_arg(value: str) -> str:
    """A tag given on the command line, or argparse's one-line refusal saying the rule."""
    import unicodedata

    shown = repr(value[:40]) + ("…" if len(value) > 40 else "")
    if not value.strip():
        raise argparse.ArgumentTypeError(f"{'empty' if not value else 'blank'} tag {value!r}: {TAG_RULE}")
    if len(value) > _MAX_TAG:
        raise argparse.ArgumentTypeError(f"tag {shown} is {len(value)} characters: {TAG_RULE}")
    bad = next((c for c in value if unicodedata.category(c) in ("Cc", "Cs", "Zl", "Zp")
                or "\u202a" <= c <= "\u202e" or "\u2066" <= c <= "\u2069"), None)
    if bad is not None:
        name = unicodedata.name(bad, "")
        raise argparse.ArgumentTypeError(f"tag {shown} holds U+{ord(bad):04X}{f' ({name})' if name else ''}: "
                                         f"{TAG_RULE}")
    return value


def _store_flag(p: argparse.ArgumentParser) -> None:
    # before the sub-command (`store --store X info`, as `history --store X`) or after it; a
    # sub-command's own default would overwrite the value given before it, so it has none
    p.add_argument("--store", metavar="PATH|URL", default=argparse.SUPPRESS, help="the history store (default: "
                   "SCOREBOARD_STORE, else .scoreboard/history.sqlite)")
    p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--store", metavar="PATH|URL", help="the history store, here or after the sub-command "
                   "(default: SCOREBOARD_STORE, else .scoreboard/history.sqlite)")
    sub = p.add_subparsers(dest="store_command", metavar="COMMAND", parser_class=type(p))
    sub.required = True
    s = sub.add_parser("import", help="store runs from report files (folders are searched for reports)",
                       description="store runs from report files (folders are searched for reports)")
    s.add_argument("paths", nargs="+", metavar="PATH", help="a report JSON file or a folder such as eval-results/")
    s.add_argument("--tag", action="append", default=[], type=tag_arg,
                   help=f"tag every run of the reports named, one already stored too; repeatable ({TAG_RULE})")
    s.add_argument("--replace", action="store_true",
                   help="store each run again from its report even when that report is already stored (a stored "
                        "copy changed or damaged since: `store verify` names what differs)")
    s.add_argument("--json", action="store_true", help="print what was done as JSON")
    _store_flag(s)
    s = sub.add_parser("verify", help="check a stored run against its report file (and the report itself)",
                       description="check a stored run against its report file (and the report itself)")
    s.add_argument("run", metavar="RUN_OR_REPORT", help="a run (key, run id, SUITE/RUN_ID) or a report file")
    s.add_argument("--report", metavar="REPORT.json", help="the report to check against (default: where the run "
                   "was stored from)")
    s.add_argument("--json", action="store_true", help="print the check as JSON")
    _store_flag(s)
    s = sub.add_parser("reviews", help="export stored reviews as the file `scoreboard import reviews` reads",
                       description="export stored reviews as the file `scoreboard import reviews` reads")
    s.add_argument("--run", help="only reviews of this run's outputs")
    s.add_argument("--kind", choices=["human", "model"], help="only this reviewer kind")
    s.add_argument("--output", required=True, metavar="FILE.json", help="where to write them (created exclusively; FILE.csv: a sheet, "
                   "one row per review); - is stdout")
    _store_flag(s)
    s = sub.add_parser("tag", help="add (or --remove) tags on a stored run",
                       description="add (or --remove) tags on a stored run")
    s.add_argument("run", help="a run (key, run id or SUITE/RUN_ID)")
    s.add_argument("tags", nargs="+", metavar="TAG", type=tag_arg, help=f"the tags ({TAG_RULE})")
    s.add_argument("--remove", action="store_true", help="remove the tags instead")
    _store_flag(s)
    s = sub.add_parser("info", help="where the store is, its schema version and what it holds",
                       description="where the store is, its schema version and what it holds")
    s.add_argument("--json", action="store_true", help="print as JSON")
    _store_flag(s)


def report_files(paths: list[str]) -> list[Path]:
    """Report files named, or found under folders (`*.json` whose start says scoreboard.report)."""
    from ..errors import ConfigError

    found: list[Path] = []
    for name in paths:
        path = Path(name)
        if path.is_dir():
            for candidate in sorted(path.rglob("*.json")):
                if candidate.is_file() and not candidate.is_symlink() and _is_report(candidate):
                    found.append(candidate)
        elif path.exists() or path.is_symlink():
            found.append(path)  # not a regular file (a FIFO, a device, a dangling link): reading it says which
        else:
            raise ConfigError("no such file or folder", file=name)
    return found


_MARK = b'"scoreboard.report/'
#: how a report scoreboard wrote begins (compact or indented)
_OWN = re.compile(rb'(?:\xef\xbb\xbf)?\s*\{\s*"schema"\s*:\s*"scoreboard\.report/')


def _is_report(path: Path) -> bool:
    """A JSON object whose top-level `schema` is a report's. scoreboard writes `schema` first, so
    its own reports say so in their first bytes; a report whose keys another tool reordered
    (`jq -S`: `attempts` first) was skipped without a word, and a file naming a report's schema
    inside, near its start, was taken for one. Any other file is read for the mark, and only one
    holding it anywhere is parsed for its top-level `schema`."""
    try:
        with open(path, "rb") as handle:
            start = handle.read(256)
            if _OWN.match(start):
                return True
            if not start.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{"):
                return False
            tail = start
            while _MARK not in tail:
                chunk = handle.read(1 << 20)
                if not chunk:
                    return False
                tail = tail[-len(_MARK):] + chunk
            handle.seek(0)
            return _top_level_schema(handle).startswith("scoreboard.report/")
    except OSError:
        return False


def _top_level_schema(handle) -> str:
    """The top-level `schema` string of a JSON object, read as a stream ("" when it has none)."""
    import ijson

    try:
        for prefix, event, value in ijson.parse(handle):
            if prefix == "schema":
                return value if event == "string" else ""
    except ijson.JSONError:
        return ""
    return ""


def main(args: argparse.Namespace) -> int:
    from ..store.locate import open_existing, open_history

    command = args.store_command
    store = open_history(args.store, tags=getattr(args, "tag", None) or ()) if command == "import" \
        else open_existing(args.store)
    try:
        return {"import": _import, "verify": _verify, "reviews": _reviews, "tag": _tag, "info": _info}[command](
            store, args)
    finally:
        store.close()


def _import(store, args) -> int:
    import json

    from ..errors import ConfigError
    from ..record.terminal import printable
    from ..store.db import StoreLost, said

    files = report_files(args.paths)
    done: dict[str, list[str]] = {"stored": [], "replaced": [], "unchanged": [], "failed": []}
    errors = []
    broken = False
    lost = None
    for i, path in enumerate(files):
        try:
            done[store.store_report(path, replace=args.replace)].append(str(path))
        except StoreLost as exc:  # the server is gone: the rest cannot be stored either
            done["failed"].extend(str(p) for p in files[i:])
            lost = _lost_line(store, args, exc, len(files) - i)
            broken = True
            break
        except ConfigError as exc:
            done["failed"].append(str(path))
            errors.append(str(exc))
        except MemoryError:  # the report's own size (one huge output), not the store: the others go on
            done["failed"].append(str(path))
            errors.append(str(ConfigError("report is too large to read in the memory available", file=str(path))))
        except Exception as exc:  # noqa: BLE001 - the store failed on this file: said, and the others go on
            done["failed"].append(str(path))
            errors.append(f"{path}: the store failed: {type(exc).__name__}: {said(exc)}")
            broken = True
    if args.json:
        sys.stdout.write(json.dumps({"store": store.location, **done, "errors": errors + ([lost] if lost else [])},
                                    indent=1) + "\n")
    else:
        print(f"{store.location}: {len(done['stored'])} stored, {len(done['replaced'])} replaced, "
              f"{len(done['unchanged'])} already stored (unchanged), {len(done['failed'])} not stored")
        for line in errors:
            print(printable(f"  not stored: {line}"), file=sys.stderr)
    if lost:
        print(printable(f"scoreboard: error: {lost}"), file=sys.stderr)
    return 2 if broken else 1 if errors else 0


def _lost_line(store, args, exc, left: int) -> str:
    """The store went away part way (exit 2, an execution failure): which store, what it said, and
    the import to run again once it is back (a report already stored is left as it is)."""
    import shlex

    rerun = " ".join(["scoreboard store import", *map(shlex.quote, args.paths),
                      *(["--store", shlex.quote(store.location)] if args.store else [])])
    return (f"the store {store.location} failed during the import ({exc.detail}); {left} report(s) not stored: "
            f"when it is back, run again: {rerun}")


def _verify(store, args) -> int:
    import json
    import shlex

    from ..errors import ConfigError
    from ..record.io import load_report
    from ..record.terminal import printable  # the report's path may come from the store's row
    from ..record.verify import verify_report
    from ..store.check import check_stored

    report = args.report
    if report is None and Path(args.run).is_file():
        report = args.run
    if report is None:
        key = store.resolve(args.run)
        row = store.db.one("SELECT report_path FROM runs WHERE key = ?", (key,))
        report = row[0] if row and row[0] else None
        if report is None or not Path(report).is_file():
            raise ConfigError(f"the run's report is not here ({report or 'never written'}): give --report FILE",
                              field="report")
    check = check_stored(store, report)
    own = verify_report(load_report(report))
    if args.json:
        sys.stdout.write(json.dumps({**check.to_dict(), "report_verification": own.to_dict()}, indent=1) + "\n")
    else:
        print(printable(f"stored run {check.key or '(none)'} against {report}: "
                        + ("matches" if check.ok else f"{check.count} mismatch(es)")))
        for line in check.mismatches:
            print(printable(f"  {line}"))
        if check.key is not None and not check.ok:
            print(printable(f"  to store the run again from its report: scoreboard store import --replace "
                            f"{shlex.quote(str(report))}" + (f" --store {shlex.quote(store.location)}" if args.store
                                                             else "")))
        print(f"  checked: {', '.join(f'{k} {v}' for k, v in check.checked.items())}")
        print(printable(f"  the report itself: "
                        f"{'verifies' if own.ok else f'{len(own.mismatches)} mismatch(es) (scoreboard verify {report})'}"))
    return 0 if check.ok and own.ok else 1


def _reviews(store, args) -> int:
    from ..jsonio import dumps_line
    from ..judges.reviews_csv import is_csv, write_reviews_csv
    from ..record.files import write_output

    key = store.resolve(args.run) if args.run else None
    entries = store.reviews(run=key, kind=args.kind)
    if is_csv(args.output):  # a sheet to edit and import again (judges/reviews_csv.py)
        text = write_reviews_csv(entries)
    else:
        text = dumps_line({"version": "scoreboard-store", "entries": entries})
    if args.output == "-":
        sys.stdout.write(text.decode())  # dumps_line gives UTF-8 bytes
        print(f"{len(entries)} review(s) written to stdout", file=sys.stderr)
        return 0
    path = write_output(args.output, text)
    print(f"{len(entries)} review(s) written to {path}")
    return 0


def _tag(store, args) -> int:
    unchanged = store.tag(args.run, args.tags, remove=args.remove)
    changed = [t for t in dict.fromkeys(args.tags) if t not in unchanged]
    if changed:
        print(f"{'removed' if args.remove else 'tagged'}: {', '.join(changed)}")
    if unchanged:  # a tag to remove the run never had (a typo) is not reported as removed
        print(f"{'not on the run' if args.remove else 'already tagged'}: {', '.join(unchanged)}")
    return 0


def _info(store, args) -> int:
    import json

    from ..store.db import schema_version

    counts = {t: store.db.one(f"SELECT COUNT(*) FROM {t}")[0] for t in ("runs", "attempts", "reviews")}
    info = {"store": store.location, "kind": store.name, "schema_version": schema_version(store.db), **counts}
    if args.json:
        sys.stdout.write(json.dumps(info, indent=1) + "\n")
    else:
        print("  ".join(f"{k}: {v}" for k, v in info.items()))
    return 0
