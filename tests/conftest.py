"""Shared fixtures: loopback fake servers (see tests/servers/)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

_ROOT = str(Path(__file__).resolve().parent.parent)
if _ROOT not in sys.path:  # so `tests.servers` imports work under any import mode
    sys.path.insert(0, _ROOT)

from tests.servers.fake_agent import FakeAgent  # noqa: E402
from tests.servers.fake_provider import FakeProvider  # noqa: E402

#: Debian's headless Chromium, through Playwright (never a downloaded browser)
CHROMIUM = "/usr/bin/chromium"
# No DNS look-ups: every name but loopback resolves to nothing.
BROWSER_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1"]


@pytest.fixture(scope="module")
def browser():
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} is not installed (scripts/setup.sh --test installs Debian's chromium)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install 'scoreboard[browser]'")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=BROWSER_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def fake_provider():
    """A started FakeProvider on 127.0.0.1 (OpenAI base: fake_provider.base_url + "/v1")."""
    with FakeProvider() as srv:
        yield srv


@pytest.fixture
def fake_agent():
    """A started FakeAgent on 127.0.0.1 accepting `Authorization: Bearer test-token`."""
    with FakeAgent(token="test-token") as srv:
        yield srv


#: the longest test files, longest first (wall seconds each under two workers, measured
#: 2026-12-06 with a per-test timer: 20 to 190 s); a file not named keeps its collection order
LONGEST = ("test_visual.py", "test_reference_stats.py", "cases/test_hostile_files.py", "engine/test_ray_executor.py",
           "tasks/test_cli_agents.py", "test_probe19_scale.py", "test_readme.py", "test_probe13_visual.py",
           "test_probe24N_batch_live.py", "test_probe13_tasks.py", "test_probe20_viewer.py",
           "test_probe9_statsedges.py", "test_probe14_visual.py", "test_probe4_visual.py", "test_probe20_visual.py",
           "test_probe18_tasks.py", "tasks/test_docker_sandbox.py", "tasks/test_egress.py",
           "test_probe22_viewer.py", "render/test_probe_visual.py", "render/test_renderer.py",
           "test_probe24Q_visual_hostile.py", "test_interruptions.py", "test_live_and_stops.py",
           "engine/test_streaming.py", "test_probe24I_ray.py", "test_probe8_liveness.py",
           "engine/test_resume_lock.py", "test_probe21_durability.py", "test_template_limits.py")


def pytest_collection_modifyitems(config, items):
    """The longest files run first, longest first, then the other files that hold slow tests,
    then the rest (each file's tests in their own order): with the tests spread over workers a
    file at a time (scripts/test.sh), a long file started last kept one worker busy alone at the
    end."""
    here = Path(__file__).resolve().parent
    rank = {here / name: i for i, name in enumerate(LONGEST)}
    slow_files = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: rank.get(item.path, len(LONGEST) + (item.path not in slow_files)))
