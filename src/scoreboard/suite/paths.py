"""Where a suite's paths resolve, and which of them are confined (see safefile.py).

A path written in a suite file (`cases:`, `skill:`, a `recorded:` subject's file,
`gates.baseline`) is relative to the suite's folder and must stay inside the root: that folder,
or `--root DIR`. A path given as a flag is relative to the working directory and is the user's
own choice: it is not confined, but it must still be a regular file (or folder) so nothing
blocks or reads a device.

Code a suite names (`python:` modules, `command:` programs) is not confined: importing or
running it gives it the user's permissions whatever path it lives at, so a suite that names
code is trusted like a script. Confinement protects the user from the data files a suite or
case file names, not from code the user chose to run.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigError, did_you_mean, shorten
from ..safefile import FileRefused, check_regular, read_file, resolve_inside


@dataclass(frozen=True)
class Places:
    """The suite file's folder (the working directory without one), its name as shown in
    errors, and --root (None: each file's own folder is its root)."""

    suite_dir: Path
    source: str | None
    root: Path | None

    @classmethod
    def make(cls, suite_dir: Path, source: str | None, root: str | None) -> Places:
        """Places for a suite; a --root that is not a folder is one ConfigError."""
        if root is None:
            return cls(suite_dir, source, None)
        if "\x00" in root or not os.path.isdir(root):
            raise ConfigError("--root must name an existing folder", field="root")
        return cls(suite_dir, source, Path(os.path.realpath(root)))

    def root_for(self, folder: Path) -> Path:
        """The root of the paths a file in `folder` names."""
        return self.root if self.root is not None else folder

    def resolve(self, name: str, field: str, *, from_flag: bool, folder_ok: bool = False) -> Path:
        """A path named by the suite file (confined) or by a flag (relative to the working
        directory, not confined); either must be a regular file (or a folder, with folder_ok)."""
        try:
            if from_flag:
                return check_regular(Path(name), folder_ok=folder_ok)
            resolve_inside(name, self.suite_dir, self.root_for(self.suite_dir), folder_ok=folder_ok)
        except FileRefused as exc:
            head, _, last = field.rpartition(".")  # an item of a list (cases.1) is said as its list's
            raise ConfigError(f"{head if last.isdigit() else field} {shorten(name, 120)!r} {exc.reason}",
                              file=None if from_flag else self.source, field=field) from None
        return Path(name) if from_flag else self.suite_dir / name

    def inside(self, from_flag: bool) -> Path | None:
        """The root a file named by the suite must lie in when it is read (None for a flag's)."""
        return None if from_flag else self.root_for(self.suite_dir)

    def read(self, path: Path, field: str, *, from_flag: bool, limit: int, limit_name: str) -> bytes:
        """The bytes of a path `resolve` accepted, read again under the same rule."""
        try:
            return read_file(path, limit=limit, limit_name=limit_name, root=self.inside(from_flag))
        except FileRefused as exc:
            raise ConfigError(f"{field} {shorten(str(path), 120)!r} {exc.reason}",
                              file=None if from_flag else self.source, field=field) from None


def read_document(path: str | os.PathLike, what: str) -> str:
    """The text of a document a flag names (a graders, comparisons or reviews file): a regular
    UTF-8 file within the default limits.max_file_bytes; else one ConfigError naming it."""
    from .config import Limits

    limit = Limits().max_file_bytes
    try:
        data = read_file(path, limit=limit, limit_name="limits.max_file_bytes")
    except FileRefused as exc:
        raise ConfigError(f"{what} file {exc.reason}", file=str(path)) from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ConfigError(f"{what} file is not valid UTF-8", file=str(path)) from None


def no_cases(case_ids: list[str] | None, by_flag: bool = True) -> str:
    """Why a run has no cases at all, with a case file given to --case (or to the suite's
    `case:`, one letter short of `cases:`) named as one."""
    return "no cases: give --cases FILE or 'cases:' in the suite" + _case_file_hint(case_ids or [], by_flag)


def unknown_case(case_id: str, ids: set[str], by_flag: bool = True) -> str:
    """A --case id (or the suite's `case:` one) no case has: the close id, else a case file given
    to --case named as one."""
    return (f"{'--case names' if by_flag else 'names'} an unknown case id {case_id!r}"
            f"{did_you_mean(case_id, ids) or _case_file_hint([case_id], by_flag)}")


def select_ids(cases: list, all_cases: list, wanted_ids: list[str], by_flag: bool,
               source: str | None) -> list:
    """The cases `--case` (or the suite's `case:`) selects. A conversation runs whole: naming
    it, or any of its turns, selects every turn; naming a case that `expand` made into several
    (`fr` for `fr[lang=en]`, `fr[lang=de]`) selects every case made from it."""
    wanted = set(wanted_ids)
    conv_ids = {c.conversation["id"] for c in all_cases if c.conversation is not None}
    made_from = {c.expanded_from for c in all_cases if c.expanded_from is not None}
    missing = sorted(wanted - (ids := {c.id for c in all_cases} | conv_ids | made_from))
    if missing:
        raise ConfigError(unknown_case(missing[0], ids, by_flag), field="case", file=None if by_flag else source)
    whole = {c.conversation["id"] for c in all_cases
             if c.conversation is not None and (c.id in wanted or c.conversation["id"] in wanted)}
    return [c for c in cases if c.id in wanted or c.expanded_from in wanted
            or (c.conversation is not None and c.conversation["id"] in whole)]


def _case_file_hint(values: list[str], by_flag: bool = True) -> str:
    """`--case cases.jsonl` (one letter short of --cases) is a case-id filter: say so when a
    value names a file (or reads as a case file's name), in the words of the flag or of the suite
    key the value was given to."""
    for value in values:
        if os.path.isfile(value) or value.lower().endswith((".jsonl", ".ndjson", ".json", ".yaml", ".yml", ".csv")):
            if not by_flag:
                return f" (the suite's case: takes case ids; {value!r} is a case file: write cases: {value})"
            return f" (--case takes a case id; {value!r} is a case file: --cases {value})"
    return ""


def no_suite_yaml(folder: Path) -> str:
    """Why a folder given as a suite is none: it holds no suite.yaml (naming the suite file of
    another extension it holds, which a folder does not stand for)."""
    other = next((n for n in ("suite.yml", "suite.toml", "suite.json") if (folder / n).is_file()), None)
    return "is a directory without suite.yaml" + (f" (it holds {other}: give that file, {folder / other})"
                                                  if other else "")
