"""An output place that cannot be written is bad usage, found before anything runs: one line
naming the place and the setting, exit 1 (it was an internal error, exit 2)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    (tmp_path / "c.jsonl").write_text('{"id": "a", "input": "x", "expected": "x"}\n')
    return subprocess.run([sys.executable, "-m", "scoreboard", "run", "--cases", "c.jsonl", "--subject", "mock",
                           "--no-progress", *args], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "src")})


def test_output_under_a_file_is_a_one_line_error(tmp_path):
    (tmp_path / "blocker").write_text("a file, not a folder")
    done = _run(tmp_path, "--output", "blocker/r.json")
    assert done.returncode == 1
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("scoreboard: error: flag --output, blocker/r") and "not a directory" in line
    assert "internal error" not in done.stderr


def test_output_dir_under_a_file_is_a_one_line_error(tmp_path):
    (tmp_path / "blocker").write_text("a file, not a folder")
    done = _run(tmp_path, "--output-dir", "blocker/x")
    assert done.returncode == 1
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("scoreboard: error: flag --output-dir: 'blocker' is a file, not a folder"), line
    assert "blocker/x" in line
    assert (tmp_path / "blocker").read_text() == "a file, not a folder"


def test_a_bad_grader_in_the_suite_names_the_suite_file(tmp_path):
    (tmp_path / "c.jsonl").write_text('{"id": "a", "input": "x"}\n')
    (tmp_path / "s.yaml").write_text('name: g\ncases: c.jsonl\nsubject: mock\ngraders: [{regex: {patterns: ["("]}}]\n'
                                     'defaults: {graders: ["python-file:nope.py:f"]}\n')
    done = subprocess.run([sys.executable, "-m", "scoreboard", "validate", "s.yaml"], cwd=tmp_path, text=True,
                          capture_output=True, timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert done.returncode == 1
    # each bad grader named by its place, every one said (the defaults' too), one line each
    regex, python = done.stderr.strip().splitlines()
    assert regex.startswith("scoreboard: error: s.yaml:4, field 'graders[0]': grader 'regex': invalid regex")
    assert python.startswith("scoreboard: error: s.yaml:5, field 'defaults.graders[0]': ") and "nope.py" in python


def test_a_bad_suite_grader_does_not_hide_a_bad_case_grader(tmp_path):
    # The suite's bad grader stopped the load at once, named only as field 'graders', and the
    # case's unknown grader went unsaid; now each is one line, the suite's by its place.
    (tmp_path / "c.jsonl").write_text('{"id": "a", "input": "x", "expected": "x", "graders": ["containz"]}\n'
                                      '{"id": "b", "input": "y", "expected": "y"}\n')
    (tmp_path / "s.yaml").write_text('name: g\ncases: c.jsonl\nsubject: mock\n'
                                     'graders: [exact, {python: "python-file:fehlt.py:check"}]\n')
    done = subprocess.run([sys.executable, "-m", "scoreboard", "validate", "s.yaml"], cwd=tmp_path, text=True,
                          capture_output=True, timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert done.returncode == 1
    suite_line, case_line = done.stderr.strip().splitlines()
    assert suite_line.startswith("scoreboard: error: s.yaml:4, field 'graders[1]': grader 'python': python file")
    assert case_line.startswith("scoreboard: error: c.jsonl:1, case 'a', field 'graders.0': unknown grader 'containz'")
