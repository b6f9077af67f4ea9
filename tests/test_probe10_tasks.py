"""Agent tasks probed as a hostile task author and a misbehaving agent would (tenth round):
agents that rewrite the checks that grade them, and what must still be data in the report."""

from __future__ import annotations

import asyncio
import sys
import textwrap
from pathlib import Path

import pytest

from scoreboard.errors import SubjectError
from scoreboard.subjects.registry import build_subject
from scoreboard.subjects.values import SubjectRequest
from scoreboard.suite.config import Limits
from scoreboard.tasks.load import load_task_folders
from scoreboard.tasks.runtime import run_task
from tests.test_probe4_tasks import make_task

PY = sys.executable


def attempt(task_folder: Path, agent: str, tmp_path: Path, env: dict | None = None):
    """One attempt of the task with a command agent running the Python source `agent`."""
    script = tmp_path / "agent.py"
    script.write_text(textwrap.dedent(agent))
    case = load_task_folders(task_folder, Limits())[0]
    subject = build_subject({"type": "command", "argv": [PY, str(script)], "env": env or {}}, tmp_path)
    request = SubjectRequest(case_id=case.id, input=case.input, params={"mode": "ordinary"})
    return asyncio.run(run_task(case.task, subject, request, hide=[]))


CHECK = """\
    import os, sys
    if os.path.exists(os.path.join(os.environ["SCOREBOARD_WORKSPACE"], "done.txt")):
        print("done.txt is there"); sys.exit(0)
    print("no done.txt"); sys.exit(1)
"""


# -- an agent outside a sandbox rewrites what grades it --------------------------------------

@pytest.mark.parametrize("how", ["rewrite", "plant-module"])
def test_an_agent_that_rewrites_its_checks_is_an_error_not_a_pass(tmp_path, how):
    """With `sandbox: off` the task folder is in reach: an agent that did nothing but rewrite
    checks/done.py to exit 0 (or plant a module its Python check imports first) was graded
    by its own check and passed."""
    task = make_task(tmp_path / "t", """\
        id: t
        instruction: write done.txt
        sandbox: off
        checks:
          - {name: done, run: [python3, checks/done.py]}
          - {name: helper, python: checks/helper_check.py:check}
        """, {"checks/done.py": CHECK,
              "checks/helper_check.py": "import json\ndef check(ctx):\n    return json.dumps(1) == '1'\n"})
    agent = {"rewrite": """\
        import os
        open(os.path.join(os.environ["TASK"], "checks", "done.py"), "w").write("raise SystemExit(0)\\n")
        print("all done")
        """, "plant-module": """\
        import os
        open(os.path.join(os.environ["TASK"], "checks", "json.py"), "w").write("def dumps(x): return '1'\\n")
        print("all done")
        """}[how]
    with pytest.raises(SubjectError) as caught:
        attempt(task, agent, tmp_path, env={"TASK": str(task)})
    assert caught.value.kind == "tamper"
    said = str(caught.value)
    assert "checks/done.py" in said if how == "rewrite" else "checks/json.py" in said
    assert "checks were not run" in said
    assert caught.value.extra["task"]["error_kind"] == "tamper"  # where it ran is still recorded


def test_an_agent_that_rewrites_the_checks_copy_beside_its_fixture_is_an_error(tmp_path, monkeypatch):
    """With a fixture the checks run in its private copy of the task folder, which exists while
    the agent runs: rewriting that copy's check was not seen either."""
    task = make_task(tmp_path / "t", """\
        id: t
        instruction: write done.txt
        sandbox: off
        environment: {command: [python3, fx.py], ready: {line: ready}}
        checks:
          - {name: done, run: [python3, checks/done.py]}
        """, {"checks/done.py": CHECK,
              "environment/fx.py": "import os, time\nopen('state.txt', 'w').write(os.getcwd())\n"
                                   "print('ready', flush=True)\ntime.sleep(60)\n"})
    agent = """\
        import glob, os
        for path in glob.glob(os.path.join(os.environ["TMPROOT"], "scoreboard-fixture-*", "task", "checks", "done.py")):
            open(path, "w").write("raise SystemExit(0)\\n")
        print("all done")
        """
    # the fixture's copy made under a temporary folder of this test's own: the agent rewrites
    # every copy its glob finds, and under the machine's /tmp that was other tests' fixtures too
    import tempfile
    private_tmp = tmp_path / "tmp"
    private_tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(private_tmp))
    with pytest.raises(SubjectError) as caught:
        attempt(task, agent, tmp_path, env={"TMPROOT": str(private_tmp)})
    assert caught.value.kind == "tamper" and "checks/done.py" in str(caught.value)


