"""A suite's name as reports, folders and the history carry it (words.safe_name)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from scoreboard.words import NAME_BYTES, safe_name

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("given, kept", [
    ("Évaluation", "Évaluation"),           # the accented letter was dropped: 'valuation'
    ("E\u0301valuation", "Évaluation"),      # decomposed: one letter once composed (NFC)
    ("評価 2026", "評価-2026"),
    ("checkout/flow", "checkout-flow"),
    ("a\u202eb", "a-b"),                     # a direction override is no part of a folder name
    ("../..", "suite"),
    ("support_v2.1", "support_v2.1"),
])
def test_letters_of_any_script_are_kept_and_separators_are_one_dash(given, kept):
    assert safe_name(given, "suite") == kept


def test_a_long_name_is_cut_on_a_character_boundary():
    name = safe_name("é" * 300, "suite")
    assert len(name.encode()) <= NAME_BYTES and name == "é" * (NAME_BYTES // 2)


def test_a_run_of_a_suite_with_an_accented_or_long_name_keeps_it(tmp_path):
    (tmp_path / "c.jsonl").write_text('{"id": "a", "input": "x", "expected": "x"}\n')
    for name in ("Évaluation", "a" * 300):
        (tmp_path / "s.yaml").write_text(f"name: {name}\ncases: c.jsonl\nsubject: {{type: mock}}\ngraders: [exact]\n",
                                         encoding="utf-8")
        done = subprocess.run([sys.executable, "-m", "scoreboard", "run", "s.yaml", "--format", "json"], cwd=tmp_path,
                              capture_output=True, text=True, env={**os.environ, "SCOREBOARD_STORE": "none",
                                                                   "PYTHONPATH": str(ROOT / "src")})
        assert done.returncode == 0, done.stdout + done.stderr
        shown = safe_name(name, "suite")
        (report,) = (tmp_path / "eval-results" / shown).glob("*.json")
        assert json.loads(report.read_text(encoding="utf-8"))["run"]["suite"] == shown
    assert "Évaluation" in os.listdir(tmp_path / "eval-results")
