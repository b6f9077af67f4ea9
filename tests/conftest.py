"""Shared fixtures: loopback fake servers (see tests/servers/)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

_ROOT = str(Path(__file__).resolve().parent.parent)
if _ROOT not in sys.path:  # so `tests.servers` imports work under any import mode
    sys.path.insert(0, _ROOT)

from tests.servers.fake_agent import FakeAgent  # noqa: E402
from tests.servers.fake_provider import FakeProvider  # noqa: E402


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
