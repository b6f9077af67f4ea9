"""The viewer API's paging parameters, read strictly: a `limit` or `cursor` it cannot read is a
400 naming the parameter (it used to be ignored: `limit=abc` gave 50 rows, `cursor=garbage` a
page from nowhere in particular), and a limit past the most one page holds is capped at it."""

from __future__ import annotations

import re

from ..store.casesort import check_sort
from ..store.queries import MAX_LIMIT

#: a runs-list cursor as list_runs writes it: "<started_at>|<run id>|<key>"
_RUNS_CURSOR = re.compile(r"[0-9A-Za-z:.+\- ]{0,40}\|.+\|[0-9a-f]{1,64}", re.S)
_WHOLE = re.compile(r"[0-9]{1,30}")


class ParamError(ValueError):
    """A query parameter that cannot be read; str() is the one-line answer."""


def _shown(value: str) -> str:
    return repr(value[:80] + ("…" if len(value) > 80 else ""))


def page_limit(value: str | None, default: int = 50) -> int:
    """How many rows a page holds: `default` when not given, at most MAX_LIMIT (capped)."""
    if value is None or value == "":
        return default
    if not _WHOLE.fullmatch(value) or int(value) < 1:
        raise ParamError(f"limit: must be a whole number from 1 to {MAX_LIMIT} (larger ones are capped at "
                         f"{MAX_LIMIT}), got {_shown(value)}")
    return min(MAX_LIMIT, int(value))


def position_cursor(value: str | None) -> int | None:
    """A cases/attempts page cursor: the `next` a page gave (a position, 0 or more)."""
    if value is None or value == "":
        return None
    if not _WHOLE.fullmatch(value):
        raise ParamError(f"cursor: must be the `next` value of an earlier page (a whole number), got {_shown(value)}")
    return min(int(value), 2**63 - 1)  # past every position: an empty page, not a database error


def runs_cursor(value: str | None, name: str = "cursor") -> str | None:
    """A runs-list page cursor: the `next` an earlier page gave ("<started>|<run id>|<key>"); a
    trend's `before` is one too (its `window`'s older_cursor or newer_cursor)."""
    if value is None or value == "":
        return None
    if not _RUNS_CURSOR.fullmatch(value):
        raise ParamError(f"{name}: must be the `next` value of an earlier page of runs, got {_shown(value)}")
    return value


def case_sort(value: str | None) -> tuple[str, bool] | None:
    """A run's cases' `sort`: a name of store.casesort.SORTS, a leading `-` for descending."""
    try:
        return check_sort(value)
    except ValueError as exc:
        raise ParamError(f"sort: {exc}") from None


def known_variant(db, key: str, name: str | None) -> None:
    """A run's cases filtered by a variant it does not have: an error naming the variants it has
    (a typo was an empty page, read as "no case")."""
    if name is None:
        return
    names = [row[0] for row in db.rows("SELECT name FROM variants WHERE run_key = ? ORDER BY name", (key,))]
    if name not in names:
        raise ParamError(f"variant: {_shown(name)} is not a variant of this run (its variants: "
                         f"{', '.join(names) or 'none'})")


def repeated(query) -> None:
    """A parameter given twice (`limit=1&limit=abc`): an error naming it; only the first was read,
    so the second, a client's own choice, was dropped in silence."""
    seen: set[str] = set()
    for name, _ in query.items():  # (keys() lists a repeated name once)
        if name in seen:
            raise ParamError(f"{name}: given more than once (give each parameter once)")
        seen.add(name)


def known_category(db, key: str, name: str | None) -> None:
    """A run's cases filtered by a category none of its cases has: an error naming the categories
    it has (a typo was an empty page, read as "no case")."""
    if name is None or db.one("SELECT 1 FROM cases WHERE run_key = ? AND category = ? LIMIT 1",
                              (key, name)) is not None:
        return
    names = [row[0] for row in db.rows("SELECT DISTINCT category FROM cases WHERE run_key = ? AND category "
                                       "IS NOT NULL ORDER BY category LIMIT 51", (key,))]
    listed = ", ".join(_shown(n) for n in names[:50]) + (", …" if len(names) > 50 else "")
    raise ParamError(f"category: {_shown(name)} is not a category of this run's cases (its categories: "
                     f"{listed or 'none'})")
