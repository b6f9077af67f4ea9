"""What one suite's case data may add up to, across all of its files.

Every file is bounded on its own (limits.max_file_bytes, max_input_bytes), but a suite may
name any number of them, and parsed JSON costs far more memory than its text: a 16 MiB file of
empty arrays (`[],[],...`) becomes 5 million Python lists, about 500 MB. So while a suite's
cases load, one LoadBudget counts, over all of its case files, datasets, gold documents and
`@` input files:

- `limits.max_total_bytes`: the bytes read;
- `limits.max_values`: the values parsed from case records (every object, array, key and
  scalar, counted exactly);
- `limits.max_cases`: the cases, after `expand` (a suite, not each file).

The budget is the one of the suite being loaded (a context variable set by suite/load.py);
readers outside a suite load (an import, a single `load_cases`) find none and count nothing.
Going over is one ConfigError naming the file, the line or case and the limit.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from ..errors import ConfigError

_CURRENT: ContextVar[LoadBudget | None] = ContextVar("scoreboard_load_budget", default=None)


def count_values(value: Any) -> int:
    """Every object, array, key and scalar in a parsed JSON/YAML value (iteratively: the
    nesting was bounded by the parser, but no recursion is needed)."""
    if type(value) is not dict and type(value) is not list:
        return 1
    stack, count = [value], 0
    while stack:
        item = stack.pop()
        if type(item) is dict:
            count += 1 + 2 * len(item)
            values = item.values()
        else:
            count += 1 + len(item)
            values = item
        for child in values:
            kind = type(child)
            if kind is dict or kind is list:
                count -= 1  # counted again as a container when popped
                stack.append(child)
    return count


class LoadBudget:
    """The running totals of one suite's case data against its limits."""

    def __init__(self, limits: Any):
        self.limits = limits
        self.bytes = 0
        self.values = 0
        self.cases = 0

    def read(self, size: int, shown: str, **where: Any) -> None:
        """`size` more bytes read from `shown`."""
        self.bytes += size
        if self.bytes > self.limits.max_total_bytes:
            raise ConfigError(f"the suite's case files come to more than {self.limits.max_total_bytes:,} bytes "
                              "in all (limits.max_total_bytes)", file=shown, **where)

    def parsed(self, value: Any, shown: str, **where: Any) -> None:
        """One record parsed from `shown`."""
        self.values += count_values(value)
        if self.values > self.limits.max_values:
            raise ConfigError(f"the suite's case records hold more than {self.limits.max_values:,} values in all "
                              "(objects, arrays, keys and scalars; limits.max_values)", file=shown, **where)

    def added(self, count: int, shown: str | None, *, why: str = "", **where: Any) -> None:
        """`count` more cases (`why`: what made them, said first in the error)."""
        self.cases += count
        if self.cases > self.limits.max_cases:
            raise ConfigError(f"{why}the suite has more than {self.limits.max_cases:,} cases (limits.max_cases)",
                              file=shown, **where)


def current() -> LoadBudget | None:
    """The budget of the suite being loaded, if any."""
    return _CURRENT.get()


@contextmanager
def suite_budget(limits: Any) -> Iterator[LoadBudget]:
    """Count every case file read inside the block against `limits`."""
    budget = LoadBudget(limits)
    token = _CURRENT.set(budget)
    try:
        yield budget
    finally:
        _CURRENT.reset(token)
