"""Render limits: what one template render may cost (the bounds are bounds.py's).

A template is user input and may be hostile, so each render runs under a budget (_Budget, held
in a context variable, so renders on other threads or tasks have their own): the work it does,
the bytes of the values it makes, the CPU time it takes and the size of its output are bounded,
and an operation that would make a value past MAX_TEXT characters or MAX_ITEMS items is refused
before it is made. Passing a bound raises TemplateLimit (a jinja2 SecurityError), one line.

Where it is counted: every template is instrumented when it is parsed (_instrument): each
`{% for %}` walks its iterable through a meter (an iteration costs 1 + the nodes of the loop's
body, and the bytes of its text and literals and _NODE_BYTES a node), each macro, call block,
block and large if-branch charges its own nodes when it runs, and `~` is a filter that sizes
its parts first. The sandbox's hooks (templating's environment) size and count what the nodes
make, with the helpers here: each call (a str method that can amplify is sized before it runs,
_method_check), operator (_py_binop), filter (wrapped, _bounded_filter, with its own size check
where one can amplify), test (_bounded_test) and `{{ }}` output (environment.finalize,
_finalize). A list or mapping is sized as text (walked once, memoized) before anything prints it.
No signal or thread is used: a render may run on any thread, and renders on other threads have
their own budget. Jinja2 is imported on first use."""

from __future__ import annotations

import contextlib
import contextvars
import itertools
import operator
import re
import sys
import time
from typing import Any

from .bounds import (
    _BRANCH_NODES,
    _CHECK_EVERY,
    _LOOP_BATCH,
    _MAX_LIPSUM_WORDS,
    _MAX_REPEAT,
    _MAX_WALK_DEPTH,
    _NODE_BYTES,
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
from .js import _is_undef, js_str


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


_PLAIN_OPS = {"+": operator.add, "-": operator.sub, "/": operator.truediv, "//": operator.floordiv,
              "%": operator.mod}
