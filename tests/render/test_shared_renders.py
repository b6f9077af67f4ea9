"""A page made from an output's text is rendered once a run (render/shared.py): attempts with
the same text share its record, a folder output is rendered every time, a first render cut
before it finished is done again by whoever waited on it."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from scoreboard.render.browser import Renderer, store_for
from scoreboard.render.detect import PageSource
from scoreboard.render.settings import RenderSettings
from scoreboard.render.shared import SharedRenders


def _fake(calls: list, delay: float = 0.05, fail_first: bool = False):
    async def render(source: PageSource, record: dict) -> dict:
        calls.append(source.html)
        await asyncio.sleep(delay)
        if fail_first and len(calls) == 1:
            raise asyncio.CancelledError()
        return {**record, "shots": [{"sha256": f"h{len(calls)}"}], "console_errors": []}
    return render


def test_the_same_page_asked_for_at_once_and_later_is_rendered_once_and_each_gets_its_own_copy():
    calls: list = []
    pages = SharedRenders()
    page = PageSource("html", "<p>hi</p>")

    async def main():
        first = await asyncio.gather(*(pages.once(page, {"error": None}, _fake(calls)) for _ in range(5)))
        later = await pages.once(page, {"error": None}, _fake(calls))
        return [*first, later]

    records = asyncio.run(main())
    assert calls == ["<p>hi</p>"] and pages.shared == 5
    assert all(r == records[0] for r in records)
    records[0]["console_errors"].append("changed by one attempt")
    assert records[1]["console_errors"] == [] and len({id(r) for r in records}) == 6


def test_another_text_or_kind_is_another_render():
    calls: list = []
    pages = SharedRenders()

    async def main():
        for source in (PageSource("html", "<p>a</p>"), PageSource("html", "<p>b</p>"), PageSource("svg", "<p>a</p>")):
            await pages.once(source, {}, _fake(calls, 0))

    asyncio.run(main())
    assert len(calls) == 3 and pages.shared == 0


def test_a_first_render_cut_before_it_finished_is_rendered_by_who_waited():
    calls: list = []
    pages = SharedRenders()
    page = PageSource("html", "<p>hi</p>")

    async def main():
        render = _fake(calls, fail_first=True)
        return await asyncio.gather(*(pages.once(page, {}, render) for _ in range(3)), return_exceptions=True)

    first, *others = asyncio.run(main())
    assert isinstance(first, asyncio.CancelledError)
    assert len(calls) == 2 and others[0] == others[1] and others[0]["shots"] == [{"sha256": "h2"}]


def test_a_page_forgotten_past_the_cap_is_rendered_again():
    calls: list = []
    pages = SharedRenders(held=2)
    a, b, c = (PageSource("html", x) for x in "abc")

    async def main():
        for source in (a, b, c, b, a):
            await pages.once(source, {}, _fake(calls, 0))

    asyncio.run(main())
    assert calls == ["a", "b", "c", "a"]


@pytest.mark.skipif(not os.path.exists("/usr/bin/chromium"), reason="needs Debian's chromium")
def test_in_chromium_a_text_renders_once_a_folder_every_time(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text("<h1>folder v1</h1>")
    page = "<!doctype html><html><body><h1>Same page</h1></body></html>"

    async def go():
        renderer = Renderer(RenderSettings(concurrency=1), store_for(tmp_path / "run"), roots=(tmp_path,))
        browsered: list[str] = []
        real = renderer._in_browser

        async def counted(source, record):
            browsered.append(source.kind)
            return await real(source, record)

        renderer._in_browser = counted
        try:
            texts = await asyncio.gather(*(renderer.render(page) for _ in range(3)))
            folder1 = await renderer.render(str(site))
            (site / "index.html").write_text("<h1>folder v2, a longer heading</h1>")
            folder2 = await renderer.render(str(site))
            return texts, folder1, folder2, browsered
        finally:
            await renderer.aclose()

    texts, folder1, folder2, browsered = asyncio.run(go())
    assert browsered == ["html", "folder", "folder"]
    assert texts[0] == texts[1] == texts[2] and texts[0]["shots"] and texts[0]["error"] is None
    assert Path(tmp_path / "run" / "screenshots" / f"{texts[0]['shots'][0]['sha256']}.png").exists()
    # a folder's files may change between attempts: each attempt sees them as they are
    assert "folder v1" in folder1["text"] and "folder v2" in folder2["text"]
    assert folder1["shots"][0]["sha256"] != folder2["shots"][0]["sha256"]
