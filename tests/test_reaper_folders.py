"""A kill -9 of scoreboard leaves no temporary folder behind: an agent task's workspace (which
holds the attempt's planted canary values), a fixture's private copy of the task folder and an
agent CLI's home are removed by the watcher (reaper.py) once it has killed what was running,
as the exit handlers would have removed them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.test_reaper import ROOT, alive, processes, wait_for, watchers_of

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="Linux /proc")


def test_the_watcher_removes_a_listed_folder_when_its_owner_is_killed_and_keeps_an_unlisted_one(tmp_path):
    listed, forgotten = tmp_path / "listed", tmp_path / "forgotten"
    driver = textwrap.dedent(f"""\
        import os, sys, time
        from scoreboard.reaper import unwatch_folder, watch_folder
        for folder in ({str(listed)!r}, {str(forgotten)!r}):
            os.makedirs(os.path.join(folder, "deep", "er"))
            open(os.path.join(folder, "deep", "er", "canary.txt"), "w").write("SECRET")
            watch_folder(folder)
        os.chmod(os.path.join({str(listed)!r}, "deep", "er"), 0o500)  # read-only, as a workspace may leave it
        unwatch_folder({str(forgotten)!r})  # removed by its owner in the normal way: not the watcher's
        print("ready", flush=True)
        time.sleep(120)
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))
    owner = subprocess.Popen([sys.executable, "-c", driver], env=env, text=True, stdout=subprocess.PIPE)
    try:
        assert owner.stdout.readline() == "ready\n"
        watchers = watchers_of(owner.pid)
        assert len(watchers) == 1
        owner.kill()
        owner.wait(timeout=30)
        wait_for(lambda: not any(alive(pid) for pid in watchers), 15, "the watcher to finish")
        assert not listed.exists()
        assert (forgotten / "deep" / "er" / "canary.txt").read_text() == "SECRET"
    finally:
        owner.kill()


EXAMPLE_TASK = ROOT / "examples" / "agent-task" / "tasks" / "wishlist"


def test_kill_9_mid_task_leaves_no_workspace_or_fixture_copy(tmp_path):
    (tmp_path / "tasks").mkdir()
    shutil.copytree(EXAMPLE_TASK, tmp_path / "tasks" / "wishlist")
    (tmp_path / "agent.py").write_text("import time\ntime.sleep(120)\n")
    (tmp_path / "suite.yaml").write_text(textwrap.dedent(f"""\
        name: killed
        cases: tasks
        variants:
          agent:
            subject: {{type: command, argv: [{sys.executable}, agent.py]}}
            params: {{mode: ordinary}}
    """))
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = dict(os.environ, TMPDIR=str(temp))
    run = subprocess.Popen([sys.executable, "-m", "scoreboard", "run", "suite.yaml", "--no-progress"], cwd=tmp_path,
                           env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: any(agents_running(tmp_path)), 120, "the agent to start")
        made = sorted(p.name.split("-")[1] for p in temp.iterdir() if p.name.startswith("scoreboard-"))
        assert "task" in made and "fixture" in made, made  # the workspace and the fixture's copy, under TMPDIR
        watchers = watchers_of(run.pid)
        run.kill()
        run.wait(timeout=30)
        wait_for(lambda: not any(alive(pid) for pid in watchers), 30, "the watcher to finish")
        wait_for(lambda: not any(agents_running(tmp_path)), 30, "the agent to be killed")
        left = [p.name for p in temp.iterdir() if p.name.startswith("scoreboard-")]
        assert left == [], left
    finally:
        run.kill()


def agents_running(folder: Path) -> list[int]:
    """The pids of this test's agent (its argv names agent.py, made absolute under `folder`)."""
    script = str(folder / "agent.py").encode()
    return [pid for pid, _, cmdline in processes() if script in cmdline and alive(pid)]
