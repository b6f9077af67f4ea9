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


_STD = __import__("json").JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _std_or_error(value):
    try:
        return _STD.encode(value)
    except (ValueError, TypeError) as exc:
        return type(exc)


def _random_value(rng, depth=0):
    kind = rng.randrange(9 if depth < 4 else 6)
    if kind == 0:
        return rng.choice([None, True, False])
    if kind == 1:
        return rng.choice([0, -1, 7, 2**53 + 1, 10**30, -(10**40)])
    if kind == 2:
        return rng.choice([0.0, -0.0, 1.5, 1e16, 1e-7, 1e308, 5e-324, 0.1 + 0.2, float("inf"), float("nan")])
    if kind in (3, 4, 5):
        alphabet = "aZ é\u2028\u00ad\x00\x1f\x7f\"\\/\n\t😀\ud800"
        return "".join(rng.choice(alphabet) for _ in range(rng.randrange(6)))
    if kind == 6:
        return [_random_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    if kind == 7:
        return tuple(_random_value(rng, depth + 1) for _ in range(rng.randrange(3)))
    keys = ["b", "a", "é", "A", "\u2028", "", "1", 1, 2.5, True, None]
    return {rng.choice(keys): _random_value(rng, depth + 1) for _ in range(rng.randrange(4))}


def test_canonical_json_is_the_standard_encoders_text_for_any_value():
    # the hash of every output is taken with a C encoder built once (hashing._FAST): the text,
    # and the error for what JSON cannot hold (NaN, a non-string key the encoder refuses), must be
    # the standard encoder's, or earlier reports' hashes would no longer verify
    import random

    from scoreboard.hashing import canonical_json

    rng = random.Random(20261206)
    for _ in range(5000):
        value = _random_value(rng)
        want = _std_or_error(value)
        try:
            got = canonical_json(value)
        except (ValueError, TypeError) as exc:
            got = type(exc)
        assert got == want, value


def test_a_value_that_holds_itself_is_refused_as_the_standard_encoder_refuses_it():
    from scoreboard.hashing import canonical_json

    loop: dict = {"a": 1}
    loop["self"] = loop
    with pytest.raises(ValueError, match="Circular reference"):
        canonical_json(loop)
    deep: list = []
    for _ in range(50):
        deep = [deep]
    assert canonical_json(deep) == "[" * 51 + "]" * 51
