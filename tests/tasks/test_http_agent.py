"""An HTTP agent endpoint as a task's agent: a loopback agent server (started here) gets the
instruction, the workspace path, the fixture's address and the agent's variables in its
request body, really works in the workspace (shell commands with their exit codes) and against
the example's real shop, and reports its trajectory in its JSON answer, read through
`tool_calls_path` and `commands_path`. It runs outside the sandbox: its attempts say so, and a
suite that requires isolation refuses it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from scoreboard.engine.pipeline import RunOptions, run
from scoreboard.errors import ConfigError
from scoreboard.suite.load import load_suite
from scoreboard.tasks.sandbox import bwrap_path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "agent-task"
BIG = 20_000  # bytes one command prints: past the task's 8192-byte cap
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _work(body: dict) -> dict:
    """The agent: shell commands in the workspace, the shop's plain pages over HTTP."""
    ws, url, env = Path(body["workspace"]), body["fixture_url"], body["env"]
    shell, calls = [], []

    def sh(command: str) -> None:
        done = subprocess.run(command, shell=True, cwd=ws, capture_output=True, text=True, timeout=30, check=False,
                              env={**os.environ, **env})
        shell.append({"command": command, "exit_code": done.returncode, "output": done.stdout + done.stderr})

    def fetch(path: str, data: dict | None = None) -> dict:
        request = urllib.request.Request(url + path, data=json.dumps(data).encode() if data else None,
                                         method="POST" if data else "GET")
        with OPENER.open(request, timeout=10) as resp:
            text = resp.read().decode()
        calls.append({"name": "fetch", "arguments": json.dumps({"path": path, "body": data}), "output": text})
        return json.loads(text)

    sh("cat AGENTS.md")
    found = fetch("/search?q=backpack&color=blue&max_price=80")["results"]
    best = min((p for p in found if p["in_stock"]), key=lambda p: p["price"])
    fetch("/wishlist", {"product_id": best["id"]})
    sh(f"mkdir -p scratch && echo saved {best['id']} > scratch/log.txt && test \"$SHOP_URL\" = {url}")
    sh("test -e notes/none")  # exit 1, reported as such
    sh(f"python3 -c \"print('x' * {BIG - 1})\"")
    return {"answer": {"text": f"Saved {best['name']} ({best['id']})."}, "trace": {"calls": calls, "shell": shell}}


class AgentServer:
    """The HTTP agent endpoint on 127.0.0.1 (a thread), keeping the bodies it was sent."""

    def __init__(self):
        self.bodies: list[dict] = []
        self.seen_workspace: list[bool] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.bodies.append(body)
                outer.seen_workspace.append(Path(body["workspace"], "AGENTS.md").is_file())
                data = json.dumps(_work(body)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/agent"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def agent():
    server = AgentServer()
    yield server
    server.close()


def _suite(folder: Path, agent: AgentServer, *, paths: bool = True, **extra) -> Path:
    shutil.copytree(EXAMPLE / "tasks", folder / "tasks")
    subject = {"type": "http", "url": agent.url, "output_path": "answer.text",
               "body": {"instruction": "{{input}}", "workspace": "{{workspace}}",
                        "fixture_url": "{{fixture_url}}", "env": "{{agent_env}}"}}
    if paths:
        subject |= {"tool_calls_path": "trace.calls", "commands_path": "trace.shell"}
    suite = {"name": "http-agent", "cases": "tasks", "output_dir": "out", **extra,
             "variants": {"remote": {"subject": subject, "params": {"mode": "ordinary"}}}}
    (folder / "suite.json").write_text(json.dumps(suite))
    return folder / "suite.json"


def test_http_agent_works_in_the_workspace_and_reports_its_trajectory(tmp_path, agent):
    report = run(load_suite(_suite(tmp_path, agent)), RunOptions(formats=["json"], progress=False)).report
    (attempt,) = report["attempts"]
    task = attempt["subject_info"]["task"]
    assert attempt["status"] == "passed", attempt["grades"]
    assert task["checks"][0]["reason"].startswith("the wishlist holds exactly p2")  # the shop's real state
    (body,) = agent.bodies
    assert agent.seen_workspace == [True]  # the workspace existed, seeded, when the agent was called
    assert body["fixture_url"] == body["env"]["SCOREBOARD_FIXTURE_URL"] == body["env"]["SHOP_URL"]
    assert body["fixture_url"] in body["instruction"]
    assert task["isolation"]["isolated"] is False and task["isolation"]["kind"] == "remote"
    assert task["isolation"]["note"].startswith("not isolated")
    calls = attempt["output"]["tool_calls"]
    commands = [c for c in calls if "command" in c]
    assert [c["exit_code"] for c in commands] == [0, 0, 1, 0]
    assert "AGENTS.md" in commands[0]["command"] and commands[0]["output"]
    big = commands[3]
    assert big["output_bytes"] == BIG and big["output_truncated"] is True and len(big["output"]) == 8192
    assert [c["args"]["path"] for c in calls if c["name"] == "fetch"][1] == "/wishlist"
    m = task["metrics"]
    assert m["commands"] == 4 and m["tool_calls"] == 6
    assert m["tool_output_bytes"] == sum(c["output_bytes"] for c in calls) > BIG
    assert attempt["subject_info"]["agent"] == {"trajectory_known": True, "tool_output_cap_bytes": 8192,
                                                "remote": True}
    assert report["summary"]["tasks"]["variants"]["remote"]["benign_utility"]["value"] == 1.0


def test_an_http_agent_that_reports_no_trajectory_has_unknown_figures(tmp_path, agent):
    report = run(load_suite(_suite(tmp_path, agent, paths=False)), RunOptions(formats=["json"], progress=False)).report
    (attempt,) = report["attempts"]
    metrics = attempt["subject_info"]["task"]["metrics"]
    assert metrics["commands"] is None and metrics["tool_output_bytes"] is None  # unknown, never 0
    grades = {g["grader"]: g for g in attempt["grades"]}
    assert grades["task-check:wishlist"]["passed"] is True  # the checks read the state: the task was done
    assert grades["commands"]["passed"] is None  # a trajectory grader cannot say: not assessed, never a pass
    assert attempt["status"] == "unassessed"


@pytest.mark.skipif(bwrap_path() is None, reason="bubblewrap does not work here (apt-get install bubblewrap)")
def test_a_suite_that_requires_isolation_refuses_an_http_agent(tmp_path, agent):
    with pytest.raises(ConfigError) as info:
        load_suite(_suite(tmp_path, agent, require_isolation=True))
    message = str(info.value)
    assert "field 'variants.remote.subject'" in message and "outside this machine's sandbox" in message
    assert agent.bodies == []
