"""Read case files (JSONL or a JSON/YAML `{"cases": [...]}` document) into validated Cases.

Every problem is one ConfigError naming the file, the line (or position), the case id and
the field; nothing runs until every case in every file is valid. The per-format readers that
give the raw records are in cases/formats.py.
"""

from __future__ import annotations

import json
import os
import unicodedata
from pathlib import Path
from typing import Any

from ..errors import Collector, ConfigError, shorten
from ..gcpause import collector_paused
from ..hashing import sha256_json
from ..jsonio import dumps_text
from ..nearmiss import near_miss
from ..safefile import FileRefused, not_utf8, read_inside, resolve_inside
from ..suite.config import Limits
from ..validation import lookalike, parse_model, twin_problem
from . import budget as _budget
from .case import MISSING, Case
from .conversation import check_messages, expand_conversation
from .formats import iter_case_records
from .schema import CaseRecord, case_graders


def refused(what: str, name: str, exc: FileRefused, **where: Any) -> ConfigError:
    """One line for a path that may not be read: "<what> 'name' <reason>"."""
    return ConfigError(f"{what} {shorten(name, 120)!r} {exc.reason}", **where)


def read_at_file(rel: str, base: Path, root: Path, limits: Limits, **where: Any) -> str:
    """The text of an `@` file named in a case file: confined to root, a regular UTF-8 file
    within limits.max_input_bytes; anything else is one ConfigError at `where`."""
    try:
        data = read_inside(rel, base, root, limit=limits.max_input_bytes, limit_name="limits.max_input_bytes")
    except FileRefused as exc:
        if exc.missing:
            hint = near_miss(rel, str(base), str(root))
            raise ConfigError(f"input file {shorten(rel, 120)!r} not found (relative to {base})"
                              + (f" (did you mean {shorten(hint, 120)!r}?)" if hint else ""), **where) from None
        raise refused("input file", rel, exc, **where) from None
    tally = _budget.current()
    if tally is not None:
        tally.read(len(data), where.get("file") or rel, **{k: v for k, v in where.items() if k != "file"})
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"input file {shorten(rel, 120)!r} is {not_utf8(data, exc.start)}", **where) from None


#: the longest plain input that is looked up as a file name (longer text is never a path)
PATH_INPUT_CHARS = 1024


class FolderNames:
    """The names in a case file's folder, listed once per load (lazily, at most MAX_LISTED): a
    plain input whose first path component names nothing there is text, with no stat per case.
    Compared NFC-normalised and casefolded, so a file system that folds case or normalises
    names (macOS) still gets its stat."""

    MAX_LISTED = 100_000

    def __init__(self, base: Path):
        self.base = base
        self._names: set[str] | None = None
        self._listed = False

    def may_name(self, text: str) -> bool:
        first = text.replace(os.sep, "/").split("/", 1)[0]
        if first in ("", ".", ".."):
            return True
        if not self._listed:
            self._listed = True
            try:
                with os.scandir(self.base) as entries:
                    names = set()
                    for entry in entries:
                        if len(names) >= self.MAX_LISTED:
                            break
                        names.add(_folded(entry.name))
                    else:
                        self._names = names
            except OSError:
                self._names = None
        return self._names is None or _folded(first) in self._names


def _folded(name: str) -> str:
    return (name if name.isascii() else unicodedata.normalize("NFC", name)).casefold()


def names_input_file(text: str, base: Path, root: Path, listing: FolderNames | None = None) -> bool:
    """Whether a plain input (no `@`) names a regular file under the case file's folder, inside
    the root: then it is read as that file (origin 000: "input accepts text or a UTF-8 file path
    relative to the JSONL file"). Text that names nothing there, names a folder, or points
    outside the root (an absolute path, a `..` that climbs out, a symlink leading away) stays
    text: only an `@` input is an error when its file cannot be read."""
    if not text or len(text) > PATH_INPUT_CHARS or text != text.strip() or "\n" in text or "\x00" in text:
        return False
    if listing is not None and not listing.may_name(text):
        return False
    if os.path.isabs(text) or not os.path.lexists(os.path.join(base, text)):  # one stat for plain text
        return False
    try:
        resolve_inside(text, base, root)
    except (FileRefused, OSError, ValueError):
        return False
    return True


def _resolve_input(raw: Any, base: Path, root: Path, shown: str, line: int | None, case_id: str,
                   limits: Limits, listing: FolderNames | None = None) -> Any:
    where = {"file": shown, "line": line, "case_id": case_id, "field": "input"}
    if isinstance(raw, str):
        if raw.startswith("@"):
            return read_at_file(raw[1:], base, root, limits, **where)
        if names_input_file(raw, base, root, listing):
            return read_at_file(raw, base, root, limits, **where)
        size = len(raw.encode("utf-8"))
        if size > limits.max_input_bytes:
            raise ConfigError(f"input is {size} bytes, over the limit of {limits.max_input_bytes} "
                              "(limits.max_input_bytes)", **where)
        return raw
    return chat_input(raw, limits, where)


