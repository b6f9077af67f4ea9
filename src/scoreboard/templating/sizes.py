"""Sizes: how a value a template makes is sized and charged against a render's budget
(limits.py's _Budget; the bounds are bounds.py's), before it is made where it could be too big.

- _text_size: about how many characters str(value) (or its JSON) has, walked once, memoized,
  counted up to MAX_TEXT + 1 and no further; _check_text refuses past MAX_TEXT;
- _charge: the bytes of a value the template made, and its size against MAX_TEXT / MAX_ITEMS;
- _items_of, _percent_size, _method_check: a generator drawn under MAX_ITEMS, `fmt % args`, and
  the str / bytes methods that can make much more than they are given, sized before they run.
Jinja2 is imported on first use."""

from __future__ import annotations

import itertools
import re
import sys
from typing import Any

from .bounds import (
    _MAX_WALK_DEPTH,
    _SLOT_BYTES,
    _SMALL,
    MAX_INT_BITS,
    MAX_ITEMS,
    MAX_RENDER_BYTES,
    MAX_TEXT,
    _check_size,
    _limit,
    _too_long,
    _too_many,
)
from .js import _is_undef
from .limits import _Budget


def _escaped_len(s: str) -> int:
    """len(markupsafe.escape(s)): & ' " become 5 characters, < > 4."""
    return len(s) + 4 * (s.count("&") + s.count("'") + s.count('"')) + 3 * (s.count("<") + s.count(">"))


def _str_size(s: str, ascii_json: bool) -> int:
    """At most about how long `s` is quoted inside a container's text (repr, JSON)."""
    n = len(s)
    if ascii_json and not s.isascii():
        return 12 * n + 2  # \\ud83d\\ude00
    if not s.isprintable():
        return 6 * n + 2  # \\u0001
    if ascii_json:
        return n + 2 + 5 * (s.count("<") + s.count(">") + s.count("&") + s.count("'"))
    return n + 2


_CONTAINER_TYPES: tuple = (list, tuple, dict, set, frozenset)
_CONTAINERS = frozenset(_CONTAINER_TYPES)


def _is_container(v: Any) -> bool:
    from jinja2.utils import Namespace

    return isinstance(v, (*_CONTAINER_TYPES, Namespace)) or type(v).__name__ in ("dict_keys", "dict_values",
                                                                                  "dict_items")


def _leaf_size(v: Any, ascii_json: bool = False) -> int | None:
    """The text size of a value that holds no others (None for a container)."""
    t = type(v)
    if t is int:
        return v.bit_length() // 3 + 2
    if t is str:
        return _str_size(v, ascii_json)
    if t in _CONTAINER_TYPES:
        return None
    if isinstance(v, str):
        return _str_size(v, ascii_json)
    if v is None or isinstance(v, bool):
        return 5
    if isinstance(v, int):
        return v.bit_length() // 3 + 2
    if isinstance(v, float):
        return 24
    if isinstance(v, bytes):
        return 4 * len(v) + 3
    if _is_container(v):
        return None
    return 80


def _children(v: Any):
    from jinja2.utils import Namespace

    if isinstance(v, Namespace):
        v = object.__getattribute__(v, "_Namespace__attrs")
    if isinstance(v, dict):
        return itertools.chain.from_iterable(v.items())
    return iter(v)


