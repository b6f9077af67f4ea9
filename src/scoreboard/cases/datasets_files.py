"""Inspect AI dataset files read as inspect_ai.dataset reads them (json_dataset, csv_dataset):
the records, each with the file line it starts on. The records become cases in
cases/datasets_inspect.py."""

from __future__ import annotations

import codecs
import csv
import io
import json
from typing import Any

from ..errors import ConfigError
from ..safeparse import ParseError, parse_json


def decode(data: bytes, encoding: str | None, default: str, shown: str) -> str:
    """The file's text as Inspect opens it: in text mode, so every line end (CRLF, CR) is a
    newline, inside a quoted CSV cell too."""
    name = encoding or default
    try:
        codecs.lookup(name)
    except LookupError:
        raise ConfigError(f"unknown encoding {name!r}", field="cases.encoding") from None
    try:
        return data.decode(name).replace("\r\n", "\n").replace("\r", "\n")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ConfigError(f"not valid {name} (byte {exc.start}); `encoding:` names the file's encoding",
                          file=shown, line=line) from None


def jsonl_records(text: str, shown: str) -> list[tuple[int, Any]]:
    """JSON Lines as the jsonlines reader reads them: every line one JSON object (a blank
    line is an error there too; the newline after the last line is not a line)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    rows: list[tuple[int, Any]] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            raise ConfigError("a blank line: a JSONL file holds one JSON object on every line", file=shown,
                              line=number)
        try:
            rows.append((number, parse_json(line)))
        except ParseError as exc:
            raise ConfigError(exc.message, file=shown, line=number, field=exc.field) from None
    return rows


def _element_lines(text: str) -> list[int] | None:
    """The line each element of a top-level JSON array starts on (the text already parsed)."""
    dec, ws = json.JSONDecoder(), " \t\r\n"
    i = 0
    while i < len(text) and text[i] in ws:
        i += 1
    if i >= len(text) or text[i] != "[":
        return None
    i, out, line, seen = i + 1, [], 1, 0
    try:
        while True:
            while text[i] in ws or text[i] == ",":
                i += 1
            if text[i] == "]":
                return out
            line += text.count("\n", seen, i)
            seen = i
            out.append(line)
            _, i = dec.raw_decode(text, i)
    except (ValueError, IndexError, RecursionError):
        return None


def json_records(text: str, shown: str) -> list[tuple[int | None, Any]]:
    """One JSON document (json.load): an array of records, or one object as the only record."""
    try:
        value = parse_json(text)
    except ParseError as exc:
        raise ConfigError(exc.message, file=shown, line=exc.line, field=exc.field) from None
    if isinstance(value, dict):
        return [(1, value)]
    if not isinstance(value, list):
        raise ConfigError("a JSON dataset is an array of records (or one record)", file=shown)
    lines = _element_lines(text) or []
    return [(lines[i] if i < len(lines) else None, item) for i, item in enumerate(value)]


def csv_records(text: str, shown: str, *, dialect: str, delimiter: str | None,
                fieldnames: list[str] | None) -> list[tuple[int, dict]]:
    """csv.DictReader's records, as csv_dataset keeps them: blank lines skipped, a row with more
    or fewer cells than the header refused, a row whose cells are all blank dropped; every cell
    stays text ("" when empty). Each with the file line it starts on."""
    params = {"delimiter": delimiter} if delimiter is not None else {}
    old_limit = csv.field_size_limit()
    csv.field_size_limit(max(old_limit, len(text) + 1))
    try:
        # csv_dataset reads leniently (not strict), but a quote left open to the end of the file
        # is a mistake worth naming: a strict pass finds only that
        try:
            for _ in csv.reader(io.StringIO(text, newline=""), dialect=dialect, strict=True, **params):
                pass
        except csv.Error as exc:
            if "unexpected end of data" in str(exc):
                start = _record_start(text, dialect, params)
                raise ConfigError(f"malformed CSV: {exc} (a quote is never closed)", file=shown, line=start) from None
        reader = csv.reader(io.StringIO(text, newline=""), dialect=dialect, **params)
        header = list(fieldnames) if fieldnames is not None else None
        rows: list[tuple[int, dict]] = []
        end = 0
        for cells in reader:
            start, end = end + 1, reader.line_num
            if header is None:
                header = cells
                if not header:
                    raise ConfigError("the first line is blank: it should be the header row (or give "
                                      "`fieldnames:`)", file=shown, line=start)
                seen: set[str] = set()
                for name in header:
                    if name in seen:
                        raise ConfigError(f"column {name!r} appears twice in the header", file=shown, line=start,
                                          field=name)
                    seen.add(name)
                continue
            if not cells:
                continue
            if len(cells) > len(header):
                raise ConfigError(f"the row has {len(cells)} cells, more than the header's {len(header)} (an "
                                  f"unquoted delimiter?); unexpected values: {cells[len(header):]}", file=shown,
                                  line=start)
            if len(cells) < len(header):
                raise ConfigError(f"the row has {len(cells)} cells, the header {len(header)}; no value for: "
                                  f"{', '.join(header[len(cells):])}", file=shown, line=start)
            if any(cell.strip() for cell in cells):
                rows.append((start, dict(zip(header, cells))))
        return rows
    except csv.Error as exc:
        raise ConfigError(f"malformed CSV: {exc}", file=shown, line=end + 1) from None
    finally:
        csv.field_size_limit(old_limit)


def _record_start(text: str, dialect: str, params: dict) -> int:
    """The line where the record with an unclosed quote starts (after the last complete one)."""
    reader = csv.reader(io.StringIO(text, newline=""), dialect=dialect, strict=True, **params)
    end = 0
    try:
        for _ in reader:
            end = reader.line_num
    except csv.Error:
        pass
    return end + 1
