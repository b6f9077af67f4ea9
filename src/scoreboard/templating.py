"""The one sandboxed Jinja2 environment, shared by prompt templates (suite/templates.py) and
judge prompts (judges/scaled.py): ImmutableSandboxedEnvironment with StrictUndefined (an
undefined name is an error, never an empty string; a suite may ask for Nunjucks' rule instead,
`template_undefined: empty`), no autoescaping, and every render bounded (see "Render limits"
below: its work, CPU time, the bytes of the values it makes, its output, and each text, list and
number it makes), so a hostile template cannot hang a command or use up memory; passing a bound
is a TemplateLimit (a SecurityError) of one line. Jinja2 is imported on first use.

Two filters are added: `dump` is Nunjucks' (JSON.stringify(value, null, indent)), and `js` prints a value the way Nunjucks prints `{{ value }}` (its
suppressValue, then JavaScript's String()): true/false, null and an undefined name as the empty
string, numbers as JavaScript prints them (1.0 is "1"), arrays joined by commas, objects as
"[object Object]". Templates converted from promptfoo use it (importers/nunjucks.py).

Converted templates also use Nunjucks 3's own semantics, ported below from nunjucks/src
(filters.js, tests.js, runtime.js, compiler.js, lib.js at 3.2.4): each Nunjucks builtin filter as
`nj_NAME` (Jinja2's filters of the same names differ; native templates keep Jinja2's), `nj_truthy`
(JavaScript truthiness for `{% if %}`), `nj_iter` / `nj_pairs` (what Nunjucks' `{% for %}` walks),
and, in a template that starts with JS_MARKER, JavaScript arithmetic: the sandbox intercepts
`+ - * / // % **` and unary `-`/`+`, and computes them as compiler.js does (`1 + '2'` is "12");
without the marker they are Python's (with `*` and `**` bounded as above)."""

from __future__ import annotations

import contextlib
import contextvars
import itertools
import math
import operator
import re
import sys
import time
from decimal import Decimal
from typing import Any

# ---- Render limits: what one render may cost
#
# A template is user input and may be hostile, so each render runs under a budget (_Budget, held
# in a context variable, so renders on other threads or tasks have their own): the work it does,
# the bytes of the values it makes, the CPU time it takes and the size of its output are bounded,
# and an operation that would make a value past MAX_TEXT characters or MAX_ITEMS items is refused
# before it is made. Passing a bound raises TemplateLimit (a jinja2 SecurityError), one line.
#
# Where it is counted: every template is instrumented when it is parsed (_instrument): each
# `{% for %}` walks its iterable through a meter (an iteration costs 1 + the nodes of the loop's
# body, and the bytes of its text and literals and _NODE_BYTES a node), each macro, call block,
# block and large if-branch charges its own nodes when it runs, and `~` is a filter that sizes
# its parts first. The sandbox's hooks size and count what the nodes make: each call (a str
# method that can amplify is sized before it runs), operator, filter (wrapped, with its own size
# check where one can amplify), test and `{{ }}` output (environment.finalize). A list or mapping
# is sized as text (walked once, memoized) before anything prints it. No signal or thread is
# used: a render may run on any thread, and renders on other threads have their own budget.

