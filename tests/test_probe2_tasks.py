"""Agent tasks probed from outside (second round): agents that leave processes behind, hostile
task folders, and failures that must be data in the attempt's record."""

from __future__ import annotations

import asyncio
import json
import sys
import textwrap
import time
from pathlib import Path

from scoreboard.subjects.registry import build_subject
from scoreboard.subjects.values import SubjectRequest
from scoreboard.suite.config import Limits
from scoreboard.tasks.load import load_task_folders
from scoreboard.tasks.runtime import run_task

PY = sys.executable


def alive(pid: int) -> bool:
    """A live (not zombie) process with this id."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            state = handle.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != b"Z"


def make_task(folder: Path, task_yaml: str, checks: dict[str, str] | None = None,
              workspace: dict[str, str] | None = None) -> Path:
    (folder / "workspace").mkdir(parents=True)
    (folder / "checks").mkdir()
    (folder / "task.yaml").write_text(textwrap.dedent(task_yaml))
    for name, text in (checks or {}).items():
        (folder / "checks" / name).write_text(textwrap.dedent(text))
    for name, text in (workspace or {}).items():
        (folder / "workspace" / name).write_text(text)
    return folder


def attempt(task_folder: Path, agent: Path, tmp_path: Path, *, mode: str = "ordinary"):
    """One attempt of the task with a command agent running `agent` (a Python file)."""
    case = load_task_folders(task_folder, Limits())[0]
    subject = build_subject({"type": "command", "argv": [PY, str(agent)]}, tmp_path)
    request = SubjectRequest(case_id=case.id, input=case.input, params={"mode": mode})
    return asyncio.run(run_task(case.task, subject, request, hide=[]))


# -- an agent's processes end with it --------------------------------------------------------

def test_a_daemon_the_agent_leaves_behind_is_killed_before_the_checks_read_the_workspace(tmp_path):
    """Without a sandbox (sandbox: off) nothing ended what the agent started outside its group:
    it went on changing the workspace while the checks read it (here: deleting the file the
    check looks for), and outlived the attempt and the run."""
    task = make_task(tmp_path / "task", """\
        id: daemon
        instruction: write done.txt
        timeout: 30
        sandbox: "off"
        checks: [{name: done, run: [python3, checks/done.py]}]
    """, checks={"done.py": """\
        import os, sys, time
        time.sleep(1.5)
        ok = os.path.exists(os.path.join(os.environ["SCOREBOARD_WORKSPACE"], "done.txt"))
        print("done.txt is there" if ok else "done.txt is missing")
        sys.exit(0 if ok else 1)
    """})
    pidfile = tmp_path / "daemon.pid"
    agent = tmp_path / "agent.py"
    agent.write_text(textwrap.dedent(f"""
        import json, subprocess, sys
        open("done.txt", "w").write("ok")
        p = subprocess.Popen([sys.executable, "-c",
                              "import os, time; time.sleep(0.5); os.remove('done.txt'); time.sleep(300)"],
                             start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        open({str(pidfile)!r}, "w").write(str(p.pid))
        print(json.dumps({{"text": "saved done.txt", "tool_calls": []}}))
    """))
    result = attempt(task, agent, tmp_path)
    record = result.extra["task"]
    assert record["checks"] == [{"name": "done", "passed": True, "reason": "done.txt is there"}]
    assert record["left_running"] is True
    pid = int(pidfile.read_text())
    for _ in range(50):  # a killed process may take a moment to be reaped
        if not alive(pid):
            break
        time.sleep(0.1)
    assert not alive(pid)


def test_an_agent_that_leaves_nothing_running_says_so(tmp_path):
    task = make_task(tmp_path / "task", """\
        id: tidy
        instruction: write done.txt
        sandbox: "off"
        checks: [{name: done, run: [python3, -c, "print('ok')"]}]
    """)
    agent = tmp_path / "agent.py"
    agent.write_text("print('done')\n")
    record = attempt(task, agent, tmp_path).extra["task"]
    assert record["left_running"] is False
    assert json.dumps(record)  # the record stays plain data
