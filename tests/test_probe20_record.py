"""Probe 20: the record, round 2 (verify, rescore, compare and the renderers), from the outside.

Reports are made by `scoreboard run` on real files in tmp_path (a Python subject, no network),
then read back, edited, rescored, compared and rendered by the CLI.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.cli_inprocess import run_cli

CASES = [
    {"id": "a|pipe`tick", "input": "alpha one", "expected": "alpha", "graders": [{"contains": "alpha"}]},
    {"id": "b<script>", "input": "beta two", "expected": "beta", "graders": [{"contains": "beta"}]},
    {"id": "c]]>&amp;", "input": "gamma three", "expected": "zzz", "graders": [{"contains": "zzz"}]},
    {"id": "d", "input": "delta four", "expected": "delta", "graders": [{"contains": "delta"}]},
    {"id": "e", "input": "{\"total\": 5}", "expected": {"total": 5}, "graders": [{"json-fields": ["total"]}]},
]

SUBJECT = '''
def answer(input, skill, run, params):
    text = input if isinstance(input, str) else str(input)
    if "delta" in text and run == 1:
        raise RuntimeError("boom | on `delta` <b>x</b> \\x1b[31m\\x0b")
    if "beta" in text and params.get("low"):
        return "nope | ` <i> \\x0c"
    return text
'''

SUITE = {"name": "p20", "cases": "cases.jsonl", "runs": 3, "fail_under": {"hi": 0.5, "lo": 0.9},
         "variants": {"hi": {"subject": {"type": "python", "function": "subj:answer", "model_free": True},
                             "params": {"low": False}},
                      "lo": {"subject": {"type": "python", "function": "subj:answer", "model_free": True},
                             "params": {"low": True}}}}


def sb(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    return run_cli(args, cwd, {**os.environ, "SCOREBOARD_STORE": "none"})  # in-process (`timeout`: callers' sake)


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> Path:
    """The JSON report of a real run: two variants of one subject (differing in params), 3 runs,
    errors, a field grader, gates (one failed), hostile ids and outputs."""
    root = tmp_path_factory.mktemp("probe20")
    (root / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in CASES), encoding="utf-8")
    (root / "subj.py").write_text(SUBJECT, encoding="utf-8")
    (root / "suite.json").write_text(json.dumps(SUITE), encoding="utf-8")
    done = sb("run", "suite.json", "--no-progress", cwd=root)
    assert done.returncode == 2, done.stdout + done.stderr
    (path,) = (root / "eval-results" / "p20").glob("*.json")
    return path


def test_rescore_with_the_same_graders_reproduces_the_summary_and_gates(made, tmp_path):
    # The rescored report's subjects are recorded wrappers of the source's; the comparison said the
    # variants differed in `subject` (and that the model comparison was not measured) though one
    # subject ran both.
    done = sb("rescore", str(made), "--output", "rs.json", "--format", "json", cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    source = json.loads(made.read_text(encoding="utf-8"))
    new = json.loads((tmp_path / "rs.json").read_text(encoding="utf-8"))
    assert source["summary"]["comparisons"][0]["differs_in"] == ["params"]
    assert new["summary"] == source["summary"]
    assert new["gates"] == source["gates"]
    assert sb("verify", "rs.json", cwd=tmp_path).returncode == 0


def test_the_markdown_keeps_a_trailing_control_character_of_an_error_as_every_rendering_does(made, tmp_path):
    # The error ends in a vertical tab; the terminal and JUnit spell it (\x0b), the Markdown's
    # failure item stripped it as whitespace.
    md = sb("report", str(made), "--format", "md", "--output", "-", cwd=tmp_path)
    junit = sb("report", str(made), "--format", "junit", "--output", "-", cwd=tmp_path)
    assert md.returncode == 0 and junit.returncode == 0, md.stderr + junit.stderr
    assert "\\x1b[31m\\x0b" in junit.stdout
    (line,) = [ln for ln in md.stdout.splitlines() if ln.startswith("- **Error**")]
    assert line.endswith("\\x1b[31m\\x0b"), line


def test_a_v2_report_relabelled_v1_is_refused_naming_the_schema_and_the_field(made, tmp_path):
    # v2 added run.executor and run.dry_run; a report holding them under a v1 label verified.
    report = json.loads(made.read_text(encoding="utf-8"))
    assert report["schema"] == "scoreboard.report/v2" and "executor" in report["run"]
    report["schema"] = "scoreboard.report/v1"
    (tmp_path / "r.json").write_text(json.dumps(report), encoding="utf-8")
    done = sb("verify", "r.json", cwd=tmp_path)
    assert done.returncode == 1, done.stdout
    assert "scoreboard.report/v1 report holds no run.executor" in done.stdout
    shown = sb("report", "r.json", "--format", "md", "--output", "-", cwd=tmp_path)
    assert shown.returncode == 1 and len(shown.stderr.strip().splitlines()) == 1, shown.stderr
    assert "r.json" in shown.stderr and "run.executor" in shown.stderr


def test_compare_says_when_the_shared_cases_were_graded_by_different_graders(made, tmp_path):
    # A report and its rescore with another grader hold the same outputs; compare named a
    # +20-point lead with no word that the graders, not the outputs, differed.
    (tmp_path / "g.yaml").write_text('- {contains: "a"}\n', encoding="utf-8")
    done = sb("rescore", str(made), "--graders", "g.yaml", "--output", "rs.json", "--format", "json", cwd=tmp_path)
    assert done.returncode in (0, 2), done.stdout + done.stderr
    apart = sb("compare", str(made), "rs.json", cwd=tmp_path)
    assert "the graders, expected value, threshold, scoring or rubric differ on 5 of the 5 shared cases" \
        in apart.stdout, apart.stdout + apart.stderr
    same = sb("rescore", str(made), "--output", "same.json", "--format", "json", cwd=tmp_path)
    assert same.returncode == 2, same.stderr
    alike = sb("compare", str(made), "same.json", cwd=tmp_path)
    assert alike.returncode == 0 and "rubric differ on" not in alike.stdout, alike.stdout + alike.stderr
