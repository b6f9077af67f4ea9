"""Gold directories: documents (.txt, .md, .pdf) each beside a NAME.gold.json reference.

    data/gold/acme_msa_2024.pdf
    data/gold/acme_msa_2024.gold.json   {"document_id"?, "doc_class"?, "fields": {...}}

One level only: subfolders are ignored, so a gold set can keep drafts or sources in a
subfolder without them becoming cases. A document without a gold file is returned in
`skipped` (the report lists it, never a silent drop); a gold file without a document is a
ConfigError. Bad entries are collected (errors.Collector: up to 20, a line each), not only the
first. A PDF that cannot be read (corrupt, or encrypted beyond the empty password) is
not a load error: its case carries `input_error`, which the runner turns into an execution
error naming the file, so one bad scan never hides the rest of the set.
"""

from __future__ import annotations

import io
import os
import re
from pathlib import Path

from pydantic import Field, field_validator

from ..errors import Collector, ConfigError, ConfigErrors
from ..hashing import sha256_json
from ..safefile import FileRefused, not_utf8, read_file, resolve_inside
from ..safeparse import ParseError, parse_json
from ..suite.config import Limits
from ..validation import Strict, lookalike, one_line_id, parse_model, twin_problem
from . import budget as _budget
from .case import Case

GOLD_SUFFIX = ".gold.json"
DOCUMENT_SUFFIXES = (".txt", ".md", ".pdf")
PDF_HINT = "reading PDF documents needs pypdf: pip install 'scoreboard[pdf]'"


class GoldRecord(Strict):
    """One NAME.gold.json file."""

    document_id: str | None = Field(None, min_length=1)
    doc_class: str | None = None
    fields: dict

    @field_validator("document_id")
    @classmethod
    def _id_not_blank(cls, value: str | None) -> str | None:
        return value if value is None else one_line_id(value)  # no newline or escape, as a case file's id


def _is_gold_name(name: str) -> bool:
    return name.lower().endswith(GOLD_SUFFIX) and len(name) > len(GOLD_SUFFIX)


def _relevant(name: str) -> bool:
    return not name.startswith(".") and (_is_gold_name(name) or name.lower().endswith(DOCUMENT_SUFFIXES))


def _entries(directory: Path, root: Path, errors: Collector) -> tuple[list[Path], set[str]]:
    """The documents and gold files directly in `directory` (hidden ones and subfolders left
    out), sorted by name. Each must be a regular file whose real location lies inside `root`:
    a symlink leading outside, or a FIFO or device named like a document, is refused (into
    `errors`; its name is returned beside the files, so its partner is not blamed as well)."""
    try:
        names = sorted(os.listdir(directory))
    except OSError as exc:
        raise ConfigError(f"cannot read gold directory: {exc.strerror}", file=str(directory)) from None
    out, refused = [], set()
    for name in names:
        if not _relevant(name):
            continue
        try:
            resolve_inside(name, directory, root, folder_ok=True)
        except FileRefused as exc:
            errors.add(ConfigError(f"gold directory entry {exc.reason}", file=str(directory / name)))
            refused.add(_stem(name))
            continue
        if not (directory / name).is_dir():  # one level only: subfolders are not cases
            out.append(directory / name)
    return out, refused


def _stem(name: str) -> str:
    """A document's or gold file's name without its suffix: the two of a pair share it."""
    return name[: -len(GOLD_SUFFIX)] if _is_gold_name(name) else name[: -len(Path(name).suffix)]


def is_gold_dir(path: str | os.PathLike) -> bool:
    """True when `path` is a directory holding at least one NAME.gold.json file."""
    p = Path(path)
    if not p.is_dir():
        return False
    try:
        return any(_is_gold_name(n) and (p / n).is_file() for n in os.listdir(p))
    except OSError:
        return False


_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\],:]')


def _key_line(text: str, path: tuple, occurrence: int = 1) -> int | None:
    """The line of the `occurrence`-th `"key":` of the object at `path[:-1]` (path: keys and
    indexes ending in that key) in a JSON text, so a field's error (an unknown field, a
    duplicate key: its second occurrence) points at its line."""
    if not path:
        return None
    import json

    where, key = tuple(path[:-1]), path[-1]
    stack: list[list] = []  # [opening bracket, path, current key or index, a key is next]
    seen = 0
    for m in _JSON_TOKEN.finditer(text):
        token = m.group()
        if token in "{[":
            inside = stack[-1][1] + (stack[-1][2],) if stack else ()
            stack.append([token, inside, 0 if token == "[" else None, token == "{"])
        elif not stack:
            return None
        elif token in "}]":
            stack.pop()
        elif token == ",":
            top = stack[-1]
            if top[0] == "[":
                top[2] += 1
            else:
                top[3] = True
        elif token == ":":
            stack[-1][3] = False
        elif stack[-1][0] == "{" and stack[-1][3]:
            top = stack[-1]
            try:
                top[2] = json.loads(token)
            except ValueError:
                return None
            if top[1] == where and top[2] == key:
                seen += 1
                if seen == occurrence:
                    return text.count("\n", 0, m.start()) + 1
    return None


