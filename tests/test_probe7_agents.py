"""Agent tasks and visual judging probed from outside (seventh round), as a user writes them:
task.yaml files typed by hand (YAML 1.1 spellings included), agents that time out, and the
records a timed-out attempt leaves."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from scoreboard.errors import ScoreboardError
from scoreboard.suite.config import Limits
from scoreboard.tasks.load import load_task_folders


def make_task(folder: Path, task_yaml: str, files: dict[str, str] | None = None) -> Path:
    (folder / "workspace").mkdir(parents=True)
    (folder / "checks").mkdir()
    (folder / "task.yaml").write_text(textwrap.dedent(task_yaml))
    for rel, text in (files or {}).items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(textwrap.dedent(text))
    return folder


# -- `sandbox: off` as the README prints it -----------------------------------------------------

def test_sandbox_off_written_unquoted_means_off_not_a_confusing_false(tmp_path):
    # YAML 1.1 reads a bare `off` as false: the README documents `sandbox: ... off`, and a user
    # writing it that way got "must be one of ... (got False)"
    folder = make_task(tmp_path / "t", """\
        id: t
        instruction: do it
        sandbox: off
        checks: [{name: ok, run: [python3, checks/ok.py]}]
        """, {"checks/ok.py": "print('ok')\n"})
    task = load_task_folders(folder, Limits())[0].task
    assert task.spec.sandbox == "off"


@pytest.mark.parametrize("value", ["true", "on", "yes", "maybe"])
def test_a_sandbox_value_that_is_not_a_setting_is_still_refused_naming_the_field(tmp_path, value):
    folder = make_task(tmp_path / "t", f"""\
        id: t
        instruction: do it
        sandbox: {value}
        checks: [{{name: ok, run: [python3, checks/ok.py]}}]
        """, {"checks/ok.py": "print('ok')\n"})
    with pytest.raises(ScoreboardError) as exc:
        load_task_folders(folder, Limits())
    assert "sandbox" in str(exc.value) and "\n" not in str(exc.value)
