"""promptfoo importer, round 24A: `is-html` converted (promptfoo 0.121.20's html.ts validateHtml, a
parse5 tree, ported over html5lib's WHATWG tree construction), and realistic configs (CSV vars,
defaultTest, assert-sets, transforms, weights, thresholds, named metrics) run against a loopback
OpenAI-shaped server that echoes the prompt. Every expected verdict below is what promptfoo 0.121.20
computes: validateHtml run under Node on the same texts (parse5 8.1.1)."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from scoreboard.importers.promptfoo_assert_runtime import is_html
from scoreboard.importers.promptfoo_runtime_html import validate_html

#: (output, promptfoo's validateHtml result), from node on promptfoo 0.121.20's dist
PROMPTFOO_IS_HTML = [
    ("<p>Hello <b>world</b></p>", True, "Output is valid HTML"),
    ("Here is the page: <div>x</div>", False, "Output must be wrapped in HTML tags"),
    ("<html><body>Hi</body></html>", True, "Output is valid HTML"),
    ("<my-widget></my-widget>", True, "Output is valid HTML"),
    ("<foo>bar</foo>", False, "Output does not contain recognized HTML elements"),
    ("<?xml version='1.0'?><p>x</p>", False, "Output appears to be XML, not HTML"),
    ("  ", False, "Output is empty"),
    ("<math></p>x", False, "Output must be wrapped in HTML tags"),
    ("<ul><li>a</li></ul>\n<p>b</p>", True, "Output is valid HTML"),
    ("<table>oops<tr><td>1</td></tr></table>", False, "Output must be wrapped in HTML tags"),
    ("<div>a</div>tail", False, "Output must be wrapped in HTML tags"),
    ("<isindex>", False, "Output does not contain recognized HTML elements"),
    ("</select><html><frame>", True, "Output is valid HTML"),
    ("</style><!DOCTYPE html><html>", True, "Output is valid HTML"),
    ("x<body>y</body>", False, "Output must be wrapped in HTML tags"),
    ("<headphones>on</headphones>", False, "Output does not contain recognized HTML elements"),
    ("<noscript>text</noscript>", True, "Output is valid HTML"),
]


@pytest.mark.parametrize("text,valid,reason", PROMPTFOO_IS_HTML)
def test_validate_html_gives_promptfoos_verdict_and_reason(text, valid, reason):
    assert validate_html(text) == (valid, reason)
    got = is_html(text, False)
    assert (got["pass"], got["reason"]) == (valid, "Assertion passed" if valid else reason)
    inverted = is_html(text, True)
    assert inverted["pass"] is (not valid) and inverted["score"] == (0.0 if valid else 1.0)


def test_a_template_tag_is_not_assessed_rather_than_guessed():
    # parse5 keeps the template of "<template><frameset>" (valid in promptfoo); html5lib 1.1 drops it
    got = is_html("<template><frameset>", False)
    assert got["pass"] is None and "template" in got["reason"]


class _Echo(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        text = body["messages"][-1]["content"]
        out = json.dumps({"id": "x", "object": "chat.completion", "model": body.get("model"),
                          "choices": [{"index": 0, "finish_reason": "stop",
                                       "message": {"role": "assistant", "content": text}}],
                          "usage": {"prompt_tokens": 3, "completion_tokens": 3, "total_tokens": 6}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def server():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "SCOREBOARD_STORE": "none", "OPENAI_API_KEY": "sk-test"}
    return subprocess.run([sys.executable, "-m", "scoreboard", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=180, check=False, env=env)


def _import_and_run(tmp_path: Path, config: str, rc: int = 0) -> tuple[str, dict[str, str]]:
    (tmp_path / "promptfooconfig.yaml").write_text(config)
    done = _cli("import", "promptfoo", "promptfooconfig.yaml", "--output", "out", cwd=tmp_path)
    assert done.returncode == rc, done.stdout + done.stderr
    report = (tmp_path / "out" / "conversion-report.md").read_text()
    ran = _cli("run", "out/suite.yaml", "--output-dir", "out/res", cwd=tmp_path)
    assert "Traceback" not in ran.stderr, ran.stderr
    paths = list((tmp_path / "out" / "res").glob("*/*.json"))
    assert paths, ran.stdout + ran.stderr
    attempts = json.loads(paths[0].read_text())["attempts"]
    return report, {a["case_id"]: a["status"] for a in attempts}


def _provider(srv) -> str:
    return ("providers:\n  - id: openai:chat:gpt-4o-mini\n"
            f"    config: {{apiBaseUrl: 'http://127.0.0.1:{srv.server_address[1]}/v1'}}\n")


def test_is_html_from_csv_vars_and_default_test_gives_promptfoos_verdicts(tmp_path, server):
    # A page-snippet suite: the snippets come from a CSV, defaultTest asks for HTML, one test inverts it.
    rows = [("card", "<div class=\"card\"><h2>Plan</h2><p>$9 &amp; up</p></div>"),
            ("prose", "Sure! Here it is: <p>hello</p>"),
            ("custom", "<pricing-table plan=\"pro\"></pricing-table>"),
            ("unknown", "<widget>x</widget>")]
    with open(tmp_path / "snippets.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["__description", "snippet"])
        w.writerows(rows)
    report, got = _import_and_run(tmp_path, "prompts: ['{{snippet}}']\n" + _provider(server) + """
defaultTest:
  assert:
    - {type: is-html, metric: html}
tests:
  - file://snippets.csv
  - description: plain
    vars: {snippet: 'just words, no markup'}
    options: {disableDefaultAsserts: true}
    assert: [{type: not-is-html}]
""")
    assert "is-html" not in report, report  # converted, nothing listed
    # promptfoo: card valid, prose has text outside tags, custom element valid, <widget> unknown
    assert got == {"card": "passed", "prose": "failed", "custom": "passed", "unknown": "failed",
                   "plain": "passed"}, got
