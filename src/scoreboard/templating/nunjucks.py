"""Nunjucks 3's builtin filters and tests for templates converted from promptfoo
(importers/nunjucks.py), ported from nunjucks/src (filters.js, tests.js, lib.js at 3.2.4): each as
`nj_NAME` in NJ_FILTERS (Jinja2's filters of the same names differ, and native templates keep
Jinja2's), with `nj_truthy` (JavaScript truthiness for `{% if %}`) and `nj_iter` / `nj_pairs`
(what Nunjucks' `{% for %}` walks). Values are JavaScript's as js.py holds them. What a filter
makes is bounded by the wrappers of limits.py; a few ports check their own sizes against
bounds.py first."""

from __future__ import annotations

import math
import re
from typing import Any

from .bounds import MAX_ITEMS, _check_size, _too_many
from .js import (
    _JS_WS,
    _JS_WS_CHARS,
    _fail,
    _is_undef,
    _js_items,
    _js_len,
    _js_lt,
    _js_pow,
    _num,
    _primitive,
    _undefined,
    _utf16,
    js_add,
    js_binop,
    js_keys,
    js_member,
    js_number,
    js_str,
    js_to_number,
    js_trim,
    js_truthy,
)


def _need_str(value: Any, name: str) -> str:
    if not isinstance(value, str):
        _fail(f"{name}: {js_str(value)!r} is not a string (a TypeError in Nunjucks)")
    return value


def _normalize(value: Any, default: Any) -> Any:
    return default if value is None or value is False or _is_undef(value) else value


def _length_of(value: Any) -> Any:
    if isinstance(value, str):
        return _js_len(value)
    if isinstance(value, (list, tuple)):
        return len(value)
    return _undefined()


def _seq(value: Any, name: str) -> list:
    """What `for (i = 0; i < arr.length; i++) arr[i]` walks: an array, a string's characters."""
    if isinstance(value, (list, tuple)):
        return list(value)
    if isinstance(value, str):
        return list(value)
    if value is None or _is_undef(value):
        _fail(f"{name}: cannot read the length of {js_str(value)} (a TypeError in Nunjucks)")
    return []


def _js_map(value: Any) -> list:
    """lib.map's walk: null/undefined and values without a length give []."""
    if value is None or _is_undef(value):
        return []
    if isinstance(value, (list, tuple, str)):
        return list(value)
    return []


def _keywords(fn):
    """A filter that is not a Nunjucks macro gets keyword arguments as one more positional
    argument, an object (runtime.makeKeywordArgs): `truncate(9, end='..')` passes killwords={...}."""
    import functools

    @functools.wraps(fn)
    def call(value, *args, **kwargs):
        if kwargs:
            args = (*args, dict(kwargs))
        return fn(value, *args)
    return call


def _macro(names: list[str]):
    """A filter made with runtime.makeMacro: keyword arguments bind to its named parameters."""
    import functools

    def wrap(fn):
        @functools.wraps(fn)
        def call(value, *args, **kwargs):
            bound = list(args) + [_MISSING] * (len(names) - len(args))
            for k, v in kwargs.items():
                if k in names:
                    bound[names.index(k)] = v
            return fn(value, *[_undefined() if v is _MISSING else v for v in bound])
        return call
    return wrap


_MISSING = object()


def _repeat(ch: str, n: Any) -> str:
    """lib.repeat: `for (i = 0; i < n; i++)`, so 1.5 repeats twice."""
    n = js_to_number(n)
    if not (n > 0 and math.isfinite(n)):
        return ""
    _check_size(math.ceil(n) * len(ch), "repeat")
    return ch * math.ceil(n)


def _escape(s: str) -> str:
    """lib.escape: & " ' < > and backslash."""
    _check_size(len(s) + 5 * sum(s.count(chr(c)) for c in _ESCAPES), "escape")
    return s.translate(_ESCAPES)


_ESCAPES = str.maketrans({"&": "&amp;", '"': "&quot;", "'": "&#39;", "<": "&lt;", ">": "&gt;", "\\": "&#92;"})


