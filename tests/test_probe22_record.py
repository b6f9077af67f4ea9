"""Probe 22: the record, round 3 (verify of this session's fields; rescore's gates), from the
outside: a real run of a Python subject in tmp_path, edited by hand, verified and rescored by the CLI."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from scoreboard.stats.methods import STATS_VERSION
from tests.cli_inprocess import run_cli

SUBJECT = '''
def answer(input, skill, run, params):
    if "beta" in input and params.get("low"):
        return "nope"
    return input
'''
CASES = [{"id": "a", "input": "alpha", "graders": [{"contains": "alpha"}], "category": "x"},
         {"id": "b", "input": "beta", "graders": [{"contains": "beta"}], "category": "x"},
         {"id": "c", "input": "gamma", "graders": [{"contains": "gamma"}]}]
SUITE = {"name": "p", "cases": "cases.jsonl", "runs": 2, "fail_under": {"hi": 0.5, "lo": 0.9},
         "variants": {"hi": {"subject": {"type": "python", "function": "subj:answer", "model_free": True},
                             "params": {"low": False}},
                      "lo": {"subject": {"type": "python", "function": "subj:answer", "model_free": True},
                             "params": {"low": True}}}}


def sb(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return run_cli(args, cwd, {**os.environ, "SCOREBOARD_STORE": "none"})


@pytest.fixture
def made(tmp_path: Path) -> tuple[Path, dict]:
    (tmp_path / "subj.py").write_text(SUBJECT)
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in CASES))
    (tmp_path / "suite.json").write_text(json.dumps(SUITE))
    done = sb("run", "suite.json", "--no-progress", "--format", "json", cwd=tmp_path)
    assert done.returncode == 3, done.stdout + done.stderr  # lo fails its 90% gate
    (path,) = (tmp_path / "eval-results" / "p").glob("*.json")
    assert sb("verify", str(path), cwd=tmp_path).returncode == 0
    return path, json.loads(path.read_text())


def edited(made, change, name: str = "e.json") -> Path:
    path, report = made
    doc = json.loads(json.dumps(report))
    change(doc)
    out = path.parent.parent.parent / name
    out.write_text(json.dumps(doc))
    return out


def test_rescore_gates_by_the_plans_settings_not_a_threshold_lowered_by_hand(made):
    def lowered(doc):  # the gates block CI trusts: lo's 90% floor made 50% and passed
        gate = doc["gates"][1]
        gate.update(threshold=0.5, passed=True, description="lo: pass rate 66.7% ≥ 50.0%")
    source = edited(made, lowered)
    assert "gates[1].threshold" in sb("verify", str(source), cwd=source.parent).stdout
    # before: the rescored report took the lowered 0.5 as its setting, passed the gate and verified clean
    done = sb("rescore", str(source), "--output", "r.json", "--format", "json", cwd=source.parent)
    assert done.returncode == 3 and "gate FAILED: lo: pass rate" in done.stdout, done.stdout + done.stderr
    rescored = json.loads((source.parent / "r.json").read_text())
    assert rescored["plan"]["gates"] == {"fail_under": {"hi": 0.5, "lo": 0.9}}
    assert [g["passed"] for g in rescored["gates"]] == [True, False]
    assert sb("verify", "r.json", cwd=source.parent).returncode == 0


@pytest.mark.parametrize("change, said", [
    (lambda d: d["run"]["versions"].__setitem__("graders", "1"), f"graders version 1, in a report of statistics version {STATS_VERSION}"),
    (lambda d: d["run"]["versions"].pop("graders"), f"no graders version, in a report of statistics version {STATS_VERSION}"),
])
def test_a_graders_version_lowered_to_hide_an_edited_grade_is_a_mismatch(made, change, said):
    def forged(doc):  # a reason reworded by hand, the version lowered so the difference reads as a grader's change
        doc["attempts"][0]["grades"][0]["reason"] = "checked by hand"
        change(doc)
    path = edited(made, forged)
    done = sb("verify", str(path), cwd=path.parent)
    # before: 'verified, no mismatch', the edited grade listed as graded by version 1
    assert done.returncode == 1, done.stdout
    assert f"run.versions.graders: {said}" in done.stdout, done.stdout
    assert "attempts[0].grades[0].reason: grade differs" in done.stdout, done.stdout


def test_gate_settings_taken_out_of_a_version_20_report_are_a_mismatch(made):
    def cut(doc):  # with plan.gates gone, no gate was compared with any setting
        del doc["plan"]["gates"]
        gate = doc["gates"][1]
        gate.update(threshold=0.5, passed=True, description="lo: pass rate 66.7% ≥ 50.0%")
    path = edited(made, cut)
    done = sb("verify", str(path), cwd=path.parent)
    assert done.returncode == 1, done.stdout  # before: verified, no mismatch
    assert "plan.gates: the report holds gates but no settings for them" in done.stdout, done.stdout
