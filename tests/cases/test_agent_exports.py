"""Readers of real Claude Code and Codex exports (captured against the loopback fake provider)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scoreboard.agents.exports import detect_format, read_export
from scoreboard.errors import ConfigError

EXPORTS = Path(__file__).resolve().parent.parent / "fixtures" / "agent_exports"


@pytest.mark.parametrize("name, fmt", [
    ("claude_plain.json", "claude-json"), ("claude_tool.json", "claude-json"), ("claude_error.json", "claude-json"),
    ("claude_plain_stream.jsonl", "claude-stream"), ("claude_tool_stream.jsonl", "claude-stream"),
    ("claude_denied_stream.jsonl", "claude-stream"), ("claude_error_stream.jsonl", "claude-stream"),
    ("codex_plain.jsonl", "codex"), ("codex_tool.jsonl", "codex"), ("codex_error.jsonl", "codex"),
])
def test_format_is_detected_from_content(name, fmt):
    assert detect_format((EXPORTS / name).read_text()) == fmt
    assert read_export(EXPORTS / name).format == fmt


def test_detect_rejects_other_files():
    assert detect_format('{"cases": [], "runs": []}') is None
    assert detect_format("not json at all") is None
    assert detect_format("") is None


def test_claude_json_plain():
    run = read_export(EXPORTS / "claude_plain.json")
    assert run.id == "claude_plain"
    assert (run.status, run.output, run.error) == ("completed", "The answer is 42.", None)
    assert (run.input_tokens, run.output_tokens) == (5121, 4)
    assert run.cost_usd == pytest.approx(0.015423)
    assert (run.latency_ms, run.num_turns, run.model) == (185, 1, "claude-sonnet-4-5")
    assert run.tool_calls == [] and run.tool_calls_known is False  # this format carries none


def test_claude_json_two_turns_with_a_tool():
    run = read_export(EXPORTS / "claude_tool.json")
    assert (run.status, run.num_turns) == ("completed", 2)
    assert run.output == "The notes say: hello from notes."
    assert (run.input_tokens, run.output_tokens) == (10258, 14)


def test_claude_json_error():
    run = read_export(EXPORTS / "claude_error.json")
    assert run.status == "error"
    assert "API Error: 500" in run.error and "API status 500" in run.error
    assert (run.input_tokens, run.output_tokens, run.cost_usd) == (0, 0, 0.0)


def test_claude_stream_tool_calls_with_arguments():
    run = read_export(EXPORTS / "claude_tool_stream.jsonl")
    assert run.status == "completed" and run.tool_calls_known
    assert run.output == "The notes say: hello from notes."
    assert [(c["name"], c["args"]) for c in run.tool_calls] == [("Read", {"file_path": "/tmp/cap/work1/notes.txt"})]
    assert run.tool_calls[0]["is_error"] is False
    assert (run.num_turns, run.input_tokens, run.output_tokens) == (2, 10258, 14)
    assert run.cost_usd == pytest.approx(0.030984)
    assert run.session_id and run.model == "claude-sonnet-4-5"


def test_claude_stream_records_a_failed_tool_call():
    run = read_export(EXPORTS / "claude_denied_stream.jsonl")
    assert run.status == "completed"
    assert run.tool_calls[0]["name"] == "Bash"
    assert run.tool_calls[0]["args"]["command"] == "rm -rf build"
    assert run.tool_calls[0]["is_error"] is True


def test_claude_stream_plain_and_error():
    plain = read_export(EXPORTS / "claude_plain_stream.jsonl")
    assert (plain.status, plain.output, plain.tool_calls) == ("completed", "The answer is 42.", [])
    error = read_export(EXPORTS / "claude_error_stream.jsonl")
    assert error.status == "error" and "500" in error.error


def test_claude_stream_cut_off_before_the_result(tmp_path):
    lines = (EXPORTS / "claude_tool_stream.jsonl").read_text().splitlines()
    cut = tmp_path / "cut.jsonl"
    cut.write_text("\n".join(lines[:-1]) + "\n")
    run = read_export(cut)
    assert run.status == "error" and "without a result event" in run.error
    assert run.output == "The notes say: hello from notes."
    assert run.input_tokens is None and run.cost_usd is None


def test_codex_plain():
    run = read_export(EXPORTS / "codex_plain.jsonl")
    assert (run.status, run.output) == ("completed", "The answer is 42.")
    assert (run.input_tokens, run.output_tokens) == (4307, 4)
    # Codex prints no cost and no duration: unknown, never zero
    assert run.cost_usd is None and run.latency_ms is None
    assert run.num_turns == 1 and run.session_id


def test_codex_command_execution_is_a_tool_call():
    run = read_export(EXPORTS / "codex_tool.jsonl")
    assert run.status == "completed"
    assert run.output == "The notes say: hello from notes."
    assert run.tool_calls == [{"name": "command_execution", "args": {"command": "/bin/bash -lc 'cat notes.txt'"},
                               "exit_code": 0, "is_error": False}]
    assert (run.input_tokens, run.output_tokens) == (8620, 10)


def test_codex_error_and_cut_off(tmp_path):
    run = read_export(EXPORTS / "codex_error.jsonl")
    assert run.status == "error" and "high demand" in run.error
    assert run.input_tokens is None and run.output is None
    lines = (EXPORTS / "codex_plain.jsonl").read_text().splitlines()
    cut = tmp_path / "cut.jsonl"
    cut.write_text("\n".join(lines[:-1]) + "\n")
    run = read_export(cut)
    assert run.status == "error" and "without turn.completed" in run.error


def test_codex_mcp_and_other_items(tmp_path):
    events = [{"type": "thread.started", "thread_id": "t"}, {"type": "turn.started"},
              {"type": "item.completed", "item": {"id": "i0", "type": "mcp_tool_call", "server": "docs",
                                                  "tool": "search_docs", "arguments": {"q": "x"},
                                                  "status": "completed"}},
              {"type": "item.completed", "item": {"id": "i1", "type": "reasoning", "text": "hm"}},
              {"type": "item.completed", "item": {"id": "i2", "type": "error", "message": "unknown model"}},
              {"type": "item.completed", "item": {"id": "i3", "type": "agent_message", "text": "done"}},
              {"type": "turn.completed", "usage": {"input_tokens": 10, "output_tokens": 2}}]
    p = tmp_path / "mcp.jsonl"
    p.write_text("\n".join(json.dumps(e) for e in events))
    run = read_export(p)
    assert [c["name"] for c in run.tool_calls] == ["search_docs"]
    assert run.tool_calls[0]["args"] == {"q": "x"} and run.tool_calls[0]["server"] == "docs"
    assert run.status == "completed" and run.output == "done"
    assert run.warnings == ["codex error item: unknown model"]


def test_explicit_format_and_bad_files(tmp_path):
    assert read_export(EXPORTS / "codex_plain.jsonl", "codex").status == "completed"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type": "turn.started"}\nnot json\n')
    with pytest.raises(ConfigError, match=r"bad.jsonl:2"):
        read_export(bad, "codex")
    with pytest.raises(ConfigError, match="not a recognised agent export"):
        read_export(_write(tmp_path / "x.txt", "hello"))
    with pytest.raises(ConfigError, match="file not found"):
        read_export(tmp_path / "nope.json")
    with pytest.raises(ConfigError, match="result object"):
        read_export(_write(tmp_path / "o.json", '{"type": "other"}'), "claude-json")


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path