#: the most characters one `*` may build inside a template (the README's promise)
_MAX_REPEAT = 1_000_000
#: the most characters of one text a template may make, and of what one render outputs when its
#: caller gives no smaller bound (16 Mi characters is past any model's context window)
MAX_TEXT = 16 * 1024 * 1024
#: the most items of one list, tuple or mapping a template may make
MAX_ITEMS = 2_000_000
#: the most bits of one integer a template may compute (10**30000 has about 100,000 bits)
MAX_INT_BITS = 100_000
#: the work one render may do, in steps: a loop iteration costs 1 + the number of template nodes
#: in the loop's body (a loop over 5,000 items with a 100-node body: 505,000; an `if` branch of
#: more than _BRANCH_NODES nodes counts only when taken), a macro's run the nodes of its body, a
#: filter over a list 1 per item (a sort n·log2 n) and over a text 1 per 64 characters (or more,
#: _TEXT_STEPS). A step mostly takes well under a microsecond: this is a second or two at most
MAX_RENDER_STEPS = 2_000_000
#: the CPU seconds one render may take (time.thread_time, first read after _CHECK_EVERY steps,
#: then every _CHECK_EVERY): a backstop for work the steps do not model, such as
#: `x in a_long_list` inside a loop
MAX_RENDER_SECONDS = 4.0
#: the bytes of values one render may make, in total (each text, list or mapping an operator,
#: filter, call, loop body or output makes counts when made, freed or not)
MAX_RENDER_BYTES = 256 * 1024 * 1024
#: lipsum() makes at most this many words
_MAX_LIPSUM_WORDS = 100_000
#: steps between two looks at the clock
_CHECK_EVERY = 1024
#: an `{% if %}` branch (or a filtered loop's body) of more nodes than this charges its cost when
#: it runs, instead of its enclosing body charging it each time
_BRANCH_NODES = 64
#: items a loop's meter takes from its iterable at a time
_LOOP_BATCH = 32
#: bytes counted per list slot: the pointer and a small object it may hold (a fresh int or text)
_SLOT_BYTES = 36
#: bytes counted per node each time the body holding it runs: a text of at most _SMALL
#: characters that the node makes is paid by this (longer ones, and lists, when made)
_NODE_BYTES = 64
_SMALL = 64
#: containers nested deeper than this are not walked when sizing a value's text (repr and json
#: stop at about 1,000 levels anyway)
_MAX_WALK_DEPTH = 2000

_LIMIT_CLASS: Any = None


def _limit_class():
    global _LIMIT_CLASS
    if _LIMIT_CLASS is None:
        from jinja2.sandbox import SecurityError

        class TemplateLimit(SecurityError):
            """A render passed one of the bounds above; `kind` is "output" when its text grew past
            the caller's bound (`limit` characters), else "work"."""

            def __init__(self, message: str, kind: str = "work", limit: int | None = None):
                super().__init__(message)
                self.kind, self.limit = kind, limit

        TemplateLimit.__module__ = __name__
        _LIMIT_CLASS = TemplateLimit
    return _LIMIT_CLASS


def __getattr__(name: str) -> Any:
    # TemplateLimit subclasses jinja2's SecurityError, and Jinja2 loads only when first used
    if name == "TemplateLimit":
        return _limit_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _limit(message: str, kind: str = "work", limit: int | None = None) -> Exception:
    return _limit_class()(message, kind, limit)


def _too_long(what: str) -> Exception:
    return _limit(f"{what} would make more than {MAX_TEXT:,} characters of text")


def _too_many(what: str) -> Exception:
    return _limit(f"{what} would make more than {MAX_ITEMS:,} items")


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


def _check_size(n: int, what: str) -> None:
    if n > MAX_TEXT:
        raise _too_long(what)


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

class _Metered:
    """A loop's iterable behind its meter (see _meter)."""

    __slots__ = ("it",)

    def __init__(self, it: Any):
        self.it = it

    def __iter__(self):
        return self.it


def _meter(iterable: Any, b: _Budget, steps: int, nbytes: int) -> Any:
    """`iterable`, charging `steps` and `nbytes` per item, _LOOP_BATCH items at a time."""
    if isinstance(iterable, _Metered):
        return iterable
    it = iter(iterable)
    take = itertools.islice

    def batch() -> tuple:
        chunk = tuple(take(it, _LOOP_BATCH))
        if chunk:
            b.spend(steps * len(chunk), nbytes * len(chunk))
        return chunk
    return _Metered(itertools.chain.from_iterable(iter(batch, ())))


def _sb_loop(context: Any, iterable: Any, steps: int, nbytes: int) -> Any:
    return _meter(iterable, _budget(), steps, nbytes)


def _sb_charge(context: Any, _: Any, steps: int, nbytes: int) -> None:
    _budget().spend(steps, nbytes)


