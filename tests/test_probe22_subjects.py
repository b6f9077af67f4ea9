"""Probe 22Q: local subjects (`python`, `command`) as a team wrapping a CLI extractor and a
Python pipeline would use them: a function that signals its own process, or changes the
working directory, the environment or sys.path of the process it shares with scoreboard."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.cli_inprocess import run_cli


def _suite(tmp_path: Path, suite: dict) -> None:
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump({"name": "s", "output_dir": "out", "formats": ["json"],
                                                          **suite}))


def _cli(tmp_path: Path, suite: dict, *extra: str):
    """`scoreboard run suite.yaml` in tmp_path, in this process (tests/cli_inprocess.py): for what
    the run says and writes, where the process (its signals, its exit, its state) is not the point."""
    _suite(tmp_path, suite)
    return run_cli(["run", "suite.yaml", "--no-progress", "--concurrency", "1", *extra], tmp_path,
                   {**os.environ, "SCOREBOARD_STORE": "none"})


def _run(tmp_path: Path, suite: dict, *extra: str, timeout: float = 120):
    _suite(tmp_path, suite)
    script = Path(sys.executable).parent / "scoreboard"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "scoreboard"]
    return subprocess.run([*command, "run", "suite.yaml", "--no-progress", "--concurrency", "1", *extra],
                          cwd=tmp_path, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "SCOREBOARD_STORE": "none"})


def _report(tmp_path: Path) -> dict:
    (report,) = (tmp_path / "out" / "s").glob("*.json")
    return json.loads(report.read_text(encoding="utf-8"))


def _cases(tmp_path: Path, n: int) -> None:
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "input": "x", "expected": "x"}) + "\n"
                                                  for i in range(n)))


def test_a_python_subject_signalling_its_own_process_is_its_attempts_error_not_a_stopped_run(tmp_path):
    # os.kill(os.getpid(), SIGTERM) in the function stopped the run as a CI cancel does
    # (`stopped: interrupted by SIGTERM`, the other cases not run); SIGINT sent twice exited
    # 130 with no report at all ("second interrupt, exiting now")
    _cases(tmp_path, 3)
    (tmp_path / "user.py").write_text(
        "import asyncio, os, signal\n\n"
        "def term(text):\n    os.kill(os.getpid(), signal.SIGTERM)\n    return text\n\n"
        "def intr(text):\n    try:\n        os.kill(os.getpid(), signal.SIGINT)\n    except Exception:\n"
        "        return 'swallowed'\n    return text\n\n"
        "def raised(text):\n    signal.raise_signal(signal.SIGINT)\n    return text\n\n"
        "async def aterm(text):\n    os.kill(os.getpid(), signal.SIGTERM)\n    await asyncio.sleep(0.01)\n"
        "    return text\n")
    variants = {"term": {"subject": "python:user:term"},
                "intr-thread": {"subject": {"type": "python", "function": "user:intr", "thread": True}},
                "raised": {"subject": "python:user:raised"},
                "aterm": {"subject": "python:user:aterm"}}
    done = _run(tmp_path, {"cases": "cases.jsonl", "variants": variants, "graders": ["exact"]})
    assert done.returncode == 2 and "Traceback" not in done.stderr, (done.stdout, done.stderr)
    report = _report(tmp_path)
    assert report["run"]["status"] == "completed", report["run"]
    attempts = report["attempts"]
    assert len(attempts) == 12 and {a["status"] for a in attempts} == {"error"}
    errors = {a["variant"]: a["error"] for a in attempts}
    assert errors["term"].startswith("the subject sent SIGTERM to its own process (os.kill("), errors
    assert errors["intr-thread"].startswith("the subject sent SIGINT to its own process (os.kill("), errors
    assert errors["raised"].startswith("the subject sent SIGINT to its own process (signal.raise_signal(SIGINT))")
    assert errors["aterm"].startswith("the subject sent SIGTERM to its own process"), errors
    assert "not delivered" in errors["term"]


def test_a_signal_from_outside_during_a_python_subject_still_stops_the_run(tmp_path):
    # the guard is for the function's own signals: a `kill` from another process (the user, CI)
    # still stops the run as before
    _cases(tmp_path, 4)
    (tmp_path / "user.py").write_text(
        "import os, subprocess\n\n"
        "def answer(text):\n    subprocess.run(['kill', '-s', 'TERM', str(os.getpid())])\n    return text\n")
    done = _run(tmp_path, {"cases": "cases.jsonl", "subject": "python:user:answer", "graders": ["exact"]})
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert _report(tmp_path)["run"]["stop_reason"] == "interrupted by SIGTERM"


def test_what_a_python_subject_changes_of_the_process_is_put_back_and_said(tmp_path):
    # os.chdir('/') in the function moved the run's report to /out/s/...json (the summary still
    # named out/s/...); a variable set in os.environ, a folder put on sys.path, were seen by
    # every later attempt (here the second attempt answered 'set', not 'unset')
    _cases(tmp_path, 2)
    (tmp_path / "user.py").write_text(
        "import os, sys\n\n"
        "def answer(text):\n"
        "    seen = [os.path.basename(os.getcwd()), os.environ.get('PROBE22Q', 'unset'),\n"
        "            str('/nowhere-22q' in sys.path)]\n"
        "    os.chdir(os.path.dirname(os.getcwd()))\n"
        "    os.environ['PROBE22Q'] = 'set'\n"
        "    sys.path.insert(0, '/nowhere-22q')\n"
        "    return ' '.join(seen)\n")
    done = _run(tmp_path, {"cases": "cases.jsonl", "subject": "python:user:answer", "graders": ["exact"]})
    assert done.returncode == 0 or done.returncode == 1, (done.stdout, done.stderr)
    assert not (tmp_path.parent / "out").exists()
    attempts = _report(tmp_path)["attempts"]
    assert [a["output"]["text"] for a in attempts] == [f"{tmp_path.name} unset False"] * 2
    for attempt in attempts:
        assert attempt["subject_info"]["restored"] == [
            f"working directory (changed to {tmp_path.parent})", "environment variables (PROBE22Q)", "sys.path"]


def test_a_command_that_forks_a_daemon_has_it_killed_and_its_attempt_says_so(tmp_path):
    # a daemon the program forked (setsid, out of its group) was killed when it ended, as the
    # README says, but the attempt said nothing of it: a passing answer looked like any other
    _cases(tmp_path, 2)
    script = tmp_path / "extract.sh"
    script.write_text("#!/bin/sh\n( setsid sh -c 'echo $$ >> daemons.pid; exec sleep 300' >/dev/null 2>&1 & )\n"
                      "sleep 0.2\nif [ \"$SCOREBOARD_CASE_ID\" = c1 ]; then exit 3; fi\nprintf x\n")
    script.chmod(0o755)
    done = _cli(tmp_path, {"cases": "cases.jsonl", "subject": "command:./extract.sh", "graders": ["exact"]})
    assert done.returncode == 2, (done.stdout, done.stderr)
    first, second = _report(tmp_path)["attempts"]
    left = "it left a process running when it ended, which was killed"
    assert first["status"] == "passed" and first["subject_info"] == {"left_running": left}
    assert second["status"] == "error" and second["error"] == f"command exited with status 3 ({left})"
    for pid in (tmp_path / "daemons.pid").read_text().split():
        assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text()


def test_a_dataclass_or_pydantic_model_a_pipeline_returns_is_the_json_object_of_its_fields(tmp_path):
    # "subject returned Invoice; return text, a JSON value or scoreboard.Output": a pipeline's
    # typed result had to be converted by hand in a wrapper
    pytest.importorskip("pydantic")
    _cases(tmp_path, 1)
    (tmp_path / "pipe.py").write_text(
        "import dataclasses, datetime, pydantic\n\n"
        "@dataclasses.dataclass\nclass Line:\n    sku: str\n    qty: int\n\n"
        "@dataclasses.dataclass\nclass Invoice:\n    total: float\n    lines: list\n\n"
        "class Model(pydantic.BaseModel):\n    when: datetime.date = datetime.date(2024, 1, 2)\n\n"
        "def typed(text):\n    return Invoice(3.5, [Line('a', 1)])\n\n"
        "def nested(text):\n    return {'model': Model(), 'invoice': Invoice(1.0, [])}\n")
    variants = {"typed": {"subject": "python:pipe:typed"}, "nested": {"subject": "python:pipe:nested"}}
    done = _cli(tmp_path, {"cases": "cases.jsonl", "variants": variants, "graders": ["exact"]})
    assert "Traceback" not in done.stderr, done.stderr
    outputs = {a["variant"]: a["output"]["json"] for a in _report(tmp_path)["attempts"]}
    assert outputs == {"typed": {"total": 3.5, "lines": [{"sku": "a", "qty": 1}]},
                       "nested": {"model": {"when": "2024-01-02"}, "invoice": {"total": 1.0, "lines": []}}}


def test_a_python_subject_calling_os_exit_is_its_attempts_error_and_a_forked_child_still_exits(tmp_path):
    # os._exit(3) in the function ended `scoreboard run` on the spot: exit status 3, no report,
    # no word of why
    _cases(tmp_path, 2)
    (tmp_path / "user.py").write_text(
        "import os\n\n"
        "def bail(text):\n    os._exit(3)\n\n"
        "def forked(text):\n    pid = os.fork()\n    if pid == 0:\n        os._exit(5)\n"
        "    return str(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))\n")
    variants = {"bail": {"subject": "python:user:bail"},
                "bail-thread": {"subject": {"type": "python", "function": "user:bail", "thread": True}},
                "forked": {"subject": "python:user:forked"}}
    done = _run(tmp_path, {"cases": "cases.jsonl", "variants": variants, "graders": ["exact"]})
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    attempts = _report(tmp_path)["attempts"]
    assert len(attempts) == 6
    for attempt in attempts:
        if attempt["variant"] == "forked":
            assert attempt["output"]["text"] == "5"
        else:
            assert attempt["status"] == "error"
            assert attempt["error"] == "the subject called os._exit(3), which would end scoreboard's process with it: " \
                                       "not done"


def test_a_subject_module_that_changes_directory_as_it_imports_does_not_move_the_reports(tmp_path):
    # os.chdir at a module's import (before any call) moved the run's report to
    # elsewhere/out/s/... while the summary named out/s/...
    _cases(tmp_path, 1)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "moves.py").write_text("import os\nos.chdir('elsewhere')\n\ndef answer(text):\n    return text\n")
    done = _cli(tmp_path, {"cases": "cases.jsonl", "subject": "python:moves:answer", "graders": ["exact"]})
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert not (tmp_path / "elsewhere" / "out").exists()
    assert _report(tmp_path)["attempts"][0]["status"] == "passed"
    assert f"importing 'moves' changed the working directory to {tmp_path / 'elsewhere'}: put back" in done.stderr
