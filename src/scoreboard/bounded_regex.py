"""Regular expressions from a suite, run against outputs with a time bound.

A pattern with nested quantifiers, `^(a+)+$`, on a 40-character output backtracks for longer
than the age of the universe, and Python's `re` cannot be interrupted: it holds the GIL, so no
timeout, signal or Ctrl-C stops the run (a suite file is user input and may be hostile). So a
pattern is checked by `re` (its errors, its semantics) and matched by the `regex` module in
its version-0 mode, which behaves as `re` and takes a timeout: a match that takes longer than
MATCH_TIMEOUT_S raises RegexTimeout, and the grade that asked says so instead of hanging.
Without `regex` installed, matching falls back to `re` (unbounded).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

try:  # a dependency of scoreboard (pyproject); a missing one only loses the time bound
    import regex as _regex
except ImportError:  # pragma: no cover - exercised by environments without it
    _regex = None

#: the time one search may take on one output (the `regex` module checks it as it goes, so a
#: runaway match stops within a few times this, never hours later)
MATCH_TIMEOUT_S = 0.5

_FLAGS = re.IGNORECASE | re.MULTILINE | re.DOTALL | re.VERBOSE | re.ASCII


class RegexTimeout(Exception):
    """A match that ran past MATCH_TIMEOUT_S (catastrophic backtracking, most likely)."""

    def __init__(self, pattern: str):
        shown = pattern if len(pattern) <= 80 else pattern[:77] + "..."
        super().__init__(f"regex /{shown}/ was stopped after more than {MATCH_TIMEOUT_S:g} s on this "
                         "output (catastrophic backtracking?): not assessed")
        self.pattern = pattern


class BoundedPattern:
    """A compiled pattern whose matching stops after MATCH_TIMEOUT_S (the methods a grader uses)."""

    __slots__ = ("pattern", "flags", "_re", "_rx")

    def __init__(self, compiled: re.Pattern):
        self.pattern, self.flags, self._re = compiled.pattern, compiled.flags, compiled
        self._rx = None
        if _regex is not None and isinstance(compiled.pattern, str):
            try:
                self._rx = _regex.compile(compiled.pattern, (compiled.flags & _FLAGS) | _regex.VERSION0)
            except Exception:  # noqa: BLE001 - a pattern only `re` reads is matched by `re`
                self._rx = None

    def _bounded(self, method: str, text: str, *args: Any) -> Any:
        if self._rx is None:
            return getattr(self._re, method)(text, *args)
        try:
            return getattr(self._rx, method)(text, *args, timeout=MATCH_TIMEOUT_S)
        except TimeoutError:
            raise RegexTimeout(self.pattern) from None

    @property
    def groups(self) -> int:
        return self._re.groups

    def search(self, text: str) -> Any:
        return self._bounded("search", text)

    def match(self, text: str, pos: int = 0) -> Any:
        return self._bounded("match", text, pos)

    def fullmatch(self, text: str) -> Any:
        return self._bounded("fullmatch", text)

    def finditer(self, text: str) -> Iterator[Any]:
        """Every match, found within MATCH_TIMEOUT_S in all (the whole list at once: the bound
        holds for the search, not for whoever iterates)."""
        if self._rx is None:
            return self._re.finditer(text)
        try:
            return iter(list(self._rx.finditer(text, timeout=MATCH_TIMEOUT_S)))
        except TimeoutError:
            raise RegexTimeout(self.pattern) from None


def compile_bounded(pattern: str, flags: int = 0) -> BoundedPattern:
    """re.compile's check and errors (re.error), then a bounded matcher."""
    return BoundedPattern(re.compile(pattern, flags))


def search(pattern: str, text: str, flags: int = 0) -> Any:
    """re.search, bounded (the pattern is compiled once: re's cache and regex's both keep it)."""
    return compile_bounded(pattern, flags).search(text)
