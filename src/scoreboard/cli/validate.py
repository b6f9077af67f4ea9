"""`scoreboard validate FILE`: check a case file, a gold directory or a whole suite without
running anything (exit 0 when valid, 1 with a one-line error naming the file, line, case and
field when not). A suite is checked as `run` would check it before its first attempt: cases,
graders, subjects and judge built, gate variants known, the baseline a readable report."""

from __future__ import annotations

import argparse

from ..words import plural
from .common import add_root_flag

NAME = "validate"
HELP = "check a case file or suite without running anything"
DESCRIPTION = __doc__


#: the variants validate's OK line names (the rest counted)
SHOWN_VARIANTS = 20


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", help="case file (JSONL, JSON or YAML), gold directory, or suite file (a folder holding "
                                 "suite.yaml: that suite, as run takes it)")
    add_root_flag(p)


def main(args: argparse.Namespace) -> int:
    """Load what FILE holds exactly as a run would; print what it found. Every error is
    reported (up to a cap), one line each, not only the first."""
    from pathlib import Path

    from ..cases import load_cases
    from ..cases.budget import suite_budget
    from ..errors import Collector, ConfigError
    from ..safefile import FileRefused, check_regular
    from ..suite.config import Limits, SuiteConfig
    from ..suite.grading import resolve_graders
    from ..suite.paths import Places

    path = Path(args.file)
    root = Places.make(Path.cwd(), None, args.root).root
    try:  # before guessing what the file holds: a FIFO or device is refused, never opened
        check_regular(path, folder_ok=True)
    except FileRefused as exc:
        raise ConfigError(exc.reason, file=str(path)) from None
    if path.suffix.lower() in (".yaml", ".yml", ".toml", ".json") and looks_like_suite(path):
        return _validate_suite(path, args.root)
    if path.is_dir() and (path / "suite.yaml").is_file():  # as `run DIR` and `plan DIR` take it
        return _validate_suite(path / "suite.yaml", args.root)
    errors, warnings = Collector(), []
    if path.is_dir():
        from ..cases.gold import load_gold_dir
        from ..suite.paths import no_suite_yaml

        if no_suite_yaml(path) != "is a directory without suite.yaml":  # a suite.yml there: that file
            raise ConfigError(no_suite_yaml(path), file=str(path))
        with suite_budget(Limits()):  # a file alone is held to what a suite of it would be
            try:
                cases, skipped = load_gold_dir(path, root=root)
            except ConfigError as exc:
                if "no document with a NAME.gold.json file in gold directory" not in str(exc):
                    raise
                raise ConfigError("holds no suite.yaml (a suite folder) and no document with a NAME.gold.json "
                                  "file (a gold directory)", file=str(path)) from None
        resolve_graders(SuiteConfig(), cases, errors=errors, warnings=warnings)
        errors.done()
        _warn(warnings)
        extra = f"; {plural(len(skipped), 'document')} without a gold file would be skipped" if skipped else ""
        print(f"OK: gold directory {path}: {plural(len(cases), 'case')}{extra}")
        return 0
    with suite_budget(Limits()):
        cases = load_cases(path, root=root, errors=errors)
    resolve_graders(SuiteConfig(), [c for c in cases if c.graders or c.has_expected], errors=errors,
                    warnings=warnings)
    errors.done()
    _warn(warnings)
    no_grader = sum(1 for c in cases if not c.graders and not c.has_expected)
    verb = "names" if no_grader == 1 else "name"
    note = (f" ({plural(no_grader, 'case')} {verb} no grader and no expected value: a suite must supply graders)"
            if no_grader else "")
    print(f"OK: {plural(len(cases), 'case')} in {path}{note}")
    return 0


def _warn(warnings: list[str]) -> None:
    import sys

    for warning in warnings:
        print(f"scoreboard: warning: {warning}", file=sys.stderr)


def _validate_suite(path, root: str | None) -> int:
    """Every check a run makes before its first attempt, the cross-references included; an
    unset API key is a warning (validating calls no model)."""
    from ..engine.baseline import load_baseline
    from ..engine.preflight import check_gate_settings
    from ..suite.load import load_suite

    suite = load_suite(path, {"root": root}, offline=True)
    check_gate_settings(suite)
    load_baseline(suite)
    _warn(suite.warnings)
    from ..record.terminal import printable

    names = [v.name for v in suite.variants[:SHOWN_VARIANTS]]
    if len(suite.variants) > SHOWN_VARIANTS:  # a prompts axis of thousands: one line, not a page
        names.append(f"… and {len(suite.variants) - SHOWN_VARIANTS:,} more")
    print(printable(f"OK: suite {suite.name}: {plural(len(suite.cases), 'case')}, "
                    f"{plural(len(suite.variants), 'variant')} ({', '.join(names)}), "
                    f"{plural(suite.config.runs, 'run')}"))
    return 0


def looks_like_suite(path) -> bool:
    """A case document holds case objects; a suite names case files (a path or a list of paths)."""
    from pathlib import Path

    from ..errors import ConfigError
    from ..suite.load import read_suite_file

    if Path(path).suffix.lower() == ".toml":  # only a suite is TOML: its own errors, not a case file's
        return True
    from ..suite.config import SuiteConfig

    suite_only = set(SuiteConfig.model_fields) - {"cases", "name", "description"}
    try:
        data, _ = read_suite_file(path)
    except ConfigError:
        # a JSON suite that does not parse (a key given twice, a number out of range) is a suite
        # still, when it names a setting only a suite has: its error names the line, as `run`
        # and `plan` say it (one case object, refused as a suite, is a case file)
        data = _lenient_json(path)
        return data is not None and bool(set(data) & suite_only)
    if isinstance(data, dict) and set(data) & suite_only:
        return True  # a setting only a suite has (subject, variants, graders...): its errors are a suite's
    cases = data.get("cases")
    if isinstance(cases, dict):  # a dataset reader {format, path} (a case document never has one)
        return "format" in cases
    if isinstance(cases, list):
        return bool(cases) and all(isinstance(c, str) or (isinstance(c, dict) and "format" in c) for c in cases)
    return True


def _lenient_json(path) -> dict | None:
    """What a `.json` file holds when read leniently (Python's reader takes a key twice and any
    number), so its shape can tell a suite from a case file; None when it holds no mapping."""
    import json
    from pathlib import Path

    from ..safefile import DEFAULT_MAX_FILE_BYTES, FileRefused, read_regular

    if Path(path).suffix.lower() != ".json":
        return None
    try:
        data = json.loads(read_regular(Path(path), limit=DEFAULT_MAX_FILE_BYTES,
                                       limit_name="limits.max_file_bytes").decode("utf-8-sig"))
    except (FileRefused, OSError, ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None
