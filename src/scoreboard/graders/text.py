"""Text graders: `contains`, `not-contains`, `regex`, `not-regex` over the output text."""

from __future__ import annotations

import re
from typing import Any, ClassVar

from ..bounded_regex import BoundedPattern, RegexTimeout, compile_bounded
from ..cases.case import Case
from ..errors import ConfigError
from .base import Grader, check_keys, option_error, short
from .grade import Grade, GradeContext


def _pattern_list(value: Any) -> list[str] | None:
    """A string or list of non-empty strings as a list; None when it is neither."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value:
        return None
    if not all(isinstance(p, str) and p for p in value):
        return None
    return list(value)


class _TextGrader(Grader):
    """Shared option handling: patterns from the spec, or from the case's expected value."""

    negated: ClassVar[bool] = False
    is_regex: ClassVar[bool] = False

    @classmethod
    def parse_options(cls, value: Any) -> dict:
        """Canonical form {"patterns"?: [...], "mode"?, "ignore_case", "multiline"?, "dotall"?}."""
        flags = ("ignore_case", "multiline", "dotall") if cls.is_regex else ("ignore_case",)
        patterns: Any = None
        settings: dict = {}
        if isinstance(value, (str, list)):
            patterns = value
        elif isinstance(value, dict):
            check_keys(cls.name, value, ("patterns", "values", "mode") + flags
                       + (("fold",) if not cls.is_regex else ("dialect",)))
            if "patterns" in value and "values" in value:
                raise option_error(cls.name, "give 'patterns' or 'values', not both")
            patterns = value.get("patterns", value.get("values"))
            settings = value
        elif value is not None and value is not True:
            raise option_error(cls.name, f"options are a pattern, a list of patterns or a mapping, "
                                         f"got {short(value)}")
        out: dict = {}
        if patterns is not None:
            parsed = _pattern_list(patterns)
            if parsed is None:
                raise option_error(cls.name, f"patterns must be a non-empty string or a non-empty "
                                             f"list of non-empty strings, got {short(patterns)}")
            out["patterns"] = parsed
        mode = settings.get("mode", "all")
        if mode not in ("all", "any"):
            raise option_error(cls.name, f"mode must be 'all' or 'any', got {short(mode)}")
        if cls.negated:
            # every pattern is forbidden, so only "all" has a meaning here
            if mode != "all":
                raise option_error(cls.name, "mode 'any' does not apply: every pattern is forbidden")
        else:
            out["mode"] = mode
        for flag in flags:
            flag_value = settings.get(flag, False)
            if not isinstance(flag_value, bool):
                raise option_error(cls.name, f"{flag!r} must be true or false, got {short(flag_value)}")
            out[flag] = flag_value
        fold = settings.get("fold", "casefold")
        if fold not in ("casefold", "lower"):
            raise option_error(cls.name, f"fold must be 'casefold' or 'lower', got {short(fold)}")
        if fold == "lower":
            # promptfoo's icontains lowercases (JavaScript toLowerCase): "STRASSE" does not contain "ß"
            out["fold"] = "lower"
        dialect = settings.get("dialect", "python")
        if dialect not in ("python", "javascript"):
            raise option_error(cls.name, f"dialect must be 'python' or 'javascript', got {short(dialect)}")
        if dialect == "javascript":
            # promptfoo's `new RegExp(value)`: no flags, JavaScript's dialect (graders/jsregex.py)
            if any(out.get(f) for f in flags):
                raise option_error(cls.name, "the javascript dialect takes no ignore_case, multiline or dotall")
            out["dialect"] = "javascript"
        if cls.is_regex and "patterns" in out:
            for pattern in out["patterns"]:
                cls._compile(pattern, out)
        return out

    @classmethod
    def _compile(cls, pattern: str, options: dict) -> BoundedPattern:
        if options.get("dialect") == "javascript":
            from .jsregex import translate

            try:
                return compile_bounded(translate(pattern))
            except ValueError as exc:
                raise option_error(cls.name, f"JavaScript regex {pattern!r} cannot be translated exactly: {exc}") from None
        flags = (re.IGNORECASE if options.get("ignore_case") else 0) | \
            (re.MULTILINE if options.get("multiline") else 0) | \
            (re.DOTALL if options.get("dotall") else 0)
        try:
            return compile_bounded(pattern, flags)
        except re.error as exc:
            raise option_error(cls.name, f"invalid regex {pattern!r}: {exc}") from None

    def __init__(self, value: Any = None):
        super().__init__(value)
        fixed = self.options.get("patterns")
        self._fixed = self._prepare(fixed) if fixed is not None else None

    def _prepare(self, patterns: list[str]) -> list[tuple[str, Any]]:
        """(pattern, matcher) pairs: compiled regexes, or casefolded needles for ignore_case."""
        if self.is_regex:
            return [(p, self._compile(p, self.options)) for p in patterns]
        if self.options["ignore_case"]:
            return [(p, self._fold(p)) for p in patterns]
        return [(p, p) for p in patterns]

    def check_case(self, case: Case) -> None:
        """Without patterns in the spec, the case's expected value supplies them."""
        if self._fixed is not None:
            return
        where = dict(file=case.source, line=case.line, case_id=case.id, field="expected")
        if not case.has_expected:
            raise ConfigError(f"grader {self.name!r} has no patterns, so it needs an 'expected' "
                              f"value (a string or list of strings)", **where)
        if _pattern_list(case.expected) is None:
            raise ConfigError(f"grader {self.name!r} takes its patterns from expected, which must be a "
                              f"non-empty string or list of non-empty strings, got "
                              f"{short(case.expected)}", **where)
        if self.is_regex:
            for pattern in _pattern_list(case.expected) or ():
                try:
                    self._compile(pattern, self.options)
                except ConfigError as exc:
                    raise ConfigError(exc.detail, **where) from None

    def _matchers(self, ctx: GradeContext) -> list[tuple[str, Any]] | None:
        if self._fixed is not None:
            return self._fixed
        patterns = _pattern_list(ctx.expected) if ctx.case.has_expected else None
        if patterns is None:
            return None
        try:
            return self._prepare(patterns)
        except ConfigError:
            return None

    def _found(self, text: str, matchers: list[tuple[str, Any]]) -> list[tuple[str, str]]:
        """(pattern, what matched) for each pattern that occurs in `text`."""
        found = []
        if self.is_regex:
            if self.options.get("dialect") == "javascript":
                from .jsregex import utf16_units

                text = utf16_units(text)  # JavaScript matches UTF-16 code units
            for pattern, regex in matchers:
                match = regex.search(text)
                if match is not None:
                    found.append((pattern, match.group(0)))
            return found
        haystack = self._fold(text) if self.options["ignore_case"] else text
        return [(p, p) for p, needle in matchers if needle in haystack]

    def _fold(self, text: str) -> str:
        return text.lower() if self.options.get("fold") == "lower" else text.casefold()

    def _label(self, pattern: str) -> str:
        return f"/{pattern}/" if self.is_regex else short(pattern, 60)

    def grade(self, ctx: GradeContext) -> Grade:
        """Search the output text for each pattern."""
        matchers = self._matchers(ctx)
        if matchers is None:
            return self.unassessed("no usable patterns: expected is not a string or list of strings")
        text = ctx.output.text
        if text is None:
            return self.fail("no output text")
        try:
            found = self._found(text, matchers)
        except RegexTimeout as exc:  # a runaway match: unknown, never a hang or a verdict
            return self.unassessed(str(exc))
        if self.negated:
            if not found:
                return self.ok(f"none of {len(matchers)} forbidden patterns found")
            names = ", ".join(self._describe(p, m) for p, m in found)
            return self.fail(f"forbidden {'pattern' if len(found) == 1 else 'patterns'} found: {names}")
        hit = {p for p, _ in found}
        missing = [p for p, _ in matchers if p not in hit]
        if self.options["mode"] == "any":
            if found:
                return self.ok(f"found {self._label(found[0][0])}")
            return self.fail("none found of " + ", ".join(self._label(p) for p, _ in matchers))
        if not missing:
            return self.ok(f"found all {len(matchers)}")
        return self.fail("not found: " + ", ".join(self._label(p) for p in missing))

    def _describe(self, pattern: str, matched: str) -> str:
        if self.is_regex:
            return f"{self._label(pattern)} matched {short(matched, 40)}"
        return self._label(pattern)


