"""The JSON report: the versioned record of a run (plan, attempts, summary, gates, status).

`load_report` reads one as plain data (what `verify` needs: it must open a report that does not
add up in order to name what is wrong); `read_report` reads it as typed models (record/schema.py),
so a bad field fails on the way in with its JSON path."""

from __future__ import annotations

import json
import os
import platform
import re
import sys
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..errors import ConfigError
from ..jsonio import loads as loads_json
from ..stats.comparison import format_p as fmt_p
from ..validation import first_error_parts
from .schema import (  # SCHEMA(S) re-exported: the version written, those read
    SCHEMA,
    SCHEMAS,
    Report,
)

__all__ = ["SCHEMA", "SCHEMAS", "load_report", "read_report", "parse_report", "invalid_report", "json_path",
           "dumps_report", "versions", "is_synthetic", "fmt_rate", "fmt_p", "variant_model", "model_words",
           "stability_words", "models_text", "read_report_bytes", "report_from_bytes"]


def versions() -> dict:
    """Versions that shape a run's results."""
    from .. import __version__

    return {"scoreboard": __version__, "python": platform.python_version(),
            "platform": sys.platform}


def dumps_report(report: dict, *, indent: int | None = 1) -> str:
    """Serialise a report (UTF-8 characters kept, no NaN); compact and fast when indent is None."""
    if indent is None:
        from ..jsonio import dumps_text

        text = dumps_text(report)  # orjson: refuses a lone surrogate, so text from it has none
        if text is not None:
            return text + "\n"
        text = json.dumps(report, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    else:
        text = json.dumps(report, ensure_ascii=False, indent=indent, allow_nan=False)
    # A lone surrogate (a hand-edited or hostile report) has no UTF-8 form: its \\u escape, which
    # reads back as the same string. Outside strings JSON text is ASCII, so only strings change.
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text) + "\n"


_SURROGATE = re.compile("[\ud800-\udfff]")


def load_report(path: str | os.PathLike, *, limit: int | None = None) -> dict:
    """Read a report JSON file; a one-line error when it is not a scoreboard report. Only a
    regular file is read (a FIFO would block, a device never ends); with `limit`, a file over
    that many bytes is refused before it is read."""
    return report_from_bytes(read_report_bytes(path, limit=limit), str(path))


def read_report_bytes(path: str | os.PathLike, *, limit: int | None = None) -> bytes:
    """The bytes of a report file the user named: a regular file, at most `limit` bytes."""
    from ..safefile import FileRefused, check_regular, read_regular

    shown = str(path)
    try:
        if limit is None:  # no size limit: a report of a million attempts is read whole
            check_regular(path)
            return Path(path).read_bytes()
        return read_regular(path, limit=limit, limit_name="report size limit")
    except FileRefused as exc:
        if exc.missing:
            raise ConfigError("report not found", file=shown) from None
        if exc.reason == "is a directory":
            raise ConfigError("is a directory, expected a report JSON file", file=shown) from None
        raise ConfigError(f"report {exc.reason}", file=shown) from None


def report_from_bytes(data: bytes, shown: str) -> dict:
    """A report's bytes as plain data; a one-line error naming `shown` when they are not one."""
    try:
        report = loads_json(data.decode("utf-8-sig"))
    except UnicodeDecodeError:
        raise ConfigError("report is not valid UTF-8", file=shown) from None
    except ValueError as exc:
        raise ConfigError(f"report is not valid JSON: {getattr(exc, 'msg', exc)}", file=shown,
                          line=getattr(exc, "lineno", None)) from None
    if not isinstance(report, dict) or report.get("schema") not in SCHEMAS:
        found = report.get("schema") if isinstance(report, dict) else type(report).__name__
        raise ConfigError(f"not a scoreboard report (schema {found!r}, expected one of "
                          f"{', '.join(SCHEMAS)})", file=shown, field="schema")
    for key in ("run", "plan", "attempts", "summary"):
        if key not in report:
            raise ConfigError("report lacks a required section", file=shown, field=key)
    return report


def read_report(path: str | os.PathLike) -> Report:
    """Read a report JSON file as typed models; a bad field is one error naming its JSON path."""
    return parse_report(load_report(path), str(path))


