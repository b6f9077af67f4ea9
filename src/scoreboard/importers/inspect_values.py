"""The values an Inspect task file's expressions are read as (inspect_ast.py): a value the import
cannot know (Unresolved, with the line and why), a function of the file (FuncRef) and a call to an
Inspect function (Call); plain values are Python's None, bool, int, float, str, list and dict."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: the most characters (or items) one resolved value may hold: `A = "x"; B = A + A; ...` doubles
MAX_VALUE = 16 * 1024 * 1024
MAX_ITEMS = 1_000_000
MAX_DEPTH = 60

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


def oversized(value: Any, within: Any = None) -> bool:
    """More than MAX_ITEMS items counted as written out (a list held twice counts twice: `x = [x, x]`
    doubles), nested deeper than MAX_DEPTH (a list holding itself is infinitely deep), or holding
    `within` (the very list: `x.append(x)`). Bounded work: it stops at the limit."""
    todo, seen = [(value, 0)], 0
    while todo:
        item, depth = todo.pop()
        seen += 1
        if seen > MAX_ITEMS or depth > MAX_DEPTH or within is not None and item is within and depth:
            return True
        if isinstance(item, list):
            todo.extend((v, depth + 1) for v in item)
        elif isinstance(item, dict):
            todo.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, Call):
            todo.extend((v, depth + 1) for v in [*item.args, *item.kwargs.values()])
    return False
