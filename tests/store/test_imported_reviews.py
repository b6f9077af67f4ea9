"""Reviews attached with `import reviews` reach the history store the new report is recorded in,
as `store import` of that report stores them: `store reviews` exports them, and a later run (or a
later `import reviews`) of the same outputs in the same project carries them."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from scoreboard.store.history import HistoryStore, _write_reviews
from tests.cli_inprocess import run_cli
from tests.test_probe5_newuser import CASES, jsonl


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    """test_probe5_newuser's `cli` (no API keys, no SCOREBOARD_STORE), in this process."""
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY",
                                                            "SCOREBOARD_STORE")}
    return run_cli(args, cwd, env)


def base_run(tmp_path) -> dict:
    (tmp_path / "cases.jsonl").write_text(jsonl(CASES), encoding="utf-8")
    done = cli(tmp_path, "run", "--cases", "cases.jsonl", "--subject", "mock", "--output", "base.json",
               "--format", "json", "--no-progress")
    assert done.returncode == 0, done.stderr
    return json.loads((tmp_path / "base.json").read_text(encoding="utf-8"))


def reviews_file(path, report: dict, reviewer: str, notes: str, cases=None) -> None:
    hashes = {c["id"]: c["input_hash"] for c in report["plan"]["cases"]}
    entries = [{"case_id": a["case_id"], "input_hash": hashes[a["case_id"]], "output_hash": a["output_hash"],
                "reviewer_id": reviewer, "reviewer_kind": "human", "rubric_version": "v1",
                "ratings": {"correctness": 2}, "verdict": False, "notes": notes}
               for a in report["attempts"] if cases is None or a["case_id"] in cases]
    path.write_text(json.dumps({"entries": entries}), encoding="utf-8")


def test_reviews_imported_into_a_report_reach_the_history_store(tmp_path):
    report = base_run(tmp_path)
    reviews_file(tmp_path / "reviews.json", report, "ana", "echoes the input")
    done = cli(tmp_path, "import", "reviews", "base.json", "reviews.json", "--output", "reviewed.json")
    assert done.returncode == 0, done.stderr
    done = cli(tmp_path, "store", "reviews", "--output", "exported.json")
    assert done.returncode == 0, done.stderr
    exported = json.loads((tmp_path / "exported.json").read_text(encoding="utf-8"))["entries"]
    assert sorted(e["case_id"] for e in exported) == ["n1", "p1", "u1"]
    assert {e["notes"] for e in exported} == {"echoes the input"}
    # `store import` of the same report finds it stored, reviews included
    done = cli(tmp_path, "store", "import", "reviewed.json")
    assert done.returncode == 0, done.stderr
    # and a later run of the same outputs carries them in its report
    done = cli(tmp_path, "run", "--cases", "cases.jsonl", "--subject", "mock", "--output", "later.json",
               "--format", "json", "--no-progress")
    assert done.returncode == 0, done.stderr
    later = json.loads((tmp_path / "later.json").read_text(encoding="utf-8"))
    assert sorted(e["case_id"] for e in later["reviews"]["human"]) == ["n1", "p1", "u1"]
    assert later["summary"]["reviews"]["human"]["outputs"] == 3


def test_a_second_import_into_the_same_project_carries_the_first(tmp_path):
    # the store is the project's body of reviews: importing bob's reviews after ana's gives a
    # report holding both, bound to the same outputs, counted once per output
    report = base_run(tmp_path)
    reviews_file(tmp_path / "ana.json", report, "ana", "by ana", cases={"p1"})
    reviews_file(tmp_path / "bob.json", report, "bob", "by bob", cases={"p1", "n1"})
    assert cli(tmp_path, "import", "reviews", "base.json", "ana.json", "--output", "a.json").returncode == 0
    done = cli(tmp_path, "import", "reviews", "base.json", "bob.json", "--output", "b.json")
    assert done.returncode == 0, done.stderr
    b = json.loads((tmp_path / "b.json").read_text(encoding="utf-8"))
    assert sorted((e["reviewer_id"], e["case_id"]) for e in b["reviews"]["human"]) == [
        ("ana", "p1"), ("bob", "n1"), ("bob", "p1")]
    assert b["summary"]["reviews"]["human"]["outputs"] == 2
    assert cli(tmp_path, "verify", "b.json").returncode == 0
    # with no store (SCOREBOARD_STORE=none) nothing is carried: the report holds what it was given
    done = run_cli(["import", "reviews", "base.json", "bob.json", "--output", "c.json"], tmp_path,
                   {**os.environ, "SCOREBOARD_STORE": "none"})
    assert done.returncode == 0, done.stderr
    c = json.loads((tmp_path / "c.json").read_text(encoding="utf-8"))
    assert sorted((e["reviewer_id"], e["case_id"]) for e in c["reviews"]["human"]) == [("bob", "n1"), ("bob", "p1")]


