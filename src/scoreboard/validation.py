"""Validating user input with pydantic: strict models and one-line errors naming the field."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from .errors import ConfigError


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False)


# pydantic names each branch of a union in the error location ("str", "list[Message]",
# "dict[any,any]"); those tags mean nothing to a user writing a case or suite file. A part is
# taken as a tag only where errors of two or more branches diverge, so a user's own key (a
# variant named "str") is never dropped.
_UNION_TAG = re.compile(r"^(?:str|int|float|bool|bytes|none|[A-Za-z_]\w*\[.*\])$")


def _union_points(errors: list[dict]) -> dict[tuple, set]:
    seen: dict[tuple, set] = {}
    for e in errors:
        loc = tuple(e.get("loc", ()))
        for i, part in enumerate(loc):
            if isinstance(part, str) and _UNION_TAG.match(part):
                seen.setdefault(loc[:i], set()).add(part)
    return {prefix: parts for prefix, parts in seen.items() if len(parts) > 1}


def _clean_loc(loc: tuple, points: dict[tuple, set]) -> tuple:
    return tuple(p for i, p in enumerate(loc) if p not in points.get(loc[:i], ()))


def _pick_error(errors: list[dict], points: dict[tuple, set]) -> tuple[dict, list[dict]]:
    """The error to report, and the sibling union branches that failed at the same place.

    A union reports one error per branch; the useful one is the branch the value got
    furthest into (a list of messages with a bad `role`), not "should be a valid string"."""
    first = errors[0]
    loc = tuple(first.get("loc", ()))
    tag_at = next((i for i, p in enumerate(loc) if p in points.get(loc[:i], ())), None)
    if tag_at is None:
        return first, [first]
    prefix = loc[:tag_at]
    branches = [e for e in errors if tuple(e.get("loc", ()))[:tag_at] == prefix
                and len(e.get("loc", ())) > tag_at and e["loc"][tag_at] in points[prefix]]
    best = max(branches, key=lambda e: len(_clean_loc(tuple(e["loc"]), points)))
    best_loc = _clean_loc(tuple(best["loc"]), points)

    def at_branch(e: dict) -> bool:  # failed on the branch's own type, not inside it
        raw = tuple(e["loc"])
        return _clean_loc(raw, points) == best_loc and raw[-1] in points.get(raw[:-1], ())

    if not at_branch(best):
        return best, [best]
    # The value matched no branch at all: say what each branch wanted.
    return best, [e for e in branches if at_branch(e)]


def first_error(exc: ValidationError) -> tuple[str, str]:
    """(field path, message) of a pydantic error, phrased for one line."""
    loc, msg = first_error_parts(exc)
    return ".".join(str(p) for p in loc), msg


def error_list(exc: ValidationError) -> list[tuple[tuple, str, Any]]:
    """(location, message, value) of every error, union branch tags left out and the branches
    of one union at one place merged into one entry."""
    errors = exc.errors()
    points = _union_points(errors)
    out: dict[tuple, tuple[list[str], Any]] = {}
    for err in errors:
        loc = _clean_loc(tuple(err.get("loc", ())), points)
        msg = err.get("msg", "invalid value")
        msgs, _ = out.setdefault(loc, ([], err.get("input")))
        if msg not in msgs:
            msgs.append(msg)
    return [(loc, " or ".join(msgs), value) for loc, (msgs, value) in out.items()]


def first_error_parts(exc: ValidationError) -> tuple[tuple, str]:
    """(location as keys and indexes, message) of a pydantic error, union branch tags left out."""
    errors = exc.errors()
    points = _union_points(errors)
    err, siblings = _pick_error(errors, points)
    loc = _clean_loc(tuple(err.get("loc", ())), points)
    kind = err.get("type", "")
    if kind == "extra_forbidden":
        return loc, "unknown field"
    if kind == "missing":
        return loc, "required field is missing"
    msg = err.get("msg", "invalid value")
    if len(siblings) > 1:
        wanted = []
        for e in siblings:
            text = e.get("msg", "invalid value")
            text = text[len("Input should be "):] if text.startswith("Input should be ") else text
            if text not in wanted:
                wanted.append(text)
        msg = "Input should be " + " or ".join(wanted)
    if (kind.startswith("literal_error") or kind.endswith("_type") or kind == "union_tag_invalid"
            or len(siblings) > 1):
        got = err.get("input")
        got_s = repr(got)
        if len(got_s) > 60:
            got_s = got_s[:57] + "..."
        msg = f"{msg} (got {got_s})"
    return loc, " ".join(msg.split())


def parse_model(model: type[BaseModel], data: Any, *, file: str | None = None,
                line: int | None = None, case_id: str | None = None, prefix: str = "") -> Any:
    """Validate `data` against `model`; a failure is one ConfigError naming the field."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        loc, msg = first_error(exc)
        if prefix:
            loc = f"{prefix}.{loc}" if loc else prefix
        raise ConfigError(msg, file=file, line=line, case_id=case_id, field=loc or None) from None