def _sb_concat(context: Any, parts: list) -> str:
    """`a ~ b ~ c` (jinja2's str_join / markup_join), sized before it is joined."""
    from jinja2.runtime import markup_join

    b = _BUDGET.get() or _Budget()
    escape = context.eval_ctx.autoescape
    total = 0
    for p in parts:
        t = type(p)
        if t is str and not escape:
            total += len(p)
        elif t is int:
            total += p.bit_length() // 3 + 2
        elif isinstance(p, str):
            total += _escaped_len(p) if escape and not hasattr(p, "__html__") else len(p)
        else:
            total += _text_size(b, p) * (6 if escape else 1)
    _check_size(total, "`~`")
    b.spend(1, total)
    return markup_join(parts) if escape else "".join(map(str, parts))


def _finalize(eval_ctx: Any, value: Any) -> Any:
    """Each `{{ }}` output: sized (a list is sized before it is printed) and counted."""
    t = type(value)
    if t is str:
        n = _escaped_len(value) if eval_ctx.autoescape else len(value)
        if n <= _SMALL:  # paid by its node (_NODE_BYTES)
            return value
        b = _BUDGET.get() or _Budget()
    elif t is int or t is float or t is bool or value is None:
        return value
    else:
        b = _BUDGET.get() or _Budget()
        if isinstance(value, str):
            n = _escaped_len(value) if eval_ctx.autoescape and not hasattr(value, "__html__") else len(value)
        elif isinstance(value, (int, float)):
            return value
        else:
            n = _text_size(b, value) * (6 if eval_ctx.autoescape else 1)
    if n > MAX_TEXT:
        raise _too_long("this output")
    b.bytes += n
    if b.bytes > MAX_RENDER_BYTES:
        b.add_bytes(0)
    return value


def _instrument(tree: Any, env: Any) -> Any:
    """The parsed template with its loops metered, its macro, call-block and block bodies
    charged when they run, and `~` sized (see the section's comment)."""
    from jinja2 import nodes
    from jinja2.visitor import NodeTransformer

    costs: dict = {}

    def cost(body: list) -> tuple[int, int]:
        """(nodes, bytes of text and literals) of one run of `body`, without the bodies that
        charge themselves (loops, macros, call blocks, blocks, large if-branches)."""
        hit = costs.get(id(body))
        if hit is not None:
            return hit[1]
        steps = nbytes = 0
        stack = list(body)
        while stack:
            n = stack.pop()
            steps += 1
            nbytes += _NODE_BYTES
            if isinstance(n, nodes.TemplateData):
                nbytes += len(n.data)
            elif isinstance(n, (nodes.List, nodes.Dict)) or isinstance(n, nodes.Tuple) and n.ctx == "load":
                nbytes += 64 + 8 * len(n.items)
            if isinstance(n, nodes.For):
                stack.append(n.iter)
                stack.extend(n.else_)
            elif isinstance(n, nodes.CallBlock):
                stack.append(n.call)
            elif isinstance(n, nodes.If):
                stack.append(n.test)
                stack.extend(n.elif_)  # each an If: its test, its body
                for branch in (n.body, n.else_):
                    s, b = cost(branch)
                    if s <= _BRANCH_NODES:
                        steps, nbytes = steps + s, nbytes + b
            elif not isinstance(n, (nodes.Macro, nodes.Block)):
                stack.extend(n.iter_child_nodes())
        costs[id(body)] = (body, (steps, nbytes))  # the list is held, so its id stays its own
        return steps, nbytes

    def charge_first(body: list, steps: int, nbytes: int, lineno: int) -> list:
        charge = meter(nodes.Const(None, lineno=lineno), "__sb_charge", steps, nbytes)
        return [nodes.ExprStmt(charge, lineno=lineno), *body]

    def meter(node: Any, name: str, steps: int, nbytes: int) -> Any:
        return nodes.Filter(node, name, [nodes.Const(steps), nodes.Const(nbytes)], [], None, None,
                            lineno=node.lineno)

    class Instrument(NodeTransformer):
        def __init__(self) -> None:
            self.loops: list = []  # per enclosing loop body: (steps, bytes) of a recursive one, else None

        def visit_list(self, items: list) -> list:
            out: list = []
            for n in items:
                r = self.visit(n)
                if isinstance(r, list):
                    out.extend(r)
                elif r is not None:
                    out.append(r)
            return out

        def visit_Concat(self, node: Any) -> Any:
            node = self.generic_visit(node)
            return nodes.Filter(nodes.List(node.nodes, lineno=node.lineno), "__sb_concat", [], [], None, None,
                                lineno=node.lineno)

        def visit_For(self, node: Any) -> Any:
            steps, nbytes = cost(node.body)
            body_charge = None
            if node.test is not None:
                test_steps, test_bytes = cost([node.test])
                if steps > _BRANCH_NODES:  # a filtered loop: its body charges only when it runs
                    body_charge, steps, nbytes = (steps, nbytes), test_steps, test_bytes
                else:
                    steps, nbytes = steps + test_steps, nbytes + test_bytes
            node.iter = self.visit(node.iter)
            self.loops.append((steps + 1, nbytes) if node.recursive else None)
            node.body = self.visit_list(node.body)
            if node.test is not None:
                node.test = self.visit(node.test)
            self.loops.pop()
            node.else_ = self.visit_list(node.else_)
            if body_charge is not None:
                node.body = charge_first(node.body, *body_charge, node.lineno)
            node.iter = meter(node.iter, "__sb_loop", steps + 1, nbytes)
            return node

        def visit_If(self, node: Any) -> Any:
            big = [cost(branch)[0] > _BRANCH_NODES for branch in (node.body, node.else_)]
            body_cost, else_cost = cost(node.body), cost(node.else_)
            node = self.generic_visit(node)
            if big[0]:
                node.body = charge_first(node.body, *body_cost, node.lineno)
            if big[1]:
                node.else_ = charge_first(node.else_, *else_cost, node.lineno)
            return node

        def visit_Call(self, node: Any) -> Any:
            node = self.generic_visit(node)
            # loop(children) in a recursive loop walks `children` with the loop's body again
            if self.loops and self.loops[-1] and isinstance(node.node, nodes.Name) and node.node.name == "loop" \
                    and node.args:
                node.args[0] = meter(node.args[0], "__sb_loop", *self.loops[-1])
            return node

        def charged(self, node: Any) -> Any:
            steps, nbytes = cost(node.body)
            node = self.generic_visit(node)
            node.body = charge_first(node.body, steps + 1, nbytes, node.lineno)
            return node

        visit_Macro = visit_CallBlock = visit_Block = charged

    tree = Instrument().visit(tree)
    tree.set_environment(env)
    return tree


