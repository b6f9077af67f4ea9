"""Rendered pages under hostile content, and pairwise judging in JUnit (round 24Q): real headless
Chromium (Debian's) driven as a run drives it, a loopback OpenAI-shaped judge, the CLI on real files."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import subprocess
import sys
import threading
import xml.etree.ElementTree as ET
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

from scoreboard.render.browser import Renderer, store_for
from scoreboard.render.settings import RenderSettings

needs_chromium = pytest.mark.skipif(
    not os.path.exists("/usr/bin/chromium") or importlib.util.find_spec("playwright") is None,
    reason="needs Debian's chromium and playwright")


def render_each(texts: list[str], tmp_path: Path, **settings) -> list[dict]:
    async def go():
        renderer = Renderer(RenderSettings(**settings), store_for(tmp_path / "run"), roots=(tmp_path,))
        try:
            return [await renderer.render(t) for t in texts]
        finally:
            await renderer.aclose()
    return asyncio.run(go())


def page(title: str, script: str = "", head: str = "") -> str:
    return f"<!doctype html><html><head>{head}</head><body><h1>{title}</h1><script>{script}</script></body></html>"


# ------------------------------------------- (1) a loaded page moving to its own files

@needs_chromium
def test_a_loaded_page_refreshing_or_moving_to_itself_is_shot_as_itself_and_the_move_is_listed(tmp_path):
    # A page that moved to one of its own files once it had loaded (a meta refresh to itself, a
    # timer setting location during the settle) destroyed the document the renderer was reading:
    # the attempt had no shot, its error Playwright's 'Execution context was destroyed, most
    # likely because of a navigation', and whether it came before or after a shot was a race.
    refresh, timer = render_each([
        page("Refreshing", head='<meta http-equiv="refresh" content="0">'),
        page("Timed", "setTimeout(() => { location.href = 'index.html?again'; }, 100)"),
    ], tmp_path, full_page=True)
    for record, title in ((refresh, "Refreshing"), (timer, "Timed")):
        assert record["error"] is None and len(record["shots"]) == 2, record
        assert record["text"] == title and record["blank"] is False, record
        assert record["blocked_requests"] == 1 and record["console_errors"] == [], record
    assert refresh["blocked"] == ["navigation http://output.invalid/index.html"]
    assert timer["blocked"] == ["navigation http://output.invalid/index.html?again"]


@needs_chromium
def test_a_page_submitting_a_form_to_itself_while_loading_ends_in_words_and_one_to_elsewhere_stays(tmp_path):
    looping, away = render_each([
        '<!doctype html><body><h1>Loop</h1><form id=f action="index.html"></form><script>f.submit()</script>',
        '<!doctype html><body><h1>Away</h1><form id=f action="http://10.1.2.3/x" method=post>'
        '<input name=a value=b></form><script>f.submit()</script>',
    ], tmp_path)
    # Chromium's own timing decides which is met first: the loop counter, the document being
    # replaced under the reading script, or (on a loaded machine) the first navigation being cut by
    # the next, or the render's deadline (CI's machine, once: each document slow to come); either
    # way the error names the navigation, never a hang nor a shot of a half-loaded page
    error = looping["error"] or ""
    assert error.startswith("render failed: ") and "navigat" in error.lower() or \
        error.startswith("render timed out after ") and "the page navigated to its own files" in error, error
    assert looping["shots"] == [], looping
    assert (away["error"], away["text"], away["blocked"]) == (None, "Away", ["http://10.1.2.3/x"]), away


def test_a_render_timeout_says_how_often_the_page_moved_while_it_rendered():
    from scoreboard.render.loading import timed_out

    assert timed_out(30000, 0) == timed_out(30000, 1) == "render timed out after 30000 ms"
    assert timed_out(30000, 2).endswith("; the page navigated to its own files 1 time while it rendered")
    assert timed_out(500, 7) == "render timed out after 500 ms; the page navigated to its own files 6 times while it rendered"


# ------------------------------------------- (1b) a page that downloads a file

@needs_chromium
def test_a_page_downloading_a_file_is_shot_and_the_refused_download_is_counted_and_listed(tmp_path):
    # Downloads are refused (accept_downloads off), but nothing said one was asked for: the
    # record read as a page that made no request at all.
    def clicked(title: str, href: str, wait: int | None = None) -> str:
        click = (f"const a = document.createElement('a'); a.href = {href}; a.download = 'x.txt'; "
                 "document.body.appendChild(a); a.click();")
        return page(title, click if wait is None else f"setTimeout(() => {{ {click} }}, {wait})")

    blob, own, later = render_each([
        clicked("Blob", "URL.createObjectURL(new Blob(['hi']))"),
        clicked("Own", "'index.html'"),
        clicked("Later", "'data:text/plain,yo'", wait=50),
    ], tmp_path)
    for record, title in ((blob, "Blob"), (own, "Own"), (later, "Later")):
        assert (record["error"], record["text"], len(record["shots"])) == (None, title, 1), record
        assert record["blocked_requests"] == 1 and len(record["blocked"]) == 1, record
    assert blob["blocked"][0].startswith("download blob:http://output.invalid/"), blob
    assert own["blocked"] == ["download http://output.invalid/index.html"]
    assert later["blocked"] == ["download data:text/plain,yo"]


# ------------------------------------------- (1c) hints and requests to a loopback listener

@needs_chromium
def test_preconnects_prefetches_fonts_beacons_and_sockets_to_loopback_never_connect_and_are_listed(tmp_path):
    # A raw listener on 127.0.0.1 counts every TCP connection, requests or not: a preconnect or DNS
    # prefetch hint opens a socket without a request the renderer's route would see. A fetch to a
    # port that never answers would hold the page's load; none is ever made.
    import socket

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(50)
    port, hits = srv.getsockname()[1], []

    def accept():
        while True:
            try:
                conn, addr = srv.accept()
            except OSError:
                return
            hits.append(addr)
            conn.close()

    threading.Thread(target=accept, daemon=True).start()
    at = f"127.0.0.1:{port}"
    head = (f'<link rel=preconnect href="http://{at}/"><link rel=dns-prefetch href="http://{at}/">'
            f'<link rel=preload as=font href="http://{at}/f.woff2" crossorigin><link rel=prefetch href="http://{at}/p">'
            f'<style>@font-face {{font-family: X; src: url(http://{at}/x.woff)}} body {{font-family: X}}</style>')
    script = (f'fetch("http://{at}/never").catch(() => {{}}); new WebSocket("ws://{at}/ws"); '
              f'navigator.sendBeacon("http://{at}/b", "x"); new EventSource("http://{at}/es");')
    try:
        (record,) = render_each([page("Hints", script, head).replace("<h1>", f"<img src='http://{at}/i.png'><h1>")],
                                tmp_path)
    finally:
        srv.close()
    assert hits == []
    assert (record["error"], record["text"], record["network_idle"]) == (None, "Hints", True), record
    assert sorted(record["blocked"]) == sorted(f"http://{at}/{p}" for p in ("f.woff2", "i.png", "p", "never", "b",
                                                                            "es", "x.woff")) + [f"ws://{at}/ws"]
    assert record["blocked_requests"] == 8


# ------------------------------------------- (2) attempts share no browser state

@needs_chromium
def test_storage_and_cookies_one_page_writes_are_never_seen_by_the_next(tmp_path):
    write, read = render_each([
        page("Write", "localStorage.setItem('k', 'SECRET1'); sessionStorage.s = 'S3'; "
                      "document.cookie = 'c=SECRET2; max-age=99999';"),
        page("Read", "document.body.append(' LS=' + localStorage.getItem('k') + ' SS=' + "
                     "sessionStorage.getItem('s') + ' CK=' + JSON.stringify(document.cookie))"),
    ], tmp_path)
    assert write["error"] is None and read["error"] is None, (write, read)
    assert read["text"] == 'Read\nLS=null SS=null CK=""', read


# ------------------------------------------- (3) pairwise judging in JUnit

class LoopbackJudge:
    """An OpenAI Chat Completions judge on 127.0.0.1 answering through `decide(prompt)`."""

    def __init__(self, decide):
        outer = self
        self.decide = decide

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                content = body["messages"][-1]["content"]
                prompt = content if isinstance(content, str) else "".join(
                    p.get("text", "") for p in content if p.get("type") == "text")
                data = json.dumps(outer.decide(prompt)).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def chat(content=None, refusal=None) -> dict:
    message = {"role": "assistant", "content": content}
    if refusal is not None:
        message["refusal"] = refusal
    return {"id": "j", "object": "chat.completion", "model": "judge-x",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}


PAGES = ("def zebra(input):\n"
         "    return '<!doctype html><html><body><h1 style=\"color:#246\">' + input + '</h1></body></html>'\n"
         "def gorilla(input):\n"
         "    return '<!doctype html><html><body><p>' + input + '</p></body></html>'\n")


def judged_junit(tmp_path: Path, decide) -> ET.Element:
    (tmp_path / "maker.py").write_text(PAGES)
    (tmp_path / "cases.jsonl").write_text('{"id": "c1", "input": "Welcome"}\n{"id": "c2", "input": "Hello"}\n')
    suite = {"name": "blind", "cases": "cases.jsonl",
             "variants": [{"name": "zebra", "subject": "python:maker:zebra"},
                          {"name": "gorilla", "subject": "python:maker:gorilla"}],
             "render": {"timeout_ms": 10000},
             "pairwise": {"images": True, "source": False},
             "judge": {"type": "openai", "model": "judge-x", "base_url": None}}
    judge = LoopbackJudge(decide)
    suite["judge"]["base_url"] = judge.base_url
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump(suite, sort_keys=False))
    try:
        proc = subprocess.run([sys.executable, "-m", "scoreboard", "run", "suite.yaml", "--no-progress",
                               "--trust-unchecked-judge", "--output", "r.json", "--junit", "r.xml"],
                              cwd=tmp_path, env={**os.environ, "SCOREBOARD_STORE": "none"},
                              capture_output=True, text=True, timeout=600)
    finally:
        judge.close()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return ET.parse(tmp_path / "r.xml").getroot()


def pairwise_of(root: ET.Element) -> ET.Element:
    suites = [s for s in root.findall("testsuite") if s.get("name") == "blind.pairwise"]
    assert len(suites) == 1, [s.get("name") for s in root.findall("testsuite")]
    return suites[0]


@needs_chromium
def test_junit_gives_each_pair_its_wins_position_consistency_and_unjudged_comparisons(tmp_path):
    # JUnit said nothing of pairwise judging: a CI tab showed the variants' cases and the gates,
    # but not which variant the judge preferred, whether its verdicts held when the order was
    # swapped, nor the comparisons it refused (the Markdown, HTML and terminal say all three).
    def decide(prompt):
        if "Hello" in prompt:
            return chat(refusal="I will not compare these pages.")
        return chat(json.dumps({"winner": "A", "explanation": "first"}))  # always the first shown

    root = judged_junit(tmp_path, decide)
    ts = pairwise_of(root)
    props = {p.get("name"): p.get("value") for p in ts.find("properties")}
    assert props["zebra vs gorilla: wins"] == "zebra 0, gorilla 0, ties 1 over 1 case judged", props
    assert props["zebra vs gorilla: position_consistency"] == "0%", props
    assert props["zebra vs gorilla: unjudged"] == ("1 comparison not judged; c2 run 0: judge refused: "
                                                   "I will not compare these pages."), props
    (case,) = ts.findall("testcase")
    assert (case.get("name"), case.get("classname")) == ("zebra vs gorilla", "blind.pairwise")
    assert case.find("skipped") is None and case.find("failure") is None
    out = case.find("system-out").text
    assert "position consistency 0%" in out and "not judged: c2 run 0: judge refused:" in out, out
    assert (ts.get("tests"), ts.get("failures"), ts.get("skipped")) == ("1", "0", "0")
    # the pair's testcase counts in the file's totals (2 variants x 2 cases, and the pair)
    assert root.get("tests") == "5", root.attrib


def test_a_pair_no_comparison_of_which_was_judged_is_skipped_saying_why():
    from scoreboard.record.junit_pairwise import pairwise_suite
    from scoreboard.record.junit import clean, one_line
    from scoreboard.record.schema_judge import PairwiseSummary

    pw = PairwiseSummary(a="a\x1b[31m", b="b", cases=1, a_wins=0, b_wins=0, ties=0, judge_failures=1,
                         note="1 comparison not assessed")
    block = {"judgments": [{"case_id": "c1", "run": 0, "a": "a\x1b[31m", "b": "b", "verdict": None,
                            "failure": "judge timed out after 30 s"}]}
    root = ET.Element("testsuites")
    counts = pairwise_suite(root, "s.pairwise", "s.pairwise", [pw], block, one_line, clean)
    assert counts == {"tests": 1, "failures": 0, "errors": 0, "skipped": 1}
    case = root.find("testsuite/testcase")
    assert case.get("name") == "a\\x1b[31m vs b"  # a hidden character spelt, as in every JUnit name
    assert case.find("skipped").get("message") == "no comparison judged: c1 run 0: judge timed out after 30 s"
