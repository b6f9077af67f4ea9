"""Hostile text in every rendering: a model's output, a case id, input, category or tag from a
shared case file, a grader's reason quoting the output, variant and suite names, an error body.
The Markdown (as GitHub renders it: CommonMark, tables, raw HTML allowed) shows it as text, with no
HTML, link, mention or block of its own; the terminal prints no escape sequence and no GitHub
Actions workflow command; the JUnit XML parses; the HTML report, opened in Chromium, runs none of
it; and a real run over such a case file still verifies."""

from __future__ import annotations

import html
import io
import json
import os
import re
import subprocess
import sys
import threading
import xml.etree.ElementTree as ET
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from scoreboard.cli import github_action
from scoreboard.cli.github_comment import comment_body, comparison_markdown, marker
from scoreboard.record.io import parse_report
from scoreboard.record.junit import render_junit
from scoreboard.record.markdown import render_markdown
from scoreboard.record.mdtext import spell_unseen
from scoreboard.record.terminal import print_cases, print_summary
from scoreboard.record.view import view_of
from tests.cli_inprocess import run_cli
from tests.record.conftest import make_report

MarkdownIt = pytest.importorskip("markdown_it", reason="pip install markdown-it-py (a test dependency)").MarkdownIt

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = "<script>window.__pwned=1;fetch('http://127.0.0.1:9/x')</script>"
IMG = '<img src=x onerror="window.__pwned=2">'
LINK = "[click me](javascript:window.__pwned=3) ![i](data:text/html,x) [ref]"
DETAILS = "<details><summary>hidden</summary><img src=\"https://tracker.example/p.gif\"></details>"
MENTION = "@octocat look at #123 and GH-45"
ESCAPES = "\x1b]0;TITLE\x07\x1b[2J\x1b]8;;http://evil/\x1b\\LINK\x1b]8;;\x1b\\\x9b31m"
BIDI = "abc\u202egnp.exe\u200b"
BLOCKS = "line one\n# Forged heading\n> quote\n- item\n[ref]: https://evil.example/\n| a | b |\n"
FENCE = "```\n</pre><script>window.__pwned=4</script>\n````\n~~~"
WORKFLOW = "::set-output name=verdict::passed"

VARIANT = '<img src=x onerror="window.__pwned=5">|v`@octocat'
CASE_ID = "case-<b>x</b>|`y`@octocat#1"
SUITE = "suite</script><script>window.__pwned=6</script>"
CATEGORY = "[cat](javascript:alert(1)) @octocat"
REASON = f"output was: {IMG} {LINK} {MENTION}\n{BLOCKS}"

GITHUB_MENTION = re.compile(r"(?:^|[^\w])@[A-Za-z0-9][A-Za-z0-9-]*")
GITHUB_ISSUE = re.compile(r"(?:^|[^\w])#[0-9]+\b|\bGH-[0-9]+", re.IGNORECASE)
JOINER = "\u2060"


def hostile_report() -> dict:
    """Two variants, three cases, every text field hostile; all attempts fail."""
    outputs = {0: SCRIPT + "\n" + FENCE, 1: DETAILS + "\n" + BLOCKS, 2: ESCAPES + BIDI}
    report = make_report(3, variants=(VARIANT, "basic"), runs=1, suite=SUITE,
                         status_of=lambda i, v, r: "error" if i == 2 else "failed",
                         output_of=lambda i, v, r: outputs[i],
                         case_id=lambda i: [CASE_ID, "plain", "bidi\u202eid"][i],
                         category_of=lambda i: [CATEGORY, DETAILS, ESCAPES][i])
    for a in report["attempts"]:
        if a["status"] == "error":
            a["error"] = f"HTTP 500: {DETAILS}\n{ESCAPES} {WORKFLOW} ##[add-mask]x"
        for g in a["grades"]:
            g["grader"] = "python<b>"
            g["reason"] = REASON
            for f in g["fields"]:
                f["path"] = "total`|<i>"
    report["plan"]["cases"][0]["expected"] = {"total": SCRIPT, "currency": LINK}
    report["plan"]["cases"][0]["tags"] = [MENTION, BIDI]
    for g in report["gates"]:
        g["description"] = f"{g['variant']}: {DETAILS} {MENTION}"
    return report


def render(text: str) -> tuple[str, list, dict]:
    """GitHub-like rendering: CommonMark with raw HTML passed through, tables and strikethrough."""
    md = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
    env: dict = {}
    tokens = md.parse(text, env)
    return md.renderer.render(tokens, md.options, env), tokens, env


