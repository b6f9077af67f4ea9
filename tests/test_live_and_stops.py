"""Origin 004's live-run rules, through the CLI against loopback fake providers: a suite with
`require_live: true` sends nothing without --live and its plan is bounded (1-10 unique case
ids, 1-20 requests; configurable); `plan` prints the command that runs it live; a 429 that
outlasts every retry stops the run (a rate signal, not a case failure); a checkpoint or report
that cannot be written ends the run with exit 2, the attempt log intact for --resume."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

RETRIES = {"attempts": 3, "base_delay_s": 0.01, "max_delay_s": 0.02}


def cli(cwd: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "scoreboard", *args], cwd=cwd, env=dict(os.environ),
                          capture_output=True, text=True, timeout=timeout, check=False)


def write_cases(folder: Path, n: int) -> None:
    (folder / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i:02d}", "input": f"q{i:02d}",
                                                            "expected": f"q{i:02d}"}) + "\n" for i in range(n)))


def write_suite(folder: Path, base_url: str, **settings) -> Path:
    suite = {"name": "live", "cases": "cases.jsonl", "output_dir": "out", "formats": ["json"],
             "subject": {"type": "openai", "base_url": base_url + "/v1", "model": "m", "retries": RETRIES},
             **settings}
    (folder / "suite.json").write_text(json.dumps(suite))
    return folder / "suite.json"


def reports(folder: Path) -> list[Path]:
    return sorted((folder / "out").glob("*/*.json"))


# --------------------------------------------------------------------------- require_live / --live


def test_a_require_live_suite_sends_nothing_without_live(tmp_path, fake_provider):
    write_cases(tmp_path, 3)
    write_suite(tmp_path, fake_provider.base_url, require_live=True)
    done = cli(tmp_path, "run", "suite.json", "--case", "c00", "--max-requests", "2", "--no-progress")
    assert done.returncode == 1, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert "require_live" in line and "--live" in line and "suite.json" in line
    assert fake_provider.requests == [] and not (tmp_path / "out").exists()
    # A dry run sends nothing either way, so it needs no --live.
    done = cli(tmp_path, "run", "suite.json", "--case", "c00", "--max-requests", "2", "--dry-run", "--no-progress")
    assert done.returncode in (0, 3), done.stderr
    assert fake_provider.requests == []


def test_plan_prints_the_live_command_and_running_it_spends_within_the_plan(tmp_path, fake_provider):
    write_cases(tmp_path, 3)
    write_suite(tmp_path, fake_provider.base_url, require_live=True)
    done = cli(tmp_path, "plan", "suite.json", "--case", "c01", "--case", "c02", "--max-requests", "4",
               "--output", "plan.json")
    assert done.returncode == 0, done.stderr
    assert fake_provider.requests == []
    command = "scoreboard run suite.json --case c01 --case c02 --max-requests 4 --live"
    assert command in done.stdout
    plan = json.loads((tmp_path / "plan.json").read_text())
    assert plan["live"] == {"required": True, "command": command, "max_cases": 10, "max_requests": 20}
    assert [c["id"] for c in plan["fixtures"]] == ["c01", "c02"] and plan["scoreboard_version"]
    # The printed command runs as printed.
    args = shlex.split(command)
    assert args[:2] == ["scoreboard", "run"]
    done = cli(tmp_path, *args[1:], "--no-progress")
    assert done.returncode == 0, done.stderr
    (path,) = reports(tmp_path)
    report = json.loads(path.read_text())
    assert report["run"]["live"] is True and report["plan"]["budget"]["max_requests"] == 4
    assert [a["case_id"] for a in report["attempts"]] == ["c01", "c02"]
    assert len(fake_provider.requests) == report["requests"]["sent"] == 2
    assert report["plan"]["fixture_hash"] == plan["fixture_hash"]


@pytest.mark.parametrize("flags, field, words", [
    ([], "case", "give --case ID (1 to 10"),
    (["--case", "c00", "--case", "c00"], "case", "names 'c00' twice"),
    ([arg for i in range(11) for arg in ("--case", f"c{i:02d}")], "case", "at most 10 case ids"),
    (["--case", "c00"], "max_requests", "needs a request budget"),
    (["--case", "c00", "--max-requests", "0"], "max_requests", "1 to 20 requests"),
    (["--case", "c00", "--max-requests", "21"], "max_requests", "1 to 20 requests"),
], ids=["no-case", "duplicate", "eleven", "no-budget", "zero", "twenty-one"])
def test_live_plan_bounds(tmp_path, fake_provider, flags, field, words):
    write_cases(tmp_path, 12)
    write_suite(tmp_path, fake_provider.base_url, require_live=True)
    for command in ("plan", "run"):
        extra = ["--live", "--no-progress"] if command == "run" else []
        done = cli(tmp_path, command, "suite.json", *flags, *extra)
        assert done.returncode == 1, (command, done.stderr)
        (line,) = done.stderr.strip().splitlines()
        # a value the command line gave names its flag; a missing one names the setting
        flag = f"--{field.replace('_', '-')}"
        where = f"scoreboard: error: flag {flag}: " if flag in flags else f"suite.json, field '{field}'"
        assert where in line and words in line, line
    assert fake_provider.requests == [] and not (tmp_path / "out").exists()


def test_live_bounds_are_configurable_and_plain_suites_are_unbounded(tmp_path, fake_provider):
    write_cases(tmp_path, 12)
    eleven = [arg for i in range(11) for arg in ("--case", f"c{i:02d}")]
    write_suite(tmp_path, fake_provider.base_url, require_live=True,
                limits={"live": {"max_cases": 11, "max_requests": 30}})
    done = cli(tmp_path, "plan", "suite.json", *eleven, "--max-requests", "25")
    assert done.returncode == 0, done.stderr
    assert "--live" in done.stdout
    write_suite(tmp_path, fake_provider.base_url)  # no require_live: no bounds, no --live needed
    done = cli(tmp_path, "plan", "suite.json")
    assert done.returncode == 0, done.stderr
    assert "--live" not in done.stdout


# --------------------------------------------------------------------------- 429 stops the run


def test_a_429_that_outlasts_the_retries_stops_the_run(tmp_path, fake_provider):
    write_cases(tmp_path, 5)
    write_suite(tmp_path, fake_provider.base_url, concurrency=1)
    fake_provider.push("chat", {}, {"status": 429}, {"status": 429}, {"status": 429})
    done = cli(tmp_path, "run", "suite.json", "--no-progress")
    assert done.returncode == 2, done.stderr
    assert len(fake_provider.requests_to("chat")) == 4  # one answer, then 3 tries of the second case
    (path,) = reports(tmp_path)
    report = json.loads(path.read_text())
    assert report["run"]["status"] == "stopped" and "rate limited" in report["run"]["stop_reason"]
    assert [a["status"] for a in report["attempts"]] == ["passed", "error", "not-run", "not-run", "not-run"]
    assert "429" in report["attempts"][1]["error"] and report["attempts"][1]["measurements"]["requests"] == 3
    assert report["requests"]["sent"] == 4


def test_a_429_answered_by_a_retry_does_not_stop_the_run(tmp_path, fake_provider):
    write_cases(tmp_path, 3)
    write_suite(tmp_path, fake_provider.base_url, concurrency=1)
    fake_provider.push("chat", {"status": 429}, {"status": 429})
    done = cli(tmp_path, "run", "suite.json", "--no-progress")
    assert done.returncode == 0, done.stderr
    (path,) = reports(tmp_path)
    report = json.loads(path.read_text())
    assert report["run"]["status"] == "completed"
    assert Counter(a["status"] for a in report["attempts"]) == {"passed": 3}


# --------------------------------------------------------------------------- write failures


SLOW_SUBJECT = '''
import os, time

def answer(text):
    # Take the report's path before the run can write it: every write of it must fail.
    os.makedirs("out/r.json", exist_ok=True)
    time.sleep(0.3)
    return text
'''


def test_a_failed_checkpoint_write_stops_the_run_with_exit_2_and_resume_finishes_it(tmp_path):
    # Checkpoints are at least 5 s apart: 25 attempts of 0.3 s reach the first one.
    write_cases(tmp_path, 25)
    (tmp_path / "slow.py").write_text(SLOW_SUBJECT)
    (tmp_path / "suite.json").write_text(json.dumps({
        "name": "cp", "cases": "cases.jsonl", "subject": "python:slow:answer", "concurrency": 1,
        "formats": ["json"], "checkpoint_every": 1, "checkpoint_seconds": 0.1}))
    done = cli(tmp_path, "run", "suite.json", "--output", "out/r.json", "--no-progress")
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert "out/r.json" in line and "--resume" in line and "internal error" not in line
    log = [json.loads(x) for x in (tmp_path / "out" / "r" / "attempts.jsonl").read_text().splitlines()]
    finished = [r for r in log if r.get("kind") is None]
    assert 0 < len(finished) < 25  # the run stopped at the failed checkpoint, not at the end
    # Once the path is free again, --resume finishes the run from its attempt log.
    os.rmdir(tmp_path / "out" / "r.json")
    (tmp_path / "slow.py").write_text("def answer(text):\n    return text\n")
    done = cli(tmp_path, "run", "--resume", "out/r", "--no-progress")
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "out" / "r.json").read_text())
    assert report["run"]["status"] == "completed"
    assert Counter(a["status"] for a in report["attempts"]) == {"passed": 25}
    assert report["run"]["resumed"]["attempts_reused"] == len(finished)


def test_checkpointer_failure_calls_back_once_and_writes_no_more(tmp_path):
    from scoreboard.engine.checkpoints import Checkpointer

    target = tmp_path / "r.json"
    target.mkdir()
    reasons: list[str] = []
    cp = Checkpointer(target, lambda: ({"schema": "x"}, iter([])), every=1, seconds=0, on_failure=reasons.append)
    cp.min_gap = 0
    cp.write()
    assert cp.failed and reasons == [cp.failed] and str(target) in cp.failed
    cp.maybe()
    cp.maybe()
    assert reasons == [cp.failed] and not cp.written
