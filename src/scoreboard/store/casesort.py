"""A run's case list in another order than the plan's: by case id, by pass rate, by the change of
the pass rate since the suite's previous run, by mean latency or mean cost; over one variant's
attempts when the list is filtered by one, else over every variant's. A case whose value is
unknown (no judged attempt, no latency measured, not in the previous run or with another input
there) comes after every known one, in either direction, and ties keep plan order. Pages are
cut by offset (the `next` of a sorted page is the count of cases before it)."""

from __future__ import annotations

from .db import Database
from .rows import NEWEST

#: sort name -> what a case is sorted by, in words (the page's choices; the API's error lists them)
SORTS = {
    "id": "case id",
    "pass_rate": "pass rate",
    "change": "change of the pass rate since the suite's previous run",
    "latency": "mean latency",
    "cost": "mean cost",
}


def check_sort(value: str | None) -> tuple[str, bool] | None:
    """`sort` read: a name of SORTS, `-` before it for descending; None when not given.
    ValueError naming the known ones otherwise."""
    if value is None or value == "":
        return None
    name, descending = (value[1:], True) if value.startswith("-") else (value, False)
    if name not in SORTS:
        raise ValueError(f"unknown sort {value[:80]!r} (known: {', '.join(SORTS)}, each descending with a "
                         "leading '-')")
    return name, descending


def previous_run(db: Database, key: str) -> str | None:
    """The suite's finished run just before this one (its start, then the runs list's order)."""
    row = db.one("SELECT suite, COALESCE(started_at, ''), run_id FROM runs WHERE key = ?", (key,))
    if row is None:
        return None
    suite, started, run_id = row
    found = db.one("SELECT key FROM runs WHERE suite = ? AND status <> 'running' AND key <> ? AND "
                   "(COALESCE(started_at, '') < ? OR (COALESCE(started_at, '') = ? AND (LENGTH(run_id) < ? OR "
                   "(LENGTH(run_id) = ? AND run_id < ?)))) "
                   f"ORDER BY COALESCE(started_at, '') DESC, {NEWEST.replace('r.', '')} LIMIT 1",
                   (suite, key, started, started, len(run_id), len(run_id), run_id))
    return found[0] if found else None


def _rates(source: str, params: list, variant: str | None) -> tuple[str, list]:
    where, extra = ("WHERE cr.variant = ? ", [variant]) if variant else ("", [])
    return (f"SELECT cr.position AS position, MIN(cr.case_id) AS case_id, MIN(cr.input_hash) AS input_hash, "
            f"CAST(SUM(cr.hits) AS DOUBLE PRECISION) / NULLIF(SUM(cr.tries), 0) AS k FROM {source} {where}"
            "GROUP BY cr.position",
            [*params, *extra])


def _keys(db: Database, key: str, name: str, source: str, params: list, variant: str | None,
          results_source) -> tuple[str, list]:
    """A query of (position, k): each case's value to sort by."""
    if name == "id":
        return "SELECT position, case_id AS k FROM cases WHERE run_key = ?", [key]
    if name == "pass_rate":
        return _rates(source, params, variant)
    if name in ("latency", "cost"):
        column = "latency_ms" if name == "latency" else "cost_usd"
        where, extra = (" AND a.variant = ?", [variant]) if variant else ("", [])
        return (f"SELECT c.position AS position, AVG(a.{column}) AS k FROM attempts a JOIN cases c ON "
                f"c.run_key = a.run_key AND c.case_key = a.case_key WHERE a.run_key = ?{where} GROUP BY c.position",
                [key, *extra])
    # change: this run's rate less the previous run's, for the same case id and input
    now_sql, now_params = _rates(source, params, variant)
    before = previous_run(db, key)
    if before is None:
        return f"SELECT n.position AS position, NULL AS k FROM ({now_sql}) n", now_params
    old_source, old_params = results_source(db, before)
    old_sql, old_params = _rates(old_source, old_params, variant)
    return (f"SELECT n.position AS position, n.k - o.k AS k FROM ({now_sql}) n JOIN ({old_sql}) o "
            "ON o.case_id = n.case_id AND o.input_hash = n.input_hash",
            [*now_params, *old_params])


def sorted_positions(db: Database, key: str, sort: tuple[str, bool], source: str, params: list,
                     filtered: str, filtered_params: list, variant: str | None, offset: int, limit: int,
                     results_source) -> tuple[list[int], dict[int, object], bool]:
    """One page of the filtered cases' positions in the sort's order, each case's value, and
    whether more follow. `filtered` is a query of the positions the filters keep."""
    name, descending = sort
    keys_sql, keys_params = _keys(db, key, name, source, params, variant, results_source)
    direction = "DESC" if descending else "ASC"
    rows = db.all(f"SELECT f.position, s.k FROM ({filtered}) f LEFT JOIN ({keys_sql}) s ON s.position = f.position "
                  f"ORDER BY CASE WHEN s.k IS NULL THEN 1 ELSE 0 END, s.k {direction}, f.position "
                  "LIMIT ? OFFSET ?", [*filtered_params, *keys_params, limit + 1, offset])
    shown = rows[:limit]
    return [p for p, _ in shown], {p: k for p, k in shown}, len(rows) > limit