def flat(tokens: list) -> list:
    out = []
    for t in tokens:
        out.append(t)
        out += flat(t.children or [])
    return out


def text_outside_code(rendered: str) -> str:
    rendered = re.sub(r"<pre>.*?</pre>|<code>.*?</code>", " ", rendered, flags=re.DOTALL)
    return html.unescape(re.sub(r"<[^>]+>", " ", rendered))


def assert_inert_markdown(text: str) -> str:
    """No HTML, link, image, link definition or mention in `text` as rendered; the rendered text."""
    rendered, tokens, env = render(text)
    kinds = {t.type for t in flat(tokens)}
    assert not kinds & {"html_inline", "html_block", "link_open", "image"}, kinds
    assert not env.get("references"), env.get("references")
    plain = text_outside_code(rendered)
    assert not GITHUB_MENTION.search(plain), GITHUB_MENTION.search(plain)
    assert not GITHUB_ISSUE.search(plain), GITHUB_ISSUE.search(plain)
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u200b]", text)
    return rendered


def shown(rendered: str) -> str:
    """The rendered page's text as a reader sees it (joiners are invisible)."""
    return html.unescape(re.sub(r"<[^>]+>", "", rendered)).replace(JOINER, "")


# ---------- Markdown ----------

def test_markdown_shows_hostile_text_as_text_and_nothing_else():
    md = render_markdown(view_of(hostile_report()))
    rendered = assert_inert_markdown(md)
    seen = shown(rendered)
    for payload in (IMG, "[click me](javascript:window.__pwned=3)", "@octocat look at #123 and GH-45", VARIANT,
                    CASE_ID, "suite</script><script>", CATEGORY, "<details><summary>hidden</summary>"):
        assert payload in seen, payload
    # the output, fence and all, is one code block holding it exactly
    assert html.escape(SCRIPT + "\n" + FENCE, quote=False) in rendered
    # the only headings are the report's own
    headings = re.findall(r"<h([1-6])>(.*?)</h\1>", rendered)
    assert all("Forged" not in h for _, h in headings)
    assert [h for level, h in headings if level == "1"] == [html.escape("scoreboard report: " + SUITE, quote=False)]


def test_markdown_tables_keep_their_columns():
    md = render_markdown(view_of(hostile_report()))
    _, tokens, _ = render(md)
    tables = 0
    for t in tokens:
        if t.type == "table_open":
            rows: list[int] = []
        elif t.type == "tr_open":
            rows.append(0)
        elif t.type in ("td_open", "th_open"):
            rows[-1] += 1
        elif t.type == "table_close":
            tables += 1
            assert len(set(rows)) == 1, rows  # every row as wide as the header
    assert tables >= 5
    cases = md.split("## Cases")[1].split("\n\n")[1].splitlines()
    assert len(cases) == 2 + 3  # header, rule, one row per case: no row split by a | or a newline


def test_markdown_reason_and_error_stay_inside_their_list_item():
    md = render_markdown(view_of(hostile_report()))
    rendered, _, _ = render(md)
    failures = rendered.split("Failures (")[1]
    # the reason's lines (a heading, a quote, a list item, a link definition) are shown, not obeyed
    assert "<blockquote>" not in failures and "Forged heading" in failures
    assert "# Forged heading" in shown(failures) and "[ref]: https://evil.example/" in shown(failures)
    assert "\\x1b]0;TITLE\\x07" in md and "\x1b" not in md  # an escape sequence spelt out, never raw
    assert "bidi\\u202eid" in md


def test_github_comment_and_comparison_are_inert():
    report = hostile_report()
    head = {"run": report["run"], "summary": report["summary"], "gates": report["gates"]}
    body = comment_body(head, 3, None, "")
    assert body.startswith(marker(SUITE) + "\n") and body.count("<!--") == 1
    rendered = assert_inert_markdown(body.split("\n", 1)[1])
    assert VARIANT in shown(rendered) and "@octocat look at #123" in shown(rendered)
    result = {"a": {"run_id": "r`1`<b>"}, "shared_cases": 1, "inputs_differ": [], "only_in_a": [], "only_in_b": [],
              "comparisons": [{"a": VARIANT, "b": "@team/x #9", "a_pass_rate": 0.5, "b_pass_rate": 0.25,
                               "b_wins": 0, "a_wins": 1, "ties": 0, "sign_test_p": 1.0, "flags": [DETAILS]}]}
    rendered = assert_inert_markdown(comparison_markdown(result))
    assert "r`1`<b>" in shown(rendered) and "@team/x #9" in shown(rendered)


