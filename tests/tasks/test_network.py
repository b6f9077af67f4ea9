"""The "loopback only" network policy, enforced: an agent whose profile asks for it runs in its
own network namespace, where a non-loopback address and any loopback port but the forwarded
ones (the fixture, a loopback model) are unreachable, while the fixture still answers. The
control (`network: all`) shows the same probe does reach a loopback decoy, so the test can fail.
Nothing here can reach beyond loopback: the one non-loopback try (a TEST-NET-1 address) is made
only inside an enforced namespace."""

from __future__ import annotations

import os
import shutil
import socket
import threading
from pathlib import Path

import pytest
import yaml

from scoreboard.engine.pipeline import RunOptions, run
from scoreboard.suite.load import load_suite
from scoreboard.tasks import network
from scoreboard.tasks.sandbox import bwrap_path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_TASK = ROOT / "examples" / "agent-task" / "tasks" / "wishlist"

pytestmark = pytest.mark.skipif(bwrap_path() is None or not network.netns_works(bwrap_path() or "bwrap"),
                                reason="bubblewrap with network namespaces does not work here")

#: Python for the scripted agents' probes: whether a TCP connection to host:port is made
REACH = r'''
def reach(host, port):
    sock = socket.socket()
    sock.settimeout(3)
    try:
        sock.connect((host, port))
        return "connected"
    except OSError as exc:
        return "refused: " + (exc.strerror or type(exc).__name__)
    finally:
        sock.close()
'''

#: Python for the scripted agents: find the cheapest blue backpack in the shop and save it (with
#: an `opener` made by the script: its proxies are the script's choice)
SAVE_CHEAPEST = r'''
shop = os.environ["SHOP_URL"]
with opener.open(shop + "/search?q=backpack&color=blue&max_price=80", timeout=10) as resp:
    best = min((p for p in json.load(resp)["results"] if p["in_stock"]), key=lambda p: p["price"])
request = urllib.request.Request(shop + "/wishlist", data=json.dumps({"product_id": best["id"]}).encode(),
                                 method="POST", headers={"Content-Type": "application/json"})
opener.open(request, timeout=10).read()
'''

PROBE = r'''
import json, os, socket, urllib.request

''' + REACH + r'''
probes = {"decoy": reach("127.0.0.1", int(os.environ["DECOY_PORT"]))}
if os.environ.get("PROBE_OUTSIDE"):
    probes["outside"] = reach("192.0.2.1", 80)  # TEST-NET-1: tried only where it cannot leave
with open("/proc/net/dev") as handle:
    probes["interfaces"] = sorted(line.split(":")[0].strip() for line in handle.readlines()[2:])
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
''' + SAVE_CHEAPEST + r'''print(json.dumps({"text": "Saved %s (%s)." % (best["name"], best["id"]),
                  "tool_calls": [{"name": "probe", "args": probes}]}))
'''


