"""An attempt cut by the run's timeout after its subject sent requests records how many it sent
(the ledger counted each as it went out: possibly billed); its tokens and cost stay unknown,
since no answer came. Before, the attempt said requests: null while the run's totals counted
the request."""

from __future__ import annotations

import json
import subprocess
import sys

from scoreboard.engine.pipeline import RunOptions, run
from scoreboard.suite.load import load_suite
from tests.servers.fake_provider import FakeProvider


def test_a_timed_out_attempt_records_the_requests_it_sent(tmp_path, monkeypatch):
    monkeypatch.setenv("K", "dummy")
    with FakeProvider(latency_ms=3000) as srv:
        (tmp_path / "cases.jsonl").write_text(json.dumps({"id": "c1", "input": "hi", "expected": "hi",
                                                          "grader": "contains"}) + "\n")
        (tmp_path / "suite.json").write_text(json.dumps({
            "name": "t", "cases": "cases.jsonl", "timeout_ms": 300, "output_dir": "out",
            "subject": {"type": "openai", "base_url": srv.base_url + "/v1", "model": "m", "api_key_env": "K",
                        "retries": {"attempts": 1}}}))
        report = run(load_suite(tmp_path / "suite.json"), RunOptions(formats=["json"], progress=False)).report
        seen = len(srv.requests_to("chat"))
    (attempt,) = report["attempts"]
    assert attempt["status"] == "error" and "timeout" in attempt["error"], attempt
    assert seen == 1
    measured = attempt["measurements"]
    assert measured["requests"] == 1  # what the ledger counted going out
    assert measured["input_tokens"] is None and measured["output_tokens"] is None and measured["cost_usd"] is None
    assert report["requests"]["sent"] == 1
    (path,) = (tmp_path / "out" / "t").glob("*.json")
    checked = subprocess.run([sys.executable, "-m", "scoreboard", "verify", str(path)], capture_output=True, text=True,
                             timeout=120, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
