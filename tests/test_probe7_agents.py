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


# -- what a real (command) agent leaves running is said, not only killed ---------------------------

def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("holds_stdout", [False, True])
def test_a_daemon_a_command_agent_leaves_behind_is_recorded_as_left_running(tmp_path, holds_stdout):
    # the command subject killed what its agent left (kill_after), so the attempt's own sweep
    # found nothing and the record said `left_running: false` of an agent that left a daemon
    import asyncio
    import sys

    from scoreboard.subjects.registry import build_subject
    from scoreboard.subjects.values import SubjectRequest
    from scoreboard.tasks.runtime import run_task

    if not Path("/proc/self").is_dir():
        pytest.skip("needs Linux /proc")
    folder = make_task(tmp_path / "t", """\
        id: t
        instruction: do it
        sandbox: 'off'
        checks: [{name: ok, run: [python3, checks/ok.py]}]
        """, {"checks/ok.py": "print('ok')\n"})
    pidfile = tmp_path / "daemon.pid"
    agent = tmp_path / "agent.py"
    stdio = "" if holds_stdout else ", stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL"
    agent.write_text(textwrap.dedent(f"""\
        import subprocess, sys
        p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"],
                             start_new_session=True{stdio})
        open({str(pidfile)!r}, "w").write(str(p.pid))
        print("done")
        """))
    case = load_task_folders(folder, Limits())[0]
    subject = build_subject({"type": "command", "argv": [sys.executable, str(agent)]}, tmp_path)
    request = SubjectRequest(case_id=case.id, input=case.input, params={"mode": "ordinary"})
    record = asyncio.run(run_task(case.task, subject, request, hide=[])).extra["task"]
    pid = int(pidfile.read_text())
    assert not _alive(pid)
    assert record["left_running"] is True


def test_a_command_agent_that_leaves_nothing_running_says_so(tmp_path):
    import asyncio
    import sys

    from scoreboard.subjects.registry import build_subject
    from scoreboard.subjects.values import SubjectRequest
    from scoreboard.tasks.runtime import run_task

    folder = make_task(tmp_path / "t", """\
        id: t
        instruction: do it
        sandbox: 'off'
        checks: [{name: ok, run: [python3, checks/ok.py]}]
        """, {"checks/ok.py": "print('ok')\n"})
    agent = tmp_path / "agent.py"
    agent.write_text("import subprocess\nsubprocess.run(['true'])\nprint('done')\n")
    case = load_task_folders(folder, Limits())[0]
    subject = build_subject({"type": "command", "argv": [sys.executable, str(agent)]}, tmp_path)
    request = SubjectRequest(case_id=case.id, input=case.input, params={"mode": "ordinary"})
    record = asyncio.run(run_task(case.task, subject, request, hide=[])).extra["task"]
    assert record["left_running"] is False


# -- pairwise: a comparison never sent to the judge is not a judge failure -------------------------

def test_a_pair_whose_page_did_not_render_is_not_counted_as_a_judge_failure():
    # an output whose render timed out has no screenshot: the comparison is never sent to the
    # judge, yet the report said "2 judge failures ... (judge failure or no majority)" of a judge
    # that answered every question it was asked
    from scoreboard.judges.pairwise import _shots
    from scoreboard.stats.judges import pairwise_summary

    with pytest.raises(ValueError) as exc:
        _shots({"render": {"kind": "html", "shots": [], "error": "render timed out after 8000 ms"}}, None, "last")
    plan = {"cases": [{"id": "ok"}, {"id": "loop"}]}
    judgments = [
        {"case_id": "ok", "run": 0, "a": "x", "b": "y", "forward": "A", "backward": "B", "consistent": True,
         "verdict": "x", "usage": [{"requests": 1}, {"requests": 1}]},
        {"case_id": "loop", "run": 0, "a": "x", "b": "y", "verdict": None, "failure": str(exc.value), "usage": []},
    ]
    [pair] = pairwise_summary(plan, {"judgments": judgments})
    assert pair["judge_failures"] == 0
    assert not any("judge failure" in f for f in pair["flags"])
    assert any("1 comparison not judged" in f and "screenshot" in f for f in pair["flags"])


def test_a_real_judge_failure_in_pairwise_is_still_counted():
    from scoreboard.stats.judges import pairwise_summary

    plan = {"cases": [{"id": "c"}]}
    judgments = [{"case_id": "c", "run": 0, "a": "x", "b": "y", "verdict": None,
                  "failure": "judge answered no JSON", "usage": [{"requests": 1}]}]
    [pair] = pairwise_summary(plan, {"judgments": judgments})
    assert pair["judge_failures"] == 1
    assert any("not assessed (judge failure" in f for f in pair["flags"])


