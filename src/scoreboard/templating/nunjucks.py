"""Nunjucks 3's builtin filters and tests for templates converted from promptfoo
(importers/nunjucks.py), ported from nunjucks/src (filters.js, tests.js, lib.js at 3.2.4): each as
`nj_NAME` in NJ_FILTERS (Jinja2's filters of the same names differ, and native templates keep
Jinja2's), with `nj_truthy` (JavaScript truthiness for `{% if %}`) and `nj_iter` / `nj_pairs`
(what Nunjucks' `{% for %}` walks). Values are JavaScript's as js.py holds them. What a filter
makes is bounded by the wrappers of limits.py; a few ports check their own sizes against
bounds.py first. The string filters are in nunjucks_text.py, those over arrays and objects in
nunjucks_lists.py; this module holds the rest and the table."""

from __future__ import annotations

import math
from typing import Any

from .js import (
    _JS_WS_CHARS,
    _fail,
    _is_undef,
    _js_items,
    _js_pow,
    _num,
    _undefined,
    js_member,
    js_number,
    js_str,
    js_to_number,
    js_truthy,
)
from .nunjucks_lists import (
    nj_batch,
    nj_dictsort,
    nj_groupby,
    nj_join,
    nj_list,
    nj_random,
    nj_reject,
    nj_rejectattr,
    nj_reverse,
    nj_select,
    nj_selectattr,
    nj_slice,
    nj_sort,
    nj_sum,
)
from .nunjucks_text import (
    _MISSING,
    _keywords,
    _macro,
    _length_of,
    _normalize,
    nj_capitalize,
    nj_center,
    nj_escape,
    nj_indent,
    nj_lower,
    nj_nl2br,
    nj_replace,
    nj_safe,
    nj_string,
    nj_striptags,
    nj_title,
    nj_trim,
    nj_truncate,
    nj_upper,
    nj_urlencode,
    nj_urlize,
    nj_wordcount,
)


def nj_abs(value, *_):
    n = js_to_number(value)
    return abs(n)


def nj_default(value, default=_MISSING, boolean=None, *_):
    """`val || def` with the boolean argument (JavaScript truthiness), else def only for undefined."""
    default = _undefined() if default is _MISSING else default
    if js_truthy(boolean):
        return value if js_truthy(value) else default
    return value if not _is_undef(value) else default


def nj_dump(value, spaces=None, *_):
    """JSON.stringify(value, null, spaces): keys in JavaScript's order, numbers as JavaScript
    prints them, NaN and Infinity as null, undefined members left out (undefined prints nothing)."""
    import json

    if isinstance(spaces, (int, float)) and not isinstance(spaces, bool):
        gap = " " * max(0, min(10, int(spaces)))
    elif isinstance(spaces, str):
        gap = spaces[:10]
    else:
        gap = ""

    def enc(v, indent):
        if v is None:
            return "null"
        if v is True or v is False:
            return "true" if v else "false"
        if isinstance(v, (int, float)):
            return js_number(float(v)) if isinstance(v, float) and math.isfinite(v) else \
                ("null" if isinstance(v, float) else str(v))
        if isinstance(v, str):
            return json.dumps(v, ensure_ascii=False)
        inner = indent + gap
        if isinstance(v, (list, tuple)):
            parts = ["null" if _is_undef(x) else enc(x, inner) for x in v]
            if not parts:
                return "[]"
            if gap:
                return "[\n" + inner + (",\n" + inner).join(parts) + "\n" + indent + "]"
            return "[" + ",".join(parts) + "]"
        if isinstance(v, dict):
            parts = [json.dumps(k, ensure_ascii=False) + (": " if gap else ":") + enc(x, inner)
                     for k, x in _js_items(v) if not _is_undef(x)]
            if not parts:
                return "{}"
            if gap:
                return "{\n" + inner + (",\n" + inner).join(parts) + "\n" + indent + "}"
            return "{" + ",".join(parts) + "}"
        return "{}"

    if _is_undef(value):
        return _undefined()
    return enc(value, "")


def nj_first(value, *_):
    if value is None or _is_undef(value):
        _fail(f"first: cannot read [0] of {js_str(value)} (a TypeError in Nunjucks)")
    return js_member(value, 0)


def nj_last(value, *_):
    if value is None or _is_undef(value):
        _fail(f"last: cannot read the length of {js_str(value)} (a TypeError in Nunjucks)")
    n = _length_of(value)
    return js_member(value, n - 1) if isinstance(n, int) else js_member(value, "NaN")


def _parse_float(value: Any) -> float:
    import re

    s = js_str(value).lstrip(_JS_WS_CHARS)
    m = re.match(r"[+-]?(Infinity|(\d+(?:\.\d*)?|\.\d+)([eE][+-]?\d+)?)", s)
    if not m:
        return math.nan
    t = m.group(0)
    return (-math.inf if t[0] == "-" else math.inf) if t.endswith("Infinity") else float(t)


