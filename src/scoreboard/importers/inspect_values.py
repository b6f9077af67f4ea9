"""The values an Inspect task file's expressions are read as (inspect_ast.py): a value the import
cannot know (Unresolved, with the line and why), a function of the file (FuncRef) and a call to an
Inspect function (Call); plain values are Python's None, bool, int, float, str, list and dict."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class Unresolved:
    """A value the import cannot know without running the file."""

    line: int
    why: str


@dataclass
class FuncRef:
    """A function defined in the file (a record_to_sample, a custom solver or scorer)."""

    name: str
    line: int


@dataclass
class Call:
    """A call to an Inspect function: its name (the last part: json_dataset, match) and arguments."""

    name: str
    args: list
    kwargs: dict
    line: int

    def arg(self, index: int, name: str, default: Any = None) -> Any:
        if name in self.kwargs:
            return self.kwargs[name]
        return self.args[index] if index is not None and index < len(self.args) else default


def unresolved_in(value: Any) -> Unresolved | None:
    """The first Unresolved anywhere in a value (not inside Calls: their consumers look)."""
    if isinstance(value, Unresolved):
        return value
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    for item in items:
        found = unresolved_in(item)
        if found is not None:
            return found
    return None
