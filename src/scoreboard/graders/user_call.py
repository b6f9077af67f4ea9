"""Calling user code (a custom grader, a python transform, a scoring function) under a time limit.

The run's own loop never runs user code. A sync function runs in a daemon thread (reused from
call to call: daemon_pool.py); an async function (or an awaitable a sync function returns) on
the user loop (userloop.py), kept for the whole run, so a client async code opens once and
reuses works on every call. Code that
blocks (`time.sleep(1000)` inside `async def`, a blocking client called from a coroutine) is cut
at the limit like any other and is that grade's error ("timed out"), never a hang of the whole
run. Python cannot kill a thread: one that never returns runs on, without holding up the end of
the run, until the process exits.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
from typing import Any

from .. import daemon_pool, userloop
from . import user_stdout


class UserCodeExit(Exception):
    """A KeyboardInterrupt, SystemExit or other BaseException that user code raised, carried as
    an ordinary exception: it is that grade's error, never the end of the run (an async function's
    sys.exit() would otherwise leave the event loop, and the process, with its code). `kind` is
    the original exception's class name, which a grade's error names."""

    def __init__(self, exc: BaseException):
        super().__init__(*exc.args)
        self.kind = type(exc).__name__


async def _contained(awaitable: Any) -> Any:
    """Await user code, turning what it raises beyond Exception into a UserCodeExit (a real
    cancellation still propagates)."""
    try:
        return await awaitable
    except (Exception, asyncio.CancelledError):
        raise
    except BaseException as exc:  # the user's own KeyboardInterrupt, SystemExit, GeneratorExit
        raise UserCodeExit(exc) from None


async def _printing_to(printed: user_stdout.Printed, awaitable: Any) -> Any:
    token = user_stdout.in_task(printed)
    try:
        return await _contained(awaitable)
    finally:
        user_stdout.reset_task(token)


class _Call:
    """One call of user code, started at once; `future` (concurrent) settles with its value."""

    def __init__(self, fn: Any, args: tuple, printed: user_stdout.Printed):
        self.printed, self.loop_used = printed, None
        self.future: concurrent.futures.Future = concurrent.futures.Future()
        self._inner: concurrent.futures.Future | None = None
        if inspect.iscoroutinefunction(fn):  # calling it runs none of its code: the loop does
            self._on_loop(fn(*args))
        else:
            run = user_stdout.in_thread(self._sync, printed)
            daemon_pool.submit(lambda: run(fn, args))

    def _sync(self, fn: Any, args: tuple) -> None:
        try:
            value = fn(*args)
        except Exception as exc:  # handed to the caller
            self._settle(False, exc)
            return
        except BaseException as exc:  # the user's own SystemExit or KeyboardInterrupt, as an error
            self._settle(False, UserCodeExit(exc))
            return
        if inspect.isawaitable(value):
            self._on_loop(value)
        else:
            self._settle(True, value)

    def _on_loop(self, awaitable: Any) -> None:
        inner, self.loop_used = userloop.submit(_printing_to(self.printed, awaitable))
        self._inner = inner
        if self.future.cancelled():  # cut meanwhile
            inner.cancel()
        inner.add_done_callback(self._from_inner)

    def _from_inner(self, inner: concurrent.futures.Future) -> None:
        if inner.cancelled():
            self._settle(False, asyncio.CancelledError())
        elif inner.exception() is not None:
            self._settle(False, inner.exception())
        else:
            self._settle(True, inner.result())

    def _settle(self, ok: bool, value: Any) -> None:
        if not self.future.done():
            (self.future.set_result if ok else self.future.set_exception)(value)

    def cut(self) -> None:
        """The limit passed: stop waiting (a coroutine is cancelled when its loop turns)."""
        self.future.cancel()
        userloop.cut(self._inner, self.loop_used)


async def call_user(fn: Any, args: tuple, timeout_s: float) -> Any:
    """Call a user function (sync or async) under a time limit (see the module's docstring);
    without a running loop it is waited for synchronously under the same limit, so a grade
    never suspends and a function that hangs is cut there too. Whatever it raises is an
    ordinary exception for the caller to record (see UserCodeExit); what it prints goes to
    stderr, never into stdout (graders/user_stdout.py)."""
    user_stdout.route()
    printed = user_stdout.Printed()
    call = _Call(fn, args, printed)
    try:
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # driven step by step (verify): waited for here
            try:
                result = call.future.result(timeout_s)
            except concurrent.futures.TimeoutError:
                raise TimeoutError(f"timed out after {timeout_s:g} s") from None
        else:
            try:
                result = await asyncio.wait_for(asyncio.wrap_future(call.future), timeout_s)
            except TimeoutError:
                raise TimeoutError(f"timed out after {timeout_s:g} s") from None
        return user_stdout.check_printed(result, printed)
    except (TimeoutError, asyncio.CancelledError):  # cut here, or the attempt was cancelled
        call.cut()
        raise
    finally:
        printed.flush()
