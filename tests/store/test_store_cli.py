"""`scoreboard history`, `scoreboard store ...` and `run --store/--tag` end to end through the
CLI: exit codes, one-line errors, the default store beside the output folder, git commits."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from scoreboard.store.migrations import MIGRATIONS
from tests.cli_inprocess import run_cli

from .test_store import make_suite

pytestmark = pytest.mark.slow  # each test drives several CLI commands


def sb(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return run_cli(args, cwd, {**os.environ, **(env or {})})


def git(*args: str, cwd: Path) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, env=env, check=True).stdout.strip()


def test_history_lists_runs_with_intervals_commits_and_filters(tmp_path):
    make_suite(tmp_path)
    git("init", "-q", cwd=tmp_path)
    git("add", "-A", cwd=tmp_path)
    git("commit", "-qm", "suite", cwd=tmp_path)
    commit = git("rev-parse", "HEAD", cwd=tmp_path)
    for extra in ([], ["--tag", "release"]):
        done = sb("run", "suite.json", "--no-progress", *extra, cwd=tmp_path)
        assert done.returncode in (0, 3), done.stderr
    assert (tmp_path / ".scoreboard" / "history.sqlite").stat().st_mode & 0o077 == 0
    out = sb("history", cwd=tmp_path).stdout
    assert out.count("hist  ") == 2 and f"commit {commit[:10]}" in out
    assert "one: pass rate 85.7% [95% CI" in out
    listed = json.loads(sb("history", "--json", "--tag", "release", cwd=tmp_path).stdout)["runs"]
    assert len(listed) == 1 and listed[0]["git_commit"] == commit and listed[0]["tags"] == ["release"]
    assert json.loads(sb("history", "--json", "--commit", commit[:8], cwd=tmp_path).stdout)["runs"][0]["suite"] == "hist"
    assert json.loads(sb("history", "--json", "--suite", "other", cwd=tmp_path).stdout)["runs"] == []
    assert "no runs" in sb("history", "--status", "stopped", cwd=tmp_path).stdout


def test_store_import_verify_tag_and_export(tmp_path):
    make_suite(tmp_path)
    assert sb("run", "suite.json", "--no-progress", "--store", "none", cwd=tmp_path).returncode in (0, 3)
    assert not (tmp_path / ".scoreboard").exists()  # --store none: report files only
    store = str(tmp_path / "team.sqlite")
    first = sb("store", "import", "out/", "--store", store, cwd=tmp_path)
    assert first.returncode == 0 and "1 stored" in first.stdout, first.stderr
    again = sb("store", "import", "out", "--store", store, "--json", cwd=tmp_path)
    assert json.loads(again.stdout)["unchanged"] and not json.loads(again.stdout)["stored"]
    (report,) = (tmp_path / "out" / "hist").glob("*.json")
    run_id = report.stem
    ok = sb("store", "verify", run_id, "--store", store, cwd=tmp_path)
    assert ok.returncode == 0 and "matches" in ok.stdout and "the report itself: verifies" in ok.stdout
    assert sb("verify", str(report), "--store", store, cwd=tmp_path).returncode == 0
    tag = sb("store", "tag", f"hist/{run_id}", "golden", "--store", store, cwd=tmp_path)
    assert tag.returncode == 0
    assert json.loads(sb("history", "--json", "--tag", "golden", "--store", store, cwd=tmp_path).stdout)["runs"]
    exported = sb("store", "reviews", "--output", "reviews.json", "--store", store, cwd=tmp_path)
    assert exported.returncode == 0 and json.loads((tmp_path / "reviews.json").read_text())["entries"] == []
    assert sb("store", "reviews", "--output", "reviews.json", "--store", store, cwd=tmp_path).returncode == 1
    # the report is edited afterwards: the stored run and the report disagree, exit 1
    data = json.loads(report.read_text())
    data["attempts"][1]["output"]["text"] = "changed"
    report.write_text(json.dumps(data))
    bad = sb("store", "verify", run_id, "--store", store, cwd=tmp_path)
    assert bad.returncode == 1 and "SHA-256" in bad.stdout and "stored attempt differs" in bad.stdout
    assert sb("verify", str(report), "--store", store, cwd=tmp_path).returncode == 1
    info = json.loads(sb("store", "info", "--json", "--store", store, cwd=tmp_path).stdout)
    assert info["schema_version"] == len(MIGRATIONS) and info["runs"] == 1


def test_store_errors_are_one_line_and_nothing_runs(tmp_path):
    make_suite(tmp_path)
    (tmp_path / "blocked").write_text("a file where the store's folder would be")
    done = sb("run", "suite.json", "--no-progress", "--store", "blocked/history.sqlite", cwd=tmp_path)
    assert done.returncode == 1 and done.stderr.startswith("scoreboard: error: ") and done.stderr.count("\n") == 1
    assert not (tmp_path / "out").exists()  # nothing ran
    via_env = sb("run", "suite.json", "--no-progress", cwd=tmp_path,
                 env={"SCOREBOARD_STORE": "postgresql://nobody@127.0.0.1:1/none"})
    assert via_env.returncode == 1 and "cannot connect to the store" in via_env.stderr
    missing = sb("history", "--store", "nowhere.sqlite", cwd=tmp_path)
    assert missing.returncode == 1 and "no history store here yet" in missing.stderr
    assert not (tmp_path / "nowhere.sqlite").exists()
    assert sb("store", "verify", "nope", "--store", "nowhere.sqlite", cwd=tmp_path).returncode == 1
