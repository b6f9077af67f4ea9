"""The bounds on one template render, and TemplateLimit, the error of passing one: a leaf that
js.py and nunjucks.py (the Nunjucks ports), limits.py (the budget that enforces them) and environment.py
(the environment) share.

Each render is bounded in work (MAX_RENDER_STEPS), CPU time (MAX_RENDER_SECONDS), the bytes of the
values it makes (MAX_RENDER_BYTES), its output, and each text (MAX_TEXT), list (MAX_ITEMS) and
number (MAX_INT_BITS) it makes; limits.py and sizes.py say how each is counted. Passing a bound is a
TemplateLimit (a jinja2 SecurityError) of one line. TemplateLimit is made on first use (module
__getattr__), so importing this module does not import Jinja2."""

from __future__ import annotations

from typing import Any

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

        # its public home: callers import it from scoreboard.templating (which re-exports it)
        TemplateLimit.__module__ = "scoreboard.templating"
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


def _check_size(n: int, what: str) -> None:
    if n > MAX_TEXT:
        raise _too_long(what)
