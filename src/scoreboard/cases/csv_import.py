"""Import a spreadsheet of corrections (CSV) into a JSONL case file.

Every row is validated before anything is written; the output is created exclusively and
atomically. Row numbers in errors are the ones a spreadsheet shows (header = row 1, a
multiline cell stays one row), so a user can find the row to fix.
"""

from __future__ import annotations

import csv
import io
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError, shorten
from ..graders.base import short
from ..safefile import FileRefused, resolve_inside, taken
from ..safeparse import ParseError, parse_json
from ..suite.config import Limits
from ..validation import lookalike, one_line_id, twin_problem
from .case import Case
from .loader import _check_text

MAP_KEYS = ("input", "expected", "id")
DEFAULT_GRADER = "json-fields"


@dataclass
class ImportResult:
    """What an import wrote: the output path and the case records (one per JSONL line)."""

    path: Path
    records: list[dict]


def parse_map(values: str | list[str]) -> dict[str, str]:
    """`input=COL,expected=COL[,id=COL]` (one string or several) -> {key: column}."""
    items = [values] if isinstance(values, str) else list(values)
    mapping: dict[str, str] = {}
    for item in items:
        for part in item.split(","):
            if not part.strip():
                continue
            key, sep, column = part.partition("=")
            key, column = key.strip(), column.strip()
            if not sep or not column:
                raise ConfigError(f"--map entry {part.strip()!r} is not KEY=COLUMN", field="map")
            if key not in MAP_KEYS:
                raise ConfigError(f"--map key {key!r} is unknown (known: {', '.join(MAP_KEYS)})", field="map")
            if key in mapping:
                raise ConfigError(f"--map names {key!r} twice", field="map")
            mapping[key] = column
    for key in ("input", "expected"):
        if key not in mapping:
            raise ConfigError(f"--map must name the {key} column ({key}=COLUMN)", field="map")
    return mapping


def parse_fields(value: str | list[str] | None) -> list[str] | None:
    """`a,b,c` -> ["a", "b", "c"]; None when not given."""
    if value is None:
        return None
    items = [value] if isinstance(value, str) else list(value)
    fields = [f.strip() for item in items for f in item.split(",") if f.strip()]
    if not fields:
        raise ConfigError("--fields names no field", field="fields")
    if len(set(fields)) != len(fields):
        dup = next(f for f in fields if fields.count(f) > 1)
        raise ConfigError(f"--fields lists {dup!r} twice", field="fields")
    return fields


def _grader_spec(grader: Any) -> tuple[str, Any]:
    """(name, spec) for --grader: a registered name or a JSON spec."""
    from ..graders.registry import build_grader, split_spec

    spec = grader if grader is not None else DEFAULT_GRADER
    if isinstance(spec, str) and spec.strip().startswith(("{", '"')):
        try:
            spec = parse_json(spec)
        except ParseError as exc:
            at = f" at {exc.field!r}" if exc.field else ""
            raise ConfigError(f"--grader JSON is invalid{at}: {exc.message}", field="grader") from None
    name, _ = split_spec(spec)
    build_grader(spec)  # unknown names and bad options fail before any row is read
    return name, spec


def _read_rows(path: Path, limits: Limits) -> list[list[str]]:
    shown = str(path)
    from .formats import read_user_file

    data = read_user_file(path, "CSV", limits.max_file_bytes)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"not valid UTF-8 (byte {exc.start}); save the sheet as CSV UTF-8",
                          file=shown) from None
    rows: list[list[str]] = []
    # One cell may hold a whole document; the csv module's default cap (128 KiB) is lower
    # than the input limit, so it is raised for this read and restored afterwards.
    old_limit = csv.field_size_limit()
    csv.field_size_limit(max(old_limit, limits.max_file_bytes))
    try:
        reader = csv.reader(io.StringIO(text, newline=""), strict=True)
        try:
            for row in reader:
                rows.append(row)
        except csv.Error as exc:
            raise ConfigError(f"row {len(rows) + 1} (line {reader.line_num}): malformed CSV: {exc}",
                              file=shown) from None
    finally:
        csv.field_size_limit(old_limit)
    return rows


