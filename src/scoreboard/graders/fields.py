"""`fields`: typed gold-set comparison of output fields (numbers with tolerance, dates, sets...)."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from datetime import date, datetime
from typing import Any

from ..cases.case import Case
from ..errors import ConfigError
from .base import MISSING_PATH, Grader, check_keys, get_path, option_error, short
from .exact import json_type
from .grade import Grade, GradeContext
from .json_fields import field_result, not_json, require_paths, summarise

TYPES = ("string", "number", "integer", "date", "bool", "set", "list")
NORMALIZERS = ("casefold", "strip", "collapse-whitespace")
_WS = re.compile(r"\s+")
_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})(?:[Tt ](.+))?")
# Float noise allowance: 0.1 + 0.2 - 0.3 must sit "at" a bound of 0, not past it.
_EPS = 1e-9

# which optional keys each type accepts
_KEYS = {
    "number": ("tolerance", "relative"),
    "integer": ("tolerance",),
    "date": ("tolerance",),
    "string": ("normalize",),
    "set": ("normalize",),
    "list": ("normalize",),
    "bool": (),
}

Compare = Callable[[Any, Any], "str | None"]


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_integer(value: Any) -> bool:
    # an integral float (JSON 3.0) still names an integer value; 1.5 and bools do not
    return (isinstance(value, int) and not isinstance(value, bool)) or \
        (isinstance(value, float) and value.is_integer())


def parse_date(value: Any) -> date | None:
    """A date from 'YYYY-MM-DD' or a full ISO datetime (its date part); None if not one."""
    if not isinstance(value, str):
        return None
    match = _DATE.fullmatch(value.strip())
    if match is None:
        return None
    try:
        if match.group(4) is not None:
            return datetime.fromisoformat(value.strip()).date()
        return date(int(match.group(1)), int(match.group(2)), int(match.group(3)))
    except ValueError:
        return None


def _within(diff: float, bound: float, magnitude: float) -> bool:
    return diff <= bound + _EPS * max(1.0, magnitude)


def _normalizer(names: list[str]) -> Callable[[str], str]:
    steps: list[Callable[[str], str]] = []
    for name in names:
        if name == "casefold":
            steps.append(str.casefold)
        elif name == "strip":
            steps.append(str.strip)
        else:
            steps.append(lambda s: _WS.sub(" ", s))

    def apply(text: str) -> str:
        for step in steps:
            text = step(text)
        return text
    return apply


def _type_error(want: str, actual: Any) -> str:
    return f"expected {want}, got {json_type(actual)}"


def _build_compare(spec: dict) -> Compare:
    """A comparator (expected, actual) -> failure reason or None for one field spec."""
    kind = spec["type"]
    tol = spec.get("tolerance", 0)
    if kind == "number":
        relative = spec["relative"]

        def compare(e: Any, a: Any) -> str | None:
            if not _is_number(a):
                return _type_error("a number", a)
            if not math.isfinite(a):
                # also keeps inf out of the epsilon's magnitude, where it would pass anything
                return f"expected a finite number, got {a}"
            if a == e:
                return None
            diff = abs(a - e)
            bound = tol * abs(e) if relative else tol
            if _within(diff, bound, max(abs(a), abs(e))):
                return None
            how = f"relative tolerance {tol}" if relative else f"tolerance {tol}"
            return f"expected {e}, got {a} (off by {diff:.6g}, {how})"
        return compare
    if kind == "integer":
        def compare(e: Any, a: Any) -> str | None:
            if not _is_integer(a):
                return _type_error("an integer", a) if not _is_number(a) else \
                    f"expected an integer, got {a}"
            diff = abs(a - e)
            if diff <= tol:
                return None
            return f"expected {e}, got {a} (off by {diff:g}, tolerance {tol})"
        return compare
    if kind == "date":
        def compare(e: Any, a: Any) -> str | None:
            got = parse_date(a)
            if got is None:
                if isinstance(a, str):
                    return f"expected an ISO date, got {short(a, 40)}"
                return _type_error("an ISO date string", a)
            days = abs((got - parse_date(e)).days)  # type: ignore[operator]
            if days <= tol:
                return None
            return f"expected {e}, got {a} ({days} days apart, tolerance {tol})"
        return compare
    if kind == "bool":
        def compare(e: Any, a: Any) -> str | None:
            if not isinstance(a, bool):
                return _type_error("a bool", a)
            return None if a == e else f"expected {json.dumps(e)}, got {json.dumps(a)}"
        return compare
    norm = _normalizer(spec["normalize"])
    if kind == "string":
        def compare(e: Any, a: Any) -> str | None:
            if not isinstance(a, str):
                return _type_error("a string", a)
            return None if norm(a) == norm(e) else f"expected {short(e, 40)}, got {short(a, 40)}"
        return compare

    def key(item: Any) -> str:
        # strings normalised; other items keyed by their JSON text, which keeps 1, 1.0, true apart
        if isinstance(item, str):
            return "s" + norm(item)
        return "j" + json.dumps(item, sort_keys=True, ensure_ascii=False)

    if kind == "set":
        def compare(e: Any, a: Any) -> str | None:
            if not isinstance(a, list):
                return _type_error("an array", a)
            want = {key(x): x for x in e}
            got = {key(x): x for x in a}
            missing = [want[k] for k in want if k not in got]
            extra = [got[k] for k in got if k not in want]
            if not missing and not extra:
                return None
            parts = ([f"missing {short(missing, 60)}"] if missing else []) + \
                ([f"unexpected {short(extra, 60)}"] if extra else [])
            return "; ".join(parts)
        return compare

    def compare(e: Any, a: Any) -> str | None:  # list: in order, in full
        if not isinstance(a, list):
            return _type_error("an array", a)
        if len(a) != len(e):
            return f"expected {len(e)} items, got {len(a)}"
        for index, (x, y) in enumerate(zip(e, a)):
            if key(x) != key(y):
                return f"item {index}: expected {short(x, 40)}, got {short(y, 40)}"
        return None
    return compare


def _reference_ok(kind: str, value: Any) -> bool:
    """Whether a reference value is usable for `kind` (null is allowed for every type)."""
    if value is None:
        return True
    if kind == "number":
        return _is_number(value) and math.isfinite(value)
    if kind == "integer":
        return _is_integer(value)
    if kind == "date":
        return parse_date(value) is not None
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "string":
        return isinstance(value, str)
    return isinstance(value, list)


def _parse_field(grader: str, item: Any) -> dict:
    if not isinstance(item, dict):
        raise option_error(grader, f"each field is a mapping {{path, type, ...}}, got {short(item)}")
    path, kind = item.get("path"), item.get("type")
    if not isinstance(path, str) or not path.strip():
        raise option_error(grader, f"a field needs a non-empty 'path', got {short(item)}")
    if kind not in TYPES:
        raise option_error(grader, f"field {path!r}: unknown type {short(kind)} "
                                   f"(known: {', '.join(TYPES)})")
    allowed = _KEYS[kind]
    for key in item:
        if key not in ("path", "type") and key not in allowed:
            raise option_error(grader, f"field {path!r}: option {key!r} does not apply to type "
                                       f"{kind!r} (allowed: {', '.join(allowed) or 'none'})")
    out: dict = {"path": path, "type": kind}
    if "tolerance" in allowed:
        tol = item.get("tolerance", 0)
        if not _is_number(tol) or not math.isfinite(tol) or tol < 0:
            raise option_error(grader, f"field {path!r}: tolerance must be a non-negative number, "
                                       f"got {short(tol)}")
        if kind == "date" and not _is_integer(tol):
            raise option_error(grader, f"field {path!r}: date tolerance is whole days, got {tol}")
        out["tolerance"] = int(tol) if kind == "date" else tol
    if "relative" in allowed:
        relative = item.get("relative", False)
        if not isinstance(relative, bool):
            raise option_error(grader, f"field {path!r}: 'relative' must be true or false")
        out["relative"] = relative
    if "normalize" in allowed:
        names = item.get("normalize", [])
        if isinstance(names, str):
            names = [names]
        if not isinstance(names, list):
            raise option_error(grader, f"field {path!r}: 'normalize' is a list of "
                                       f"{', '.join(NORMALIZERS)}")
        for name in names:
            if name not in NORMALIZERS:
                raise option_error(grader, f"field {path!r}: unknown normalize {short(name)} "
                                           f"(known: {', '.join(NORMALIZERS)})")
        # one fixed order so equal option sets give equal specs and equal results
        out["normalize"] = [n for n in NORMALIZERS if n in names]
    return out


class FieldsGrader(Grader):
    """Typed per-field comparison against the reference; score is the fraction of fields passed."""

    name = "fields"
    needs_expected = True

    @classmethod
    def parse_options(cls, value: Any) -> dict:
        """Accept {"fields": [{path, type, ...}]} or the bare list of field specs."""
        if isinstance(value, dict):
            check_keys(cls.name, value, ("fields",))
            value = value.get("fields")
        if not isinstance(value, list) or not value:
            raise option_error(cls.name, "needs a non-empty list of fields "
                                         "[{path, type, tolerance?, relative?, normalize?}]")
        fields = [_parse_field(cls.name, item) for item in value]
        seen: set[str] = set()
        for spec in fields:
            if spec["path"] in seen:
                raise option_error(cls.name, f"field {spec['path']!r} is listed twice")
            seen.add(spec["path"])
        return {"fields": fields}

    def __init__(self, value: Any = None):
        super().__init__(value)
        self._compare = [(f["path"], f["type"], _build_compare(f)) for f in self.options["fields"]]

    def check_case(self, case: Case) -> None:
        """The reference must hold every field, each a valid value of its declared type."""
        super().check_case(case)
        require_paths(self.name, case, [path for path, _, _ in self._compare])
        for path, kind, _ in self._compare:
            value = get_path(case.expected, path)
            if not _reference_ok(kind, value):
                raise ConfigError(f"grader {self.name!r}: expected {path!r} is {short(value, 40)}, "
                                  f"not a valid {kind}", file=case.source, line=case.line,
                                  case_id=case.id, field=f"expected.{path}")

    def grade(self, ctx: GradeContext) -> Grade:
        """Compare each declared field with its typed rule."""
        if not ctx.case.has_expected:
            return self.unassessed("case has no expected value")
        expected = ctx.expected
        ok, output, error = ctx.output.parsed_json()
        if not ok:
            return not_json(self, error, [p for p, _, _ in self._compare], expected)
        results = []
        for path, kind, compare in self._compare:
            want = get_path(expected, path)
            if want is MISSING_PATH or not _reference_ok(kind, want):
                # check_case rules these out; grading anyway would blame the subject
                return self.unassessed(f"expected {path!r} is missing or not a valid {kind}")
            got = get_path(output, path)
            if got is MISSING_PATH:
                reason: str | None = "missing"
            elif want is None:
                reason = None if got is None else f"expected null, got {short(got, 40)}"
            else:
                try:
                    reason = compare(want, got)
                except (TypeError, ValueError, OverflowError, RecursionError) as exc:
                    reason = f"cannot compare: {exc}"
            results.append(field_result(path, want, got, reason))
        return summarise(self, results)
