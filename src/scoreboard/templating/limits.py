"""Render limits: what one template render may cost (the bounds are bounds.py's).

A template is user input and may be hostile, so each render runs under a budget (_Budget, held
in a context variable, so renders on other threads or tasks have their own): the work it does,
the bytes of the values it makes, the CPU time it takes and the size of its output are bounded,
and an operation that would make a value past MAX_TEXT characters or MAX_ITEMS items is refused
before it is made. Passing a bound raises TemplateLimit (a jinja2 SecurityError), one line.

Where it is counted (instrument.py and filters.py, with the budget and sizing helpers here):
every template is instrumented when it is parsed (_instrument): each
`{% for %}` walks its iterable through a meter (an iteration costs 1 + the nodes of the loop's
body, and the bytes of its text and literals and _NODE_BYTES a node), each macro, call block,
block and large if-branch charges its own nodes when it runs, and `~` is a filter that sizes
its parts first. The sandbox's hooks (environment.py) size and count what the nodes make:
each call (a str method that can amplify is sized before it runs,
_method_check), operator (_py_binop), filter (wrapped, _bounded_filter, with its own size check
where one can amplify), test (_bounded_test) and `{{ }}` output (environment.finalize,
_finalize). A list or mapping is sized as text (walked once, memoized) before anything prints it.
No signal or thread is used: a render may run on any thread, and renders on other threads have
their own budget. Jinja2 is imported on first use."""

from __future__ import annotations

import contextlib
import contextvars
import itertools
import re
import sys
import time
from typing import Any

from .bounds import (
    _CHECK_EVERY,
    _LOOP_BATCH,
    _MAX_WALK_DEPTH,
    _SLOT_BYTES,
    _SMALL,
    MAX_INT_BITS,
    MAX_ITEMS,
    MAX_RENDER_BYTES,
    MAX_RENDER_SECONDS,
    MAX_RENDER_STEPS,
    MAX_TEXT,
    _check_size,
    _limit,
    _too_long,
    _too_many,
)
from .js import _is_undef


class _Budget:
    """What one render (or the renders inside one render_budget) has spent."""

    __slots__ = ("bytes", "cpu0", "max_output", "memo", "next_check", "output", "steps")

    def __init__(self, max_output: int | None = None):
        self.steps = 0
        self.bytes = 0
        self.next_check = _CHECK_EVERY
        self.cpu0: float | None = None  # the clock starts at the first check (a small render never reads it)
        self.output = 0
        self.max_output = MAX_TEXT if max_output is None else max(0, min(max_output, MAX_TEXT))
        #: (id, indent, ascii) -> (container, its text size): a container's text is sized once
        #: (templates cannot change lists and mappings; the container is held so ids stay unique)
        self.memo: dict = {}

    def spend(self, steps: int, nbytes: int = 0) -> None:
        self.steps += steps
        if nbytes:
            self.add_bytes(nbytes)
        if self.steps >= self.next_check:
            self.check()

    def add_bytes(self, nbytes: int) -> None:
        self.bytes += nbytes
        if self.bytes > MAX_RENDER_BYTES:
            raise _limit(f"the template made more than {MAX_RENDER_BYTES // (1024 * 1024)} MiB of values "
                         "in one render")

    def check(self) -> None:
        if self.steps > MAX_RENDER_STEPS:
            raise _limit(f"the template did more than {MAX_RENDER_STEPS:,} steps of work in one render "
                         "(loop iterations and macro runs times their size, items walked by filters)")
        if self.cpu0 is None:
            self.cpu0 = time.thread_time()
        elif time.thread_time() - self.cpu0 > MAX_RENDER_SECONDS:
            raise _limit(f"the template ran for more than {MAX_RENDER_SECONDS:g} s of CPU time in one render")
        self.next_check = self.steps + _CHECK_EVERY


_BUDGET: contextvars.ContextVar = contextvars.ContextVar("scoreboard_template_budget", default=None)


def _budget() -> _Budget:
    b = _BUDGET.get()
    return b if b is not None else _Budget()


@contextlib.contextmanager
def render_budget(max_output_chars: int | None = None):
    """The renders inside share one budget (MAX_RENDER_*), and what they output together is at
    most `max_output_chars` (and MAX_TEXT) characters: e.g. the messages of one chat prompt.
    Inside another render_budget, the outer one holds."""
    if _BUDGET.get() is not None:
        yield
        return
    token = _BUDGET.set(_Budget(max_output_chars))
    try:
        yield
    finally:
        _BUDGET.reset(token)


def _render(template: Any, names: dict) -> str:
    """Template.render under the budget: the output is counted as it is made and stopped once
    past the bound, so a template cannot build more text than it may output."""
    b = _BUDGET.get()
    token = None
    if b is None:
        b = _Budget()
        token = _BUDGET.set(b)
    try:
        ctx = template.new_context(names)
        parts: list = []
        chunks = template.root_render_func(ctx)
        # counted _LOOP_BATCH chunks at a time: what they hold was counted in bytes as it was made
        batches = iter(lambda: tuple(itertools.islice(chunks, _LOOP_BATCH)), ())
        try:
            for batch in batches:
                parts += batch
                b.output += sum(map(len, batch))
                if b.output > b.max_output:
                    raise _limit(f"the rendered text passed {b.max_output:,} characters", "output", b.max_output)
        finally:
            chunks.close()
        return "".join(parts)
    except Exception:  # noqa: BLE001 - as Template.render: re-raised with the template's lines
        template.environment.handle_exception()
    finally:
        if token is not None:
            _BUDGET.reset(token)


# -- sizes

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


# -- the instrumented template: loops metered, bodies charged, `~` sized
