"""Reading a history store a page at a time: runs with filters, a run's cases, one case's
attempts, per-case tallies for comparisons. Every list is keyset-paged on an indexed order, so
a run of a million attempts opens as fast as a small one and nothing is read whole."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from ..errors import ConfigError, shorten
from ..record.constants import RUN_STATUSES
from .db import Database
from .casepage import OUTCOMES, case_page, like, results_source  # noqa: F401  (re-exported)
from .liveness import INTERRUPTED, annotate
from .migrations import case_key
from .rows import NEWEST, parse, run_where

RUN_COLUMNS = ("key, run_id, suite, status, started_at, finished_at, recorded_at, source, report_path, "
               "report_sha256, report_bytes, git_commit, git_branch, git_dirty, dry_run, synthetic, executor, "
               "planned, attempts, variants, folder, host")
_RUN_NAMES = [c.strip() for c in RUN_COLUMNS.split(",")]
VARIANT_COLUMNS = ("run_key, position, name, attempts, passed, failed, errors, unassessed, not_run, pass_rate, "
                   "ci_low, ci_high, ci_method, field_accuracy, fa_low, fa_high, cost_per_case, errors_not_graded, units")
_VARIANT_NAMES = [c.strip() for c in VARIANT_COLUMNS.split(",")]
MAX_LIMIT = 500


#: the statuses a run can be recorded with, and `interrupted`: recorded as running, its process ended
STATUSES = (*RUN_STATUSES, INTERRUPTED)


def check_status(value: str | None, flag: str = "--status") -> str | None:
    """A status filter: one of STATUSES (a typo is an error, not an empty list)."""
    if value is None:
        return None
    if value.strip().lower() not in STATUSES:
        raise ConfigError(f"unknown status {shorten(value, 80)!r} (known: {', '.join(STATUSES)})", flag=flag)
    return value.strip().lower()


def check_time(value: str | None, flag: str) -> str | None:
    """A --since/--until filter: an ISO date (YYYY-MM-DD) or date and time (YYYY-MM-DDTHH:MM[:SS], UTC
    unless it names an offset), as the stored run times are written (UTC, ...Z); a value that is
    neither is an error, not an empty list."""
    if value is None:
        return None
    text = value.strip()
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        try:
            datetime.strptime(text, "%Y-%m-%d")
        except ValueError:
            pass
        else:
            return text
    elif re.fullmatch(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?", text):
        try:
            moment = datetime.fromisoformat(text.replace(" ", "T").replace("Z", "+00:00"))
        except ValueError:
            pass
        else:
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=timezone.utc)
            return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    raise ConfigError(f"not a date: {shorten(value, 80)!r} (give an ISO date, 2026-12-01, or a UTC time, "
                      "2026-12-01T14:30Z)", flag=flag)


@dataclass
class RunFilter:
    """What a runs list is narrowed to (every field optional)."""

    suite: str | None = None
    variant: str | None = None
    status: str | None = None
    since: str | None = None
    until: str | None = None
    tag: str | None = None
    commit: str | None = None
    search: str | None = None


def clamp(limit: Any, default: int = 50) -> int:
    try:
        value = int(limit)
    except (TypeError, ValueError):
        return default
    return max(1, min(MAX_LIMIT, value))


def list_runs(db: Database, f: RunFilter, *, limit: int = 50, cursor: str | None = None) -> tuple[list[dict], str | None]:
    """One page of runs, newest first, with their variants' figures and tags; and the cursor of
    the next page (None at the end). A run recorded as running is shown as it is now (`running`
    or `interrupted`, store/liveness.py), and filtered so: pages of the recorded ones are read
    until enough are found."""
    if f.status not in ("running", INTERRUPTED):
        return _list_runs(db, f, limit=limit, cursor=cursor)
    wanted, found = f.status, []
    recorded = RunFilter(**{**vars(f), "status": "running"})
    while True:
        page, cursor = _list_runs(db, recorded, limit=limit, cursor=cursor)
        found += [r for r in page if r["status"] == wanted]
        if cursor is None or len(found) > limit:
            break
    if len(found) <= limit:
        return found, None
    last = found[limit - 1]
    return found[:limit], f"{last['started_at'] or ''}|{last['run_id']}|{last['key']}"


def _list_runs(db: Database, f: RunFilter, *, limit: int, cursor: str | None) -> tuple[list[dict], str | None]:
    where, params = [], []
    if f.suite:
        where.append("r.suite = ?")
        params.append(f.suite)
    if f.status:
        where.append("r.status = ?")
        params.append(f.status)
    if f.since:
        where.append("r.started_at >= ?")
        params.append(f.since)
    if f.until:
        # a date alone means the whole day
        where.append("r.started_at <= ?")
        params.append(f.until + ("T23:59:59Z" if len(f.until) == 10 else ""))
    if f.commit:
        where.append("r.git_commit LIKE ?")
        params.append(f.commit.lower().replace("%", "").replace("_", "") + "%")
    if f.variant:
        where.append("EXISTS (SELECT 1 FROM variants v WHERE v.run_key = r.key AND v.name = ?)")
        params.append(f.variant)
    if f.tag:
        where.append("EXISTS (SELECT 1 FROM run_tags t WHERE t.run_key = r.key AND t.tag = ?)")
        params.append(f.tag)
    if f.search:
        pattern = like(f.search)
        where.append("(r.folded LIKE ? ESCAPE '\\' "
                     "OR EXISTS (SELECT 1 FROM run_tags t WHERE t.run_key = r.key AND t.folded LIKE ? ESCAPE '\\'))")
        params.extend([pattern] * 2)
    if cursor:
        # (start, run id, key): runs started in the same second keep their order (rows.NEWEST)
        started, _, rest = cursor.partition("|")
        run_id, _, key = rest.rpartition("|")
        where.append("(COALESCE(r.started_at, '') < ? OR (COALESCE(r.started_at, '') = ? AND (LENGTH(r.run_id) < ? OR "
                     "(LENGTH(r.run_id) = ? AND (r.run_id < ? OR (r.run_id = ? AND r.key < ?))))))")
        params.extend([started, started, len(run_id), len(run_id), run_id, run_id, key])
    sql = f"SELECT {', '.join('r.' + c for c in _RUN_NAMES)} FROM runs r"
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += f" ORDER BY COALESCE(r.started_at, '') DESC, {NEWEST} LIMIT ?"
    rows = db.all(sql, [*params, limit + 1])
    runs = [run_dict(row) for row in rows[:limit]]
    attach(db, runs)
    nxt = None
    if len(rows) > limit:
        last = runs[-1]
        nxt = f"{last['started_at'] or ''}|{last['run_id']}|{last['key']}"
    return runs, nxt


def run_dict(row: tuple) -> dict:
    out = dict(zip(_RUN_NAMES, row))
    out["variants"] = parse(out["variants"], run_where(out["run_id"], out["suite"], "runs.variants")) or []
    for flag in ("git_dirty", "dry_run", "synthetic"):
        out[flag] = None if out[flag] is None else bool(out[flag])
    return annotate(out)


def attach(db: Database, runs: list[dict]) -> None:
    """Each run's variant figures and tags (one query each for the whole page)."""
    if not runs:
        return
    keys = [r["key"] for r in runs]
    marks = ", ".join("?" * len(keys))
    figures: dict[str, list[dict]] = {k: [] for k in keys}
    for row in db.all(f"SELECT {VARIANT_COLUMNS} FROM variants WHERE run_key IN ({marks}) "
                      "ORDER BY run_key, position", keys):
        item = dict(zip(_VARIANT_NAMES, row))
        figures[item.pop("run_key")].append(item)
    tags: dict[str, list[str]] = {k: [] for k in keys}
    for key, tag in db.all(f"SELECT run_key, tag FROM run_tags WHERE run_key IN ({marks}) ORDER BY tag", keys):
        tags[key].append(tag)
    cases = dict(db.all(f"SELECT run_key, COUNT(*) FROM cases WHERE run_key IN ({marks}) GROUP BY run_key", keys))
    partial = _judged_cases(db, figures)
    for r in runs:
        r["figures"] = figures[r["key"]]
        r["tags"] = tags[r["key"]]
        r["cases"] = int(cases.get(r["key"]) or 0)  # the plan's cases
        for f in r["figures"]:  # the cases a variant's interval is over (the report's `cases`)
            f["cases"] = partial.get((r["key"], f["name"]), r["cases"])


