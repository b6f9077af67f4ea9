"""Bounded parsing of user documents (JSON, YAML, TOML): what a shared file can make us build.

A 1 KB YAML file with nine levels of aliases expands to gigabytes once anything walks it, a
JSON number of a million digits costs quadratic time to convert, and NaN or 1e400 load fine but
break every hash and report later. So, for every document read from a user file:

- YAML is built from the parser's event stream, never through PyYAML's constructor: anchors
  and aliases are refused (the only way a small document becomes a large value), and so are
  merge keys and tags other than the plain standard ones (no `!!python/...`). A timestamp
  stays the text it was written as (a date is not a JSON value).
- Nesting deeper than `max_depth` and number literals longer than `max_number_chars` are refused;
  NaN, Infinity and numbers out of a double's range (1e400) are refused, naming their field.
- A key given twice in one mapping is refused, naming it (JSON and YAML both keep the last one
  silently); a key that is not a string (YAML reads unquoted `yes`, `on`, `true` as booleans)
  is refused, with the hint to quote it.

Errors are ParseError(message, line, path): the caller adds the file (and case) to the message.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any


@dataclass(frozen=True)
class Bounds:
    """The parsing limits (a suite's `limits:` carries the same two fields)."""

    max_depth: int = 64
    max_number_chars: int = 100


class ParseError(Exception):
    """A document that may not be loaded; `path` locates the value (keys and indexes)."""

    def __init__(self, message: str, *, line: int | None = None, path: tuple = ()):
        super().__init__(message)
        self.message, self.line, self.path = message, line, tuple(path)
        self.partial: Any = None

    @property
    def field(self) -> str | None:
        """The path as dotted text (None at the top of the document)."""
        return ".".join(str(p) for p in self.path) or None


class _Refused:
    """A number refused while the JSON parser ran (it cannot say where): the walk names its field."""

    __slots__ = ("why",)

    def __init__(self, why: str):
        self.why = why


class _Duplicate(dict):
    """An object in which a key appeared twice (found by the walk, so the path is named)."""

    __slots__ = ("key",)


def _bounds(limits: Any) -> tuple[int, int]:
    limits = limits if limits is not None else Bounds()
    return int(limits.max_depth), int(limits.max_number_chars)


#: how many refused numbers and duplicate keys the JSON hooks have made: a parse that made
#: none, of a text with fewer brackets than max_depth, needs no walk (most case lines)
_MARKS = [0]


def _long(text: str, max_chars: int) -> _Refused:
    _MARKS[0] += 1
    return _Refused(f"a number of {len(text)} characters is over the limit of {max_chars} "
                    "(limits.max_number_chars)")


@lru_cache(maxsize=8)
def _decoder(max_chars: int) -> json.JSONDecoder:
    def pairs(items: list) -> dict:
        out = dict(items)
        if len(out) != len(items):
            seen: set = set()
            for key, _ in items:
                if key in seen:
                    _MARKS[0] += 1
                    dup = _Duplicate(out)
                    dup.key = key
                    return dup
                seen.add(key)
        return out

    def integer(text: str) -> Any:
        return _long(text, max_chars) if len(text) > max_chars else int(text)

    def real(text: str) -> Any:
        if len(text) > max_chars:
            return _long(text, max_chars)
        value = float(text)
        if math.isfinite(value):
            return value
        _MARKS[0] += 1
        return _Refused(f"number {text} is out of range (not a finite double)")

    def constant(text: str) -> Any:
        _MARKS[0] += 1
        return _Refused(f"{text} is not a finite number (JSON has no NaN or Infinity)")

    return json.JSONDecoder(object_pairs_hook=pairs, parse_int=integer, parse_float=real,
                            parse_constant=constant)


def parse_json(text: str, limits: Any = None, *, check: bool = True) -> Any:
    """One JSON document, bounded (see the module's docstring). A refusal found after parsing
    carries the parsed value as `partial` (to name a case by its id); check=False only parses
    (refused numbers left as markers: for sniffing a format, never for use)."""
    max_depth, max_chars = _bounds(limits)
    marks = _MARKS[0]
    try:
        value = _decoder(max_chars).decode(text)
    except RecursionError:
        raise ParseError(f"invalid JSON: nested deeper than {max_depth} levels (limits.max_depth)") from None
    except ValueError as exc:
        raise ParseError(f"invalid JSON: {_json_problem(exc, text)}", line=getattr(exc, "lineno", None)) from None
    if check and (_MARKS[0] != marks or text.count("[") + text.count("{") > max_depth):
        try:
            check_tree(value, limits)
        except ParseError as exc:
            exc.partial = value
            raise
    return value


def _json_problem(exc: ValueError, text: str) -> str:
    """The decoder's reason with where it stopped: its column, and the character when it is a
    control character (a NUL byte, say), which no terminal line shows. The stdlib's own
    message for one ends in a bare "at"."""
    msg = str(getattr(exc, "msg", exc)).removesuffix(" at")
    pos, col = getattr(exc, "pos", None), getattr(exc, "colno", None)
    found = ""
    if isinstance(pos, int) and 0 <= pos < len(text) and ord(text[pos]) < 32 and text[pos] not in " \t\r\n":
        if msg == "Invalid control character":
            msg = f"control character U+{ord(text[pos]):04X} inside a string (write it escaped)"
        else:
            found = f" (found control character U+{ord(text[pos]):04X})"
    return (msg if col is None else f"{msg} at column {col}") + found


def _key_problem(key: Any) -> str:
    hint = (" (YAML reads unquoted yes/no/on/off/true/false as booleans: quote it)"
            if isinstance(key, bool) or key is None else " (quote it)")
    return f"key {key!r} is not a string{hint}"


def check_tree(value: Any, limits: Any = None, *, top: tuple = ()) -> None:
    """Walk a parsed value (iteratively: it may be deep) and raise ParseError at the first
    refused number, duplicate or non-string key, non-finite float or level past max_depth."""
    max_depth, max_chars = _bounds(limits)
    max_bits = int(max_chars * 3.33) + 1  # a decimal digit is ~3.32 bits
    stack: list[tuple[Any, int, tuple]] = [(value, 0, top)]
    duplicate: ParseError | None = None  # reported last: a value's own problem is named first
    while stack:
        item, depth, path = stack.pop()
        if isinstance(item, dict):
            if depth >= max_depth:
                raise ParseError(f"nested deeper than {max_depth} levels (limits.max_depth)", path=path)
            if isinstance(item, _Duplicate) and duplicate is None:
                duplicate = ParseError(f"duplicate key {item.key!r}", path=path)
            for key, sub in item.items():
                if not isinstance(key, str):
                    raise ParseError(_key_problem(key), path=path)
                if isinstance(sub, (dict, list, _Refused, float, int)):
                    stack.append((sub, depth + 1, path + (key,)))
        elif isinstance(item, list):
            if depth >= max_depth:
                raise ParseError(f"nested deeper than {max_depth} levels (limits.max_depth)", path=path)
            stack.extend((sub, depth + 1, path + (index,)) for index, sub in enumerate(item)
                         if isinstance(sub, (dict, list, _Refused, float, int)))
        elif isinstance(item, _Refused):
            raise ParseError(item.why, path=path)
        elif isinstance(item, float) and not math.isfinite(item):
            raise ParseError("is not a finite number (NaN and Infinity are not allowed)", path=path)
        elif isinstance(item, int) and not isinstance(item, bool) and item.bit_length() > max_bits:
            raise ParseError(f"a number over {max_chars} digits (limits.max_number_chars)", path=path)
    if duplicate is not None:
        raise duplicate


def parse_toml(text: str, limits: Any = None) -> Any:
    """A TOML document (tomllib already refuses duplicate keys), then the same walk."""
    import tomllib

    try:
        value = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ParseError(f"invalid TOML: {str(exc).splitlines()[0]}", line=getattr(exc, "lineno", None)) from None
    except RecursionError:
        raise ParseError("invalid TOML: nested too deeply") from None
    check_tree(value, limits)
    return value


def parse_yaml(text: str, limits: Any = None, *, core: bool = False,
               where: dict | None = None) -> tuple[Any, dict[str, list[int]]]:
    """One YAML document, bounded; and the line of each item of every top-level list (so a
    case in `cases:` is named by its line). `core`: plain scalars typed by YAML 1.2's core
    schema as js-yaml reads them (promptfoo's configs: `yes` is text, `1e3` a number).
    `where`, when given, is filled with the line of every value by its path (keys and indexes):
    a mapping entry's is its key's line, a list item's the line it starts on."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    builder = _YamlBuilder(*_bounds(limits))
    builder.core, builder.where = core, where
    try:
        return builder.build(yaml.parse(text, Loader=loader))
    except ParseError as exc:
        exc.partial = builder.root  # what was built before the problem (to name a case by its id)
        raise
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or (str(exc).splitlines() or ["invalid YAML"])[0]
        raise ParseError(f"invalid YAML: {problem}", line=mark.line + 1 if mark else None) from None
    except RecursionError:
        raise ParseError("invalid YAML: nested too deeply") from None


_STD = "tag:yaml.org,2002:"
_CORE_NULL = re.compile(r"~|null|Null|NULL|")
_CORE_BOOL = re.compile(r"true|True|TRUE|false|False|FALSE")
_CORE_INT = re.compile(r"[-+]?(?:0b[01_]+|0o[0-7_]+|0x[0-9a-fA-F_]+|[0-9][0-9_]*)")
_CORE_FLOAT = re.compile(r"[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?(?:[eE][-+]?[0-9]+)?|[-+]?\.[0-9_]+(?:[eE][-+]?[0-9]+)?"
                         r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)")
_PLAIN_TAGS = {_STD + name for name in ("str", "int", "float", "bool", "null", "timestamp", "seq", "map")}
_NO_KEY = object()


class _Frame:
    __slots__ = ("index", "key", "key_lines", "lines", "path", "value")

    def __init__(self, value: Any, path: tuple, lines: list | None):
        self.value, self.path, self.key, self.index, self.lines = value, path, _NO_KEY, 0, lines
        self.key_lines: dict[str, int] = {}  # a mapping's keys -> their lines (a duplicate names both)


class _YamlBuilder:
    """Values from PyYAML's event stream, one event at a time (no recursion, no aliases), with
    the scalars typed by PyYAML's own resolver and constructors so values match safe_load's."""

    def __init__(self, max_depth: int, max_chars: int):
        import yaml

        self.yaml, self.max_depth, self.max_chars = yaml, max_depth, max_chars
        self.resolver = yaml.resolver.Resolver()
        self.constructor = yaml.constructor.SafeConstructor()
        self.stack: list[_Frame] = []
        self.lines: dict[str, list[int]] = {}
        self.root: Any = None

    def build(self, events: Any) -> tuple[Any, dict[str, list[int]]]:
        y = self.yaml
        documents = 0
        for event in events:
            if isinstance(event, y.DocumentStartEvent):
                documents += 1
                if documents > 1:
                    raise ParseError("invalid YAML: expected a single document", line=event.start_mark.line + 1)
                continue
            if not isinstance(event, (y.NodeEvent, y.CollectionEndEvent)):
                continue  # stream and document ends
            line = event.start_mark.line + 1
            if isinstance(event, y.CollectionEndEvent):
                self.stack.pop()
                continue
            if isinstance(event, y.AliasEvent):
                raise ParseError(f"YAML aliases (*{event.anchor}) are not allowed: write the value out",
                                 line=line, path=self._path())
            if event.anchor is not None:
                raise ParseError(f"YAML anchors (&{event.anchor}) are not allowed: write the value out",
                                 line=line, path=self._path())
            if isinstance(event, y.ScalarEvent):
                value = self._scalar(event, line)
            else:
                wanted = _STD + ("map" if isinstance(event, y.MappingStartEvent) else "seq")
                if event.tag not in (None, "!", wanted):
                    raise ParseError(f"YAML tag {event.tag} is not allowed", line=line, path=self._path())
                if len(self.stack) >= self.max_depth:
                    raise ParseError(f"nested deeper than {self.max_depth} levels (limits.max_depth)",
                                     line=line, path=self._path())
                value = {} if isinstance(event, y.MappingStartEvent) else []
            path = self._place(value, line)
            if not self.stack and path == ():
                self.root = value
            if isinstance(value, (dict, list)):
                lines = None
                if isinstance(value, list) and len(path) == 1 and isinstance(path[0], str):
                    lines = self.lines.setdefault(path[0], [])
                self.stack.append(_Frame(value, path, lines))
        return self.root, self.lines

    def _path(self) -> tuple:
        if not self.stack:
            return ()
        top = self.stack[-1]
        if isinstance(top.value, list):
            return top.path + (top.index,)
        return top.path if top.key is _NO_KEY else top.path + (top.key,)

    def _place(self, value: Any, line: int) -> tuple:
        """Put a value where the stream says it goes; its path (None for a key)."""
        if not self.stack:
            return ()
        top = self.stack[-1]
        if isinstance(top.value, list):
            if top.lines is not None:
                top.lines.append(line)
            if self.where is not None:
                self.where[top.path + (top.index,)] = line
            top.value.append(value)
            top.index += 1
            return top.path + (top.index - 1,)
        if top.key is _NO_KEY:
            if isinstance(value, (dict, list)):
                raise ParseError("a mapping key must be a plain value", line=line, path=top.path)
            if not isinstance(value, str):
                raise ParseError(_key_problem(value), line=line, path=top.path)
            if value in top.value or value in top.key_lines:
                raise ParseError(f"duplicate key {value!r} (first at line {top.key_lines[value]}, again at line "
                                 f"{line}: only one may be given)", line=line, path=top.path)
            top.key, top.key_lines[value] = value, line
            return None  # type: ignore[return-value]
        key, top.key = top.key, _NO_KEY
        top.value[key] = value
        if self.where is not None:
            self.where[top.path + (key,)] = top.key_lines[key]
        return top.path + (key,)

    core = False
    where: dict | None = None

    def _core(self, text: str, line: int) -> Any:
        """A plain scalar under YAML 1.2's core schema (js-yaml's default schema)."""
        if _CORE_NULL.fullmatch(text):
            return None
        if _CORE_BOOL.fullmatch(text):
            return text.lower() == "true"
        number = _CORE_INT.fullmatch(text) or _CORE_FLOAT.fullmatch(text)
        if number is None:
            return text
        if len(text) > self.max_chars:
            raise ParseError(f"a number of {len(text)} characters is over the limit of {self.max_chars} "
                             "(limits.max_number_chars)", line=line, path=self._path())
        clean = text.replace("_", "")
        if _CORE_INT.fullmatch(text):
            sign = -1 if clean.startswith("-") else 1
            body = clean.lstrip("+-")
            base = {"0x": 16, "0o": 8, "0b": 2}.get(body[:2].lower(), 10)
            return sign * int(body[2:] if base != 10 else body, base)
        value = float(clean)
        if not math.isfinite(value):
            raise ParseError(f"number {text} is not a finite number (NaN and Infinity are not allowed)",
                             line=line, path=self._path())
        return value

    def _scalar(self, event: Any, line: int) -> Any:
        if self.core and event.tag is None and event.implicit[0]:
            return self._core(event.value, line)
        tag = event.tag
        if tag is None or tag == "!":
            tag = self.resolver.resolve(self.yaml.ScalarNode, event.value, event.implicit)
        elif tag not in _PLAIN_TAGS:
            raise ParseError(f"YAML tag {tag} is not allowed", line=line, path=self._path())
        if tag == _STD + "merge":
            raise ParseError("YAML merge keys (<<) are not allowed", line=line, path=self._path())
        if tag in (_STD + "int", _STD + "float") and len(event.value) > self.max_chars:
            raise ParseError(f"a number of {len(event.value)} characters is over the limit of "
                             f"{self.max_chars} (limits.max_number_chars)", line=line, path=self._path())
        if tag not in _PLAIN_TAGS or tag == _STD + "timestamp":
            return event.value  # a date stays its text; "=" and the like are strings
        node = self.yaml.ScalarNode(tag, event.value, event.start_mark, event.end_mark, style=event.style)
        try:
            value = self.constructor.yaml_constructors[tag](self.constructor, node)
        except (ValueError, self.yaml.YAMLError) as exc:
            raise ParseError(f"invalid YAML value {event.value[:40]!r}: {exc}", line=line, path=self._path()) from None
        if isinstance(value, float) and not math.isfinite(value):
            why = ("is not a finite number (NaN and Infinity are not allowed)" if "." == event.value.lstrip("+-")[:1]
                   else f"number {event.value} is out of range (not a finite double)")
            raise ParseError(why, line=line, path=self._path())
        return value
