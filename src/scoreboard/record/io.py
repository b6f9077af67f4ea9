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
from typing import Any

from pydantic import ValidationError

from ..errors import ConfigError
from .beside import report_beside  # a run folder or a rendering named where a report is wanted
from .chains import jpath
from .unique_json import DuplicateKey, loads_unique
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
    from ..graders.versions import GRADERS_VERSION

    return {"scoreboard": __version__, "graders": str(GRADERS_VERSION), "python": platform.python_version(),
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
    return escape_surrogates(text) + "\n"


_SURROGATE = re.compile("[\ud800-\udfff]")


def escape_surrogates(text: str) -> str:
    """`text` with each lone surrogate written as its `\\udXXX` escape, so it can be written as
    UTF-8 (a hand-edited report's strings, shown on a terminal or written to a file)."""
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def unrepresentable(value: Any, *, limit: int = 20) -> list[tuple[str, str]]:
    """(JSON path, what) of each value no report scoreboard writes holds, at most `limit`:
    NaN or an infinity (JSON has neither; 1e999 reads as infinity) and a lone surrogate in a
    string or a key (text with no UTF-8 form). A walk with its own stack: any depth."""
    import math

    found: list[tuple[str, str]] = []
    stack: list[tuple[Any, tuple]] = [(value, ())]
    while stack and len(found) < limit:
        item, path = stack.pop()
        if isinstance(item, dict):
            for key, sub in reversed(list(item.items())):
                if isinstance(key, str) and _SURROGATE.search(key):
                    found.append((json_path(path + (key,)) or "report", "key holds a lone surrogate "
                                  "(text with no UTF-8 form)"))
                stack.append((sub, path + (key,)))
        elif isinstance(item, list):
            stack.extend((sub, path + (i,)) for i, sub in reversed(list(enumerate(item))))
        elif isinstance(item, float) and not math.isfinite(item):
            name = "NaN" if item != item else "Infinity" if item > 0 else "-Infinity"
            found.append((json_path(path) or "report", f"{name} is not a finite number (JSON has no NaN or "
                          "Infinity; a number past a double's range, 1e999, reads as Infinity)"))
        elif isinstance(item, str) and _SURROGATE.search(item):
            found.append((json_path(path) or "report", "string holds a lone surrogate (text with no UTF-8 form)"))
    return found


def representable_fast(value: Any) -> bool:
    """Whether `value` certainly holds nothing `unrepresentable` finds (C speed: the stdlib
    encoder refuses NaN, UTF-8 refuses a lone surrogate); False means: walk to name it."""
    try:
        json.dumps(value, allow_nan=False, ensure_ascii=False).encode("utf-8")
    except (ValueError, UnicodeEncodeError, RecursionError, TypeError):
        return False
    return True


def deepest(value: Any, *, limit: int) -> str | None:
    """The JSON path of the first value nested deeper than `limit` levels, else None."""
    stack: list[tuple[Any, tuple]] = [(value, ())]
    while stack:
        item, path = stack.pop()
        if isinstance(item, (dict, list)):
            if len(path) >= limit:  # named by where the nesting starts: the full path is `limit` long
                return (json_path(path[:8]) or "report") + f"… ({len(path)} levels deep)"
            pairs = item.items() if isinstance(item, dict) else enumerate(item)
            stack.extend((sub, path + (k,)) for k, sub in pairs if isinstance(sub, (dict, list)))
    return None


#: a report nested this deep cannot be walked by the recursive checks and renderings
MAX_REPORT_DEPTH = 500


def too_deep(report: Any, shown: str) -> ConfigError:
    """The one-line error for a report nested deeper than the checks and renderings can follow
    (raised where a RecursionError stopped them), naming where."""
    where = deepest(report, limit=MAX_REPORT_DEPTH) if isinstance(report, (dict, list)) else None
    return ConfigError(f"report is nested too deeply to process (more than {MAX_REPORT_DEPTH} levels; no "
                       "report scoreboard writes is)", file=shown, field=where)


def load_report(path: str | os.PathLike, *, limit: int | None = None) -> dict:
    """Read a report JSON file; a one-line error when it is not a scoreboard report. Only a
    regular file is read (a FIFO would block, a device never ends); with `limit`, a file over
    that many bytes is refused before it is read. What every reader keys attempts by (the
    plan's case ids and variant names, each attempt's case, variant and run) must have its
    type, or the error names the first field that does not (`verify` lists them all)."""
    report = report_from_bytes(read_report_bytes(path, limit=limit), str(path))
    problem = identity_problem(report)
    if problem is not None:
        raise ConfigError(problem[1], file=str(path), field=problem[0])
    return report


def identity_problem(report: dict) -> tuple[str, str] | None:
    """(JSON path, what is wrong) of the first field that identifies a case, a variant or an
    attempt and has the wrong type (an attempt keyed by a list cannot be looked up), else None."""
    plan, attempts = report.get("plan"), report.get("attempts")
    if not isinstance(plan, dict):
        return "plan", "must be an object"
    for key, name in (("cases", "id"), ("variants", "name")):
        items = plan.get(key)
        if not isinstance(items, list):
            return f"plan.{key}", "must be a list"
        for i, item in enumerate(items):
            if not isinstance(item, dict) or not isinstance(item.get(name), str):
                return f"plan.{key}[{i}].{name}", "must be text (a string)"
    if not isinstance(attempts, list):
        return "attempts", "must be a list"
    for i, a in enumerate(attempts):
        if not isinstance(a, dict):
            return f"attempts[{i}]", "must be an object"
        for key in ("case_id", "variant", "status"):
            if not isinstance(a.get(key), str):
                return f"attempts[{i}].{key}", "must be text (a string)"
        run = a.get("run")
        if not isinstance(run, int) or isinstance(run, bool):
            return f"attempts[{i}].run", "must be an integer (the run index)"
    return None


def read_report_bytes(path: str | os.PathLike, *, limit: int | None = None) -> bytes:
    """The bytes of a report file the user named: a regular file, at most `limit` bytes."""
    from ..safefile import FileRefused, check_regular, read_regular

    shown = str(path)
    try:
        if limit is None:  # no size limit: a report of a million attempts is read whole
            check_regular(path)
            return _read_trimmed(path, shown)
        return read_regular(path, limit=limit, limit_name="report size limit")
    except FileRefused as exc:
        if exc.missing:
            raise ConfigError("report not found", file=shown) from None
        if exc.reason == "is a directory":
            raise ConfigError(f"is a directory, expected a report JSON file{report_beside(path)}", file=shown) from None
        raise ConfigError(f"report {exc.reason}", file=shown) from None
    except MemoryError:
        raise ConfigError("report is too large to read in the memory available", file=shown) from None


#: whitespace JSON ignores between and around values
_BLANK = b" \t\r\n"
_BOM = b"\xef\xbb\xbf"
_CHUNK = 1 << 20


def _byte(b: bytes) -> str:
    """One byte as a reader sees it: '{' or 0x00."""
    return repr(b.decode("ascii")) if b and 32 < b[0] < 127 else f"0x{b[0]:02x}" if b else "nothing"


def _read_trimmed(path: str | os.PathLike, shown: str) -> bytes:
    """The bytes of a regular file without the whitespace around its JSON value: a file of
    gigabytes of blanks (or a report followed by them) is never held in memory for nothing.
    Opened non-blocking and checked again on the open file (a FIFO swapped in cannot block)."""
    import stat

    fd = os.open(os.fspath(path), os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ConfigError("report is not a regular file", file=shown)
        size = st.st_size
        start = 0
        head = os.pread(fd, 3, 0)
        if head == _BOM:
            start = 3
        while start < size:  # the first byte that is not a blank
            chunk = os.pread(fd, _CHUNK, start)
            if not chunk:
                break
            kept = chunk.lstrip(_BLANK)
            start += len(chunk) - len(kept)
            if kept:
                break
        end = size
        while end > start:  # one past the last byte that is not a blank
            low = max(start, end - _CHUNK)
            chunk = os.pread(fd, end - low, low)
            if not chunk:
                break
            kept = chunk.rstrip(_BLANK)
            end = low + len(kept)
            if kept:
                break
        if end <= start:
            raise ConfigError("report is empty (no JSON value in it, only whitespace)", file=shown)
        # A report is one JSON object: its ends say so before gigabytes (a sparse file) are read.
        first, last = os.pread(fd, 1, start), os.pread(fd, 1, end - 1)
        if first != b"{" or last != b"}":
            cut = " (cut short, or something follows the report)" if first == b"{" else ""
            raise ConfigError(f"report is not a JSON object (it starts with {_byte(first)} and ends with "
                              f"{_byte(last)}{cut}; a report is one {{...}}){report_beside(path)}", file=shown)
        parts, at = [], start
        while at < end:
            chunk = os.pread(fd, min(end - at, 64 * _CHUNK), at)
            if not chunk:
                break
            parts.append(chunk)
            at += len(chunk)
        return b"".join(parts)
    finally:
        os.close(fd)


def duplicate_key_error(parts: tuple | list, shown: str) -> ConfigError:
    """The one-line error for a report holding the key at `parts` twice in one object."""
    return ConfigError(f"report holds the key {str(parts[-1])!r} twice in one object (JSON readers disagree on "
                       "which value counts; scoreboard never writes one)", file=shown, field=json_path(parts))


def report_from_bytes(data: bytes, shown: str) -> dict:
    """A report's bytes as plain data; a one-line error naming `shown` when they are not one."""
    try:
        report = loads_unique(data.decode("utf-8-sig"))
    except DuplicateKey as exc:
        raise duplicate_key_error(exc.path, shown) from None
    except UnicodeDecodeError:
        raise ConfigError("report is not valid UTF-8", file=shown) from None
    except MemoryError:
        raise ConfigError(f"report is too large to read in the memory available ({len(data)} bytes)",
                          file=shown) from None
    except ValueError as exc:
        where = getattr(exc, "path", None)  # a HugeNumber's
        raise ConfigError(f"report is not valid JSON: {getattr(exc, 'msg', exc)}", file=shown,
                          line=getattr(exc, "lineno", None), field=json_path(where) if where else None) from None
    if not isinstance(report, dict) or report.get("schema") not in SCHEMAS:
        found = report.get("schema") if isinstance(report, dict) else type(report).__name__
        raise ConfigError(f"not a scoreboard report (schema {found!r}, expected one of "
                          f"{', '.join(SCHEMAS)})", file=shown, field="schema")
    for key in ("run", "plan", "attempts", "summary"):
        if key not in report:
            raise ConfigError("report lacks a required section", file=shown, field=key)
    return report


def read_report(path: str | os.PathLike) -> Report:
    """Read a report JSON file as typed models; a bad field is one error naming its JSON path,
    and so is NaN or an infinity (its figures would read "nan")."""
    report = load_report(path)
    refuse_non_finite(report, str(path))
    return parse_report(report, str(path))


def refuse_non_finite(report: dict, shown: str) -> None:
    """The one-line error for NaN or an infinity anywhere in a report (shown as a figure, "nan%",
    or written as JSON no reader takes): no report scoreboard writes holds one, so the file was
    edited. A lone surrogate passes: it is shown as its escape."""
    odd = [] if representable_fast(report) else \
        [(where, what) for where, what in unrepresentable(report, limit=1000) if "surrogate" not in what]
    if odd:
        raise ConfigError(f"{odd[0][1]}: the report was edited (`scoreboard verify` lists every such value)",
                          file=shown, field=odd[0][0])


def parse_report(data: dict, source: str) -> Report:
    """Validate report data (v1 or v2) as typed models; `source` names it in the error."""
    try:
        try:
            return Report.model_validate(data)
        except ValidationError as exc:
            raise invalid_report(exc, source) from None
    except RecursionError:  # a nesting no report scoreboard writes has (naming its value recursed)
        raise too_deep(data, source) from None


def invalid_report(exc: ValidationError, source: str, *, first: tuple = ()) -> ConfigError:
    """The one-line error for a report that failed validation: the file, the JSON path of the
    first bad field, what was wrong. `first` stands in for the first location part: a list of
    attempts validated apart from the report names an attempt `("attempts", index in the report)`."""
    loc, msg = first_error_parts(exc)
    if first:
        loc = first + tuple(loc[1:])
    return ConfigError(msg, file=source, field=json_path(loc) or None)


def json_path(parts: tuple | list) -> str:
    """A JSON path: `attempts[3].grades[0].passed`, `summary.variants["openai/gpt-4.1"].pass_rate`."""
    return jpath("", *parts)


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
        text += f" over {over.graded_attempts} graded attempt{'' if over.graded_attempts == 1 else 's'}"
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


def over_bound_words(count: int) -> str:
    """An attempt count whose provider reported more usage than the request was allowed."""
    return (f"provider reported more usage than the request allowed on {count} "
            f"attempt{'s' if count != 1 else ''} (usage_over_bound on each)")
