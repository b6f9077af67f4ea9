"""Probes of `score` on agent CLI exports, the live trajectories built from the same events,
and `footprint`: real captures read right, hostile or odd exports as clear errors or honest
records. Fixtures in tests/fixtures/probe_agents/ are real output of Claude Code 2.1.197 and
Codex 0.171.0 pointed at tests/servers/fake_provider.py on 127.0.0.1."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scoreboard.agents.exports import detect_format, read_export
from scoreboard.agents.trajectory import codex_trajectory, json_lines
from scoreboard.cli.main import main
from scoreboard.errors import ConfigError

FIX = Path(__file__).resolve().parent / "fixtures"
PROBE = FIX / "probe_agents"
EXPORTS = FIX / "agent_exports"


def lines_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def write_events(path: Path, events: list[dict]) -> Path:
    # ensure_ascii=False: as the CLIs print (Node's JSON.stringify, Rust's serde_json)
    path.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in events), encoding="utf-8")
    return path


# ------------------------------------------------------------------- real captures


def test_real_codex_failed_and_passed_commands_are_recorded():
    run = read_export(PROBE / "codex_two_cmds.jsonl")
    assert (run.format, run.status, run.output) == ("codex", "completed", "Done: hello.")
    assert [(c["name"], c["exit_code"], c["is_error"]) for c in run.tool_calls] == \
        [("command_execution", 3, True), ("command_execution", 0, False)]
    assert run.tool_calls[1]["args"] == {"command": "/bin/bash -lc 'cat notes.txt'"}
    assert (run.input_tokens, run.output_tokens, run.num_turns) == (12921, 14, 1)
    assert run.cost_usd is None and run.latency_ms is None  # Codex prints neither: unknown, not 0


def test_real_claude_bash_exit_and_read_are_recorded():
    run = read_export(PROBE / "claude_bash_fail_stream.jsonl")
    assert (run.format, run.status, run.output) == ("claude-stream", "completed", "Done: hello.")
    assert [(c["name"], c["is_error"]) for c in run.tool_calls] == [("Bash", True), ("Read", False)]
    assert run.tool_calls[0]["args"]["command"] == "echo oops; exit 3"
    assert (run.input_tokens, run.output_tokens, run.num_turns) == (10243, 13, 3)
    assert run.cost_usd == pytest.approx(0.030924) and run.latency_ms == 316.0
    assert run.warnings == []


# ------------------------------------------------------------------- line splitting


@pytest.mark.parametrize("sep", ["\u2028", "\u2029", "\x85"])
def test_a_line_separator_inside_a_string_does_not_split_the_event(tmp_path, sep):
    events = lines_of(EXPORTS / "codex_plain.jsonl")
    for e in events:
        if isinstance(e.get("item"), dict) and e["item"].get("type") == "agent_message":
            e["item"]["text"] = f"The answer{sep}is 42."
    path = write_events(tmp_path / "run.jsonl", events)
    run = read_export(path)
    assert run.output == f"The answer{sep}is 42." and run.status == "completed"
    stdout = path.read_text(encoding="utf-8")
    assert len(json_lines(stdout)) == len(events)


def test_claude_text_with_a_line_separator_is_read(tmp_path):
    events = lines_of(PROBE / "claude_bash_fail_stream.jsonl")
    events[-1]["result"] = "Done:\u2028hello."
    run = read_export(write_events(tmp_path / "c.jsonl", events))
    assert run.output == "Done:\u2028hello."


# ------------------------------------------------------------------- event order, ids, types


def test_codex_item_completed_before_started_keeps_the_completed_item(tmp_path):
    events = lines_of(PROBE / "codex_two_cmds.jsonl")
    events[2], events[3] = events[3], events[2]  # item_0 completed, then its started
    run = read_export(write_events(tmp_path / "ooo.jsonl", events))
    assert [(c["exit_code"], c["is_error"]) for c in run.tool_calls] == [(3, True), (0, False)]
    traj = codex_trajectory(events, cap=1000)
    assert [c["output"] for c in traj.tool_calls] == ["oops\n", "hello\n"]


def test_codex_an_id_completed_twice_with_other_content_is_two_items(tmp_path):
    events = lines_of(PROBE / "codex_two_cmds.jsonl")
    for e in events:  # a resumed session numbering its items from item_0 again
        if isinstance(e.get("item"), dict) and e["item"]["id"] == "item_1":
            e["item"]["id"] = "item_0"
    run = read_export(write_events(tmp_path / "dup.jsonl", events))
    assert [c["exit_code"] for c in run.tool_calls] == [3, 0]
    assert any("item_0" in w for w in run.warnings)


def test_codex_the_same_completed_event_twice_counts_once(tmp_path):
    events = lines_of(PROBE / "codex_two_cmds.jsonl")
    events.insert(4, events[3])
    run = read_export(write_events(tmp_path / "rep.jsonl", events))
    assert len(run.tool_calls) == 2
    assert any("repeated" in w for w in run.warnings)


def test_claude_a_repeated_tool_use_id_counts_once(tmp_path):
    events = lines_of(PROBE / "claude_bash_fail_stream.jsonl")
    events.insert(2, events[1])  # the Bash tool_use event printed twice
    run = read_export(write_events(tmp_path / "dup.jsonl", events))
    assert [c["name"] for c in run.tool_calls] == ["Bash", "Read"]
    assert any("toolu_call_0_79167ca8" in w for w in run.warnings)


def test_claude_tool_result_before_its_tool_use_still_marks_the_error(tmp_path):
    events = lines_of(PROBE / "claude_bash_fail_stream.jsonl")
    bash_use, result = events[1], events[3]
    events[1], events[3] = result, bash_use
    run = read_export(write_events(tmp_path / "ooo.jsonl", events))
    assert {c["name"]: c["is_error"] for c in run.tool_calls} == {"Bash": True, "Read": False}


@pytest.mark.parametrize("source", ["codex_two_cmds.jsonl", "claude_bash_fail_stream.jsonl"])
def test_an_unknown_leading_event_is_skipped_and_warned(tmp_path, source):
    events = [{"type": "session.configured", "model": "x"}] + lines_of(PROBE / source)
    path = write_events(tmp_path / "u.jsonl", events)
    assert detect_format(path.read_text()) == ("codex" if source.startswith("codex") else "claude-stream")
    run = read_export(path)
    assert run.status == "completed" and len(run.tool_calls) == 2
    assert any("session.configured" in w for w in run.warnings)


def test_codex_a_second_turn_cut_off_is_an_error(tmp_path):
    events = lines_of(PROBE / "codex_two_cmds.jsonl") + [{"type": "turn.started"}]
    run = read_export(write_events(tmp_path / "cut.jsonl", events))
    assert run.status == "error" and "cut off" in run.error
    assert run.input_tokens is None and run.output_tokens is None


# ------------------------------------------------------------------- figures


def test_negative_or_non_finite_figures_are_unknown_not_numbers(tmp_path):
    events = lines_of(PROBE / "claude_bash_fail_stream.jsonl")
    events[-1]["total_cost_usd"] = -1.0
    events[-1]["duration_ms"] = -5
    events[-1]["usage"]["output_tokens"] = -13
    run = read_export(write_events(tmp_path / "neg.jsonl", events))
    assert run.cost_usd is None and run.latency_ms is None and run.output_tokens is None
    assert any("total_cost_usd" in w for w in run.warnings)


# ------------------------------------------------------------------- hostile files via the CLI


def test_a_torn_last_line_names_the_file_and_line(tmp_path, capsys):
    # The CLI was cut off while printing its last event: a run that did not finish (scored, a
    # failure), named with the file and the line (tests/test_probe4_carried.py has more).
    path = tmp_path / "torn.jsonl"
    path.write_bytes((PROBE / "codex_two_cmds.jsonl").read_bytes()[:-30])
    assert main(["score", str(path), "--expect-status", "completed", "--output-dir", str(tmp_path)]) == 3
    err = capsys.readouterr().err
    assert "torn.jsonl: line 8 (the last) is cut off mid-event" in err


def test_an_oversized_export_with_flags_names_the_limit(tmp_path, capsys):
    path = tmp_path / "big.jsonl"
    with path.open("w") as f:
        f.write(json.dumps({"type": "thread.started", "thread_id": "t"}) + "\n")
        f.write(json.dumps({"type": "item.completed",
                            "item": {"id": "i", "type": "agent_message", "text": "x" * (17 << 20)}}) + "\n")
    assert main(["score", str(path), "--expect-status", "completed", "--output-dir", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "limits.max_file_bytes" in err and "read as a transcript" not in err


def test_deep_nesting_in_an_export_is_one_line(tmp_path):
    path = tmp_path / "deep.jsonl"
    path.write_text('{"type":"thread.started"}\n{"type":"turn.started","x":' + "[" * 100000 + "]" * 100000 + "}\n")
    with pytest.raises(ConfigError) as info:
        read_export(path)
    assert "deep.jsonl:2" in str(info.value)


# ------------------------------------------------------------------- footprint


def test_footprint_a_lone_surrogate_in_a_tool_schema_is_counted_not_a_crash(tmp_path, capsys):
    from scoreboard.agents.footprint import count_tokens

    path = tmp_path / "tools.json"
    path.write_text('[{"name": "x", "description": "bad \\ud800 here", "input_schema": {"type": "object"}}]')
    assert main(["footprint", str(path), "--json"]) == 0
    item = json.loads(capsys.readouterr().out)["setups"][0]["items"][0]
    body = '[{"name":"x","description":"bad \\ud800 here","input_schema":{"type":"object"}}]'
    assert item["bytes"] == len(body) and item["tokens"] == count_tokens(body)


@pytest.mark.parametrize("name, shown", [("sh\\ud800op", "sh\\ud800op"),
                                         ("a\\u001b]0;pwned\\u0007b", "a\\u001b]0;pwned\\u0007b")])
def test_footprint_an_mcp_server_name_is_printed_escaped(tmp_path, capsys, name, shown):
    path = tmp_path / "init.json"
    info = '{"name": "' + name + '", "version": "1"}'
    path.write_text('{"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "2025-06-18", '
                    '"capabilities": {}, "serverInfo": ' + info + '}}')
    assert main(["footprint", str(path)]) == 0
    out = capsys.readouterr().out
    assert f"MCP initialize: {shown} 1, protocol 2025-06-18" in out
    assert "\x1b" not in out and "\x07" not in out


# ------------------------------------------------------------------- replay: the live run payload


LIVE = {"id": "r", "status": "completed", "output": "ok", "tool_calls": [], "latency_ms": 5}


@pytest.mark.parametrize("extra, field", [({"latency_ms": -5}, "latency_ms"), ({"estimated_cost": -1}, "estimated_cost"),
                                          ({"input_tokens": -3}, "input_tokens"), ({"id": True}, "id")])
def test_a_live_run_with_an_impossible_figure_is_malformed(extra, field):
    from scoreboard.cli.replay import parse_run_payload
    from scoreboard.errors import SubjectError

    with pytest.raises(SubjectError) as info:
        parse_run_payload(json.dumps({**LIVE, **extra}), "http://127.0.0.1:1/x")
    assert f"field '{field}'" in str(info.value) and info.value.kind == "invalid-output"


def test_a_live_run_nested_too_deep_is_malformed_not_a_recursion_error():
    from scoreboard.cli.replay import parse_run_payload
    from scoreboard.errors import SubjectError

    with pytest.raises(SubjectError) as info:
        parse_run_payload('{"run":' + "[" * 100000 + "]" * 100000 + "}", "u")
    assert "nested too deeply" in str(info.value)


def test_replay_of_a_negative_cost_fails_instead_of_passing_max_cost(tmp_path, capsys):
    from tests.servers.fake_agent import FakeAgent

    path = tmp_path / "t.json"
    path.write_text(json.dumps({"prompt": "p", "agentId": "a", "runs": [],
                                "cases": [{"tag": "x", "expectedStatus": "completed", "maxCost": 0.05}]}))
    with FakeAgent(token="T", run={**LIVE, "estimated_cost": -1.0}) as srv:
        code = main(["replay", str(path), "--worker", srv.base_url, "--token", "T",
                     "--output-dir", str(tmp_path / "out"), "--format", "json"])
    assert code == 2
    assert "field 'estimated_cost'" in capsys.readouterr().err


# ------------------------------------------------------------------- transcripts


def test_a_transcript_run_sharing_an_id_and_used_by_no_case_is_listed_unmatched(tmp_path, capsys):
    path = tmp_path / "dup.json"
    run = {"status": "completed", "latency_ms": 1, "tool_calls": [], "output": "a"}
    path.write_text(json.dumps({"cases": [{"id": "run_1", "expectedStatus": "completed"}],
                                "runs": [{"id": "run_1", **run}, {"id": "run_1", **run, "output": "b"}]}))
    code = main(["score", str(path), "--output-dir", str(tmp_path / "out"), "--format", "json", "--json"])
    captured = capsys.readouterr()
    assert code == 0
    block = json.loads(captured.out)["run"]["transcript"]
    assert block["unmatched_runs"] == ["run_1"]
    assert "runs[1]: run id 'run_1' is also runs[0]'s" in captured.err
