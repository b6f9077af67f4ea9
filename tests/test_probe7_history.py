"""History and the viewer as a user meets them after a run that stopped part way: the lines
`scoreboard history` prints state the cases each variant's interval is over (the report's
`cases`), and the viewer's review form says why it refused a review in words."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.servers.fake_provider import FakeProvider

CASES = 40


def sb(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "scoreboard", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=180, env=dict(os.environ), check=False)


@pytest.fixture(scope="module")
def stopped(tmp_path_factory):
    """A run of 40 cases x 2 runs stopped by its request budget after 10 answers (one at a
    time, so the same 10 every time): the report's variant counts 10 cases, the plan 40."""
    folder = tmp_path_factory.mktemp("stopped")
    (folder / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i:02d}", "input": f"q{i}", "expected": "yes"})
                                                + "\n" for i in range(CASES)))
    with FakeProvider() as server:
        server.set_default("chat", {"reply": "yes"})
        suite = {"name": "partial", "cases": "cases.jsonl", "runs": 2, "concurrency": 1, "formats": ["json"],
                 "graders": [{"exact": {}}],
                 "variants": {"bot": {"subject": {"type": "openai", "base_url": server.base_url + "/v1",
                                                  "model": "m"}}}}
        (folder / "suite.json").write_text(json.dumps(suite))
        done = sb("run", "suite.json", "--no-progress", "--max-requests", "10", "--store", "h.sqlite", cwd=folder)
    assert done.returncode == 2, done.stdout + done.stderr
    report = json.loads(next((folder / "eval-results" / "partial").glob("*.json")).read_text())
    assert report["run"]["status"] == "stopped"
    return folder, report


def test_history_states_the_cases_the_variants_interval_is_over(stopped):
    folder, report = stopped
    figures = report["summary"]["variants"]["bot"]
    assert figures["not_run"] > 0 and figures["cases"] < CASES  # what makes this run a probe
    out = sb("history", "--store", "h.sqlite", cwd=folder)
    assert out.returncode == 0, out.stderr
    line = next(line for line in out.stdout.splitlines() if "bot: pass rate" in line)
    assert f"{figures['cases']} cases; small sample" in line, line
    assert f"{CASES} cases" not in line
    listed = json.loads(sb("history", "--store", "h.sqlite", "--json", cwd=folder).stdout)["runs"][0]
    assert listed["figures"][0]["cases"] == figures["cases"]
    assert listed["cases"] == CASES  # the plan's cases, as before
