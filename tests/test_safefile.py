"""Confinement as a property: over random relative paths in a tree of folders, FIFOs and
symlinks (some leading inside the root, some outside, some broken or looping), an `@` input is
read iff its real location lies inside the root and it is a regular file; otherwise loading
the case file is one ConfigError on the input field that leaks nothing of what lies outside."""

from __future__ import annotations

import json
import os
import stat
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from scoreboard.cases import load_cases
from scoreboard.errors import ConfigError
from scoreboard.safefile import FileRefused, check_regular, read_inside, read_regular

SECRET = "OUTSIDE-THE-ROOT-7f3a"
SEGMENTS = ["a.txt", "b.txt", "sub", "deeper", "..", ".", "in_link", "out_link", "dir_in", "dir_out", "abs_in",
            "abs_out", "loop", "broken", "fifo", "dev", "secret.txt", "outside", "root", "nope", "up"]

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs and symlinks")


@pytest.fixture(scope="module")
def world():
    """T/root/{a.txt, sub/{b.txt, deeper/, fifo, links...}}, T/outside/{secret.txt, c.txt}; the
    case file sits in T/root/sub and the root is T/root."""
    with tempfile.TemporaryDirectory() as folder:
        t = Path(folder)
        root, sub, outside = t / "root", t / "root" / "sub", t / "outside"
        (sub / "deeper").mkdir(parents=True)
        outside.mkdir()
        (root / "a.txt").write_text("A inside", encoding="utf-8")
        (sub / "b.txt").write_text("B inside", encoding="utf-8")
        (sub / "deeper" / "a.txt").write_text("deep A", encoding="utf-8")
        (outside / "secret.txt").write_text(SECRET, encoding="utf-8")
        (outside / "a.txt").write_text(SECRET + " a", encoding="utf-8")
        os.mkfifo(sub / "fifo")
        links = {"in_link": "../a.txt", "out_link": "../../outside/secret.txt", "dir_in": "..",
                 "dir_out": "../../outside", "abs_in": str(root / "a.txt"), "abs_out": str(outside),
                 "loop": "loop", "broken": "nowhere", "dev": "/dev/null", "up": "../.."}
        for name, target in links.items():
            os.symlink(target, sub / name)
        yield root, sub


def _expected(root: Path, sub: Path, name: str) -> str | None:
    """The oracle: the text when the path must be read, None when it must be refused."""
    full = os.path.join(sub, name)
    real = os.path.realpath(full)
    root_real = os.path.realpath(root)
    inside = real == root_real or real.startswith(root_real + os.sep)
    try:
        regular = stat.S_ISREG(os.stat(full).st_mode)
    except OSError:
        regular = False
    if not (inside and regular):
        return None
    with open(real, encoding="utf-8") as handle:
        return handle.read()


paths = st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=6).map("/".join)


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=paths)
@example(name="../a.txt")
@example(name="dir_in/a.txt")
@example(name="dir_out/secret.txt")
@example(name="up/outside/secret.txt")
@example(name="deeper/../../a.txt")
@example(name="deeper/../../../outside/secret.txt")
@example(name="dir_in/sub/dir_in/sub/in_link")
@example(name="abs_out/../root/a.txt")
@example(name="fifo")
@example(name="loop/a.txt")
def test_an_at_input_is_read_iff_inside_the_root_and_regular(world, name):
    root, sub = world
    expected = _expected(root, sub, name)
    case_file = sub / "cases.jsonl"
    case_file.write_text(json.dumps({"id": "p", "input": "@" + name, "expected": "x"}) + "\n", encoding="utf-8")
    try:
        if expected is not None:
            (case,) = load_cases(case_file, root=root)
            assert case.input == expected
        else:
            with pytest.raises(ConfigError) as info:
                load_cases(case_file, root=root)
            err = info.value
            assert (err.case_id, err.field, err.line) == ("p", "input", 1)
            assert SECRET not in str(err) and "\n" not in str(err)
    finally:
        case_file.unlink()


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=paths)
def test_read_inside_agrees_with_the_oracle(world, name):
    """The same property one level down: read_inside returns the bytes or raises FileRefused."""
    root, sub = world
    expected = _expected(root, sub, name)
    if expected is None:
        with pytest.raises(FileRefused):
            read_inside(name, sub, root, limit=1 << 20, limit_name="limit")
    else:
        assert read_inside(name, sub, root, limit=1 << 20, limit_name="limit").decode() == expected


def test_the_case_files_own_folder_is_the_default_root(world):
    root, sub = world
    case_file = sub / "cases.jsonl"
    case_file.write_text(json.dumps({"id": "p", "input": "@../a.txt", "expected": "x"}) + "\n", encoding="utf-8")
    try:
        with pytest.raises(ConfigError, match="climbs out"):
            load_cases(case_file)
        assert load_cases(case_file, root=root)[0].input == "A inside"
    finally:
        case_file.unlink()


def test_command_line_paths_are_not_confined_but_must_be_regular(world, tmp_path):
    root, sub = world
    outside_secret = root.parent / "outside" / "secret.txt"
    assert read_regular(outside_secret, limit=100, limit_name="x").decode() == SECRET
    for special in (sub / "fifo", Path("/dev/null")):
        with pytest.raises(FileRefused, match="not a regular file"):
            check_regular(special)
        with pytest.raises(FileRefused, match="not a regular file"):
            read_regular(special, limit=100, limit_name="x")
    with pytest.raises(FileRefused, match="21 bytes, over the limit of 3"):
        read_regular(outside_secret, limit=3, limit_name="x")
    with pytest.raises(FileRefused, match="NUL"):
        check_regular("a\x00b")
