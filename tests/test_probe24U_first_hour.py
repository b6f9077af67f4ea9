"""Probe 24U: the first hour of a new user, following README.md top to bottom.

Each test runs the CLI the way the README prints it, in a fresh folder, and checks what a
newcomer reads back: one line naming the file, the line, the case and the field they wrote.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.cli_inprocess import run_cli

ROOT = Path(__file__).resolve().parents[1]


def sb(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "SCOREBOARD_STORE": "none"}
    return run_cli(args, cwd, env)  # in-process: no test here is about the process


def write_cases(folder: Path, *records: dict) -> Path:
    path = folder / "cases.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.mark.parametrize("record, field", [
    # the README's own first case names its grader with `grader`: a typo there names `grader`
    ({"id": "a", "input": "hi", "expected": "hello", "grader": "exactt"}, "grader"),
    ({"id": "a", "input": "hi", "expected": "hello", "graders": ["exact", "contans"]}, "graders.1"),
    ({"id": "a", "input": "hi", "expected": "x", "graders": [{"contains": {"patern": "x"}}]}, "graders.0"),
    # typed `fields` shorthand: the bad type is in `fields`, not in a `graders` the case never wrote
    ({"id": "a", "input": "hi", "expected": {"t": 1}, "fields": [{"path": "t", "type": "nubmer"}]}, "fields"),
    ({"id": "a", "input": "hi", "expected": {"t": 1}, "grader": "exact", "fields": [{"path": "t", "type": "nubmer"}]},
     "fields"),
])
def test_a_bad_grader_names_the_field_the_case_wrote(tmp_path: Path, record: dict, field: str) -> None:
    write_cases(tmp_path, {"id": "ok", "input": "x", "expected": "x"}, record)
    cp = sb("validate", "cases.jsonl", cwd=tmp_path)
    assert cp.returncode == 1, cp.stderr
    lines = [line for line in cp.stderr.splitlines() if line.startswith("scoreboard: error:")]
    assert len(lines) == 1, cp.stderr
    assert lines[0].startswith(f"scoreboard: error: cases.jsonl:2, case 'a', field '{field}': "), lines[0]


def test_a_bad_grader_of_a_conversation_turn_names_the_turns_field(tmp_path: Path) -> None:
    doc = {"cases": [{"id": "birds", "conversation": {"topic": "survey", "notes": "47 birds."},
                      "turns": [{"id": "t1", "question": "How many?", "graders": [{"contains": "47"}]},
                                {"id": "t2", "question": "Sure?", "grader": "exactt", "expected": "yes"}]}]}
    (tmp_path / "conv.json").write_text(json.dumps(doc), encoding="utf-8")
    cp = sb("validate", "conv.json", cwd=tmp_path)
    assert cp.returncode == 1, cp.stderr
    assert re.search(r"^scoreboard: error: conv\.json:1, case 'birds/t2', field 'turns\.1\.grader': unknown grader "
                     r"'exactt' \(did you mean 'exact'\?\)", cp.stderr, re.M), cp.stderr


def test_a_suites_bad_grader_still_names_the_suite_setting(tmp_path: Path) -> None:
    write_cases(tmp_path, {"id": "a", "input": "x", "expected": "x"})
    (tmp_path / "suite.yaml").write_text("name: s\ncases: cases.jsonl\ngraders: [exact, contans]\n"
                                         "variants:\n  v: {subject: mock}\n", encoding="utf-8")
    cp = sb("validate", "suite.yaml", cwd=tmp_path)
    assert cp.returncode == 1, cp.stderr
    assert "field 'graders[1]': unknown grader 'contans'" in cp.stderr, cp.stderr


def test_a_csv_given_as_cases_leads_to_an_import_that_works_for_text_answers(tmp_path: Path) -> None:
    """`scoreboard validate c.csv` says to convert it with `import csv --map input=COL,expected=COL`;
    done with a plain-text expected column, the import's refusal says how to keep the text."""
    (tmp_path / "c.csv").write_text("id,input,expected\na,hi,hello\n", encoding="utf-8")
    said = sb("validate", "c.csv", cwd=tmp_path)
    assert said.returncode == 1 and "scoreboard import csv --csv c.csv --map input=COL,expected=COL" in said.stderr
    cp = sb("import", "csv", "--csv", "c.csv", "--map", "input=input,expected=expected,id=id", "--output",
            "cases.jsonl", cwd=tmp_path)
    assert cp.returncode == 1
    (line,) = cp.stderr.strip().splitlines()
    assert "c.csv" in line and "row 2, column 'expected'" in line and "--grader exact" in line, line
    ok = sb("import", "csv", "--csv", "c.csv", "--map", "input=input,expected=expected,id=id", "--grader", "exact",
            "--output", "cases.jsonl", cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    assert json.loads((tmp_path / "cases.jsonl").read_text(encoding="utf-8"))["expected"] == "hello"


def test_a_suite_writing_case_for_cases_is_told_to_write_cases(tmp_path: Path) -> None:
    """`case: one.jsonl` in a suite (one letter short of `cases:`) selects a case id; the error
    said to give `--cases one.jsonl`, a flag, of a key written in the suite."""
    write_cases(tmp_path, {"id": "a", "input": "x", "expected": "x"})
    (tmp_path / "suite.yaml").write_text("name: s\ncase: cases.jsonl\nsubject: mock\n", encoding="utf-8")
    cp = sb("validate", "suite.yaml", cwd=tmp_path)
    assert cp.returncode == 1
    (line,) = cp.stderr.strip().splitlines()
    assert "the suite's case: takes case ids; 'cases.jsonl' is a case file: write cases: cases.jsonl" in line, line
    assert "--cases cases.jsonl" not in line, line
    # the flag spelt one letter short is still answered with the flag
    flag = sb("run", "--case", "cases.jsonl", "--subject", "mock", cwd=tmp_path)
    assert flag.returncode == 1 and "(--case takes a case id; 'cases.jsonl' is a case file: --cases cases.jsonl)" \
        in flag.stderr, flag.stderr


def test_a_csv_given_as_cases_names_the_inspect_columns_it_would_read(tmp_path: Path) -> None:
    """The second way out `validate c.csv` offers, `cases: {format: inspect, path: c.csv}`, reads
    Inspect's `input` and `target` columns: a sheet with an `expected` column then ran ungraded.
    The hint names the columns and how to rename one; followed as printed, the case is graded."""
    (tmp_path / "c.csv").write_text("id,input,expected\na,hi,hi\n", encoding="utf-8")
    said = sb("validate", "c.csv", cwd=tmp_path)
    assert said.returncode == 1
    hint = re.search(r"cases: (\{format: inspect, path: c\.csv, fields: \{target: COL\}\})", said.stderr)
    assert hint, said.stderr
    suite = "name: s\nsubject: mock\ncases: " + hint.group(1).replace("COL", "expected") + "\n"
    (tmp_path / "suite.yaml").write_text(suite, encoding="utf-8")
    ran = sb("run", "suite.yaml", "--no-progress", "--format", "json", "--output-dir", "out", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert "mock: pass rate 100.0%" in ran.stderr + ran.stdout, ran.stderr
