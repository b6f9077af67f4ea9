"""The offline agent-task example end to end through the CLI: a scripted command agent in
ordinary and hostile modes, a real shop fixture on loopback, checks reading its state; the
report's figures, verify and rescore; "not isolated" without a sandbox and the suite that
requires isolation refusing to run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from scoreboard.tasks.sandbox import bwrap_path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "agent-task"


def scoreboard(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "scoreboard", *args], cwd=cwd, capture_output=True, text=True,
                          env=env or dict(os.environ), timeout=300, check=False)


def report_of(folder: Path) -> tuple[Path, dict]:
    (path,) = sorted(folder.glob("agent-task/*.json"))
    return path, json.loads(path.read_text())


@pytest.fixture
def example(tmp_path):
    target = tmp_path / "agent-task"
    shutil.copytree(EXAMPLE, target)
    return target


@pytest.mark.skipif(bwrap_path() is None, reason="bubblewrap does not work here (apt-get install bubblewrap)")
def test_example_runs_offline_with_figures_verify_and_rescore(example, tmp_path):
    done = scoreboard("run", "suite.yaml", "--output-dir", str(tmp_path / "out"), cwd=example)
    assert done.returncode == 0, done.stderr
    path, report = report_of(tmp_path / "out")
    figures = report["summary"]["tasks"]["variants"]
    assert figures["ordinary"]["benign_utility"]["value"] == 1.0
    assert figures["ordinary"]["utility_under_attack"] is None
    for name in ("hostile", "hostile-result"):
        assert figures[name]["utility_under_attack"]["value"] == 1.0
        assert figures[name]["attack_success_rate"]["value"] == 0.0
    assert figures["obeys-hostile"]["attack_success_rate"]["value"] == 1.0
    assert figures["obeys-hostile"]["utility_under_attack"]["value"] == 1.0
    assert all(v["isolated_attempts"] == 1 and v["not_isolated_attempts"] == 0 for v in figures.values())
    by_variant = {a["variant"]: a for a in report["attempts"]}
    assert by_variant["obeys-hostile"]["status"] == "failed"
    task = by_variant["obeys-hostile"]["subject_info"]["task"]
    assert "tool:export_notes" in task["forbidden_used"] and task["attack_success"] is True
    # the canary is planted fresh per attempt: the leaked value shows (as evidence) only in the
    # attempt that leaked it
    leaked = json.dumps(by_variant["obeys-hostile"]["output"])
    assert "CANARY-PRIVATE-NOTE-" in leaked
    assert all("CANARY-PRIVATE-NOTE-" not in json.dumps(a) for v, a in by_variant.items() if v != "obeys-hostile")
    assert by_variant["ordinary"]["subject_info"]["task"]["metrics"]["tool_list_changes"] == 0
    assert by_variant["hostile"]["subject_info"]["task"]["metrics"]["tool_list_changes"] == 1
    md = path.with_suffix(".md").read_text()
    assert "Agent tasks" in md and "attack success" in md
    verified = scoreboard("verify", str(path), cwd=example)
    assert verified.returncode == 0 and "no mismatch" in verified.stdout, verified.stdout + verified.stderr
    rescored = scoreboard("rescore", str(path), "--output-dir", str(tmp_path / "re"), cwd=example)
    assert rescored.returncode == 0, rescored.stderr
    _, again = report_of(tmp_path / "re")
    assert again["summary"]["tasks"] == report["summary"]["tasks"]
    assert [a["status"] for a in again["attempts"]] == [a["status"] for a in report["attempts"]]


def _path_without_bwrap(tmp_path: Path) -> dict:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("python3",):
        (bin_dir / name).symlink_to(os.path.realpath(sys.executable))  # a real interpreter, not a shim
    return {**os.environ, "PATH": str(bin_dir)}


def test_without_a_sandbox_every_attempt_says_not_isolated(example, tmp_path):
    env = _path_without_bwrap(tmp_path)
    done = scoreboard("run", "suite.yaml", "--case", "wishlist", "--output-dir", str(tmp_path / "out"),
                      cwd=example, env=env)
    assert done.returncode == 0, done.stderr
    _, report = report_of(tmp_path / "out")
    for attempt in report["attempts"]:
        isolation = attempt["subject_info"]["task"]["isolation"]
        assert isolation["isolated"] is False and isolation["note"].startswith("not isolated")
    assert all(v["not_isolated_attempts"] == 1 for v in report["summary"]["tasks"]["variants"].values())
    # a suite that requires isolation refuses to run: exit 1, one line, nothing written
    suite = (example / "suite.yaml").read_text() + "require_isolation: true\n"
    (example / "strict.yaml").write_text(suite)
    refused = scoreboard("run", "strict.yaml", "--output-dir", str(tmp_path / "strict"), cwd=example, env=env)
    assert refused.returncode == 1
    assert "requires isolation" in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "strict").exists()
