"""gcpause: the collector paused around acyclic bulk work, fewer young collections during a run,
and the process's settings put back afterwards, also when runs overlap or fail."""

import asyncio
import gc

import pytest

from scoreboard.gcpause import RUN_THRESHOLD, collector_paused, fewer_collections


def test_paused_and_put_back_even_on_error():
    assert gc.isenabled()
    with pytest.raises(RuntimeError):
        with collector_paused():
            assert not gc.isenabled()
            with collector_paused():  # nested: still off after the inner block
                pass
            assert not gc.isenabled()
            raise RuntimeError("boom")
    assert gc.isenabled()


def test_keep_freezes_what_the_block_made():
    before = gc.get_freeze_count()
    try:
        with collector_paused(keep=True):
            made = [[i] for i in range(1000)]
        assert gc.get_freeze_count() >= before + 1000 and made
    finally:
        gc.unfreeze()


def test_overlapping_runs_put_the_thresholds_back_once_the_last_ends():
    start = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    try:
        async def one(delay):
            with fewer_collections():
                assert gc.get_threshold()[0] == RUN_THRESHOLD
                await asyncio.sleep(delay)
                assert gc.get_threshold()[0] == RUN_THRESHOLD  # the other run ended meanwhile

        async def both():
            await asyncio.gather(one(0.05), one(0.01))

        asyncio.run(both())
        assert gc.get_threshold() == (700, 10, 10)
        with pytest.raises(ValueError):
            with fewer_collections():
                raise ValueError
        assert gc.get_threshold() == (700, 10, 10)
    finally:
        gc.set_threshold(*start)
