"""`scoreboard replay` against the loopback FakeAgent, through the CLI (in-process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from scoreboard.cases.transcript_model import RunRecord
from scoreboard.cli.replay import diff_runs, parse_run_payload, redact_argv
from scoreboard.errors import SubjectError
from tests.cli_inprocess import run_cli
from tests.servers.fake_agent import FakeAgent

FIX = Path(__file__).resolve().parent / "fixtures" / "transcripts"
SRC = str(Path(__file__).resolve().parent.parent / "src")
TOKEN = "s3cret-member-jwt"
LIVE_RUN = {"tool_calls": [{"name": "search", "args": {"q": "x"}}, {"name": "fetch", "args": {}}],
            "output": "looks ok to me", "estimated_cost": 0.02, "input_tokens": 55, "output_tokens": 70,
            "latency_ms": 900}
SETTINGS_ENV = ("SCOREBOARD_WORKER_URL", "SCOREBOARD_TOKEN", "SCOREBOARD_ROOM_ID", "SCOREBOARD_AGENT_ID",
                "SCOREBOARD_PROMPT")


def replay(cwd: Path, *args: str, env: dict | None = None, process: bool = False) -> subprocess.CompletedProcess:
    """In-process (the report's run.argv is this call's arguments, never the host process's:
    tests/test_cli_argv.py); `process=True` runs the real `python -m scoreboard`."""
    base = {k: v for k, v in os.environ.items() if k not in SETTINGS_ENV}
    full = {**base, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", ""), **(env or {})}
    if process:
        return subprocess.run([sys.executable, "-m", "scoreboard", "replay", *map(str, args)], cwd=cwd, env=full,
                              capture_output=True, text=True, timeout=120)
    return run_cli(["replay", *args], cwd, full)


def report_of(cwd: Path, name: str = "replay") -> dict:
    files = sorted((cwd / "eval-results" / name).glob("*.json"))
    assert len(files) == 1, files
    return json.loads(files[0].read_text())


def all_written_text(cwd: Path) -> str:
    return "\n".join(p.read_text(errors="replace") for p in (cwd / "eval-results").rglob("*") if p.is_file())


@pytest.fixture
def agent():
    with FakeAgent(token=TOKEN, run=LIVE_RUN) as srv:
        yield srv


def test_success_scores_every_case_on_one_invoke_and_diffs_runs0(tmp_path, agent):
    proc = replay(tmp_path, FIX / "replay.json", "--worker", agent.base_url, "--token", TOKEN)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    calls = agent.requests_to("invoke")
    assert len(calls) == 1  # one live run for all cases
    call = calls[0]
    assert call["path"] == "/agents/assistant/invoke"
    assert call["headers"]["authorization"] == f"Bearer {TOKEN}"
    assert call["json"] == {"stream": False, "prompt": "search then answer", "roomId": "lobby",
                            "agentId": "assistant"}
    report = report_of(tmp_path)
    assert {a["case_id"]: a["status"] for a in report["attempts"]} == {"search": "passed", "budget": "passed"}
    block = report["run"]["replay"]
    assert block["error"] is None and block["live_run"]["id"].startswith("run_")
    diff = block["diff"]
    assert diff["baseline_run"] == "run_1"
    assert diff["tools_added"] == ["fetch"] and diff["tools_removed"] == ["old_tool"]
    assert diff["estimated_cost"] == {"baseline": 0.01, "live": 0.02, "delta": 0.01}
    assert diff["input_tokens"] == {"baseline": 40, "live": 55, "delta": 15}
    assert diff["output_tokens"] == {"baseline": 80, "live": 70, "delta": -10}
    assert "tools added: fetch; removed: old_tool" in proc.stdout
    assert "estimated cost: $0.01 -> $0.02 (+$0.01)" in proc.stdout
    # the token is nowhere in what was written or printed
    assert TOKEN not in all_written_text(tmp_path)
    assert TOKEN not in proc.stdout + proc.stderr
    assert "<redacted>" in " ".join(report["run"]["argv"])
    assert report["plan"]["variants"][0]["subject"]["token"] == "<redacted>"


def test_flags_beat_the_file_and_the_file_beats_env(tmp_path, agent):
    env = {"SCOREBOARD_WORKER_URL": agent.base_url, "SCOREBOARD_TOKEN": TOKEN, "SCOREBOARD_PROMPT": "from env",
           "SCOREBOARD_ROOM_ID": "env-room", "SCOREBOARD_AGENT_ID": "env-agent"}
    proc = replay(tmp_path, FIX / "replay.json", "--prompt", "from flag", "--format", "json", env=env)
    assert proc.returncode == 0, proc.stderr
    body = agent.requests_to("invoke")[-1]["json"]
    assert body == {"stream": False, "prompt": "from flag", "roomId": "lobby", "agentId": "assistant"}
    # a transcript without prompt/roomId/agentId falls back to the environment
    bare = tmp_path / "bare.json"
    data = json.loads((FIX / "replay.json").read_text())
    for key in ("prompt", "roomId", "agentId"):
        data.pop(key)
    bare.write_text(json.dumps(data))
    proc = replay(tmp_path, bare, "--format", "json", env=env)
    assert proc.returncode == 0, proc.stderr
    last = agent.requests_to("invoke")[-1]
    assert last["path"] == "/agents/env-agent/invoke"
    assert last["json"] == {"stream": False, "prompt": "from env", "roomId": "env-room", "agentId": "env-agent"}
    assert report_of(tmp_path, "bare")["plan"]["cases"][0]["input"] == "from env"


def test_path_template_and_timeout_flags(tmp_path, agent):
    proc = replay(tmp_path, FIX / "replay.json", "--worker", agent.base_url + "/", "--token", TOKEN,
                  "--agent", "helper", "--path-template", "agents/{agent}/invoke", "--timeout", "10000")
    assert proc.returncode == 0, proc.stderr
    assert agent.requests_to("invoke")[-1]["path"] == "/agents/helper/invoke"


def test_401_exits_2_with_the_report_written(tmp_path, agent):
    proc = replay(tmp_path, FIX / "replay.json", "--worker", agent.base_url, "--token", "wrong-token")
    assert proc.returncode == 2
    errors = [line for line in proc.stderr.splitlines() if line.startswith("scoreboard: error:")]
    assert len(errors) == 1 and "HTTP 401" in errors[0]
    report = report_of(tmp_path)
    assert [a["status"] for a in report["attempts"]] == ["error", "error"]
    assert all("HTTP 401" in a["error"] for a in report["attempts"])
    assert report["run"]["replay"]["error"].startswith("HTTP 401")
    assert "wrong-token" not in all_written_text(tmp_path) + proc.stdout + proc.stderr
    assert len(agent.requests_to("invoke")) == 1


def test_slow_agent_times_out_exit_2(tmp_path):
    with FakeAgent(token=TOKEN, mode="slow", slow_s=5) as srv:
        proc = replay(tmp_path, FIX / "replay.json", "--worker", srv.base_url, "--token", TOKEN, "--timeout", "300")
    assert proc.returncode == 2
    assert "timed out after 300 ms" in proc.stderr
    report = report_of(tmp_path)
    assert all(a["status"] == "error" and "timed out" in a["error"] for a in report["attempts"])


@pytest.mark.parametrize("mode, needle", [("malformed", "not JSON"),
                                          ("missing", "missing required run fields: output, tool_calls, latency_ms")])
def test_malformed_or_incomplete_payload_exits_2(tmp_path, mode, needle):
    with FakeAgent(token=TOKEN, mode=mode) as srv:
        proc = replay(tmp_path, FIX / "replay.json", "--worker", srv.base_url, "--token", TOKEN)
    assert proc.returncode == 2
    assert needle in proc.stderr
    report = report_of(tmp_path)
    assert all(a["status"] == "error" and needle in a["error"] for a in report["attempts"])
    assert report["run"]["replay"]["diff"] is None


def test_unreachable_worker_exits_2(tmp_path):
    with FakeAgent(token=TOKEN) as srv:
        url = srv.base_url
    proc = replay(tmp_path, FIX / "replay.json", "--worker", url, "--token", TOKEN, "--timeout", "2000")
    assert proc.returncode == 2 and "cannot reach the agent" in proc.stderr


@pytest.mark.parametrize("args, needle", [
    ((), "needs the worker"),
    (("--worker", "http://127.0.0.1:9"), "needs the token"),
    (("--worker", "127.0.0.1:9", "--token", "t"), "must start with http"),
])
def test_missing_settings_exit_1_before_anything_is_sent(tmp_path, args, needle):
    proc = replay(tmp_path, FIX / "replay.json", *args)
    assert proc.returncode == 1 and needle in proc.stderr
    assert not (tmp_path / "eval-results").exists()


def test_invalid_transcript_exits_1(tmp_path):
    proc = replay(tmp_path, FIX / "invalid_unknown_field.json", "--worker", "http://127.0.0.1:9", "--token", "t")
    assert proc.returncode == 1 and "expectedStatuss" in proc.stderr


def test_no_baseline_run_means_no_diff(tmp_path, agent):
    t = tmp_path / "nobase.json"
    data = json.loads((FIX / "replay.json").read_text())
    data["runs"] = []
    t.write_text(json.dumps(data))
    proc = replay(tmp_path, t, "--worker", agent.base_url, "--token", TOKEN)
    assert proc.returncode == 0, proc.stderr
    assert report_of(tmp_path, "nobase")["run"]["replay"]["diff"] is None
    assert "no runs[0] to compare with" in proc.stdout


# --------------------------------------------------------------------------- units


def test_payload_forms():
    run = {"id": "r9", "status": "completed", "latency_ms": 5, "tool_calls": [{"name": "a"}], "output": "x",
           "agent": "extra fields are fine"}
    assert parse_run_payload(json.dumps({"run": run})).id == "r9"
    top = parse_run_payload(json.dumps(run))
    assert (top.id, top.cost_usd, top.input_tokens) == ("r9", None, None)
    with pytest.raises(SubjectError, match="expected a run object"):
        parse_run_payload("[1, 2]")
    with pytest.raises(SubjectError, match="field 'latency_ms'"):
        parse_run_payload(json.dumps({**run, "latency_ms": "fast"}))
    with pytest.raises(SubjectError, match=r"missing required run fields: tool_calls\.0\.name"):
        parse_run_payload(json.dumps({**run, "tool_calls": [{"args": {}}]}))


def test_diff_with_unknown_figures():
    base = RunRecord(id="b", status="completed", output="", tool_calls=[{"name": "a"}], cost_usd=None,
                     input_tokens=10, output_tokens=None)
    live = RunRecord(id="l", status="failed", output="", tool_calls=[{"name": "a"}, {"name": "a"}],
                     cost_usd=0.5, input_tokens=7, output_tokens=3)
    d = diff_runs(base, live)
    assert d["estimated_cost"]["delta"] is None and d["output_tokens"]["delta"] is None
    assert d["input_tokens"]["delta"] == -3
    assert d["tools_added"] == [] and d["tools_removed"] == []
    assert d["tool_calls"] == {"baseline": 1, "live": 2, "delta": 1}
    assert d["status"] == {"baseline": "completed", "live": "failed", "changed": True}


def test_redact_argv():
    assert redact_argv(["x.json", "--token", "abc", "--token=abc", "--prompt", "say abc"], "abc") == \
        ["x.json", "--token", "<redacted>", "--token=<redacted>", "--prompt", "say <redacted>"]