def _capitalize(s: Any) -> str:
    s = _need_str(_normalize(s, ""), "capitalize")
    low = s.lower()
    return low[:1].upper() + low[1:]


def _js_sort(items: list, lt) -> list:
    import functools

    return sorted(items, key=functools.cmp_to_key(lambda a, b: -1 if lt(a, b) else (1 if lt(b, a) else 0)))


def _attr_getter(attr: Any):
    """lib.getAttrGetter: a dotted path of own properties, undefined when one is missing."""
    parts = [] if not js_truthy(attr) else (js_str(attr).split(".") if isinstance(attr, str) else [attr])

    def get(item):
        for part in parts:
            v = js_member(item, part)
            if _is_undef(v):
                return v
            item = v
        return item
    return get


def nj_abs(value, *_):
    n = js_to_number(value)
    return abs(n)


def nj_batch(arr, linecount=None, fill=None, *_):
    items, res, tmp = _seq(arr, "batch"), [], []
    for i, v in enumerate(items):
        if i % js_to_number(linecount) == 0 and tmp:
            res.append(tmp)
            tmp = []
        tmp.append(v)
    if tmp:
        if js_truthy(fill):
            pad = math.ceil(js_to_number(linecount)) - len(tmp) if math.isfinite(js_to_number(linecount)) else 0
            if pad > MAX_ITEMS:
                raise _too_many("batch")
            tmp += [fill] * max(0, pad)
        res.append(tmp)
    return res


def nj_capitalize(value, *_):
    return _capitalize(value)


def nj_center(value, width=None, *_):
    s = _normalize(value, "")
    width = width if js_truthy(width) else 80
    if not isinstance(s, str):
        return js_str(s)
    n = _js_len(s)
    if n >= js_to_number(width):
        return s
    spaces = js_to_number(width) - n
    return _repeat(" ", spaces / 2 - math.fmod(spaces, 2)) + s + _repeat(" ", spaces / 2)


def nj_default(value, default=_MISSING, boolean=None, *_):
    """`val || def` with the boolean argument (JavaScript truthiness), else def only for undefined."""
    default = _undefined() if default is _MISSING else default
    if js_truthy(boolean):
        return value if js_truthy(value) else default
    return value if not _is_undef(value) else default


def nj_dictsort(value, case_sensitive=None, by=None, *_):
    if not isinstance(value, dict):
        _fail("dictsort filter: val must be an object")
    if by is None or _is_undef(by) or by == "key":
        si = 0
    elif by == "value":
        si = 1
    else:
        _fail("dictsort filter: You can only sort by either key or value")
    pairs = [[k, v] for k, v in _js_items(value)]

    def key(t):
        x = t[si]
        return x.upper() if not js_truthy(case_sensitive) and isinstance(x, str) else x
    return _js_sort(pairs, lambda a, b: _js_lt(key(a), key(b)))


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


def nj_escape(value, *_):
    return _escape(js_str(value)) if value is not None and not _is_undef(value) else ""


def nj_safe(value, *_):
    return js_str(value) if value is not None and not _is_undef(value) else ""


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


def nj_groupby(value, attr=None, *_):
    get = _attr_getter(attr)
    out: dict = {}
    for v in _seq(value, "groupby"):
        k = js_str(get(v))
        out.setdefault(k, []).append(v)
    return {k: out[k] for k in js_keys(out)}


def nj_indent(value, width=None, indentfirst=None, *_):
    s = _normalize(value, "")
    if s == "":
        return ""
    s = _need_str(s, "indent")
    sp = _repeat(" ", width if js_truthy(width) else 4)
    _check_size(len(s) + len(sp) * (s.count("\n") + 1), "indent")
    return "\n".join(line if i == 0 and not js_truthy(indentfirst) else sp + line
                     for i, line in enumerate(s.split("\n")))


def nj_join(value, delimiter=None, attr=None, *_):
    if not isinstance(value, (list, tuple)):
        _fail(f"join: {js_str(value)!r} is not an array (arr.join is not a function in Nunjucks)")
    if js_truthy(attr):
        value = [js_member(v, attr) for v in value]
    sep = js_str(delimiter) if js_truthy(delimiter) else ""
    parts = ["" if v is None or _is_undef(v) else js_str(v) for v in value]
    _check_size(sum(map(len, parts)) + len(sep) * max(len(parts) - 1, 0), "join")
    return sep.join(parts)


