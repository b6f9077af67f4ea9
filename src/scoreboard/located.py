"""The line of a setting in the file a person wrote, so an error about a suite's (or a task's, or
a graders file's) setting names `FILE:LINE` of the offending key, not only the file and field.

Settings are validated after parsing, where the lines are gone; an error that names its field
(`variants.fast.timeout_s`, `fail_under.2.min`, `entries[3]`) but no line is given one here: the
line of that key in the file, or of the nearest enclosing key the file holds (a required field
that is missing is named at its mapping's key). YAML and JSON (a JSON document is YAML's flow
style) read the lines from the YAML parser's marks; TOML from its `key =` and `[table]` lines.
"""

from __future__ import annotations

import re
from pathlib import Path

from .errors import ConfigError, ConfigErrors


def key_lines(text: str, suffix: str = ".yaml") -> dict[str, int]:
    """Dotted path (`gates.baseline`, `fail_under.2`) -> the line its key or item starts on; what
    could be found of a file that does not parse."""
    if suffix.lower() == ".toml":
        return _toml_lines(text)
    from .safeparse import ParseError, parse_yaml

    where: dict[tuple, int] = {}
    try:
        parse_yaml(text, None, core=True, where=where)
    except ParseError:
        pass  # the lines found before the problem still hold
    return {".".join(str(p) for p in path): line for path, line in where.items()}


def json_refusal(exc, text: str) -> tuple[str, int | None, str | None]:
    """(message, line, field) of a JSON document's ParseError: what the walk after parsing refuses
    (a key given twice, a number out of range) has no line of its own; the YAML reading of the
    same text finds it (a duplicate, both its lines), else the line of its field's key."""
    from .safeparse import ParseError, parse_yaml

    if exc.line is not None:
        return exc.message, exc.line, exc.field
    try:
        parse_yaml(text, None, core=True)
    except ParseError as again:
        if again.line is not None and exc.message.startswith("duplicate key") \
                and again.message.startswith("duplicate key"):
            return again.message, again.line, again.field
        if again.line is not None and exc.field and again.field == exc.field:
            return exc.message, again.line, exc.field  # a number out of range: the value's line
    return exc.message, line_of(exc.field, key_lines(text)), exc.field


def line_of(field: str | None, lines: dict[str, int]) -> int | None:
    """The line of a dotted field path (`[N]` taken as `.N`), or of its nearest enclosing key."""
    if not field or not lines:
        return None
    path = re.sub(r"\[(\d+)\]", r".\1", field).lstrip(".")
    while path:
        if path in lines:
            return lines[path]
        path = path.rpartition(".")[0]
    return None


def file_lines(path: str | Path) -> tuple[str, dict[str, int]]:
    """(the file read, its key lines) of a settings file; a folder means its suite.yaml. Read
    again, bounded, only when an error needs a line; ({}) when it cannot be read."""
    from .safefile import DEFAULT_MAX_FILE_BYTES, FileRefused, read_regular

    target = Path(path)
    if target.is_dir():
        target = target / "suite.yaml"
    try:
        text = read_regular(target, limit=DEFAULT_MAX_FILE_BYTES, limit_name="limits.max_file_bytes").decode("utf-8-sig")
    except (FileRefused, OSError, UnicodeDecodeError):
        return str(path), {}
    return (str(path) if target == Path(path) else str(target)), key_lines(text, target.suffix)


def with_lines(exc: ConfigError, file: str | None, lines: dict[str, int] | None = None,
               shown: str | None = None) -> ConfigError:
    """`exc` with the line of its field added to each of its errors about `file` that name a
    field and no line (`lines`: the file's key lines, read from the file when not given)."""
    if file is None:
        return exc
    errors = getattr(exc, "errors", None) or [exc]
    wanted = [e for e in errors if e.file == file and e.line is None and e.field and e.flag is None]
    if not wanted:
        return exc
    if lines is None:
        shown, lines = file_lines(file)
    shown = shown or file
    changed = []
    for one in errors:
        line = line_of(one.field, lines) if one in wanted else None
        changed.append(one if line is None else
                       ConfigError(one.detail, file=shown, line=line, case_id=one.case_id, field=one.field))
    if all(a is b for a, b in zip(changed, errors)):
        return exc
    if isinstance(exc, ConfigErrors):
        return ConfigErrors(changed, capped=exc.capped)
    return changed[0]


_FIELD = re.compile(r"field (?:'([^'\\]*)'|\"([^\"\\]*)\")")


def warning_lines(warnings: list[str], file: str | None) -> list[str]:
    """`warnings` with the line of its key added to each that names a field of `file`
    (`s.yaml, field 'variants.v1.params': ...` -> `s.yaml:5, field ...`), as with_lines does
    for errors; the file is read again only when one does."""
    head = f"{file}, "
    if file is None or not any(w.startswith(head + "field ") for w in warnings):
        return warnings
    shown, lines = file_lines(file)
    out = []
    for warning in warnings:
        found = _FIELD.match(warning, len(head)) if warning.startswith(head) else None
        line = line_of(found[1] if found[1] is not None else found[2], lines) if found else None
        out.append(warning if line is None else f"{shown}:{line}, {warning[len(head):]}")
    return out


_TABLE = re.compile(r"\[\s*([^\[\]]+?)\s*\]\s*(?:#.*)?")
_ARRAY = re.compile(r"\[\[\s*([^\[\]]+?)\s*\]\]\s*(?:#.*)?")
_KEY = re.compile(r"((?:[A-Za-z0-9_-]+|\"[^\"]*\"|'[^']*')(?:\s*\.\s*(?:[A-Za-z0-9_-]+|\"[^\"]*\"|'[^']*'))*)\s*=")


def _toml_keys(text: str) -> tuple:
    return tuple(part.strip().strip("\"'") for part in re.findall(r"\"[^\"]*\"|'[^']*'|[^.]+", text)
                 if part.strip())


def _toml_lines(text: str) -> dict[str, int]:
    """TOML's `key =` lines under their `[table]` and `[[array]]` headers (a line inside a
    multi-line string is skipped; keys of an inline table take the line of the key holding it)."""
    out: dict[str, int] = {}
    table: tuple = ()
    counts: dict[tuple, int] = {}
    in_string = None
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if in_string is not None:
            if line.count(in_string) % 2:
                in_string = None
            continue
        if not line or line.startswith("#"):
            continue
        found = _ARRAY.fullmatch(line)
        if found:
            path = _toml_keys(found[1])
            counts[path] = counts.get(path, -1) + 1
            table = path + (counts[path],)
            out.setdefault(".".join(path), number)
            out.setdefault(".".join(map(str, table)), number)
            continue
        found = _TABLE.fullmatch(line)
        if found:
            table = _toml_keys(found[1])
            out.setdefault(".".join(table), number)
            continue
        found = _KEY.match(line)
        if found:
            out.setdefault(".".join(map(str, table + _toml_keys(found[1]))), number)
            rest = line[found.end():]
            for quote in ('"""', "'''"):
                if rest.count(quote) % 2:
                    in_string = quote
    return out
