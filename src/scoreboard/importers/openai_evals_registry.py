"""An OpenAI Evals registry file (its entries, aliases followed into the sibling files of an
`evals/` folder) and the JSONL data files its entries name (Eval._prefix_registry_path,
evals.data.get_jsonl), read for `scoreboard import openai-evals` (openai_evals.py)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..errors import ConfigError, shorten
from ..lineends import BARE_CR, bare_cr_lines
from ..safefile import DEFAULT_MAX_FILE_BYTES, FileRefused, not_utf8, read_inside, read_regular, resolve_inside
from ..safeparse import ParseError, parse_yaml
from .common import gunzip, parse_json_line, refusal
from .openai_evals_classify import NotConverted
from .pyyaml_compat import safe_load_last_wins

_RESERVED = ("key", "group", "cls")
#: what raises the size a samples file may have (`import openai-evals --max-file-bytes`)
_FLAG = "--max-file-bytes"


class Registry:
    """The registry file's entries, and (for aliases) those of its sibling files."""

    def __init__(self, path: Path, data: dict, shown: str):
        self.path, self.shown = path, shown
        folder = path.resolve().parent
        self.in_evals = folder.name == "evals"
        #: an eval_sets/*.yaml file: its sets name the evals of <registry>/evals/
        self.in_sets = folder.name == "eval_sets" and (folder.parent / "evals").is_dir()
        #: <registry>: what holds evals/, data/ and modelgraded/
        self.root = folder.parent if self.in_evals or self.in_sets else folder
        self.folder = folder
        self.entries: dict[str, Any] = {}
        self.where: dict[str, str] = {}
        self._add(data, shown)
        self.own = list(self.entries)
        #: the largest samples file read, unpacked (--max-file-bytes)
        self.max_file_bytes = DEFAULT_MAX_FILE_BYTES
        #: --hf-dataset: a local copy (a JSONL file) of each hf:// dataset URL MultipleChoice names
        self.hf_datasets: dict[str, str] = {}
        self._siblings_loaded = False
        self._evals: Registry | None = None

    def _add(self, data: dict, shown: str) -> None:
        for name, spec in data.items():
            name = str(name)
            if name in self.entries:
                raise ConfigError(f"duplicate entry {name!r} (also in {self.where[name]}): OpenAI Evals refuses "
                                  "the registry", file=shown, field=name)
            if not isinstance(spec, (dict, str)):
                raise ConfigError("an entry is a mapping (class, args) or an alias name", file=shown, field=name)
            if isinstance(spec, dict):
                for word in _RESERVED:
                    if word in spec:
                        raise ConfigError(f"{word!r} is a reserved keyword in OpenAI Evals' registry", file=shown,
                                          field=f"{name}.{word}")
            self.entries[name] = spec
            self.where[name] = shown

    def _load_siblings(self) -> None:
        if self._siblings_loaded or not self.in_evals:
            return
        self._siblings_loaded = True
        for other in sorted(self.folder.glob("*.yaml")):
            if other.resolve() == self.path.resolve() or not other.is_file():
                continue
            data = read_yaml(other, str(other), root=self.root)
            if isinstance(data, dict):
                self._add(data, str(other))

    def evals_of_set(self, name: str, report: Any = None) -> list[tuple[str, dict]] | None:
        """An eval set's evals (`{evals: [patterns]}` in eval_sets/, oaievalset's EvalSetSpec): the
        entries of <registry>/evals/ (a namespace of its own) each pattern matches as
        Registry.get_evals matches them (`.` literal, `*` any text, the whole name), in the
        registry's order, each resolved; a pattern matching none (oaievalset skips it) is listed on
        `report`. None for any other entry."""
        import re

        spec = self.entries.get(name)
        if not self.in_sets or not isinstance(spec, dict) or "class" in spec or "id" in spec or "evals" not in spec:
            return None
        patterns = spec["evals"]
        if not isinstance(patterns, list) or not all(isinstance(n, str) for n in patterns):
            raise ConfigError("an eval set's evals are a list of eval names", file=self.where[name],
                              field=f"{name}.evals")
        if self._evals is None:
            self._evals = Registry(self.root / "evals" / ".eval_set.yaml", {}, self.shown)
            self._evals.max_file_bytes = self.max_file_bytes
            self._evals._load_siblings()
        regexps = []
        for index, pattern in enumerate(patterns):
            try:
                regexps.append(re.compile("^" + pattern.replace(".", "\\.").replace("*", ".*") + "$"))
            except re.error as exc:
                raise ConfigError(f"{pattern!r} is not a pattern OpenAI Evals compiles: {exc}",
                                  file=self.where[name], field=f"{name}.evals.{index}") from None
        for index, regexp in enumerate(regexps):
            if report is not None and not any(regexp.match(n) for n in self._evals.entries):
                report.skip(f"{name}.evals.{index}", f"{patterns[index]!r} names no eval of {self.root / 'evals'} "
                                                     "(oaievalset runs none for it)")
        found = []
        for other in self._evals.entries:
            if any(regexp.match(other) for regexp in regexps):
                found.append(self._evals.resolve(other, f"{name}.evals"))
                self.where.setdefault(found[-1][0], self._evals.where[found[-1][0]])
        return found

    def resolve(self, name: str, field: str) -> tuple[str, dict]:
        """Registry._dereference: follow aliases to the entry that names a class."""
        seen = [name]
        while True:
            if name not in self.entries:
                self._load_siblings()
            if name not in self.entries:
                raise ConfigError(f"no entry {name!r}" + (f" (alias chain {' -> '.join(seen)})" if len(seen) > 1
                                                            else ""), file=self.shown, field=field)
            spec = self.entries[name]
            alias = spec if isinstance(spec, str) else spec.get("id")
            if alias is None:
                return name, spec
            alias = str(alias)
            if alias in seen:
                raise ConfigError(f"alias cycle {' -> '.join(seen + [alias])}", file=self.shown, field=field)
            seen.append(alias)
            name = alias