class Decoy:
    """A loopback listener on this machine that is not the fixture; it counts connections."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            try:  # a greeting, so a probe can tell it reached this listener end to end
                conn.sendall(b"decoy\n")
            except OSError:
                pass
            conn.close()

    def close(self):
        self.sock.close()


def run_probe(tmp: Path, policy: str, decoy: Decoy) -> dict:
    (tmp / "tasks").mkdir()
    shutil.copytree(EXAMPLE_TASK, tmp / "tasks" / "wishlist")
    (tmp / "probe.py").write_text(PROBE)
    env = {"DECOY_PORT": str(decoy.port), **({"PROBE_OUTSIDE": "1"} if policy == "loopback" else {})}
    suite = {"name": "t", "cases": "tasks", "require_isolation": True,
             "variants": {"agent": {"subject": {"type": "command", "argv": ["python3", "probe.py"], "env": env,
                                                "network": policy},
                                    "params": {"mode": "ordinary"}}}}
    (tmp / "suite.yaml").write_text(yaml.safe_dump(suite))
    report = run(load_suite(tmp / "suite.yaml"), RunOptions(formats=["json"], progress=False)).report
    (attempt,) = report["attempts"]
    return attempt


def test_loopback_only_cuts_other_addresses_and_keeps_the_fixture(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    decoy = Decoy()
    try:
        attempt = run_probe(tmp_path, "loopback", decoy)
    finally:
        decoy.close()
    isolation = attempt["subject_info"]["task"]["isolation"]
    assert isolation["network"] == "loopback (enforced)"
    assert any(r.endswith("(fixture)") for r in isolation["reachable"])
    probes = attempt["output"]["tool_calls"][0]["args"]
    assert probes["decoy"].startswith("refused") and decoy.connections == 0
    assert probes["outside"].startswith("refused") and "unreachable" in probes["outside"].lower()
    assert probes["interfaces"] == ["lo"]  # its own namespace: no interface of this machine
    assert attempt["status"] == "passed", attempt["grades"]  # the fixture stayed reachable


def test_network_all_is_open_and_says_so(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    decoy = Decoy()
    try:
        attempt = run_probe(tmp_path, "all", decoy)
    finally:
        decoy.close()
    isolation = attempt["subject_info"]["task"]["isolation"]
    assert isolation["network"] == "open (not enforced)" and "network: all" in isolation["network_note"]
    probes = attempt["output"]["tool_calls"][0]["args"]
    assert probes["decoy"] == "connected" and decoy.connections == 1  # the probe can tell
    assert "lo" in probes["interfaces"] and len(probes["interfaces"]) > 1
    assert attempt["status"] == "passed", attempt["grades"]


def test_a_model_endpoint_off_loopback_goes_through_the_egress_allowlist(tmp_path):
    """A real provider's endpoint cannot be forwarded into the namespace: the policy stays
    enforced, the endpoint's host:port admitted by the egress proxy (tests/tasks/test_egress.py)."""
    policy = network.plan("loopback", bwrap_path(), ["https://api.anthropic.com"], tmp_path)
    assert policy.enforced is True and policy.egress == {"api.anthropic.com:443": "model"}
    described = policy.describe()
    assert described["network"] == "loopback + allowlist (enforced)"
    assert described["egress_allowed"] == ["api.anthropic.com:443 (model)"]
    forwarded = network.plan("loopback", bwrap_path(), ["http://127.0.0.1:4567/v1"], tmp_path)
    assert forwarded.enforced and forwarded.ports == {4567: "model"} and forwarded.egress == {}
    assert network.plan("loopback", None, [], tmp_path).describe()["network_note"].endswith(
        "no sandbox (bubblewrap) works here")
    unusable = network.plan("loopback", bwrap_path(), ["file:///model"], tmp_path)
    assert not unusable.enforced and "names no host" in unusable.describe()["network_note"]


SOCKET_PROBE = r'''
import json, os, socket
sock = socket.socket(socket.AF_UNIX)
try:
    sock.connect(os.environ["DAEMON_SOCKET"])
    sock.sendall(b"GET /containers/json HTTP/1.0\r\n\r\n")
    result = "connected"
except OSError as exc:
    result = "refused: " + (exc.strerror or type(exc).__name__)
print(json.dumps({"text": "done", "tool_calls": [{"name": "probe", "args": {"daemon": result}}]}))
'''


@pytest.mark.skipif(not os.access("/run", os.W_OK), reason="cannot make a socket under /run here")
def test_a_container_daemon_socket_is_covered_inside_the_sandbox(tmp_path, monkeypatch):
    """A daemon's socket outside the hidden folders is visible read-only, and a read-only mount
    does not stop a connect: the one DOCKER_HOST names is covered by /dev/null. The control
    (DOCKER_HOST naming another path) shows the probe does reach it otherwise."""
    path = Path(f"/run/scoreboard-test-{os.getpid()}.sock")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen(4)
    try:
        outcomes = {}
        for name, host in (("covered", f"unix://{path}"), ("control", "unix:///nonexistent.sock")):
            work = tmp_path / name
            work.mkdir()
            (work / "tasks").mkdir()
            shutil.copytree(EXAMPLE_TASK, work / "tasks" / "wishlist")
            (work / "probe.py").write_text(SOCKET_PROBE)
            suite = {"name": "t", "cases": "tasks", "require_isolation": True,
                     "variants": {"a": {"subject": {"type": "command", "argv": ["python3", "probe.py"],
                                                    "env": {"DAEMON_SOCKET": str(path)}}}}}
            (work / "suite.yaml").write_text(yaml.safe_dump(suite))
            monkeypatch.setenv("DOCKER_HOST", host)
            monkeypatch.chdir(work)
            report = run(load_suite(work / "suite.yaml"), RunOptions(formats=["json"], progress=False)).report
            outcomes[name] = report["attempts"][0]["output"]["tool_calls"][0]["args"]["daemon"]
    finally:
        server.close()
        path.unlink()
    assert outcomes["control"] == "connected"
    assert outcomes["covered"].startswith("refused")
