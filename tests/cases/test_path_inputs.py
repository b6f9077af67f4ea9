"""Origin 000: "`input` accepts text or a UTF-8 file path relative to the JSONL file. An `@`
prefix requires file loading; missing files fail early." A plain input that names a regular
file under the case file's folder (inside the root) is that file's text; anything else stays
text; `@` still forces loading and fails when it cannot."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from scoreboard.cases import load_cases
from scoreboard.errors import ConfigError


def write_cases(folder: Path, *inputs: str) -> Path:
    path = folder / "cases.jsonl"
    path.write_text("".join(json.dumps({"id": f"c{i}", "input": x, "expected": "x"}) + "\n"
                            for i, x in enumerate(inputs)))
    return path


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """suite/ holds the case file and docs/; secret.txt lies outside it."""
    (tmp_path / "suite" / "docs").mkdir(parents=True)
    (tmp_path / "suite" / "docs" / "invoice-2.txt").write_text("Invoice 2\nTotal 99.50\n", encoding="utf-8")
    (tmp_path / "secret.txt").write_text("TOP SECRET")
    return tmp_path


def test_a_plain_path_to_a_file_under_the_case_folder_is_loaded(tree):
    path = write_cases(tree / "suite", "docs/invoice-2.txt", "@docs/invoice-2.txt", "2 bags at EUR 10 each")
    plain, forced, text = load_cases(path)
    assert plain.input == forced.input == "Invoice 2\nTotal 99.50\n"
    assert plain.input_hash == forced.input_hash
    assert text.input == "2 bags at EUR 10 each"


def test_text_that_names_no_file_here_stays_text(tree):
    suite = tree / "suite"
    os.symlink(tree / "secret.txt", suite / "link.txt")
    os.mkfifo(suite / "pipe.txt")
    inputs = ["docs/missing.txt", "../secret.txt", str(tree / "secret.txt"), "link.txt", "docs", "pipe.txt",
              " docs/invoice-2.txt", "docs/invoice-2.txt\nplease"]
    cases = load_cases(write_cases(suite, *inputs))  # never blocks on the FIFO, never reads outside
    assert [c.input for c in cases] == inputs
    assert all("SECRET" not in c.input for c in cases)


def test_at_still_forces_loading_and_fails_early(tree):
    suite = tree / "suite"
    for name, message in (("@docs/missing.txt", "not found"), ("@../secret.txt", "climbs out of the root")):
        with pytest.raises(ConfigError, match=message) as info:
            load_cases(write_cases(suite, name))
        assert info.value.field == "input" and info.value.case_id == "c0"


def test_a_wider_root_lets_a_plain_path_climb_to_it(tree):
    (cases,) = load_cases(write_cases(tree / "suite", "../secret.txt"), root=tree)
    assert cases.input == "TOP SECRET"


def test_a_plain_path_to_a_file_that_is_not_utf8_is_an_error(tree):
    (tree / "suite" / "scan.txt").write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(ConfigError, match="input file 'scan.txt' is not valid UTF-8"):
        load_cases(write_cases(tree / "suite", "scan.txt"))


def test_plain_path_input_through_a_run(tree):
    suite = tree / "suite"
    (suite / "echo.py").write_text("def answer(text):\n    return text.splitlines()[0]\n")
    (suite / "cases.jsonl").write_text(json.dumps({"id": "doc", "input": "docs/invoice-2.txt",
                                                   "expected": "Invoice 2"}) + "\n")
    done = subprocess.run([sys.executable, "-m", "scoreboard", "run", "--cases", "cases.jsonl", "--subject",
                           "python:echo:answer", "--no-progress", "--format", "json", "--output-dir", "out"],
                          cwd=suite, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    (report,) = [p for p in (suite / "out").rglob("*.json") if p.parent.parent.name == "out"]
    data = json.loads(report.read_text())
    assert data["plan"]["cases"][0]["input"] == "Invoice 2\nTotal 99.50\n"
    assert data["attempts"][0]["status"] == "passed"


def test_the_folder_is_listed_once_not_stated_per_case(tree, monkeypatch):
    # A plain input is looked up only when its first path component names something in the
    # case file's folder: 2,000 prose inputs cost one listing, no stat each; "./docs/..." and
    # "docs/..." still load.
    from scoreboard.cases import loader

    looked_up = []
    real = loader.os.path.lexists
    monkeypatch.setattr(loader.os.path, "lexists", lambda p: looked_up.append(p) or real(p))
    prose = [f"question {i}: how many bags?" for i in range(2000)]
    cases = load_cases(write_cases(tree / "suite", *prose, "./docs/invoice-2.txt", "docs/invoice-2.txt",
                                   "docs/missing.txt"))
    assert [c.input for c in cases[:2000]] == prose
    assert cases[2000].input == cases[2001].input == "Invoice 2\nTotal 99.50\n"
    assert cases[2002].input == "docs/missing.txt"
    assert len(looked_up) == 3  # only the three that start with a name in the folder


def test_the_folder_listing_compares_names_as_a_folding_file_system_would(tmp_path):
    # On a file system that folds case or normalises names (macOS), "Notes.TXT" or a composed
    # "café.txt" may name a file listed as "notes.txt" or decomposed: those still get their stat.
    import unicodedata

    from scoreboard.cases.loader import FolderNames

    (tmp_path / "notes.txt").write_text("x")
    (tmp_path / unicodedata.normalize("NFD", "café.txt")).write_text("y")
    names = FolderNames(tmp_path)
    assert names.may_name("Notes.TXT") and names.may_name("notes.txt/deeper")
    assert names.may_name(unicodedata.normalize("NFC", "café.txt"))
    assert names.may_name("./anything") and names.may_name("../up")
    assert not names.may_name("question 1: how many?") and not names.may_name("missing/notes.txt")
