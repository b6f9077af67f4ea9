"""The renderer in real headless Chromium (Debian's): determinism, the network blocked and
counted, console errors, blank pages, folders, the page clock and the degradations."""

from __future__ import annotations

import asyncio
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from scoreboard.render.browser import Renderer, store_for
from scoreboard.render.degrade import DEGRADATIONS, degrade
from scoreboard.render.detect import page_source
from scoreboard.render.settings import RenderSettings

pytestmark = pytest.mark.skipif(not os.path.exists("/usr/bin/chromium"), reason="needs Debian's chromium")

PAGE = """<!doctype html><html><head><style>body{font-family:sans-serif;background:#fdf6ec}
h1{color:#e76f51;animation:slide 2s infinite}@keyframes slide{from{margin-left:0}to{margin-left:300px}}
</style></head><body><h1>Fresh bread</h1><p id=t></p><p id=r></p>
<script>document.getElementById('t').textContent = new Date().toISOString();
document.getElementById('r').textContent = Math.random();</script></body></html>"""


def render_all(texts: list[str], tmp_path: Path, share: bool = True, **settings) -> list[dict]:
    async def go():
        renderer = Renderer(RenderSettings(**settings), store_for(tmp_path / "run"), roots=(tmp_path,))
        if not share:  # every text rendered, a page asked for again included (render/shared.py)
            renderer.pages.held = 0
        try:
            return [await renderer.render(t) for t in texts], renderer.store
        finally:
            await renderer.aclose()
    records, store = asyncio.run(go())
    for r in records:
        r["_store"] = store
    return records


class Hits:
    """A loopback HTTP server that counts every request that reaches it."""

    def __init__(self):
        hits = self.hits = []

        class H(BaseHTTPRequestHandler):
            def do_GET(self):
                hits.append(self.path)
                self.send_response(200)
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *a):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()


def test_same_page_renders_to_the_same_hash_twice(tmp_path):
    # Separate renderers (separate browsers): clock, seed, animation and fonts give one image.
    first = render_all([PAGE], tmp_path / "a")[0]
    second = render_all([PAGE, PAGE], tmp_path / "b", share=False)  # twice in one browser too
    hashes = {r["shots"][0]["sha256"] for r in [first, *second]}
    assert len(hashes) == 1
    assert "2024-01-01T00:00:00.000Z" in first["text"]  # the fixed clock
    assert first["text"] == second[1]["text"]  # the seeded Math.random too
    stored = tmp_path / "a" / "run" / "screenshots" / f"{first['shots'][0]['sha256']}.png"
    assert stored.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert first["shots"][0]["path"] == f"run/screenshots/{stored.name}"


def test_another_seed_or_clock_changes_what_the_page_sees(tmp_path):
    a = render_all([PAGE], tmp_path / "a")[0]
    b = render_all([PAGE], tmp_path / "b", seed=1, clock="2030-06-01T12:00:00Z")[0]
    assert a["text"] != b["text"] and "2030-06-01T12:00:00.000Z" in b["text"]


def test_network_is_blocked_and_counted(tmp_path):
    srv = Hits()
    try:
        page = (f"<html><body><h1>x</h1><img src='http://127.0.0.1:{srv.port}/img.png'>"
                f"<link rel=stylesheet href='http://localhost:{srv.port}/a.css'>"
                f"<script>fetch('http://127.0.0.1:{srv.port}/api').catch(()=>{{}});"
                f"fetch('https://example.com/track').catch(()=>{{}});"
                f"try {{ new WebSocket('ws://127.0.0.1:{srv.port}/ws') }} catch (e) {{}}</script></body></html>")
        record = render_all([page], tmp_path)[0]
    finally:
        srv.close()
    assert srv.hits == []  # nothing reached the server
    assert record["blocked_requests"] >= 4
    assert any("example.com" in u for u in record["blocked"])
    assert any(f"127.0.0.1:{srv.port}/img.png" in u for u in record["blocked"])
    assert not any("ERR_BLOCKED_BY_CLIENT" in e for e in record["console_errors"])


def test_console_errors_and_uncaught_exceptions_are_measurements(tmp_path):
    page = "<html><body><p>hi</p><script>console.error('broken widget'); null.x;</script></body></html>"
    record = render_all([page], tmp_path)[0]
    assert record["console_errors"] == ["broken widget"]
    assert record["page_errors"] and "null" in record["page_errors"][0]
    assert record["error"] is None and record["shots"]


def test_blank_page_is_detected(tmp_path):
    records = render_all([degrade(PAGE, "blank"), "<html><body style='background:#123'></body></html>", PAGE],
                         tmp_path)
    assert [r["blank"] for r in records] == [True, True, False]


def test_page_clock_moments_show_what_timers_add(tmp_path):
    page = ("<html><body><p>start</p><script>setTimeout(() => document.body.insertAdjacentHTML('beforeend',"
            "'<h1 style=\"font-size:80px\">LATE</h1>'), 2000)</script></body></html>")
    record = render_all([page], tmp_path, moments_ms=[0, 3000], full_page=True)[0]
    assert [(s["moment_ms"], s["full_page"]) for s in record["shots"]] == [(0, False), (3000, False), (3000, True)]
    assert record["shots"][0]["sha256"] != record["shots"][1]["sha256"]
    assert "LATE" in record["text"]


def test_svg_markdown_fenced_html_and_folders(tmp_path):
    folder = tmp_path / "site"
    (folder / "css").mkdir(parents=True)
    (folder / "index.html").write_text("<html><head><link rel=stylesheet href='css/s.css'></head>"
                                       "<body><h1>From a folder</h1><img src='../secret.png'></body></html>")
    (folder / "css" / "s.css").write_text("h1{color:red}")
    (tmp_path / "secret.png").write_bytes(b"x")
    texts = ["<svg xmlns='http://www.w3.org/2000/svg' width='50' height='50'><rect width='50' height='50'/></svg>",
             "# Title\n\n| a | b |\n|---|---|\n| 1 | 2 |\n", "Here you go:\n```html\n<h1>Fenced</h1>\n```\n",
             str(folder)]
    records = render_all(texts, tmp_path)
    assert [r["kind"] for r in records] == ["svg", "markdown", "html", "folder"]
    assert "Title" in records[1]["text"] and "Fenced" in records[2]["text"] and "From a folder" in records[3]["text"]
    assert records[3]["blocked_requests"] == 0  # ../secret.png stays on the output's origin: not served
    assert all(r["shots"] and not r["blank"] for r in records[:3])


def test_kinds_not_rendered_say_why():
    source, why = page_source("just words", ["html"])
    assert source is None and "markdown outputs are not rendered" in why


@pytest.mark.parametrize("how", DEGRADATIONS)
def test_degradations_change_the_page(how):
    page = ("<html><head><style>h1{color:red;background:url(a.png)}</style></head><body style='margin:4px'>"
            "<h1>Alpha beta gamma delta</h1><p>one two three four five six seven eight</p><img src=x.png>"
            "<svg><circle r=3></circle></svg></body></html>")
    out = degrade(page, how, seed=3)
    assert out != page
    if how == "unstyled":
        assert "<style" not in out and "style=" not in out and "<h1>" in out
    if how == "no-images":
        assert "<img" not in out and "<svg" not in out and "url(" not in out
    if how == "truncated":
        assert "eight" not in out and "Alpha" in out
    if how == "shuffled":
        assert sorted(out.split("<p>")[1].split("</p>")[0].split() + out.split("<h1>")[1].split("</h1>")[0].split()) \
            == sorted(["Alpha", "beta", "gamma", "delta", "one", "two", "three", "four", "five", "six", "seven", "eight"])