def nj_length(value, *_):
    v = _normalize(value, "")
    if isinstance(v, dict):
        return len(v)
    return _length_of(v)


def nj_list(value, *_):
    if isinstance(value, str):
        return list(value)
    if isinstance(value, dict):
        return [{"key": k, "value": v} for k, v in _js_items(value)]
    if isinstance(value, (list, tuple)):
        return list(value)
    _fail("list filter: type not iterable")


def nj_lower(value, *_):
    return _need_str(_normalize(value, ""), "lower").lower()


def nj_upper(value, *_):
    return _need_str(_normalize(value, ""), "upper").upper()


def nj_nl2br(value, *_):
    import re

    if value is None or _is_undef(value):
        return ""
    s = _need_str(value, "nl2br")
    _check_size(len(s) + 6 * s.count("\n"), "nl2br")
    return re.sub(r"\r\n|\n", "<br />\n", s)


def nj_random(value, *_):
    import random

    items = _seq(value, "random")
    return random.choice(items) if items else _undefined()


def _nj_test(name: str):
    """nunjucks/src/tests.js."""
    def mod(a, b):
        return js_binop("%", a, b)
    tests = {
        "callable": lambda v, *_: callable(v), "defined": lambda v, *_: not _is_undef(v),
        "divisibleby": lambda a, b=None, *_: mod(a, b) == 0, "escaped": lambda v, *_: False,
        "equalto": lambda a, b=None, *_: _strict_eq(a, b), "even": lambda v, *_: mod(v, 2) == 0,
        "falsy": lambda v, *_: not js_truthy(v), "ge": lambda a, b=None, *_: _js_ge(a, b),
        "greaterthan": lambda a, b=None, *_: _js_lt(b, a), "le": lambda a, b=None, *_: _js_ge(b, a),
        "lessthan": lambda a, b=None, *_: _js_lt(a, b),
        "lower": lambda v, *_: _need_str(v, "lower test").lower() == v,
        "ne": lambda a, b=None, *_: not _strict_eq(a, b), "null": lambda v, *_: v is None,
        "number": lambda v, *_: isinstance(v, (int, float)) and not isinstance(v, bool),
        "odd": lambda v, *_: mod(v, 2) == 1, "string": lambda v, *_: isinstance(v, str),
        "truthy": lambda v, *_: js_truthy(v), "undefined": lambda v, *_: _is_undef(v),
        "upper": lambda v, *_: _need_str(v, "upper test").upper() == v,
        "iterable": lambda v, *_: isinstance(v, (str, list, tuple)),
        "mapping": lambda v, *_: isinstance(v, dict),
    }
    tests.update(eq=tests["equalto"], sameas=tests["equalto"], gt=tests["greaterthan"], lt=tests["lessthan"])
    if name not in tests:
        _fail(f"test not found: {name}")
    return tests[name]


def _strict_eq(a: Any, b: Any) -> bool:
    """JavaScript's ===: same type and value (arrays and objects: never equal unless the same)."""
    if _is_undef(a) or _is_undef(b):
        return _is_undef(a) and _is_undef(b)
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, str) and isinstance(b, str):
        return a == b
    return a is b


def _js_ge(a: Any, b: Any) -> bool:
    a, b = _primitive(a), _primitive(b)
    if isinstance(a, str) and isinstance(b, str):
        return _utf16(a) >= _utf16(b)
    x, y = js_to_number(a), js_to_number(b)
    return x >= y


def _select(arr, test, arg, expected):
    t = _nj_test("truthy" if test is None or _is_undef(test) else js_str(test))
    return [v for v in _seq(arr, "select") if bool(t(v, arg)) is expected]


def nj_select(value, test=None, arg=None, *_):
    return _select(value, test, _undefined() if arg is None else arg, True)


def nj_reject(value, test=None, arg=None, *_):
    return _select(value, test, _undefined() if arg is None else arg, False)