def chat_input(raw: list, limits: Limits, where: dict) -> list[dict]:
    """A chat-message input (a case's or a control's) as plain messages, held to the size limit
    and the conversation rules (order, counts, lengths); `where` names it in an error."""
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
    # Fast path: orjson refuses a lone surrogate (and serialises a record in a fifth of the
    # stdlib's time); what it refuses for any reason goes the stdlib's way, and the walk below
    # only runs to name the field.
    if dumps_text(raw) is not None:
        return
    try:
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
    listing = FolderNames(base)
    with collector_paused():  # records in, cases out: many objects, no cycles
        for line, raw in records:
            if errors is None:
                _load_one(raw, line, shown, base, root, limits, seen, cases, listing)
                continue
            with errors.each():
                _load_one(raw, line, shown, base, root, limits, seen, cases, listing)
    if not cases and (errors is None or len(errors.errors) == before):
        raise ConfigError("no cases in file", file=shown)
    return cases


def _no_twin(case_id: str, line: int | None, seen: dict, shown: str, named: str, field: str) -> None:
    """Refuse an id that looks the same as one already seen (NFC and NFD spellings, a zero-width
    character): a report, a comparison and a reader would take the two for one case. `seen`
    also holds, under (key,), the first id of each look-alike form."""
    key = (lookalike(case_id),)
    first = seen.setdefault(key, case_id)
    if first != case_id:
        where = f" (line {seen[first]})" if seen.get(first) else ""
        raise ConfigError(f"duplicate case id: {twin_problem(case_id, first, where)}", file=shown, line=line,
                          case_id=named, field=field)


def _load_one(raw: dict, line: int | None, shown: str, base: Path, root: Path, limits: Limits,
              seen: dict[str, int | None], cases: list[Case], listing: FolderNames | None = None) -> None:
    """Validate one case record and append its case(s) to `cases`."""
    case_id = raw.get("id") if isinstance(raw.get("id"), str) else None
    _check_text(raw, shown, line, case_id)
    record = parse_model(CaseRecord, raw, file=shown, line=line, case_id=case_id, every=True)
    if record.id in seen:
        first = seen[record.id]
        where = f" (first on line {first})" if first else ""
        raise ConfigError(f"duplicate case id{where}", file=shown, line=line, case_id=record.id, field="id")
    _no_twin(record.id, line, seen, shown, record.id, "id")
    seen[record.id] = line
    if record.turns is not None or record.conversation is not None:
        if Path(shown).stat().st_size > limits.conversation.max_file_bytes:
            raise ConfigError(f"a file with conversations may hold at most {limits.conversation.max_file_bytes} "
                              "bytes (limits.conversation.max_file_bytes)", file=shown, case_id=record.id)
        def read_at(rel: str, field: str, line: int | None = line, case_id: str = record.id) -> str:
            return read_at_file(rel, base, root, limits, file=shown, line=line, case_id=case_id, field=field)

        turns = expand_conversation(raw, record, file=shown, line=line, limits=limits.conversation, read_at=read_at)
        for turn in turns:  # CONV/TURN may be another record's id, or another conversation's turn
            if turn.id in seen:
                first = seen[turn.id]
                where = f" (first on line {first})" if first else ""
                raise ConfigError(f"turn {turn.id.removeprefix(record.id + '/')!r} makes the case id "
                                  f"{turn.id!r}, a duplicate case id{where}", file=shown, line=line,
                                  case_id=record.id, field=f"turns.{turn.turn_index}.id")
        for turn in turns:
            _no_twin(turn.id, line, seen, shown, record.id, f"turns.{turn.turn_index}.id")
            seen[turn.id] = line
        cases.extend(turns)
        return
    if record.input is None and record.vars is None and not record.turns:
        raise ConfigError("required field is missing", file=shown, line=line, case_id=record.id, field="input")
    value = _resolve_input(record.input, base, root, shown, line, record.id, limits, listing) \
        if record.input is not None else None
    specs, spec_fields = case_graders(record, raw)
    case = Case(
        id=record.id, input=value,
        expected=raw["expected"] if "expected" in raw else MISSING,
        graders=specs, grader_fields=spec_fields, category=record.category, tags=record.tags,
        metadata=record.metadata, synthetic=record.synthetic, rubric=record.rubric,
        notes=record.notes, split=record.split, turns=record.turns, source=shown, line=line,
        vars=record.vars, threshold=record.threshold, transform=record.transform,
        replace_defaults=record.replace, expand=record.expand,
    )
    case.input_hash = sha256_json(case.input)
    cases.append(case)
