"""Waiting for a rendered page's document to load, and the words for a page that never did.

A page may move to another of its own files while it loads (a form submitted to itself, a
`location` assignment in its script): each move destroys the document a wait was reading, so
the move is followed a few times, then the render fails naming it. On a loaded machine the
moves may instead outlast the render's deadline; the timeout then says how often the page moved.
"""

from __future__ import annotations

import asyncio

from .scripts import LOADED_SCRIPT

#: navigations of a page to its own files followed while it loads
NAVIGATIONS = 5


async def loaded(page) -> None:
    """Wait for the page's document to load; a page that moves to another of its own files is
    followed a few times (its main frame's navigations: one move may spoil several tries)."""
    moves = 0

    def moved(frame) -> None:
        nonlocal moves
        moves += frame == page.main_frame

    page.on("framenavigated", moved)
    try:
        for tries in range(20 * NAVIGATIONS):  # a bound beside the count, should events not come
            try:
                await page.evaluate(LOADED_SCRIPT)
                return
            except Exception as exc:  # noqa: BLE001 - only a navigation is retried
                if "context was destroyed" not in str(exc):
                    raise
            if moves > NAVIGATIONS and tries + 1 >= NAVIGATIONS:  # (a same-document move is no try)
                break
            await asyncio.sleep(0.01 * min(tries + 1, 10))  # the next document is on its way
    finally:
        page.remove_listener("framenavigated", moved)
    raise RuntimeError(f"the page navigated more than {NAVIGATIONS} times while loading")


def timed_out(timeout_ms: int, documents: int) -> str:
    """A render's timeout in words; `documents`: how many of its own documents the page's main
    frame asked for (the first is index.html, each later one a navigation while it ran)."""
    moved = documents - 1
    if moved > 0:
        return (f"render timed out after {timeout_ms} ms; the page navigated to its own files {moved} "
                f"time{'s' if moved != 1 else ''} while it rendered")
    return f"render timed out after {timeout_ms} ms"
