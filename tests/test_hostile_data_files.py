"""Hostile data files other than case files, through `python -m scoreboard` as a user runs them:
a `recorded:` subject's outputs file (D5), an Inspect-format CSV dataset (D6), a sheet given to
`import csv` (D7), and a TOML suite that does not parse given to `validate` (D10).

Each must give exit 1 and exactly one line on stderr naming the file, the line (or row) and the
field, read by the same bounded parser as case files (safeparse: depth, no NaN or Infinity, no
key given twice), and write nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.cli_inprocess import run_cli

DEEP = 100_000  # far past Python's recursion limit: plain json.loads raises RecursionError


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    """`python -m scoreboard ARGS` in `cwd`, in-process (these tests are about what it says and writes)."""
    return run_cli(args, cwd, {**os.environ, "SCOREBOARD_STORE": "none"})


def tree(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


def one_error(done: subprocess.CompletedProcess, *fragments: str) -> str:
    """Exit 1, one line on stderr holding every fragment, no internal error."""
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1, (done.returncode, done.stderr[-2000:])
    assert len(lines) == 1, done.stderr[-2000:]
    line = lines[0]
    assert line.startswith("scoreboard: error: "), line
    assert "internal error" not in line and "Traceback" not in done.stderr
    for fragment in fragments:
        assert fragment in line, (fragment, line)
    return line


# ---- D5: recorded outputs files ----------------------------------------------------------

RECORDED = {
    "deep.jsonl": ('{"case_id":"a","output":' + "[" * DEEP + "]" * DEEP + "}\n",
                   ["deep.jsonl:1", "nested deeper than"]),
    "nan.jsonl": ('{"case_id":"a","output":NaN}\n', ["nan.jsonl:1", "case 'a'", "field 'output'", "NaN"]),
    "inf.jsonl": ('{"case_id":"a","output":{"x":[1e999]}}\n',
                  ["inf.jsonl:1", "case 'a'", "field 'output.x.0'", "out of range"]),
    "dupkey.jsonl": ('{"case_id":"a","output":"1","output":"2"}\n', ["dupkey.jsonl:1", "duplicate key 'output'"]),
    "dupcase.jsonl": ('{"case_id":"a","output":"1"}\n{"case_id":"a","output":"2"}\n',
                      ["dupcase.jsonl:2", "case 'a'", "first on line 1"]),
    "duprun.jsonl": ('{"case_id":"a","run":0,"output":"1"}\n\n{"id":"a","run":0,"output":"2"}\n',
                     ["duprun.jsonl:3", "case 'a'", "field 'run'", "run 0", "first on line 1"]),
    "badrun.jsonl": ('{"case_id":"a","run":[0],"output":"1"}\n', ["badrun.jsonl:1", "field 'run'"]),
    "list.json": ('[{"case_id":"a","output":"1"},\n {"case_id":"a","output":{"k":Infinity}}]',
                  ["list.json", "case 'a'", "field 'output.k'", "record #2", "Infinity"]),
    "duplist.json": ('[{"case_id":"a","run":1,"output":"1"},{"case_id":"a","run":1,"output":"2"}]',
                     ["duplist.json", "case 'a'", "record #2", "first on record #1"]),
    "mapping.json": ('{"a": "1", "a": "2"}', ["mapping.json", "duplicate key 'a'"]),
    "deep.json": ("{\"a\": " + "[" * DEEP + "]" * DEEP + "}", ["deep.json", "nested deeper than"]),
}


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_recorded_outputs_file_refused_with_one_line(tmp_path, name):
    text, fragments = RECORDED[name]
    (tmp_path / "c.jsonl").write_text('{"id":"a","input":"x","expected":"1"}\n')
    (tmp_path / name).write_text(text)
    before = tree(tmp_path)
    done = cli(tmp_path, "run", "--cases", "c.jsonl", "--subject", f"recorded:{name}", "--no-progress",
               "--output-dir", "out")
    one_error(done, *fragments)
    assert done.stdout == ""
    assert tree(tmp_path) == before  # no run folder, no report


def test_recorded_outputs_file_refused_by_validate(tmp_path):
    (tmp_path / "c.jsonl").write_text('{"id":"a","input":"x","expected":"1"}\n')
    (tmp_path / "deep.jsonl").write_text('{"case_id":"a","output":' + "[" * DEEP + "]" * DEEP + "}\n")
    (tmp_path / "s.yaml").write_text('name: s\ncases: c.jsonl\nsubject: "recorded:deep.jsonl"\n')
    one_error(cli(tmp_path, "validate", "s.yaml"), "deep.jsonl:1", "nested deeper than")


def test_recorded_run_and_any_run_records_are_not_duplicates(tmp_path):
    """One record for run 0 and one for every run of the same case: the run's own wins."""
    (tmp_path / "c.jsonl").write_text('{"id":"a","input":"x","expected":"first"}\n')
    (tmp_path / "r.jsonl").write_text('{"case_id":"a","run":0,"output":"first"}\n{"case_id":"a","output":"any"}\n')
    done = cli(tmp_path, "run", "--cases", "c.jsonl", "--subject", "recorded:r.jsonl", "--no-progress",
               "--output-dir", "out")
    assert done.returncode == 0, done.stderr


