"""Read case files (JSONL or a JSON/YAML `{"cases": [...]}` document) into validated Cases.

Every problem is one ConfigError naming the file, the line (or position), the case id and
the field; nothing runs until every case in every file is valid.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterator

from ..errors import ConfigError
from ..hashing import sha256_json
from ..suite.config import Limits
from ..validation import parse_model
from .case import MISSING, Case
from .conversation import expand_conversation
from .schema import CaseRecord, case_graders

_DOC_KEYS = {"cases", "version", "name", "description"}


def _read_bounded(path: Path, limit: int, shown: str, **where: Any) -> bytes:
    """At most limit + 1 bytes: stat() sizes do not bound pipes and devices (/dev/zero)."""
    try:
        with path.open("rb") as handle:
            return handle.read(limit + 1)
    except (FileNotFoundError, IsADirectoryError):
        raise
    except OSError as exc:
        raise ConfigError(f"cannot read {'input' if where else 'case'} file: {exc.strerror or exc}",
                          file=shown, **where) from None


def check_input_file(path: Path, what: str, max_bytes: int) -> None:
    """A file a user named exists, is not a folder and is within limits.max_file_bytes;
    otherwise one ConfigError naming it (`what`: "case", "CSV", ...)."""
    shown = str(path)
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise ConfigError(f"{what} file not found", file=shown) from None
    except OSError as exc:
        raise ConfigError(f"cannot read {what} file: {exc.strerror}", file=shown) from None
    if path.is_dir():
        raise ConfigError(f"is a directory, expected a {what} file", file=shown)
    if size > max_bytes:
        raise ConfigError(f"file is {size} bytes, over the limit of {max_bytes} "
                          "(limits.max_file_bytes)", file=shown)


def _read_text(path: Path, limits: Limits) -> str:
    shown = str(path)
    check_input_file(path, "case", limits.max_file_bytes)
    data = _read_bounded(path, limits.max_file_bytes, shown)
    if len(data) > limits.max_file_bytes:  # a pipe or device: stat() said 0 bytes
        raise ConfigError(f"file is over the limit of {limits.max_file_bytes} bytes (limits.max_file_bytes)",
                          file=shown)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ConfigError(f"not valid UTF-8 (byte {exc.start})", file=shown, line=line) from None


def _jsonl_records(text: str, shown: str) -> Iterator[tuple[int, Any]]:
    # Split on "\n" only: str.splitlines() also breaks at U+2028, U+0085, form feed..., which
    # JSON allows unescaped inside strings. A trailing "\r" (CRLF) is JSON whitespace.
    for number, raw in enumerate(text.split("\n"), start=1):
        if not raw.strip():
            continue
        try:
            value = json.loads(raw)
        except (ValueError, RecursionError) as exc:
            raise ConfigError(f"invalid JSON: {getattr(exc, 'msg', exc)}", file=shown, line=number) from None
        yield number, value


def _document_records(text: str, shown: str, is_yaml: bool) -> Iterator[tuple[int | None, Any]]:
    lines: list[int | None] = []
    if is_yaml:
        import yaml

        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        try:
            node = yaml.compose(text, Loader=loader)
            doc = yaml.load(text, Loader=loader)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
            raise ConfigError(f"invalid YAML: {problem}", file=shown,
                              line=mark.line + 1 if mark else None) from None
        except RecursionError:
            raise ConfigError("invalid YAML: nested too deeply", file=shown) from None
        if isinstance(node, __import__("yaml").MappingNode):
            for key, value in node.value:
                if getattr(key, "value", None) == "cases" and hasattr(value, "value") and isinstance(value.value, list):
                    lines = [item.start_mark.line + 1 for item in value.value]
    else:
        try:
            doc = json.loads(text)
        except (ValueError, RecursionError) as exc:
            line = getattr(exc, "lineno", None)
            raise ConfigError(f"invalid JSON: {getattr(exc, 'msg', exc)}", file=shown, line=line) from None
        if isinstance(doc, dict) and isinstance(doc.get("cases"), list):
            lines = _json_case_lines(text)
    if not isinstance(doc, dict) or "cases" not in doc:
        raise ConfigError('expected a document {"cases": [...]} or one JSON object per line', file=shown)
    unknown = sorted(set(doc) - _DOC_KEYS)
    if unknown:
        raise ConfigError("unknown field", file=shown, field=str(unknown[0]))
    cases = doc["cases"]
    if not isinstance(cases, list):
        raise ConfigError("must be a list of case objects", file=shown, field="cases")
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
                while text[i] != "]":
                    found.append(text.count("\n", 0, i) + 1)
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
        return found  # a repeated "cases" key: json.loads keeps the last, and so does this
    except (ValueError, IndexError, RecursionError):
        return []


def _format_of(path: Path, text: str) -> str:
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        return "jsonl"
    if suffix in (".yaml", ".yml"):
        return "yaml"
    if suffix == ".json":
        stripped = text.lstrip()
        # A .json file holding one object per line is JSONL in disguise; a document spans lines.
        if stripped.startswith("{") and '"cases"' in stripped[:4096] and "\n" in stripped.strip():
            return "json"
        try:
            json.loads(text)
            return "json"
        except (ValueError, RecursionError):
            return "jsonl"
    return "jsonl"


def load_case_records(path: str | os.PathLike, limits: Limits | None = None) -> list[tuple[int | None, dict]]:
    """Raw case objects with their line numbers (None where a format gives none)."""
    return list(iter_case_records(path, limits))


def iter_case_records(path: str | os.PathLike, limits: Limits | None = None) -> Iterator[tuple[int | None, dict]]:
    """Raw case objects with their line numbers, one at a time (a JSONL file's objects are
    parsed as they are consumed, so they need not all be held at once)."""
    limits = limits or Limits()
    path = Path(path)
    shown = str(path)
    text = _read_text(path, limits)
    fmt = _format_of(path, text)
    if fmt == "jsonl":
        records = _jsonl_records(text, shown)
    else:
        records = _document_records(text, shown, is_yaml=(fmt == "yaml"))
    for position, (line, value) in enumerate(records):
        if position >= limits.max_cases:
            raise ConfigError(f"more than {limits.max_cases} cases (limits.max_cases)", file=shown, line=line)
        if not isinstance(value, dict):
            where = line if line is not None else None
            raise ConfigError(f"case #{position + 1} must be a JSON object, got {type(value).__name__}",
                              file=shown, line=where)
        yield line, value


def _resolve_input(raw: Any, base: Path, shown: str, line: int | None, case_id: str, limits: Limits) -> Any:
    if isinstance(raw, str):
        if raw.startswith("@"):
            rel = raw[1:]
            target = (base / rel) if not os.path.isabs(rel) else Path(rel)
            try:
                size = target.stat().st_size
                if size > limits.max_input_bytes:
                    raise ConfigError(f"input file {rel!r} is {size} bytes, over the limit of "
                                      f"{limits.max_input_bytes} (limits.max_input_bytes)",
                                      file=shown, line=line, case_id=case_id, field="input")
                data = _read_bounded(target, limits.max_input_bytes, shown, line=line, case_id=case_id,
                                     field="input")
                if len(data) > limits.max_input_bytes:
                    raise ConfigError(f"input file {rel!r} is over the limit of {limits.max_input_bytes} "
                                      "bytes (limits.max_input_bytes)",
                                      file=shown, line=line, case_id=case_id, field="input")
                text = data.decode("utf-8-sig")
            except FileNotFoundError:
                raise ConfigError(f"input file {rel!r} not found (relative to {base})",
                                  file=shown, line=line, case_id=case_id, field="input") from None
            except IsADirectoryError:
                raise ConfigError(f"input file {rel!r} is a directory",
                                  file=shown, line=line, case_id=case_id, field="input") from None
            except UnicodeDecodeError:
                raise ConfigError(f"input file {rel!r} is not valid UTF-8",
                                  file=shown, line=line, case_id=case_id, field="input") from None
            except OSError as exc:  # permissions, a name too long, ...
                raise ConfigError(f"cannot read input file {rel!r}: {exc.strerror or exc}",
                                  file=shown, line=line, case_id=case_id, field="input") from None
            return text
        size = len(raw.encode("utf-8"))
        if size > limits.max_input_bytes:
            raise ConfigError(f"input is {size} bytes, over the limit of {limits.max_input_bytes} "
                              "(limits.max_input_bytes)", file=shown, line=line, case_id=case_id, field="input")
        return raw
    messages = [m.model_dump() for m in raw]
    size = sum(len(m["content"].encode("utf-8")) for m in messages)
    if size > limits.max_input_bytes:
        raise ConfigError(f"input is {size} bytes, over the limit of {limits.max_input_bytes} "
                          "(limits.max_input_bytes)", file=shown, line=line, case_id=case_id, field="input")
    return messages


def _bad_text(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _check_text(raw: dict, shown: str, line: int | None, case_id: str | None) -> None:
    """JSON may spell an unpaired surrogate ("\\ud800") that no UTF-8 file, hash or report can
    hold: reject it here, naming the field, instead of failing later while hashing."""
    try:
        # Fast path: one encode of the whole record; the walk below only runs to name the field.
        json.dumps(raw, ensure_ascii=False).encode("utf-8")
        return
    except (UnicodeEncodeError, ValueError, TypeError, RecursionError):
        pass
    stack: list[tuple[str, Any]] = [(str(k), v) for k, v in raw.items()]
    if any(_bad_text(str(k)) for k in raw):
        raise ConfigError("field name holds an unpaired surrogate (not valid Unicode text)",
                          file=shown, line=line, case_id=case_id)
    while stack:  # iterative: documents may nest deeper than Python's recursion limit
        where, value = stack.pop()
        if isinstance(value, str):
            if _bad_text(value):
                raise ConfigError("holds an unpaired surrogate (not valid Unicode text)",
                                  file=shown, line=line, case_id=None if case_id and _bad_text(case_id)
                                  else case_id, field=where)
        elif isinstance(value, dict):
            for key, item in value.items():
                if _bad_text(str(key)):
                    raise ConfigError("a key holds an unpaired surrogate (not valid Unicode text)",
                                      file=shown, line=line, case_id=case_id, field=where)
                stack.append((f"{where}.{key}", item))
        elif isinstance(value, list):
            stack.extend((f"{where}.{index}", item) for index, item in enumerate(value))


def load_cases(path: str | os.PathLike, limits: Limits | None = None) -> list[Case]:
    """Load and validate every case of one file (ids unique, inputs resolved, hashes set)."""
    limits = limits or Limits()
    path = Path(path)
    shown = str(path)
    base = path.parent
    seen: dict[str, int | None] = {}
    cases: list[Case] = []
    for line, raw in iter_case_records(path, limits):
        case_id = raw.get("id") if isinstance(raw.get("id"), str) else None
        _check_text(raw, shown, line, case_id)
        record = parse_model(CaseRecord, raw, file=shown, line=line, case_id=case_id)
        if record.id in seen:
            first = seen[record.id]
            where = f" (first on line {first})" if first else ""
            raise ConfigError(f"duplicate case id{where}", file=shown, line=line, case_id=record.id, field="id")
        seen[record.id] = line
        if record.turns is not None or record.conversation is not None:
            if path.stat().st_size > limits.conversation.max_file_bytes:
                raise ConfigError(f"a file with conversations may hold at most {limits.conversation.max_file_bytes} "
                                  "bytes (limits.conversation.max_file_bytes)", file=shown, case_id=record.id)
            cases.extend(expand_conversation(raw, record, file=shown, line=line, limits=limits.conversation))
            continue
        if record.input is None and not record.turns:
            raise ConfigError("required field is missing", file=shown, line=line, case_id=record.id, field="input")
        value = _resolve_input(record.input, base, shown, line, record.id, limits) if record.input is not None else None
        case = Case(
            id=record.id, input=value,
            expected=raw["expected"] if "expected" in raw else MISSING,
            graders=case_graders(record, raw), category=record.category, tags=record.tags,
            metadata=record.metadata, synthetic=record.synthetic, rubric=record.rubric,
            notes=record.notes, split=record.split, turns=record.turns, source=shown, line=line,
        )
        case.input_hash = sha256_json(case.input)
        cases.append(case)
    if not cases:
        raise ConfigError("no cases in file", file=shown)
    return cases