# -- filters and tests: each wrapped to count its work and size what it makes

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


def _environment(undefined: str = "error"):
    import functools
    import types

    from jinja2 import ChainableUndefined, StrictUndefined, Template
    from jinja2.runtime import LoopContext
    from jinja2.sandbox import (
        ImmutableSandboxedEnvironment,
        SandboxedEscapeFormatter,
        SandboxedFormatter,
    )
    from jinja2.utils import pass_context, pass_eval_context
    from markupsafe import Markup

    class _Sized:
        """str.format's fields sized before they are formatted (widths, values, in total)."""

        budget: Any = None
        total = 0
        grow = 1

        def convert_field(self, value, conversion):
            if conversion is not None and not isinstance(value, (int, float)) and value is not None:
                n = (len(value) if isinstance(value, str) else _text_size(self.budget, value)) * \
                    (10 if conversion in ("r", "a") else 1)
                _check_size(n, "format()")
            return super().convert_field(value, conversion)

        def format_field(self, value, format_spec):
            width = 0
            for digits in re.findall(r"\d+", format_spec):
                if len(digits) > 9:
                    raise _too_long("format()")
                width += int(digits)
            self.total += width + _text_size(self.budget, value) * self.grow + 32
            _check_size(self.total, "format()")
            return super().format_field(value, format_spec)

    class _SizedFormatter(_Sized, SandboxedFormatter):
        pass

    class _SizedEscapeFormatter(_Sized, SandboxedEscapeFormatter):
        grow = 6

    class _BoundedTemplate(Template):
        """A template whose render is bounded (see _render); generate() yields its one text."""

        def render(self, *args: Any, **kwargs: Any) -> str:
            return _render(self, dict(*args, **kwargs))

        def generate(self, *args: Any, **kwargs: Any):
            yield self.render(*args, **kwargs)

    class _Bounded(ImmutableSandboxedEnvironment):
        """The sandbox, with every render bounded in work, memory, time and output (see the
        section on render limits), and `+ - * / // % **` computed as JavaScript's in a template
        converted from Nunjucks."""

        intercepted_binops = frozenset(["*", "**", "+", "-", "/", "//", "%"])
        intercepted_unops = frozenset(["-", "+"])
        template_class = _BoundedTemplate

        def from_string(self, source, globals=None, template_class=None):
            # a template converted from Nunjucks (it starts with JS_MARKER) computes as JavaScript
            if isinstance(source, str) and source.startswith(JS_MARKER):
                globals = {**(globals or {}), _JS_KEY: _JS_ON}
            return super().from_string(source, globals, template_class)

        def _parse(self, source, name, filename):
            return _instrument(super()._parse(source, name, filename), self)

        def call_unop(self, context, operator_name, arg):
            if context.parent.get(_JS_KEY) is _JS_ON:
                if isinstance(arg, (list, tuple)):
                    _check_text(_budget(), arg, f"unary {operator_name}")
                n = js_to_number(arg)
                return -n if operator_name == "-" else n
            return operator.neg(arg) if operator_name == "-" else operator.pos(arg)

        def call_binop(self, context, operator_name, left, right):
            b = _BUDGET.get() or _Budget()
            if context.parent.get(_JS_KEY) is _JS_ON:
                for v in (left, right):
                    if isinstance(v, (list, tuple)):  # JavaScript turns an array into text
                        _check_text(b, v, f"`{operator_name}`")
                rv = js_binop(operator_name, left, right)
            else:
                rv = _py_binop(b, operator_name, left, right)
            if isinstance(rv, (list, tuple)):  # slots pointing at values already counted
                b.add_bytes(56 + 8 * len(rv))
            elif not isinstance(rv, (int, float)):
                _charge(b, rv)
            return rv

        def getitem(self, obj, argument):
            rv = super().getitem(obj, argument)
            if type(argument) is slice:
                _charge(_budget(), rv)
            return rv

        def call(self, context, obj, /, *args, **kwargs):
            b = _BUDGET.get() or _Budget()
            if len(args) + len(kwargs) > 16:  # f(*items): a tuple (or mapping) the callee may keep
                b.spend(len(args) + len(kwargs), _SLOT_BYTES * (len(args) + len(kwargs)))
            if args and isinstance(obj, LoopContext) and not isinstance(args[0], _Metered):
                args = (_meter(args[0], b, 1, 0), *args[1:])
            owner = getattr(obj, "__self__", None)
            if isinstance(owner, (str, bytes, int)) and not isinstance(owner, bool):
                args = _method_check(b, owner, getattr(obj, "__name__", ""), args, kwargs)
            rv = super().call(context, obj, *args, **kwargs)
            _charge(b, rv)
            return rv

        def wrap_str_format(self, value):
            # jinja2's, with a formatter that sizes each field before it formats it
            if not isinstance(value, (types.MethodType, types.BuiltinMethodType)) \
                    or value.__name__ not in ("format", "format_map"):
                return None
            f_self = value.__self__
            if not isinstance(f_self, str):
                return None
            str_type = type(f_self)
            is_format_map = value.__name__ == "format_map"
            env = self

            def wrapper(*args, **kwargs):
                if is_format_map:
                    if kwargs:
                        raise TypeError("format_map() takes no keyword arguments")
                    if len(args) != 1:
                        raise TypeError(f"format_map() takes exactly one argument ({len(args)} given)")
                    kwargs, args = args[0], ()
                formatter = _SizedEscapeFormatter(env, escape=f_self.escape) if isinstance(f_self, Markup) \
                    else _SizedFormatter(env)
                formatter.budget, formatter.total = _budget(), len(f_self)
                return str_type(formatter.vformat(f_self, args, kwargs))
            return functools.update_wrapper(wrapper, value)

    # "empty": Nunjucks' rule (promptfoo's templates): an undefined name, and any attribute or item
    # of one, is undefined: it prints nothing, is false, iterates as empty
    env = _Bounded(undefined=StrictUndefined if undefined == "error" else ChainableUndefined, autoescape=False,
                   keep_trailing_newline=True, finalize=pass_eval_context(_finalize))
    env.filters["js"] = js_print
    env.filters["dump"] = js_dump
    env.filters.update(NJ_FILTERS)
    env.filters["sum"] = pass_context(_sum_filter)
    env.filters = {name: _bounded_filter(name, fn) for name, fn in env.filters.items()}
    env.filters.update(__sb_loop=pass_context(_sb_loop), __sb_charge=pass_context(_sb_charge),
                       __sb_concat=pass_context(_sb_concat))
    env.tests = {name: _bounded_test(fn) for name, fn in env.tests.items()}
    env.globals["lipsum"] = _lipsum
    return env