# ---- D6: Inspect-format CSV datasets ------------------------------------------------------

def _inspect_suite(tmp_path: Path, name: str, text: str) -> None:
    (tmp_path / f"{name}.csv").write_text(text, newline="")
    (tmp_path / f"{name}.yaml").write_text(f"name: {name}\ncases: [{{format: inspect, path: {name}.csv}}]\n"
                                           "subject: mock\n")


INSPECT = {
    "deepchoices": ("input,target,choices\nq,A,\"" + "[" * 60_000 + "]" * 60_000 + "\"\n",
                    ["deepchoices.csv:2", "field 'choices'", "nested deeper than"]),
    "nanchoices": ('input,target,choices\nq,A,"[""a"",NaN]"\n',
                   ["nanchoices.csv:2", "field 'choices.1'", "NaN"]),
    "unterminated": ('input,target\n"abc,A\n', ["unterminated.csv:2", "malformed CSV: unexpected end of data"]),
    # O4: the third record starts on file line 5 (the first spans two lines), not "line 3"
    "row5": ('input,target,choices\n"two\nlines",A,"[""a"",""b""]"\nq2,B,"[""a"",""b""]"\nq3,D,"[""a""]"\n',
             ["row5.csv:5", "case '3'", "field 'target'"]),
    "extracells": ("input,target\nq,A,spare\n", ["extracells.csv:2", "more than the header"]),
    "dupcolumn": ("input,target,target\nq,A,B\n", ["dupcolumn.csv:1", "field 'target'", "twice"]),
}


@pytest.mark.parametrize("name", sorted(INSPECT))
def test_inspect_csv_refused_with_one_line(tmp_path, name):
    text, fragments = INSPECT[name]
    _inspect_suite(tmp_path, name, text)
    before = tree(tmp_path)
    done = cli(tmp_path, "validate", f"{name}.yaml")
    one_error(done, *fragments)
    assert tree(tmp_path) == before


def test_inspect_csv_cell_over_the_csv_module_default_limit(tmp_path):
    """A 200,000-character cell (Python's csv cap is 128 KiB) within the file limit is read."""
    _inspect_suite(tmp_path, "big", 'input,target\n"' + "a" * 200_000 + '",A\n')
    done = cli(tmp_path, "validate", "big.yaml")
    assert done.returncode == 0, done.stderr
    assert "OK: suite big: 1 case" in done.stdout


def test_inspect_csv_choices_still_read(tmp_path):
    from scoreboard.cases.datasets import load_dataset_records

    (tmp_path / "d.csv").write_text('id,input,target,choices\n\nq1,"2+2\n?",B,"[""3"", ""4""]"\n', newline="")
    records = load_dataset_records({"format": "inspect", "path": "d.csv"}, tmp_path, tmp_path, 1 << 20, None)
    assert [r["id"] for r in records] == ["q1"]
    assert records[0]["expected"] == "B" and "A) 3\nB) 4" in records[0]["input"]


# ---- D7: import csv ------------------------------------------------------------------------

IMPORTS = {
    "nan": ('input,expected\nhi,"{""a"":NaN}"\n', ["row 2, column 'expected'", "field 'expected.a'", "NaN"]),
    "inf": ('input,expected\nhi,"{""a"":1}"\nho,"{""b"":1e999}"\n',
            ["row 3, column 'expected'", "field 'expected.b'", "out of range"]),
    "infinity": ('input,expected\nhi,"{""a"":-Infinity}"\n', ["row 2, column 'expected'", "field 'expected.a'"]),
    "dupkey": ('input,expected\nhi,"{""c"":1,""c"":2}"\n', ["row 2, column 'expected'", "duplicate key 'c'"]),
    "deep": ('input,expected\nhi,"' + "[" * 10_000 + "]" * 10_000 + '"\n',
             ["row 2, column 'expected'", "nested deeper than"]),
    "surrogate": ('input,expected\nhi,"{""a"":""\\ud800""}"\n',
                  ["row 2, column 'expected'", "field 'expected.a'", "unpaired surrogate"]),
}


@pytest.mark.parametrize("name", sorted(IMPORTS))
def test_import_csv_refuses_what_no_case_file_may_hold(tmp_path, name):
    text, fragments = IMPORTS[name]
    (tmp_path / "x.csv").write_text(text, newline="")
    grader = [] if name != "deep" else ["--grader", "equals"]  # json-fields needs an object
    before = tree(tmp_path)
    done = cli(tmp_path, "import", "csv", "--csv", "x.csv", "--map", "input=input,expected=expected", *grader,
               "--output", "cases.jsonl")
    one_error(done, "x.csv", *fragments)
    assert tree(tmp_path) == before  # nothing written


