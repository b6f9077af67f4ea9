"""Hostile pages in real headless Chromium (Debian's): what a page may not reach (UDP through
WebRTC, file: URLs), pages that navigate away, flood their console, allocate without end or are
too big to render, and output text that made detection take exponential time. Each is recorded
in the render record, never a hang, a silent pass or an exhausted machine."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from scoreboard.graders.page import PageNoConsoleErrorsGrader, PageRendersGrader
from scoreboard.render.browser import CONSOLE_FLOOD, CONSOLE_READ
from scoreboard.render.detect import MAX_MARKDOWN_CHARS, page_source
from tests.render.test_renderer import Hits, render_all

pytestmark = pytest.mark.skipif(not os.path.exists("/usr/bin/chromium"), reason="needs Debian's chromium")


def test_webrtc_sends_no_udp_to_loopback(tmp_path):
    # A STUN/TURN server on 127.0.0.1: before, the page's ICE gathering sent it UDP packets.
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    port = udp.getsockname()[1]
    try:
        page = ("<html><body><h1>rtc</h1><script>const pc = new RTCPeerConnection({iceServers: ["
                f"{{urls: 'stun:127.0.0.1:{port}'}}, {{urls: 'turn:127.0.0.1:{port}', username: 'u', "
                "credential: 'c'}]}); pc.createDataChannel('d');"
                "pc.createOffer().then(o => pc.setLocalDescription(o));</script></body></html>")
        record = render_all([page], tmp_path)[0]
        udp.setblocking(False)  # loopback datagrams are queued as they are sent: read what came
        received = []
        while True:
            try:
                received.append(udp.recv(2048))
            except BlockingIOError:
                break
    finally:
        udp.close()
    assert record["error"] is None and record["shots"]
    assert received == []


def test_file_urls_are_blocked_and_counted(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret")
    page = (f"<html><body><h1>files</h1><img src='file://{secret}'><iframe src='file:///etc/hostname'></iframe>"
            "</body></html>")
    record = render_all([page], tmp_path)[0]
    assert record["blocked_requests"] >= 2
    assert f"file://{secret}" in record["blocked"] and "file:///etc/hostname" in record["blocked"]
    assert not any("local resource" in e for e in record["console_errors"])  # counted, not an error
    assert "top secret" not in record["text"]


def test_a_page_that_navigates_away_is_shot_as_itself(tmp_path):
    srv = Hits()
    try:
        away = f"http://127.0.0.1:{srv.port}"
        pages = [f"<html><body><h1>Own page one</h1><script>location.href = '{away}/script'</script></body></html>",
                 f"<html><head><meta http-equiv=refresh content='0;url={away}/refresh'></head>"
                 "<body><h1>Own page two</h1></body></html>",
                 f"<html><body><h1>Own page three</h1><form id=f method=post action='{away}/form'></form>"
                 "<script>document.getElementById('f').submit()</script></body></html>"]
        records = render_all(pages, tmp_path)
    finally:
        srv.close()
    assert srv.hits == []
    for n, record in zip(("one", "two", "three"), records):
        assert record["error"] is None and record["shots"], record["error"]
        assert record["blocked_requests"] == 1 and record["blocked"][0].startswith(away)
        assert f"Own page {n}" in record["text"] and "blocked" not in record["text"]  # not Chromium's error page


def test_a_folder_page_may_move_to_its_own_file_but_not_reload_forever(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text("<html><body><script>location.replace('page.html')</script></body></html>")
    (site / "page.html").write_text("<html><body><h1>Second page</h1></body></html>")
    looping = "<html><body><h1>again</h1><script>location.reload()</script></body></html>"
    moved, loop = render_all([str(site), looping], tmp_path)
    assert moved["error"] is None and "Second page" in moved["text"]
    assert loop["error"] and "navigated" in loop["error"] and not loop["shots"]
    assert PageRendersGrader().judge_page(loop).passed is False


def test_console_flood_is_said_and_leaves_no_console_grade(tmp_path):
    n = CONSOLE_READ * 3
    quiet = f"<html><body><h1>chatty</h1><script>for (let i = 0; i < {n}; i++) console.log('line ' + i)</script></body></html>"
    noisy = f"<html><body><h1>noisy</h1><script>for (let i = 0; i < {n}; i++) console.error('bad ' + i)</script></body></html>"
    q, e = render_all([quiet, noisy], tmp_path)
    assert q["error"] is None and q["console_errors"] == [CONSOLE_FLOOD]
    assert e["console_errors"][0] == "bad 0" and e["console_errors"][-1] == CONSOLE_FLOOD
    grader = PageNoConsoleErrorsGrader()
    # Messages past the flood were never read: "no console errors" cannot be claimed.
    assert grader.judge_page(q).passed is None and "flooded" in grader.judge_page(q).reason
    assert grader.judge_page(e).passed is False


def test_a_page_that_allocates_without_end_is_stopped(tmp_path):
    page = ("<html><body><h1>hungry</h1><script>const keep = []; while (true) { const a = new Uint8Array(5e7);"
            "a.fill(1); keep.push(a) }</script></body></html>")
    record, after = render_all([page, "<html><body><h1>Next page renders</h1></body></html>"], tmp_path,
                               max_memory_mb=256, timeout_ms=120_000)
    assert record["crashed"] is True and not record["shots"]
    assert "render.max_memory_mb (256 MB)" in record["error"]
    assert PageRendersGrader().judge_page(record).passed is False
    assert after["error"] is None and "Next page renders" in after["text"]  # the browser lives on


def test_a_page_over_the_size_limit_is_not_rendered(tmp_path):
    big = "<html><body>" + "<p>filler text</p>" * 20_000 + "</body></html>"
    record = render_all([big], tmp_path, max_file_bytes=100_000)[0]
    assert not record["shots"] and record["kind"] == "html"
    assert "render.max_file_bytes (100000)" in record["error"] and str(len(big)) in record["error"]
    assert PageRendersGrader().judge_page(record).passed is False
    source, why = page_source("word " * (MAX_MARKDOWN_CHARS // 4), ["markdown"])
    assert source is None and "Markdown output" in why and str(MAX_MARKDOWN_CHARS) in why


def test_leading_comments_do_not_make_detection_exponential():
    # "<!---->" * 40 took 2**40 steps in the comment-skipping pattern (the run's event loop hung).
    code = ("from scoreboard.render.detect import page_source\n"
            "s, _ = page_source('<!---->' * 40 + 'x', ['html', 'svg'])\n"
            "h, _ = page_source('<!-- a --> <!-- b -->' * 20 + '<!doctype html><p>ok', ['html'])\n"
            "v, _ = page_source('<?xml version=\"1.0\"?><!-- c --><svg></svg>', ['svg'])\n"
            "print(s, h.kind, v.kind)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["None", "html", "svg"]
