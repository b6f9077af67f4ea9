"""Bounded parsing of user documents (JSON, YAML, TOML): what a shared file can make us build.

A 1 KB YAML file with nine levels of aliases expands to gigabytes once anything walks it, a
JSON number of a million digits costs quadratic time to convert, and NaN or 1e400 load fine but
break every hash and report later. So, for every document read from a user file:

- YAML is built from the parser's event stream, never through PyYAML's constructor. An alias
  (the only way a small document becomes a large value) is a copy of its anchor's value, sized
  before it is made: a document that aliases expand past 100 times its size (at most 4 Mi nodes
  and characters) is refused at the alias, and so is an alias inside the value it names (a
  cycle). Merge keys (`<<`) are applied as PyYAML and js-yaml apply them. Tags other than the
  plain standard ones (no `!!python/...`) are refused. A timestamp stays the text it was written
  as (a date is not a JSON value).
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
from functools import lru_cache
from typing import Any

from .parse_errors import Bounds, ParseError, bounds_of, key_problem, yaml_problem
from .yamlalias import expansion_limit
from .yamlevents import _YamlBuilder

__all__ = ["Bounds", "ParseError", "check_tree", "parse_json", "parse_toml", "parse_yaml"]


class _Refused:
    """A number refused while the JSON parser ran (it cannot say where): the walk names its field."""

    __slots__ = ("why",)

    def __init__(self, why: str):
        self.why = why


class _Duplicate(dict):
    """An object in which a key appeared twice (found by the walk, so the path is named)."""

    __slots__ = ("key",)


#: how many refused numbers and duplicate keys the JSON hooks have made: a parse that made
#: none, of a text with fewer brackets than max_depth, needs no walk (most case lines)
_MARKS = [0]


def _long(text: str, max_chars: int) -> _Refused:
    _MARKS[0] += 1
    return _Refused(f"a number of {len(text)} characters is over the limit of {max_chars} "
                    "(limits.max_number_chars)")


#: where a YAML anchor may start (after a space, a line start or a flow indicator: `Q&A` is none)
_ANCHOR = re.compile(r"(?:^|[\s\[{,])&[^\s\[\]{},]", re.MULTILINE)


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
    max_depth, max_chars = bounds_of(limits)
    marks = _MARKS[0]
    try:
        value = _decoder(max_chars).decode(text)
    except RecursionError:
        raise ParseError(f"invalid JSON: nested deeper than {max_depth} levels (limits.max_depth)",
                         line=_deep_line(text, max_depth)) from None
    except ValueError as exc:
        raise ParseError(f"invalid JSON: {_json_problem(exc, text)}", line=_json_place(exc, text)[0]) from None
    if check and (_MARKS[0] != marks or text.count("[") + text.count("{") > max_depth):
        try:
            check_tree(value, limits)
        except ParseError as exc:
            exc.partial = value
            raise
    return value


#: what a JSON text nests by: a string (skipped whole), an opening or closing bracket, a line break
_JSON_NESTING = re.compile(r'"(?:[^"\\\n]|\\.)*"|[\[{\]}\n]')


def _deep_line(text: str, max_depth: int) -> int | None:
    """The line on which a JSON text first nests deeper than max_depth (the decoder's
    RecursionError says nowhere)."""
    depth, line = 0, 1
    for match in _JSON_NESTING.finditer(text):
        token = match[0]
        if token == "\n":
            line += 1
        elif token in "[{":
            depth += 1
            if depth > max_depth:
                return line
        elif token in "]}":
            depth -= 1
    return None


def _json_place(exc: ValueError, text: str) -> tuple[int | None, int | None]:
    """(line, column) where the decoder stopped, counting a bare CR as a line break as editors
    (and the YAML reader) do: the decoder counts "\\n" only, so a classic-Mac file's every error
    was said on line 1 at a column thousands long."""
    pos, line, col = getattr(exc, "pos", None), getattr(exc, "lineno", None), getattr(exc, "colno", None)
    if not isinstance(pos, int) or not 0 <= pos <= len(text) or "\r" not in text[:pos]:
        return line, col
    head = text[:pos].replace("\r\n", "\n").replace("\r", "\n")
    return head.count("\n") + 1, len(head) - head.rfind("\n")


def _json_problem(exc: ValueError, text: str) -> str:
    """The decoder's reason with where it stopped: its column, and the character when it is a
    control character (a NUL byte, say), which no terminal line shows. The stdlib's own
    message for one ends in a bare "at"."""
    msg = str(getattr(exc, "msg", exc)).removesuffix(" at")
    pos, col = getattr(exc, "pos", None), _json_place(exc, text)[1]
    found = ""
    if isinstance(pos, int) and 0 <= pos < len(text) and ord(text[pos]) < 32 and text[pos] not in " \t\r\n":
        if msg == "Invalid control character":
            msg = f"control character U+{ord(text[pos]):04X} inside a string (write it escaped)"
        else:
            found = f" (found control character U+{ord(text[pos]):04X})"
    if not found and isinstance(pos, int) and 0 <= pos <= len(text):
        found = _json_hint(msg, text, pos)
    return (msg if col is None else f"{msg} at column {col}") + found


def _json_hint(msg: str, text: str, pos: int) -> str:
    """The usual cause of a decoder's complaint, as a newcomer writing JSON by hand meets it."""
    here = text[pos:pos + 5]
    before = text[:pos].rstrip()[-1:]
    if msg.startswith(("Expecting property name", "Expecting value")):
        if before == "," and here[:1] and here[:1] in "]}":
            return " (a comma after the last item: JSON allows none)"
        if here[:1] == "'":
            return " (JSON takes double quotes, not single ones)"
        if here.startswith(("True", "False", "None")):
            return " (JSON writes true, false and null in lower case)"
    if msg.startswith("Expecting ',' delimiter"):
        return " (a ',' missing between two items, or a '\"' inside a text not escaped as \\\")"
    return ""


