"""SCOREBOARD_SANDBOX chooses the agent's sandbox: auto (bubblewrap, else Docker), bwrap or
docker. A value it does not know, or a choice that does not work here under
`require_isolation`, is a one-line error before anything runs."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from scoreboard.tasks import docker
from scoreboard.tasks.sandbox import bwrap_path, sandbox_program

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_TASK = ROOT / "examples" / "agent-task" / "tasks" / "wishlist"


def _suite(tmp: Path) -> None:
    shutil.copytree(EXAMPLE_TASK, tmp / "tasks" / "wishlist")
    suite = {"name": "t", "cases": "tasks", "require_isolation": True,
             "variants": {"a": {"subject": {"type": "command", "argv": ["python3", "-c", "print('x')"]}}}}
    (tmp / "suite.yaml").write_text(yaml.safe_dump(suite))


def _run(tmp: Path, **env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "scoreboard", "run", "suite.yaml"], cwd=tmp,
                          env={**os.environ, **env}, capture_output=True, text=True, timeout=120, check=False)


def test_an_unknown_choice_is_a_one_line_error(tmp_path):
    _suite(tmp_path)
    done = _run(tmp_path, SCOREBOARD_SANDBOX="podman")
    assert done.returncode == 1 and "SCOREBOARD_SANDBOX='podman': use auto, bwrap or docker" in done.stderr
    assert "require_isolation" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "eval-results").exists() or not list((tmp_path / "eval-results").rglob("*.json"))


def test_docker_chosen_where_no_daemon_answers_refuses_to_run(tmp_path):
    _suite(tmp_path)
    done = _run(tmp_path, SCOREBOARD_SANDBOX="docker", DOCKER_HOST=f"unix://{tmp_path}/no-daemon.sock")
    assert done.returncode == 1 and "the suite requires isolation and no sandbox works here" in done.stderr


@pytest.mark.skipif(bwrap_path() is None, reason="bubblewrap does not work here")
def test_auto_and_bwrap_choose_bubblewrap(monkeypatch, tmp_path):
    for choice in ("auto", "bwrap", ""):
        monkeypatch.setenv("SCOREBOARD_SANDBOX", choice)
        assert sandbox_program() == ("bwrap", bwrap_path())
    monkeypatch.setenv("SCOREBOARD_SANDBOX", "docker")
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-daemon.sock")
    docker.docker_path.cache_clear()
    try:
        assert sandbox_program() is None  # only Docker was asked for, and none answers
    finally:
        docker.docker_path.cache_clear()
