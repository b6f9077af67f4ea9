"""Reviews as a spreadsheet: `scoreboard store reviews --output FILE.csv` writes them, and
`scoreboard import reviews REPORT.json FILE.csv` reads them back, edited or not.

One row per review, the columns of CSV_COLUMNS (a rating or verdict left empty is null). The file
is written as Excel reads it (UTF-8 with a BOM, CRLF between rows); it is read with or without a
BOM, with CRLF or LF, quoted cells holding commas, quotes and line breaks, and `TRUE`/`FALSE` as
a spreadsheet rewrites booleans. A cell that a spreadsheet would run as a formula (starting with
`=`, `+`, `-`, `@`, a tab or a carriage return) is written behind an apostrophe, `'=SUM(A1)`, as is
one already starting with an apostrophe; reading drops that one apostrophe, so a cell comes back
exactly as it was exported. Errors name the file, the line where the row starts, the row as a
spreadsheet numbers it (header = row 1) and the column.
"""

from __future__ import annotations

import csv
import io
import re

from ..errors import ConfigError, ConfigErrors

RATINGS = ("correctness", "usefulness", "coherence", "creativity")
CSV_COLUMNS = ("case_id", "input_hash", "output_hash", "reviewer_id", "reviewer_kind", "rubric_version",
               *RATINGS, "verdict", "notes")
REQUIRED = ("case_id", "input_hash", "output_hash", "reviewer_id", "reviewer_kind", "rubric_version", "notes")
#: what starts a formula in Excel, LibreOffice or Google Sheets (and the apostrophe that guards one)
FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "'")
_FIELD = re.compile(r"^entries\[(\d+)\](?:\.ratings)?(?:\.([A-Za-z_]+))?")


def is_csv(path: str) -> bool:
    """Whether a reviews file is read or written as CSV (by its name's ending)."""
    return str(path).lower().endswith(".csv")


def _guard(cell: str) -> str:
    return "'" + cell if cell.startswith(FORMULA_START) else cell


def _unguard(cell: str) -> str:
    return cell[1:] if cell.startswith("'") and cell[1:].startswith(FORMULA_START) else cell


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return _guard(str(value))


def write_reviews_csv(entries: list[dict]) -> bytes:
    """The entries as a CSV file (UTF-8 with a BOM, CRLF rows, every formula start guarded)."""
    buffer = io.StringIO(newline="")
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow(CSV_COLUMNS)
    for e in entries:
        ratings = e.get("ratings") or {}
        writer.writerow([_cell(ratings.get(c) if c in RATINGS else e.get(c)) for c in CSV_COLUMNS])
    return ("\ufeff" + buffer.getvalue()).encode("utf-8")


def read_reviews_csv(path: str, data: bytes, max_bytes: int) -> tuple[list[dict], list[int]]:
    """(entries as `import reviews` reads them, the line where each row starts) of a CSV; a
    malformed file, a missing or unknown column is a one-line ConfigError."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"reviews file is not valid UTF-8 (byte {exc.start}); save the sheet as CSV UTF-8",
                          file=path) from None
    old_limit = csv.field_size_limit()
    csv.field_size_limit(max(old_limit, max_bytes))
    rows: list[list[str]] = []
    starts: list[int] = []
    try:
        reader = csv.reader(io.StringIO(text, newline=""), strict=True)
        try:
            while True:
                start = reader.line_num + 1
                try:
                    row = next(reader)
                except StopIteration:
                    break
                if any(cell.strip() for cell in row):  # a blank line a spreadsheet left at the end
                    rows.append(row)
                    starts.append(start)
        except csv.Error as exc:
            raise ConfigError(f"malformed CSV: {exc}", file=path, line=reader.line_num) from None
    finally:
        csv.field_size_limit(old_limit)
    if not rows:
        raise ConfigError("no header row (expected the columns " + ", ".join(CSV_COLUMNS) + ")", file=path)
    header = [h.strip() for h in rows[0]]
    unknown = [h for h in header if h not in CSV_COLUMNS]
    if unknown:
        raise ConfigError(f"unknown column {unknown[0]!r} (allowed: {', '.join(CSV_COLUMNS)})",
                          file=path, line=starts[0], field=unknown[0])
    twice = next((h for h in header if header.count(h) > 1), None)
    if twice is not None:
        raise ConfigError(f"column {twice!r} appears {header.count(twice)} times in the header",
                          file=path, line=starts[0], field=twice)
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise ConfigError(f"missing column {missing[0]!r} (required: {', '.join(REQUIRED)})",
                          file=path, line=starts[0], field=missing[0])
    entries = []
    for number, row in enumerate(rows[1:], start=2):
        if len(row) > len(header):
            raise ConfigError(f"row {number} has {len(row)} cells, more than the {len(header)} columns of the "
                              "header", file=path, line=starts[number - 1])
        cells = dict(zip(header, [_unguard(c) for c in row] + [""] * (len(header) - len(row))))
        entry: dict = {c: cells[c] for c in REQUIRED}
        entry["ratings"] = {c: _rating(cells[c]) for c in RATINGS if c in cells}
        if "verdict" in cells:
            entry["verdict"] = _verdict(cells["verdict"])
        entries.append(entry)
    return entries, starts[1:]


def _rating(cell: str):
    value = cell.strip()
    if not value:
        return None
    return int(value) if value.isascii() and value.isdigit() else value  # text is refused by the schema


def _verdict(cell: str):
    value = cell.strip().lower()
    if not value:
        return None
    return {"true": True, "false": False}.get(value, cell)  # other text is refused by the schema


def located(exc: ConfigError, path: str, starts: list[int]) -> ConfigError:
    """`exc` (an entry's error, field `entries[i].x`) named by the CSV row's line and column."""
    errors = getattr(exc, "errors", None) or [exc]
    out = []
    for one in errors:
        hit = _FIELD.match(one.field or "") if one.file == path else None
        if hit is None or int(hit.group(1)) >= len(starts):
            out.append(one)
            continue
        i = int(hit.group(1))
        column = hit.group(2) or None
        out.append(ConfigError(f"row {i + 2}: {one.detail}", file=path, line=starts[i], case_id=one.case_id,
                               field=column))
    return out[0] if len(out) == 1 else ConfigErrors(out, capped=getattr(exc, "capped", False))