def check_tree(value: Any, limits: Any = None, *, top: tuple = ()) -> None:
    """Walk a parsed value (iteratively: it may be deep) and raise ParseError at the first
    refused number, duplicate or non-string key, non-finite float or level past max_depth."""
    max_depth, max_chars = bounds_of(limits)
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
                    raise ParseError(key_problem(key), path=path)
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


#: one part of a TOML key: bare, "basic" or 'literal' (possessive: a failed match never backtracks)
_TOML_PART = r"""(?:[A-Za-z0-9_-]++|"(?:[^"\\\n]|\\.)*+"|'[^'\n]*+')"""


@lru_cache(maxsize=8)
def _toml_deep_key(max_depth: int) -> re.Pattern:
    """A key (a table header, a key/value or an inline table's entry) of more than max_depth
    dotted parts."""
    return re.compile(rf"(?:^[ \t]*\[?\[?|[{{,])[ \t]*{_TOML_PART}(?:[ \t]*\.[ \t]*{_TOML_PART}){{{max_depth},}}",
                      re.MULTILINE)


#: a TOML decimal literal (digits and underscores) after `=`, `[` or `,`: the one tomllib cannot convert
_TOML_LONG_INT = re.compile(r"(?:=|\[|,)[ \t]*[+-]?([0-9][0-9_]*)")


def _toml_long_number(text: str, max_chars: int) -> ParseError:
    """The refusal of an integer too long for int() (Python stops at 4,300 digits), at its line."""
    for match in _TOML_LONG_INT.finditer(text):
        if len(match.group(1)) > max_chars:
            line = text.count("\n", 0, match.start(1)) + 1
            return ParseError(f"a number of {len(match.group(1))} characters is over the limit of {max_chars} "
                              "(limits.max_number_chars)", line=line, path=_toml_key_at(text, line))
    return ParseError(f"a number over {max_chars} digits (limits.max_number_chars)")


_TOML_HEADER = re.compile(r"[ \t]*\[\[?[ \t]*([^\[\]]+?)[ \t]*\]\]?[ \t]*(?:#.*)?")
_TOML_KEY = re.compile(r"[ \t]*((?:[A-Za-z0-9_-]+|\"[^\"\n]*\"|'[^'\n]*')(?:[ \t]*\.[ \t]*(?:[A-Za-z0-9_-]+|\"[^\"\n]*\"|'[^'\n]*'))*)[ \t]*=")


