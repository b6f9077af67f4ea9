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


def pytest_collection_modifyitems(config, items):
    """The files that hold slow tests run first (each file's tests in their own order): with
    the tests spread over workers a file at a time (scripts/test.sh), a long file started last
    kept one worker busy alone at the end."""
    slow_files = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow_files)
