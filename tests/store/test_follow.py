"""A large run's history rows written by a child process that follows the attempt log
(store/follow.py): the same rows as a run that writes them itself, the run stored from its report
when the child fails, and only complete attempt lines read from a log that is still growing."""

from __future__ import annotations

import json
import sys

from scoreboard.engine.pipeline import RunOptions, run
from scoreboard.hashing import canonical_json
from scoreboard.store import follow
from scoreboard.store.check import check_stored
from scoreboard.store.follow import FollowedHistoryStore, LogFollower
from scoreboard.store.history import HistoryStore
from scoreboard.suite.load import load_suite

from .test_store import N, make_suite


def run_followed(spec: str, suite_file, monkeypatch, command=None):
    monkeypatch.setattr(FollowedHistoryStore, "follow_from", 1)  # every run counts as large
    started = []
    real = follow.subprocess.Popen

    def popen(args, **kw):
        if args != follow.CHILD:  # git, ...
            return real(args, **kw)
        started.append(args)
        return real(command or args, **kw)

    monkeypatch.setattr(follow.subprocess, "Popen", popen)
    store = FollowedHistoryStore(spec, tags=["nightly"])
    try:
        outcome = run(load_suite(suite_file), RunOptions(progress=False, store=store))
    finally:
        store.close()
    return outcome, started


def test_a_followed_run_is_stored_as_its_report_says(store_spec, tmp_path, monkeypatch):
    outcome, started = run_followed(store_spec, make_suite(tmp_path / "s"), monkeypatch)
    assert started == [follow.CHILD]  # the rows came from the child
    report, path = outcome.report, outcome.paths["json"]
    store = HistoryStore(store_spec)
    try:
        check = check_stored(store, path)
        assert check.ok, check.mismatches
        assert check.checked["attempts"] == N * 2 * 2 and check.checked["report_sha256"]
        (entry,) = list(store.runs())
        assert entry.status == "completed"
        key = store.resolve(report["run"]["id"])
        row = store.db.one("SELECT source, attempts FROM runs WHERE key = ?", (key,))
        assert row == ("live", N * 4)
        assert [t for (t,) in store.db.all("SELECT tag FROM run_tags WHERE run_key = ?", (key,))] == ["nightly"]
        back = store.read(report["run"]["id"])
        assert canonical_json(back["attempts"]) == canonical_json(report["attempts"])
        assert canonical_json(back["summary"]) == canonical_json(report["summary"])
    finally:
        store.close()


def test_the_child_writes_the_run_and_its_cases_sent_a_batch_at_a_time(tmp_path, monkeypatch):
    # The run's row and cases are written by the child too, from the plan's cases sent a few
    # to a line (never the whole plan as one message): positions and rows as the report says.
    monkeypatch.setattr(follow, "CASE_BATCH", 3)
    spec = str(tmp_path / "hist" / "history.sqlite")
    outcome, started = run_followed(spec, make_suite(tmp_path / "s"), monkeypatch)
    assert started == [follow.CHILD]
    store = HistoryStore(spec)
    try:
        check = check_stored(store, outcome.paths["json"])
        assert check.ok, check.mismatches
        key = store.resolve(outcome.report["run"]["id"])
        ids = [c for (c,) in store.db.all("SELECT case_id FROM cases WHERE run_key = ? ORDER BY position", (key,))]
        assert ids == [c["id"] for c in outcome.report["plan"]["cases"]] and len(ids) > 3
        assert [t for (t,) in store.db.all("SELECT tag FROM run_tags WHERE run_key = ?", (key,))] == ["nightly"]
    finally:
        store.close()


def test_a_failed_child_leaves_the_run_to_be_stored_from_its_report(tmp_path, monkeypatch, capsys):
    spec = str(tmp_path / "hist" / "history.sqlite")
    dies = [sys.executable, "-c", "import sys; sys.stdin.readline(); sys.exit(3)"]
    outcome, started = run_followed(spec, make_suite(tmp_path / "s"), monkeypatch, command=dies)
    assert started
    assert "storing the run from its report" in capsys.readouterr().err
    store = HistoryStore(spec)
    try:
        check = check_stored(store, outcome.paths["json"])
        assert check.ok, check.mismatches
        assert check.checked["attempts"] == N * 4
    finally:
        store.close()


def test_the_child_finishes_the_rows_once_the_json_report_is_written(tmp_path, monkeypatch):
    # The child is told the end when the JSON report is complete, before the other formats
    # render (it finishes the rows meanwhile): a run whose Markdown cannot be written is still
    # stored whole, from the JSON report that was.
    import pytest

    from scoreboard.engine import reports
    from scoreboard.errors import ReportWriteError

    told = []
    real_end = FollowedHistoryStore._end

    def end(self, child, head, paths):
        told.append(sorted(paths))
        real_end(self, child, head, paths)

    def no_markdown(json_path, *args, **kwargs):
        assert told == [["json"]]  # the child already has the end
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(FollowedHistoryStore, "_end", end)
    monkeypatch.setattr(reports, "render_reports", no_markdown)
    spec = str(tmp_path / "hist" / "history.sqlite")
    suite = make_suite(tmp_path / "s")
    with pytest.raises(ReportWriteError, match="No space left"):
        run_followed(spec, suite, monkeypatch)
    assert told == [["json"]]
    (json_path,) = (tmp_path / "s" / "out" / "hist").glob("*.json")
    store = HistoryStore(spec)
    try:
        check = check_stored(store, json_path)
        assert check.ok, check.mismatches
        assert check.checked["attempts"] == N * 4 and check.checked["report_sha256"]
        (entry,) = list(store.runs())
        assert entry.status == "completed"
    finally:
        store.close()


def test_the_follower_reads_only_complete_attempt_lines(tmp_path):
    class Seen:
        def __init__(self):
            self.records = []

        def attempt(self, record):
            self.records.append(record)

    log = tmp_path / "attempts.jsonl"
    first = {"case_id": "a", "variant": "v", "run": 0, "status": "passed"}
    request = {"kind": "request", "id": "r1", "status": "done"}  # the ledger's, not an attempt
    second = {"case_id": "b", "variant": "v", "run": 0, "status": "failed"}
    torn = json.dumps(second).encode()
    log.write_bytes(json.dumps(first).encode() + b"\n" + json.dumps(request).encode() + b"\n" + torn[:9])
    seen = Seen()
    follower = LogFollower(seen, log, 0)
    follower.read()
    assert seen.records == [first]  # the torn line waits for its end
    with open(log, "ab") as handle:
        handle.write(torn[9:] + b"\n")
    follower.read()
    assert seen.records == [first, second]
    follower.read()
    assert seen.records == [first, second]  # nothing read twice


def test_a_small_run_writes_its_own_rows(tmp_path, monkeypatch):
    started = []
    real = follow.subprocess.Popen

    def popen(args, **kw):
        if args == follow.CHILD:
            started.append(args)
        return real(args, **kw)

    monkeypatch.setattr(follow.subprocess, "Popen", popen)
    spec = str(tmp_path / "hist" / "history.sqlite")
    store = FollowedHistoryStore(spec)
    try:
        outcome = run(load_suite(make_suite(tmp_path / "s")), RunOptions(progress=False, store=store))
    finally:
        store.close()
    assert not started
    store = HistoryStore(spec)
    try:
        assert check_stored(store, outcome.paths["json"]).ok
    finally:
        store.close()