def _text_size(b: _Budget, value: Any, indent: int = 0, ascii_json: bool = False) -> int:
    """About how many characters str(value) has (its JSON with ascii_json; `indent` more per item
    and level, as json's and pprint's indentation), counted up to MAX_TEXT + 1 and no further:
    a list holding one long text a million times is "too long" after a few steps."""
    if type(value) is str or isinstance(value, str):
        return len(value)
    size = _leaf_size(value, ascii_json)
    if size is not None:
        return size
    hit = b.memo.get((id(value), indent, ascii_json))
    if hit is not None and hit[0] is value:
        return hit[1]
    from jinja2.utils import Namespace

    cap = MAX_TEXT + 1
    memo = b.memo
    frames = [[value, _children(value), 2]]
    visited = 0
    while True:
        top = frames[-1]
        depth = len(frames)
        sep = 2 + (1 + depth * indent if indent else 0)
        pushed = None
        if top[2] < cap:
            for child in top[1]:
                visited += 1
                size = _leaf_size(child, ascii_json)
                if size is None:
                    hit = memo.get((id(child), indent, ascii_json))
                    if hit is not None and hit[0] is child:
                        size = hit[1]
                    elif depth >= _MAX_WALK_DEPTH:
                        size = 16
                    else:
                        pushed = [child, _children(child), 2]
                        break
                top[2] += size + sep
                if top[2] >= cap:
                    break
        if visited >= 4096:
            b.spend(visited)
            visited = 0
        if pushed is not None:
            frames.append(pushed)
            continue
        frames.pop()
        size = min(top[2], cap)
        if not isinstance(top[0], Namespace):  # a namespace's attributes can change
            memo[(id(top[0]), indent, ascii_json)] = (top[0], size)
        if not frames:
            b.spend(visited)
            return size
        parent = frames[-1]
        parent[2] += size + 2 + (1 + len(frames) * indent if indent else 0)


def _check_text(b: _Budget, value: Any, what: str) -> int:
    n = _text_size(b, value)
    if n > MAX_TEXT:
        raise _too_long(what)
    return n


def _charge(b: _Budget, value: Any) -> None:
    """Count a value the template made: its bytes, and its size against MAX_TEXT / MAX_ITEMS."""
    t = type(value)
    if t is int or t is float or t is bool or value is None:
        if t is int and value.bit_length() > MAX_INT_BITS:
            raise _limit(f"the template may not make a number of more than {MAX_INT_BITS:,} bits")
        return
    if t is str:
        if len(value) <= _SMALL:  # paid by its node (_NODE_BYTES)
            return
        if len(value) > MAX_TEXT:
            raise _too_long("the template")
        b.bytes += 49 + len(value)
        if b.bytes > MAX_RENDER_BYTES or not value.isascii():
            b.add_bytes(sys.getsizeof(value) - 49 - len(value))  # 2 or 4 bytes a character past ASCII
        return
    if isinstance(value, (str, bytes)):
        if len(value) > MAX_TEXT:
            raise _too_long("the template")
        b.add_bytes(sys.getsizeof(value))
    elif isinstance(value, (list, tuple)):
        if len(value) > MAX_ITEMS:
            raise _too_many("the template")
        b.add_bytes(56 + _SLOT_BYTES * len(value))
    elif isinstance(value, (dict, set, frozenset)):
        if len(value) > MAX_ITEMS:
            raise _too_many("the template")
        b.add_bytes(sys.getsizeof(value) + _SLOT_BYTES * len(value))
    elif isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
        raise _limit(f"the template may not make a number of more than {MAX_INT_BITS:,} bits")
    elif type(value).__name__ == "Namespace":  # namespace(mapping) copies it
        _charge(b, object.__getattribute__(value, "_Namespace__attrs"))


def _items_of(b: _Budget, value: Any, what: str) -> Any:
    """`value` as a list or tuple (a generator is drawn, at most MAX_ITEMS items)."""
    if type(value) is list or isinstance(value, (list, tuple, str)) or _is_undef(value):
        return value
    items = list(itertools.islice(iter(value), MAX_ITEMS + 1))
    if len(items) > MAX_ITEMS:
        raise _too_many(what)
    b.spend(len(items))
    return items


_PERCENT = re.compile(r"%(?:\(([^)]*)\))?[#0\- +]*(\*|\d+)?(?:\.(\*|\d+))?[hlL]?(.)", re.DOTALL)


