"""Cases written inline in a suite file (probe 24P): `cases: [{id: a, input: ..., expected: ...}]`,
as promptfoo's inline `tests:` and Inspect's `dataset=[Sample(...)]` are written, mixed with case
files, validated by the case loader, their errors naming the suite file's line, their paths
confined to the suite's folder, covered by the plan's fixture_hash and the suite's limits.
Every command runs as a user types it (`python -m scoreboard`'s main, in this process:
tests/cli_inprocess.py), offline (the mock subject)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.cli_inprocess import run_cli

ROOT = Path(__file__).resolve().parents[1]


def scoreboard(*args: str, cwd: Path, store: str = "none") -> subprocess.CompletedProcess:
    env = {**os.environ, "SCOREBOARD_STORE": store, "PYTHONPATH": str(ROOT / "src")}
    env.pop("OPENAI_API_KEY", None)
    return run_cli(args, cwd, env)


SUITE = """\
name: capitals
subject: {type: mock, outputs: {fr: Paris}}
graders: [exact]
cases:
  - id: fr
    input: What is the capital of France?
    expected: Paris
  - more.jsonl
  - {id: it, input: "@q.txt", graders: [{contains: Rome}]}
"""


@pytest.fixture
def suite_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "evals"
    folder.mkdir()
    (folder / "suite.yaml").write_text(SUITE)
    (folder / "more.jsonl").write_text('{"id": "es", "input": "Madrid", "expected": "Madrid"}\n')
    (folder / "q.txt").write_text("Is Rome the capital of Italy?\n")
    return folder


def test_inline_cases_mixed_with_a_case_file_validate_plan_and_run_in_order(suite_dir, tmp_path):
    # the suite ran from another folder: its @q.txt is read from the suite's folder
    proc = scoreboard("validate", "evals/suite.yaml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "OK: suite capitals: 3 cases, 1 variant (mock), 1 run"
    proc = scoreboard("plan", "evals/suite.yaml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    listed = [line.split()[0] for line in proc.stdout.split("  cases:\n")[1].split("  variants:")[0].splitlines()]
    assert listed == ["fr", "es", "it"]  # in the order the suite lists them
    proc = scoreboard("run", "evals/suite.yaml", "--dry-run", "--output-dir", "dry", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    store = tmp_path / "h.sqlite"
    proc = scoreboard("run", "evals/suite.yaml", "--output", "r.json", cwd=tmp_path,
                      store=str(store))
    assert proc.returncode == 0, proc.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    cases = {c["id"]: c for c in report["plan"]["cases"]}
    assert list(cases) == ["fr", "es", "it"]
    assert cases["it"]["input"] == "Is Rome the capital of Italy?\n"
    assert all(a["status"] == "passed" for a in report["attempts"]), report["attempts"]
    # the history store holds the run and its inline cases like any others
    proc = scoreboard("history", "--suite", "capitals", "--store", str(store), "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert '"capitals"' in proc.stdout and report["run"]["id"] in proc.stdout
    # and a report of them takes outputs made elsewhere, bound by the inline case's input hash
    entries = {"entries": [{"case_id": "fr", "input_hash": cases["fr"]["input_hash"], "provider": "x",
                            "model": "m", "model_version": "1", "settings": {}, "output": "Paris",
                            "generated_at": "2026-01-01T00:00:00Z"}]}
    (tmp_path / "c.json").write_text(json.dumps(entries))
    proc = scoreboard("import", "comparisons", "r.json", "c.json", "--output", "n.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("name,text,error", [
    ("s.yaml", "subject: mock\ncases:\n  - {id: a, input: hi}\n  - id: b\n    input: yo\n    threshold: 'x'\n",
     "s.yaml:4, case 'b', field 'threshold': must be a number (got 'x')"),
    ("s.yaml", "subject: mock\ncases:\n  - {id: a, input: hi}\n\n  - {id: e, inptu: y}\n",
     "s.yaml:5, case 'e', field 'inptu': unknown field (did you mean 'input'?)"),
    ("s.toml", 'subject = "mock"\n\n[[cases]]\nid = "a"\ninput = "hi"\n\n[[cases]]\nid = "b"\ninput = "yo"\n'
               'tags = "x"\n',
     "s.toml:7, case 'b', field 'tags': must be a list (got 'x')"),
    ("s.json", '{"subject": "mock",\n "cases": [\n  {"id": "a", "input": "hi"},\n  {"id": "b",\n'
               '   "input": "yo", "tags": "x"}\n ]}\n',
     "s.json:4, case 'b', field 'tags': must be a list (got 'x')"),
])
@pytest.mark.parametrize("command", ["validate", "plan", "run"])
def test_an_inline_case_error_names_the_suite_line_case_and_field(tmp_path, name, text, error, command):
    (tmp_path / name).write_text(text)
    proc = scoreboard(command, name, cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.strip().splitlines() == [f"scoreboard: error: {error}"]


def test_ids_are_unique_across_inline_cases_and_case_files(tmp_path):
    (tmp_path / "more.jsonl").write_text('{"id": "a", "input": "x"}\n')
    (tmp_path / "s.yaml").write_text("subject: mock\ncases:\n  - more.jsonl\n  - {id: a, input: hi}\n"
                                     "  - {id: b, input: hi}\n  - {id: b, input: yo}\n")
    proc = scoreboard("validate", "s.yaml", cwd=tmp_path)
    assert proc.returncode == 1
    assert sorted(proc.stderr.strip().splitlines()) == [
        "scoreboard: error: s.yaml:4, case 'a', field 'id': duplicate case id (also in more.jsonl:1)",
        "scoreboard: error: s.yaml:6, case 'b', field 'id': duplicate case id (first on line 5)"]


def test_an_inline_case_path_is_confined_to_the_suite_folder(tmp_path):
    (tmp_path / "secret.txt").write_text("secret\n")
    folder = tmp_path / "evals"
    folder.mkdir()
    (folder / "s.yaml").write_text('subject: mock\ncases:\n  - {id: a, input: hi}\n  - {id: b, input: "@../secret.txt"}\n')
    proc = scoreboard("validate", "evals/s.yaml", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.strip() == (f"scoreboard: error: evals/s.yaml:4, case 'b', field 'input': input file "
                                   f"'../secret.txt' climbs out of the root {folder} (give --root DIR to widen it)")
    # a plain input naming a file outside stays text, as in a case file
    (folder / "s.yaml").write_text("subject: mock\ncases:\n  - {id: b, input: ../secret.txt}\n")
    proc = scoreboard("run", "evals/s.yaml", "--output", "r.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "r.json").read_text())["plan"]["cases"][0]["input"] == "../secret.txt"
    # --root widens it, as for a case file
    (folder / "s.yaml").write_text('subject: mock\ncases:\n  - {id: b, input: "@../secret.txt"}\n')
    proc = scoreboard("validate", "evals/s.yaml", "--root", str(tmp_path), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr


def test_resume_refuses_a_run_whose_inline_case_changed(suite_dir, tmp_path):
    proc = scoreboard("run", "evals/suite.yaml", "--output-dir", "out", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    (run_dir,) = [p for p in (tmp_path / "out" / "capitals").iterdir() if p.is_dir()]
    suite = suite_dir / "suite.yaml"
    suite.write_text(suite.read_text().replace("expected: Paris", "expected: Lyon"))
    proc = scoreboard("run", "--resume", str(run_dir), cwd=tmp_path)
    assert proc.returncode == 1
    assert "field 'fixture_hash': cannot resume: the cases changed since the run started" in proc.stderr


@pytest.mark.parametrize("limits,cases,error", [
    ("{max_cases: 2}", "  - {id: a, input: x}\n  - {id: b, input: y}\n  - {id: c, input: z}\n",
     "s.yaml:6, case 'c': the suite has more than 2 cases (limits.max_cases)"),
    ("{max_depth: 3}", "  - {id: a, input: x, metadata: {a: {b: {c: 1}}}}\n",
     "s.yaml:4, case 'a', field 'metadata.a.b': nested deeper than 3 levels (limits.max_depth)"),
    ("{max_number_chars: 3}", "  - {id: a, input: x, metadata: {n: 123456}}\n",
     "s.yaml:4, case 'a', field 'metadata.n': a number over 3 digits (limits.max_number_chars)"),
    ("{max_values: 12}", "  - {id: a, input: x}\n  - {id: b, input: y, tags: [p, q, r]}\n",
     "s.yaml:5: the suite's case records hold more than 12 values in all (objects, arrays, keys and scalars; "
     "limits.max_values)"),
    ("{max_file_bytes: 60}", "  - {id: a, input: x}\n  - {id: b, input: y, tags: [p, q, r]}\n",
     "s.yaml:3, field 'cases': a suite holding cases written inline is 111 bytes, over the limit of 60 "
     "(limits.max_file_bytes)"),
])
def test_the_suites_limits_apply_to_inline_cases(tmp_path, limits, cases, error):
    (tmp_path / "s.yaml").write_text(f"subject: mock\nlimits: {limits}\ncases:\n{cases}")
    proc = scoreboard("validate", "s.yaml", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.strip() == f"scoreboard: error: {error}"


def test_a_case_document_given_as_the_suite_is_still_refused(tmp_path):
    (tmp_path / "c.yaml").write_text("name: c\ncases: [{id: a, input: hi, expected: x}]\n")
    proc = scoreboard("run", "c.yaml", cwd=tmp_path)
    assert proc.returncode == 1
    assert "this is a case document" in proc.stderr and "--cases" in proc.stderr
