"""Error types. A ScoreboardError carries a one-line message meant for the user."""

from __future__ import annotations


class ScoreboardError(Exception):
    """Base of every error scoreboard reports to a user; `exit_code` is what the CLI returns."""

    exit_code = 1


class ConfigError(ScoreboardError):
    """Invalid usage or input (flags, case files, suites, reports): exit 1, nothing runs."""

    exit_code = 1

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None,
                 case_id: str | None = None, field: str | None = None):
        self.file, self.line, self.case_id, self.field = file, line, case_id, field
        parts = []
        if file:
            parts.append(f"{file}:{line}" if line else str(file))
        if case_id is not None:
            parts.append(f"case {case_id!r}")
        if field:
            parts.append(f"field {field!r}")
        prefix = ", ".join(parts)
        self.detail = message
        super().__init__(f"{prefix}: {message}" if prefix else message)


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
