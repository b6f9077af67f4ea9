"""Probe 24G: agent tasks run by the real Claude Code and Codex CLIs against loopback scripted
models, as a demanding user would write them (state checks on files, git, sqlite and command
output; timeouts; runs with pass@k; a model server that reports no usage).

- A model server that reports no usage made both CLIs print 0 input and 0 output tokens (Claude
  Code also a cost of 0.0), and the attempt recorded tokens 0 and cost 0: unknown read as free.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from scoreboard.agents.exports import parse_claude_stream, parse_codex
from scoreboard.tasks.sandbox import bwrap_path
from tests.servers.scripted_model import ScriptedModel, bash, say
from tests.subjects.test_agent_cli import CLAUDE, CODEX, MODULES

ROOT = Path(__file__).resolve().parents[1]

KINDS = [pytest.param("claude-cli", marks=pytest.mark.skipif(CLAUDE is None, reason=f"Claude Code not under {MODULES}")),
         pytest.param("codex-cli", marks=pytest.mark.skipif(CODEX is None, reason=f"Codex not under {MODULES}"))]
need_bwrap = pytest.mark.skipif(bwrap_path() is None, reason="bubblewrap does not work here")


def _strip_usage(obj):
    if isinstance(obj, dict):
        return {k: _strip_usage(v) for k, v in obj.items() if k != "usage"}
    if isinstance(obj, list):
        return [_strip_usage(v) for v in obj]
    return obj


class NoUsageModel(ScriptedModel):
    """A scripted model whose streamed answers carry no `usage` anywhere (a local server that
    does not count tokens)."""

    async def _stream(self, request, events, b, **kw):
        out = []
        for event in events:
            lines = []
            for line in event.decode().split("\n"):
                if line.startswith("data: "):
                    try:
                        line = "data: " + json.dumps(_strip_usage(json.loads(line[6:])))
                    except ValueError:
                        pass
                lines.append(line)
            out.append("\n".join(lines).encode())
        return await super()._stream(request, out, b, **kw)


def make_task(root: Path, checks: list[dict], files: dict[str, str] | None = None, **extra) -> Path:
    task = root / "tasks" / "state"
    (task / "workspace").mkdir(parents=True)
    (task / "checks").mkdir()
    (task / "workspace" / "README.txt").write_text("hello\n")
    for name, text in (files or {}).items():
        path = task / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    spec = {"id": "state", "instruction": "Do the work in {{ workspace }}", "timeout": 60, "checks": checks, **extra}
    (task / "task.yaml").write_text(yaml.safe_dump(spec))
    return task


def subject(kind: str, model: ScriptedModel) -> dict:
    if kind == "claude-cli":
        return {"type": "claude-cli", "binary": CLAUDE, "agent": {"tools": ["Bash"]},
                "env": {"ANTHROPIC_BASE_URL": model.base_url, "ANTHROPIC_API_KEY": "test-key"}}
    return {"type": "codex-cli", "binary": CODEX, "base_url": model.base_url + "/v1", "model": "fake-model",
            "agent": {}}


def run_suite(root: Path, kind: str, model: ScriptedModel, *args: str) -> tuple[subprocess.CompletedProcess, dict]:
    """`scoreboard run suite.yaml` as printed, in a fresh folder with a throwaway HOME."""
    suite = {"name": "p", "cases": "tasks", "variants": {"agent": {"subject": subject(kind, model)}}}
    (root / "suite.yaml").write_text(yaml.safe_dump(suite))
    home = root / "home"
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k not in
           ("ANTHROPIC_BASE_URL", "CLAUDE_CONFIG_DIR", "CODEX_HOME")}
    env.update(SCOREBOARD_STORE="none", HOME=str(home))
    done = subprocess.run([sys.executable, "-m", "scoreboard", "run", "suite.yaml", "--output-dir", "out",
                           "--format", "json", "--no-progress", *args],
                          cwd=root, capture_output=True, text=True, env=env, timeout=300)
    reports = sorted((root / "out").rglob("*.json"))
    assert reports, done.stdout + done.stderr
    return done, json.loads(reports[-1].read_text())


EXISTS = ["python3", "-c", "import os, sys; ok = os.path.exists(os.path.join(os.environ['SCOREBOARD_WORKSPACE'], "
          "'out.txt')); print('out.txt there' if ok else 'no out.txt'); sys.exit(0 if ok else 1)"]


# ------------------------------------------------------------------ usage the server never reported

def _claude_events(usage: dict | None, result_usage: dict, cost: float) -> list[dict]:
    message = {"role": "assistant", "model": "m", "content": [{"type": "text", "text": "done"}]}
    if usage is not None:
        message["usage"] = usage
    return [{"type": "system", "subtype": "init", "session_id": "s"},
            {"type": "assistant", "parent_tool_use_id": None, "session_id": "s", "message": message},
            {"type": "result", "subtype": "success", "is_error": False, "result": "done", "num_turns": 1,
             "session_id": "s", "total_cost_usd": cost, "usage": result_usage}]


def test_claude_stream_with_zero_usage_for_a_completed_turn_is_unknown_not_free():
    zero = {"input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    run = parse_claude_stream(_claude_events(None, zero, 0), "r")
    assert run.status == "completed"
    assert (run.input_tokens, run.output_tokens, run.cost_usd) == (None, None, None)
    assert any("reported no usage" in w for w in run.warnings)
    counted = parse_claude_stream(_claude_events({"input_tokens": 12, "output_tokens": 3},
                                                 {"input_tokens": 12, "output_tokens": 3}, 0.001), "r")
    assert (counted.input_tokens, counted.output_tokens, counted.cost_usd) == (12, 3, 0.001)


def test_codex_turn_with_zero_usage_is_unknown_not_free():
    def events(usage):
        return [{"type": "thread.started", "thread_id": "t"}, {"type": "turn.started"},
                {"type": "item.completed", "item": {"id": "i", "type": "agent_message", "text": "done"}},
                {"type": "turn.completed", "usage": usage}]
    zero = {"input_tokens": 0, "cached_input_tokens": 0, "output_tokens": 0, "reasoning_output_tokens": 0}
    run = parse_codex(events(zero), "r")
    assert run.status == "completed" and (run.input_tokens, run.output_tokens) == (None, None)
    assert any("reported no usage" in w for w in run.warnings)
    assert parse_codex(events({"input_tokens": 40, "output_tokens": 0}), "r").input_tokens == 40


@need_bwrap
@pytest.mark.parametrize("kind", KINDS)
def test_real_cli_against_a_server_reporting_no_usage_records_unknown_tokens_and_cost(kind, tmp_path):
    make_task(tmp_path, [{"name": "file", "run": EXISTS}])
    with NoUsageModel([bash("echo 42 > out.txt"), say("done")]) as model:
        done, report = run_suite(tmp_path, kind, model)
    assert done.returncode == 0, done.stdout + done.stderr
    (attempt,) = report["attempts"]
    assert attempt["status"] == "passed", attempt["grades"]
    m = attempt["measurements"]
    assert (m["input_tokens"], m["output_tokens"], m["cost_usd"]) == (None, None, None), m
    totals = report["summary"]["variants"]["agent"]["measurements"]
    assert totals["input_tokens"]["unknown_count"] == 1 and totals["input_tokens"]["total"] is None
    assert totals["cost_usd"]["total"] is None


# ------------------------------------------------------------------ git settings that run a command

def _plant_git(repo: Path, marker: Path) -> None:
    """A repository whose own configuration runs `touch marker` on `git status` and `git diff`."""
    def git(*args):
        subprocess.run(["git", "-C", str(repo), "-c", "user.email=a@b", "-c", "user.name=a", *args],
                       check=True, capture_output=True)
    git("init", "-q")
    (repo / "f.txt").write_text("a\n")
    git("add", "f.txt")
    git("commit", "-qm", "seed")
    git("config", "core.fsmonitor", f"touch {marker}.fsmonitor; false")
    git("config", "filter.x.clean", f"touch {marker}.clean; cat")
    git("config", "diff.y.textconv", f"sh -c 'touch {marker}.textconv; cat \"$0\"'")
    (repo / ".gitattributes").write_text("f.txt filter=x diff=y\n")
    (repo / "f.txt").write_text("b\n")


GIT_CHECK = ["sh", "-c", 'git -C "$SCOREBOARD_WORKSPACE" status --short; git -C "$SCOREBOARD_WORKSPACE" diff; '
             'echo looked']


@pytest.mark.skipif(not shutil.which("git"), reason="git not installed")
def test_a_check_running_git_never_runs_the_repositorys_commands(tmp_path):
    from scoreboard.tasks.checks import CheckContext, run_checks
    from scoreboard.tasks.spec import Check
    import asyncio

    workspace, marker = tmp_path / "ws", tmp_path / "ran"
    workspace.mkdir()
    _plant_git(workspace, marker)
    (tmp_path / "out.txt").write_text("")
    (tmp_path / "audit.json").write_text("null")
    ctx = CheckContext(workspace=workspace, fixture_url=None, mode="ordinary", output="", tool_calls=[], audit=None)
    (result,) = asyncio.run(run_checks([Check(name="git", run=GIT_CHECK)], tmp_path, ctx,
                                       {"output": tmp_path / "out.txt", "audit": tmp_path / "audit.json"}))
    assert sorted(p.name for p in tmp_path.glob("ran*")) == []
    assert result["passed"] is True  # status and a textconv that is `false`: the check still ran


@need_bwrap
@pytest.mark.skipif(not shutil.which("git"), reason="git not installed")
@pytest.mark.skipif(CLAUDE is None, reason=f"Claude Code not under {MODULES}")
def test_sandboxed_agent_cannot_run_a_command_outside_through_a_checks_git(tmp_path):
    """The agent, under bubblewrap, sets core.fsmonitor in its workspace's repository; the check
    (outside the sandbox) runs `git status` there. The command must not run on this machine."""
    marker = tmp_path / "pwned-by-check"
    make_task(tmp_path, [{"name": "git", "run": ["sh", "-c", 'git -C "$SCOREBOARD_WORKSPACE" status --short; '
                                                 'echo looked']}])
    plant = f"git init -q . && git config core.fsmonitor 'touch {marker}; false' && echo planted"
    with ScriptedModel([bash(plant), say("done")]) as model:
        done, report = run_suite(tmp_path, "claude-cli", model)
    (attempt,) = report["attempts"]
    assert [c["output"] for c in attempt["output"]["tool_calls"]] == ["planted"]
    assert attempt["status"] == "passed", attempt["grades"]
    assert not marker.exists()


# ------------------------------------------------------------------ state checks over three runs

FIXTURE = r'''
import http.server, os, sqlite3
db = sqlite3.connect("app.db", check_same_thread=False)
db.execute("create table if not exists orders(item text)"); db.commit()
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path.startswith("/order/"):
            db.execute("insert into orders values (?)", (self.path[7:],)); db.commit()
        self.send_response(200); self.end_headers(); self.wfile.write(b"ok\n")
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(os.environ["PORT"])), H).serve_forever()
'''
STATE = r'''import os, sqlite3, subprocess, sys
ws, what = os.environ["SCOREBOARD_WORKSPACE"], sys.argv[1]
if what == "db":  # the state this attempt's fixture kept, in its private copy of environment/
    rows = [r[0] for r in sqlite3.connect("environment/app.db").execute("select item from orders")]
    print(f"orders {rows}"); sys.exit(0 if rows == ["widget"] else 1)
if what == "git":
    log = subprocess.run(["git", "-C", ws, "log", "--format=%s"], capture_output=True, text=True).stdout.split()
    print(f"commits {log}"); sys.exit(0 if log == ["add"] else 1)
ok = os.path.exists(os.path.join(ws, "out.txt"))
print("out.txt there" if ok else "no out.txt"); sys.exit(0 if ok else 1)
'''
OUTPUT = "def check(ctx):\n    runs = [c for c in ctx.tool_calls if c.get('command')]\n" \
         "    return any('ordered-ok' in (c.get('output') or '') for c in runs), f'{len(runs)} commands'\n"


@pytest.mark.slow
@need_bwrap
@pytest.mark.skipif(not shutil.which("git"), reason="git not installed")
@pytest.mark.parametrize("kind", KINDS)
def test_state_checks_on_files_git_sqlite_and_output_over_three_runs(kind, tmp_path):
    """Only the first attempt writes out.txt: pass@3 is 1, pass^3 is 0; every attempt's git,
    database (a fixture per attempt) and command output checks pass on their own."""
    make_task(tmp_path, [{"name": "file", "run": ["python3", "checks/state.py", "file"]},
                         {"name": "git", "run": ["python3", "checks/state.py", "git"]},
                         {"name": "db", "run": ["python3", "checks/state.py", "db"]},
                         {"name": "output", "python": "checks/output.py:check"}],
              files={"environment/server.py": FIXTURE, "checks/state.py": STATE, "checks/output.py": OUTPUT},
              environment={"command": ["python3", "server.py"], "ready": {"url": "/health"},
                           "agent_env": {"APP": "{url}"}})
    served = []

    def first(_request, _outputs):
        served.append(1)
        return bash("echo 1 > out.txt" if len(served) == 1 else "echo skipped")
    commit = "git init -q . && git -c user.email=a@b -c user.name=a commit -q --allow-empty -m add"
    with ScriptedModel([first, bash(commit), bash('curl -s "$APP/order/widget" && echo ordered-ok'),
                        say("done")]) as model:
        done, report = run_suite(tmp_path, kind, model, "--runs", "3", "--concurrency", "1")
    assert len(served) == 3, served
    by_check = {}
    for attempt in report["attempts"]:
        for grade in attempt["grades"]:
            by_check.setdefault(grade["grader"], []).append(grade["passed"])
    assert sorted(by_check["task-check:file"]) == [False, False, True], by_check
    for name in ("task-check:git", "task-check:db", "task-check:output", "task-security"):
        assert by_check[name] == [True, True, True], (name, by_check)
    variant = report["summary"]["variants"]["agent"]
    assert variant["pass_at_k"]["3"]["value"] == 1.0 and variant["pass_hat_k"]["3"]["value"] == 0.0
    assert variant["pass_rate"] == pytest.approx(1 / 3)
    assert "pass@3 100.0%" in done.stdout and "pass^3 0.0%" in done.stdout
