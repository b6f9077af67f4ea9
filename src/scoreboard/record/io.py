"""The JSON report: the versioned record of a run (plan, attempts, summary, gates, status)."""

from __future__ import annotations

import json
import os
import platform
import sys
from pathlib import Path
from typing import Any

from ..errors import ConfigError

SCHEMA = "scoreboard.report/v1"


def versions() -> dict:
    """Versions that shape a run's results."""
    from .. import __version__

    return {"scoreboard": __version__, "python": platform.python_version(),
            "platform": sys.platform}


def dumps_report(report: dict, *, indent: int | None = 1) -> str:
    """Serialise a report (UTF-8 characters kept, no NaN); compact and fast when indent is None."""
    if indent is None:
        from ..jsonio import dumps_line

        return dumps_line(report).decode("utf-8")
    return json.dumps(report, ensure_ascii=False, indent=indent, allow_nan=False) + "\n"


def load_report(path: str | os.PathLike) -> dict:
    """Read a report JSON file; a one-line error when it is not a scoreboard report."""
    shown = str(path)
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise ConfigError("report not found", file=shown) from None
    except IsADirectoryError:
        raise ConfigError("is a directory, expected a report JSON file", file=shown) from None
    try:
        report = json.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError:
        raise ConfigError("report is not valid UTF-8", file=shown) from None
    except ValueError as exc:
        raise ConfigError(f"report is not valid JSON: {getattr(exc, 'msg', exc)}", file=shown,
                          line=getattr(exc, "lineno", None)) from None
    if not isinstance(report, dict) or report.get("schema") != SCHEMA:
        found = report.get("schema") if isinstance(report, dict) else type(report).__name__
        raise ConfigError(f"not a scoreboard report (schema {found!r}, expected {SCHEMA!r})",
                          file=shown, field="schema")
    for key in ("run", "plan", "attempts", "summary"):
        if key not in report:
            raise ConfigError("report lacks a required section", file=shown, field=key)
    return report


def is_synthetic(plan: dict) -> bool:
    """A report calls its data synthetic only when every case is marked synthetic."""
    cases = plan.get("cases") or []
    return bool(cases) and all(c.get("synthetic") is True for c in cases)


def fmt_rate(value: Any) -> str:
    """A rate as a percentage, or 'n/a' when there was nothing to measure."""
    return "n/a" if value is None else f"{value * 100:.1f}%"