def nj_selectattr(value, attr=None, *_):
    """Nunjucks' selectattr takes one argument: the items whose attribute is truthy."""
    return [v for v in _seq(value, "selectattr") if js_truthy(js_member(v, attr))]


def nj_rejectattr(value, attr=None, *_):
    return [v for v in _seq(value, "rejectattr") if not js_truthy(js_member(v, attr))]


def nj_replace(value, old=None, new=None, max_count=None, *_):
    if max_count is None or _is_undef(max_count):
        max_count = -1
    if isinstance(old, (int, float)) and not isinstance(old, bool):
        old = js_str(old)
    elif not isinstance(old, str):
        return value
    s = js_str(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else value
    if not isinstance(s, str):
        return s
    new_s = js_str(new)
    if old == "":
        sep = "," if _is_undef(new) else new_s
        _check_size(2 * len(new_s) + len(s) + len(sep) * max(len(s) - 1, 0), "replace")
        return new_s + sep.join(s) + new_s
    if max_count == 0 or old not in s:
        return s
    count = js_to_number(max_count)
    if count != -1 and not count > 0:
        return s
    hits = s.count(old) if count == -1 else min(s.count(old), math.ceil(count))
    _check_size(len(s) + hits * max(0, len(new_s) - len(old)), "replace")
    return s.replace(old, new_s, -1 if count == -1 else math.ceil(count))


def nj_reverse(value, *_):
    if isinstance(value, str):
        return value[::-1]
    return _js_map(value)[::-1]


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


def nj_slice(value, slices=None, fill=None, *_):
    items = _seq(value, "slice")
    n = js_to_number(slices)
    if not math.isfinite(n) or n <= 0:
        return []
    if n > MAX_ITEMS:
        raise _too_many("slice")
    length = math.floor(len(items) / n)
    extra = math.fmod(len(items), n)
    res, offset, i = [], 0, 0
    while i < n:
        start = offset + i * length
        if i < extra:
            offset += 1
        end = offset + (i + 1) * length
        cur = items[int(start):int(end)]
        if js_truthy(fill) and i >= extra:
            cur.append(fill)
        res.append(cur)
        i += 1
    return res


@_macro(["reverse", "case_sensitive", "attribute"])
def nj_sort(value, reverse, case_sensitive, attribute):
    get = _attr_getter(attribute)
    items = _js_map(value)

    def key(v):
        return get(v) if js_truthy(attribute) else v

    def cmp_lt(a, b):
        x, y = key(a), key(b)
        if not js_truthy(case_sensitive) and isinstance(x, str) and isinstance(y, str):
            x, y = x.lower(), y.lower()
        return _js_lt(y, x) if js_truthy(reverse) else _js_lt(x, y)
    return _js_sort(items, cmp_lt)


def nj_string(value, *_):
    """Nunjucks' string filter returns its value unchanged (r.copySafeness(obj, obj))."""
    return value


def nj_striptags(value, preserve_linebreaks=None, *_):
    import re

    s = js_trim(_strip_tags(_need_str(_normalize(value, ""), "striptags")))
    ws = f"[{_JS_WS}]"
    if js_truthy(preserve_linebreaks):
        # `^ +| +$` (filters.js), tried only where a run of spaces starts: linear, not quadratic
        s = re.sub(r"^ +|(?<! ) ++$", "", s, flags=re.MULTILINE)
        s = re.sub(r" +", " ", s).replace("\r\n", "\n")
        return re.sub(r"\n\n\n+", "\n\n", s)
    return re.sub(ws + "+", " ", s)


_TAG = re.compile(r"</?([a-z][a-z0-9]*)\b", re.IGNORECASE)


def _strip_tags(s: str) -> str:
    """re.sub(/<\\/?([a-z][a-z0-9]*)\\b[^>]*>|<!--[\\s\\S]*?-->/gi, "") in one pass: the regular
    expression rescans to the end for each "<" that no ">" (or "-->") follows."""
    out, i = [], 0
    last_gt, last_close = s.rfind(">"), s.rfind("-->")  # past these, no tag or comment can end
    while True:
        j = s.find("<", i)
        if j < 0:
            out.append(s[i:])
            return "".join(out)
        end = -1
        if s.startswith("<!--", j):
            if last_close >= j + 4:
                end = s.find("-->", j + 4) + 3
        else:
            m = _TAG.match(s, j)
            if m and last_gt >= m.end():
                end = s.find(">", m.end()) + 1
        if end < 0:
            out.append(s[i:j + 1])
            i = j + 1
        else:
            out.append(s[i:j])
            i = end


def nj_sum(value, attr=None, start=None, *_):
    items = _js_map(value) if isinstance(value, (list, tuple)) else _fail("sum: arr.reduce is not a function")
    if js_truthy(attr):
        items = [js_member(v, attr) for v in items]
    total: Any = 0
    rest = iter(items)
    for v in rest:
        total = js_add(total, v)
        if isinstance(total, str):  # text from here on: the rest joined once, not copied per item
            parts = [total] + [js_str(_primitive(x)) for x in rest]
            _check_size(sum(map(len, parts)), "sum")
            total = "".join(parts)
            break
    return js_add(0 if start is None or _is_undef(start) else start, total)


def nj_title(value, *_):
    """Each space-separated word capitalized (its rest lowercased): "hello-world" -> "Hello-world"."""
    s = _need_str(_normalize(value, ""), "title")
    return " ".join(_capitalize(w) for w in s.split(" "))


def nj_trim(value, *_):
    return js_trim(_need_str(value, "trim"))


def nj_truncate(value, length=None, killwords=None, end=None, *_):
    s = _normalize(value, "")
    length = js_to_number(length) if js_truthy(length) else 255
    n = _length_of(s)
    if not isinstance(n, int):
        return s
    if n <= length:
        return s
    cut = math.floor(length) if math.isfinite(length) else n
    if js_truthy(killwords):
        s = s[:cut]
    else:
        idx = s.rfind(" ", 0, max(cut, 0) + 1)
        s = s[:cut if idx == -1 else idx]
    return s + (js_str(end) if end is not None and not _is_undef(end) else "...")


def _uri(s: str) -> str:
    from urllib.parse import quote

    return quote(s, safe="!~*'()")


def nj_urlencode(value, *_):
    """encodeURIComponent for text; an object's (or an array of pairs') key=value joined by &."""
    if isinstance(value, str):
        return _uri(value)
    pairs = list(value) if isinstance(value, (list, tuple)) else \
        (_js_items(value) if isinstance(value, dict) else [])
    return "&".join(_uri(js_str(js_member(p, 0))) + "=" + _uri(js_str(js_member(p, 1))) for p in pairs)


def nj_urlize(value, length=None, nofollow=None, *_):
    import re

    s = _need_str(value, "urlize")
    limit = None if length is None or _is_undef(length) else js_to_number(length)
    attr = ' rel="nofollow"' if nofollow is True else ""
    out = []
    for word in re.split(r"(\s+)", s):
        if not word:
            continue
        m = re.match(r"^(?:\(|<|&lt;)?(.*?)(?:\.|,|\)|\n|&gt;)?$", word, re.DOTALL)
        url = m.group(1) if m else word
        short = url if limit is None or not math.isfinite(limit) else url[:max(0, int(limit))]
        if re.match(r"^https?://.*$", url):
            out.append(f'<a href="{url}"{attr}>{short}</a>')
        elif re.match(r"^www\.", url):
            out.append(f'<a href="http://{url}"{attr}>{short}</a>')
        elif re.match(r"^[\w.!#$%&'*+\-/=?^`{|}~]+@[a-z\d\-]+(\.[a-z\d\-]+)+$", url, re.IGNORECASE | re.ASCII):
            out.append(f'<a href="mailto:{url}">{url}</a>')
        elif re.search(r"\.(?:org|net|com)(?::|/|$)", url):
            out.append(f'<a href="http://{url}"{attr}>{short}</a>')
        else:
            out.append(word)
    return "".join(out)


def nj_wordcount(value, *_):
    import re

    s = _normalize(value, "")
    if not js_truthy(s):
        return None
    words = re.findall(r"\w+", _need_str(s, "wordcount"), re.ASCII)
    return len(words) if words else None


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
