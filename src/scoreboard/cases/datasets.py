"""Dataset readers for a suite's `cases:`: Inspect-style records and local Hugging Face dataset
files. Nothing is downloaded: the files are read from the suite's folder (confined like every
path a suite names).

    cases: {format: inspect, path: mcq.jsonl}                  # JSON, JSONL or CSV records
    cases: {format: hf, path: train.parquet, columns: {input: question, target: answer}}

Inspect records (inspect_ai.dataset.Sample) have `input` (text or chat messages), `target` (a
text or a list), `choices`, `id`, `metadata`, `files`. With `choices`, the input is rendered as
Inspect's `multiple_choice` solver presents it (SINGLE_ANSWER_TEMPLATE, or the multiple-answer
one when the target lists several letters; options as `A) text`) and graded with the `choice`
extraction against the target letter(s); without, the target is the expected text (graded
`exact`, or `contains` with `grader: includes`). An `hf` file (Parquet, Arrow IPC, JSONL) is
read by pyarrow (`pip install 'scoreboard[datasets]'`) and mapped by `columns` (input, target,
choices, id, metadata: a column name each) into the same records.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from ..errors import ConfigError
from ..safefile import FileRefused, read_inside
from ..safeparse import ParseError, parse_json
from ..validation import Strict

SINGLE = ("Answer the following multiple choice question. The entire content of your response should be of the "
          "following format: 'ANSWER: $LETTER' (without quotes) where LETTER is one of {letters}.\n\n{question}\n\n"
          "{choices}")
MULTIPLE = ("Answer the following multiple choice question where multiple answers may be correct. The entire "
            "content of your response should be of the following format: 'ANSWER: $LETTERS' (without quotes) "
            "where LETTERS is one or more of {letters}.\n\n{question}\n\n{choices}")


class DatasetSource(Strict):
    """`cases: {format, path, columns?, grader?}` in a suite."""

    format: Literal["inspect", "hf"]
    path: str
    columns: dict[str, str] | None = None
    grader: Literal["exact", "includes"] = "exact"
    max_rows: int | None = Field(None, gt=0)


def _letters(n: int) -> list[str]:
    return [chr(ord("A") + i) for i in range(n)]


def record_to_case(rec: dict, index: int, shown: str, grader: str, *, line: int | None = None) -> dict:
    """An Inspect record as a scoreboard case record (one line of a case file). `index`: the
    record's number (its default id); `line`: where it starts in the file (default: index)."""
    where = {"file": shown, "line": line if line is not None else index}
    unknown = sorted(set(rec) - {"input", "target", "choices", "id", "metadata", "files", "setup", "sandbox"})
    if unknown:
        raise ConfigError("unknown field", field=unknown[0], **where)
    if "input" not in rec or not isinstance(rec["input"], (str, list)):
        raise ConfigError("an Inspect record needs 'input' (text or chat messages)", field="input", **where)
    cid = rec.get("id")
    case: dict[str, Any] = {"id": str(cid) if cid not in (None, "") else f"sample-{index}"}
    target = rec.get("target")
    choices = rec.get("choices")
    metadata = dict(rec.get("metadata") or {}) if isinstance(rec.get("metadata"), (dict, type(None))) else None
    if metadata is None:
        raise ConfigError("metadata is a mapping", field="metadata", case_id=case["id"], **where)
    if rec.get("files"):
        metadata["inspect_files"] = rec["files"]
    if choices is not None:
        if not isinstance(choices, list) or len(choices) < 2 or not all(isinstance(c, str) for c in choices):
            raise ConfigError("choices is a list of at least two texts", field="choices", case_id=case["id"], **where)
        if not isinstance(rec["input"], str):
            raise ConfigError("a multiple-choice input is text", field="input", case_id=case["id"], **where)
        letters = _letters(len(choices))
        if isinstance(target, int) and not isinstance(target, bool) and 0 <= target < len(choices):
            target = letters[target]  # a dataset's answer index, as Inspect's records name it by letter
        wanted = target if isinstance(target, list) else [target]
        if not wanted or not all(isinstance(t, str) and t in letters for t in wanted):
            raise ConfigError(f"target names the correct choice by letter ({', '.join(letters)})", field="target",
                              case_id=case["id"], **where)
        template = MULTIPLE if isinstance(target, list) and len(target) > 1 else SINGLE
        case["input"] = template.format(letters=",".join(letters), question=rec["input"],
                                        choices="\n".join(f"{lt}) {c}" for lt, c in zip(letters, choices)))
        case["expected"] = "".join(sorted(wanted))
        case["graders"] = [{"exact": {"fences": False}, "transform": {"choice": {"choices": len(choices),
                                                                                 "multiple": template is MULTIPLE}}}]
    else:
        case["input"] = rec["input"]
        if target is not None:
            refs = target if isinstance(target, list) else [target]
            if not all(isinstance(t, str) for t in refs):
                raise ConfigError("target is a text or a list of texts", field="target", case_id=case["id"], **where)
            case["expected"] = refs[0] if len(refs) == 1 and grader == "exact" else refs
            if grader == "includes":
                case["graders"] = [{"contains": {"mode": "any"}}]
            elif len(refs) > 1:
                case["graders"] = [{"one-of": {"values": refs}}]
                case["expected"] = refs[0]
    if metadata:
        case["metadata"] = metadata
    return case


