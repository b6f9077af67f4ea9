"""A page made from an output's text alone is rendered once a run.

The same page renders to the same bytes on the same machine and Chromium (browser.py: a paused
page clock, seeded randomness, reduced motion), so attempts whose output is the same text (an
instrument check's repeats of a control, a subject that answers alike across runs) are given
the render record of its first render, screenshots included, instead of a browser's time for
each: the check stage of the landing-pages example rendered its 15 pages 45 times. A folder
output is rendered every time (its files may change between attempts). A render cut before it
finished (its attempt cancelled) is done again by the next attempt that needs it.
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
from collections import OrderedDict
from collections.abc import Awaitable, Callable

from .detect import PageSource

#: the pages a run remembers (the records are small: screenshots are stored by hash)
HELD = 256


class _Cut(Exception):
    """The first render of a page did not finish: whoever waited on it renders it."""


class SharedRenders:
    def __init__(self, held: int = HELD):
        self.held = held
        self._pages: OrderedDict[str, asyncio.Future] = OrderedDict()
        #: attempts given a render record made for an earlier one
        self.shared = 0

    async def once(self, source: PageSource, record: dict,
                   render: Callable[[PageSource, dict], Awaitable[dict]]) -> dict:
        """`render(source, record)` the first time this page is asked for; a copy of its record
        each time."""
        key = hashlib.sha256(f"{source.kind}\0{source.html}".encode("utf-8", "surrogatepass")).hexdigest()
        while (page := self._pages.get(key)) is not None:
            self._pages.move_to_end(key)
            try:
                done = await asyncio.shield(page)
            except _Cut:
                continue  # the first render was cut: this attempt renders it (or waits on who does)
            self.shared += 1
            return copy.deepcopy(done)
        page = asyncio.get_running_loop().create_future()
        self._pages[key] = page
        while len(self._pages) > self.held:
            self._pages.popitem(last=False)
        try:
            done = await render(source, record)
        except BaseException:
            if self._pages.get(key) is page:
                del self._pages[key]
            page.set_exception(_Cut())
            page.exception()  # read here, so that asyncio never reports it as unread
            raise
        page.set_result(done)
        return copy.deepcopy(done)
