"""Every command that writes a report takes --output as the JSON report's name: a name another
rendering would have (`new.md`, `new.html`) was taken as a stem and wrote new.md.json,
new.md.md and new.md.html. It is refused in one line before anything is read or written."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.cli_inprocess import run_cli

TRANSCRIPT = {"prompt": "p", "cases": [{"tag": "a", "expectedOutputContains": "ok"}],
              "runs": [{"id": "r1", "tag": "a", "status": "completed", "latency_ms": 5, "tool_calls": [],
                        "output": "ok"}]}


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    """`python -m scoreboard ARGS` run in this process (tests/cli_inprocess.py): the tests are about
    what --output writes and says, not the process."""
    return run_cli(args, cwd)


@pytest.fixture
def report(tmp_path: Path) -> Path:
    (tmp_path / "t.json").write_text(json.dumps(TRANSCRIPT))
    done = cli(tmp_path, "score", "t.json", "--output", "base.json")
    assert done.returncode == 0, done.stderr
    return tmp_path / "base.json"


@pytest.mark.parametrize("command", [
    ["rescore", "base.json"],
    ["score", "t.json"],
    ["import", "comparisons", "base.json", "comparisons.jsonl"],
    ["import", "reviews", "base.json", "reviews.jsonl"],
    ["run", "--cases", "cases.jsonl", "--subject", "mock"],
])
@pytest.mark.parametrize("name, stem, fmt, ext", [("new.md", "new", "md", ".md"),
                                                  ("out/new.HTML", "out/new", "html", ".html"),
                                                  ("r.junit.xml", "r", "junit", ".junit.xml")])
def test_a_report_output_named_like_another_rendering_is_refused_before_anything_is_written(
        report, command, name, stem, fmt, ext):
    folder = report.parent
    (folder / "cases.jsonl").write_text('{"id": "c", "input": "x"}\n')
    before = sorted(p.name for p in folder.rglob("*"))
    done = cli(folder, *command, "--output", name)
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr.strip().splitlines() == [
        f"scoreboard: error: flag --output: --output names the JSON report: give {stem}.json (the {fmt} "
        f"rendering is written beside it, as {stem}{ext})"]
    assert sorted(p.name for p in folder.rglob("*")) == before


def test_a_json_name_or_a_bare_stem_still_writes_the_report(report):
    done = cli(report.parent, "rescore", "base.json", "--output", "again")
    assert done.returncode == 0, done.stderr
    assert (report.parent / "again.json").is_file() and not (report.parent / "again.json.json").exists()