def _judged_cases(db: Database, figures: dict[str, list[dict]]) -> dict[tuple[str, str], int]:
    """(run key, variant) -> the cases with a judged attempt, for each variant some of whose
    attempts were not judged (a stopped run): every other variant's are the plan's cases. A
    variant whose counts are not stored (a run under way) is left out (its rate is unknown)."""
    wanted = [(key, f["name"]) for key, rows in figures.items() for f in rows
              if all(isinstance(f.get(n), int) for n in ("attempts", "passed", "failed", "errors"))
              and f["attempts"] != f["passed"] + f["failed"] + f["errors"]]
    out: dict[tuple[str, str], int] = {}
    for key, variant in wanted:
        row = db.one("SELECT COUNT(*) FROM case_results WHERE run_key = ? AND variant = ? AND tries > 0",
                     (key, variant))
        out[(key, variant)] = int(row[0]) if row else 0
    return out


#: a variant block's per-case maps (one entry per case: a million for a million-case run),
#: which no page or figure of the viewer reads
PER_CASE = ("case_stability", "flaky_cases")


def lean(summary: Any) -> Any:
    """A stored summary without its per-case maps (what a page is sent and a trend holds)."""
    if not isinstance(summary, dict) or not isinstance(summary.get("variants"), dict):
        return summary
    variants = {name: ({k: v for k, v in block.items() if k not in PER_CASE} if isinstance(block, dict) else block)
                for name, block in summary["variants"].items()}
    return {**summary, "variants": variants}