def _column_index(header: list[str], column: str, flag: str, shown: str) -> int:
    names = [h.strip() for h in header]
    hits = [i for i, name in enumerate(names) if name == column]
    if not hits:
        listed = ", ".join(repr(h) for h in names)
        other = next((d for d in (";", "\t", "|") if len(names) == 1 and d in names[0]), None)
        hint = (f"; the header is one column holding {other!r}: the sheet was saved with {other!r} between "
                "cells, save it as CSV with commas (CSV UTF-8)") if other else ""
        raise ConfigError(f"{flag} names unknown column {column!r} (header: {listed}){hint}", file=shown,
                          field=flag.lstrip("-"))
    if len(hits) > 1:
        raise ConfigError(f"column {column!r} appears {len(hits)} times in the header", file=shown,
                          field=flag.lstrip("-"))
    return hits[0]


def _rewrite_input(cell: str, csv_dir: Path, out_dir: Path, where: str, shown: str) -> str:
    """An `@file` input relative to the CSV, rewritten relative to the output file."""
    rel = cell[1:]
    if not rel.strip():
        raise ConfigError(f"{where}: '@' must be followed by a file path", file=shown)
    # The same rule as a case file's `@` inputs: relative, inside the sheet's folder, a
    # regular file (the case file written here is read under that rule again).
    try:
        resolve_inside(rel, csv_dir, csv_dir)
    except FileRefused as exc:
        if exc.missing:
            raise ConfigError(f"{where}: input file {shorten(rel, 120)!r} not found (relative to {csv_dir})",
                              file=shown) from None
        reason = exc.reason.replace(" (give --root DIR to widen it)", "")  # import csv takes no --root
        raise ConfigError(f"{where}: input file {shorten(rel, 120)!r} {reason}", file=shown) from None
    return "@" + Path(os.path.relpath(csv_dir / rel, out_dir)).as_posix()


class _Row:
    """One data row's cells by the mapped column, each with where it is (row and column)."""

    def __init__(self, row: list[str], number: int, header: list[str], columns: dict[str, int], shown: str):
        self.row, self.number, self.header, self.columns, self.shown = row, number, header, columns, shown

    def get(self, key: str) -> tuple[str, str]:
        index = self.columns[key]
        where = f"row {self.number}, column {self.header[index].strip()!r}"
        if index >= len(self.row):
            raise ConfigError(f"{where}: missing (the row has {len(self.row)} cells, the header "
                              f"{len(self.header)})", file=self.shown)
        return self.row[index], where

    def case_id(self, seen: dict[str, int]) -> tuple[str, str]:
        """The row's case id (its `id` column, else row-N), unique in the file."""
        if "id" in self.columns:
            case_id, where = self.get("id")
            if not case_id.strip():
                raise ConfigError(f"{where}: empty case id", file=self.shown)
        else:
            case_id, where = f"row-{self.number}", f"row {self.number}"
        try:  # the case file's own rule: a newline or escape in an id would forge report lines
            one_line_id(case_id)
        except ValueError as exc:
            raise ConfigError(f"{where}: case id {short(case_id)} {exc}", file=self.shown) from None
        if case_id in seen:
            raise ConfigError(f"{where}: duplicate case id {case_id!r} (first on row {seen[case_id]})",
                              file=self.shown)
        twin = seen.setdefault((lookalike(case_id),), (case_id, self.number))
        if twin[0] != case_id:  # an id no reader tells from another's (NFC and NFD, a zero-width space)
            raise ConfigError(f"{where}: duplicate case id: {twin_problem(case_id, twin[0], f' (row {twin[1]})')}",
                              file=self.shown)
        seen[case_id] = self.number
        return case_id, where


def _json_expected(raw: str, grader_name: str, limits: Limits, where: str, shown: str) -> Any:
    """An expected cell read as JSON by the bounded parser every user document gets (safeparse):
    no NaN, Infinity or out-of-range number (JSON has none: the case file written would not
    load), no key given twice, nesting and number length within the limits."""
    try:
        expected = parse_json(raw, limits)
    except ParseError as exc:
        why = exc.message.removeprefix("invalid JSON: ")
        if exc.partial is None and not why.startswith("nested deeper"):  # not JSON at all
            raise ConfigError(f"{where}: expected is not valid JSON ({why}); "
                              f"--grader {grader_name} needs JSON (--grader exact keeps each expected cell as "
                              "text)", file=shown) from None
        raise ConfigError(f"{where}: {why}", file=shown,
                          field="expected" + (f".{exc.field}" if exc.field else "")) from None
    try:  # "\ud800" is valid JSON but no UTF-8 file can hold it
        _check_text({"expected": expected}, shown, None, None)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc.detail}", file=shown, field=exc.field) from None
    return expected


