"""The HTML report's "Agent tasks" section in a real headless Chromium, from a real run of the
egress example (examples/agent-task/egress.yaml: two scripted agents behind the egress
allowlist, one of which tries a host not listed): the figures per variant and the refused
hosts per attempt, as the JSON record has them."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from scoreboard.tasks import network
from scoreboard.tasks.sandbox import bwrap_path
from tests.record.test_html_browser import only_local, text

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(bwrap_path() is None or not network.netns_works(bwrap_path() or "bwrap"),
                                reason="bubblewrap with network namespaces does not work here")


def test_agent_tasks_section_shows_figures_and_refused_egress(opened, tmp_path):
    shutil.copytree(ROOT / "examples" / "agent-task", tmp_path / "agent-task")
    done = subprocess.run([sys.executable, "-m", "scoreboard", "run", "agent-task/egress.yaml", "--output-dir", "out"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(next((tmp_path / "out").rglob("*.json")).read_text())
    figures = report["summary"]["tasks"]["variants"]
    page = opened.page
    page.goto(next((tmp_path / "out").rglob("*.html")).as_uri())
    page.wait_for_selector('html[data-ready="true"]')
    assert not opened.errors, opened.errors
    only_local(opened)
    row = text(page, "task-phones-home")
    # benign utility counts the task's checks (the shop's wishlist): done, though the attempt failed its egress grade
    assert "ordinary" in row and "100.0% (1/1)" in row and "20.7%–100.0%" in row
    assert [a["status"] for a in report["attempts"] if a["variant"] == "phones-home"] == ["failed"]
    assert text(page, "task-egress-phones-home") == str(figures["phones-home"]["per_attempt"]["egress_refused"]
                                                       ["known_subtotal"]) == "1"
    assert text(page, "task-egress-stays-home") == "0"
    assert "100.0% (1/1)" in text(page, "task-stays-home")
    refused = text(page, "egress-refused")
    assert "wishlist · phones-home · run 0: 1 refused (telemetry.example.invalid:443)" in refused
    assert "stays-home" not in refused