def _csv_rows(text: str, shown: str) -> list[tuple[int, dict]]:
    """The records of an Inspect CSV (a header row, then one record per row), each with the
    file line it starts on (a quoted cell may span lines). Read as `import csv` reads a
    sheet: strict quoting (an unclosed quote is an error, not a cell running to the end of
    the file), and the csv module's 128 KiB cell cap raised to the file's own size (already
    within limits.max_file_bytes), restored afterwards."""
    old_limit = csv.field_size_limit()
    csv.field_size_limit(max(old_limit, len(text) + 1))
    try:
        reader = csv.reader(io.StringIO(text, newline=""), strict=True)
        header: list[str] | None = None
        rows: list[tuple[int, dict]] = []
        end = 0
        while True:
            start = end + 1
            try:
                cells = next(reader)
            except StopIteration:
                break
            except csv.Error as exc:
                at = f" (at line {reader.line_num})" if reader.line_num > start else ""
                raise ConfigError(f"malformed CSV: {exc}{at}", file=shown, line=start) from None
            end = reader.line_num
            if not cells:
                continue  # a blank line holds no record
            if header is None:
                header = cells
                seen: set[str] = set()
                for name in header:
                    if name in seen:
                        raise ConfigError(f"column {name!r} appears twice in the header", file=shown,
                                          line=start, field=name)
                    seen.add(name)
                continue
            if len(cells) > len(header):
                raise ConfigError(f"the row has {len(cells)} cells, more than the header's {len(header)} "
                                  "(an unquoted comma?)", file=shown, line=start)
            rec = {k: v for k, v in zip(header, cells) if v != ""}
            if "choices" in rec:  # a CSV cell holds the choices as a JSON list
                try:
                    rec["choices"] = parse_json(rec["choices"])
                except ParseError as exc:
                    field = "choices" + (f".{exc.field}" if exc.field else "")
                    raise ConfigError(f"choices must be a JSON list in a CSV cell: {exc.message}", file=shown,
                                      line=start, field=field) from None
            rows.append((start, rec))
        return rows
    finally:
        csv.field_size_limit(old_limit)


def _rows_text(data: bytes, suffix: str, shown: str) -> list[tuple[int | None, Any]]:
    """The records of an Inspect dataset (CSV, JSON or JSONL), each with its file line (None
    where the format gives none: a JSON document)."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ConfigError(f"not valid UTF-8 (byte {exc.start})", file=shown, line=line) from None
    if suffix == ".csv":
        return _csv_rows(text, shown)
    if suffix == ".json":
        try:
            value = parse_json(text)
        except ParseError as exc:
            raise ConfigError(exc.message, file=shown, line=exc.line, field=exc.field) from None
        if not isinstance(value, list):
            raise ConfigError("a JSON dataset is a list of records", file=shown)
        return [(None, item) for item in value]
    rows: list[tuple[int | None, Any]] = []
    for number, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            try:
                rows.append((number, parse_json(line)))
            except ParseError as exc:
                raise ConfigError(exc.message, file=shown, line=number, field=exc.field) from None
    return rows


def _hf_rows(data: bytes, suffix: str, shown: str) -> list[tuple[int | None, Any]]:
    if suffix in (".jsonl", ".json"):
        return _rows_text(data, ".jsonl", shown)
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise ConfigError("Parquet and Arrow datasets need pyarrow: pip install 'scoreboard[datasets]'",
                          file=shown, field="cases.format") from None
    try:
        if suffix == ".parquet":
            table = pq.read_table(pa.BufferReader(data))
        elif suffix in (".arrow", ".feather", ".ipc"):
            try:
                table = pa.ipc.open_stream(pa.BufferReader(data)).read_all()  # what `datasets` saves
            except pa.ArrowInvalid:
                table = pa.ipc.open_file(pa.BufferReader(data)).read_all()
        else:
            raise ConfigError("an hf dataset file is .parquet, .arrow or .jsonl", file=shown, field="cases.path")
    except (pa.ArrowInvalid, OSError) as exc:
        raise ConfigError(f"not a readable dataset file: {exc}", file=shown) from None
    return [(None, row) for row in table.to_pylist()]


def load_dataset_records(spec: dict, base: Path, root: Path, limit: int, shown_suite: str | None, *,
                         with_lines: bool = False) -> list[Any]:
    """The case records of a `cases: {format, path, ...}` entry (validated, one line errors).
    `with_lines`: (line, record) pairs instead, the line where each record starts in a CSV or
    JSONL file (a JSON document or a table: the record's number), for cases_from_records."""
    from ..validation import parse_model

    source = parse_model(DatasetSource, spec, file=shown_suite)
    shown = str(base / source.path)
    try:
        data = read_inside(source.path, base, root, limit=limit, limit_name="limits.max_file_bytes")
    except FileRefused as exc:
        raise ConfigError(f"cases.path {source.path!r} {exc.reason}", file=shown_suite, field="cases.path") from None
    suffix = Path(source.path).suffix.lower()
    rows = _hf_rows(data, suffix, shown) if source.format == "hf" else _rows_text(data, suffix, shown)
    if source.max_rows is not None:
        rows = rows[:source.max_rows]
    cols = source.columns or {}
    unknown = sorted(set(cols) - {"input", "target", "choices", "id", "metadata"})
    if unknown:
        raise ConfigError("columns maps input, target, choices, id, metadata to column names", file=shown_suite,
                          field=f"cases.columns.{unknown[0]}")
    out: list[Any] = []
    for i, (line, row) in enumerate(rows, start=1):
        line = line if line is not None else i  # a JSON document or a table: the record's number
        if not isinstance(row, dict):
            raise ConfigError("a record is a mapping", file=shown, line=line)
        if cols:
            missing = [c for c in cols.values() if c not in row]
            if missing:
                raise ConfigError(f"no column {missing[0]!r}", file=shown, line=line, field=f"columns.{missing[0]}")
            row = {k: row[c] for k, c in cols.items()}
        case = record_to_case(row, i, shown, source.grader, line=line)
        out.append((line, case) if with_lines else case)
    if not out:
        raise ConfigError("no records in the dataset", file=shown)
    return out