def test_a_failed_comment_warns_in_the_step_summary_without_obeying_the_error_body(tmp_path, monkeypatch):
    """The API's error message (a hostile server, a proxy) is quoted in the step summary as text."""
    class Refuse(BaseHTTPRequestHandler):
        def do_GET(self):
            body = json.dumps({"message": f"{DETAILS}\n# Forged\n{MENTION}"}).encode()
            self.send_response(403)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Refuse)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": 7}}))
    summary = tmp_path / "summary.md"
    for name, value in {"GITHUB_EVENT_PATH": str(event), "GITHUB_API_URL": f"http://127.0.0.1:{server.server_port}",
                        "GITHUB_REPOSITORY": "o/r", "GITHUB_STEP_SUMMARY": str(summary)}.items():
        monkeypatch.setenv(name, value)
    try:
        report = hostile_report()
        head = {"run": report["run"], "summary": report["summary"], "gates": []}
        assert github_action.post_comment(head, 0, None, "t0ken-value-long") == "failed"
    finally:
        server.shutdown()
    text = summary.read_text()
    assert text.startswith("> ") and text.strip().count("\n") == 0  # one quoted line
    rendered = assert_inert_markdown(text)
    assert "<h1>" not in rendered and "<details>" in shown(rendered) and "@octocat" in shown(rendered)


# ---------- terminal ----------

WORKFLOW_COMMAND = re.compile(r"^\s*::[a-z-]+|##\[", re.IGNORECASE | re.MULTILINE)


def test_the_summary_prints_no_escape_sequence_and_no_workflow_command():
    report = hostile_report()
    report["run"]["suite"] = WORKFLOW + ESCAPES
    report["run"]["stop_reason"] = f"HTTP 500: {ESCAPES}\n{WORKFLOW}\nscoreboard: error: forged ##[add-mask]x"
    report["gates"][0]["description"] = "::error file=x::pwned\u202e"
    out = io.StringIO()
    print_summary(parse_report(report, "r.json"), {"json": Path("r.json")}, out)
    text = out.getvalue()
    assert not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e]", text)
    assert not WORKFLOW_COMMAND.search(text), WORKFLOW_COMMAND.search(text)
    assert "\\x1b]0;TITLE\\x07" in text and "\\u202e" in text
    assert not any(line.startswith("scoreboard: error") for line in text.splitlines())  # no forged line
    assert "\\x3a:set-output name=verdict::passed" in text  # still readable


def test_verbose_lines_print_no_escape_sequence_and_no_workflow_command():
    report = hostile_report()
    plan = report["plan"]
    for c in plan["cases"]:
        c["category"] = WORKFLOW
    out = io.StringIO()
    print_cases(plan, report["attempts"], out)
    text = out.getvalue()
    assert "\x1b" not in text and "\x9b" not in text and "\u202e" not in text
    assert not WORKFLOW_COMMAND.search(text), WORKFLOW_COMMAND.search(text)
    assert "\\x23#[add-mask]x" in text and "bidi\\u202eid" in text


# ---------- JUnit ----------

def test_junit_is_well_formed_and_keeps_the_hostile_text_readable():
    text = render_junit(view_of(hostile_report()))
    data = text.encode("utf-8")
    root = ET.fromstring(data)
    lxml = pytest.importorskip("lxml.etree")
    lxml.fromstring(data)
    names = {tc.get("name") for tc in root.iter("testcase")}
    assert CASE_ID in names and "bidi\\u202eid" in names  # the override spelt, as the terminal spells it
    # the variants, and the gates testsuite (probe 24J), each named with the hostile suite name kept as text
    assert {ts.get("name") for ts in root.iter("testsuite")} == {f"{SUITE}.{VARIANT}", f"{SUITE}.basic", f"{SUITE}.gates"}
    failures = " ".join(f.text or "" for f in root.iter("failure"))
    assert IMG in failures and "[click me](javascript:" in failures
    errors = " ".join(f.text or "" for f in root.iter("error"))
    assert "HTTP 500: <details>" in errors and "]0;TITLE" in errors


# ---------- a real run, every format, the HTML in Chromium ----------