_PLAIN_OPS = {"+": operator.add, "-": operator.sub, "/": operator.truediv, "//": operator.floordiv,
              "%": operator.mod}


def js_number(x: float) -> str:
    """Number::toString (ECMA-262): 1.0 -> "1", 1e21 -> "1e+21", 1e-7 -> "1e-7"."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "0"
    sign, digits, exp = Decimal(repr(float(x))).normalize().as_tuple()
    ds = "".join(map(str, digits))
    k, n = len(ds), exp + len(ds)
    if k <= n <= 21:
        out = ds + "0" * (n - k)
    elif 0 < n <= 21:
        out = ds[:n] + "." + ds[n:]
    elif -6 < n <= 0:
        out = "0." + "0" * (-n) + ds
    else:
        e = n - 1
        mant = ds if k == 1 else ds[0] + "." + ds[1:]
        out = f"{mant}e{'+' if e >= 0 else '-'}{abs(e)}"
    return ("-" if sign else "") + out


def js_dump(value: Any, indent: int | None = None) -> str:
    """Nunjucks' `dump` filter: JSON.stringify(value, null, indent) (no spaces without an indent,
    non-ASCII kept, integral floats printed as integers)."""
    import json

    def plain(v: Any) -> Any:
        if isinstance(v, float) and v.is_integer() and abs(v) < 2 ** 53:
            return int(v)
        if isinstance(v, dict):
            return {str(k): plain(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [plain(x) for x in v]
        return v

    from jinja2 import Undefined

    if isinstance(value, Undefined):
        return ""
    if isinstance(indent, str):  # JSON.stringify uses at most 10 characters of indentation
        indent = indent[:10]
    elif isinstance(indent, (int, float)) and not isinstance(indent, bool):
        indent = max(0, min(10, int(indent)))
    if indent:
        return json.dumps(plain(value), ensure_ascii=False, indent=indent)
    return json.dumps(plain(value), ensure_ascii=False, separators=(",", ":"))


def js_print(value: Any) -> str:
    """What Nunjucks outputs for `{{ value }}` (see the module): null/undefined print nothing."""
    from jinja2 import Undefined

    if value is None or isinstance(value, Undefined):
        return ""
    return _js_string(value)


def _js_string(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return js_number(float(value)) if isinstance(value, float) or abs(value) >= 2 ** 53 else str(value)
    if isinstance(value, (list, tuple)):  # Array.prototype.join: null and undefined elements are empty
        return ",".join("" if v is None else _js_string(v) for v in value)
    return "[object Object]"



# ---- Nunjucks 3 semantics for templates converted from promptfoo (importers/nunjucks.py)
#
# Values are JavaScript's as Python holds them: None is null, a jinja2 Undefined is undefined,
# bool, int/float are numbers, str, list/tuple are arrays, dict is an object. Each nj_* filter
# is a port of nunjucks/src/filters.js (nunjucks 3.2.4; its helpers from lib.js and runtime.js);
# arithmetic in a converted template follows compiler.js (`+` is JavaScript's +, `//` is
# Math.floor(a / b), `**` Math.pow) and JavaScript's operators.

#: a converted template that computes (+ - * / // % **) starts with this comment: its arithmetic
#: is JavaScript's (call_binop); native templates keep Python's
JS_MARKER = "{# nunjucks: JavaScript arithmetic #}"
_JS_KEY = "__nunjucks_js__"
_JS_ON = object()

#: JavaScript's WhiteSpace and LineTerminator (what \s matches in a JavaScript regular expression)
_JS_WS = "\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"


def _undefined():
    from jinja2 import ChainableUndefined

    return ChainableUndefined()


def _is_undef(v: Any) -> bool:
    from jinja2 import Undefined

    return isinstance(v, Undefined)


def _fail(message: str):
    from jinja2.exceptions import TemplateRuntimeError

    raise TemplateRuntimeError(message)


def js_truthy(value: Any) -> bool:
    """JavaScript's ToBoolean: undefined, null, false, 0, NaN and "" are false; [] and {} are true."""
    if value is None or _is_undef(value) or value is False:
        return False
    if isinstance(value, (int, float)):
        return not math.isnan(value) and value != 0
    if isinstance(value, str):
        return value != ""
    return True


