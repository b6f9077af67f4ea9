"""A window of a suite's finished runs for the viewer's trend: the `limit` runs just older than
a cursor (the newest ones without it), and how many runs of the suite lie on either side of the
window, so a page over a store of 600 runs says what it leaves out and links to the rest (it drew
the latest 60, at most 500, and said nothing of the others)."""

from __future__ import annotations

from .db import Database
from .queries import RUN_COLUMNS, attach, lean, run_dict
from .rows import NEWEST, parse, run_where

_FINISHED = "suite = ? AND status <> 'running'"
_ORDER = f"COALESCE(started_at, '') DESC, {NEWEST.replace('r.', '')}"
# a run older than (started, run id, key), in the order above (store.queries' runs cursor)
_OLDER = ("(COALESCE(started_at, '') < ? OR (COALESCE(started_at, '') = ? AND (LENGTH(run_id) < ? OR "
          "(LENGTH(run_id) = ? AND (run_id < ? OR (run_id = ? AND key < ?))))))")
_NEWER = ("(COALESCE(started_at, '') > ? OR (COALESCE(started_at, '') = ? AND (LENGTH(run_id) > ? OR "
          "(LENGTH(run_id) = ? AND (run_id > ? OR (run_id = ? AND key > ?))))))")
_ASCENDING = _ORDER.replace(" DESC", " ASC").replace("DESC", "ASC")


def cursor_of(run: dict) -> str:
    """The cursor naming a run ("<started>|<run id>|<key>", as the runs list's `next`)."""
    return f"{run['started_at'] or ''}|{run['run_id']}|{run['key']}"


def _bound(cursor: str) -> list:
    started, _, rest = cursor.partition("|")
    run_id, _, key = rest.rpartition("|")
    return [started, started, len(run_id), len(run_id), run_id, run_id, key]


def suite_window(db: Database, suite: str, limit: int, before: str | None = None) -> tuple[list[dict], dict]:
    """Up to `limit` + 1 finished runs of the suite, oldest first, ending just before `before`
    (the newest without it): the first is the previous run of the window's oldest point when
    there are more than `limit`. And the window's place: `total` runs, `older` and `newer` runs
    not in it, the cursors of the next older page and of the next newer one."""
    where, params = [_FINISHED], [suite]
    if before:
        where.append(_OLDER)
        params += _bound(before)
    rows = db.all(f"SELECT {RUN_COLUMNS} FROM runs WHERE {' AND '.join(where)} ORDER BY {_ORDER} LIMIT ?",
                  [*params, limit + 1])
    runs = [run_dict(r) for r in rows][::-1]
    attach(db, runs)
    for r in runs:  # one summary parsed at a time, and kept lean
        row = db.one("SELECT summary FROM summaries WHERE run_key = ?", (r["key"],))
        r["summary"] = lean(parse(row[0], run_where(r["run_id"], r["suite"], "summaries.summary"))) if row else None
    drawn = runs[-limit:] if runs else []
    total = db.one(f"SELECT COUNT(*) FROM runs WHERE {_FINISHED}", (suite,))[0]
    if not drawn:
        return runs, {"total": total, "older": 0, "newer": 0 if not before else _count(db, suite, _NEWER, before),
                      "older_cursor": None, "newer_cursor": None}
    oldest, newest = cursor_of(drawn[0]), cursor_of(drawn[-1])
    older, newer = _count(db, suite, _OLDER, oldest), _count(db, suite, _NEWER, newest)
    newer_cursor = None
    if newer:  # the page of the `limit` runs just newer: it ends before the run after them, if any
        after = db.all(f"SELECT key, run_id, started_at FROM runs WHERE {_FINISHED} AND {_NEWER} "
                       f"ORDER BY {_ASCENDING} LIMIT ?", [suite, *_bound(newest), limit + 1])
        newer_cursor = "" if len(after) <= limit else cursor_of(dict(zip(("key", "run_id", "started_at"),
                                                                         after[limit])))
    return runs, {"total": total, "older": older, "newer": newer,
                  "older_cursor": oldest if older else None, "newer_cursor": newer_cursor}


def _count(db: Database, suite: str, side: str, cursor: str) -> int:
    return db.one(f"SELECT COUNT(*) FROM runs WHERE {_FINISHED} AND {side}", [suite, *_bound(cursor)])[0]