CASES = [
    {"id": "script", "input": SCRIPT, "expected": {"total": SCRIPT}, "category": IMG, "tags": [MENTION],
     "metadata": {"m": DETAILS}},
    {"id": "close-script</script><script>window.__pwned=7</script>", "input": "</script><!--", "expected": "x",
     "category": "]]><![CDATA["},
    {"id": "attr\" onmouseover=\"window.__pwned=8\" x=\"", "input": "\" onmouseover=\"window.__pwned=8",
     "expected": "x"},
    {"id": "svg", "input": "<svg onload=\"window.__pwned=9\"><script>window.__pwned=9</script></svg>", "expected": "x"},
    {"id": "css", "input": "</style><style>*{background:url(http://127.0.0.1:9/css)}</style>", "expected": "x"},
    {"id": "markdown", "input": LINK + "\n" + BLOCKS + FENCE, "expected": "x"},
    {"id": "escapes", "input": ESCAPES + "\x00\ufffe" + BIDI, "expected": "x", "category": WORKFLOW},
    {"id": "bidi\u202eid\u200b", "input": "see " + MENTION, "expected": "x"},
    {"id": "long", "input": "y" * 50_000, "expected": "x"},
]
SUBJECT = '''import json
def answer(input):
    return input
'''
CHECKS = '''def quote(output, context):
    return {"pass": False, "score": 0.0, "reason": "output was: " + str(output)[:500]}
'''


def write_hostile_project(folder: Path) -> Path:
    """A suite over a hostile case file: the subject echoes the input, a grader quotes it."""
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in CASES), encoding="utf-8")
    (folder / "echo.py").write_text(SUBJECT)
    (folder / "checks.py").write_text(CHECKS)
    suite = {"name": "hostile", "cases": "cases.jsonl", "graders": ["python-file:checks.py:quote"],
             "variants": {VARIANT: {"subject": {"type": "python", "function": "echo:answer", "model_free": True}},
                          "plain": {"subject": {"type": "python", "function": "echo:answer", "model_free": True}}}}
    (folder / "suite.json").write_text(json.dumps(suite))
    return folder / "suite.json"


