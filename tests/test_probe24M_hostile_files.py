"""Hostile case and suite files (helper 24M): each is refused with one line naming the file,
the line and the field, exit 1, in a child process held to 2 GB of address space."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

PYTHON = sys.executable
ENV = {**os.environ, "SCOREBOARD_STORE": "none", "NO_COLOR": "1"}
_LIMIT_AS = ("import resource, runpy, sys; resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30)); "
             "sys.argv = ['scoreboard', *sys.argv[1:]]; runpy.run_module('scoreboard', run_name='__main__')")


def cli(cwd: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([PYTHON, "-c", _LIMIT_AS, *args], cwd=cwd, env=ENV, capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def one_error(done: subprocess.CompletedProcess) -> str:
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert done.returncode == 1 and len(lines) == 1, (done.returncode, done.stderr[-2000:])
    assert lines[0].startswith("scoreboard: error: ") and len(lines[0]) < 1200, lines[0][:2000]
    return lines[0]


def _suite_dir(tmp_path: Path) -> Path:
    (tmp_path / "c.jsonl").write_text('{"id": "a", "input": "hi", "expected": "hi"}\n')
    return tmp_path


def test_toml_suite_integer_past_pythons_digit_limit_is_one_line_naming_line_and_key(tmp_path):
    # tomllib converts a decimal literal with int(), which raises a plain ValueError past 4,300
    # digits: it escaped as "internal error: ValueError ... sys.set_int_max_str_digits()", exit 2
    d = _suite_dir(tmp_path)
    (d / "s.toml").write_text('name = "s"\ncases = "c.jsonl"\nsubject = "mock"\nruns = ' + "9" * 5000 + "\n")
    line = one_error(cli(d, "validate", "s.toml"))
    assert line.startswith("scoreboard: error: s.toml:4, field 'runs': a number of 5000 characters"), line
    assert "limits.max_number_chars" in line and "set_int_max_str_digits" not in line
    # inside a table's inline value, the key of that line is named
    (d / "t.toml").write_text('name = "s"\ncases = "c.jsonl"\nsubject = "mock"\n\n[variants.a]\n'
                              "params = {x = [1, " + "1_" * 5000 + "1]}\n")
    line = one_error(cli(d, "validate", "t.toml"))
    assert line.startswith("scoreboard: error: t.toml:6, field 'variants.a.params': a number of 10001 characters"), line