def test_checks_and_a_fixture_writing_beside_them_are_not_taken_for_tampering(tmp_path):
    """What the task's own parts write (a fixture's state in environment/, a check's log in
    checks/) leaves the next attempt's verdict alone."""
    task = make_task(tmp_path / "t", """\
        id: t
        instruction: write done.txt
        sandbox: off
        environment: {command: [python3, fx.py], ready: {line: ready}}
        checks:
          - {name: done, run: [python3, checks/done.py]}
        """, {"checks/done.py": "open('checks/last.log', 'a').write('ran')\n" + textwrap.dedent(CHECK),
              "environment/fx.py": "import time\nopen('state.txt', 'a').write('x')\n"
                                   "print('ready', flush=True)\ntime.sleep(60)\n"})
    for _ in range(2):
        result = attempt(task, "open('done.txt', 'w').write('x')\n", tmp_path)
        assert result.extra["task"]["checks"][0]["passed"] is True


def test_an_agent_that_plants_its_answer_in_the_tasks_workspace_source_is_an_error(tmp_path):
    """workspace/ of the task folder seeds every attempt: an agent that wrote done.txt there made
    every later attempt (of this run and the next) pass without doing anything."""
    task = make_task(tmp_path / "t", """\
        id: t
        instruction: write done.txt
        sandbox: off
        checks:
          - {name: done, run: [python3, checks/done.py]}
        """, {"checks/done.py": CHECK, "workspace/README.md": "write done.txt\n"})
    planter = """\
        import os
        open(os.path.join(os.environ["TASK"], "workspace", "done.txt"), "w").write("x")
        open("done.txt", "w").write("x")
        """
    with pytest.raises(SubjectError) as caught:
        attempt(task, planter, tmp_path, env={"TASK": str(task)})
    assert caught.value.kind == "tamper" and "workspace/done.txt" in str(caught.value)


# -- a check's verdict is its last line, however much it printed ------------------------------

def checks_now(checks, folder: Path, tmp_path: Path) -> dict:
    from scoreboard.tasks.checks import CheckContext, run_checks
    files = {"output": tmp_path / "output.txt", "audit": tmp_path / "audit.json"}
    files["output"].write_text("done")
    files["audit"].write_text("null")
    ctx = CheckContext(workspace=tmp_path, fixture_url=None, mode="ordinary", output="done", tool_calls=[], audit=None)
    return {r["name"]: (r["passed"], r["reason"]) for r in asyncio.run(run_checks(checks, folder, ctx, files))}


def test_a_check_that_logs_a_lot_before_its_verdict_is_judged_by_its_verdict(tmp_path):
    """Only the first 64 KiB of a check's output were kept, so the 'last line' was a log line
    cut mid-word: a check that logged 300 KB and then said {"passed": false} (exit 0) passed
    with the reason 'log li', and one that failed with exit 1 gave a log line as its reason."""
    from scoreboard.tasks.spec import Check
    (tmp_path / "says.py").write_text("for i in range(20000): print('log line', i)\n"
                                      "print('{\"passed\": false, \"reason\": \"the wishlist is empty\"}')\n")
    (tmp_path / "fails.py").write_text("import sys\nfor i in range(20000): print('log line', i)\n"
                                       "print('no done.txt'); sys.exit(1)\n")
    (tmp_path / "crashes.py").write_text("import sys\nfor i in range(20000): print('warning', i, file=sys.stderr)\n"
                                         "print('KeyError: total', file=sys.stderr); sys.exit(3)\n")
    got = checks_now([Check(name="says", run=[PY, "says.py"]), Check(name="fails", run=[PY, "fails.py"]),
                      Check(name="crashes", run=[PY, "crashes.py"])], tmp_path, tmp_path)
    assert got["says"] == (False, "the wishlist is empty")
    assert got["fails"] == (False, "no done.txt")
    assert got["crashes"][0] is None and got["crashes"][1].endswith("KeyError: total")


def test_a_check_killed_by_a_signal_says_which_in_words(tmp_path):
    """A check the OOM killer (or anything else) killed read 'the check exited with status -9',
    and a Python check 'ended (status -9)': a negative status is a signal, named as such."""
    from scoreboard.tasks.spec import Check
    (tmp_path / "killed.py").write_text("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n")
    (tmp_path / "pykilled.py").write_text("import os, signal\ndef check(ctx):\n    os.kill(os.getpid(), signal.SIGTERM)\n")
    got = checks_now([Check(name="killed", run=[PY, "killed.py"]), Check(name="py", python="pykilled.py:check")],
                     tmp_path, tmp_path)
    assert got["killed"] == (None, "the check was killed by signal SIGKILL (9)")
    assert got["py"][0] is None and got["py"][1].startswith("the check was killed by signal SIGTERM (15) without a verdict")
