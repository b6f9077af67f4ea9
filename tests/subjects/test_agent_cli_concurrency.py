"""Origin 000's concurrency rule for the local agent CLIs: one at a time unless --concurrency
says otherwise, never more than 8, counted over every agent CLI variant together; other
subjects keep the run's concurrency. The limits as the executor builds them, and the real
Claude Code CLI against a loopback server counting requests in flight."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from scoreboard.engine.executor import variant_limit, variant_limits
from scoreboard.engine.preflight import run_concurrency
from scoreboard.suite.load import load_suite
from tests.subjects.test_agent_cli import CLAUDE, ROOT, need_claude


def suite_with(tmp_path, subjects: dict, concurrency: int | None = None):
    (tmp_path / "cases.jsonl").write_text(json.dumps({"id": "a", "input": "hi", "expected": "x"}) + "\n")
    (tmp_path / "subj.py").write_text("def answer(text):\n    return text\n")
    spec = {"cases": "cases.jsonl", "variants": {name: {"subject": s} for name, s in subjects.items()}}
    if concurrency is not None:
        spec["concurrency"] = concurrency
    (tmp_path / "suite.json").write_text(json.dumps(spec))
    return load_suite(tmp_path / "suite.json")


def sizes(limits: dict) -> dict:
    return {name: sem._value for name, sem in limits.items()}


CLAUDE_SPEC = {"type": "claude-cli", "binary": sys.executable}
CODEX_SPEC = {"type": "codex-cli", "binary": sys.executable}
PY_SPEC = {"type": "python", "function": "subj:answer"}


def test_agent_clis_default_to_one_at_a_time_together(tmp_path):
    suite = suite_with(tmp_path, {"a": CLAUDE_SPEC, "b": CODEX_SPEC, "p": PY_SPEC})
    run = run_concurrency(suite)
    assert run == 4  # the python variant keeps the run's default
    limits = variant_limits(suite, run)
    assert sizes(limits) == {"a": 1, "b": 1}
    assert limits["a"] is limits["b"]  # one limit over both agent CLIs: one process at a time
    assert "p" not in limits


def test_concurrency_flag_applies_to_agent_clis_up_to_eight(tmp_path):
    for given, expected in ((3, 3), (8, 8), (20, 8)):
        suite = suite_with(tmp_path, {"a": CLAUDE_SPEC, "b": CLAUDE_SPEC, "p": PY_SPEC}, concurrency=given)
        limits = variant_limits(suite, run_concurrency(suite))
        assert sizes(limits) == {"a": expected, "b": expected} and limits["a"] is limits["b"]
        assert "p" not in limits  # runs at `given`
        assert variant_limit(suite.variants[2].subject, given, given) == given


@pytest.mark.slow
@pytest.mark.agent_cli
@need_claude
def test_claude_cli_variants_run_one_at_a_time_unless_told(fake_provider, tmp_path):
    home = tmp_path / "home"
    (home / "claude").mkdir(parents=True)
    env = {"ANTHROPIC_BASE_URL": fake_provider.base_url, "ANTHROPIC_API_KEY": "${FAKE_KEY}"}
    spec = json.dumps({"type": "claude-cli", "binary": CLAUDE, "env": env})
    lines = [json.dumps({"id": f"c{i}", "input": f"q{i}", "expected": "x"}) for i in range(2)]
    (tmp_path / "cases.jsonl").write_text("\n".join(lines) + "\n")
    # Each answer is held until two requests are in flight (at most 3 s): one at a time never
    # gets there, so the server's peak is what the harness allowed.
    fake_provider.set_default("messages", {"until_in_flight": 2, "hold_s": 3})
    base = [sys.executable, "-m", "scoreboard", "run", "--cases", "cases.jsonl", "--subject", spec,
            "--vs-subject", spec, "--no-progress", "--format", "json", "--output-dir"]
    run_env = {**os.environ, "FAKE_KEY": "test-key", "HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / "claude"),
               "PYTHONPATH": os.environ.get("PYTHONPATH", str(ROOT / "src"))}
    done = subprocess.run([*base, "one"], cwd=tmp_path, env=run_env, capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode in (0, 3), done.stderr
    assert len(fake_provider.requests_to("messages")) >= 4
    assert fake_provider.max_in_flight == 1
    fake_provider.reset()
    fake_provider.set_default("messages", {"until_in_flight": 2, "hold_s": 3})
    done = subprocess.run([*base, "two", "--concurrency", "2"], cwd=tmp_path, env=run_env, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode in (0, 3), done.stderr
    assert fake_provider.max_in_flight == 2
