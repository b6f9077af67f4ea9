"""Error types. A ScoreboardError carries a one-line message meant for the user."""

from __future__ import annotations

from typing import Iterable


class ScoreboardError(Exception):
    """Base of every error scoreboard reports to a user; `exit_code` is what the CLI returns."""

    exit_code = 1


def shorten(text: str, limit: int = 200) -> str:
    """`text` cut to `limit` characters with an ellipsis: a value echoed in an error (a case id,
    a path, a field) comes from user files and may be 100,000 characters long."""
    text = str(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


#: names longer than this get no close-name hint: difflib's ratio grows with the product of the
#: two lengths (two random 100,000-character names take 40 s), and a name comes from user files
HINT_CHARS = 1000
#: the most known names looked through for a hint
HINT_NAMES = 100_000


def closest(name: object, names: Iterable[object], cutoff: float = 0.75) -> str | None:
    """The known name closest to a mistyped one (difflib's ratio at least `cutoff`), else None.
    The one place a "did you mean" is looked up: names over HINT_CHARS characters are passed
    over, and at most HINT_NAMES known names are compared, so a hint never holds up an error."""
    if not isinstance(name, str) or len(name) > HINT_CHARS:
        return None
    pool = sorted({text for text in map(str, names) if len(text) <= HINT_CHARS})[:HINT_NAMES]
    if not pool:
        return None
    import difflib

    found = difflib.get_close_matches(name, pool, n=1, cutoff=cutoff)
    return found[0] if found else None


def did_you_mean(name: str, names: Iterable[str], cutoff: float = 0.75) -> str:
    """" (did you mean 'x'?)" for the known name closest to a mistyped one, else ""."""
    close = closest(name, names, cutoff)
    return f" (did you mean {shorten(close, 120)!r}?)" if close is not None else ""


#: the most characters of one error line's message part (the location parts have their own)
MAX_MESSAGE = 1000


def one_line(text: str) -> str:
    """Line breaks escaped, so an error stays the one line the CLI promises."""
    return text.replace("\r", "\\r").replace("\n", "\\n")


class ConfigError(ScoreboardError):
    """Invalid usage or input (flags, case files, suites, reports): exit 1, nothing runs."""

    exit_code = 1

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None,
                 case_id: str | None = None, field: str | None = None, flag: str | None = None):
        self.file, self.line, self.case_id, self.field, self.flag = file, line, case_id, field, flag
        parts = []
        if flag:  # the command-line flag that caused it (then no file is to blame)
            parts.append(f"flag {flag}")
        if file:
            shown = shorten(file, 240)
            parts.append(f"{shown}:{line}" if line else shown)
        if case_id is not None:
            parts.append(f"case {shorten(case_id, 80)!r}")
        if field:
            parts.append(f"field {shorten(field, 120)!r}")
        prefix = ", ".join(parts)
        self.detail = message
        message = shorten(message, MAX_MESSAGE)
        super().__init__(one_line(f"{prefix}: {message}" if prefix else message))


#: the most errors one command reports before it stops looking (validate, a suite's load)
MAX_ERRORS = 20


class ConfigErrors(ConfigError):
    """Several input errors found in one pass, each its own line (the first is this error's
    own message, so code that catches one ConfigError still reads a sensible one)."""

    def __init__(self, errors: list[ConfigError], *, capped: bool = False):
        first = errors[0]
        super().__init__(first.detail, file=first.file, line=first.line, case_id=first.case_id,
                         field=first.field, flag=first.flag)
        self.errors, self.capped = list(errors), capped

    def lines(self) -> list[str]:
        """One line per error; a last line says when the search stopped at the cap."""
        out = [str(e) for e in self.errors]
        if self.capped:
            out.append(f"stopped after {len(self.errors)} errors; fix these and run again to see any others")
        return out


class Collector:
    """Gathers the input errors of one pass up to MAX_ERRORS, so a user sees every mistake at
    once instead of one per run. `with collector.each():` around a step records its error and
    goes on; `done()` raises them all (one ConfigError alone stays itself)."""

    def __init__(self, cap: int = MAX_ERRORS):
        self.cap = cap
        self.errors: list[ConfigError] = []

    def add(self, exc: ConfigError) -> None:
        for one in getattr(exc, "errors", None) or [exc]:
            if len(self.errors) >= self.cap:
                raise ConfigErrors(self.errors, capped=True)
            self.errors.append(one)

    def each(self) -> _Step:
        return _Step(self)

    def done(self) -> None:
        if len(self.errors) == 1:
            raise self.errors[0]
        if self.errors:
            raise ConfigErrors(self.errors)


class _Step:
    def __init__(self, collector: Collector):
        self.collector = collector

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind, exc, tb) -> bool:
        if exc is not None and isinstance(exc, ConfigError) and not (
                isinstance(exc, ConfigErrors) and exc.capped):
            self.collector.add(exc)
            return True
        return False


class SubjectError(ScoreboardError):
    """A subject failed to produce an output; becomes an `error` attempt, never a crash."""

    exit_code = 2

    def __init__(self, message: str, *, kind: str = "error", retryable: bool = False,
                 status: int | None = None, retry_after: float | None = None, stop_run: bool = False):
        super().__init__(message)
        self.kind, self.retryable, self.status = kind, retryable, status
        self.retry_after, self.stop_run = retry_after, stop_run


class GraderError(ScoreboardError):
    """A grader could not be built or failed unexpectedly."""

    exit_code = 1


class BudgetExceeded(ScoreboardError):
    """A run budget (requests, cost, tokens) ran out; the run stops dispatching."""

    exit_code = 2


class ReportWriteError(ScoreboardError):
    """A run's report could not be written once the run had started (a checkpoint or the final
    report): an execution failure, exit 2; the attempt log stays for --resume."""

    exit_code = 2


class LogWriteError(ReportWriteError):
    """A line could not be appended to the attempt log (disk full, file too large, I/O error):
    the line is cut back off, and the run stops sending (the attempt is run again on resume)."""


class BatchPending(Exception):
    """A request went to a provider batch that has not ended within the time this run polls it
    (`batch.poll_for_s`): its attempt is recorded as `waiting`, not failed, and `--resume`
    collects it later. `info` names the batch: provider, batch id, custom id, role."""

    def __init__(self, message: str, info: dict):
        super().__init__(message)
        self.info = info


class BatchCancelled(BatchPending):
    """The run's own interrupt (Ctrl+C) cancelled the provider batch holding this request before
    it ran: its attempt is recorded `interrupted` (usage unknown, possibly billed), not failed,
    and `--resume` submits the request anew."""


class BatchNotSent(BudgetExceeded):
    """The run stopped (an interrupt) before a queued batch request was submitted: nothing was
    sent, so its attempt is not run, like one the budget stopped."""


def cut_while(exc: BaseException) -> str:
    """" (what it was waiting for)" of a timeout (asyncio's TimeoutError, raised from the
    cancellation) that cut an HTTP subject or judge, which names it on its cancellation
    (`timed_out_while`: no answer's headers yet, a body still coming, a retry's wait); else ""."""
    doing = getattr(exc.__cause__, "timed_out_while", None)
    return f" ({doing})" if isinstance(doing, str) else ""
