"""Nunjucks 3's builtin filters over arrays and objects (filters.js and lib.js at 3.2.4) for
templates converted from promptfoo: sorting, grouping, slicing, selecting by a test, joining,
summing (templating/nunjucks.py holds the rest and the filter table)."""

from __future__ import annotations

import math
from typing import Any

from .bounds import MAX_ITEMS, _check_size, _too_many
from .js import (
    _fail,
    _is_undef,
    _js_items,
    _js_lt,
    _primitive,
    _undefined,
    _utf16,
    js_add,
    js_binop,
    js_keys,
    js_member,
    js_str,
    js_to_number,
    js_truthy,
)
from .nunjucks_text import _macro, _need_str

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


def nj_groupby(value, attr=None, *_):
    get = _attr_getter(attr)
    out: dict = {}
    for v in _seq(value, "groupby"):
        k = js_str(get(v))
        out.setdefault(k, []).append(v)
    return {k: out[k] for k in js_keys(out)}


def nj_join(value, delimiter=None, attr=None, *_):
    if not isinstance(value, (list, tuple)):
        _fail(f"join: {js_str(value)!r} is not an array (arr.join is not a function in Nunjucks)")
    if js_truthy(attr):
        value = [js_member(v, attr) for v in value]
    sep = js_str(delimiter) if js_truthy(delimiter) else ""
    parts = ["" if v is None or _is_undef(v) else js_str(v) for v in value]
    _check_size(sum(map(len, parts)) + len(sep) * max(len(parts) - 1, 0), "join")
    return sep.join(parts)


def nj_list(value, *_):
    if isinstance(value, str):
        return list(value)
    if isinstance(value, dict):
        return [{"key": k, "value": v} for k, v in _js_items(value)]
    if isinstance(value, (list, tuple)):
        return list(value)
    _fail("list filter: type not iterable")


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


def nj_reverse(value, *_):
    if isinstance(value, str):
        return value[::-1]
    return _js_map(value)[::-1]


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