def _read(path: Path, root: Path, limit: int, limit_name: str, what: str) -> bytes:
    try:
        data = read_file(path, limit=limit, limit_name=limit_name, root=root)
    except FileRefused as exc:
        raise ConfigError(f"{what} {exc.reason}", file=str(path)) from None
    tally = _budget.current()
    if tally is not None:
        tally.read(len(data), str(path))
    return data


def _read_gold(path: Path, limits: Limits, root: Path) -> tuple[GoldRecord, str]:
    """The gold file's record, and its text (to find a field's line)."""
    shown = str(path)
    data = _read(path, root, limits.max_file_bytes, "limits.max_file_bytes", "gold file")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ConfigError(not_utf8(data, exc.start), file=shown, line=line) from None
    try:
        raw = parse_json(text, limits)
    except ParseError as exc:
        line = exc.line
        if line is None and exc.message.startswith("duplicate key"):  # its second occurrence
            from ..jsonio import duplicate_key

            try:
                line = _key_line(text, duplicate_key(text) or (), 2)
            except ValueError:  # nested past what the parser follows: the message alone
                line = None
        elif line is None:
            line = _key_line(text, exc.path)
        raise ConfigError(exc.message, file=shown, line=line, field=exc.field) from None
    if not isinstance(raw, dict):
        raise ConfigError(f'expected a JSON object {{"fields": {{...}}}}, got {type(raw).__name__}',
                          file=shown, line=1)
    tally = _budget.current()
    if tally is not None:
        tally.parsed(raw, shown)
    try:
        return parse_model(GoldRecord, raw, file=shown, every=True), text
    except ConfigError as exc:
        found = [ConfigError(e.detail, file=shown, line=_key_line(text, _field_path(e.field)), field=e.field)
                 for e in getattr(exc, "errors", None) or [exc]]
        raise (found[0] if len(found) == 1 else ConfigErrors(found)) from None


def _field_path(field: str | None) -> tuple:
    """A field as parse_model names it (`fields.a.0`) as keys and indexes."""
    return tuple(int(p) if p.isdigit() else p for p in field.split(".")) if field else ()


def _pdf_text(path: Path, data: bytes) -> tuple[str, str | None]:
    """(text, None), or ("", reason) when the PDF cannot be read; pages joined with "\\n"."""
    try:
        import logging

        import pypdf
    except ImportError:
        raise ConfigError(PDF_HINT, file=str(path)) from None
    # pypdf logs warnings about damaged files to stderr; the reason is recorded in the report.
    logging.getLogger("pypdf").setLevel(logging.ERROR)
    # pypdf raises many types (and sometimes RecursionError) on damaged files: any of them is
    # a reason to record, not a crash, because an unreadable scan is data about the gold set.
    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            try:
                opened = reader.decrypt("")
            except Exception as exc:  # noqa: BLE001 - e.g. AES without a crypto library
                return "", f"encrypted and cannot be decrypted ({_reason(exc)})"
            if not opened:
                return "", "encrypted with a password"
        return "\n".join(page.extract_text() or "" for page in reader.pages), None
    except Exception as exc:  # noqa: BLE001
        return "", _reason(exc)


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _text_document(path: Path, limits: Limits, root: Path) -> str:
    data = _read(path, root, limits.max_input_bytes, "limits.max_input_bytes", "document")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"document is {not_utf8(data, exc.start)}", file=str(path)) from None


def _document_input(path: Path, limits: Limits, root: Path) -> tuple[str, str | None]:
    if path.suffix.lower() != ".pdf":
        return _text_document(path, limits, root), None
    data = _read(path, root, limits.max_file_bytes, "limits.max_file_bytes", "PDF")
    text, error = _pdf_text(path, data)
    if error is not None:
        return "", f"cannot read PDF {path.name}: {error}"
    size = len(text.encode("utf-8"))
    if size > limits.max_input_bytes:
        raise ConfigError(f"extracted text is {size} bytes, over the limit of {limits.max_input_bytes} "
                          "(limits.max_input_bytes)", file=str(path))
    return text, None