def js_str(value: Any) -> str:
    """JavaScript's String(value): undefined is "undefined", null "null" (js_print prints them empty)."""
    if value is None:
        return "null"
    if _is_undef(value):
        return "undefined"
    if isinstance(value, (list, tuple)):
        return ",".join("" if v is None or _is_undef(v) else js_str(v) for v in value)
    return _js_string(value)


def _primitive(value: Any) -> Any:
    """ToPrimitive: an array is its join, an object "[object Object]"."""
    if isinstance(value, (list, tuple, dict)):
        return js_str(value)
    return value


def js_to_number(value: Any) -> float | int:
    """JavaScript's ToNumber."""
    import re

    value = _primitive(value)
    if value is None or value is False:
        return 0
    if value is True:
        return 1
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, str):
        s = value.strip(_JS_WS_CHARS)
        if not s:
            return 0
        m = re.fullmatch(r"0([xob])([0-9a-f]+)", s, re.IGNORECASE)
        if m:
            try:
                return int(m.group(2), {"x": 16, "o": 8, "b": 2}[m.group(1).lower()])
            except ValueError:
                return math.nan
        if re.fullmatch(r"[+-]?Infinity", s):
            return -math.inf if s[0] == "-" else math.inf
        if re.fullmatch(r"[+-]?(\d+(?:\.\d*)?|\.\d+)([eE][+-]?\d+)?", s):
            f = float(s)
            return int(f) if f.is_integer() and abs(f) < 2 ** 53 and re.fullmatch(r"[+-]?\d+", s) else f
        return math.nan
    return math.nan


