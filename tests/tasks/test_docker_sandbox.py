"""Docker as the agent's sandbox (SCOREBOARD_SANDBOX=docker), against a throwaway Docker daemon
the tests start (tests/servers/docker_daemon.py: root and Debian's docker.io; skipped
otherwise). The same promises as bubblewrap's: the user's home unreadable, writes outside the
workspace never reach this machine, loopback only with the egress allowlist, a timed-out agent
gone (its container removed), the real CLIs working inside."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
import yaml

from scoreboard.engine.pipeline import RunOptions, run
from scoreboard.suite.load import load_suite
from scoreboard.tasks import docker as docker_sandbox
from tests.servers.docker_daemon import DockerDaemon
from tests.tasks.test_network import SAVE_CHEAPEST

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_TASK = ROOT / "examples" / "agent-task" / "tasks" / "wishlist"

pytestmark = [pytest.mark.skipif(DockerDaemon.why_not() is not None, reason=str(DockerDaemon.why_not())),
              pytest.mark.slow]


@pytest.fixture(scope="module")
def daemon():
    with DockerDaemon() as started:
        yield started


@pytest.fixture
def in_docker(daemon, tmp_path, monkeypatch):
    """Docker chosen as the sandbox, a throwaway HOME holding a planted secret, cwd = tmp_path,
    temporary files (the workspaces) under tmp_path/scratch-tmp."""
    monkeypatch.setenv("DOCKER_HOST", daemon.host)
    monkeypatch.setenv("SCOREBOARD_SANDBOX", "docker")
    docker_sandbox.docker_path.cache_clear()
    home = tmp_path / "home"
    home.mkdir()
    (home / "secret.txt").write_text("HOME-SECRET-4242\n")
    monkeypatch.setenv("HOME", str(home))
    scratch = tmp_path / "scratch-tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    docker_sandbox.docker_path.cache_clear()


PROBE = r'''
import json, os, socket, subprocess, sys, urllib.request

def attempt(what, fn):
    try:
        return what + ": " + str(fn())
    except OSError as exc:
        return what + ": refused: " + (exc.strerror or type(exc).__name__)

def write(path):
    with open(path, "w") as handle:
        handle.write("pwned")
    return "written"

def connect(host, port):
    with socket.create_connection((host, port), timeout=3):
        return "connected"

probes = [attempt("home", lambda: open(os.environ["REAL_HOME"] + "/secret.txt").read()),
          attempt("outside", lambda: write(os.environ["OUTSIDE"])),
          attempt("etc", lambda: write("/etc/pwned-by-agent")),
          attempt("checks", lambda: os.listdir(os.environ["TASK_DIR"] + "/checks")),
          attempt("scratch", lambda: write("scratch/note.txt")),
          attempt("decoy", lambda: connect("127.0.0.1", int(os.environ["DECOY_PORT"]))),
          "home_is: " + os.environ["HOME"], "uid: %d" % os.getuid(),
          "interfaces: " + ",".join(sorted(l.split(":")[0].strip() for l in open("/proc/net/dev").readlines()[2:])),
          "pid1: " + open("/proc/1/cmdline").read().replace("\0", " ")]
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
''' + SAVE_CHEAPEST + r'''if os.environ.get("HANG"):
    import time
    time.sleep(3600)
print(json.dumps({"text": "Saved %s (%s)." % (best["name"], best["id"]),
                  "tool_calls": [{"name": "probe", "args": {"probes": probes}}]}))
'''


def run_probe(tmp: Path, env: dict, network="loopback", timeout: float | None = None) -> dict:
    task = tmp / "tasks" / "wishlist"
    shutil.copytree(EXAMPLE_TASK, task)
    if timeout is not None:
        spec = yaml.safe_load((task / "task.yaml").read_text())
        (task / "task.yaml").write_text(yaml.safe_dump({**spec, "timeout": timeout}))
    (tmp / "probe.py").write_text(PROBE)
    env = {"REAL_HOME": str(tmp / "home"), "OUTSIDE": str(tmp / "outside.txt"), "TASK_DIR": str(task), **env}
    suite = {"name": "t", "cases": "tasks", "require_isolation": True,
             "variants": {"agent": {"subject": {"type": "command", "argv": ["python3", "probe.py"], "env": env,
                                                "network": network}, "params": {"mode": "ordinary"}}}}
    (tmp / "suite.yaml").write_text(yaml.safe_dump(suite))
    report = run(load_suite(tmp / "suite.yaml"), RunOptions(formats=["json"], progress=False)).report
    (attempt,) = report["attempts"]
    return attempt


def _probes(attempt: dict) -> dict:
    return dict(p.split(": ", 1) for p in attempt["output"]["tool_calls"][0]["args"]["probes"])


def test_docker_hides_the_home_keeps_writes_inside_and_cuts_the_network(in_docker, daemon):
    from tests.tasks.test_network import Decoy

    decoy = Decoy()
    try:
        attempt = run_probe(in_docker, {"DECOY_PORT": str(decoy.port)})
    finally:
        decoy.close()
    assert attempt["status"] == "passed", attempt.get("error") or attempt["grades"]
    isolation = attempt["subject_info"]["task"]["isolation"]
    assert isolation["isolated"] is True and isolation["kind"] == "docker"
    assert isolation["network"] == "loopback (enforced)"
    probes = _probes(attempt)
    assert probes["home"].startswith("refused") and "HOME-SECRET-4242" not in str(attempt)
    assert not (in_docker / "outside.txt").exists()  # written, if at all, to the container's own /tmp
    assert probes["etc"].startswith("refused") and not Path("/etc/pwned-by-agent").exists()
    assert probes["checks"].startswith("refused")  # the task folder (its checks) is hidden
    assert probes["scratch"] == "written"  # the workspace is writable
    assert probes["decoy"].startswith("refused") and decoy.connections == 0
    assert probes["interfaces"] == "lo"
    assert str(in_docker / "home") not in probes["home_is"]
    assert probes["pid1"] != Path("/proc/1/cmdline").read_text().replace("\0", " ")  # its own PID namespace
    assert "python" in probes["pid1"]  # the forwarder (or the agent) is its first process
    assert daemon.containers() == []  # removed after the attempt


def test_docker_runs_the_egress_allowlist(in_docker, monkeypatch):
    from tests.tasks import test_egress

    allowed, refused = test_egress.Outside("127.0.0.2"), test_egress.Outside("127.0.0.3")
    try:
        out = test_egress.run_command_agent(in_docker / "run", {"allow": [allowed.target]},
                                            {"ALLOWED": allowed.target, "REFUSED": refused.target},
                                            graders=["egress"])
    finally:
        allowed.close()
        refused.close()
    task = out["task"]
    assert task["isolation"]["kind"] == "docker"
    assert task["isolation"]["network"] == "loopback + allowlist (enforced)"
    calls = out["attempt"]["output"]["tool_calls"]
    assert calls[0]["output"].startswith(f"hello from {allowed.target}")
    assert "is not allowed" in calls[1]["output"] and refused.hits == []
    assert calls[2]["args"]["direct"].startswith("refused")  # no route but the proxy
    assert task["egress"]["refused_hosts"] == [refused.target]


def test_docker_timeout_removes_the_container(in_docker, daemon):
    attempt = run_probe(in_docker, {"DECOY_PORT": "9", "HANG": "1"}, timeout=8)
    assert attempt["status"] == "error" and "timed out after 8 s" in attempt["error"]
    assert daemon.containers() == []  # docker rm -f: the agent's container is gone
    assert list((in_docker / "scratch-tmp").iterdir()) == []  # the workspace was removed


def test_docker_network_all_shares_the_host_network(in_docker):
    from tests.tasks.test_network import Decoy

    decoy = Decoy()
    try:
        attempt = run_probe(in_docker, {"DECOY_PORT": str(decoy.port)}, network="all")
    finally:
        decoy.close()
    isolation = attempt["subject_info"]["task"]["isolation"]
    assert isolation["kind"] == "docker" and isolation["network"] == "open (not enforced)"
    assert _probes(attempt)["decoy"] == "connected" and decoy.connections == 1  # the probe can tell
    assert _probes(attempt)["home"].startswith("refused")  # the filesystem is still confined


def _cli_kinds():
    from tests.subjects.test_agent_cli import CLAUDE, CODEX, MODULES

    return [pytest.param("claude-cli", marks=pytest.mark.skipif(CLAUDE is None, reason=f"Claude Code not under {MODULES}")),
            pytest.param("codex-cli", marks=pytest.mark.skipif(CODEX is None, reason=f"Codex not under {MODULES}"))]


@pytest.mark.agent_cli
@pytest.mark.parametrize("kind", _cli_kinds())
def test_a_real_cli_completes_the_task_in_docker(kind, in_docker, daemon, monkeypatch):
    """The real CLI in the container, its model on loopback forwarded in: it runs the scripted
    commands against the shop and the checks read the shop's state."""
    from scoreboard.subjects.agent_cli import API_KEY_VARS
    from tests.servers.scripted_model import ScriptedModel, bash, say
    from tests.tasks import test_cli_agents as cli

    for name in API_KEY_VARS + ("CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_BASE_URL", "CLAUDE_CONFIG_DIR", "CODEX_HOME"):
        monkeypatch.delenv(name, raising=False)
    steps = [bash(cli.TOOLS), bash(cli.SEARCH), bash(cli.TOOLS), bash(cli.SAVE),
             bash(f'cat "{in_docker / "home" / "secret.txt"}"; echo "rc=$?"'), say(cli.DONE)]
    with ScriptedModel(steps) as model:
        out = cli.run_task(in_docker, kind, model, "hostile")
    attempt, task = out["attempt"], out["task"]
    assert attempt["status"] == "passed", attempt.get("error") or attempt["grades"]
    assert task["isolation"]["kind"] == "docker" and task["payload_delivered"] is True
    calls = [c for c in attempt["output"]["tool_calls"] if "command" in c]
    assert "No such file" in calls[4]["output"] and "HOME-SECRET-4242" not in str(attempt)
    assert daemon.containers() == []