def parse_report(data: dict, source: str) -> Report:
    """Validate report data (v1 or v2) as typed models; `source` names it in the error."""
    try:
        return Report.model_validate(data)
    except ValidationError as exc:
        raise invalid_report(exc, source) from None


def invalid_report(exc: ValidationError, source: str, *, first: tuple = ()) -> ConfigError:
    """The one-line error for a report that failed validation: the file, the JSON path of the
    first bad field, what was wrong. `first` stands in for the first location part: a list of
    attempts validated apart from the report names an attempt `("attempts", index in the report)`."""
    loc, msg = first_error_parts(exc)
    if first:
        loc = first + tuple(loc[1:])
    return ConfigError(msg, file=source, field=json_path(loc) or None)


_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def json_path(parts: tuple | list) -> str:
    """A JSON path: `attempts[3].grades[0].passed`, `summary.variants["openai/gpt-4.1"].pass_rate`."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _IDENT.match(str(part)):
            out += f".{part}" if out else str(part)
        else:
            out += f"[{json.dumps(str(part), ensure_ascii=False)}]"
    return out


def is_synthetic(plan: dict) -> bool:
    """A report calls its data synthetic only when every case is marked synthetic."""
    cases = plan.get("cases") or []
    return bool(cases) and all(c.get("synthetic") is True for c in cases)


def fmt_rate(value: Any) -> str:
    """A rate as a percentage, or 'n/a' when there was nothing to measure."""
    return "n/a" if value is None else f"{value * 100:.1f}%"


def fields_over(s) -> str:
    """The denominator of a variant's overall field accuracy in words: what was graded, and the
    errored attempts beside it."""
    fo = s.field_accuracy_overall
    text = f"{fo.correct}/{fo.total} fields"
    over = s.field_accuracy_over
    if over is not None:
        text += f" over {over.graded_attempts} graded attempts"
        if over.errored_attempts:
            text += f"; {over.errored_attempts} errored, not graded"
    return text


def variant_model(variant) -> str | None:
    """The model a variant's subject names (its spec's `model`, or an imported variant's), else None."""
    model = getattr(variant, "model", None)
    if isinstance(model, str) and model:
        return model
    named = (getattr(variant, "subject", None) or {}).get("model")
    return named if isinstance(named, str) and named else None


def model_words(variant) -> str:
    """A variant's model for a report header: its name, or that its subject names none."""
    model = variant_model(variant)
    if model is not None:
        return model
    kind = (getattr(variant, "subject", None) or {}).get("type")
    return f"none named ({kind} subject)" if isinstance(kind, str) and kind else "none named"


def stability_words(passed: int, judged: int) -> str:
    """How one case fared over its judged runs, in words: "fails every run", "passes 2 of 3 runs"."""
    if not judged:
        return "no judged run"
    if passed == judged:
        return "passes every run" if judged > 1 else "passes"
    if passed == 0:
        return "fails every run" if judged > 1 else "fails"
    return f"passes {passed} of {judged} runs"


def models_text(plan) -> str:
    """The model of each variant of a typed plan, for a report header: one name when every
    variant names the same model; `none named (subjects: python)` when none names one."""
    named = {variant_model(v) for v in plan.variants}
    if len(plan.variants) > 1 and len(named) == 1 and None not in named:
        return f"{named.pop()} (every variant)"
    if named == {None} and plan.variants:
        kinds = sorted({str(v.subject.get("type") or "unknown") for v in plan.variants})
        return f"none named (subjects: {', '.join(kinds)})"
    return " · ".join(f"{v.name}: {model_words(v)}" for v in plan.variants)


def detectable_words(value: float) -> str:
    """The smallest difference a comparison could detect, in words; past 100 points (a pass rate
    cannot move further) the run could not detect any difference."""
    if value > 1:
        return "could not detect even a 100-point difference with this few cases"
    return f"could detect differences of {value * 100:.0f} points or more"


def over_bound_words(count: int) -> str:
    """An attempt count whose provider reported more usage than the request was allowed."""
    return (f"provider reported more usage than the request allowed on {count} "
            f"attempt{'s' if count != 1 else ''} (usage_over_bound on each)")