def _pair(files: list[Path], refused: set[str], errors: Collector) -> tuple[list[tuple[Path, Path]], list[dict]]:
    """(document, gold file) pairs and the documents without a gold file (a gold file without a
    document, or a document sharing another's gold file, into `errors`); a partner of a refused
    entry (`refused`: their stems) is neither a case nor an error of its own."""
    golds = {p.name[: -len(GOLD_SUFFIX)]: p for p in files if _is_gold_name(p.name)}
    documents: dict[str, Path] = {}
    skipped: list[dict] = []
    for p in files:
        if _is_gold_name(p.name) or p.suffix.lower() not in DOCUMENT_SUFFIXES:
            continue
        stem = p.name[: -len(p.suffix)]
        if stem in documents:
            errors.add(ConfigError(f"two documents share the gold file {stem}{GOLD_SUFFIX}: "
                                   f"{documents[stem].name} and {p.name}", file=str(p)))
            continue
        documents[stem] = p
    pairs = []
    for stem, doc in documents.items():
        gold = golds.get(stem)
        if gold is None:
            if stem not in refused:
                skipped.append({"document": doc.name, "reason": "no gold file"})
        else:
            pairs.append((doc, gold))
    for stem, gold in golds.items():
        if stem not in documents and stem not in refused:
            wanted = ", ".join(stem + s for s in DOCUMENT_SUFFIXES)
            errors.add(ConfigError(f"gold file has no document (looked for {wanted})", file=str(gold)))
    pairs.sort(key=lambda pair: pair[0].name)
    skipped.sort(key=lambda item: item["document"])
    return pairs, skipped


def load_gold_dir(path: str | os.PathLike, limits: Limits | None = None, *,
                  root: str | os.PathLike | None = None) -> tuple[list[Case], list[dict]]:
    """Cases from a gold directory (sorted by document name) and the documents skipped. Its
    entries must lie inside `root`: the directory itself unless a suite named it (then the
    suite's folder) or the user gave --root."""
    limits = limits or Limits()
    directory = Path(path)
    if not directory.is_dir():
        raise ConfigError("gold directory not found" if not directory.exists()
                          else "not a directory, expected a gold directory", file=str(directory))
    root = Path(root) if root is not None else directory
    errors = Collector()
    pairs, skipped = _pair(*_entries(directory, root, errors), errors)
    if not pairs:
        errors.done()
        raise ConfigError(f"no document with a NAME{GOLD_SUFFIX} file in gold directory",
                          file=str(directory))
    if len(pairs) > limits.max_cases:
        raise ConfigError(f"{len(pairs)} cases, more than {limits.max_cases} (limits.max_cases)",
                          file=str(directory))
    cases: list[Case] = []
    seen: dict[str, Path] = {}
    for document, gold_path in pairs:
        with errors.each():
            cases.append(_gold_case(document, gold_path, seen, limits, root))
    errors.done()
    return cases, skipped


def _gold_case(document: Path, gold_path: Path, seen: dict[str, Path], limits: Limits, root: Path) -> Case:
    gold, text = _read_gold(gold_path, limits, root)
    case_id = gold.document_id or document.name[: -len(document.suffix)]
    if gold.document_id is None:  # a file name may hold a newline or an escape that would forge report lines
        try:
            one_line_id(case_id)
        except ValueError as exc:
            raise ConfigError(f"the document's name, the case id when no document_id is given, {exc}; rename the "
                              "file or give a document_id", file=str(document), case_id=case_id, field="id") from None
    if case_id in seen:
        raise ConfigError(f"duplicate case id (also from {seen[case_id].name})", file=str(gold_path),
                          line=_key_line(text, ("document_id",)), case_id=case_id, field="document_id")
    twin = seen.setdefault((lookalike(case_id),), (case_id, gold_path))
    if twin[0] != case_id:  # an id no reader tells from another's (NFC and NFD, a zero-width space)
        raise ConfigError(f"duplicate case id: {twin_problem(case_id, twin[0], f' (from {twin[1].name})')}",
                          file=str(gold_path), line=_key_line(text, ("document_id",)), case_id=case_id,
                          field="document_id")
    seen[case_id] = gold_path
    document_text, error = _document_input(document, limits, root)
    case = Case(id=case_id, input=document_text, expected=gold.fields, category=gold.doc_class,
                metadata={"document": document.name, "gold": gold_path.name},
                source=str(gold_path), input_error=error)
    case.input_hash = sha256_json(case.input)
    return case

