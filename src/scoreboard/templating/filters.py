"""The sandbox's filters, tests and operators, bounded: each filter is wrapped (_bounded_filter)
with its own size check where one can amplify (the _pre_* checks), each test sized
(_bounded_test), and `+ - * / // % **` on Python values sized before they run (_py_binop); the
budget they charge is limits.py's."""

from __future__ import annotations

import operator
from typing import Any

from .bounds import (
    _MAX_LIPSUM_WORDS,
    _MAX_REPEAT,
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
from .js import _is_undef, js_str
from .limits import (
    _BUDGET,
    _Budget,
    _budget,
)
from .sizes import (
    _CONTAINER_TYPES,
    _CONTAINERS,
    _arg,
    _charge,
    _check_text,
    _escaped_len,
    _items_of,
    _percent_size,
    _text_size,
)

#: filters that never turn their value into text (every other filter's value and arguments are
#: sized as text first)
_NO_TEXT_FILTERS = frozenset({
    "abs", "attr", "batch", "count", "d", "default", "dictsort", "first", "float", "groupby", "int",
    "items", "last", "length", "list", "map", "max", "min", "random", "reject", "rejectattr", "reverse",
    "round", "select", "selectattr", "slice", "sort", "sum", "unique", "filesizeformat",
    "nj_d", "nj_default", "nj_first", "nj_iter", "nj_last", "nj_length", "nj_list", "nj_pairs",
    "nj_random", "nj_reverse", "nj_string", "nj_truthy"})
#: filters that cost O(1) whatever their value holds
_CONSTANT_FILTERS = frozenset({
    "attr", "count", "d", "default", "first", "last", "length", "random", "nj_d", "nj_default", "nj_first",
    "nj_last", "nj_length", "nj_random", "nj_string", "nj_truthy"})
#: filters that sort: n·log2(n) comparisons, times this (a Python comparison costs more)
_SORTING_FILTERS = {"sort": 1, "dictsort": 1, "groupby": 1, "unique": 1, "nj_sort": 4, "nj_dictsort": 4}
#: steps per character of a filter's text (measured: a step is at most about 1.5 microseconds);
#: filters not named here work in C, 1 step per 64 characters
_TEXT_STEPS = {"nj_urlize": 2.0, "urlize": 0.5, "wordwrap": 0.5, "nj_striptags": 0.5, "nj_title": 0.25,
               "title": 0.125, "nj_escape": 0.0625, "nj_nl2br": 0.0625}
#: Nunjucks filters that turn a text into a list of its characters
_NJ_CHAR_LISTS = frozenset({"nj_batch", "nj_slice", "nj_select", "nj_reject", "nj_selectattr",
                            "nj_rejectattr", "nj_groupby", "nj_random", "nj_list", "nj_iter", "nj_pairs",
                            "nj_sort", "nj_reverse", "nj_first", "nj_last"})


def _pre_center(b, context, value, args, kwargs):
    width = _arg(args, kwargs, 0, "width", 80)
    if isinstance(width, int):
        _check_size(max(width, _text_size(b, value)), "center")
    return value, args, kwargs


def _pre_indent(b, context, value, args, kwargs):
    width = _arg(args, kwargs, 0, "width", 4)
    pad = len(width) if isinstance(width, str) else (width if isinstance(width, int) else 0)
    n = _text_size(b, value)
    lines = value.count("\n") + 1 if isinstance(value, str) else n + 1
    _check_size(max(pad, 0) * (lines + 1) + n, "indent")
    return value, args, kwargs


def _pre_format(b, context, value, args, kwargs):
    if not isinstance(value, str):
        _check_text(b, value, "format")
    text = value if isinstance(value, str) else str(value)
    _percent_size(b, text, kwargs or args)
    return text, args, kwargs


def _pre_join(b, context, value, args, kwargs):
    items = _items_of(b, value, "join")
    if _is_undef(items):
        return items, args, kwargs
    d = _arg(args, kwargs, 0, "d", "")
    grow = 6 if context.eval_ctx.autoescape else 1
    total = max(len(items) - 1, 0) * _text_size(b, d)
    for x in items:
        total += (len(x) if type(x) is str else _text_size(b, x)) * grow
        if total > MAX_TEXT:
            raise _too_long("join")
    return items, args, kwargs


def _pre_replace(b, context, value, args, kwargs):
    old, new = _arg(args, kwargs, 0, "old"), _arg(args, kwargs, 1, "new")
    count = _arg(args, kwargs, 2, "count")
    n = _text_size(b, value)
    _check_text(b, old, "replace")
    if isinstance(old, str) and isinstance(value, str):
        hits = n + 1 if not old else value.count(old)
    else:
        hits = n + 1
    if isinstance(count, int) and count >= 0:
        hits = min(hits, count)
    grow = 6 if context.eval_ctx.autoescape else 1
    new_len = _text_size(b, new) * grow
    _check_size(n * grow + hits * max(0, new_len - (len(old) if isinstance(old, str) else 0)), "replace")
    return value, args, kwargs


def _pre_wordwrap(b, context, value, args, kwargs):
    wrap = _arg(args, kwargs, 2, "wrapstring")
    n = _text_size(b, value)
    _check_size(n + (n + 1) * max(1, _text_size(b, wrap) if wrap is not None else 1), "wordwrap")
    return value, args, kwargs


def _pre_urlize(b, context, value, args, kwargs):
    n = _text_size(b, value)
    extra = sum(_text_size(b, _arg(args, kwargs, i, k) or "") for i, k in ((2, "target"), (3, "rel")))
    # a link is at most about 5 times its word (a@b.cc), and target= and rel= repeat on each
    _check_size(6 * n + (n // 6 + 1) * extra, "urlize")
    return value, args, kwargs


def _pre_tojson(b, context, value, args, kwargs):
    indent = _arg(args, kwargs, 0, "indent")
    width = len(indent) if isinstance(indent, str) else (indent if isinstance(indent, int) and indent > 0 else 0)
    _check_size(_text_size(b, value, width, True), "tojson")
    return value, args, kwargs


def _pre_pprint(b, context, value, args, kwargs):
    _check_size(_text_size(b, value, 1), "pprint")
    return value, args, kwargs


def _pre_dump(b, context, value, args, kwargs):
    indent = _arg(args, kwargs, 0, "indent")
    width = min(len(indent), 10) if isinstance(indent, str) else \
        (min(indent, 10) if isinstance(indent, (int, float)) and indent > 0 else 0)
    _check_size(_text_size(b, value, int(width)), "dump")
    return value, args, kwargs


def _pre_escape(b, context, value, args, kwargs):
    _check_size(_escaped_len(value) if isinstance(value, str) else 6 * _text_size(b, value), "escape")
    return value, args, kwargs


def _pre_grow12(b, context, value, args, kwargs):
    # urlencode: each UTF-8 byte of a character may become %XX
    _check_size(12 * _text_size(b, value), "urlencode")
    return value, args, kwargs


def _pre_xmlattr(b, context, value, args, kwargs):
    _check_size(6 * _text_size(b, value) + 16 * (len(value) if isinstance(value, dict) else 0), "xmlattr")
    return value, args, kwargs


def _pre_batch(b, context, value, args, kwargs):
    count, fill = _arg(args, kwargs, 0, "linecount"), _arg(args, kwargs, 1, "fill_with")
    if fill is not None and isinstance(count, int) and count > MAX_ITEMS:
        raise _too_many("batch")
    return value, args, kwargs


def _pre_slice(b, context, value, args, kwargs):
    slices = _arg(args, kwargs, 0, "slices")
    if isinstance(slices, int) and slices > MAX_ITEMS:
        raise _too_many("slice")
    return value, args, kwargs


def _pre_list(b, context, value, args, kwargs):
    if isinstance(value, (str, list, tuple, dict, set, frozenset, range)):
        if len(value) > MAX_ITEMS:
            raise _too_many("list")
        b.add_bytes(len(value) * (84 if isinstance(value, str) and not value.isascii() else _SLOT_BYTES))
    return value, args, kwargs


def _pre_nj_load(b, context, value, args, kwargs):
    _check_text(b, value, "load")
    text = js_str(value)
    # what json.loads makes: a list or mapping per bracket, an item per comma
    b.add_bytes(len(text) + 64 * (text.count("[") + text.count("{")) + _SLOT_BYTES * text.count(","))
    return value, args, kwargs


_FILTER_CHECKS = {
    "center": _pre_center, "indent": _pre_indent, "format": _pre_format, "join": _pre_join,
    "replace": _pre_replace, "wordwrap": _pre_wordwrap, "urlize": _pre_urlize, "tojson": _pre_tojson,
    "pprint": _pre_pprint, "dump": _pre_dump, "nj_dump": _pre_dump, "e": _pre_escape, "escape": _pre_escape,
    "forceescape": _pre_escape, "urlencode": _pre_grow12, "nj_urlencode": _pre_grow12, "xmlattr": _pre_xmlattr,
    "batch": _pre_batch, "slice": _pre_slice, "list": _pre_list, "nj_load": _pre_nj_load,
}


def _bounded_filter(name: str, fn: Any) -> Any:
    """`fn` counted and sized: steps for its value's items or text, its value and arguments sized
    as text first (unless it never makes text, or its own check, _FILTER_CHECKS, sizes them), and
    what it returns charged. It takes the context, so Jinja2 never runs it while compiling a
    template (a filter of constants would otherwise run then, outside any budget)."""
    from jinja2.utils import _PassArg, pass_context

    pass_arg = _PassArg.from_obj(fn)
    check = _FILTER_CHECKS.get(name)
    text = name not in _NO_TEXT_FILTERS and check is None
    constant = name in _CONSTANT_FILTERS
    sort_weight = _SORTING_FILTERS.get(name)
    text_steps = _TEXT_STEPS.get(name, 1 / 64)
    char_lists = name in _NJ_CHAR_LISTS
    scalars = _SCALAR_TYPES

    get, new_budget, max_text, max_bytes, small = _BUDGET.get, _Budget, MAX_TEXT, MAX_RENDER_BYTES, _SMALL
    containers, container_types = _CONTAINERS, _CONTAINER_TYPES
    prefix = {_PassArg.context: lambda c: (c,), _PassArg.eval_context: lambda c: (c.eval_ctx,),
              _PassArg.environment: lambda c: (c.environment,)}.get(pass_arg)
    plain = prefix is None and check is None and not char_lists

    def made(rv):
        """Charge what the filter returned (a short text is paid by its node, _NODE_BYTES)."""
        if type(rv) is str:
            n = len(rv)
            if n > small:
                if n > max_text:
                    raise _too_long(name)
                b = get() or new_budget()
                b.bytes += 49 + (n if n < 1024 or rv.isascii() else 4 * n)
                if b.bytes > max_bytes:
                    b.add_bytes(0)
        elif type(rv) not in scalars:
            _charge(get() or new_budget(), rv)
        return rv

    def slow(context, value, args, kwargs):
        b = get() or new_budget()
        t = type(value)
        if t is str:
            if char_lists:
                if len(value) > MAX_ITEMS:
                    raise _too_many(name)
                # a slot per character, a new text per one past Latin-1, a pair per one (nj_pairs)
                b.add_bytes(len(value) * (160 if name == "nj_pairs" else 36 if value.isascii() else 84))
            if not constant:
                b.spend(int(len(value) * text_steps))
        elif not constant and (t in containers or t not in scalars and isinstance(value, container_types)):
            n = len(value)
            if n:
                b.spend(n if sort_weight is None else n * (1 + sort_weight * n.bit_length()))
        if text and (t not in scalars or args or kwargs):
            _check_texts(b, name, value, args, kwargs)
        if check is not None:
            value, args, kwargs = check(b, context, value, args, kwargs)
        return made(fn(value, *args, **kwargs) if prefix is None else fn(*prefix(context), value, *args, **kwargs))

    # the call itself is a node of the loop or macro body that runs it, counted there; a short
    # text with plain arguments needs nothing more than what it returns counted
    def call(context, value, *args, **kwargs):
        if plain and type(value) is str and len(value) <= small and not kwargs:
            for a in args:
                if type(a) not in scalars:
                    break
            else:
                rv = fn(value, *args)
                return rv if type(rv) is str and len(rv) <= small else made(rv)
        return slow(context, value, args, kwargs)

    call.__name__ = getattr(fn, "__name__", name)
    call.__doc__ = fn.__doc__
    return pass_context(call)


_SCALAR_TYPES = frozenset({str, int, float, bool, type(None)})


def _check_texts(b: _Budget, name: str, value: Any, args: tuple, kwargs: dict) -> None:
    """A filter's value and arguments, each sized as text."""
    for a in (value, *args, *kwargs.values()):
        if type(a) not in _SCALAR_TYPES:
            _check_text(b, a, name)


def _bounded_test(fn: Any) -> Any:
    """A test counted: the length of each list or text it is given (`in`, `eq`); the test itself is
    a node of the body that runs it, counted there."""
    def call(*args, **kwargs):
        steps = 0
        for a in args:
            if isinstance(a, (*_CONTAINER_TYPES, str)):
                steps += len(a) >> (6 if isinstance(a, str) else 0)
        if steps:
            _budget().spend(steps)
        return fn(*args, **kwargs)

    call.__name__ = getattr(fn, "__name__", "test")
    call.__doc__ = fn.__doc__
    if hasattr(fn, "jinja_pass_arg"):
        call.jinja_pass_arg = fn.jinja_pass_arg  # type: ignore[attr-defined]
    return call


def _sum_filter(context: Any, iterable: Any, attribute: Any = None, start: Any = 0) -> Any:
    """Jinja2's sum, each `+` through the sandbox's bounded one (a sum of lists grows as it goes)."""
    from jinja2.filters import make_attrgetter

    if attribute is not None:
        iterable = map(make_attrgetter(context.environment, attribute), iterable)
    if isinstance(start, str):
        raise TypeError("sum() can't sum strings [use ''.join(seq) instead]")
    b = _budget()
    total = start
    for x in iterable:
        b.spend(1)
        total = _py_binop(b, "+", total, x)
        if isinstance(total, (list, tuple)):
            b.add_bytes(56 + 8 * len(total))
        elif isinstance(total, (str, bytes)):
            _charge(b, total)
    return total


def _lipsum(n: int = 5, html: bool = True, min: int = 20, max: int = 100) -> str:
    """Jinja2's lipsum, at most _MAX_LIPSUM_WORDS words."""
    from jinja2.utils import generate_lorem_ipsum

    if isinstance(n, int) and isinstance(max, int) and n > 0 and n * max > _MAX_LIPSUM_WORDS:
        raise _limit(f"lipsum() may make at most {_MAX_LIPSUM_WORDS:,} words")
    if isinstance(n, int) and isinstance(max, int):
        _budget().spend(n * max if n > 0 and max > 0 else 1)
    return generate_lorem_ipsum(n, html, min, max)


def _py_binop(b: _Budget, op: str, left: Any, right: Any) -> Any:
    """Python's operator, refused where it would make text, a list or a number past the bounds."""
    if op == "+":
        if isinstance(left, (str, bytes, list, tuple)) and isinstance(right, (str, bytes, list, tuple)):
            n = len(left) + len(right)
            if isinstance(left, str) and isinstance(right, str) and \
                    hasattr(left, "__html__") is not hasattr(right, "__html__"):
                n = len(left) + len(right) + 5 * (len(left) if hasattr(right, "__html__") else len(right))
            if isinstance(left, (str, bytes)) and n > MAX_TEXT:
                raise _too_long("`+`")
            if isinstance(left, (list, tuple)) and n > MAX_ITEMS:
                raise _too_many("`+`")
        return left + right
    if op == "*":
        if isinstance(left, (str, bytes, list, tuple)) and isinstance(right, int) and len(left) * right > _MAX_REPEAT \
                or isinstance(right, (str, bytes, list, tuple)) and isinstance(left, int) \
                and len(right) * left > _MAX_REPEAT:
            raise _limit(f"a template may not repeat text beyond {_MAX_REPEAT} characters")
        if isinstance(left, int) and isinstance(right, int) and left.bit_length() + right.bit_length() > MAX_INT_BITS:
            raise _limit(f"the template may not make a number of more than {MAX_INT_BITS:,} bits")
        return operator.mul(left, right)
    if op == "**":
        if isinstance(right, (int, float)) and abs(right) > 1000:
            raise _limit("exponent too large in a template")
        if isinstance(left, int) and isinstance(right, int) and right > 0 and left.bit_length() * right > MAX_INT_BITS:
            raise _limit(f"the template may not make a number of more than {MAX_INT_BITS:,} bits")
        return operator.pow(left, right)
    if op == "%" and isinstance(left, (str, bytes)):
        _percent_size(b, left, right, escape=hasattr(left, "__html__"))
    return _PLAIN_OPS[op](left, right)


_PLAIN_OPS = {"+": operator.add, "-": operator.sub, "/": operator.truediv, "//": operator.floordiv,
              "%": operator.mod}