def build_records(csv_path: str | os.PathLike, out_path: str | os.PathLike, mapping: dict[str, str], *,
                  fields: list[str] | None = None, grader: Any = None, category_column: str | None = None,
                  limits: Limits | None = None) -> list[dict]:
    """Validate every row and return the case records (nothing is written)."""
    limits = limits or Limits()
    csv_path = Path(csv_path)
    shown = str(csv_path)
    grader_name, grader_spec = _grader_spec(grader)
    # The default grader (json-fields named without options) compares --fields, or every
    # top-level key of each row's expected object; a JSON spec carries its own options.
    by_fields = grader_name == "json-fields" and not isinstance(grader_spec, dict)
    if fields is not None and not by_fields:
        raise ConfigError(f"--fields applies to the json-fields grader named without options, "
                          f"not to --grader {short(grader_spec)}", field="fields")
    from ..graders.registry import build_grader

    checker = build_grader({"json-fields": fields} if by_fields and fields else grader_spec)
    rows = _read_rows(csv_path, limits)
    if not rows or not any(cell.strip() for cell in rows[0]):
        raise ConfigError("CSV file has no header row", file=shown, line=1)
    header = rows[0]
    columns = {key: _column_index(header, col, "--map", shown) for key, col in mapping.items()}
    if category_column is not None:
        columns["category"] = _column_index(header, category_column, "--category-column", shown)
    csv_dir = csv_path.resolve().parent
    out_dir = Path(out_path).resolve().parent
    seen: dict[str, int] = {}
    records: list[dict] = []
    for row_number, row in enumerate(rows[1:], start=2):
        if not any(cell.strip() for cell in row):
            continue  # blank spreadsheet rows (and trailing ",,," lines) hold no case
        if len(row) > len(header):
            raise ConfigError(f"row {row_number} has {len(row)} cells, more than the header's "
                              f"{len(header)} (an unquoted comma?)", file=shown)
        cells = _Row(row, row_number, header, columns, shown)
        case_id, where = cells.case_id(seen)
        text, where = cells.get("input")
        if not text.strip():
            raise ConfigError(f"{where}: empty input", file=shown)
        if text.startswith("@"):
            text = _rewrite_input(text, csv_dir, out_dir, where, shown)
        elif len(text.encode("utf-8")) > limits.max_input_bytes:
            raise ConfigError(f"{where}: input is over the limit of {limits.max_input_bytes} bytes "
                              "(limits.max_input_bytes)", file=shown)
        raw_expected, where = cells.get("expected")
        expected = raw_expected if grader_name == "exact" else _json_expected(raw_expected, grader_name, limits,
                                                                              where, shown)
        record: dict[str, Any] = {"id": case_id, "input": text, "expected": expected}
        if by_fields:
            if not isinstance(expected, dict):
                raise ConfigError(f"{where}: expected must be a JSON object for json-fields, got "
                                  f"{type(expected).__name__}", file=shown)
            record["grader"] = "json-fields"
            record["fields"] = list(fields) if fields is not None else list(expected)
        else:
            record["grader"] = grader_spec
        try:
            checker.check_case(Case(id=case_id, input=text, expected=expected))
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc.detail}", file=shown) from None
        if "category" in columns:
            category, _ = cells.get("category")
            if category.strip():
                record["category"] = category
        record["metadata"] = {"csv_row": row_number}
        records.append(record)
    if not records:
        raise ConfigError("CSV file has a header but no data rows", file=shown)
    if len(records) > limits.max_cases:
        raise ConfigError(f"{len(records)} rows, more than {limits.max_cases} (limits.max_cases)", file=shown)
    return records


def import_csv(csv_path: str | os.PathLike, out_path: str | os.PathLike, mapping: dict[str, str], *,
               fields: list[str] | None = None, grader: Any = None, category_column: str | None = None,
               limits: Limits | None = None) -> ImportResult:
    """Convert a CSV of corrections into a new JSONL case file (never overwriting one)."""
    from ..record.files import write_output

    out = Path(out_path)
    why = taken(out)  # fail before reading the sheet; write_new re-checks atomically
    if why is not None:
        raise ConfigError(why, file=str(out))
    records = build_records(csv_path, out, mapping, fields=fields, grader=grader,
                            category_column=category_column, limits=limits)
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    write_output(out, text)
    return ImportResult(out, records)