def test_import_csv_grader_flag_json_is_bounded(tmp_path):
    (tmp_path / "x.csv").write_text('input,expected\nhi,"{""a"":1}"\n')
    done = cli(tmp_path, "import", "csv", "--csv", "x.csv", "--map", "input=input,expected=expected",
               "--grader", '{"json-fields": ["a"], "x": NaN}', "--output", "cases.jsonl")
    one_error(done, "--grader", "NaN")
    assert not (tmp_path / "cases.jsonl").exists()


def test_import_csv_output_validates(tmp_path):
    """What import csv writes, validate accepts (the finite, unique-key JSON it was given)."""
    (tmp_path / "x.csv").write_text('input,expected\nhi,"{""a"":1.5,""b"":[1,2]}"\n')
    done = cli(tmp_path, "import", "csv", "--csv", "x.csv", "--map", "input=input,expected=expected",
               "--output", "cases.jsonl")
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "cases.jsonl").read_text())["expected"] == {"a": 1.5, "b": [1, 2]}
    assert cli(tmp_path, "validate", "cases.jsonl").returncode == 0


# ---- D10: validate on a TOML suite that does not parse ------------------------------------

TOMLS = {
    "broken.toml": ('name = "t"\ncases = "c.jsonl"\nsubject = "mock\n', ["broken.toml", "invalid TOML"]),
    "deep.toml": ('name = "t"\ncases = "c.jsonl"\nsubject = "mock"\nx = ' + "[" * 5000 + "]" * 5000 + "\n",
                  ["deep.toml", "TOML"]),
    "deeper.toml": ('name = "t"\ncases = "c.jsonl"\nsubject = "mock"\nx = ' + "[" * 100 + "]" * 100 + "\n",
                    ["deeper.toml", "nested deeper than"]),
}


@pytest.mark.parametrize("name", sorted(TOMLS))
def test_validate_broken_toml_suite_reports_toml(tmp_path, name):
    text, fragments = TOMLS[name]
    (tmp_path / "c.jsonl").write_text('{"id":"a","input":"x"}\n')
    (tmp_path / name).write_text(text)
    validated = one_error(cli(tmp_path, "validate", name), *fragments)
    assert "invalid JSON" not in validated
    ran = one_error(cli(tmp_path, "run", name, "--no-progress"), *fragments)
    assert validated == ran  # validate says what run says


def test_toml_named_as_a_case_file(tmp_path):
    (tmp_path / "c.toml").write_text('[[cases]]\nid = "a"\ninput = "x"\n')
    line = one_error(cli(tmp_path, "validate", "c.toml"), "c.toml", "JSONL, JSON or YAML")
    assert "invalid JSON" not in line


def test_inspect_csv_records_with_their_file_lines(tmp_path):
    """with_lines: the line each record starts on (for cases_from_records' later errors)."""
    from scoreboard.cases.datasets import load_dataset_records

    (tmp_path / "d.csv").write_text('input,target\n"a\nb",x\n\nc,y\n', newline="")
    pairs = load_dataset_records({"format": "inspect", "path": "d.csv"}, tmp_path, tmp_path, 1 << 20, None,
                                 with_lines=True)
    assert [(line, case["id"]) for line, case in pairs] == [(2, "1"), (5, "2")]  # Inspect's ids


# ---- D11: reports, transcripts and exports nested past what a JSON parser follows ----------

DEEP_DOC = '{"schema":"scoreboard.report/v1","run":' + "[" * DEEP + "]" * DEEP + ',"plan":{},"attempts":[],"summary":{}}'


@pytest.mark.parametrize("args", [
    ["verify", "deep.json"],
    ["report", "deep.json"],
    ["compare", "deep.json", "deep.json"],
    ["rescore", "deep.json", "--output", "new.json"],
    ["aggregate", "deep.json", "deep.json"],
    ["run", "--cases", "c.jsonl", "--subject", "mock", "--baseline", "deep.json", "--max-regression", "0.1",
     "--output-dir", "out"],
    ["score", "--from", "codex", "deep.jsonl"],
], ids=lambda a: a[0] + ("-" + a[2] if a[0] == "score" else ""))
def test_a_document_nested_past_the_parser_is_one_line(tmp_path, args):
    """json.loads raises RecursionError (not ValueError) on 100,000 nested arrays: it was an
    internal error in every command that reads a report or an agent's export."""
    (tmp_path / "deep.json").write_text(DEEP_DOC)
    (tmp_path / "deep.jsonl").write_text("[" * DEEP + "]" * DEEP + "\n")
    (tmp_path / "c.jsonl").write_text('{"id": "a", "input": "x", "expected": "x"}\n')
    before = tree(tmp_path)
    done = cli(tmp_path, *args)
    one_error(done, "deep.json", "nested too deeply to read")
    assert tree(tmp_path) == before


def test_loads_turns_recursion_into_invalid_json():
    from scoreboard.jsonio import TOO_DEEP, loads

    with pytest.raises(ValueError, match="nested too deeply"):
        loads("[" * DEEP + "]" * DEEP)
    with pytest.raises(ValueError, match="nested too deeply"):
        loads(("[" * DEEP + "]" * DEEP).encode())
    assert loads("[[1]]") == [[1]] and TOO_DEEP