def _read(path: Path, limit: int, limit_name: str, root: Path | None) -> bytes:
    """A file the user named (root None), or one the registry reaches (a sibling entry file, a
    modelgraded spec, a samples file in a folder): confined to the registry's folder, so a
    symlink among them that leads outside is refused, not followed."""
    if root is None:
        return read_regular(str(path), limit=limit, limit_name=limit_name)
    root_real = os.path.realpath(root)
    inside = os.path.relpath(os.path.abspath(path), root_real)
    return read_inside(inside, root_real, root_real, limit=limit, limit_name=limit_name)


def read_yaml(path: Path, shown: str, root: Path | None = None) -> Any:
    try:
        text = _read(path, DEFAULT_MAX_FILE_BYTES, "limits.max_file_bytes", root).decode("utf-8-sig")
        return registry_values(text)
    except FileRefused as exc:
        raise ConfigError(f"file {refusal(exc)}", file=shown) from None
    except UnicodeDecodeError:
        raise ConfigError("not valid UTF-8", file=shown) from None
    except ParseError as exc:
        raise ConfigError(exc.message, file=shown, line=exc.line, field=exc.field) from None


def registry_values(text: str) -> Any:
    """A registry file's values as OpenAI Evals' yaml.safe_load reads them (YAML 1.1: an unquoted
    off / no is false, on / yes true; a key given twice keeps its last value; anchors, aliases and
    merge keys as it resolves them), once the strict parser found nothing it refuses (its errors
    name the line and the field; what aliases expand to is sized there)."""
    parse_yaml(text, core=True, last_wins=True)  # the whole file checked: aliases sized, cycles refused
    return safe_load_last_wins(text)


def _data_path(rel: str, reg: Registry, name: str, field: str) -> Path:
    """Eval._prefix_registry_path: the path as is when it is a file, else <registry>/data/<path>;
    confined to the registry's folder."""
    candidates = [Path(rel), reg.root / "data" / rel]
    if not reg.in_evals:
        candidates.append(reg.folder / rel)
    for candidate in candidates:
        if candidate.is_file() or (candidate is not candidates[0] and candidate.is_dir()):
            try:
                inside = os.path.relpath(os.path.abspath(candidate), reg.root)
                return resolve_inside(inside, reg.root, reg.root, folder_ok=True)
            except FileRefused as exc:
                raise NotConverted(f"{field} {shorten(rel, 120)!r} {refusal(exc)}") from None
    raise NotConverted(f"{field} {shorten(rel, 120)!r} not found (looked for {candidates[1]})")


def read_samples(name: str, rel: str, reg: Registry, field: str) -> list[tuple[str, Any]]:
    """evals.data.get_jsonl: every line of the file (or of each *.jsonl in the folder) as JSON."""
    path = _data_path(rel, reg, name, field)
    files = sorted(p for p in path.iterdir() if p.name.endswith(".jsonl")) if path.is_dir() else [path]
    out: list[tuple[str, Any]] = []
    for file in files:
        shown = str(file)
        if file.is_dir():
            out += read_samples(name, str(file), reg, field)
            continue
        if file.name.endswith((".lz4", ".zst")):
            raise NotConverted(f"{field} {rel!r}: lz4 and zstd files are not read here (decompress it first)")
        try:
            raw = _read(file, reg.max_file_bytes, _FLAG, reg.root)
            if file.name.endswith(".gz"):
                raw = gunzip(raw, reg.max_file_bytes, _FLAG)
            text = raw.decode("utf-8")
        except FileRefused as exc:
            raise ConfigError(f"file {refusal(exc)}", file=shown, field=f"{name}.args.{field}") from None
        except UnicodeDecodeError as exc:  # the line and byte named, and a UTF-16 file said to be one
            raise ConfigError(not_utf8(raw, exc.start), file=shown, line=raw[: exc.start].count(b"\n") + 1,
                              field=f"{name}.args.{field}") from None
        except (OSError, EOFError, ValueError) as exc:
            raise ConfigError(f"cannot read it: {exc}", file=shown, field=f"{name}.args.{field}") from None
        if text.startswith("version https://git-lfs.github.com/spec/"):  # data not pulled: that entry only
            raise NotConverted(f"{field} {shown}: the file is a Git LFS pointer, not the data (fetch it: git lfs "
                               "pull)")
        if bare_cr_lines(text):
            raise ConfigError(BARE_CR, file=shown, line=1, field=f"{name}.args.{field}")
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()  # the newline that ends the last line
        for number, line in enumerate(lines, start=1):
            try:
                record = parse_json_line(line)
            except ValueError as exc:
                raise ConfigError(f"{exc} (OpenAI Evals reads every line)", file=shown, line=number,
                                  field=f"{name}.args.{field}") from None
            out.append((f"{file.name}:{number}", record))
    return out
