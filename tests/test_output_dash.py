"""`--output -` is standard output where a command writes one document (report, schema, plan,
footprint, store reviews), and is refused in one line, before anything runs, where a command
writes files (a file named '-' is never what was meant)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.cli_inprocess import run_cli


def scoreboard(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return run_cli(args, cwd, dict(os.environ))


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "input": f"w{i}", "expected": f"w{i}",
                                                              "grader": "contains"}) + "\n" for i in range(4)))
    (tmp_path / "suite.json").write_text(json.dumps({"name": "s", "cases": "cases.jsonl", "subject": "mock",
                                                     "output_dir": "out", "formats": ["json"]}))
    (tmp_path / "skill.md").write_text("# A skill\nDo the thing.\n")
    return tmp_path


def test_schema_plan_and_footprint_write_their_json_to_stdout_and_no_file_named_dash(work):
    schema = scoreboard(["schema", "--output", "-"], work)
    assert schema.returncode == 0, schema.stderr
    assert json.loads(schema.stdout)["$schema"].startswith("https://json-schema.org/")
    plan = scoreboard(["plan", "suite.json", "--output", "-"], work)
    assert plan.returncode == 0, plan.stderr
    assert json.loads(plan.stdout)["cases"]  # the plan's JSON alone on stdout, as --json gives it
    footprint = scoreboard(["footprint", "skill.md", "--output", "-"], work)
    assert footprint.returncode == 0, footprint.stderr
    assert json.loads(footprint.stdout)["setups"]
    assert not (work / "-").exists()


@pytest.mark.parametrize("argv", [
    ["run", "suite.json", "--no-progress", "--output", "-"],
    ["verify", "REPORT", "--output", "-"],
    ["rescore", "REPORT", "--output", "-"],
    ["compare", "REPORT", "REPORT", "--output", "-"],
    ["aggregate", "REPORT", "REPORT", "--output", "-"],
    ["score", "REPORT", "--output", "-"],
])
def test_a_command_that_writes_files_refuses_dash_in_one_line_before_anything_runs(work, argv):
    first = scoreboard(["run", "suite.json", "--no-progress"], work)
    assert first.returncode == 0, first.stdout + first.stderr
    (report,) = (work / "out" / "s").glob("*.json")
    before = sorted(p.name for p in (work / "out" / "s").iterdir())
    done = scoreboard([str(report) if a == "REPORT" else a for a in argv], work)
    assert done.returncode == 1, done.stdout + done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "--output" in lines[0] and "'-'" in lines[0] and argv[0] in lines[0], done.stderr
    assert not (work / "-").exists()
    assert sorted(p.name for p in (work / "out" / "s").iterdir()) == before  # nothing ran, nothing written


def test_store_reviews_exports_to_stdout(work):
    first = scoreboard(["run", "suite.json", "--no-progress", "--store", "h.sqlite"], work)
    assert first.returncode == 0, first.stdout + first.stderr
    done = scoreboard(["store", "reviews", "--store", "h.sqlite", "--output", "-"], work)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"version": "scoreboard-store", "entries": []}
    assert "0 review(s) written to stdout" in done.stderr
    assert not (work / "-").exists()