def _percent_size(b: _Budget, fmt: Any, args: Any, escape: bool = False) -> None:
    """Refuse `fmt % args` when it would make text past MAX_TEXT (widths, precisions, values)."""
    from collections.abc import Mapping

    mapping = isinstance(args, Mapping)
    seq = args if isinstance(args, tuple) else (args,)
    i, total = 0, len(fmt)

    def number(token: Any) -> int:
        nonlocal i
        if token == "*":
            v = seq[i] if i < len(seq) else 0
            i += 1
            return v if isinstance(v, int) else 0
        if token and len(token) > 9:
            raise _too_long("a % format")
        return int(token) if token else 0

    for m in _PERCENT.finditer(fmt if isinstance(fmt, str) else fmt.decode("latin-1")):
        key, width, prec, conv = m.groups()
        if conv == "%":
            continue
        w, p = number(width), number(prec)
        if key is not None and mapping:
            arg = args.get(key)
        elif mapping:
            arg = args
        else:
            arg = seq[i] if i < len(seq) else None
            i += 1
        size = _text_size(b, arg) * (10 if conv in "ra" else 1) * (6 if escape else 1)
        total += max(w, 0) + max(p, 0) + size + 32
        if total > MAX_TEXT:
            raise _too_long("a % format")


def _arg(args: tuple, kwargs: dict, i: int, name: str, default: Any = None) -> Any:
    return args[i] if len(args) > i else kwargs.get(name, default)


def _method_check(b: _Budget, obj: Any, name: str, args: tuple, kwargs: dict) -> tuple:
    """Size a call of a str or bytes method that can make much more than it is given (or
    int.to_bytes) before it runs; returns its arguments (join's drawn into a list)."""
    what = f"{name}()"
    if isinstance(obj, int):
        if name == "to_bytes":
            length = _arg(args, kwargs, 0, "length", 1)
            if isinstance(length, int) and length > MAX_TEXT:
                raise _too_long(what)
        return args
    n = len(obj)
    grow = 6 if hasattr(obj, "__html__") else 1  # Markup's methods escape what they are given
    if name in ("center", "ljust", "rjust", "zfill"):
        width = _arg(args, kwargs, 0, "width", 0)
        if isinstance(width, int):
            _check_size(max(n, width), what)
    elif name == "expandtabs":
        size = _arg(args, kwargs, 0, "tabsize", 8)
        if isinstance(size, int):
            _check_size(n + obj.count("\t" if isinstance(obj, str) else b"\t") * max(size, 0), what)
    elif name == "join" and args:
        items = _items_of(b, args[0], what)
        if not _is_undef(items):
            total = max(len(items) - 1, 0) * n
            for x in items:
                total += (len(x) if isinstance(x, (str, bytes)) else _text_size(b, x)) * grow
                if total > MAX_TEXT:
                    raise _too_long(what)
            args = (items, *args[1:])
    elif name == "replace":
        old, new = _arg(args, kwargs, 0, "old"), _arg(args, kwargs, 1, "new")
        count = _arg(args, kwargs, 2, "count", -1)
        if isinstance(old, (str, bytes)) and isinstance(new, (str, bytes)) and type(old) is type(new) \
                and isinstance(obj, str) is isinstance(old, str):
            hits = n + 1 if not old else obj.count(old)
            if isinstance(count, int) and count >= 0:
                hits = min(hits, count)
            _check_size(n + hits * max(0, len(new) * grow - len(old)), what)
    elif name == "translate" and args:
        table = args[0]
        values = table.values() if isinstance(table, dict) else (table if isinstance(table, (list, tuple)) else ())
        b.spend(len(values))
        widest = max((len(v) for v in values if isinstance(v, (str, bytes))), default=1)
        _check_size(n * max(widest, 1), what)
    elif name in ("split", "rsplit"):
        sep = _arg(args, kwargs, 0, "sep")
        limit = _arg(args, kwargs, 1, "maxsplit", -1)
        try:
            pieces = (n + 1) // 2 + 1 if sep is None else obj.count(sep) + 1
        except TypeError:
            return args
        if isinstance(limit, int) and limit >= 0:
            pieces = min(pieces, limit + 1)
        if pieces > MAX_ITEMS:
            raise _too_many(what)
        b.add_bytes(pieces * 56)
    elif name == "splitlines":
        marks = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029" if isinstance(obj, str) else (b"\n", b"\r")
        pieces = sum(obj.count(c) for c in marks) + 1
        if pieces > MAX_ITEMS:
            raise _too_many(what)
        b.add_bytes(pieces * 56)
    elif name == "encode":
        _check_size(4 * n, what)
    return args
