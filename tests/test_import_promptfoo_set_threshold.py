"""An assert-set threshold promptfoo's own rule decides alike for every output (0.121.20,
AssertionsResult.testResult: the set's weighted mean score >= threshold, a mean over no weight
being 0). The import said "everything converted" and wrote a suite its own loader refused (a
group threshold outside [0, 1] decides nothing). Now: below 0 passes every output, as 0 does, and
is written so; one the mean cannot reach is listed, naming promptfoo's outcome; the suite runs."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.cli_inprocess import run_cli

CONFIG = """prompts: ["Say {{{{x}}}}"]
providers: [echo]
tests:
  - vars: {{x: hello}}
    assert:
      - type: assert-set
        threshold: {threshold}
        assert:
          - type: contains
            value: hello{weight}
          - type: {second}
            value: {value}{weight}
"""


def sb(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return run_cli(args, cwd, {**os.environ, "SCOREBOARD_STORE": "none"})  # in-process


def convert(tmp_path: Path, threshold: float, weight: str = "", second: str = "contains",
            value: str = "Say") -> tuple[subprocess.CompletedProcess, list]:
    (tmp_path / "promptfooconfig.yaml").write_text(CONFIG.format(threshold=threshold, weight=weight,
                                                                 second=second, value=value))
    res = sb("import", "promptfoo", "promptfooconfig.yaml", "--output", "out", cwd=tmp_path)
    case = json.loads((tmp_path / "out" / "cases.jsonl").read_text().splitlines()[0])
    return res, case["graders"]


def runs(tmp_path: Path) -> str:
    res = sb("run", "out/suite.yaml", "--output-dir", "o", cwd=tmp_path)
    assert res.returncode in (0, 3), res.stderr  # the suite loads and runs
    return res.stdout


@pytest.mark.parametrize("threshold", [2, 1.01])
def test_a_threshold_the_mean_cannot_reach_is_listed(tmp_path: Path, threshold: float) -> None:
    res, graders = convert(tmp_path, threshold)
    assert "promptfoo fails it on every output; not converted" in res.stdout
    assert graders == []  # left out, and listed
    runs(tmp_path)


def test_a_threshold_below_zero_passes_every_output_as_zero_does(tmp_path: Path) -> None:
    res, graders = convert(tmp_path, -1)
    assert "everything converted" in res.stdout
    assert graders[0]["group"]["threshold"] == 0
    assert "pass rate 100.0%" in runs(tmp_path)


def test_members_all_of_weight_zero_are_listed(tmp_path: Path) -> None:
    res, graders = convert(tmp_path, 0.5, weight="\n            weight: 0")
    assert "over members that all have weight 0" in res.stdout and "fails every output" in res.stdout
    assert graders == []
    runs(tmp_path)


def test_a_code_members_raw_score_may_pass_one(tmp_path: Path) -> None:
    res, graders = convert(tmp_path, 1.5, second="javascript", value="'2'")
    assert graders[0]["group"]["threshold"] == 1.5
    runs(tmp_path)
