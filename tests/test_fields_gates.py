"""Origin 002's CI rule on field accuracy: `--fail-under-fields RATE` (overall field accuracy,
fields correct over fields graded) and the baseline gate over field accuracy beside the one
over pass rate, end to end through the CLI."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from scoreboard.stats.intervals import binom_two_sided_p
from tests.cli_inprocess import run_cli

# Case q<i> gets the fields listed for it in WRONG wrong (a JSON env var), every run.
SUBJECT = '''
import json, os

def answer(text):
    wrong = json.loads(os.environ.get("WRONG", "{}")).get(text, [])
    return json.dumps({"total": 2 if "total" in wrong else 1, "name": "x" if "name" in wrong else text})
'''
FIELDS = [{"path": "total", "type": "integer"}, {"path": "name", "type": "string"}]


def scoreboard(args: list[str], cwd: Path, **env) -> subprocess.CompletedProcess:
    return run_cli(args, cwd, {**os.environ, **env})


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "subj.py").write_text(SUBJECT)
    lines = [json.dumps({"id": f"c{i}", "input": f"q{i}", "expected": {"total": 1, "name": f"q{i}"},
                         "fields": FIELDS}) for i in range(10)]
    (tmp_path / "cases.jsonl").write_text("\n".join(lines) + "\n")
    return tmp_path


def run(work: Path, out: str, *extra: str, wrong: dict | None = None) -> subprocess.CompletedProcess:
    return scoreboard(["run", "--cases", "cases.jsonl", "--subject", "python:subj:answer", "--name", "g",
                       "--output-dir", out, "--no-progress", "--format", "json", *extra], work,
                      WRONG=json.dumps(wrong or {}))


def report_of(work: Path, out: str) -> tuple[Path, dict]:
    (path,) = sorted((work / out / "g").glob("*.json"))
    return path, json.loads(path.read_text())


def test_fail_under_fields_gates_the_overall_field_accuracy(work):
    wrong = {"q0": ["total"]}  # 19 of 20 fields right: 95%
    low = run(work, "low", "--fail-under-fields", "0.96", wrong=wrong)
    assert low.returncode == 3, low.stderr
    _, report = report_of(work, "low")
    (gate,) = report["gates"]
    assert (gate["gate"], gate["metric"], gate["threshold"], gate["passed"]) == ("fail-under-metric", "fields", 0.96,
                                                                               False)
    assert gate["value"] == pytest.approx(0.95) and "field accuracy 95.0% < 96.0%" in gate["description"]
    assert "gate FAILED" in low.stdout and "field accuracy 95.0%" in low.stdout
    ok = run(work, "ok", "--fail-under-fields", "0.95", wrong=wrong)
    assert ok.returncode == 0, ok.stderr
    path, _ = report_of(work, "ok")
    assert scoreboard(["verify", str(path)], work).returncode == 0  # the gate is recomputed from the record
    # The same gate as --fail-under-metric fields=RATE.
    same = run(work, "same", "--fail-under-metric", "fields=0.96", wrong=wrong)
    assert same.returncode == 3 and report_of(work, "same")[1]["gates"][0]["metric"] == "fields"


@pytest.mark.parametrize("value, message", [
    ("1.5", "--fail-under-fields rate must be between 0 and 1"),
    ("lots", "--fail-under-fields takes RATE or VARIANT=RATE"),
    ("nope=0.9", "names an unknown variant 'nope'"),
])
def test_fail_under_fields_bad_values_are_one_line_errors(work, value, message):
    done = run(work, "bad", "--fail-under-fields", value)
    assert done.returncode == 1 and message in done.stderr and "Traceback" not in done.stderr
    assert not (work / "bad").exists()


def test_baseline_gate_over_field_accuracy_beside_pass_rate(work):
    # Baseline: q0-q3 miss one field each (pass rate 60%, fields 16/20 = 80%). Now: the same
    # four cases miss both fields (pass rate still 60%, fields 12/20 = 60%).
    assert run(work, "base", wrong={f"q{i}": ["total"] for i in range(4)}).returncode == 0
    base, _ = report_of(work, "base")
    worse = {f"q{i}": ["total", "name"] for i in range(4)}
    done = run(work, "now", "--baseline", str(base), "--max-regression", "0.1", wrong=worse)
    assert done.returncode == 3, done.stderr
    _, report = report_of(work, "now")
    rate_gate, field_gate = report["gates"]
    assert rate_gate["gate"] == "baseline" and rate_gate["passed"] and rate_gate["value"] == pytest.approx(0.0)
    assert field_gate["gate"] == "baseline-fields" and not field_gate["passed"]
    assert field_gate["baseline_rate"] == pytest.approx(0.8) and field_gate["current_rate"] == pytest.approx(0.6)
    assert field_gate["value"] == pytest.approx(-0.2) and field_gate["shared_cases"] == 10
    assert (field_gate["worse"], field_gate["better"]) == (4, 0)
    assert field_gate["sign_test_p"] == pytest.approx(binom_two_sided_p(4, 4))
    assert "field accuracy 60.0% vs 80.0% on 10 shared cases" in field_gate["description"]
    assert "sign test p=0.1250" in field_gate["description"]
    assert "gate FAILED" in done.stdout
    # Within the allowed drop, or not significant when significance is required: passes.
    assert run(work, "wide", "--baseline", str(base), "--max-regression", "0.25", wrong=worse).returncode == 0
    sig = run(work, "sig", "--baseline", str(base), "--max-regression", "0.1", "--require-significance",
              wrong=worse)
    assert sig.returncode == 0, sig.stdout
    # A baseline that graded no field has no field gate.
    (work / "plain.jsonl").write_text(json.dumps({"id": "c0", "input": "q0", "expected": "q0"}) + "\n")
    plain = scoreboard(["run", "--cases", "plain.jsonl", "--subject", "python:subj:answer", "--name", "g",
                        "--output-dir", "plain", "--no-progress", "--format", "json"], work)
    assert plain.returncode == 0
    plain_base, _ = report_of(work, "plain")
    again = run(work, "again", "--baseline", str(plain_base), "--max-regression", "0.1")
    assert [g["gate"] for g in report_of(work, "again")[1]["gates"]] == ["baseline"]
    assert again.returncode == 0
