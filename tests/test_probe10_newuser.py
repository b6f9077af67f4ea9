"""A new user's first hour, from the README alone: the examples and errors a newcomer meets."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def scoreboard(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "SCOREBOARD_STORE": "none", "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run([sys.executable, "-m", "scoreboard", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_promptfoo_provider_map_with_text_options_is_listed_not_a_crash(tmp_path):
    # `- exec: ./say.sh` (a YAML mapping where `exec:./say.sh` was meant) is the
    # {provider id: options} form with text options: it was "internal error: TypeError"
    (tmp_path / "promptfooconfig.yaml").write_text(
        'prompts: ["Hello {{name}}"]\n'
        "providers:\n  - exec: ./say.sh\n  - echo\n"
        "tests:\n  - vars: {name: Ada}\n    assert: [{type: contains, value: Ada}]\n")
    res = scoreboard("import", "promptfoo", "promptfooconfig.yaml", "--output", "out", cwd=tmp_path)
    assert "internal error" not in res.stderr, res.stderr
    assert res.returncode == 3, (res.returncode, res.stdout, res.stderr)
    listed = [line for line in res.stdout.splitlines() if line.startswith("- providers.0:")]
    assert listed and "mapping" in listed[0], res.stdout
    assert (tmp_path / "out" / "suite.yaml").is_file()
