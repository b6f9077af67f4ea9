"""`scoreboard score` end to end (in-process through run_cli; a real subprocess where a read could block): exit codes, files, one-line errors."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_inprocess import run_cli

FIX = Path(__file__).resolve().parent / "fixtures"
TRANSCRIPTS = FIX / "transcripts"
EXPORTS = FIX / "agent_exports"
SRC = str(Path(__file__).resolve().parent.parent / "src")


def score(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return run_cli(["score", *args], cwd)


def score_process(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    """A real process, for a test whose failure would be a read that blocks for ever: the timeout ends it."""
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, "-m", "scoreboard", "score", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def reports(cwd: Path, name: str) -> dict[str, Path]:
    folder = cwd / "eval-results" / name
    return {p.suffix: p for p in folder.glob("*.*") if p.is_file()}


def load_json_report(cwd: Path, name: str) -> dict:
    return json.loads(reports(cwd, name)[".json"].read_text())


def test_all_pass_exits_0_and_writes_reports_under_the_transcript_stem(tmp_path):
    src = TRANSCRIPTS / "search.json"
    proc = score(tmp_path, src)
    assert proc.returncode == 0, proc.stderr
    files = reports(tmp_path, "search")
    assert ".json" in files and ".md" in files
    report = json.loads(files[".json"].read_text())
    assert report["schema"] == "scoreboard.report/v2"
    assert report["run"]["suite"] == "search"
    sources = report["run"]["transcript"]["sources"]
    assert sources[0]["sha256"] == hashlib.sha256(src.read_bytes()).hexdigest()
    assert report["run"]["transcript"]["path"] == str(src)
    assert [g["gate"] for g in report["gates"]] == ["all-pass"] and report["gates"][0]["passed"]
    assert report["plan"]["cases"][0]["metadata"]["matched_by"] == "tag"
    # the terminal table (plain text: stdout is not a TTY)
    assert "case" in proc.stdout and "matched run" in proc.stdout
    assert "run_1 (tag)" in proc.stdout and "passed" in proc.stdout


def test_a_failing_case_exits_3_with_reasons(tmp_path):
    proc = score(tmp_path, TRANSCRIPTS / "failing.json")
    assert proc.returncode == 3, proc.stderr
    assert "latency 5000 ms > 100 ms" in proc.stdout
    report = load_json_report(tmp_path, "failing")
    assert {a["case_id"]: a["status"] for a in report["attempts"]} == {"ok": "passed", "slow": "failed"}
    assert report["gates"][0]["passed"] is False


def test_unknown_cost_is_not_a_pass(tmp_path):
    proc = score(tmp_path, TRANSCRIPTS / "all_fields.json")
    assert proc.returncode == 3
    report = load_json_report(tmp_path, "all_fields")
    status = {a["case_id"]: a["status"] for a in report["attempts"]}
    assert status == {"good": "passed", "bad": "failed", "unknown-cost": "unassessed"}
    assert "not assessed" in proc.stdout


def test_empty_cases_fail_the_all_pass_rule_with_a_report(tmp_path):
    proc = score(tmp_path, TRANSCRIPTS / "empty_cases.json")
    assert proc.returncode == 3
    assert "no cases" in proc.stderr
    report = load_json_report(tmp_path, "empty_cases")
    assert report["attempts"] == [] and report["gates"][0]["passed"] is False


def test_a_case_matching_no_run_is_an_execution_error(tmp_path):
    proc = score(tmp_path, TRANSCRIPTS / "matching.json")
    assert proc.returncode == 2
    report = load_json_report(tmp_path, "matching")
    ghost = [a for a in report["attempts"] if a["case_id"] == "ghost"][0]
    assert ghost["status"] == "error" and "no run matched" in ghost["error"]
    assert len(report["attempts"]) == 7
    assert "matches 2 runs" in proc.stderr  # the duplicate-tag warning
    assert any("matches 2 runs" in w for w in report["run"]["transcript"]["warnings"])


@pytest.mark.parametrize("name", ["invalid_unknown_field.json", "invalid_wrong_type.json",
                                  "invalid_missing_run_field.json", "invalid_no_cases.json",
                                  "invalid_no_expectation.json", "invalid_tool_both.json", "invalid_json.json"])
def test_invalid_transcripts_exit_1_with_one_line_and_nothing_written(tmp_path, name):
    proc = score(tmp_path, TRANSCRIPTS / name)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("scoreboard: error: ") and name in lines[0]
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "eval-results").exists()


def test_missing_file_exits_1(tmp_path):
    proc = score(tmp_path, tmp_path / "nope.json")
    assert proc.returncode == 1 and "not found" in proc.stderr
    assert not (tmp_path / "eval-results").exists()


def test_json_flag_prints_the_report_and_output_dir_is_honoured(tmp_path):
    proc = score(tmp_path, TRANSCRIPTS / "search.json", "--json", "--output-dir", "out", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["run"]["suite"] == "search"
    assert "matched run" in proc.stderr  # the table moved to stderr
    files = list((tmp_path / "out" / "search").glob("*.*"))
    assert [p.suffix for p in files if p.is_file()] == [".json"]


def test_transcript_rejects_export_flags(tmp_path):
    proc = score(tmp_path, TRANSCRIPTS / "search.json", "--expect-contains", "x")
    assert proc.returncode == 1 and "carries its own cases" in proc.stderr


# --------------------------------------------------------------------------- agent exports


def test_exports_scored_with_flags(tmp_path):
    proc = score(tmp_path, EXPORTS / "claude_plain.json", EXPORTS / "claude_plain_stream.jsonl",
                 EXPORTS / "codex_plain.jsonl", "--expect-contains", "42", "--expect-status", "completed",
                 "--max-tokens", "100000")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = load_json_report(tmp_path, "agent-exports")
    assert [a["case_id"] for a in report["attempts"]] == ["claude_plain", "claude_plain_stream", "codex_plain"]
    formats = [s["format"] for s in report["run"]["transcript"]["sources"]]
    assert formats == ["claude-json", "claude-stream", "codex"]


def test_exports_tool_check_and_unknown_cost(tmp_path):
    proc = score(tmp_path, EXPORTS / "claude_tool_stream.jsonl", EXPORTS / "codex_tool.jsonl",
                 "--required-tool", "Read", "--max-cost", "1", "--name", "tools")
    assert proc.returncode == 3
    report = load_json_report(tmp_path, "tools")
    status = {a["case_id"]: a["status"] for a in report["attempts"]}
    assert status == {"claude_tool_stream": "passed", "codex_tool": "failed"}
    codex = [a for a in report["attempts"] if a["case_id"] == "codex_tool"][0]
    assert {g["grader"]: g["passed"] for g in codex["grades"]} == {"tool-calls": False, "max-cost": None,
                                                               "status": True}


def test_exports_with_a_cases_file_and_forced_format(tmp_path):
    cases = tmp_path / "cases.json"
    cases.write_text(json.dumps({"cases": [{"id": "codex_error", "expectedStatus": "error"},
                                           {"id": "codex_tool", "requiredTools": ["command_execution"]}]}))
    proc = score(tmp_path, "--from", "codex", EXPORTS / "codex_error.jsonl", EXPORTS / "codex_tool.jsonl",
                 "--cases", cases)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_export_errors(tmp_path):
    proc = score(tmp_path, EXPORTS / "claude_tool.json", "--required-tool", "Read")
    assert proc.returncode == 1 and "stream-json" in proc.stderr
    proc = score(tmp_path, EXPORTS / "codex_plain.jsonl")
    assert proc.returncode == 1 and "need expectations" in proc.stderr
    assert not (tmp_path / "eval-results").exists()
    # a forced format wins over detection: a Claude file read as Codex has no turn.completed
    proc = score(tmp_path, "--from", "codex", EXPORTS / "claude_plain.json", "--expect-status", "completed")
    assert proc.returncode == 3
    assert "status 'error'" in proc.stdout


def test_an_export_that_is_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "export.jsonl"
    os.mkfifo(fifo)  # nothing will ever write to it: reading it would block forever
    for args in (("--from", "codex", fifo, "--expect-status", "completed"), (fifo, "--expect-status", "completed")):
        proc = score_process(tmp_path, *args)
        assert proc.returncode == 1, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1 and "export.jsonl" in proc.stderr
    assert not (tmp_path / "eval-results").exists()


def test_table_uses_rich_on_a_terminal():
    import io

    from scoreboard.cli.score import print_table

    class Tty(io.StringIO):
        def isatty(self):
            return True

    out = Tty()
    print_table([("c1", "r1 (tag)", "failed", "status: [x] expected")], ("case", "matched run", "status", "reasons"), out)
    text = out.getvalue()
    assert "┃" in text or "│" in text  # a box-drawn table
    assert "[x] expected" in text  # markup in data is escaped, not interpreted
    plain = io.StringIO()
    print_table([("c1", "r1", "passed", "")], ("case", "run", "status", "reasons"), plain)
    assert plain.getvalue().splitlines() == ["case  run  status  reasons", "c1    r1   passed"]


def test_a_file_that_is_no_export_given_expectations_says_so(tmp_path):
    # A file that is neither a transcript nor an export, given --expect-contains, was told only
    # that "a transcript carries its own cases": it never said the file was not an export.
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_text('not json\n{"a": 1}\n')
    proc = score(tmp_path, garbage, "--expect-contains", "42")
    assert proc.returncode == 1 and len(proc.stderr.strip().splitlines()) == 1
    assert "garbage.jsonl" in proc.stderr and "not a Claude Code or Codex export" in proc.stderr
    assert "--from claude-json, claude-stream or codex" in proc.stderr
