"""Case files -> raw case records with their line numbers: one reader per format (JSONL, or a
JSON/YAML `{"cases": [...]}` document), chosen by the file's extension and content.

A record that cannot be parsed is one ConfigError naming the file, the line (or position), the
case id and the field; cases/loader.py validates the records into Cases.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import Collector, ConfigError
from ..lineends import BARE_CR, bare_cr_lines
from ..safefile import FileRefused, not_utf8, read_file
from ..located import json_refusal, key_lines, line_of
from ..safeparse import ParseError, parse_json, parse_toml, parse_yaml
from ..suite.config import Limits
from . import budget as _budget

_DOC_KEYS = {"cases", "version", "name", "description"}


def read_user_file(path: Path, what: str, limit: int, limit_name: str = "limits.max_file_bytes", *,
                   root: Path | None = None) -> bytes:
    """The bytes of a file a user named (`what`: "case", "CSV", ...): a regular file within
    `limit`; with `root`, one named inside another file, which must also lie inside root.
    Anything else is one ConfigError naming the file."""
    try:
        return read_file(path, limit=limit, limit_name=limit_name, root=root)
    except FileRefused as exc:
        raise ConfigError(f"{what} file {exc.reason}", file=str(path)) from None


def _read_text(path: Path, limits: Limits, root: Path | None) -> str:
    data = read_user_file(path, "case", limits.max_file_bytes, root=root)
    tally = _budget.current()
    if tally is not None:
        tally.read(len(data), str(path))
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ConfigError(not_utf8(data, exc.start), file=str(path), line=line) from None


def _parse_problem(exc: ParseError, shown: str, line: int | None, record: Any = None) -> ConfigError:
    """A bounded-parsing refusal as one line, naming the case by its id when it has one."""
    case_id = record.get("id") if isinstance(record, dict) and isinstance(record.get("id"), str) else None
    return ConfigError(exc.message, file=shown, line=exc.line or line, case_id=case_id, field=exc.field)


def _jsonl_records(text: str, shown: str, limits: Limits,
                   errors: Collector | None = None) -> Iterator[tuple[int, Any]]:
    # Split on "\n" only: str.splitlines() also breaks at U+2028, U+0085, form feed..., which
    # JSON allows unescaped inside strings. A trailing "\r" (CRLF) is JSON whitespace.
    if bare_cr_lines(text):
        problem = ConfigError(BARE_CR, file=shown, line=1)
        if errors is None:
            raise problem
        errors.add(problem)
        return
    for number, raw in enumerate(text.split("\n"), start=1):
        if not raw.strip():
            continue
        try:
            value = parse_json(raw, limits)
        except ParseError as exc:
            exc.line = None  # a line number within this one line: the file's is `number`
            if exc.partial is None and "control character" not in exc.message:  # perhaps a case over several lines
                exc.message += _split_object_hint(raw, exc)
            problem = _parse_problem(exc, shown, number, exc.partial)
            if errors is None:
                raise problem from None
            errors.add(problem)  # the other lines are still checked
            continue
        yield number, value


def _split_object_hint(raw: str, exc: ParseError) -> str:
    """A case written over several lines (as a JSON document would be) is not JSONL."""
    stripped = raw.strip()
    if stripped.startswith("{") and not stripped.endswith("}") or stripped in ("}", "]", "},") \
            or stripped.startswith(('"', "[")) and not stripped.startswith("[{"):
        return (" (in JSONL each case is one whole JSON object on one line; write a case over several "
                'lines only in a JSON document {"cases": [...]})')
    return ""


def one_case_hint(doc: Any) -> str | None:
    """What to write instead when a document holds case objects in the wrong shape: one case
    object, or a bare list of them (a case document is {"cases": [...]})."""
    case_keys = {"id", "input", "expected", "turns", "conversation"}
    if isinstance(doc, dict) and "cases" not in doc and "id" in doc and set(doc) & (case_keys - {"id"}):
        return ('this file holds one case object; a case document is {"cases": [{...}, ...]}, '
                "or write JSONL: one case object per line")
    if isinstance(doc, list) and doc and all(isinstance(c, dict) and "id" in c for c in doc):
        return ('this file holds a bare list of cases; wrap it as {"cases": [...]}, '
                "or write JSONL: one case object per line")
    return None


def _in_document(exc: ParseError, doc: Any, lines: list, shown: str) -> ConfigError:
    """A refusal inside `cases: [...]` names the case (line, id) and the field within it."""
    path = exc.path
    if len(path) >= 2 and path[0] == "cases" and isinstance(path[1], int) and isinstance(doc, dict):
        items = doc.get("cases")
        record = items[path[1]] if isinstance(items, list) and path[1] < len(items) else None
        line = lines[path[1]] if path[1] < len(lines) else None
        rest = ParseError(exc.message, line=exc.line, path=path[2:])
        return _parse_problem(rest, shown, line, record)
    return ConfigError(exc.message, file=shown, line=exc.line, field=exc.field)


def _document_records(text: str, shown: str, is_yaml: bool, limits: Limits) -> Iterator[tuple[int | None, Any]]:
    lines: list[int | None] = []
    if is_yaml:
        try:
            doc, item_lines = parse_yaml(text, limits)
        except ParseError as exc:
            raise _in_document(exc, exc.partial, [], shown) from None
        lines = list(item_lines.get("cases", []))
    else:
        try:
            doc = parse_json(text, limits)
        except ParseError as exc:
            if exc.line is None and exc.message.startswith("duplicate key"):
                # found after parsing (no line of its own): the YAML reading of the text names both lines
                exc.message, exc.line, _ = json_refusal(exc, text)
            partial = exc.partial
            found = _json_case_lines(text) if isinstance(partial, dict) and isinstance(partial.get("cases"), list) else []
            raise _in_document(exc, partial, found, shown) from None
        if isinstance(doc, dict) and isinstance(doc.get("cases"), list):
            lines = _json_case_lines(text)
    if not isinstance(doc, dict) or "cases" not in doc:
        raise ConfigError(one_case_hint(doc) or 'expected a document {"cases": [...]} or one JSON object per line',
                          file=shown)
    unknown = sorted(set(doc) - _DOC_KEYS)
    if unknown:  # a YAML file's hidden key holding anchors (`common: &g ...`) among them
        anchor = "; an anchor shared by cases goes on the first value that uses it" if is_yaml else ""
        raise ConfigError(f"unknown field (a case document holds {', '.join(sorted(_DOC_KEYS))}{anchor})", file=shown,
                          line=line_of(str(unknown[0]), key_lines(text)), field=str(unknown[0]))
    cases = doc["cases"]
    if not isinstance(cases, list):
        raise ConfigError("must be a list of case objects", file=shown, line=line_of("cases", key_lines(text)),
                          field="cases")
    for index, value in enumerate(cases):
        yield (lines[index] if index < len(lines) else None), value


def _json_case_lines(text: str) -> list[int | None]:
    """Line of each element of the top-level "cases" array of a JSON document that is already
    known to parse, so an error in a JSON document names its line as JSONL and YAML do."""
    decoder = json.JSONDecoder()
    ws = " \t\r\n"

    def skip(i: int) -> int:
        while i < len(text) and text[i] in ws:
            i += 1
        return i

    try:
        i = skip(0)
        if text[i] != "{":
            return []
        i = skip(i + 1)
        found: list[int | None] = []
        while i < len(text) and text[i] != "}":
            key, i = decoder.raw_decode(text, i)
            i = skip(skip(i) + 1)  # the ':'
            if key == "cases" and text[i] == "[":
                found = []
                i = skip(i + 1)
                line, counted = 1, 0  # counted from the last element on: linear in the file
                while text[i] != "]":
                    line += text.count("\n", counted, i)
                    counted = i
                    found.append(line)
                    _, i = decoder.raw_decode(text, i)
                    i = skip(i)
                    if text[i] == ",":
                        i = skip(i + 1)
                i += 1
            else:
                _, i = decoder.raw_decode(text, i)
            i = skip(i)
            if i < len(text) and text[i] == ",":
                i = skip(i + 1)
        return found
    except (ValueError, IndexError, RecursionError):
        return []


def _format_of(path: Path, text: str) -> str:
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        return "jsonl"
    if suffix in (".yaml", ".yml"):
        return "yaml"
    if suffix == ".json":
        # A .json file holding one object per line is JSONL in disguise: its first line is a whole
        # value. A document's first value spans lines (or it has one line): its errors are its own.
        # (Whether the text says "cases" decides nothing: a case's tag or input may.)
        stripped = text.strip()
        if "\n" not in stripped:
            return "json"
        try:
            parse_json(stripped.split("\n", 1)[0], check=False)
        except ParseError:
            return "json"
        return "jsonl"
    return "jsonl"


def _toml_problem(text: str, shown: str, limits: Limits) -> ConfigError:
    """A .toml file is never a case file (TOML is a suite's format): its own TOML error when
    it does not parse (as `run` reports it), else what case files may be. Read as JSONL it
    would be "invalid JSON" on every line."""
    try:
        parse_toml(text, limits)
    except ParseError as exc:
        return ConfigError(exc.message, file=shown, line=exc.line, field=exc.field)
    return ConfigError("a TOML file is read as a suite, not as cases: a case file is JSONL, JSON or YAML, "
                       "and a suite's 'cases' names case files or a dataset ({format, path})", file=shown)


def load_case_records(path: str | os.PathLike, limits: Limits | None = None, *,
                      inside: str | os.PathLike | None = None) -> list[tuple[int | None, dict]]:
    """Raw case objects with their line numbers (None where a format gives none)."""
    return list(iter_case_records(path, limits, inside=inside))


def iter_case_records(path: str | os.PathLike, limits: Limits | None = None, *,
                      inside: str | os.PathLike | None = None,
                      errors: Collector | None = None) -> Iterator[tuple[int | None, dict]]:
    """Raw case objects with their line numbers, one at a time (a JSONL file's objects are
    parsed as they are consumed, so they need not all be held at once). `inside`: the root
    the file itself must lie in (it was named in another file), None for a path the user typed."""
    limits = limits or Limits()
    path = Path(path)
    shown = str(path)
    text = _read_text(path, limits, None if inside is None else Path(inside))
    if path.suffix.lower() == ".toml":
        raise _toml_problem(text, shown, limits)
    if path.suffix.lower() in (".csv", ".tsv", ".tab"):  # read as JSONL: "invalid JSON" on every line
        dataset = (f"read it in a suite as cases: {{format: inspect, path: {path.name}, fields: {{target: COL}}}} "
                   "(Inspect's columns: input, and target for the expected answer; fields: renames them)")
        if path.suffix.lower() == ".csv":
            raise ConfigError("a CSV file is not a case file (JSONL, JSON or YAML): convert it with `scoreboard "
                              f"import csv --csv {path.name} --map input=COL,expected=COL --output cases.jsonl`, "
                              f"or {dataset}", file=shown)
        raise ConfigError(f"a tab-separated file is not a case file (JSONL, JSON or YAML): {dataset}", file=shown)
    fmt = _format_of(path, text)
    if fmt == "jsonl":
        records = _jsonl_records(text, shown, limits, errors)
    else:
        records = _document_records(text, shown, fmt == "yaml", limits)
    tally = _budget.current()
    for position, (line, value) in enumerate(records):
        if tally is not None:
            tally.parsed(value, shown, line=line)
        if position >= limits.max_cases:
            raise ConfigError(f"more than {limits.max_cases} cases (limits.max_cases)", file=shown, line=line)
        if not isinstance(value, dict):
            where = line if line is not None else None
            raise ConfigError(f"case #{position + 1} must be a JSON object, got {type(value).__name__}",
                              file=shown, line=where)
        yield line, value
