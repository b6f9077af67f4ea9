"""The history store, the same tests on SQLite and on a real PostgreSQL: migrations recorded,
runs recorded as they happen and matching their reports, import idempotent, a stored run
checked against its report, filters and paging, reviews bound to outputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scoreboard.engine.pipeline import RunOptions, run
from scoreboard.errors import ConfigError
from scoreboard.hashing import canonical_json
from scoreboard.store.check import check_stored
from scoreboard.store.db import migrate, schema_version
from scoreboard.store.files import FileStore
from scoreboard.store.history import HistoryStore
from scoreboard.store.migrations import MIGRATIONS
from scoreboard.store.queries import (
    RunFilter,
    case_page,
    case_tallies,
    get_run,
    list_runs,
)
from scoreboard.suite.load import load_suite

N = 14


def make_suite(folder: Path, name: str = "hist", wrong: dict[str, set[int]] | None = None, runs: int = 2) -> Path:
    """A suite of N cases and two recorded variants; `wrong` names the cases each answers wrongly."""
    wrong = wrong if wrong is not None else {"one": {3, 5}, "two": {5, 7, 8}}
    folder.mkdir(parents=True, exist_ok=True)
    cases = [{"id": f"c{i:02d}", "input": f"q{i}", "expected": {"total": i, "currency": "EUR"},
              "category": "odd" if i % 2 else "even", "grader": "json-fields", "fields": ["total", "currency"]}
             for i in range(N)]
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    for variant, bad in wrong.items():
        records = [{"case_id": f"c{i:02d}", "output": json.dumps({"total": -1 if i in bad else i, "currency": "EUR"}),
                    "latency_ms": 10 + i} for i in range(N)]
        (folder / f"{variant}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    suite = {"name": name, "cases": "cases.jsonl", "runs": runs, "output_dir": "out", "formats": ["json"],
             "variants": {v: {"subject": f"recorded:{v}.jsonl"} for v in wrong}}
    (folder / "suite.json").write_text(json.dumps(suite))
    return folder / "suite.json"


def run_into(spec: str, suite_file: Path, tags=()) -> tuple[dict, Path]:
    """Run the suite into the store `spec` names ("none": report files only)."""
    suite = load_suite(suite_file)
    store = FileStore(suite.config.output_dir) if spec == "none" else HistoryStore(spec, tags=tags)
    try:
        outcome = run(suite, RunOptions(progress=False, store=store))
    finally:
        if hasattr(store, "close"):
            store.close()
    return outcome.report, outcome.paths["json"]


def test_migrations_are_recorded_and_applied_once(store_spec):
    store = HistoryStore(store_spec)
    try:
        assert schema_version(store.db) == len(MIGRATIONS)
        rows = store.db.all("SELECT version, name FROM schema_migrations ORDER BY version")
        assert [r[0] for r in rows] == list(range(1, len(MIGRATIONS) + 1))
        assert migrate(store.db) == []  # nothing left to apply
    finally:
        store.close()
    again = HistoryStore(store_spec)
    assert schema_version(again.db) == len(MIGRATIONS)
    # a store from a newer scoreboard is refused, not written into
    with again.db.write() as db:
        db.execute("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                   (len(MIGRATIONS) + 1, "from the future", "2099-01-01T00:00:00Z"))
    again.close()
    with pytest.raises(ConfigError, match="newer than this scoreboard"):
        HistoryStore(store_spec)


def test_a_run_is_stored_as_its_report_says(store_spec, tmp_path):
    report, path = run_into(store_spec, make_suite(tmp_path / "s"), tags=["nightly"])
    store = HistoryStore(store_spec)
    try:
        check = check_stored(store, path)
        assert check.ok, check.mismatches
        assert check.checked["attempts"] == N * 2 * 2
        assert check.checked["report_sha256"]
        (entry,) = list(store.runs())
        assert entry.run_id == report["run"]["id"] and entry.status == "completed"
        key = store.resolve(report["run"]["id"])
        run_row = get_run(store.db, key)
        assert run_row["tags"] == ["nightly"] and run_row["attempts"] == N * 4 and run_row["source"] == "live"
        for fig in run_row["figures"]:
            block = report["summary"]["variants"][fig["name"]]
            assert fig["pass_rate"] == pytest.approx(block["pass_rate"])
            assert fig["ci_low"] == pytest.approx(block["pass_rate_ci"]["low"])
            assert fig["ci_high"] == pytest.approx(block["pass_rate_ci"]["high"])
            assert fig["field_accuracy"] == pytest.approx(block["field_accuracy_overall"]["value"])
        # the whole report, read back from the rows
        back = store.read(report["run"]["id"])
        assert canonical_json(back["attempts"]) == canonical_json(report["attempts"])
        assert canonical_json(back["summary"]) == canonical_json(report["summary"])
        assert canonical_json(back["plan"]) == canonical_json(report["plan"])
        # per-case tallies: c05 fails in both variants, c03 only in `one`
        tallies = case_tallies(store.db, key)
        assert tallies["one"]["c03"] == [0, 2] and tallies["two"]["c03"] == [2, 2]
        assert tallies["one"]["c05"] == [0, 2] and tallies["two"]["c05"] == [0, 2]
    finally:
        store.close()


def test_import_is_idempotent_and_a_changed_report_replaces_its_run(store_spec, tmp_path):
    _, path = run_into("none", make_suite(tmp_path / "s"))
    store = HistoryStore(store_spec)
    try:
        assert store.store_report(path) == "stored"
        assert store.store_report(path) == "unchanged"
        assert len(list(store.runs())) == 1
        count = store.db.one("SELECT COUNT(*) FROM attempts")[0]
        assert count == N * 4
        assert check_stored(store, path).ok
        # the report changes (a person edits it): the stored run no longer matches ...
        data = json.loads(path.read_text())
        data["attempts"][0]["error"] = "edited"
        path.write_text(json.dumps(data))
        check = check_stored(store, path)
        assert not check.ok
        assert any("SHA-256" in m for m in check.mismatches)
        assert any("attempts['c00', 'one', run 0]: stored attempt differs" in m for m in check.mismatches)
        # ... and importing it again replaces the run, nothing doubled
        assert store.store_report(path) == "replaced"
        assert store.db.one("SELECT COUNT(*) FROM attempts")[0] == count
        assert check_stored(store, path).ok
    finally:
        store.close()


def test_run_list_filters_and_pages(store_spec, tmp_path):
    a = make_suite(tmp_path / "a", name="alpha")
    b = make_suite(tmp_path / "b", name="beta", wrong={"one": {1}, "three": {2}})
    keys = []
    for suite_file, tags in ((a, ["nightly"]), (b, []), (a, []), (b, ["release"])):
        report, _ = run_into(store_spec, suite_file, tags=tags)
        keys.append(report["run"]["id"])
    store = HistoryStore(store_spec)
    try:
        db = store.db
        names = lambda f, **kw: [r["suite"] for r in list_runs(db, f, **kw)[0]]
        assert names(RunFilter(suite="alpha")) == ["alpha", "alpha"]
        assert names(RunFilter(variant="three")) == ["beta", "beta"]
        assert names(RunFilter(tag="release")) == ["beta"]
        assert names(RunFilter(search="ALP")) == ["alpha", "alpha"]
        assert names(RunFilter(status="stopped")) == []
        assert len(list_runs(db, RunFilter(since="2000-01-01"))[0]) == 4
        assert list_runs(db, RunFilter(until="2000-01-01"))[0] == []
        # pages of one cover every run once, newest first
        seen, cursor = [], None
        while True:
            page, cursor = list_runs(db, RunFilter(), limit=1, cursor=cursor)
            seen.extend(r["key"] for r in page)
            if cursor is None:
                break
        everything = [r["key"] for r in list_runs(db, RunFilter(), limit=10)[0]]
        assert seen == everything and len(set(seen)) == 4
        # a run's cases, paged in plan order, with outcome filters
        key = list_runs(db, RunFilter(tag="release"))[0][0]["key"]
        first, nxt = case_page(db, key, limit=5)
        assert [c["case_id"] for c in first] == [f"c{i:02d}" for i in range(5)] and nxt == 4
        rest, end = case_page(db, key, limit=50, cursor=nxt)
        assert [c["case_id"] for c in rest] == [f"c{i:02d}" for i in range(5, N)] and end is None
        failing, _ = case_page(db, key, outcome="failing")
        assert [c["case_id"] for c in failing] == ["c01", "c02"]
        assert [c["case_id"] for c in case_page(db, key, outcome="failing", variant="one")[0]] == ["c01"]
        assert [c["case_id"] for c in case_page(db, key, search="C1")[0]] == [f"c{i}" for i in range(10, N)]
        assert all(c["category"] == "odd" for c in case_page(db, key, category="odd")[0])
    finally:
        store.close()


def test_runs_of_one_second_are_listed_newest_first(store_spec, tmp_path):
    """Two runs of a suite started in the same second (the second's id ends in -2) keep their
    order: the viewer compares the older as A, so a tie broken at random would swap the pair."""
    suite_file = make_suite(tmp_path / "s", name="twice")
    first, _ = run_into(store_spec, suite_file)
    second, _ = run_into(store_spec, suite_file)
    store = HistoryStore(store_spec)
    try:
        listed = [r["run_id"] for r in list_runs(store.db, RunFilter(suite="twice"))[0]]
        paged, cursor = [], None
        while True:
            page, cursor = list_runs(store.db, RunFilter(suite="twice"), limit=1, cursor=cursor)
            paged += [r["run_id"] for r in page]
            if cursor is None:
                break
    finally:
        store.close()
    assert listed == paged == [second["run"]["id"], first["run"]["id"]]


def test_reviews_are_bound_to_outputs_and_join_the_next_report(store_spec, tmp_path):
    suite_file = make_suite(tmp_path / "s")
    report, _ = run_into(store_spec, suite_file)
    attempt = next(a for a in report["attempts"] if a["case_id"] == "c03" and a["variant"] == "one")
    entry = {"case_id": "c03", "input_hash": attempt["input_hash"], "output_hash": attempt["output_hash"],
             "reviewer_id": "ana", "reviewer_kind": "human", "rubric_version": "v1", "ratings": {"correctness": 2},
             "verdict": False, "notes": "wrong total"}
    stale = {**entry, "output_hash": "0" * 64, "reviewer_id": "bo", "notes": "an output no run made"}
    store = HistoryStore(store_spec)
    try:
        store.add_reviews([entry, stale], store.resolve(report["run"]["id"]))
        store.add_reviews([{**entry, "notes": "wrong total, checked twice"}])  # same identity: replaced
        key = store.resolve(report["run"]["id"])
        assert [e["notes"] for e in store.reviews(run=key)] == ["wrong total, checked twice"]
        assert len(store.reviews()) == 2
    finally:
        store.close()
    # the next run of the same cases makes the same outputs: it carries the bound review only
    report2, path2 = run_into(store_spec, suite_file)
    assert report2["reviews"]["human"] == [{**entry, "notes": "wrong total, checked twice"}]
    assert report2["summary"]["reviews"]["human"]["entries"] == 1
    from scoreboard.record.io import load_report
    from scoreboard.record.verify import verify_report

    assert verify_report(load_report(path2)).ok


def test_two_runs_started_in_the_same_second_elsewhere_stay_two_runs(tmp_path, store_spec, monkeypatch):
    # A run's id is a UTC timestamp, unique only in its output folder: two CI jobs writing one
    # store, each running the same suite in its own folder in the same second, had the same
    # store key, and the second run silently overwrote (or mixed with) the first.
    from scoreboard.engine import run as run_module

    monkeypatch.setattr(run_module, "now_iso", lambda: "2026-12-01T12:00:00Z")
    reports = []
    for job in ("a", "b"):
        suite = load_suite(make_suite(tmp_path / job, wrong={"one": {3} if job == "a" else {3, 4, 5}}))
        store = HistoryStore(store_spec)
        try:
            outcome = run(suite, RunOptions(progress=False, store=store, output_json=str(tmp_path / job / "r.json")))
        finally:
            store.close()
        reports.append(outcome.report)
    a, b = (r["run"] for r in reports)
    assert (a["id"], a["started_at"], a["suite"]) == (b["id"], b["started_at"], b["suite"])  # alike but for uid
    assert a["uid"] != b["uid"] and len(a["uid"]) == 16
    store = HistoryStore(store_spec)
    try:
        runs, _ = list_runs(store.db, RunFilter(suite="hist"))
        assert len(runs) == 2
        rates = sorted(fig["pass_rate"] for r in runs for fig in get_run(store.db, r["key"])["figures"]
                       if fig["name"] == "one")
        assert rates == pytest.approx([(N - 3) / N, (N - 1) / N])  # each run's own figures, nothing mixed
        for path in (tmp_path / "a" / "r.json", tmp_path / "b" / "r.json"):
            assert check_stored(store, path).ok  # each report matches its own stored run
    finally:
        store.close()
