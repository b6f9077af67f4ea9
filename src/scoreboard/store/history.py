"""The history store: every run recorded in a database as it happens (the Store seam of
store/base.py), SQLite by default, PostgreSQL for a team.

The report files stay the record. A run's rows are written as the engine reports them (the run
at its start, attempts in batches as they finish, the summary and the report's SHA-256 once the
report is written); when the rows and the report disagree at the end (a resumed run, a crash
of an earlier process, attempts that never ran), the run is stored again from its report file.
A store that fails while a run is under way says so on stderr and steps aside: the run goes on,
and `scoreboard store import` can back-fill it from the report later.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from ..errors import ConfigError
from ..hashing import file_sha256
from ..redact import KNOWN, scrub_known
from .base import RunEntry
from .db import Database, now_iso, open_database, said
from .liveness import folder_of_report, this_host
from .migrations import REVIEW_COLUMNS, case_key, fold
from .reportfile import ReportFile
from .shape import Shape
from .rows import (
    git_info,
    parse,
    planned_attempts,
    positions,
    review_entry,
    review_row,
    run_key,
    run_where,
    text,
    total_attempts,
    variant_rows,
)
from .writes import (
    FLUSH_EVERY,
    INSERT_VARIANT,
    FieldTally,
    flag,
    write_attempts,
    write_cases,
    write_end,
    write_tags,
)

FLUSH_SECONDS = 1.0

_INSERT_RUN = ("INSERT INTO runs (key, run_id, suite, status, started_at, finished_at, recorded_at, source, "
               "git_commit, git_branch, git_dirty, dry_run, synthetic, executor, planned, attempts, variants, head, "
               "folder, host, folded) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
               "ON CONFLICT (key) DO UPDATE SET status = excluded.status, recorded_at = excluded.recorded_at, "
               "folder = excluded.folder, host = excluded.host")
_INSERT_REVIEW = (
    "INSERT INTO reviews (case_id, output_hash, reviewer_id, rubric_version, input_hash, reviewer_kind, ratings, "
    "verdict, notes, run_key, created_at, case_key) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (case_key, output_hash, reviewer_id, reviewer_kind, rubric_version) DO UPDATE SET "
    "input_hash = excluded.input_hash, ratings = excluded.ratings, "
    "verdict = excluded.verdict, notes = excluded.notes, run_key = excluded.run_key, created_at = excluded.created_at")


def _write_reviews(db, key: str, head: dict, *, since: str | None = None) -> None:
    """A report's reviews into the store, bound to its run (one already there is replaced; with
    `since`, the run's start, only one stored before it: a review written meanwhile, in the
    viewer, is newer than what the run carried and stays)."""
    reviews = head.get("reviews") or {}
    rows = [review_row(e, key, now_iso()) for kind in ("human", "model") for e in reviews.get(kind) or ()]
    if since is None:
        db.executemany(_INSERT_REVIEW, rows)
    elif rows:
        db.executemany(_INSERT_REVIEW + " WHERE reviews.created_at < ?", [(*row, since) for row in rows])


#: tables holding one run's rows (what storing a run again replaces)
RUN_TABLES = ("attempts", "grades", "case_results", "field_results", "variants", "summaries", "cases", "run_tags")


class HistoryStore:
    """A Store over a SQLite file or a PostgreSQL database (see module docstring)."""

    #: attempts are written in batches of this many, or after this many seconds
    flush_every = FLUSH_EVERY
    flush_seconds = FLUSH_SECONDS

    def __init__(self, spec: str | Path, *, tags: Iterable[str] = (), db: Database | None = None):
        self.db = db or open_database(str(spec))
        self.name = self.db.kind
        self.location = self.db.location
        self.tags = sorted(set(tags))
        self.key: str | None = None
        self.failed: str | None = None
        self._buffer: list[dict] = []
        self._flushed_at = time.monotonic()
        self._seen = 0
        self._where = None
        self._fields: FieldTally | None = None

    # ---- the Store seam: a run as it happens
    def begin(self, meta: dict) -> None:
        """A run started or resumed: its row, variants and cases."""
        self._guard(self._begin, meta)

    def attempt(self, record: dict) -> None:
        """An attempt finished: kept, written with the next batch."""
        if self.failed or self.key is None:
            return
        if KNOWN:  # no credential the run knows reaches the store (as none reaches the log)
            record = KNOWN.scrub_value(record)
        self._buffer.append(record)
        if len(self._buffer) >= self.flush_every or time.monotonic() - self._flushed_at >= self.flush_seconds:
            self._guard(self._flush)

    def finish(self, head: dict, paths: dict[str, Path]) -> None:
        """The report was written: the summary, the report's hash, and the rows checked against it."""
        if self.key is None:
            return
        if self.failed:
            # A batch failed part way (the server was down a while): the report holds the whole
            # run, and the store may answer again by now; storing from it is tried once.
            print("scoreboard: warning: the history store failed during the run; storing the run from its report",
                  file=sys.stderr)
            self.failed = None
            self._guard(lambda: self.store_report(Path(paths["json"]), source="live", replace=True))
        else:
            self._guard(self._finish, head, paths)
        if self.failed:
            print(f"scoreboard: warning: the run was not fully stored in {self.location}; its report is the "
                  f"record: `scoreboard store import {paths.get('json')}` stores it again", file=sys.stderr)

    def _guard(self, step, *args) -> None:
        if self.failed:
            return
        try:
            step(*args)
        except Exception as exc:  # noqa: BLE001 - the run goes on; the report files are the record
            # PostgreSQL's message spans lines; a store error of ours is said without the location
            # the warning names already (it read "StoreLost: <url>, field 'store': ...")
            self.failed = scrub_known(said(exc.detail) if isinstance(exc, ConfigError) else f"{type(exc).__name__}: {said(exc)}")
            print(f"scoreboard: warning: history store {self.location}: {self.failed}; the run goes on "
                  "without it (its report files are the record)", file=sys.stderr)

    def begin_streamed(self, meta: dict, batches: Iterable[list[dict]], planned: int) -> None:
        """begin(), for a plan sent without its cases, which come as `batches` (the store's
        writer process, store/follow.py: never the whole plan in one message)."""
        self._guard(self._begin, meta, batches, planned)

    def _begin(self, meta: dict, batches: Iterable[list[dict]] | None = None, planned: int | None = None) -> None:
        plan = meta.get("plan") or {}
        self.key = run_key(meta["suite"], meta["run_id"], meta.get("started_at"), meta.get("uid"))
        self._buffer, self._seen = [], 0  # one store may record several runs, one after another
        if batches is None:
            self._where = positions(plan)
            self._fields = FieldTally(plan)
        commit, branch, dirty = git_info(meta.get("cwd"))
        planned = planned_attempts(plan) if planned is None else planned
        head = {"run": {"id": meta["run_id"], "suite": meta["suite"], "started_at": meta.get("started_at"),
                        "argv": meta.get("argv"), "executor": meta.get("executor"), "dry_run": meta.get("dry_run")},
                "plan": {k: v for k, v in plan.items() if k != "cases"}}
        names = text([v["name"] for v in plan.get("variants") or ()])
        with self.db.write() as db:
            db.execute(_INSERT_RUN, (self.key, meta["run_id"], meta["suite"], "running", meta.get("started_at"), None,
                                     now_iso(), "live", commit, branch, flag(dirty), flag(meta.get("dry_run")),
                                     None, meta.get("executor"), planned, None,
                                     names, text(head), meta.get("folder"),
                                     this_host() if meta.get("folder") else None,
                                     fold(meta["run_id"], meta["suite"], commit, names)))
            if batches is None:
                write_cases(db, self.key, plan)
            else:
                ids: list[str] = []
                for batch in batches:
                    write_cases(db, self.key, {"cases": batch}, start=len(ids))
                    ids += [c["id"] for c in batch]
                shape = {**plan, "cases": [{"id": i} for i in ids]}
                self._where = positions(shape)
                self._fields = FieldTally(shape)
            write_tags(db, self.key, self.tags)
            db.execute("DELETE FROM variants WHERE run_key = ?", (self.key,))
            db.executemany(INSERT_VARIANT, variant_rows(self.key, plan, None))

    def _flush(self) -> None:
        batch, self._buffer = self._buffer, []
        self._flushed_at = time.monotonic()
        if batch:
            with self.db.write() as db:
                write_attempts(db, self.key, batch, self._where)
            for record in batch:
                self._fields.add(record)
            self._seen += len(batch)

    def _finish(self, head: dict, paths: dict[str, Path], planned: int | None = None) -> None:
        self._flush()
        report = Path(paths["json"])
        stored = self.db.one("SELECT COUNT(*) FROM attempts WHERE run_key = ?", (self.key,))[0]
        expected = total_attempts(head.get("summary"))
        if stored != expected or self._seen != expected:
            # Attempts this process did not see (a resumed run's, attempts that never ran):
            # the report holds every one of them.
            self.store_report(report, source="live", replace=True)
            return
        sha, size = file_sha256(report)
        with self.db.write() as db:
            write_end(db, self.key, head, self._fields, planned)
            db.execute("UPDATE runs SET report_path = ?, report_sha256 = ?, report_bytes = ? WHERE key = ?",
                       (str(report.resolve()), sha, size, self.key))
            # the report's reviews (`import reviews`), stored as `store import` of it stores them
            _write_reviews(db, self.key, head, since=(head.get("run") or {}).get("started_at") or now_iso())

    # ---- writing a whole run from its report (import, and the end of a run that needs it)
    def store_report(self, path: str | Path, *, source: str = "import", replace: bool = False) -> str:
        """Store a report's run: "stored", "replaced" or "unchanged" (that SHA-256 is stored: nothing written)."""
        report = ReportFile(path)
        sha, size = file_sha256(report.path)
        shape = Shape(str(path))
        shape.head(report.head)
        run, plan = report.head["run"], report.head["plan"]
        key = run_key(run["suite"], run["id"], run.get("started_at"), run.get("uid"))
        held = self.db.one("SELECT report_sha256, git_commit, git_branch, git_dirty, source, status FROM runs "
                           "WHERE key = ?", (key,))
        if held is not None and held[5] == "completed" and run.get("status") != "completed" and not replace:
            raise ConfigError(f"the store holds this run completed and this report is an earlier state of it (status "
                              f"{str(run.get('status'))[:40]!r}): not stored over it (`--replace` stores it anyway)",
                              file=str(path), field="run.status")  # a stale copy: a checkpoint, a report before a resume
        if held is not None and held[0] == sha and not replace:
            if self.tags:  # `store import --tag` labels a run already stored too
                with self.db.write() as db:
                    write_tags(db, key, self.tags)
            return "unchanged"
        # Every attempt is checked before the stored copy is touched: a bad report never
        # replaces a good one (a large report is read once more for it, a streaming pass).
        for index, record in enumerate(report.attempts()):
            shape.attempt(record, index)
        commit, branch, dirty = (held[1], held[2], held[3]) if held else (None, None, None)
        where = positions(plan)
        fields = FieldTally(plan)
        names = text([v["name"] for v in plan.get("variants") or ()])
        # One transaction: a failure or a kill on the way leaves the stored copy as it was (the
        # old run whole, or none), never the old one deleted and the new one half-written.
        with self.db.write() as db:
            db.lock_run(key)  # another import of this report may have stored it since `held` was read
            now = db.one("SELECT report_sha256 FROM runs WHERE key = ?", (key,))
            if now is not None and now[0] == sha and not replace:
                write_tags(db, key, self.tags)
                return "unchanged"
            for table in RUN_TABLES:
                if table != "run_tags":
                    db.execute(f"DELETE FROM {table} WHERE run_key = ?", (key,))
            db.execute("DELETE FROM runs WHERE key = ?", (key,))
            db.execute(_INSERT_RUN, (key, run["id"], run["suite"], None, run.get("started_at"),
                                     run.get("finished_at"), now_iso(), held[4] if held else source, commit, branch,
                                     dirty, flag(run.get("dry_run")), flag(run.get("synthetic")),
                                     run.get("executor"), None, None,
                                     names, None, folder_of_report(report.path), this_host(),
                                     fold(run["id"], run["suite"], commit, names)))
            write_cases(db, key, plan)
            write_tags(db, key, self.tags)
            batch: list[dict] = []
            for record in report.attempts():
                batch.append(record)
                fields.add(record)
                if len(batch) >= FLUSH_EVERY:
                    write_attempts(db, key, batch, where)
                    batch = []
            write_attempts(db, key, batch, where)
            write_end(db, key, report.head, fields)
            db.execute("UPDATE runs SET report_path = ?, report_sha256 = ?, report_bytes = ? WHERE key = ?",
                       (str(report.path.resolve()), sha, size, key))
            _write_reviews(db, key, report.head)
        return "replaced" if held is not None else "stored"

    # ---- reading
    def runs(self, suite: str | None = None) -> Iterator[RunEntry]:
        """The runs this store holds, newest first."""
        sql = "SELECT run_id, suite, status, started_at, report_path, variants FROM runs"
        params: tuple = ()
        if suite:
            sql += " WHERE suite = ?"
            params = (suite,)
        for run_id, suite_, status, started, report, variants in self.db.all(
                sql + " ORDER BY started_at DESC, key DESC", params):
            path = Path(report) if report else None
            yield RunEntry(run_id=run_id, suite=suite_, status=status, started_at=started, report=path,
                           folder=path.with_suffix("") if path else Path(),
                           variants=parse(variants, run_where(run_id, suite_, "runs.variants")) or [])

    def resolve(self, run: str) -> str:
        """A run's key from its key, its run id (when one suite holds it) or `SUITE/RUN_ID`."""
        if self.db.one("SELECT 1 FROM runs WHERE key = ?", (run,)):
            return run
        suite, _, run_id = run.rpartition("/")
        sql, params = "SELECT key FROM runs WHERE run_id = ?", [run_id]
        if suite:
            sql += " AND suite = ?"
            params.append(suite)
        rows = self.db.all(sql.replace("SELECT key", "SELECT key, suite, started_at") + " ORDER BY started_at, key",
                           params)
        if not rows:
            raise ConfigError(f"no run {run!r} in the store {self.location}", field="run")
        if len(rows) > 1:
            if len({r[1] for r in rows}) > 1:
                raise ConfigError(f"run id {run!r} is in several suites: name it SUITE/{run_id}", field="run")
            # runs of one suite started in the same second from different output folders (a CI
            # matrix sharing a store) share a run id: only the key tells them apart
            shown = ", ".join(f"{k} (started {started or '?'})" for k, _, started in rows[:10])
            raise ConfigError(f"run {run!r} names {len(rows)} runs of suite {rows[0][1]!r}: name one by its key "
                              f"(`scoreboard history --json` lists them): {shown}"
                              + (", ..." if len(rows) > 10 else ""), field="run")
        return rows[0][0]

    def read(self, run_id: str) -> dict:
        """The whole report of a stored run, assembled from its rows."""
        key = self.resolve(run_id)
        stored, run_id_, suite_ = self.db.one("SELECT head, run_id, suite FROM runs WHERE key = ?", (key,))
        head = parse(stored, run_where(run_id_, suite_, "runs.head")) or {}
        plan = dict(head.get("plan") or {})
        plan["cases"] = [parse(row[0], run_where(run_id_, suite_, "cases.data")) for row in self.db.rows(
            "SELECT data FROM cases WHERE run_key = ? ORDER BY position", (key,))]
        summary = self.db.one("SELECT summary FROM summaries WHERE run_key = ?", (key,))
        report = {k: head[k] for k in ("schema", "run") if k in head}
        report["plan"] = plan
        report["attempts"] = list(self.attempt_records(key))
        report["summary"] = parse(summary[0], run_where(run_id_, suite_, "summaries.summary")) if summary else None
        report.update({k: head[k] for k in ("gates", "requests", "pairwise", "reviews", "verification") if k in head})
        return report

    def attempt_records(self, key: str) -> Iterator[dict]:
        """A stored run's attempts in report order, read in batches."""
        for (record,) in self.db.rows("SELECT record FROM attempts WHERE run_key = ? ORDER BY position", (key,)):
            yield parse(record)

    # ---- reviews
    def add_reviews(self, entries: list[dict], run: str | None = None) -> None:
        """Store reviews (an existing one by the same reviewer, rubric version, case and output is replaced)."""
        with self.db.write() as db:
            db.executemany(_INSERT_REVIEW, [review_row(e, run, now_iso()) for e in entries])

    def reviews(self, *, run: str | None = None, kind: str | None = None) -> list[dict]:
        """Stored reviews as `import reviews` entries: all, or those of one run's outputs."""
        sql = f"SELECT {REVIEW_COLUMNS} FROM reviews r"
        where, params = [], []
        if run is not None:
            where.append("EXISTS (SELECT 1 FROM attempts a WHERE a.run_key = ? AND a.case_key = r.case_key "
                         "AND a.output_hash = r.output_hash)")
            params.append(run)
        if kind:
            where.append("r.reviewer_kind = ?")
            params.append(kind)
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY r.created_at, r.case_id, r.output_hash, r.reviewer_id, r.reviewer_kind, r.rubric_version"
        return [review_entry(row) for row in self.db.all(sql, params)]

    def case_reviews(self, case_id: str) -> list[dict]:
        """The stored reviews of one case's outputs (read by the case, not the whole table)."""
        return [review_entry(row) for row in self.db.all(
            f"SELECT {REVIEW_COLUMNS} FROM reviews WHERE case_key = ? ORDER BY created_at, output_hash, reviewer_id, "
            "reviewer_kind, rubric_version", (case_key(case_id),))]

    def held_reviews(self, plan: dict, carried: dict | None) -> dict | None:
        """The reviews a new run's report starts with: those it carries, plus the stored ones of
        its cases (same case id and input hash; the summary keeps those bound to its outputs)."""
        wanted = {c["id"]: c.get("input_hash") for c in plan.get("cases") or ()}
        stored = [review_entry(row) for row in self.db.all(
            f"SELECT {REVIEW_COLUMNS} FROM reviews ORDER BY created_at, case_id, output_hash, reviewer_id, "
            "reviewer_kind, rubric_version")] if self._any_reviews() else []
        stored = [e for e in stored if wanted.get(e["case_id"]) == e["input_hash"]]
        if not stored:
            return carried
        out = {kind: list((carried or {}).get(kind) or ()) for kind in ("human", "model")}
        have = {(e["case_id"], e["output_hash"], e["reviewer_id"], kind, e["rubric_version"])
                for kind in out for e in out[kind]}
        for e in stored:
            if (e["case_id"], e["output_hash"], e["reviewer_id"], e["reviewer_kind"], e["rubric_version"]) not in have:
                out[e["reviewer_kind"]].append(e)
        return out

    def _any_reviews(self) -> bool:
        return self.db.one("SELECT 1 FROM reviews LIMIT 1") is not None

    def tag(self, run: str, tags: list[str], remove: bool = False) -> list[str]:
        """Add (or remove) the run's tags; the ones that were already so (a tag to remove the
        run does not have, a tag to add it has)."""
        key = self.resolve(run)
        with self.db.write() as db:
            held = {t for (t,) in db.all("SELECT tag FROM run_tags WHERE run_key = ?", (key,))}
            unchanged = sorted({t for t in tags if (t in held) != remove})
            if remove:
                db.executemany("DELETE FROM run_tags WHERE run_key = ? AND tag = ?", [(key, t) for t in tags])
            else:
                write_tags(db, key, tags)
        return unchanged

    def close(self) -> None:
        self.db.close()
