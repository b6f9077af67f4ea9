"""Dataset readers for a suite's `cases:`: Inspect AI dataset files and local Hugging Face
dataset files. Nothing is downloaded: the files are read from the suite's folder (confined like
every path a suite names).

    cases: {format: inspect, path: mcq.jsonl}                  # JSON, JSONL, CSV or TSV records
    cases: {format: hf, path: train.parquet, columns: {input: question, target: answer}}

`format: inspect` reads a file as Inspect's json_dataset / csv_dataset do, with their options
(`fields` for FieldSpec, `auto_id`, `shuffle`, `shuffle_choices`, `limit`, `dialect`,
`delimiter`, `encoding`, `fieldnames`) and the multiple_choice solver's (`multiple_correct`,
`cot`, `template`): cases/datasets_inspect.py. An `hf` file (Parquet, Arrow IPC, JSONL) is read
by pyarrow (`pip install 'scoreboard[datasets]'`) and mapped by `columns` (input, target,
choices, id, metadata: a column name each) into records with Inspect's fields (an answer index
becomes its letter; the default id is `sample-N`), rendered and graded the same way.
"""

from __future__ import annotations

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


class InspectFields(Strict):
    """Inspect's FieldSpec: which field of a record holds each part of the sample."""

    input: str = "input"
    target: str = "target"
    choices: str = "choices"
    id: str = "id"
    #: the fields kept as metadata (default: the record's own `metadata` field)
    metadata: list[str] | None = None
    sandbox: str = "sandbox"
    files: str = "files"
    setup: str = "setup"
    #: read only when named (Sample.description): kept as the case's notes
    description: str | None = None


INSPECT_ONLY = ("fields", "auto_id", "shuffle", "seed", "shuffle_choices", "limit", "dialect", "delimiter",
                "encoding", "fieldnames", "multiple_correct", "cot", "template", "unsupported")


class DatasetSource(Strict):
    """`cases: {format, path, columns?, grader?, ...}` in a suite."""

    format: Literal["inspect", "hf"]
    path: str
    columns: dict[str, str] | None = None
    grader: Literal["exact", "includes"] = "exact"
    max_rows: int | None = Field(None, gt=0)
    # format: inspect only: json_dataset / csv_dataset's arguments
    fields: InspectFields | None = None
    auto_id: bool = False
    shuffle: bool | int = False
    seed: int | None = None
    shuffle_choices: bool | int | None = None
    limit: int | None = Field(None, gt=0)
    dialect: Literal["unix", "excel", "excel-tab"] = "unix"
    delimiter: str | None = Field(None, min_length=1, max_length=1)
    encoding: str | None = None
    fieldnames: list[str] | None = None
    # the multiple_choice solver's
    multiple_correct: bool | None = None
    cot: bool = False
    template: str | None = None
    #: a sample naming a sandbox or setup script: refused ("error") or kept in metadata
    unsupported: Literal["error", "metadata"] = "error"


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


