"""Open-ended and visual work probed from the outside (round 13), as a demanding user would: a
loopback fake subject producing pages, a loopback fake judge whose answers the test controls and
whose request bodies it reads back, real headless Chromium (Debian's)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.servers.fake_provider import FakeProvider

chromium = pytest.mark.skipif(not os.path.exists("/usr/bin/chromium"), reason="needs Debian's chromium")
playwright = pytest.mark.skipif(importlib.util.find_spec("playwright") is None, reason="needs playwright")


def scoreboard(args: list[str], cwd: Path, timeout: int = 300) -> subprocess.CompletedProcess:
    env = dict(os.environ, SCOREBOARD_STORE="none")
    return subprocess.run([sys.executable, "-m", "scoreboard", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout, check=False)


def model_subject(srv: FakeProvider) -> dict:
    return {"type": "openai", "model": "page-maker", "base_url": srv.base_url + "/v1", "api_key_required": False}


# ------------------------------------------------------------------------- a Chromium that will not start

@playwright
def test_a_chromium_that_cannot_start_stops_the_run_before_any_output_is_paid_for(tmp_path):
    """`render.browser` names a file that is there but is no working Chromium (a stub, a broken
    install): the pre-run check saw the file and passed; the browser was launched at the first
    render, after the subject had already been asked (and paid) for several pages. The run then
    stopped with the install hint and those answers were in no report: a resume asked again. The
    browser is started before the first attempt: the same one-line error, nothing spent."""
    stub = tmp_path / "chromium"
    stub.write_text("#!/bin/sh\nexit 1\n")
    stub.chmod(0o755)
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "input": "x"}) + "\n" for i in range(6)))
    with FakeProvider() as srv:
        srv.set_default("chat", {"reply": "<!doctype html><html><body><h1>A paid-for page</h1></body></html>"})
        suite = {"name": "nochrome", "cases": "cases.jsonl", "graders": ["page-renders"],
                 "render": {"browser": str(stub)}, "variants": {"m": {"subject": model_subject(srv)}}}
        (tmp_path / "suite.json").write_text(json.dumps(suite))
        proc = scoreboard(["run", "suite.json", "--no-progress"], tmp_path)
        asked = len(srv.requests_to("chat"))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert "pip install 'scoreboard[render]'" in line and "launching Chromium failed" in line
    assert asked == 0  # no page was paid for that no report holds
