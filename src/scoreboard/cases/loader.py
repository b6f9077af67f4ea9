"""Read case files (JSONL or a JSON/YAML `{"cases": [...]}` document) into validated Cases.

Every problem is one ConfigError naming the file, the line (or position), the case id and
the field; nothing runs until every case in every file is valid.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import Collector, ConfigError, shorten
from ..hashing import sha256_json
from ..safefile import FileRefused, read_file, read_inside, resolve_inside
from ..safeparse import ParseError, parse_json, parse_yaml
from ..suite.config import Limits
from ..validation import parse_model
from .case import MISSING, Case
from .conversation import check_messages, expand_conversation
from .schema import CaseRecord, case_graders

_DOC_KEYS = {"cases", "version", "name", "description"}


def refused(what: str, name: str, exc: FileRefused, **where: Any) -> ConfigError:
    """One line for a path that may not be read: "<what> 'name' <reason>"."""
    return ConfigError(f"{what} {shorten(name, 120)!r} {exc.reason}", **where)


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
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ConfigError(f"not valid UTF-8 (byte {exc.start})", file=str(path), line=line) from None


def _parse_problem(exc: ParseError, shown: str, line: int | None, record: Any = None) -> ConfigError:
    """A bounded-parsing refusal as one line, naming the case by its id when it has one."""
    case_id = record.get("id") if isinstance(record, dict) and isinstance(record.get("id"), str) else None
    return ConfigError(exc.message, file=shown, line=exc.line or line, case_id=case_id, field=exc.field)


def _jsonl_records(text: str, shown: str, limits: Limits,
                   errors: Collector | None = None) -> Iterator[tuple[int, Any]]:
    # Split on "\n" only: str.splitlines() also breaks at U+2028, U+0085, form feed..., which
    # JSON allows unescaped inside strings. A trailing "\r" (CRLF) is JSON whitespace.
    for number, raw in enumerate(text.split("\n"), start=1):
        if not raw.strip():
            continue
        try:
            value = parse_json(raw, limits)
        except ParseError as exc:
            exc.line = None  # a line number within this one line: the file's is `number`
            if exc.partial is None:  # not JSON at all: perhaps a case written over several lines
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
            partial = exc.partial
            found = _json_case_lines(text) if isinstance(partial, dict) and isinstance(partial.get("cases"), list) else []
            raise _in_document(exc, partial, found, shown) from None
        if isinstance(doc, dict) and isinstance(doc.get("cases"), list):
            lines = _json_case_lines(text)
    if not isinstance(doc, dict) or "cases" not in doc:
        raise ConfigError(one_case_hint(doc) or 'expected a document {"cases": [...]} or one JSON object per line',
                          file=shown)
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
        stripped = text.lstrip()
        # A .json file holding one object per line is JSONL in disguise; a document spans lines.
        if stripped.startswith("{") and '"cases"' in stripped[:4096] and "\n" in stripped.strip():
            return "json"
        try:
            parse_json(text, check=False)
            return "json"
        except ParseError:
            return "jsonl"
    return "jsonl"


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
    fmt = _format_of(path, text)
    if fmt == "jsonl":
        records = _jsonl_records(text, shown, limits, errors)
    else:
        records = _document_records(text, shown, fmt == "yaml", limits)
    for position, (line, value) in enumerate(records):
        if position >= limits.max_cases:
            raise ConfigError(f"more than {limits.max_cases} cases (limits.max_cases)", file=shown, line=line)
        if not isinstance(value, dict):
            where = line if line is not None else None
            raise ConfigError(f"case #{position + 1} must be a JSON object, got {type(value).__name__}",
                              file=shown, line=where)
        yield line, value


def read_at_file(rel: str, base: Path, root: Path, limits: Limits, **where: Any) -> str:
    """The text of an `@` file named in a case file: confined to root, a regular UTF-8 file
    within limits.max_input_bytes; anything else is one ConfigError at `where`."""
    try:
        data = read_inside(rel, base, root, limit=limits.max_input_bytes, limit_name="limits.max_input_bytes")
    except FileRefused as exc:
        if exc.missing:
            raise ConfigError(f"input file {shorten(rel, 120)!r} not found (relative to {base})", **where) from None
        raise refused("input file", rel, exc, **where) from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ConfigError(f"input file {shorten(rel, 120)!r} is not valid UTF-8", **where) from None


#: the longest plain input that is looked up as a file name (longer text is never a path)
PATH_INPUT_CHARS = 1024


def names_input_file(text: str, base: Path, root: Path) -> bool:
    """Whether a plain input (no `@`) names a regular file under the case file's folder, inside
    the root: then it is read as that file (origin 000: "input accepts text or a UTF-8 file path
    relative to the JSONL file"). Text that names nothing there, names a folder, or points
    outside the root (an absolute path, a `..` that climbs out, a symlink leading away) stays
    text: only an `@` input is an error when its file cannot be read."""
    if not text or len(text) > PATH_INPUT_CHARS or text != text.strip() or "\n" in text or "\x00" in text:
        return False
    if os.path.isabs(text) or not os.path.lexists(os.path.join(base, text)):  # one stat for plain text
        return False
    try:
        resolve_inside(text, base, root)
    except (FileRefused, OSError, ValueError):
        return False
    return True


def _resolve_input(raw: Any, base: Path, root: Path, shown: str, line: int | None, case_id: str,
                   limits: Limits) -> Any:
    where = {"file": shown, "line": line, "case_id": case_id, "field": "input"}
    if isinstance(raw, str):
        if raw.startswith("@"):
            return read_at_file(raw[1:], base, root, limits, **where)
        if names_input_file(raw, base, root):
            return read_at_file(raw, base, root, limits, **where)
        size = len(raw.encode("utf-8"))
        if size > limits.max_input_bytes:
            raise ConfigError(f"input is {size} bytes, over the limit of {limits.max_input_bytes} "
                              "(limits.max_input_bytes)", **where)
        return raw
    messages = [m.model_dump(exclude_none=True) for m in raw]
    size = sum(len(m["content"].encode("utf-8")) for m in messages)
    if size > limits.max_input_bytes:
        raise ConfigError(f"input is {size} bytes, over the limit of {limits.max_input_bytes} "
                          "(limits.max_input_bytes)", **where)
    problem = check_messages(messages, limits.conversation)
    if problem is not None:
        field, message = problem
        raise ConfigError(message, **{**where, "field": f"input{field}"})
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


def load_cases(path: str | os.PathLike, limits: Limits | None = None, *, root: str | os.PathLike | None = None,
               inside: str | os.PathLike | None = None, errors: Collector | None = None) -> list[Case]:
    """Load and validate every case of one file (ids unique, inputs resolved, hashes set).
    `@` files must lie inside `root` (default: the case file's folder); `inside`: the root the
    case file itself must lie in, when another file named it. With `errors`, every invalid case
    is gathered there (up to its cap) and the valid ones are returned."""
    limits = limits or Limits()
    path = Path(path)
    base = path.parent
    root = Path(root) if root is not None else base
    return cases_from_records(iter_case_records(path, limits, inside=inside, errors=errors), str(path), base,
                              root, limits, errors=errors)


def cases_from_records(records: Any, shown: str, base: Path, root: Path, limits: Limits,
                       errors: Collector | None = None) -> list[Case]:
    """Validated Cases from (line, record) pairs read from `shown` (a case file or a dataset).
    With `errors`, every invalid record is gathered there and the valid cases are returned."""
    seen: dict[str, int | None] = {}
    cases: list[Case] = []
    before = len(errors.errors) if errors is not None else 0
    for line, raw in records:
        if errors is None:
            _load_one(raw, line, shown, base, root, limits, seen, cases)
            continue
        with errors.each():
            _load_one(raw, line, shown, base, root, limits, seen, cases)
    if not cases and (errors is None or len(errors.errors) == before):
        raise ConfigError("no cases in file", file=shown)
    return cases


def _load_one(raw: dict, line: int | None, shown: str, base: Path, root: Path, limits: Limits,
              seen: dict[str, int | None], cases: list[Case]) -> None:
    """Validate one case record and append its case(s) to `cases`."""
    case_id = raw.get("id") if isinstance(raw.get("id"), str) else None
    _check_text(raw, shown, line, case_id)
    record = parse_model(CaseRecord, raw, file=shown, line=line, case_id=case_id, every=True)
    if record.id in seen:
        first = seen[record.id]
        where = f" (first on line {first})" if first else ""
        raise ConfigError(f"duplicate case id{where}", file=shown, line=line, case_id=record.id, field="id")
    seen[record.id] = line
    if record.turns is not None or record.conversation is not None:
        if Path(shown).stat().st_size > limits.conversation.max_file_bytes:
            raise ConfigError(f"a file with conversations may hold at most {limits.conversation.max_file_bytes} "
                              "bytes (limits.conversation.max_file_bytes)", file=shown, case_id=record.id)
        def read_at(rel: str, field: str, line: int | None = line, case_id: str = record.id) -> str:
            return read_at_file(rel, base, root, limits, file=shown, line=line, case_id=case_id, field=field)

        cases.extend(expand_conversation(raw, record, file=shown, line=line, limits=limits.conversation,
                                         read_at=read_at))
        return
    if record.input is None and record.vars is None and not record.turns:
        raise ConfigError("required field is missing", file=shown, line=line, case_id=record.id, field="input")
    value = _resolve_input(record.input, base, root, shown, line, record.id, limits) \
        if record.input is not None else None
    case = Case(
        id=record.id, input=value,
        expected=raw["expected"] if "expected" in raw else MISSING,
        graders=case_graders(record, raw), category=record.category, tags=record.tags,
        metadata=record.metadata, synthetic=record.synthetic, rubric=record.rubric,
        notes=record.notes, split=record.split, turns=record.turns, source=shown, line=line,
        vars=record.vars, threshold=record.threshold, transform=record.transform,
        replace_defaults=record.replace, expand=record.expand,
    )
    case.input_hash = sha256_json(case.input)
    cases.append(case)
