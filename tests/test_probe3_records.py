"""Honest records, found by probing from outside: a report read by every reader the same way,
a model-free subject's failure costing a known zero, tags that a person can read, `--output -`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SUBJECT = '''
import time

def answer(text):
    if "boom" in text:
        raise RuntimeError("kaboom")
    if "slow" in text:
        time.sleep(0.5)
    return text
'''


def scoreboard(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "scoreboard", *args], cwd=cwd, capture_output=True, text=True,
                          check=False, env=dict(os.environ), timeout=120)


def one_error_line(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("scoreboard: error:"), proc.stderr
    assert "Traceback" not in proc.stderr
    return lines[0]


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "subj.py").write_text(SUBJECT)
    (tmp_path / "cases.jsonl").write_text("".join(
        json.dumps({"id": f"c{i}", "input": text, "expected": text}) + "\n"
        for i, text in enumerate(["q0", "boom", "q2"])))
    (tmp_path / "suite.yaml").write_text(
        "name: s\ncases: cases.jsonl\noutput_dir: out\nvariants:\n"
        "  a:\n    subject: {type: python, function: 'subj:answer', model_free: true}\n")
    return tmp_path


def run_report(work: Path, *extra: str) -> Path:
    proc = scoreboard(["run", "suite.yaml", "--no-progress", "--format", "json", *extra], work)
    assert proc.returncode in (0, 2), proc.stdout + proc.stderr
    reports = sorted((work / "out" / "s").glob("*.json"))
    assert reports, proc.stdout + proc.stderr
    return reports[-1]


# -- 2: a model-free subject that fails still ran no model ----------------------------------

def test_a_model_free_python_subject_that_raises_records_a_known_zero(work):
    report = json.loads(run_report(work).read_text())
    failed = [a for a in report["attempts"] if a["case_id"] == "c1"]
    assert failed and "kaboom" in failed[0]["error"]
    m = failed[0]["measurements"]
    assert (m["input_tokens"], m["output_tokens"], m["cost_usd"], m["requests"]) == (0, 0, 0.0, 0)
    assert isinstance(m["latency_ms"], (int, float))  # as measured
    totals = report["summary"]["variants"]["a"]["measurements"]
    assert totals["cost_usd"]["total"] == 0.0 and totals["requests"]["total"] == 0


def test_a_model_free_subject_cut_by_the_timeout_records_a_known_zero(work):
    (work / "cases.jsonl").write_text(json.dumps({"id": "s", "input": "slow", "expected": "slow"}) + "\n")
    (work / "suite.yaml").write_text(
        "name: s\ncases: cases.jsonl\noutput_dir: out\ntimeout_ms: 50\nvariants:\n"
        "  a:\n    subject: {type: python, function: 'subj:answer', model_free: true, thread: true}\n")
    report = json.loads(run_report(work).read_text())
    m = report["attempts"][0]["measurements"]
    assert report["attempts"][0]["error"], report["attempts"][0]
    assert (m["input_tokens"], m["output_tokens"], m["cost_usd"], m["requests"]) == (0, 0, 0.0, 0)


def test_a_subject_that_may_call_a_model_and_fails_keeps_its_usage_unknown(work):
    (work / "suite.yaml").write_text(
        "name: s\ncases: cases.jsonl\noutput_dir: out\nvariants:\n"
        "  a:\n    subject: {type: python, function: 'subj:answer'}\n")
    report = json.loads(run_report(work).read_text())
    failed = [a for a in report["attempts"] if a["case_id"] == "c1"][0]
    assert failed["measurements"]["cost_usd"] is None and failed["measurements"]["requests"] is None
