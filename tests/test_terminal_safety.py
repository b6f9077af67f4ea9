"""What reaches a terminal or a report line cannot carry control characters: a case id with a
newline or an escape is refused when cases load (it would forge report lines and terminal
output), and the --verbose lines print a subject's output and reasons with control characters
escaped (an ESC ] ... BEL sequence would set the terminal's title)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from scoreboard.record.terminal import print_cases, shown

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("bad", ["a\nb", "x\x1b[31mred", "t\x07", "c\x9b"])
def test_a_case_id_with_a_control_character_is_refused(tmp_path, bad):
    (tmp_path / "c.jsonl").write_text(json.dumps({"id": bad, "input": "x", "expected": "x"}) + "\n")
    done = subprocess.run([sys.executable, "-m", "scoreboard", "validate", "c.jsonl"], cwd=tmp_path, text=True,
                          capture_output=True, env={**os.environ, "PYTHONPATH": str(ROOT / "src")}, timeout=60)
    assert done.returncode == 1
    (line,) = done.stderr.strip().splitlines()
    assert "c.jsonl:1" in line and "field 'id'" in line and "control characters" in line


def test_verbose_lines_escape_control_characters():
    plan = {"cases": [{"id": "a"}], "variants": [{"name": "v"}], "runs": 1}
    attempt = {"case_id": "a", "variant": "v", "run": 0, "status": "failed", "measurements": {"latency_ms": 1},
               "error": None, "grades": [{"grader": "exact", "passed": False,
                                          "reason": "got '\x1b]0;pwned\x07'\nscoreboard: error: forged"}]}
    out = io.StringIO()
    print_cases(plan, [attempt], out)
    text = out.getvalue()
    assert "\x1b" not in text and "\x07" not in text
    assert "\\x1b]0;pwned\\x07" in text and "\\nscoreboard: error: forged" in text
    assert shown("é 😀 plain") == "é 😀 plain"


def test_compare_and_history_print_variant_names_without_their_escapes(tmp_path):
    """A variant name (a suite is user input) holding ESC ] 0 ; ... BEL would set the terminal's
    title when `compare` or `history` printed it raw."""
    hostile = "v\x1b]0;pwned\x07"
    (tmp_path / "c.jsonl").write_text(json.dumps({"id": "a", "input": "x", "expected": "x"}) + "\n")
    suite = {"name": "s", "cases": "c.jsonl", "graders": ["exact"],
             "variants": {hostile: {"subject": "mock"}, "plain": {"subject": "mock"}}}
    (tmp_path / "s.json").write_text(json.dumps(suite))
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "scoreboard", *args], cwd=tmp_path, text=True,
                              capture_output=True, env=env, timeout=120)

    for out in ("a.json", "b.json"):
        assert cli("run", "s.json", "--output", out, "--no-progress", "--store", "h.sqlite").returncode == 0
    for done in (cli("compare", "a.json", "b.json"), cli("history", "--store", "h.sqlite")):
        assert done.returncode == 0, done.stderr
        assert "\x1b" not in done.stdout and "\x07" not in done.stdout
        assert "\\x1b]0;pwned\\x07" in done.stdout  # the name is still there, spelled out
