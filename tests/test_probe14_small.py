"""Small user-visible defects left by earlier probes, each probed from outside: `scoreboard` in
a subprocess in tmp_path (SCOREBOARD_STORE=none), the viewer on a loopback port 0."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "SCOREBOARD_STORE": "none"}
    return subprocess.run([sys.executable, "-m", "scoreboard", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


# --------------------------------------------------------------------------- (1) JUnit type


def test_junit_error_type_names_the_error_not_a_failed_run(tmp_path):
    """Was: a case whose run 0 failed and run 1 errored became <error type="failed">: the type
    came from the first bad run, whatever its status; Jenkins and GitLab show `type`."""
    (tmp_path / "subj.py").write_text(
        "def answer(input, skill, run):\n"
        "    if run == 1:\n        raise ValueError('boom')\n"
        "    return 'wrong'\n")
    (tmp_path / "cases.jsonl").write_text(
        '{"id": "mixed", "input": "q", "expected": "right"}\n'
        '{"id": "wrong", "input": "w", "expected": "right"}\n')
    (tmp_path / "fail.py").write_text("def answer(input):\n    return 'wrong'\n")
    (tmp_path / "suite.yaml").write_text(
        "name: j\ncases: cases.jsonl\nruns: 2\noutput_dir: out\n"
        "variants:\n"
        "  - {name: mixed, subject: {type: python, function: 'subj:answer', model_free: true}}\n"
        "  - {name: plain, subject: {type: python, function: 'fail:answer', model_free: true}}\n")
    done = cli(tmp_path, "run", "suite.yaml", "--junit", "j.xml", "--no-progress")
    assert done.returncode in (1, 2), done.stderr
    root = ET.parse(tmp_path / "j.xml").getroot()
    mixed = root.find("testsuite[@name='j.mixed']").find("testcase[@name='mixed']")
    error = mixed.find("error")
    assert error is not None and mixed.find("failure") is None
    assert error.get("type") == "error"
    assert "run 0 (failed)" in error.text and "ValueError: boom" in error.text
    failure = root.find("testsuite[@name='j.plain']").find("testcase[@name='wrong']").find("failure")
    assert failure is not None and failure.get("type") == "failed"
    # and `report` renders the same from the JSON alone
    (report,) = (tmp_path / "out" / "j").glob("*.json")
    again = cli(tmp_path, "report", str(report), "--format", "junit", "--output", "again.junit.xml")
    assert again.returncode == 0, again.stderr
    again_root = ET.parse(tmp_path / "again.junit.xml").getroot()
    case = again_root.find("testsuite[@name='j.mixed']").find("testcase[@name='mixed']")
    assert case.find("error").get("type") == "error"
