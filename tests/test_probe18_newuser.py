"""A new user's first hour on a fresh clone, from the README alone (probe 18): the errors a
newcomer's typical mistakes get (a subfolder, a flag's near twin, a suite folder), run as the
real command (in-process)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.cli_inprocess import run_cli

ROOT = Path(__file__).resolve().parents[1]
KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL")
CASES = '{"id": "a", "input": "hi", "expected": "hi"}\n{"id": "b", "input": "yo", "expected": "yo"}\n'


def scoreboard(*args: str, cwd: Path, **extra: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in KEYS and k != "SCOREBOARD_STORE"}
    env.update({"SCOREBOARD_STORE": "none", "PYTHONPATH": str(ROOT / "src"), **extra})
    env = {k: v for k, v in env.items() if v is not None}
    return run_cli(args, cwd, env)  # in-process: no test here is about the process


def errors(res: subprocess.CompletedProcess) -> list[str]:
    return [line for line in res.stderr.splitlines() if line.startswith("scoreboard: error:")]


def test_a_python_subject_module_not_found_names_the_folder_it_was_looked_for_in(tmp_path):
    # the README's first_line example run from a subfolder said only "No module named
    # 'first_line'", where a command subject names the folder searched
    (tmp_path / "first_line.py").write_text("def answer(text):\n    return text\n")
    (tmp_path / "cases.jsonl").write_text(CASES)
    sub = tmp_path / "sub"
    sub.mkdir()
    res = scoreboard("run", "--cases", "../cases.jsonl", "--subject", "python:first_line:answer",
                     "--output-dir", "out", cwd=sub)
    assert res.returncode == 1, res.stderr
    said = errors(res)
    assert len(said) == 1, res.stderr
    assert "flag --subject, field 'subject.function'" in said[0], said
    assert "No module named 'first_line'" in said[0] and f"in {sub}" in said[0], said
    assert not (sub / "out").exists()
    # a module that is found but itself imports a missing package keeps the plain words
    (sub / "first_line.py").write_text("import no_such_pkg_probe18\ndef answer(text):\n    return text\n")
    res = scoreboard("run", "--cases", "../cases.jsonl", "--subject", "python:first_line:answer", cwd=sub)
    said = errors(res)
    assert res.returncode == 1 and len(said) == 1, res.stderr
    assert "No module named 'no_such_pkg_probe18'" in said[0] and f"in {sub}" not in said[0], said


def test_a_path_typed_in_a_subfolder_that_names_a_file_above_says_so(tmp_path):
    # `cd examples && scoreboard run examples/invoices/suite.yaml` (or `--cases cases.jsonl` from a
    # subfolder) said only "not found": the path names a file from a folder above (the
    # path from here is given back)
    (tmp_path / "examples" / "invoices").mkdir(parents=True)
    (tmp_path / "examples" / "invoices" / "cases.jsonl").write_text(CASES)
    (tmp_path / "examples" / "invoices" / "suite.yaml").write_text("name: s\ncases: cases.jsonl\nsubject: mock\n")
    sub = tmp_path / "examples"
    here = str(sub)
    res = scoreboard("run", "examples/invoices/suite.yaml", "--output-dir", "out", cwd=sub)
    assert res.returncode == 1
    assert errors(res) == [f"scoreboard: error: examples/invoices/suite.yaml: suite file not found in {here} "
                           "(did you mean 'invoices/suite.yaml'?)"], res.stderr
    res = scoreboard("validate", "examples/invoices/cases.jsonl", cwd=sub)
    assert res.returncode == 1
    assert errors(res) == [f"scoreboard: error: examples/invoices/cases.jsonl: not found in {here} "
                           "(did you mean 'invoices/cases.jsonl'?)"], res.stderr
    deeper = tmp_path / "examples" / "invoices" / "docs"
    deeper.mkdir()
    res = scoreboard("run", "--cases", "examples/invoices/cases.jsonl", "--subject", "mock",
                     "--output-dir", "out", cwd=deeper)
    assert res.returncode == 1
    assert errors(res) == [f"scoreboard: error: flag --cases: cases 'examples/invoices/cases.jsonl' not found in "
                           f"{deeper} (did you mean '../cases.jsonl'?)"], res.stderr
    assert not (sub / "out").exists() and not (deeper / "out").exists()
    # nothing above either: no guess, the words as before
    res = scoreboard("validate", "nothing/here.jsonl", cwd=sub)
    assert errors(res) == ["scoreboard: error: nothing/here.jsonl: not found"], res.stderr


def test_history_in_a_subfolder_names_the_store_of_the_folder_above(tmp_path):
    # after the demo in the project's root, `cd examples/invoices && scoreboard history` (or
    # `view`, `store info`) said "no history store here yet": the runs are in the root's store
    (tmp_path / "cases.jsonl").write_text(CASES)
    done = scoreboard("run", "--cases", "cases.jsonl", "--subject", "mock", "--no-progress", cwd=tmp_path,
                      SCOREBOARD_STORE=None)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / ".scoreboard" / "history.sqlite").is_file()
    sub = tmp_path / "examples" / "invoices"
    sub.mkdir(parents=True)
    for command in (("history",), ("store", "info")):
        res = scoreboard(*command, cwd=sub, SCOREBOARD_STORE=None)
        assert res.returncode == 1, (command, res.stderr)
        said = errors(res)
        assert len(said) == 1, res.stderr
        assert said[0].startswith("scoreboard: error: .scoreboard/history.sqlite, field 'store': no history store "
                                  "here yet"), said
        assert f"the runs made in {tmp_path} are in its store: --store ../../.scoreboard/history.sqlite" in said[0], said
        assert not (sub / ".scoreboard").exists()
    # the hint is a working one
    res = scoreboard("history", "--store", "../../.scoreboard/history.sqlite", cwd=sub, SCOREBOARD_STORE=None)
    assert res.returncode == 0 and "cases" in res.stdout, res.stderr


def test_a_case_file_given_to_case_instead_of_cases_is_named_for_what_it_is(tmp_path):
    # `--case cases.jsonl` (one letter short of --cases) is a case-id filter: it said "no cases:
    # give --cases FILE" without a run suite, and "--case names an unknown case id" with one
    (tmp_path / "cases.jsonl").write_text(CASES)
    (tmp_path / "suite.yaml").write_text("name: s\ncases: cases.jsonl\nsubject: mock\n")
    res = scoreboard("run", "--case", "cases.jsonl", "--subject", "mock", "--output-dir", "out", cwd=tmp_path)
    assert res.returncode == 1
    assert errors(res) == ["scoreboard: error: field 'cases': no cases: give --cases FILE or 'cases:' in the suite "
                           "(--case takes a case id; 'cases.jsonl' is a case file: --cases cases.jsonl)"], res.stderr
    res = scoreboard("run", "suite.yaml", "--case", "cases.jsonl", "--output-dir", "out", cwd=tmp_path)
    assert res.returncode == 1
    assert errors(res) == ["scoreboard: error: flag --case: --case names an unknown case id 'cases.jsonl' "
                           "(--case takes a case id; 'cases.jsonl' is a case file: --cases cases.jsonl)"], res.stderr
    assert not (tmp_path / "out").exists()
    # an id that is no file gets the words it got
    res = scoreboard("run", "suite.yaml", "--case", "zzz", "--output-dir", "out", cwd=tmp_path)
    assert errors(res) == ["scoreboard: error: flag --case: --case names an unknown case id 'zzz'"], res.stderr


def test_a_suite_folder_whose_suite_file_has_another_extension_names_that_file(tmp_path):
    # `scoreboard run evals` where evals/ holds suite.yml (or .toml, .json: a suite file may be
    # any of them) said "is a directory without suite.yaml", and validate called it an empty
    # gold directory ("no document with a NAME.gold.json file")
    folder = tmp_path / "evals"
    folder.mkdir()
    (folder / "cases.jsonl").write_text(CASES)
    (folder / "suite.yml").write_text("name: s\ncases: cases.jsonl\nsubject: mock\n")
    want = ["scoreboard: error: evals: is a directory without suite.yaml (it holds suite.yml: give that file, "
            f"{os.path.join('evals', 'suite.yml')})"]
    for command in ("run", "plan", "validate"):
        res = scoreboard(command, "evals", cwd=tmp_path)
        assert res.returncode == 1, (command, res.stderr)
        assert errors(res) == want, (command, res.stderr)
    assert not (tmp_path / "eval-results").exists()
    res = scoreboard("validate", "evals/suite.yml", cwd=tmp_path)
    assert res.returncode == 0 and "OK: suite s" in res.stdout, res.stderr
    # a folder holding neither a suite file nor gold documents says both were looked for
    empty = tmp_path / "nothing"
    empty.mkdir()
    res = scoreboard("validate", "nothing", cwd=tmp_path)
    assert res.returncode == 1
    said = errors(res)
    assert len(said) == 1 and said[0].startswith("scoreboard: error: nothing: ") and "suite.yaml" in said[0] \
        and "NAME.gold.json" in said[0], said
