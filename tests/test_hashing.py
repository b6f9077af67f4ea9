"""The hashes that bind reports to their inputs and outputs (scoreboard/hashing.py)."""

from __future__ import annotations

import pytest

from scoreboard.hashing import sha256_json, sha256_json_items


@pytest.mark.parametrize("n", [0, 1, 2, 255, 256, 257, 1000])
def test_hashing_items_in_batches_hashes_the_same_bytes_as_the_whole_list(n):
    # fixture_hash hashes the plan's cases in batches; the digest must be the whole list's
    items = [{"id": f"c{i}", "input": {"q": "é" * (i % 3), "n": i, "x": [None, True, 1.5]}, "tags": []}
             for i in range(n)]
    assert sha256_json_items(iter(items)) == sha256_json(items)
    assert sha256_json_items(iter(items), batch=1) == sha256_json(items)