def nj_float(value, default=None, *_):
    f = _parse_float(value)
    return (default if default is not None else _undefined()) if math.isnan(f) else _num(f)


@_macro(["default", "base"])
def nj_int(value, default, base):
    """parseInt(value, base) (base 10 unless given), the default when NaN."""
    import re

    nb = 10 if _is_undef(base) else js_to_number(base)
    b = int(nb) if math.isfinite(nb) else 0
    s = js_str(value).lstrip(_JS_WS_CHARS)
    sign = -1 if s.startswith("-") else 1
    s = s[1:] if s[:1] in "+-" else s
    if b in (0, 16) and re.match(r"0[xX]", s):
        s, b = s[2:], 16
    b = b or 10
    if not 2 <= b <= 36:
        return default
    chars = "0-9"[:3 if b >= 10 else 0] or f"0-{b - 1}"
    if b > 10:
        chars += f"a-{chr(ord('a') + b - 11)}A-{chr(ord('A') + b - 11)}"
    digits = re.match(f"[{chars}]*", s).group(0)
    return sign * int(digits, b) if digits else default


def nj_length(value, *_):
    v = _normalize(value, "")
    if isinstance(v, dict):
        return len(v)
    return _length_of(v)


def nj_round(value, precision=None, method=None, *_):
    """Math.round (halves up, 2.5 -> 3, -2.5 -> -2), Math.ceil or Math.floor at 10**precision."""
    precision = precision if js_truthy(precision) else 0
    factor = _js_pow(10.0, float(js_to_number(precision)))
    x = float(js_to_number(value)) * factor
    if not math.isfinite(x):
        return _num(x / factor)
    if method == "ceil":
        r = math.ceil(x)
    elif method == "floor":
        r = math.floor(x)
    else:
        r = math.floor(x)
        if x - r >= 0.5:
            r += 1
    return _num(r / factor)


def nj_load(value, *_):
    """promptfoo's `load` filter (src/util/templates.ts): JSON.parse."""
    import json

    return json.loads(js_str(value))


def nj_truthy(value: Any) -> bool:
    """A `{% if %}` condition tested as JavaScript tests it (js_truthy)."""
    return js_truthy(value)


def nj_iter(value: Any) -> list:
    """What `{% for x in value %}` walks in Nunjucks (compiler.js compileFor): an array's items,
    a string's characters; nothing for a falsy value, an object (it has no length) or a number."""
    if not js_truthy(value):
        return []
    if isinstance(value, (list, tuple, str)):
        return list(value)
    return []


def nj_pairs(value: Any, names: int = 2) -> list:
    """What `{% for a, b in value %}` binds in Nunjucks (compiler.js compileFor): an array's items
    destructured (item[0], item[1], ...), else an object's keys and values (for-in: a string's
    indices and characters); nothing for a falsy value."""
    if not js_truthy(value):
        return []
    if isinstance(value, (list, tuple)):
        out = []
        for item in value:
            if item is None or _is_undef(item):
                _fail(f"for: cannot destructure {js_str(item)} (a TypeError in Nunjucks)")
            out.append(tuple(js_member(item, u) for u in range(names)))
        return out
    if isinstance(value, str):
        pairs = [(str(i), c) for i, c in enumerate(value)]
    elif isinstance(value, dict):
        pairs = _js_items(value)
    else:
        return []
    return [p + (_undefined(),) * (names - 2) for p in pairs]


#: Nunjucks' builtin filters (filters.js), as converted templates name them (importers/nunjucks.py)
NJ_FILTERS: dict[str, Any] = {
    "nj_" + name: (fn if name in ("int", "sort") else _keywords(fn)) for name, fn in {
        "abs": nj_abs, "batch": nj_batch, "capitalize": nj_capitalize, "center": nj_center,
        "default": nj_default, "d": nj_default, "dictsort": nj_dictsort, "dump": nj_dump,
        "escape": nj_escape, "e": nj_escape, "safe": nj_safe, "first": nj_first, "forceescape": nj_escape,
        "float": nj_float, "groupby": nj_groupby, "indent": nj_indent, "int": nj_int, "join": nj_join,
        "last": nj_last, "length": nj_length, "list": nj_list, "lower": nj_lower, "nl2br": nj_nl2br,
        "random": nj_random, "reject": nj_reject, "rejectattr": nj_rejectattr, "replace": nj_replace,
        "reverse": nj_reverse, "round": nj_round, "select": nj_select, "selectattr": nj_selectattr,
        "slice": nj_slice, "sort": nj_sort, "string": nj_string, "striptags": nj_striptags, "sum": nj_sum,
        "title": nj_title, "trim": nj_trim, "truncate": nj_truncate, "upper": nj_upper,
        "urlencode": nj_urlencode, "urlize": nj_urlize, "wordcount": nj_wordcount, "load": nj_load,
    }.items()}
NJ_FILTERS.update(nj_truthy=nj_truthy, nj_iter=nj_iter, nj_pairs=nj_pairs)
