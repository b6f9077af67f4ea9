"""Render limits: what one template render may cost (the bounds are bounds.py's).

A template is user input and may be hostile, so each render runs under a budget (_Budget, held
in a context variable, so renders on other threads or tasks have their own): the work it does,
the bytes of the values it makes, the CPU time it takes and the size of its output are bounded,
and an operation that would make a value past MAX_TEXT characters or MAX_ITEMS items is refused
before it is made. Passing a bound raises TemplateLimit (a jinja2 SecurityError), one line.

How a value is sized against the budget is sizes.py's. Where it is counted (instrument.py and
filters.py, with the budget here and the sizing helpers of sizes.py):
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
import time
from typing import Any

from .bounds import (
    _CHECK_EVERY,
    _LOOP_BATCH,
    MAX_RENDER_BYTES,
    MAX_RENDER_SECONDS,
    MAX_RENDER_STEPS,
    MAX_TEXT,
    _limit,
)


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