def run_exists(db: Database, key: str) -> bool:
    return db.one("SELECT 1 FROM runs WHERE key = ?", (key,)) is not None


def run_brief(db: Database, key: str) -> dict | None:
    """A run's key, id, suite and start (no summary read)."""
    row = db.one("SELECT key, run_id, suite, started_at FROM runs WHERE key = ?", (key,))
    return None if row is None else dict(zip(("key", "run_id", "suite", "started_at"), row))


def get_run(db: Database, key: str) -> dict | None:
    """A run's row, figures, tags, head and summary (without its per-case maps)."""
    row = db.one(f"SELECT {RUN_COLUMNS}, head FROM runs WHERE key = ?", (key,))
    if row is None:
        return None
    run = run_dict(row[:-1])
    run["head"] = parse(row[-1], run_where(run["run_id"], run["suite"], "runs.head")) or {}
    attach(db, [run])
    summary = db.one("SELECT summary FROM summaries WHERE run_key = ?", (key,))
    run["summary"] = lean(parse(summary[0], run_where(run["run_id"], run["suite"], "summaries.summary"))) \
        if summary else None
    run["categories"] = [c for (c,) in db.all("SELECT DISTINCT category FROM cases WHERE run_key = ? "
                                              "AND category IS NOT NULL ORDER BY category", (key,))]
    return run


def attempt_page(db: Database, key: str, *, status: str | None = None, cursor: Any = None,
                 limit: int = 50) -> tuple[list[dict], int | None]:
    """One page of a run's attempts in report order (their records), optionally of one status."""
    sql = "SELECT position, record FROM attempts WHERE run_key = ?"
    params: list = [key]
    if status:
        sql += " AND status = ?"
        params.append(status)
    if cursor not in (None, ""):
        sql += " AND position > ?"
        params.append(int(cursor))
    rows = db.all(sql + " ORDER BY position LIMIT ?", [*params, limit + 1])
    page = [parse(r) for _, r in rows[:limit]]
    return page, (rows[limit - 1][0] if len(rows) > limit else None)


