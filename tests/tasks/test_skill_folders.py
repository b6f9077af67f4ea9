"""A variant's skill folder: every file loaded (bounded, regular files only, confined), hashed
into the plan (a changed script changes the plan, and --resume refuses it), and installed whole
in each attempt's workspace where the agent finds it; the example's scripted agent runs the
skill's own client script from $SCOREBOARD_SKILL_DIR inside the sandbox."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from scoreboard.errors import ConfigError
from scoreboard.suite import skills
from scoreboard.suite.load import load_suite
from scoreboard.tasks.sandbox import bwrap_path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "agent-task"


@pytest.fixture
def example(tmp_path):
    target = tmp_path / "agent-task"
    shutil.copytree(EXAMPLE, target)
    return target


def only(example: Path, *names: str) -> Path:
    """The example suite keeping only the named variants."""
    suite = yaml.safe_load((example / "suite.yaml").read_text())
    suite["variants"] = {k: v for k, v in suite["variants"].items() if k in names}
    (example / "suite.yaml").write_text(yaml.safe_dump(suite))
    return example / "suite.yaml"


def folder_of(suite_path: Path) -> dict:
    suite = load_suite(suite_path)
    return suite.plan()["variants"][0]["skill_folder"] | {"identity": suite.identity()}


def test_a_skill_folder_loads_every_file_and_the_plan_hashes_them(example):
    path = only(example, "ordinary")
    suite = load_suite(path)
    variant = suite.variants[0]
    assert variant.skill.startswith("---\nname: shop")  # the SKILL.md text, as before
    assert [f.path for f in variant.skill_folder.files] == ["SKILL.md", "scripts/shop.py"]
    first = folder_of(path)
    assert first["name"] == "shop" and first["files"] == 2
    assert first["bytes"] == sum(p.stat().st_size for p in (example / "skills/shop").rglob("*") if p.is_file())

    script = example / "skills/shop/scripts/shop.py"
    (example / "skills/shop/scripts/__pycache__").mkdir()
    (example / "skills/shop/scripts/__pycache__/shop.cpython-311.pyc").write_bytes(b"\0compiled")
    assert folder_of(path) == first  # running a script does not change the skill

    script.write_text(script.read_text() + "# changed\n")
    changed = folder_of(path)
    assert changed["hash"] != first["hash"] and changed["identity"] != first["identity"]
    os.chmod(script, 0o755)
    assert folder_of(path)["hash"] != changed["hash"]  # the executable bit is part of it
    (example / "skills/shop/references").mkdir()
    (example / "skills/shop/references/sizes.md").write_text("S M L\n")
    grown = folder_of(path)
    assert grown["files"] == 3 and grown["hash"] not in (first["hash"], changed["hash"])


def _error(path: Path) -> str:
    with pytest.raises(ConfigError) as info:
        load_suite(path)
    text = str(info.value)
    assert "\n" not in text
    return text


def test_links_special_files_and_oversize_folders_are_refused(example, tmp_path, monkeypatch):
    path = only(example, "ordinary")
    folder = example / "skills/shop"
    outside = tmp_path / "secret.txt"
    outside.write_text("HOME-SECRET\n")
    (folder / "notes.md").symlink_to(outside)
    text = _error(path)
    assert "variant 'ordinary'" in text and "skills/shop/notes.md" in text and "link" in text

    (folder / "notes.md").unlink()
    os.mkfifo(folder / "pipe")
    text = _error(path)
    assert "skills/shop/pipe" in text and "not a regular file" in text
    (folder / "pipe").unlink()

    monkeypatch.setattr(skills, "MAX_SKILL_FILES", 2)
    (folder / "extra.md").write_text("x")
    text = _error(path)
    assert "variant 'ordinary'" in text and "limit of 2 files" in text
    monkeypatch.setattr(skills, "MAX_SKILL_FILES", 500)

    monkeypatch.setattr(skills, "MAX_SKILL_BYTES", 1000)
    text = _error(path)
    assert "variant 'ordinary'" in text and "past 1000 bytes" in text and "skills/shop/" in text


def test_a_skill_folder_outside_the_suites_root_is_refused(example, tmp_path):
    elsewhere = tmp_path / "elsewhere" / "shop"
    shutil.copytree(example / "skills/shop", elsewhere)
    suite = yaml.safe_load((example / "suite.yaml").read_text())
    suite["variants"] = {"ordinary": {**suite["variants"]["ordinary"], "skill": "../elsewhere/shop"}}
    (example / "suite.yaml").write_text(yaml.safe_dump(suite))
    text = _error(example / "suite.yaml")
    assert "variant 'ordinary'" in text and "climbs out of the root" in text


def scoreboard(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "scoreboard", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300, check=False)


@pytest.mark.skipif(bwrap_path() is None, reason="bubblewrap does not work here (apt-get install bubblewrap)")
def test_the_agent_runs_the_skill_folders_script_in_its_sandbox_and_resume_refuses_a_changed_one(example):
    only(example, "ordinary", "hostile")
    done = scoreboard("run", "suite.yaml", "--output-dir", "out", "--format", "json", cwd=example)
    assert done.returncode == 0, done.stderr
    (report_path,) = sorted((example / "out" / "agent-task").glob("*.json"))
    report = json.loads(report_path.read_text())
    for attempt in report["attempts"]:
        task = attempt["subject_info"]["task"]
        assert attempt["status"] == "passed", attempt["grades"]
        assert task["isolation"]["isolated"] is True
        assert task["skill"] == {"folder": ".agents/skills/shop", "file": ".agents/skills/shop/SKILL.md"}
        commands = [c["command"] for c in attempt["output"]["tool_calls"]]
        # every call went through the skill's own client, run from the installed folder
        assert commands and all(c.startswith("python3 $SCOREBOARD_SKILL_DIR/scripts/shop.py ") for c in commands)
        assert all(c["exit_code"] == 0 for c in attempt["output"]["tool_calls"])
    planned = report["plan"]["variants"][0]["skill_folder"]
    assert planned["name"] == "shop" and planned["files"] == 2 and len(planned["hash"]) == 64

    run_dir = report_path.with_suffix("")
    assert (run_dir / "run.json").exists()
    script = example / "skills/shop/scripts/shop.py"
    script.write_text(script.read_text() + "# a changed build of the skill\n")
    resumed = scoreboard("run", "--resume", str(run_dir), cwd=example)
    assert resumed.returncode == 1
    assert "cannot resume: the suite settings changed" in resumed.stderr