# -- a timed-out attempt still says where it ran ----------------------------------------------------

def test_a_timed_out_task_attempt_records_where_it_ran_and_what_it_left(tmp_path):
    # an agent that timed out was an error attempt with no subject_info at all: the README says
    # every attempt's record says where it ran, and the summary counted it neither isolated nor not
    import json
    import subprocess
    import sys

    folder = make_task(tmp_path / "suite" / "tasks" / "slow", """\
        id: slow
        instruction: take your time
        timeout: 1
        sandbox: 'off'
        checks: [{name: ok, run: [python3, checks/ok.py]}]
        """, {"checks/ok.py": "print('ok')\n"})
    suite = folder.parent.parent
    (suite / "agent.py").write_text("import subprocess, time\n"
                                    "subprocess.Popen(['sleep', '120'], start_new_session=True,\n"
                                    "                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
                                    "time.sleep(60)\n")
    (suite / "suite.yaml").write_text("name: slow\ncases: tasks\nvariants:\n"
                                      "  sleeper: {subject: {type: command, argv: [python3, agent.py]}}\n")
    done = subprocess.run([sys.executable, "-m", "scoreboard", "run", str(suite / "suite.yaml"), "--output-dir",
                           str(tmp_path / "out")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    [report] = (tmp_path / "out" / "slow").glob("*.json")
    data = json.loads(report.read_text())
    [a] = data["attempts"]
    assert a["status"] == "error" and "timed out" in a["error"]
    task = a["subject_info"]["task"]
    assert task["isolation"]["isolated"] is False and task["isolation"]["network"]
    assert isinstance(task["left_running"], bool)
    summary = data["summary"]["tasks"]["variants"]["sleeper"]
    assert summary["errors"] == 1 and summary["not_isolated_attempts"] == 1
    verified = subprocess.run([sys.executable, "-m", "scoreboard", "verify", str(report)],
                              capture_output=True, text=True, timeout=120)
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_a_task_that_turns_its_sandbox_off_is_not_said_to_have_no_sandbox_available(tmp_path):
    # `sandbox: off` on a machine with bubblewrap was recorded as "not isolated ... (no sandbox
    # available)": the user reading the record looks for a missing install that is not missing
    import asyncio
    import sys

    from scoreboard.subjects.registry import build_subject
    from scoreboard.subjects.values import SubjectRequest
    from scoreboard.tasks.runtime import run_task

    folder = make_task(tmp_path / "t", """\
        id: t
        instruction: do it
        sandbox: off
        checks: [{name: ok, run: [python3, checks/ok.py]}]
        """, {"checks/ok.py": "print('ok')\n"})
    agent = tmp_path / "agent.py"
    agent.write_text("print('done')\n")
    case = load_task_folders(folder, Limits())[0]
    subject = build_subject({"type": "command", "argv": [sys.executable, str(agent)]}, tmp_path)
    request = SubjectRequest(case_id=case.id, input=case.input, params={"mode": "ordinary"})
    isolation = asyncio.run(run_task(case.task, subject, request, hide=[])).extra["task"]["isolation"]
    assert isolation["isolated"] is False
    assert "no sandbox available" not in isolation["note"] and "sandbox: off" in isolation["note"]


def test_a_fixture_that_fails_to_start_does_not_say_where_an_agent_never_started_ran(tmp_path):
    import asyncio
    import sys

    from scoreboard.errors import SubjectError
    from scoreboard.subjects.registry import build_subject
    from scoreboard.subjects.values import SubjectRequest
    from scoreboard.tasks.runtime import run_task

    folder = make_task(tmp_path / "t", """\
        id: t
        instruction: use {{ fixture_url }}
        environment: {command: [python3, svc.py], ready: {url: /health, timeout: 5}}
        checks: [{name: ok, run: [python3, checks/ok.py]}]
        """, {"checks/ok.py": "print('ok')\n",
              "environment/svc.py": "import sys\nsys.stderr.write('fatal: database locked\\n')\nsys.exit(7)\n"})
    agent = tmp_path / "agent.py"
    agent.write_text("print('done')\n")
    case = load_task_folders(folder, Limits())[0]
    subject = build_subject({"type": "command", "argv": [sys.executable, str(agent)]}, tmp_path)
    request = SubjectRequest(case_id=case.id, input=case.input, params={"mode": "ordinary"})
    with pytest.raises(SubjectError) as exc:
        asyncio.run(run_task(case.task, subject, request, hide=[]))
    assert "database locked" in str(exc.value)
    assert getattr(exc.value, "extra", None) is None