def _num(x: float) -> float | int:
    """An arithmetic result: an integral value within 2**53 stays an int (it prints the same)."""
    if isinstance(x, float) and x.is_integer() and abs(x) < 2 ** 53:
        return int(x)
    return x


def js_add(left: Any, right: Any) -> Any:
    """JavaScript's +: text when either side is (or converts to) a string, else numbers."""
    a, b = _primitive(left), _primitive(right)
    if isinstance(a, str) or isinstance(b, str):
        sa, sb = js_str(a), js_str(b)
        if len(sa) + len(sb) > MAX_TEXT:
            raise _too_long("`+`")
        return sa + sb
    x, y = js_to_number(a), js_to_number(b)
    if isinstance(x, int) and isinstance(y, int) and not isinstance(x, bool) and not isinstance(y, bool):
        return x + y
    return _num(float(x) + float(y))


def js_binop(op: str, left: Any, right: Any) -> Any:
    """The arithmetic operators as Nunjucks compiles them (compiler.js: JavaScript's + - * / %,
    Math.floor(a / b) for //, Math.pow for **)."""
    if op == "+":
        return js_add(left, right)
    x, y = float(js_to_number(left)), float(js_to_number(right))
    if op == "-":
        return _num(x - y)
    if op == "*":
        return _num(x * y)
    if op in ("/", "//"):
        if y == 0:
            q = math.nan if x == 0 or math.isnan(x) else math.copysign(math.inf, x) * math.copysign(1, y)
        else:
            q = x / y
        return _num(math.floor(q) if op == "//" and math.isfinite(q) else q)
    if op == "%":
        if y == 0 or math.isinf(x) or math.isnan(x) or math.isnan(y):
            return math.nan
        return _num(x if math.isinf(y) else math.fmod(x, y))
    if op == "**":
        return _num(_js_pow(x, y))
    raise ValueError(op)


