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


def _suite_with_helper(folder, verdict: str, entry: str) -> None:
    folder.mkdir()
    (folder / "helpers_p10.py").write_text(f"VERDICT = {verdict!r}\n", encoding="utf-8")
    (folder / entry).write_text("import helpers_p10\n\ndef check(*args, **kwargs):\n"
                                "    return helpers_p10.VERDICT\n", encoding="utf-8")


def test_two_suites_whose_code_imports_a_same_named_helper_each_get_their_own(tmp_path):
    # the pytest plugin (or a notebook) loads several suites in one process; each grader file and
    # python subject imports `helpers_p10` from beside it, and the second got the first's
    from scoreboard.graders.code import load_callable

    _suite_with_helper(tmp_path / "a", "from a", "checks_p10a.py")
    _suite_with_helper(tmp_path / "b", "from b", "checks_p10b.py")
    _suite_with_helper(tmp_path / "c", "from c", "subject_p10c.py")
    _suite_with_helper(tmp_path / "d", "from d", "subject_p10d.py")
    try:
        fn_a, _ = load_callable({"file": str(tmp_path / "a" / "checks_p10a.py"), "function": "check"}, "grader")
        fn_b, _ = load_callable({"file": str(tmp_path / "b" / "checks_p10b.py"), "function": "check"}, "grader")
        assert (fn_a(), fn_b()) == ("from a", "from b")
        sub_c = import_from("subject_p10c", [str(tmp_path / "c")])
        sub_d = import_from("subject_p10d", [str(tmp_path / "d")])
        assert (sub_c.check(), sub_d.check()) == ("from c", "from d")
        assert fn_a() == "from a"  # what was loaded keeps its own helper
    finally:
        for name in [n for n in sys.modules if n.startswith(("helpers_p10", "subject_p10"))]:
            del sys.modules[name]
        for folder in "abcd":
            if str(tmp_path / folder) in sys.path:
                sys.path.remove(str(tmp_path / folder))


def test_a_user_folder_never_drops_the_standard_library(tmp_path):
    import json

    (tmp_path / "json.py").write_text("x = 1\n", encoding="utf-8")
    (tmp_path / "subject_p10e.py").write_text("def f():\n    return 1\n", encoding="utf-8")
    try:
        import_from("subject_p10e", [str(tmp_path)])
        assert sys.modules["json"] is json
    finally:
        sys.modules.pop("subject_p10e", None)
        sys.path.remove(str(tmp_path))
