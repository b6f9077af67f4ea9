"""User Python imported from the folder that names it (scoreboard/pyimport.py)."""

from __future__ import annotations

import importlib
import os
import sys

import pytest

from scoreboard.pyimport import import_from


def test_a_module_written_after_its_folder_was_listed_is_still_found(tmp_path):
    # Python's import system caches each folder's listing and refreshes it when the folder's
    # mtime changes; a file written within the clock's resolution of an earlier listing was not
    # found ("No module named ..."), as once in CI for a suite's python subject
    folder = str(tmp_path)
    sys.path.insert(0, folder)
    try:
        importlib.invalidate_caches()
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module("late_subject_p9")  # the folder is listed without it
        listed = os.stat(folder)
        (tmp_path / "late_subject_p9.py").write_text("def answer(text):\n    return 'late'\n", encoding="utf-8")
        os.utime(folder, ns=(listed.st_atime_ns, listed.st_mtime_ns))  # as if in the same clock tick
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module("late_subject_p9")  # the stale listing, as the import system keeps it
        assert import_from("late_subject_p9", [folder]).answer("x") == "late"
    finally:
        sys.path.remove(folder)
        sys.modules.pop("late_subject_p9", None)


def test_a_module_no_folder_holds_is_still_not_found(tmp_path):
    with pytest.raises(ModuleNotFoundError):
        import_from("nowhere_p9_module", [str(tmp_path)])


def test_a_relative_folder_is_the_current_one_after_a_chdir(tmp_path, monkeypatch):
    # a suite named by a relative path gives its folder as '.': the import system's listing of
    # '.' belongs to whatever folder was current when it was made
    for name, word in (("one", "first"), ("two", "second")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "where_p9.py").write_text(f"WORD = {word!r}\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path / "one")
    assert import_from("where_p9", ["."]).WORD == "first"
    monkeypatch.chdir(tmp_path / "two")
    try:
        assert import_from("where_p9", ["."]).WORD == "second"
    finally:
        sys.modules.pop("where_p9", None)
        for entry in [p for p in sys.path if p.startswith(str(tmp_path))]:
            sys.path.remove(entry)