def _toml_key_at(text: str, line: int) -> tuple:
    """The key written on a line under its latest `[table]` header (empty when the line holds none)."""
    lines = text.split("\n", line)[:line]
    found = _TOML_KEY.match(lines[-1])
    if found is None:
        return ()
    table = next((m[1] for m in map(_TOML_HEADER.fullmatch, reversed(lines[:-1])) if m), "")
    return tuple(part.strip().strip("\"'") for part in re.findall(r"\"[^\"]*\"|'[^']*'|[^.]+", f"{table}.{found[1]}")
                 if part.strip())


def parse_toml(text: str, limits: Any = None) -> Any:
    """A TOML document (tomllib already refuses duplicate keys), then the same walk. A dotted key
    deeper than max_depth is refused before tomllib sees it: tomllib takes time quadratic in a
    key's parts (a 200 KB header `[a.a.a...]` of 100,000 parts took minutes)."""
    import tomllib

    max_depth = bounds_of(limits)[0]
    deep = _toml_deep_key(max_depth).search(text) if text.count(".") > max_depth else None
    if deep is not None:
        raise ParseError(f"invalid TOML: a key of more than {max_depth} dotted parts (limits.max_depth)",
                         line=text.count("\n", 0, deep.start()) + 1)
    try:
        value = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ParseError(f"invalid TOML: {str(exc).splitlines()[0]}", line=getattr(exc, "lineno", None)) from None
    except ValueError:  # int() of a decimal literal past Python's 4,300 digits, before check_tree sees it
        raise _toml_long_number(text, bounds_of(limits)[1]) from None
    except RecursionError:
        raise ParseError("invalid TOML: nested too deeply") from None
    check_tree(value, limits)
    return value


def parse_yaml(text: str, limits: Any = None, *, core: bool = False, where: dict | None = None,
               last_wins: bool = False) -> tuple[Any, dict[str, list[int]]]:
    """One YAML document, bounded; and the line of each item of every top-level list (so a
    case in `cases:` is named by its line). `core`: plain scalars typed by YAML 1.2's core
    schema as js-yaml reads them (promptfoo's configs: `yes` is text, `1e3` a number).
    `where`, when given, is filled with the line of every value by its path (keys and indexes):
    a mapping entry's is its key's line, a list item's the line it starts on. `last_wins`: a key
    given twice keeps its last value (as yaml.safe_load does) instead of being refused."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    if where is None and ("<<" in text or _ANCHOR.search(text)):
        where = {}  # the lines of anchored values, for the values aliases copy (and cases: *a)
    expand = expansion_limit(len(text))
    builder = _YamlBuilder(*bounds_of(limits), core=core, where=where, expand_limit=expand, last_wins=last_wins)
    try:
        return builder.build(yaml.parse(text, Loader=loader))
    except ParseError as exc:
        exc.partial = builder.root  # what was built before the problem (to name a case by its id)
        raise
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or ""
        if "invalid Unicode character escape" in problem and loader is not yaml.SafeLoader:
            # LibYAML refuses "\ud83c\udf89", a surrogate pair as JSON writes it (YAML is JSON's
            # superset): read by PyYAML's own scanner, the pair is joined
            _ = where is not None and where.clear()
            try:
                return _YamlBuilder(*bounds_of(limits), core=core, where=where, pairs=True, expand_limit=expand,
                                    last_wins=last_wins).build(
                    yaml.parse(text, Loader=yaml.SafeLoader))
            except yaml.YAMLError as again:  # "\ud800 unterminated: PyYAML's scanner refuses it too
                exc = again
            except RecursionError:
                raise ParseError("invalid YAML: nested too deeply") from None
        message, line = yaml_problem(exc, text)
        raise ParseError(message, line=line) from None
    except RecursionError:
        raise ParseError("invalid YAML: nested too deeply") from None
