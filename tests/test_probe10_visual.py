"""Open-ended and visual work probed as a careless or hostile user would: judges that refuse,
gates over every pair, what leads the report when dQ cannot be computed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from scoreboard.stats.gates import dq_gates

JUDGE_MODULE = '''import json, re
def a(input): return "GOOD answer"
def b(input): return "plain answer"
def c(input): return "REFUSEME answer"
def judge(input):
    text = input if isinstance(input, str) else json.dumps(input)
    if "REFUSEME" in text:
        return "I can't help with that."
    dims = re.search(r"DIMENSIONS: (.*)", text).group(1).split(", ")
    return json.dumps({"scores": {d: 3 if "GOOD" in text else 1 for d in dims}, "explanation": "ok"})
'''


def scoreboard(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, SCOREBOARD_STORE="none")
    return subprocess.run([sys.executable, "-m", "scoreboard", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300, check=False)


def three_variants(tmp_path: Path, variants=("a", "b", "c")) -> None:
    """Variant c's answers are refused by the judge on every case: it has no pointwise score."""
    (tmp_path / "mods.py").write_text(JUDGE_MODULE)
    (tmp_path / "cases.jsonl").write_text('{"id": "c1", "input": "x"}\n{"id": "c2", "input": "y"}\n')
    listed = "".join(f"  {v}: {{subject: \"python:mods:{v}\"}}\n" for v in variants)
    (tmp_path / "suite.yaml").write_text(
        "name: three\ncases: cases.jsonl\nvariants:\n" + listed +
        "graders: [{pointwise: {dimensions: [content, clarity]}}]\njudge: \"python:mods:judge\"\n")


def test_min_dq_gates_every_pair_a_pair_without_dq_fails_not_skipped(tmp_path):
    # Before: `--min-dq 1.0` ("gates every pair") gated only the pairs that had a dQ; with a third
    # variant whose every judgment failed, its two pairs were left out and the gate passed (rc 0).
    three_variants(tmp_path)
    proc = scoreboard(["run", "suite.yaml", "--no-progress", "--format", "json", "--trust-unchecked-judge",
                       "--min-dq", "1.0"], tmp_path)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "gate passed: dQ a - b: +2.00" in proc.stdout
    assert "gate FAILED: dQ a - c: n/a" in proc.stdout and "gate FAILED: dQ b - c: n/a" in proc.stdout
    path = next((tmp_path / "eval-results" / "three").glob("*.json"))
    gates = json.loads(path.read_text())["gates"]
    assert [(g["metric"], g["passed"]) for g in gates] == [("dq:a/b", True), ("dq:a/c", False), ("dq:b/c", False)]
    assert scoreboard(["verify", str(path)], tmp_path).returncode == 0


def test_dq_gates_name_every_pair_of_the_run():
    summary = {"judges": {"dq": [{"a": "a", "b": "b", "dq": 2.0, "ci": None}]}}
    gates = dq_gates(summary, {"*": 1.0}, ["a", "b", "c"])
    assert [(g["metric"], g["value"], g["passed"]) for g in gates] == [
        ("dq:a/b", 2.0, True), ("dq:a/c", None, False), ("dq:b/c", None, False)]