def scoreboard(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """The CLI in-process (before this module's browser holds Playwright's running loop)."""
    return run_cli(args, cwd, {**os.environ, "PYTHONPATH": str(ROOT / "src")})


def scoreboard_process(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """The CLI in a process of its own: a real stdout's bytes (lone surrogates), after the browser is up."""
    return subprocess.run([sys.executable, "-m", "scoreboard", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT / "src")}, check=False)


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("hostile")
    write_hostile_project(folder)
    done = scoreboard("run", "suite.json", "--format", "json,md,html,junit", "--no-progress", "--store", "none",
                      "--verbose", cwd=folder)
    assert done.returncode == 0, done.stderr
    (report,) = (folder / "eval-results" / "hostile").glob("*.json")
    return {fmt: report.with_suffix(suffix) for fmt, suffix in
            (("json", ".json"), ("md", ".md"), ("html", ".html"), ("junit", ".junit.xml"))} | {
        "folder": folder, "printed": done.stdout + done.stderr}


def test_a_hostile_run_verifies_and_its_files_are_inert(hostile_run):
    printed = hostile_run["printed"]  # --verbose: every case, output and reason
    assert "\x1b" not in printed and "\u202e" not in printed and not WORKFLOW_COMMAND.search(printed)
    done = scoreboard("verify", str(hostile_run["json"]), cwd=hostile_run["folder"])
    assert done.returncode == 0, done.stdout + done.stderr
    md = hostile_run["md"].read_text(encoding="utf-8")
    assert_inert_markdown(md)
    again = scoreboard("report", str(hostile_run["json"]), "--format", "md", cwd=hostile_run["folder"])
    assert again.returncode == 0 and again.stdout == md  # printed to a terminal: no escape in it
    data = hostile_run["junit"].read_bytes()
    root = ET.fromstring(data)
    pytest.importorskip("lxml.etree").fromstring(data)
    assert {tc.get("name") for tc in root.iter("testcase")} >= {spell_unseen(c["id"]) for c in CASES}


def test_the_hostile_html_report_runs_nothing_in_chromium(hostile_run, opened):
    page_html = hostile_run["html"].read_text(encoding="utf-8")
    csp = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', page_html).group(1)
    assert "default-src 'none'" in csp and "connect-src" not in csp  # no fetch, no beacon, no image from anywhere
    dialogs: list[str] = []
    opened.page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page = opened.open(hostile_run["html"])
    rows = page.locator('[data-testid="case-row"]')
    assert rows.count() == len(CASES)
    for i in range(rows.count()):
        rows.nth(i).click()
        rows.nth(i).hover()
    for summary in page.locator("summary").all():
        summary.click()
    page.mouse.move(5, 5)
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert dialogs == [] and opened.errors == []
    assert [u for u in opened.requests if not u.startswith("file:")] == []
    assert not [m for m in opened.console if "Content Security Policy" in m or "Refused" in m]
    assert page.locator("body img, body iframe, body object, body embed").count() == 0
    assert page.locator("main script, main style, main svg script").count() == 0
    body = page.locator("body").inner_text()
    for case in CASES[:8]:  # every id shown as the text it is (a direction override spelt \u202e)
        assert spell_unseen(case["id"]) in body, case["id"]
    for text in (SCRIPT, "</style><style>*{background:url(", "[click me](javascript:window.__pwned=3)",
                 "output was: <svg onload=", MENTION):
        assert text in body, text


def test_a_report_with_lone_surrogates_renders_in_every_format_and_fails_verify_in_words(hostile_run, tmp_path):
    """A hand-edited or hostile report whose strings hold lone surrogates (no UTF-8 form): every
    rendering still comes out (the JSON with \\udXXX escapes that read back the same), and verify
    names the problem instead of stopping on an internal error."""
    report = json.loads(hostile_run["json"].read_text(encoding="utf-8"))
    for a in report["attempts"]:
        for g in a["grades"]:
            g["reason"] = "lone \ud800 surrogate \udfff"
    report["plan"]["cases"][0]["category"] = "cat\ud800"
    odd = tmp_path / "odd.json"
    odd.write_text(json.dumps(report))  # ASCII JSON: the surrogates as escapes
    for fmt in ("json", "md", "junit", "html"):
        done = scoreboard_process("report", str(odd), "--format", fmt, cwd=tmp_path)
        assert done.returncode == 0, (fmt, done.stderr)
        if fmt == "json":
            assert json.loads(done.stdout)["attempts"][0]["grades"][0]["reason"] == "lone \ud800 surrogate \udfff"
        if fmt == "md":
            assert "lone \\ud800 surrogate \\udfff" in done.stdout
    done = scoreboard_process("verify", str(odd), cwd=tmp_path)
    assert done.returncode == 1 and "internal error" not in done.stderr
    assert "lone surrogate" in done.stdout


@pytest.mark.parametrize("text", ["**FAILED** is fine", "~~passed~~ failed", "_private_ id", "a*b*c", "__init__",
                                  "snake_case_id and a * b", "x_ _y", "***all***", "~one~ tilde", "*", "_"])
def test_markdown_shows_emphasis_marks_as_the_characters_they_are(text):
    """A case id, output or reason cannot bold, italicise or strike through what a reader sees."""
    from scoreboard.record.mdtext import inline

    for line in (inline(text), f"| {inline(text)} | x |\n|---|---|\n| {inline(text)} | y |"):
        rendered, tokens, _ = render(line)
        kinds = {t.type for t in flat(tokens)}
        assert not kinds & {"em_open", "strong_open", "s_open"}, (line, kinds)
        assert text in shown(rendered), (line, rendered)


@pytest.mark.parametrize("text, seen", [
    ("line 11: `if level <= 1 and (not extra):` is True", "line 11: if level <= 1 and (not extra): is True"),
    ("x < 3 and y <= 4 & z", "x < 3 and y <= 4 & z"),
    ("`a & b <c>` then <img src=x onerror=alert(1)>", "a & b <c> then <img src=x onerror=alert(1)>"),
    ("``c<d`` and `e&amp;`", "c<d and e&amp;"),
    ("unclosed ` <i>x</i>", "unclosed ` <i>x</i>"),
    ("a\\`b <b>bold</b>", "a`b <b>bold</b>"),
    ("<!-- hidden --> <https://evil.example>", "<!-- hidden --> <https://evil.example>")])
def test_prose_reads_as_written_and_opens_no_html(text, seen):
    """A conversion report's line quoting a config (`if level <= 1`): what a reader sees, printed
    or rendered, is the text itself; nothing in it becomes a tag, a comment or a link."""
    from scoreboard.record.mdtext import prose

    line = prose(text)
    rendered, tokens, _ = render(line)
    kinds = {t.type for t in flat(tokens)}
    assert not kinds & {"html_inline", "html_block", "link_open", "image"}, (line, kinds)
    assert shown(rendered).strip() == seen, (line, rendered)
    # printed in a terminal, a code span's text is as written too (no entity spelt into it)
    for span in re.findall(r"`[^`]+`", text):
        assert span in line, (span, line)
