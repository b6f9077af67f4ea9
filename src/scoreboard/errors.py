"""Error types. A ScoreboardError carries a one-line message meant for the user."""

from __future__ import annotations


class ScoreboardError(Exception):
    """Base of every error scoreboard reports to a user; `exit_code` is what the CLI returns."""

    exit_code = 1


def shorten(text: str, limit: int = 200) -> str:
    """`text` cut to `limit` characters with an ellipsis: a value echoed in an error (a case id,
    a path, a field) comes from user files and may be 100,000 characters long."""
    text = str(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


#: the most characters of one error line's message part (the location parts have their own)
MAX_MESSAGE = 1000


def one_line(text: str) -> str:
    """Line breaks escaped, so an error stays the one line the CLI promises."""
    return text.replace("\r", "\\r").replace("\n", "\\n")


class ConfigError(ScoreboardError):
    """Invalid usage or input (flags, case files, suites, reports): exit 1, nothing runs."""

    exit_code = 1

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None,
                 case_id: str | None = None, field: str | None = None):
        self.file, self.line, self.case_id, self.field = file, line, case_id, field
        parts = []
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


class BatchPending(Exception):
    """A request went to a provider batch that has not ended within the time this run polls it
    (`batch.poll_for_s`): its attempt is recorded as `waiting`, not failed, and `--resume`
    collects it later. `info` names the batch: provider, batch id, custom id, role."""

    def __init__(self, message: str, info: dict):
        super().__init__(message)
        self.info = info


class BatchNotSent(BudgetExceeded):
    """The run stopped (an interrupt) before a queued batch request was submitted: nothing was
    sent, so its attempt is not run, like one the budget stopped."""
