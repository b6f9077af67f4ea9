"""A page of a run's cases with their per-variant tallies, in plan order or sorted (casesort)."""

from __future__ import annotations

from typing import Any

from .casesort import sorted_positions
from .db import Database
from .migrations import fold

OUTCOMES = {
    "failing": "(cr.failed + cr.errors) > 0",
    "passing": "(cr.failed + cr.errors) = 0 AND cr.passed > 0",
    "flaky": "cr.passed > 0 AND (cr.failed + cr.errors) > 0",
    "errors": "cr.errors > 0",
    "unjudged": "cr.tries = 0",
}
#: per-case tallies of a run still under way, from its attempts (a finished run has them stored)
_LIVE_RESULTS = (
    "(SELECT a.variant AS variant, a.case_id AS case_id, MIN(c.position) AS position, "
    "MIN(c.input_hash) AS input_hash, MIN(c.category) AS category, "
    "SUM(CASE WHEN a.status = 'passed' THEN 1 ELSE 0 END) AS hits, "
    "SUM(CASE WHEN a.status IN ('passed', 'failed', 'error') THEN 1 ELSE 0 END) AS tries, "
    "SUM(CASE WHEN a.status = 'passed' THEN 1 ELSE 0 END) AS passed, "
    "SUM(CASE WHEN a.status = 'failed' THEN 1 ELSE 0 END) AS failed, "
    "SUM(CASE WHEN a.status = 'error' THEN 1 ELSE 0 END) AS errors, "
    "SUM(CASE WHEN a.status IN ('passed', 'failed', 'error') THEN 0 ELSE 1 END) AS other "
    "FROM attempts a JOIN cases c ON c.run_key = a.run_key AND c.case_key = a.case_key "
    "WHERE a.run_key = ? GROUP BY a.variant, a.case_key, a.case_id) cr")


def like(text: str) -> str:
    """A LIKE pattern matching `text` anywhere, its wildcards taken literally."""
    escaped = fold(text).replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def results_source(db: Database, key: str) -> tuple[str, list]:
    """The per-case tallies of a run: stored when it finished, else made from its attempts."""
    if db.one("SELECT 1 FROM case_results WHERE run_key = ? LIMIT 1", (key,)):
        return "(SELECT * FROM case_results WHERE run_key = ?) cr", [key]
    return _LIVE_RESULTS, [key]


def case_page(db: Database, key: str, *, variant: str | None = None, outcome: str | None = None,
              search: str | None = None, category: str | None = None, cursor: Any = None,
              limit: int = 50, sort: tuple[str, bool] | None = None) -> tuple[list[dict], int | None]:
    """One page of a run's cases in plan order (or in `sort`'s: store/casesort.py), each with its
    per-variant tallies (and, sorted, `sort_value`: the value it was sorted by)."""
    source, params = results_source(db, key)
    where, extra = [], []
    if variant:
        where.append("cr.variant = ?")
        extra.append(variant)
    if outcome in OUTCOMES:
        where.append(OUTCOMES[outcome])
    if search:
        where.append("cr.position IN (SELECT c.position FROM cases c WHERE c.run_key = ? AND c.folded LIKE ? ESCAPE '\\')")
        extra += [key, like(search)]
    if category:
        where.append("cr.category = ?")
        extra.append(category)
    if cursor not in (None, "") and sort is None:
        where.append("cr.position > ?")
        extra.append(int(cursor))
    sql = f"SELECT DISTINCT cr.position FROM {source}"
    if where:
        sql += " WHERE " + " AND ".join(where)
    values: dict = {}
    if sort is not None:
        offset = int(cursor or 0)
        shown, values, more = sorted_positions(db, key, sort, source, params, sql, [*params, *extra], variant,
                                               offset, limit, results_source)
        nxt = offset + len(shown) if more else None
    else:
        found = [p for (p,) in db.all(sql + " ORDER BY cr.position LIMIT ?", [*params, *extra, limit + 1])]
        shown = found[:limit]
        nxt = shown[-1] if len(found) > limit else None
    if not shown:
        return [], None
    marks = ", ".join("?" * len(shown))
    rows = db.all(f"SELECT cr.position, cr.case_id, cr.variant, cr.input_hash, cr.category, cr.hits, cr.tries, "
                  f"cr.passed, cr.failed, cr.errors, cr.other FROM {source} WHERE cr.position IN ({marks}) "
                  "ORDER BY cr.position, cr.variant", [*params, *shown])
    cases: dict[int, dict] = {}
    for pos, cid, var, ih, cat, hits, tries, passed, failed, errors, other in rows:
        item = cases.setdefault(pos, {"position": pos, "case_id": cid, "input_hash": ih, "category": cat,
                                      "variants": {}})
        item["variants"][var] = {"hits": hits, "tries": tries, "passed": passed, "failed": failed,
                                 "errors": errors, "other": other}
    page = [cases[p] if sort is None else {**cases[p], "sort_value": values.get(p)} for p in shown]
    return page, nxt
