"""A loopback host:port in a profile's or task's egress allowlist (a local database, a mock
API) is forwarded into the agent's namespace like the fixture: the agent reaches it on the same
port, and any other port of this machine's loopback stays out of reach. Through the proxy it
could never be reached: NO_PROXY sends loopback addresses direct, and the namespace has no
route to them."""

from __future__ import annotations

import pytest
import yaml

from scoreboard.engine.pipeline import RunOptions, run
from scoreboard.suite.load import load_suite
from scoreboard.tasks import network
from scoreboard.tasks.sandbox import bwrap_path
from tests.tasks.test_network import EXAMPLE_TASK, REACH, Decoy

pytestmark = pytest.mark.skipif(bwrap_path() is None or not network.netns_works(bwrap_path() or "bwrap"),
                                reason="bubblewrap with network namespaces does not work here")

PROBE = r'''
import json, os, socket
''' + REACH + r'''
def greeted(host, port):
    # connect, then read the decoy's greeting: the forwarder inside accepts at once, and only the
    # greeting proves the connection went through to the service (and was counted there)
    sock = socket.socket()
    sock.settimeout(10)
    try:
        sock.connect((host, port))
        return "connected" if sock.recv(16) == b"decoy\n" else "connected, no greeting"
    except OSError as exc:
        return "refused: " + (exc.strerror or type(exc).__name__)
    finally:
        sock.close()
probes = {"allowed": greeted("127.0.0.1", int(os.environ["ALLOWED_PORT"])),
          "allowed_as_localhost": greeted("localhost", int(os.environ["ALLOWED_PORT"])),
          "other": reach("127.0.0.1", int(os.environ["OTHER_PORT"]))}
print(json.dumps({"text": "probed", "tool_calls": [{"name": "probe", "args": probes}]}))
'''


def test_the_plan_forwards_loopback_entries_and_proxies_the_rest(tmp_path):
    policy = network.plan("loopback", bwrap_path(), [], tmp_path,
                          allow={"127.0.0.1:5432": "profile", "localhost:8080": "task", "[::1]:9000": "profile",
                                 "127.0.0.2:7000": "task", "api.example.com:443": "task"})
    assert policy.ports == {5432: "profile", 8080: "task", 9000: "profile"}
    assert policy.egress == {"127.0.0.2:7000": "task", "api.example.com:443": "task"}  # reachable from outside
    assert "127.0.0.1:5432 (profile)" in policy.describe()["reachable"]


def test_an_allowed_loopback_service_is_reached_and_no_other_port(tmp_path, monkeypatch):
    import shutil

    monkeypatch.chdir(tmp_path)
    allowed, other = Decoy(), Decoy()
    try:
        (tmp_path / "tasks").mkdir()
        shutil.copytree(EXAMPLE_TASK, tmp_path / "tasks" / "wishlist")
        (tmp_path / "probe.py").write_text(PROBE)
        env = {"ALLOWED_PORT": str(allowed.port), "OTHER_PORT": str(other.port)}
        subject = {"type": "command", "argv": ["python3", "probe.py"], "env": env,
                   "network": {"allow": [f"127.0.0.1:{allowed.port}"]}}
        (tmp_path / "suite.yaml").write_text(yaml.safe_dump({
            "name": "t", "cases": "tasks", "require_isolation": True,
            "variants": {"agent": {"subject": subject, "params": {"mode": "ordinary"}}}}))
        report = run(load_suite(tmp_path / "suite.yaml"), RunOptions(formats=["json"], progress=False)).report
    finally:
        allowed.close()
        other.close()
    (attempt,) = report["attempts"]
    isolation = attempt["subject_info"]["task"]["isolation"]
    assert isolation["network"].endswith("(enforced)"), isolation
    assert f"127.0.0.1:{allowed.port} (profile)" in isolation["reachable"]
    probes = attempt["output"]["tool_calls"][0]["args"]
    assert probes["allowed"] == "connected" and probes["allowed_as_localhost"] == "connected", probes
    assert allowed.connections == 2
    assert probes["other"].startswith("refused") and other.connections == 0  # the control: still cut
