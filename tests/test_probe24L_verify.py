"""Probe 24L: an adversary editing a report to hide a regression, and a user comparing runs.

A real run of the invoice demo (two variants, 30 cases, 3 runs) is written by the CLI; each test
edits a copy and runs `scoreboard verify`, `rescore` or `compare` on it from the outside.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def sb(*args: str, cwd: Path, timeout: float = 180) -> subprocess.CompletedProcess:
    env = {**os.environ, "SCOREBOARD_STORE": "none"}
    return subprocess.run([sys.executable, "-m", "scoreboard", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> dict:
    """The demo's report, as `scoreboard run` wrote it."""
    root = tmp_path_factory.mktemp("p24l")
    shutil.copytree(ROOT / "examples" / "invoices", root / "invoices")
    cp = sb("run", "invoices/suite.yaml", "--output-dir", "out", cwd=root)
    assert cp.returncode == 0, cp.stderr
    [path] = (root / "out" / "invoices").glob("*.json")
    return json.loads(path.read_text(encoding="utf-8"))


def verify(tmp_path: Path, report: dict, name: str = "r.json") -> tuple[int, str, dict | None]:
    path = tmp_path / name
    path.write_text(json.dumps(report, ensure_ascii=False), encoding="utf-8")
    cp = sb("verify", name, "--json", cwd=tmp_path)
    try:
        data = json.loads(cp.stdout)
    except ValueError:
        data = None
    return cp.returncode, cp.stdout + cp.stderr, data


def paths(data: dict) -> list[str]:
    return [m["path"] for m in data["mismatches"]]


# ---- a statistics version lowered below the build that wrote the report

def test_statistics_version_lowered_below_graders_version_is_a_mismatch(demo, tmp_path):
    """Stating statistics version 6 (whose summaries are not recomputed) let the comparison be
    reversed by hand and the report verify clean, though its graders version 2 was first
    recorded by builds computing statistics 19."""
    r = copy.deepcopy(demo)
    assert r["run"]["versions"]["graders"] == "2"
    r["summary"]["methods"]["version"] = 6
    comp = r["summary"]["comparisons"][0]
    comp["a_wins"], comp["b_wins"] = comp["b_wins"], comp["a_wins"]
    comp["mean_difference"] = -comp["mean_difference"]
    rc, out, data = verify(tmp_path, r)
    assert rc == 1, out
    assert "summary.methods.version" in paths(data)
    [m] = [m for m in data["mismatches"] if m["path"] == "summary.methods.version"]
    assert m["found"] == 6 and m["expected"].startswith("19 or later")
    assert "graders" in m["what"]


def test_statistics_version_below_plan_gates_is_a_mismatch(demo, tmp_path):
    """plan.gates is recorded by builds of statistics 20 or later: one stating 6 was lowered."""
    r = copy.deepcopy(demo)
    r["plan"]["gates"] = {}
    del r["run"]["versions"]["graders"]  # only the gate settings betray the version
    r["summary"]["methods"]["version"] = 6
    rc, out, data = verify(tmp_path, r)
    assert rc == 1, out
    [m] = [m for m in data["mismatches"] if m["path"] == "summary.methods.version"]
    assert m["expected"].startswith("20 or later") and "plan.gates" in m["what"]


def test_report_as_written_verifies(demo, tmp_path):
    rc, out, data = verify(tmp_path, demo)
    assert rc == 0 and data["ok"], out


def test_verify_says_the_renderings_beside_the_report_are_not_checked(demo, tmp_path):
    """The Markdown edited to read 95% beside a clean JSON: verify said 'verified, no mismatch'
    and nothing of the .md a reader opens; it now names each rendering it did not check."""
    (tmp_path / "r.md").write_text("basic: pass rate 95.0%\n", encoding="utf-8")
    (tmp_path / "r.html").write_text("<p>95.0%</p>\n", encoding="utf-8")
    path = tmp_path / "r.json"
    path.write_text(json.dumps(demo, ensure_ascii=False), encoding="utf-8")
    cp = sb("verify", "r.json", cwd=tmp_path)
    assert cp.returncode == 0, cp.stdout
    lines = cp.stdout.splitlines()
    assert "not checked: r.md (a rendering of the JSON" in "\n".join(lines)
    assert any(line.startswith("not checked: r.html") and "--format html" in line for line in lines)
    cp = sb("verify", "r.json", "--json", cwd=tmp_path)
    assert json.loads(cp.stdout)["renderings_not_checked"] == ["r.md", "r.html"]


def test_a_report_cut_mid_way_is_named_as_cut_short(demo, tmp_path):
    """Truncated mid-way, the file read 'not a JSON object (it starts with '{' and ends with ...)',
    which says nothing of what happened to it."""
    text = json.dumps(demo)
    (tmp_path / "cut.json").write_text(text[: len(text) // 2], encoding="utf-8")
    cp = sb("verify", "cut.json", cwd=tmp_path)
    assert cp.returncode == 1
    [line] = cp.stderr.strip().splitlines()
    assert "cut.json" in line and "cut short, or something follows the report" in line
