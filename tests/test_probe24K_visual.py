"""Visual and open-ended judging probed from the outside (round 24K): two variants' pages rendered in
real headless Chromium, judged blind by a loopback OpenAI-shaped judge that records every request,
and the CLI run on real files."""

from __future__ import annotations

import base64
import importlib.util
import json
import os
import re
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.cli_inprocess import run_cli
import yaml

needs_chromium = pytest.mark.skipif(
    not os.path.exists("/usr/bin/chromium") or importlib.util.find_spec("playwright") is None,
    reason="needs Debian's chromium and playwright")


class LoopbackJudge:
    """An OpenAI Chat Completions judge on 127.0.0.1 answering through `decide(body, prompt)`."""

    def __init__(self, decide):
        self.decide, self.requests = decide, []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                outer.requests.append({"path": self.path, "headers": dict(self.headers), "json": body})
                data = json.dumps(outer.decide(body, prompt_of(body))).encode()
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


def prompt_of(body: dict) -> str:
    content = body["messages"][-1]["content"]
    return content if isinstance(content, str) else "".join(p.get("text", "") for p in content
                                                            if p.get("type") == "text")


def chat(content=None, refusal=None, usage=None) -> dict:
    message = {"role": "assistant", "content": content}
    if refusal is not None:
        message["refusal"] = refusal
    out = {"id": "j", "object": "chat.completion", "model": "judge-x",
           "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}
    if usage is not None:
        out["usage"] = usage
    return out


PAGES = ("def zebra(input):\n"
         "    return ('<!doctype html><html><head><title>zebra page</title></head><body>'\n"
         "            '<h1 style=\"color:#246\">' + input + '</h1><img alt=\"made by zebra\" '\n"
         "            'src=\"data:image/gif;base64,R0lGODlhAQABAAAAACw=\"></body></html>')\n"
         "def gorilla(input):\n"
         "    return '<!doctype html><html><body><p>' + input + '</p></body></html>'\n")


def run_suite(tmp_path: Path, judge: LoopbackJudge) -> subprocess.CompletedProcess:
    (tmp_path / "secret_maker.py").write_text(PAGES)
    (tmp_path / "cases.jsonl").write_text('{"id": "c1", "input": "Welcome"}\n{"id": "c2", "input": "Hello"}\n')
    suite = {"name": "blind", "cases": "cases.jsonl",
             "variants": [{"name": "zebra-variant", "subject": "python:secret_maker:zebra"},
                          {"name": "gorilla-variant", "subject": "python:secret_maker:gorilla"}],
             "render": {"timeout_ms": 10000},
             "pairwise": {"images": True, "source": False},
             "graders": [{"pointwise": {"images": True, "source": False}}],
             "judge": {"type": "openai", "model": "judge-x", "base_url": judge.base_url}}
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump(suite, sort_keys=False))
    return run_cli(["run", "suite.yaml", "--no-progress", "--trust-unchecked-judge", "--output", "r.json",
                    "--format", "json,md,html,junit"], tmp_path, {**os.environ, "SCOREBOARD_STORE": "none"})


def shown_html(path: Path, testid: str) -> str:
    """The text an element of the HTML report shows in real Chromium (its script draws it)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium")
        try:
            page = browser.new_page()
            page.goto(path.as_uri())
            return page.get_by_test_id(testid).inner_text(timeout=20000)
        finally:
            browser.close()


def scores(prompt: str) -> dict:
    dims = re.search(r"^DIMENSIONS: (.+)$", prompt, re.M).group(1).split(", ")
    return {d: 2 for d in dims}


@needs_chromium
def test_no_variant_subject_or_path_reaches_the_judge_and_screenshots_carry_no_metadata(tmp_path):
    def decide(body, prompt):
        if "ANSWER A" in prompt:
            return chat(json.dumps({"winner": "A", "explanation": "first"}), usage={"prompt_tokens": 5,
                                                                                    "completion_tokens": 1})
        return chat(json.dumps({"scores": scores(prompt), "explanation": "e"}),
                    usage={"prompt_tokens": 5, "completion_tokens": 1})

    judge = LoopbackJudge(decide)
    try:
        proc = run_suite(tmp_path, judge)
    finally:
        judge.close()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert len(judge.requests) == 8  # 4 pointwise, 2 pairs asked in both orders
    for request in judge.requests:
        sent = json.dumps(request).lower()
        for word in ("zebra", "gorilla", "variant", "secret_maker", str(tmp_path).lower()):
            assert word not in sent, (word, sent[:2000])
        for part in request["json"]["messages"][-1]["content"]:
            if part.get("type") == "image_url":
                png = base64.b64decode(part["image_url"]["url"].split(",", 1)[1])
                chunks, i = set(), 8
                while i < len(png):
                    n = int.from_bytes(png[i:i + 4], "big")
                    chunks.add(png[i + 4:i + 8])
                    i += 12 + n
                assert chunks == {b"IHDR", b"IDAT", b"IEND"}, chunks  # no text, EXIF or time chunk
    # a judge that always picks the answer shown first: every verdict flips, no wins, 0% consistent
    report = json.loads((tmp_path / "r.json").read_text())
    pair = report["summary"]["judges"]["pairwise"][0]
    assert (pair["a_wins"], pair["b_wins"], pair["ties"], pair["position_consistency"]) == (0, 0, 2, 0.0)


@needs_chromium
def test_a_pairwise_refusal_is_said_with_its_reason_in_every_rendering(tmp_path):
    # A pairwise comparison the judge refused was counted ("1 comparison not assessed (judge
    # failure or no majority)") but why, and where, was in the JSON's judgments alone: the
    # terminal, the Markdown and the HTML gave a reader no way to tell a refusal from a timeout.
    def decide(body, prompt):
        if "ANSWER A" in prompt and "Hello" in prompt:
            return chat(refusal="I will not compare these pages.")
        if "ANSWER A" in prompt:
            return chat(json.dumps({"winner": "tie", "explanation": "same"}))
        return chat(json.dumps({"scores": scores(prompt), "explanation": "e"}))

    judge = LoopbackJudge(decide)
    try:
        proc = run_suite(tmp_path, judge)
    finally:
        judge.close()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    said = "c2 run 0: judge refused: I will not compare these pages."
    assert said in proc.stdout, proc.stdout
    assert said in (tmp_path / "r.md").read_text()
    assert said in shown_html(tmp_path / "r.html", "pairwise-unjudged-zebra-variant-gorilla-variant")
    # usage the judge never reported stays unknown, beside the pair, never 0
    assert "cost USD unknown" in proc.stdout