def _jsonl_rows(data: bytes, shown: str) -> list[tuple[int | None, Any]]:
    """The records of a JSONL file for `hf` (blank lines skipped), each with its line."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ConfigError(f"not valid UTF-8 (byte {exc.start})", file=shown, line=line) from None
    rows: list[tuple[int | None, Any]] = []
    for number, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            try:
                rows.append((number, parse_json(line)))
            except ParseError as exc:
                raise ConfigError(exc.message, file=shown, line=number, field=exc.field) from None
    return rows


def _inspect_options(source: DatasetSource, shown_suite: str | None) -> dict:
    """The reader's and the solver's options, checked as Inspect checks its arguments."""
    def bad(message: str, field: str) -> ConfigError:
        return ConfigError(message, file=shown_suite, field=f"cases.{field}")

    shuffle: int | None = None
    if isinstance(source.shuffle, bool):
        if source.shuffle:
            if source.seed is None:
                raise bad("shuffle: true needs a seed (shuffle: 42, or seed: 42) so every run has the same "
                          "cases in the same order", "shuffle")
            shuffle = source.seed
    else:
        if source.shuffle < 0:
            raise bad(f"the shuffle seed is a number >= 0, got {source.shuffle}", "shuffle")
        if source.seed is not None:
            raise bad(f"give either shuffle: {source.shuffle} (the seed) or seed: {source.seed}, not both", "seed")
        shuffle = source.shuffle
    if source.seed is not None and source.shuffle is False:
        raise bad("seed is the shuffle's: add shuffle: true", "seed")
    if source.shuffle_choices is True:
        raise bad("shuffle_choices takes a seed (shuffle_choices: 42) so every run shows the same order",
                  "shuffle_choices")
    choices_seed = None if source.shuffle_choices is False else source.shuffle_choices
    if source.limit is not None and source.max_rows is not None:
        raise bad("limit and max_rows are the same setting: give one", "max_rows")
    if source.template is not None and not ("{question}" in source.template and "{choices}" in source.template):
        raise bad("the template must contain '{question}' and '{choices}' placeholders", "template")
    fields = (source.fields or InspectFields()).model_dump()
    return {"fields": fields, "auto_id": source.auto_id, "shuffle": shuffle, "shuffle_choices": choices_seed,
            "limit": source.limit or source.max_rows, "grader": source.grader, "multiple_correct":
            source.multiple_correct, "cot": source.cot, "template": source.template,
            "unsupported": source.unsupported}


def _inspect_rows(data: bytes, source: DatasetSource, shown: str) -> tuple[list[tuple[int | None, Any]], bool]:
    """file_dataset's choice of reader by extension: the records and whether they are CSV cells."""
    from .datasets_files import csv_records, decode, json_records, jsonl_records

    suffix = Path(source.path).suffix.lower()
    if suffix in (".csv", ".tsv", ".tab"):
        text = decode(data, source.encoding, "utf-8-sig", shown)
        delimiter = source.delimiter if source.delimiter is not None else ("\t" if suffix != ".csv" else None)
        return csv_records(text, shown, dialect=source.dialect, delimiter=delimiter,
                           fieldnames=source.fieldnames), True
    if suffix in (".json", ".jsonl"):
        text = decode(data, source.encoding, "utf-8-sig", shown)
        return (jsonl_records(text, shown) if suffix == ".jsonl" else json_records(text, shown)), False
    raise ConfigError(f"no Inspect dataset reader for {suffix or 'a file without an extension'!r} (.json, .jsonl, "
                      ".csv, .tsv, .tab)", file=shown, field="cases.path")


def _hf_rows(data: bytes, suffix: str, shown: str) -> list[tuple[int | None, Any]]:
    if suffix in (".jsonl", ".json"):
        return _jsonl_rows(data, shown)
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise ConfigError("Parquet and Arrow datasets need pyarrow: pip install 'scoreboard[datasets]'",
                          file=shown, field="cases.format") from None
    # Read on this thread: a dataset file is small, and pyarrow's pool threads left alive into
    # the interpreter's exit could abort the process there ("terminate called without an active
    # exception", seen once under load right after a load error)
    single = pa.ipc.IpcReadOptions(use_threads=False)
    try:
        if suffix == ".parquet":
            table = pq.read_table(pa.BufferReader(data), use_threads=False)
        elif suffix in (".arrow", ".feather", ".ipc"):
            try:
                table = pa.ipc.open_stream(pa.BufferReader(data), options=single).read_all()  # what `datasets` saves
            except pa.ArrowInvalid:
                table = pa.ipc.open_file(pa.BufferReader(data), options=single).read_all()
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
    if source.format == "inspect":
        from .datasets_inspect import inspect_cases

        opts = _inspect_options(source, shown_suite)
        rows, cells = _inspect_rows(data, source, shown)
        if source.columns is not None:
            raise ConfigError("columns is for format hf: an Inspect dataset names its fields with `fields:` "
                              "(Inspect's FieldSpec)", file=shown_suite, field="cases.columns")
        pairs = inspect_cases(rows, opts, shown, cells)
        if not pairs:
            raise ConfigError("no records in the dataset", file=shown)
        return pairs if with_lines else [case for _, case in pairs]
    given = sorted(k for k in INSPECT_ONLY if k in source.model_fields_set)
    if given:
        raise ConfigError(f"{given[0]} is an option of format inspect", file=shown_suite, field=f"cases.{given[0]}")
    rows = _hf_rows(data, Path(source.path).suffix.lower(), shown)
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
