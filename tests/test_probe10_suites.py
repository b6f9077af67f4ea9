"""Suites as people write them (probe 10): custom graders in Python, weights, thresholds, metrics,
gates and reducers, used from the outside (the CLI on real files) as a user porting a suite would."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SUBJECT = "def reply(prompt, skill, run, params):\n    return 'ANSWER: ' + prompt\n"


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")}
    env["SCOREBOARD_STORE"] = "none"
    return subprocess.run([sys.executable, "-m", "scoreboard", *args], cwd=cwd, env=env, check=False,
                          capture_output=True, text=True, timeout=120)


def suite(folder: Path, body: str, cases: list[dict] | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "subj.py").write_text(SUBJECT)
    rows = cases or [{"id": "c1", "input": "Paris"}]
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in rows))
    path = folder / "suite.yaml"
    path.write_text("name: p10\ncases: cases.jsonl\nsubject: {type: python, function: \"subj:reply\", "
                    "model_free: true}\n" + body)
    return path


def report(proc: subprocess.CompletedProcess) -> dict:
    assert proc.returncode in (0, 3), proc.stderr
    return json.loads(proc.stdout)


# ---- a python-file grader importing a module beside it -----------------------------------------

def test_a_python_file_grader_imports_a_module_beside_it(tmp_path):
    """`python-file:checks.py:fn` whose checks.py says `import helpers` (a helpers.py beside it, as
    any grader split over two files has): the suite loaded with "No module named 'helpers'"."""
    folder = tmp_path / "s"
    path = suite(folder, "graders:\n  - \"python-file:checks.py:sib\"\n"
                         "  - {python: {file: checks.py, function: sib}}\n")
    (folder / "helpers.py").write_text("def ok(text):\n    return 'ANSWER' in text\n")
    (folder / "checks.py").write_text("import helpers\n\ndef sib(output, context):\n    return helpers.ok(output)\n")
    proc = cli(tmp_path, "run", str(path), "--output-dir", str(tmp_path / "out"), "--json")
    assert proc.returncode == 0, proc.stderr
    data = report(proc)
    assert [a["status"] for a in data["attempts"]] == ["passed"]
    assert [g["passed"] for g in data["attempts"][0]["grades"]] == [True, True]
