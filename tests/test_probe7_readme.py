"""README second pass (fresh7): what the manual promises, checked against the tree."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from scoreboard.store.db import open_database
from scoreboard.viewer.app import DEFAULT_DIMENSIONS
from scoreboard.viewer.reviews import review_from_form
from tests.store.test_store import make_suite


def scoreboard(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "scoreboard", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600)


@pytest.fixture(scope="module")
def stored(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("stored")
    make_suite(folder)
    done = scoreboard("run", "suite.json", "--no-progress", cwd=folder)
    assert done.returncode in (0, 3), done.stderr
    return folder / ".scoreboard" / "history.sqlite"


def test_viewer_default_dimensions_make_a_review_import_reviews_reads(stored):
    # README: the viewer rates on its default dimensions and stores "the same record `import
    # reviews` makes". Every default dimension must be one a review record can hold.
    db = open_database(str(stored))
    try:
        key, = db.one("SELECT key FROM runs ORDER BY started_at LIMIT 1")
        output_hash, = db.one("SELECT output_hash FROM attempts WHERE run_key = ? AND case_id = 'c03' LIMIT 1", (key,))
        form = {"run": key, "case_id": "c03", "output_hash": output_hash, "reviewer_id": "ana",
                "rubric_version": "v1", "verdict": "pass", "notes": "fine",
                "ratings": {name: 4 for name in DEFAULT_DIMENSIONS}}
        entry, _ = review_from_form(db, form, DEFAULT_DIMENSIONS)
        assert entry["ratings"] == {name: 4 for name in DEFAULT_DIMENSIONS}
    finally:
        db.close()


def test_view_refuses_a_dimension_no_review_can_hold(tmp_path):
    # a dimension outside the review record made every review written with it a 400 from the page
    done = scoreboard("view", "--dimension", "charm", "--store", str(tmp_path / "none.sqlite"), cwd=tmp_path)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "charm" in lines[0] and "correctness, usefulness, coherence, creativity" in lines[0]
    assert not (tmp_path / "none.sqlite").exists()


def test_verify_counts_one_code_grade_in_the_singular(tmp_path):
    (tmp_path / "cases.jsonl").write_text('{"id": "a", "input": "hi", "expected": "hi"}\n')
    (tmp_path / "suite.yaml").write_text('name: one\ncases: cases.jsonl\nsubject: mock\n'
                                         'graders: [{python: "output == expected"}]\n')
    done = scoreboard("run", "suite.yaml", "--no-progress", "--output", "r.json", "--format", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    done = scoreboard("verify", "r.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "not recomputable offline: python (1 grade, first attempts[0].grades[0])" in done.stdout, done.stdout
