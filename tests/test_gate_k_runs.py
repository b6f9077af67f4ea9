"""A pass@K or pass^K gate with K above the runs per case can never show its figure: it is
refused when the suite loads (exit 1, naming the gate and the runs), not after a whole run that
then fails the gate with 'n/a' (exit 3)."""

from __future__ import annotations

import json
import os
import subprocess
import sys


def scoreboard(args, cwd):
    return subprocess.run([sys.executable, "-m", "scoreboard", *args], cwd=cwd, capture_output=True, text=True,
                          check=False, env=dict(os.environ), timeout=120)


def test_a_pass_k_gate_beyond_the_runs_is_refused_before_anything_runs(tmp_path):
    (tmp_path / "cases.jsonl").write_text(json.dumps({"id": "a", "input": "x", "expected": "x", "grader": "contains"})
                                          + "\n")
    (tmp_path / "suite.json").write_text(json.dumps({"name": "g", "cases": "cases.jsonl", "subject": "mock", "runs": 3,
                                                     "output_dir": "out", "fail_under_metrics": {"pass^5": 0.5}}))
    done = scoreboard(["run", "suite.json", "--no-progress"], tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "suite.json" in done.stderr and "'pass^5' needs at least 5 runs" in done.stderr and "runs 3" in done.stderr
    assert not (tmp_path / "out").exists()
    flag = scoreboard(["run", "suite.json", "--no-progress", "--fail-under-metric", "mock:pass@4=0.5"], tmp_path)
    assert flag.returncode == 1 and "--fail-under-metric" in flag.stderr, flag.stderr
    assert "'mock:pass@4' needs at least 4 runs" in flag.stderr
    # with enough runs the same gate runs and holds
    enough = scoreboard(["run", "suite.json", "--no-progress", "--runs", "5"], tmp_path)
    assert enough.returncode == 0, enough.stdout + enough.stderr
    assert "gate passed: mock: pass^5 100.0%" in enough.stdout
    at_runs = scoreboard(["validate", "suite.json"], tmp_path)
    assert at_runs.returncode == 1 and "'pass^5' needs at least 5 runs" in at_runs.stderr
