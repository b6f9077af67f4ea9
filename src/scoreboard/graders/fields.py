"""`fields`: typed gold-set comparison of output fields (numbers with tolerance, dates, sets...).

Origin 002's rules hold: an integer field is compared after `int()` coercion ("12" equals 12);
a composite field (`object`) is one field compared by per-subfield rules (a renewal term with
a notice period within ±5), both null counting as a match; a list compared as a multiset
(`ordered: false`: order ignored, duplicates counted) where empty against empty matches only
when the rule says so (`empty_matches`, false by default for a multiset, as 002 scores
parties); and an extraction shaped `{field: {value: ...}}` is graded against plain gold values
(`value_key: value`, or a field's own `output_path`)."""

from __future__ import annotations

from typing import Any

from ..cases.case import Case
from ..errors import ConfigError
from .base import MISSING_PATH, Grader, check_keys, get_path, option_error, short
from .field_types import (
    TYPES,
    as_int,
    build_compare,
    compare_safely,
    parse_date,
    parse_field,
    reference_ok,
)
from .grade import Grade, GradeContext
from .json_fields import field_result, not_json, require_paths, summarise

__all__ = ["TYPES", "FieldsGrader", "as_int", "parse_date"]


class FieldsGrader(Grader):
    """Typed per-field comparison against the reference; score is the fraction of fields passed."""

    name = "fields"
    needs_expected = True

    @classmethod
    def parse_options(cls, value: Any) -> dict:
        """Accept {"fields": [{path, type, ...}], "value_key"?} or the bare list of field specs."""
        value_key = None
        if isinstance(value, dict):
            check_keys(cls.name, value, ("fields", "value_key"))
            value_key = value.get("value_key")
            if value_key is not None and (not isinstance(value_key, str) or not value_key.strip()
                                          or "." in value_key):
                raise option_error(cls.name, f"value_key is one key name (as in {{field: {{value: ...}}}}), "
                                             f"got {short(value_key)}")
            value = value.get("fields")
        if not isinstance(value, list) or not value:
            raise option_error(cls.name, "needs a non-empty list of fields "
                                         "[{path, type, tolerance?, relative?, normalize?, output_path?}]")
        fields = [parse_field(cls.name, item) for item in value]
        seen: set[str] = set()
        for spec in fields:
            if spec["path"] in seen:
                raise option_error(cls.name, f"field {spec['path']!r} is listed twice")
            seen.add(spec["path"])
        return {"fields": fields, **({"value_key": value_key} if value_key else {})}

    def __init__(self, value: Any = None):
        super().__init__(value)
        self._value_key = self.options.get("value_key")
        self._compare = [(f["path"], f["type"], build_compare(f), f.get("output_path"), f)
                         for f in self.options["fields"]]

    def check_case(self, case: Case) -> None:
        """The reference must hold every field, each a valid value of its declared type."""
        super().check_case(case)
        require_paths(self.name, case, [field[0] for field in self._compare])
        for path, kind, _, _, spec in self._compare:
            value = get_path(case.expected, path)
            if not reference_ok(kind, value, spec):
                raise ConfigError(f"grader {self.name!r}: expected {path!r} is {short(value, 40)}, "
                                  f"not a valid {kind}", file=case.source, line=case.line,
                                  case_id=case.id, field=f"expected.{path}")

    def _output_value(self, output: Any, path: str, output_path: str | None) -> tuple[Any, str]:
        """(the output's value for a field, where it was read): the field's own output_path; else
        its path, unwrapped from {value_key: ...} when the output holds that shape there."""
        if output_path is not None:
            return get_path(output, output_path), output_path
        got = get_path(output, path)
        key = self._value_key
        if key and type(got) is dict and key in got:
            return got[key], f"{path}.{key}"
        return got, path

    def grade(self, ctx: GradeContext) -> Grade:
        """Compare each declared field with its typed rule."""
        if not ctx.case.has_expected:
            return self.unassessed("case has no expected value")
        expected = ctx.expected
        ok, output, error = ctx.output.parsed_json()
        if not ok:
            return not_json(self, error, [field[0] for field in self._compare], expected)
        results = []
        for path, kind, compare, output_path, spec in self._compare:
            want = get_path(expected, path)
            if want is MISSING_PATH or not reference_ok(kind, want, spec):
                # check_case rules these out; grading anyway would blame the subject
                return self.unassessed(f"expected {path!r} is missing or not a valid {kind}")
            got, read_at = self._output_value(output, path, output_path)
            if got is MISSING_PATH:
                reason: str | None = "missing" if read_at == path else f"missing (output path {read_at!r})"
            elif want is None:
                reason = None if got is None else f"expected null, got {short(got, 40)}"
            else:
                reason = compare_safely(compare, want, got)
            results.append(field_result(path, want, got, reason))
        return summarise(self, results)
