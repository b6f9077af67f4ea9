"""Probe 20: agent tasks with tools and state checks (round 6), used from the outside as a
demanding user would, working through the README's "Agent tasks" section. Each test is a
defect found and fixed (see the commit that added it)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.cli_inprocess import run_cli

AGENT = """import json
open("out.txt", "w").write("hello\\n")
print(json.dumps({"text": "done", "tool_calls": [{"name": "Bash", "args": {"command": "echo hi"},
      "command": "echo hi", "exit_code": 0, "output": "hi"}]}))
"""
CHECK = """import os, sys
ok = os.path.isfile(os.path.join(os.environ["SCOREBOARD_WORKSPACE"], "out.txt"))
print("out.txt is there" if ok else "no out.txt")
sys.exit(0 if ok else 1)
"""


@pytest.fixture
def env(tmp_path, monkeypatch):
    monkeypatch.setenv("SCOREBOARD_STORE", "none")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def make(tmp: Path, task_yaml: str, *, suite_extra: str = "", agent: str = AGENT) -> Path:
    """suite.yaml with one command agent and tasks/t/ holding `task_yaml` and a check."""
    task = tmp / "tasks" / "t"
    (task / "workspace").mkdir(parents=True, exist_ok=True)
    (task / "checks").mkdir(exist_ok=True)
    (task / "workspace" / "README.md").write_text("Write hello to out.txt.\n")
    (task / "checks" / "c.py").write_text(CHECK)
    (task / "task.yaml").write_text(task_yaml)
    (tmp / "agent.py").write_text(agent)
    (tmp / "suite.yaml").write_text("name: p20\ncases: tasks\nvariants:\n  a:\n"
                                    "    subject: {type: command, argv: [python3, agent.py]}\n" + suite_extra)
    return tmp / "suite.yaml"


def scoreboard(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return run_cli(args, cwd)  # in-process: what the command says and writes is the point


# -- task.yaml settings at odds with each other name their line and field ---------------------

CROSS = [
    ("id: t\ninstruction: do it\nchecks:\n  - {name: c, run: [python3, checks/c.py]}\n"
     "  - {name: c, run: [python3, checks/c.py]}\n", 5, "checks.1.name", "two checks are named 'c'"),
    ("id: t\ninstruction: do it\ncanaries:\n  - name: x\n    file: a.md\n  - name: x\n    file: b.md\n"
     "checks:\n  - {name: c, run: [python3, checks/c.py]}\n", 6, "canaries.1.name", "two canaries are named 'x'"),
    ("id: t\ninstruction: do it\nmodes: [ordinary, hostile]\nchecks:\n  - {name: c, run: [python3, checks/c.py]}\n",
     3, "modes", "hostile modes need an environment"),
    ("id: t\ninstruction: do it\nmodes: [hostile]\nenvironment:\n  command: [python3, s.py]\n"
     "  ready: {url: /health}\nchecks:\n  - {name: c, run: [python3, checks/c.py]}\n",
     4, "environment.audit", "hostile modes need environment.audit"),
    ("id: t\ninstruction: do it\nchecks: []\n", 3, "checks", "at least one check"),
    ("id: t\ninstruction: do it\nenvironment:\n  command: [python3, s.py]\n  ready: {url: /health}\n"
     "  agent_env:\n    HOME_URL: '{url}/home ${HOME}'\n    SHOP_URL: '{urll}/shop'\n"
     "checks:\n  - {name: c, run: [python3, checks/c.py]}\n", 8, "environment.agent_env.SHOP_URL",
     "unknown placeholder {urll}"),
    ("id: t\ninstruction: do it\nchecks:\n  - {name: c, run: [python3, checks/c.py]}\ngraders:\n"
     "  - {commands: {forbidden: ['(unclosed']}}\n", 5, "graders", "is not a valid regex"),
    ("id: t\ninstruction: do it\ncategory: files\ngraders: [tool-cuont]\nchecks:\n  - {name: c, run: [python3, checks/c.py]}\n",
     4, "graders", "unknown grader 'tool-cuont'"),
    ("id: t\ninstruction: do it\nallowed_writes:\n  - scratch/**\n  - ./out/**\n"
     "checks:\n  - {name: c, run: [python3, checks/c.py]}\n", 3, "allowed_writes", "'./out/**' is not a path pattern"),
    ("id: t\ninstruction: do it\nallowed_writes: [/tmp/**]\n"
     "checks:\n  - {name: c, run: [python3, checks/c.py]}\n", 3, "allowed_writes", "relative to the workspace"),
    ("id: t\n\ninstruction: go to {{ fixture_url }}\nchecks:\n  - {name: c, run: [python3, checks/c.py]}\n",
     3, "instruction", "has no environment"),
]


@pytest.mark.parametrize("text, line, field, words", CROSS)
def test_task_yaml_settings_at_odds_name_their_line_and_field(env, text, line, field, words):
    make(env, text)
    done = scoreboard("run", "suite.yaml", "--output-dir", "out", cwd=env)
    assert done.returncode == 1
    error = done.stderr.strip()
    assert "\n" not in error, error
    assert f"tasks/t/task.yaml:{line}, case 't', field '{field}'" in error and words in error, error


def test_a_task_id_used_twice_names_the_line_of_the_second_id(env):
    """`duplicate task id` named the second task.yaml and its field, with no line."""
    make(env, "id: t\ninstruction: do it\nchecks:\n  - {name: c, run: [python3, checks/c.py]}\n")
    twin = env / "tasks" / "u"
    twin.mkdir()
    (twin / "task.yaml").write_text("description: the same task again\n\nid: t\ninstruction: do it\n"
                                    "checks:\n  - {name: c, run: [\"true\"]}\n")
    done = scoreboard("run", "suite.yaml", "--output-dir", "out", cwd=env)
    assert done.returncode == 1
    error = done.stderr.strip()
    assert "\n" not in error and "tasks/u/task.yaml:3, case 't', field 'id': duplicate task id" in error, error


# -- a subject that cannot act in a workspace is refused as a task's agent ---------------------

@pytest.mark.parametrize("subject, words", [
    ("{type: python, function: 'pyagent:run'}", "never given the workspace"),
    ("{type: openai, model: gpt-4o}", "a model without tools"),
])
def test_a_subject_that_cannot_act_in_a_workspace_is_refused_as_a_tasks_agent(env, subject, words, monkeypatch):
    """A python subject as a task's agent ran in scoreboard's folder, never told the workspace:
    the out.txt it wrote landed in the user's folder, the check found none in the workspace,
    and the attempt was scored a failure of the agent (recorded as a 'remote' agent)."""
    monkeypatch.setenv("OPENAI_API_KEY", "not-used")  # refused before any request
    make(env, "id: t\ninstruction: do it\nchecks:\n  - {name: c, run: [python3, checks/c.py]}\n")
    (env / "pyagent.py").write_text("def run(input):\n    open('out.txt', 'w').write('hello\\n')\n    return 'done'\n")
    (env / "suite.yaml").write_text(f"name: p20\ncases: tasks\nvariants:\n  p:\n    subject: {subject}\n")
    done = scoreboard("run", "suite.yaml", "--output-dir", "out", cwd=env)
    assert done.returncode == 1, done.stdout + done.stderr
    error = done.stderr.strip()
    assert "\n" not in error and "suite.yaml:5, field 'variants.p.subject': variant 'p'" in error, error
    assert words in error
    assert not (env / "out.txt").exists() and not (env / "out").exists()


# -- a task's agent_env cannot undo what scoreboard sets for the agent -------------------------

@pytest.mark.parametrize("name", ["HTTPS_PROXY", "https_proxy", "HOME", "SCOREBOARD_WORKSPACE"])
def test_agent_env_naming_a_variable_scoreboard_sets_is_refused(env, name):
    """The example's egress suite with `agent_env: {..., HTTPS_PROXY: "", https_proxy: ""}` in
    its task: phones-home passed with egress_refused 0 and no try recorded (its try went
    nowhere, unrecorded); a HOME of the task's made the private HOME the canary scan reads moot."""
    text = ("id: t\ninstruction: do it\nenvironment:\n  command: [python3, s.py]\n  ready: {url: /health}\n"
            f"  agent_env:\n    SHOP_URL: '{{url}}'\n    {name}: ''\n"
            "checks:\n  - {name: c, run: [python3, checks/c.py]}\n")
    make(env, text)
    done = scoreboard("run", "suite.yaml", "--output-dir", "out", cwd=env)
    assert done.returncode == 1
    error = done.stderr.strip()
    assert "\n" not in error, error
    assert f"tasks/t/task.yaml:8, case 't', field 'environment.agent_env.{name}': {name} is set by scoreboard" in error


@pytest.mark.parametrize("name", ["A=B", "1ST", "TWO WORDS"])
def test_agent_env_with_a_name_no_environment_can_hold_is_a_load_error(env, name):
    """`agent_env: {"A=B": x}` loaded, then every attempt was an error reading
    'ValueError: illegal environment variable name', naming neither the task.yaml nor the field."""
    text = ("id: t\ninstruction: do it\nenvironment:\n  command: [python3, s.py]\n  ready: {url: /health}\n"
            f"  agent_env:\n    SHOP_URL: '{{url}}'\n    '{name}': x\n"
            "checks:\n  - {name: c, run: [python3, checks/c.py]}\n")
    make(env, text)
    done = scoreboard("run", "suite.yaml", "--output-dir", "out", cwd=env)
    assert done.returncode == 1
    error = done.stderr.strip()
    assert "\n" not in error and f"tasks/t/task.yaml:8, case 't', field 'environment.agent_env.{name}'" in error, error
    assert "is not a variable name" in error and not (env / "out").exists()
