"""`run --dry-run` refuses exactly what a real run refuses (subject and judge specs included),
and `validate` on a suite makes every check a run makes before its first attempt: the gates'
variants, the baseline report, the judge. Each through the CLI, as a user runs it."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.cli_inprocess import run_cli

CASES = "".join(json.dumps({"id": f"c{i}", "input": f"q{i}", "expected": f"q{i}"}) + "\n" for i in range(3))
#: a port nothing listens on: a subject that reached it would fail, so a clean dry run proves no call
CLOSED = "http://127.0.0.1:9/v1"


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    """`python -m scoreboard ARGS` in `cwd`, in-process (these tests are about what it says and writes)."""
    return run_cli(args, cwd, dict(os.environ))


def write(folder: Path, **suite) -> None:
    (folder / "cases.jsonl").write_text(CASES, encoding="utf-8")
    (folder / "s.json").write_text(json.dumps({"cases": "cases.jsonl", **suite}), encoding="utf-8")


def files(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


def one_line(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 1, (proc.args, proc.stdout, proc.stderr)
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("scoreboard: error: "), proc.stderr
    return lines[0]


JUDGED = {"graders": [{"llm-judge": {"rubric": "right?"}}]}

REFUSED = [
    ("subject-typo", {"subject": {"type": "openai", "base_url": CLOSED, "model": "m", "temprature": 0}},
     "field 'subject.temprature'", "unknown field"),
    ("variant-subject-typo", {"variants": {"a": {"subject": "mock"}, "b": {"subject": {
        "type": "http", "url": "http://127.0.0.1:9/x", "outptu_path": "text"}}}}, "field 'variants.b.subject.outptu_path'",
     "unknown field"),
    ("python-module-missing", {"subject": "python:no_such_module_here:answer"}, "no_such_module_here", ""),
    ("command-missing", {"subject": "command:./not-there.sh {input}"}, "not-there.sh", "not found"),
    ("judge-typo", {"subject": "mock", "judge": {"type": "openai", "base_url": CLOSED, "model": "j", "sede": 1},
                    **JUDGED}, "field 'judge.sede'", "unknown field"),
    ("judge-missing", {"subject": "mock", **JUDGED}, "field 'judge'", "needs a judge"),
    ("fail-under-unknown-variant", {"subject": "mock", "fail_under": {"nope": 0.5}}, "field 'fail_under.nope'", "'nope'"),
    ("baseline-missing", {"subject": "mock", "gates": {"baseline": "reports/main.json", "max_regression": 0.1}},
     "field 'gates.baseline'", "not found"),
    ("baseline-not-a-report", {"subject": "mock", "gates": {"baseline": "s.json", "max_regression": 0.1}},
     "s.json", "not a scoreboard report"),
    ("baseline-without-max-regression", {"subject": "mock", "gates": {"baseline": "cases.jsonl"}},
     "field 'gates.max_regression'", "--max-regression"),
]


@pytest.mark.parametrize("name,suite,where,words", REFUSED, ids=[r[0] for r in REFUSED])
def test_dry_run_and_validate_refuse_what_a_run_refuses(tmp_path, name, suite, where, words):
    write(tmp_path, **suite)
    before = files(tmp_path)
    real = one_line(cli(tmp_path, "run", "s.json", "--no-progress", "--output-dir", "out"))
    assert where in real and words in real, real
    if "field" in where and "judge" not in name:
        assert "s.json" in real, real  # a setting of the suite names the suite file
    for args in (["run", "s.json", "--dry-run", "--no-progress", "--output-dir", "out"], ["validate", "s.json"],
                 ["plan", "s.json"], ["plan", "s.json", "--dry-run"]):
        assert one_line(cli(tmp_path, *args)) == real, args
    assert files(tmp_path) == before  # nothing written, by any of them


def test_dry_run_of_a_valid_remote_suite_calls_nothing(tmp_path):
    """A valid spec passes the real checks, then the mock answers: no request reaches the
    (closed) port, and the report records the mock."""
    write(tmp_path, subject={"type": "openai", "base_url": CLOSED, "model": "m", "params": {"temperature": 0}},
          formats=["json"])
    proc = cli(tmp_path, "run", "s.json", "--dry-run", "--no-progress", "--json", "--output-dir", "out")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["run"]["dry_run"] is True
    assert {v["subject"]["type"] for v in report["plan"]["variants"]} == {"mock"}
    assert {a["status"] for a in report["attempts"]} == {"passed"}


def test_validate_accepts_a_suite_whose_baseline_is_a_report(tmp_path):
    write(tmp_path, subject="mock", formats=["json"])
    first = cli(tmp_path, "run", "s.json", "--no-progress", "--output", "reports/main.json")
    assert first.returncode == 0, first.stderr
    write(tmp_path, subject="mock", fail_under={"mock": 0.5},
          gates={"baseline": "reports/main.json", "max_regression": 0.1})
    proc = cli(tmp_path, "validate", "s.json")
    assert proc.returncode == 0 and proc.stdout.startswith("OK: suite"), proc.stderr
    # The baseline is relative to the suite's folder, wherever the command runs from.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    proc = cli(elsewhere, "validate", str(tmp_path / "s.json"))
    assert proc.returncode == 0, proc.stderr
    proc = cli(elsewhere, "run", str(tmp_path / "s.json"), "--no-progress", "--output-dir", "out", "--json")
    assert proc.returncode == 0, proc.stderr
    gates = json.loads(proc.stdout)["gates"]
    assert any(g.get("gate") == "baseline" or "baseline" in json.dumps(g) for g in gates), gates


def test_validate_names_the_first_twenty_variants_and_counts_the_rest(tmp_path):
    """A promptfoo prompts axis can make thousands of variants: the OK line stays one short line."""
    (tmp_path / "c.jsonl").write_text('{"id": "a", "input": "x", "expected": "x"}\n')
    variants = "".join(f"  v{i}: {{subject: mock}}\n" for i in range(30))
    (tmp_path / "suite.yaml").write_text(f"name: many\ncases: c.jsonl\ngraders: [exact]\nvariants:\n{variants}")
    done = run_cli(["validate", "suite.yaml"], tmp_path, {**os.environ, "SCOREBOARD_STORE": "none"})
    assert done.returncode == 0, done.stderr
    assert "30 variants (v0, v1," in done.stdout and "v19, … and 10 more), 1 run" in done.stdout
    assert "v20" not in done.stdout