def case_detail(db: Database, key: str, case_id: str) -> dict | None:
    """A case of a run: its plan entry and every attempt of it (all variants and runs)."""
    row = db.one("SELECT data FROM cases WHERE run_key = ? AND case_key = ?", (key, case_key(case_id)))
    if row is None:
        return None
    attempts = [parse(r) for (r,) in db.all("SELECT record FROM attempts WHERE run_key = ? AND case_key = ? "
                                            "ORDER BY position", (key, case_key(case_id)))]
    return {"case": parse(row[0]), "attempts": attempts}


def case_history(db: Database, suite: str, case_id: str, input_hash: str | None, limit: int = 30) -> list[dict]:
    """The same case (id and input hash) in the suite's runs, newest first: per-variant tallies."""
    rows = db.all("SELECT r.key, r.run_id, r.started_at, cr.variant, cr.hits, cr.tries FROM case_results cr "
                  "JOIN runs r ON r.key = cr.run_key WHERE cr.case_key = ? AND cr.input_hash = ? AND r.suite = ? "
                  f"ORDER BY r.started_at DESC, {NEWEST}, cr.variant LIMIT ?",
                  (case_key(case_id), input_hash, suite, limit * 8))
    out: dict[str, dict] = {}
    for key, run_id, started, variant, hits, tries in rows:
        item = out.setdefault(key, {"key": key, "run_id": run_id, "started_at": started, "variants": {}})
        item["variants"][variant] = {"hits": hits, "tries": tries}
    return list(out.values())[:limit]


def case_hashes(db: Database, key: str) -> dict[str, str | None]:
    return {cid: ih for cid, ih in db.rows("SELECT case_id, input_hash FROM cases WHERE run_key = ?", (key,))}


def case_tallies(db: Database, key: str) -> dict[str, dict[str, list[int]]]:
    """variant -> case_id -> [hits, tries] (judged attempts) of a run."""
    source, params = results_source(db, key)
    out: dict[str, dict[str, list[int]]] = {}
    for variant, cid, hits, tries in db.rows(f"SELECT cr.variant, cr.case_id, cr.hits, cr.tries FROM {source}",
                                             params):
        if tries:
            out.setdefault(variant, {})[cid] = [int(hits), int(tries)]
    return out


def field_tallies(db: Database, key: str) -> dict[str, dict[str, dict[str, list[int]]]]:
    """variant -> field -> case_id -> [hits, tries] of a finished run."""
    out: dict[str, dict[str, dict[str, list[int]]]] = {}
    for variant, field, cid, hits, tries in db.rows(
            "SELECT variant, field, case_id, hits, tries FROM field_results WHERE run_key = ?", (key,)):
        out.setdefault(variant, {}).setdefault(field, {})[cid] = [int(hits), int(tries)]
    return out


def suites(db: Database) -> list[dict]:
    return [{"suite": s, "runs": n, "last": last} for s, n, last in db.all(
        "SELECT suite, COUNT(*), MAX(started_at) FROM runs GROUP BY suite ORDER BY suite")]


def suite_runs(db: Database, suite: str, limit: int = 60) -> list[dict]:
    """The suite's latest finished runs, oldest first, with their figures."""
    rows = db.all(f"SELECT {RUN_COLUMNS} FROM runs WHERE suite = ? AND status <> 'running' "
                  f"ORDER BY started_at DESC, {NEWEST.replace('r.', '')} LIMIT ?", (suite, limit))
    runs = [run_dict(r) for r in rows][::-1]
    attach(db, runs)
    for r in runs:  # one summary parsed at a time, and kept lean
        row = db.one("SELECT summary FROM summaries WHERE run_key = ?", (r["key"],))
        r["summary"] = lean(parse(row[0], run_where(r["run_id"], r["suite"], "summaries.summary"))) if row else None
    return runs
