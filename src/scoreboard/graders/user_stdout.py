"""What user code (a custom grader, a python transform, a scoring function) prints to stdout.

Such code runs in this process, and `scoreboard run --json` puts the report on stdout: a grader's
`print()` there would corrupt it. While user code runs, what it prints goes to stderr instead (as
it comes, nothing held back), and its start is kept so that a function that printed its verdict
and returned nothing (`print(json.dumps({"pass": True}))`, an older promptfoo habit) gets an
error that says so instead of a bare "returned None".

sys.stdout is wrapped once by a thin router: a write from a thread running user code (a
thread-local mark) or from an async function's task (a context variable) is routed; every other
write goes to the stream it wraps, unchanged, as does every other attribute (`buffer`, `fileno`).
"""

from __future__ import annotations

import contextvars
import sys
import threading
from typing import Any

#: how much of what one call printed is kept for an error message
MAX_KEPT = 2000

_TASK: contextvars.ContextVar[Printed | None] = contextvars.ContextVar("user_stdout", default=None)
_THREAD = threading.local()


#: what one call printed without a line break yet is written out past this many characters
MAX_PENDING = 8192


class Printed:
    """What one call of user code printed: written to stderr a whole line at a time (print()
    writes its text and its newline apart, and graders run concurrently: two graders' lines are
    never glued together), the rest when the call ends; its start kept."""

    def __init__(self) -> None:
        self.head = ""
        self._pending = ""

    def note(self, text: str) -> None:
        if len(self.head) < MAX_KEPT:
            self.head += text[: MAX_KEPT - len(self.head)]
        self._pending += text
        cut = self._pending.rfind("\n")
        if cut >= 0 or len(self._pending) > MAX_PENDING:
            whole = len(self._pending) if cut < 0 else cut + 1
            out, self._pending = self._pending[:whole], self._pending[whole:]
            _to_stderr(out)

    def flush(self) -> None:
        """The call ended: what it printed after its last line break, on a line of its own."""
        if self._pending:
            out, self._pending = self._pending, ""
            _to_stderr(out + "\n")


def _to_stderr(text: str) -> None:
    try:
        sys.stderr.write(text)  # one write: a line is never split by another thread's
    except (OSError, ValueError):  # stderr closed or full: the text is dropped, the grade goes on
        return


class _Router:
    """sys.stdout, with user code's writes sent to its Printed."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def write(self, text: str) -> int:
        printed = getattr(_THREAD, "printed", None) or _TASK.get()
        if printed is None:
            return self._inner.write(text)
        printed.note(str(text))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        self._inner.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def route() -> None:
    """Wrap sys.stdout in the router (once; again after something put another stream there)."""
    if sys.stdout is not None and not isinstance(sys.stdout, _Router):
        sys.stdout = _Router(sys.stdout)


def in_thread(fn: Any, printed: Printed) -> Any:
    """`fn` for a worker thread, its prints sent to `printed`."""
    def call(*args: Any) -> Any:
        _THREAD.printed = printed
        try:
            return fn(*args)
        finally:
            _THREAD.printed = None
    return call


def in_task(printed: Printed) -> contextvars.Token:
    """Send the current task's prints to `printed` (reset with the token returned)."""
    return _TASK.set(printed)


def reset_task(token: contextvars.Token) -> None:
    _TASK.reset(token)


def check_printed(value: Any, printed: Printed) -> Any:
    """`value`; a None from a function that printed something is an error saying what it printed."""
    text = printed.head.strip()
    if value is None and text:
        shown = text if len(text) <= 200 else text[:200] + "…"
        raise ValueError(f"returned None after printing {shown!r} to stdout: return the result, do not print it")
    return value
