"""Task folders: what a valid one becomes, and one clear error line for each bad one."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from scoreboard.errors import ConfigError
from scoreboard.suite.load import load_suite
from scoreboard.tasks.load import load_task_folders

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_TASK = ROOT / "examples" / "agent-task" / "tasks" / "wishlist"


@pytest.fixture
def task(tmp_path):
    target = tmp_path / "tasks" / "wishlist"
    shutil.copytree(EXAMPLE_TASK, target)
    return target


def edit(task: Path, **changes) -> None:
    spec = yaml.safe_load((task / "task.yaml").read_text())
    for key, value in changes.items():
        if value is None:
            spec.pop(key, None)
        else:
            spec[key] = value
    (task / "task.yaml").write_text(yaml.safe_dump(spec))


def test_a_task_folder_is_a_case_with_its_graders_and_hash(task):
    (case,) = load_task_folders(task.parent)
    assert case.id == "wishlist" and case.task.spec.timeout == 120
    assert case.graders == [{"task-check": "wishlist"}, {"task-check": "answer-names-it"}, "task-security",
                            {"commands": {"forbidden": ["notes/private"]}}]
    meta = case.metadata["task"]
    assert meta["kind"] == "task" and len(meta["files_hash"]) == 64
    assert "workspace/AGENTS.md" not in case.task.workspace_files and "AGENTS.md" in case.task.workspace_files
    before = meta["files_hash"]
    (task / "checks" / "wishlist.py").write_text("print('changed')\n")
    (again,) = load_task_folders(task.parent)
    assert again.metadata["task"]["files_hash"] != before  # a changed check changes the plan's hash


@pytest.mark.parametrize("changes, field, words", [
    ({"timeout": -1}, "timeout", "more than 0"),
    ({"modes": ["ordinary", "evil"]}, "modes.1", "ordinary"),
    ({"checks": []}, None, "at least one check"),
    ({"instruction": "Go to {{ secret_var }}"}, "instruction", "unknown template variable"),
    ({"checks": [{"name": "x", "run": "true", "python": "a.py:f"}]}, "checks.0", "exactly one"),
    ({"checks": [{"name": "x", "python": "../outside.py:f"}]}, "checks.x.python", "climbs out"),
    ({"canaries": [{"name": "c", "file": "../escape.md"}]}, "canaries.c.file", "relative path"),
    ({"environment": None}, None, "hostile modes need an environment"),
    ({"bogus": 1}, "bogus", "unknown field"),
])
def test_bad_task_files_are_one_line_naming_file_case_and_field(task, changes, field, words):
    edit(task, **changes)
    with pytest.raises(ConfigError) as info:
        load_task_folders(task.parent)
    message = str(info.value)
    assert "\n" not in message and str(task / "task.yaml") in message and words in message
    if field is not None:
        assert f"field {field!r}" in message


def test_links_and_fifos_in_a_task_folder_are_refused(task, tmp_path):
    (tmp_path / "secret").write_text("x")
    os.symlink(tmp_path / "secret", task / "workspace" / "link")
    with pytest.raises(ConfigError, match="symbolic link"):
        load_task_folders(task.parent)
    os.unlink(task / "workspace" / "link")
    os.mkfifo(task / "checks" / "pipe")
    with pytest.raises(ConfigError, match="not a regular file"):
        load_task_folders(task.parent)


def test_a_suite_points_at_task_folders_and_cli_errors_exit_1(task, tmp_path):
    suite = {"cases": "tasks", "variants": {"a": {"subject": {"type": "command", "argv": ["true"]},
                                                  "params": {"mode": "hostile"}}}}
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump(suite))
    loaded = load_suite(tmp_path / "suite.yaml")
    assert [c.id for c in loaded.cases] == ["wishlist"]
    edit(task, timeout="soon")
    done = subprocess.run([sys.executable, "-m", "scoreboard", "run", str(tmp_path / "suite.yaml"),
                           "--output-dir", str(tmp_path / "out")], capture_output=True, text=True, check=False)
    assert done.returncode == 1 and "task.yaml" in done.stderr and "'timeout'" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not (tmp_path / "out").exists()