def _js_pow(x: float, y: float) -> float:
    if math.isnan(y) or (abs(x) == 1 and math.isinf(y)):
        return math.nan
    try:
        return math.pow(x, y)
    except OverflowError:
        return math.inf if x > 0 or y % 2 == 0 else -math.inf
    except ValueError:  # 0 ** -1, negative ** fraction
        return math.inf if x == 0 else math.nan


def _js_lt(a: Any, b: Any) -> bool:
    """JavaScript's a < b (the abstract relational comparison)."""
    a, b = _primitive(a), _primitive(b)
    if isinstance(a, str) and isinstance(b, str):
        return _utf16(a) < _utf16(b)
    x, y = js_to_number(a), js_to_number(b)
    return x < y  # NaN compares false


def _utf16(s: str) -> bytes:
    """A key that orders strings as JavaScript does (by UTF-16 code units)."""
    return s.encode("utf-16-be", "surrogatepass")


def _js_len(s: str) -> int:
    return len(s.encode("utf-16-le", "surrogatepass")) // 2


def _is_index(k: str) -> bool:
    return k.isdigit() and k.isascii() and (k == "0" or k[0] != "0") and int(k) < 2 ** 32 - 1


def js_keys(obj: dict) -> list:
    """An object's keys in JavaScript's order: integer-like keys ascending, then the others as
    inserted (Object.keys, for-in, JSON.stringify)."""
    keys = [k if isinstance(k, str) else js_str(k) for k in obj]
    index = sorted((k for k in keys if _is_index(k)), key=int)
    return index + [k for k in keys if not _is_index(k)]


def _js_items(obj: dict) -> list:
    lookup = {(k if isinstance(k, str) else js_str(k)): v for k, v in obj.items()}
    return [(k, lookup[k]) for k in js_keys(obj)]


def js_member(obj: Any, key: Any) -> Any:
    """runtime.memberLookup without methods: obj[key], undefined when absent."""
    if obj is None or _is_undef(obj):
        return _undefined()
    if isinstance(obj, (list, tuple, str)):
        if isinstance(key, (int, float)) and not isinstance(key, bool) and float(key).is_integer() or isinstance(key, str) and _is_index(key):
            i = int(key)
        else:
            return _js_len(obj) if key == "length" and isinstance(obj, str) else \
                (len(obj) if key == "length" else _undefined())
        return obj[i] if 0 <= i < len(obj) else _undefined()
    if isinstance(obj, dict):
        k = key if isinstance(key, str) else js_str(key)
        for kk, v in obj.items():
            if (kk if isinstance(kk, str) else js_str(kk)) == k:
                return v
        return _undefined()
    return _undefined()


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
_JS_WS_CHARS = "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
               "\u2028\u2029\u202f\u205f\u3000\ufeff"


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


def _js_trim(s: str) -> str:
    return s.strip(_JS_WS_CHARS)


def nj_striptags(value, preserve_linebreaks=None, *_):
    import re

    s = _js_trim(_strip_tags(_need_str(_normalize(value, ""), "striptags")))
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
    return _js_trim(_need_str(value, "trim"))


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


_ENVS: dict[str, Any] = {}
#: what an undefined name does in a template: "error" (scoreboard's rule) or "empty" (Nunjucks')
UNDEFINED_MODES = ("error", "empty")


def environment(undefined: str = "error"):
    """The sandboxed Jinja2 environment (made on first use: Jinja2 loads only when used); with
    undefined="empty" an undefined name or any attribute of one prints nothing (Nunjucks' rule)."""
    env = _ENVS.get(undefined)
    if env is None:
        if undefined not in UNDEFINED_MODES:
            raise ValueError(f"undefined is one of {UNDEFINED_MODES}, got {undefined!r}")
        env = _ENVS[undefined] = _environment(undefined)
    return env




def render_text(text: str, names: dict) -> str:
    """Render one text template with `names` (errors are Jinja2's: UndefinedError, SecurityError)."""
    return environment().from_string(text).render(names)