class ContainsGrader(_TextGrader):
    """Passes when all (or any, with mode 'any') substrings occur in the output text."""

    name = "contains"


class NotContainsGrader(_TextGrader):
    """Passes when none of the substrings occur in the output text."""

    name = "not-contains"
    negated = True


class RegexGrader(_TextGrader):
    """Passes when all (or any) regexes match somewhere in the output text (re.search)."""

    name = "regex"
    is_regex = True


class NotRegexGrader(_TextGrader):
    """Passes when none of the regexes match anywhere in the output text."""

    name = "not-regex"
    is_regex = True
    negated = True


class StartsWithGrader(Grader):
    """The output text starts with the value (promptfoo's starts-with: exact prefix, no
    trimming); `ignore_case` folds both sides with casefold (or `fold: lower`)."""

    name = "starts-with"

    @classmethod
    def parse_options(cls, value: Any) -> dict:
        """A prefix string or {value, ignore_case?, fold?}; without a value, the expected text."""
        if isinstance(value, str):
            value = {"value": value}
        if value in (None, True):
            value = {}
        if not isinstance(value, dict):
            raise option_error(cls.name, f"options are a prefix or {{value, ignore_case?}}, got {short(value)}")
        check_keys(cls.name, value, ("value", "ignore_case", "fold"))
        out: dict = {}
        if "value" in value:
            if not isinstance(value["value"], str) or not value["value"]:
                raise option_error(cls.name, f"'value' must be a non-empty string, got {short(value['value'])}")
            out["value"] = value["value"]
        if value.get("ignore_case", False) is not False:
            if value["ignore_case"] is not True:
                raise option_error(cls.name, "'ignore_case' must be true or false")
            out["ignore_case"] = True
        fold = value.get("fold", "casefold")
        if fold not in ("casefold", "lower"):
            raise option_error(cls.name, f"fold must be 'casefold' or 'lower', got {short(fold)}")
        if fold == "lower":
            out["fold"] = "lower"
        return out

    def check_case(self, case: Case) -> None:
        if "value" not in self.options and not (case.has_expected and isinstance(case.expected, str)
                                               and case.expected):
            raise ConfigError(f"grader {self.name!r} needs a 'value' or a string 'expected'",
                              file=case.source, line=case.line, case_id=case.id, field="expected")

    def grade(self, ctx: GradeContext) -> Grade:
        """Compare the start of the output text."""
        prefix = self.options.get("value", ctx.expected if ctx.case.has_expected else None)
        if not isinstance(prefix, str):
            return self.unassessed("no prefix to compare")
        text = ctx.output.text
        if text is None:
            return self.fail("no output text")
        if self.options.get("ignore_case"):
            fold = str.lower if self.options.get("fold") == "lower" else str.casefold
            text, prefix_cmp = fold(text), fold(prefix)
        else:
            prefix_cmp = prefix
        if text.startswith(prefix_cmp):
            return self.ok(f"output starts with {short(prefix, 40)}")
        return self.fail(f"expected output to start with {short(prefix, 40)}")
