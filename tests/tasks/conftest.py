"""Agent-task test settings: the real CLIs (marker agent_cli) and the example task folder."""

from __future__ import annotations


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "agent_cli: runs the real Claude Code / Codex CLIs against a loopback fake server "
        "(skipped when they are not installed under SCOREBOARD_TEST_CLI_DIR or ./.agent-clis)")