def test_a_run_end_keeps_a_review_written_in_the_viewer_during_the_run(tmp_path):
    # what a run carried at its start is older than a review written meanwhile: the run's end
    # must not put the old one back
    store = HistoryStore(tmp_path / "history.sqlite")
    entry = {"case_id": "a", "input_hash": "i" * 64, "output_hash": "o" * 64, "reviewer_id": "ana",
             "reviewer_kind": "human", "rubric_version": "v1", "ratings": {}, "verdict": True, "notes": "new"}
    store.add_reviews([entry])  # written in the viewer, after the run started
    stale = {"reviews": {"human": [dict(entry, verdict=False, notes="old")]}}
    with store.db.write() as db:
        _write_reviews(db, "run-key", stale, since="2000-01-01T00:00:00Z")
    assert [e["notes"] for e in store.reviews()] == ["new"]
    # one stored before the run started is replaced by the run's (an `import reviews` correction)
    with store.db.write() as db:
        _write_reviews(db, "run-key", stale, since="2999-01-01T00:00:00Z")
    assert [e["notes"] for e in store.reviews()] == ["old"]
    store.close()


def test_one_label_reviewing_as_a_person_and_as_a_model_is_stored_twice(tmp_path):
    # import reviews keeps "ann" the person and "ann" the model as two records (README); the
    # store keyed reviews without the reviewer kind, so the second overwrote the first
    report = base_run(tmp_path)
    reviews_file(tmp_path / "human.json", report, "ann", "by hand", cases={"p1"})
    entries = json.loads((tmp_path / "human.json").read_text(encoding="utf-8"))["entries"]
    entries.append(dict(entries[0], reviewer_kind="model", verdict=True, notes="by model"))
    (tmp_path / "both.json").write_text(json.dumps({"entries": entries}), encoding="utf-8")
    done = cli(tmp_path, "import", "reviews", "base.json", "both.json", "--output", "both-report.json")
    assert done.returncode == 0, done.stderr
    done = cli(tmp_path, "store", "reviews", "--output", "exported.json")
    assert done.returncode == 0, done.stderr
    exported = json.loads((tmp_path / "exported.json").read_text(encoding="utf-8"))["entries"]
    assert sorted((e["reviewer_kind"], e["notes"]) for e in exported) == [("human", "by hand"),
                                                                          ("model", "by model")]
    # and a later run carries both, each as what it is
    done = cli(tmp_path, "run", "--cases", "cases.jsonl", "--subject", "mock", "--output", "later.json",
               "--format", "json", "--no-progress")
    assert done.returncode == 0, done.stderr
    later = json.loads((tmp_path / "later.json").read_text(encoding="utf-8"))
    assert [e["notes"] for e in later["reviews"]["human"]] == ["by hand"]
    assert [e["notes"] for e in later["reviews"]["model"]] == ["by model"]


def test_a_store_made_before_reviews_were_keyed_by_kind_is_migrated(tmp_path):
    from scoreboard.store.db import schema_version
    from scoreboard.store.migrations import MIGRATIONS

    path = tmp_path / "old.sqlite"
    entry = {"case_id": "a", "input_hash": "i" * 64, "output_hash": "o" * 64, "reviewer_id": "ana",
             "reviewer_kind": "human", "rubric_version": "v1", "ratings": {}, "verdict": True, "notes": "kept"}
    import sqlite3

    # the store as the first schema made it: reviews keyed without the kind, one migration
    db = sqlite3.connect(path)
    for statement in MIGRATIONS[0][1]:
        db.execute(statement)
    db.executescript("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
                     "applied_at TEXT NOT NULL); INSERT INTO schema_migrations VALUES (1, 'first', "
                     "'2026-01-01T00:00:00Z');"
                     "INSERT INTO reviews VALUES ('a', '" + "o" * 64 + "', 'ana', 'v1', '" + "i" * 64 +
                     "', 'human', '{}', 1, 'kept', NULL, '2026-01-01T00:00:00Z');")
    db.commit()
    db.close()
    store = HistoryStore(path)
    assert schema_version(store.db) == len(MIGRATIONS)
    store.add_reviews([dict(entry, reviewer_kind="model", notes="model's")])
    assert sorted((e["reviewer_kind"], e["notes"]) for e in store.reviews()) == [("human", "kept"),
                                                                                ("model", "model's")]
    store.close()
