"""Control and direction characters in the HTML report, the viewer and JUnit: each is shown as a
visible escape (\\x1b, \\u202e), as the terminal and the Markdown show it, so a variant named
"w<ESC>[31m" does not read "w[31m" and a case id "rtl<U+202E>gnp.exe" does not read "rtlexe.png".
Multi-line text (an output, an input) keeps its line ends and tabs; ordinary non-ASCII text
(accents, CJK, emoji, Arabic and Hebrew letters) is shown unchanged. The pages are opened in real
headless Chromium."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.viewer.conftest import Served, scoreboard, wait_ready

VARIANT = "w\x1b[31mRED"
CASE_ID = "rtl\u202egnp.exe"
NICE_ID = "nice-\u00e9-\u4e2d\u6587-\U0001F600-\u0645\u0631\u062d\u0628\u0627-\u05e9\u05dc\u05d5\u05dd"
CATEGORY = "cat\u2066gory"
TAG = "tag\x9bx"
SUITE = "spoof"
#: an input (multi-line) with every kind of hidden character
INPUT = "line one\n\tline two \u202eevil\x1b[2J\u200f end \u00e9 \u4e2d\u6587 \U0001F600 \u05e9\u05dc\u05d5\u05dd"
#: every character the pages must spell, never show raw
HIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")

SUBJECT = '''def answer(input):
    return input
'''
CHECKS = '''def quote(output, context):
    return {"pass": False, "score": 0.0, "reason": "bad\\x1b[31m \\u202eoutput\\nnext"}
'''


def write_project(folder: Path) -> None:
    cases = [{"id": CASE_ID, "input": INPUT, "expected": "x", "category": CATEGORY, "tags": [TAG],
              "metadata": {"k\u202e": "v\x1b"}},
             {"id": NICE_ID, "input": "plain \u00e9", "expected": "x"}]
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    (folder / "echo.py").write_text(SUBJECT)
    (folder / "checks.py").write_text(CHECKS)
    subject = {"type": "python", "function": "echo:answer", "model_free": True}
    suite = {"name": SUITE, "cases": "cases.jsonl", "graders": ["python-file:checks.py:quote"],
             "variants": {VARIANT: {"subject": subject}, "plain": {"subject": subject}}}
    (folder / "suite.json").write_text(json.dumps(suite))


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("spoof")
    write_project(folder)
    store = str(folder / "h.sqlite")
    done = scoreboard("run", "suite.json", "--format", "json,html,junit", "--no-progress", "--store", store, cwd=folder)
    assert done.returncode == 0, done.stdout + done.stderr  # no gate: failing cases are data
    (report,) = (folder / "eval-results" / SUITE).glob("*.json")
    return {"folder": folder, "store": store, "json": report, "html": report.with_suffix(".html"),
            "junit": report.with_suffix(".junit.xml")}


def no_hidden(text: str) -> None:
    found = HIDDEN.findall(text)
    assert not found, (found, text)


# ---------- the HTML report ----------

def test_the_html_report_spells_control_and_direction_characters(project, browser):
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        page.goto(project["html"].resolve().as_uri())
        page.wait_for_selector("html[data-ready=true]", timeout=30_000)
        rows = page.locator('[data-testid="case-row"]')
        assert rows.count() == 2
        for i in range(rows.count()):
            rows.nth(i).click()
        for summary in page.locator("summary").all():
            summary.click()
        body = page.locator("body").inner_text()
        assert errors == []
        no_hidden(body)
        no_hidden(page.title())
        # identifiers and one-line fields: every hidden character spelt, line ends too
        for text in ("rtl\\u202egnp.exe", "w\\x1b[31mRED", "cat\\u2066gory", "tag\\x9bx",
                     "bad\\x1b[31m \\u202eoutput\\nnext"):
            assert text in body, text
        # multi-line text keeps its lines and tab; its hidden characters are spelt
        outputs = page.locator('[data-testid="attempt-output"]').all_inner_texts()
        assert any("line one\n\tline two \\u202eevil\\x1b[2J\\u200f end" in o for o in outputs), outputs
        # ordinary text is shown as it is
        assert NICE_ID in body
        assert "end \u00e9 \u4e2d\u6587 \U0001F600 \u05e9\u05dc\u05d5\u05dd" in body
    finally:
        page.close()


def test_the_html_reports_search_finds_an_id_as_it_is_shown(project, browser):
    """A user who copies the id the page shows ("rtl\\u202egnp.exe") into the search finds its case."""
    from playwright.sync_api import expect

    page = browser.new_page()
    try:
        page.goto(project["html"].resolve().as_uri())
        page.wait_for_selector("html[data-ready=true]", timeout=30_000)
        search = page.locator('[data-testid="case-search"]')
        for query, found in (("rtl\\u202egnp", 1), ("w\\x1b[2j", 0), ("\\x1b[2J", 1), ("nice-\u00e9", 1)):
            search.fill(query)  # (the table redraws a moment after typing: wait for the count)
            expect(page.locator('[data-testid="case-row"]')).to_have_count(found)
    finally:
        page.close()


def test_the_html_reports_title_spells_a_direction_override(tmp_path):
    from scoreboard.record.html import render_html
    from tests.record.conftest import make_report

    report = make_report(1, runs=1, suite="s\u202egnp.exe")
    page = render_html(report)
    title = re.search(r"<title>(.*)</title>", page).group(1)
    assert "\u202e" not in title and "s\\u202egnp.exe" in title


def test_the_shared_helper_is_one_file_on_both_pages():
    """The escaping rules live in one script that the report inlines and the viewer serves."""
    from scoreboard.record.html import render_html
    from scoreboard.viewer import app
    from tests.record.conftest import make_report

    root = Path(app.__file__).resolve().parents[1]
    shared = (root / "record" / "templates" / "unseen.js").read_text(encoding="utf-8")
    assert shared.strip() in render_html(make_report(1, runs=1))
    assert "unseen.js" in (root / "viewer" / "static" / "index.html").read_text(encoding="utf-8")
    for page in (root / "record" / "templates" / "report.js", root / "viewer" / "static" / "app.js"):
        assert "202e" not in page.read_text(encoding="utf-8").lower(), page  # no second copy of the rules


# ---------- the viewer ----------

def test_the_viewer_spells_control_and_direction_characters(project, browser):
    server = Served("--store", project["store"], cwd=project["folder"])
    try:
        page = browser.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(server.base + "/#/runs")
        wait_ready(page)
        key = page.locator("#runs-body tr").first.get_attribute("data-run")
        texts = [page.locator("body").inner_text()]
        page.goto(server.base + f"/#/run/{key}")
        wait_ready(page)
        run_page = page.locator("body").inner_text()
        texts.append(run_page)
        assert "rtl\\u202egnp.exe" in run_page and "w\\x1b[31mRED" in run_page and NICE_ID in run_page
        options = page.locator('select[name="variant"] option').all_inner_texts()
        assert "w\\x1b[31mRED" in options, options
        page.locator("#cases-body a", has_text="rtl").click()
        wait_ready(page)
        case_page = page.locator("body").inner_text()
        texts.append(case_page)
        assert "rtl\\u202egnp.exe" in page.locator("#case-id").inner_text()
        assert "cat\\u2066gory" in case_page and "bad\\x1b[31m \\u202eoutput\\nnext" in case_page
        outputs = page.locator("pre.output").all_inner_texts()
        assert any("line one\n\tline two \\u202eevil\\x1b[2J\\u200f end \u00e9 \u4e2d\u6587 \U0001F600" in o
                   for o in outputs), outputs
        page.goto(server.base + f"/#/trends/{SUITE}")
        wait_ready(page)
        texts.append(page.locator("body").inner_text())
        assert "w\\x1b[31mRED" in texts[-1]
        assert errors == []
        for text in texts:
            no_hidden(text)
        page.close()
    finally:
        server.stop()


# ---------- JUnit ----------

def test_junit_spells_control_and_direction_characters_in_names(project):
    root = ET.fromstring(project["junit"].read_bytes())
    names = {tc.get("name") for tc in root.iter("testcase")}
    assert names == {"rtl\\u202egnp.exe", NICE_ID}
    classes = {tc.get("classname") for tc in root.iter("testcase")}
    assert classes == {f"{SUITE}.w\\x1b[31mRED", f"{SUITE}.plain"}
    assert {ts.get("name") for ts in root.iter("testsuite")} == classes
    failures = " ".join(f.get("message") + (f.text or "") for f in root.iter("failure"))
    assert "bad\\x1b[31m \\u202eoutput" in failures
    text = project["junit"].read_text(encoding="utf-8")
    assert "\u202e" not in text and "\x1b" not in text


def test_junit_keeps_what_xml_cannot_carry_as_escapes():
    """A NUL, ESC or lone surrogate in a case id was dropped: "a\\x00" and "a" were one name."""
    from scoreboard.record.junit import render_junit
    from scoreboard.record.view import view_of
    from tests.record.conftest import make_report

    report = make_report(3, runs=1, case_id=lambda i: ["a\x00", "a", "b\ufffe\ud800"][i])
    root = ET.fromstring(render_junit(view_of(report)).encode("utf-8"))
    names = [tc.get("name") for tc in root.iter("testcase")]
    assert names[:3] == ["a\\x00", "a", "b\\ufffe\\ud800"]


# ---------- the two static pages: compare --html and the aggregate ----------

def page_text(page: str) -> str:
    """What a browser shows of a static page: its text with the markup and entities read."""
    import html

    return html.unescape(re.sub(r"<[^>]+>", " ", page))


def test_compare_html_spells_control_and_direction_characters(project, tmp_path):
    report = project["json"]
    again = scoreboard("run", str(project["folder"] / "suite.json"), "--format", "json", "--no-progress",
                       "--store", "none", "--output", str(tmp_path / "b"), cwd=project["folder"])
    assert again.returncode == 0, again.stdout + again.stderr
    line = next(x for x in again.stdout.splitlines() if x.strip().startswith("json: "))
    second = Path(line.split("json: ", 1)[1].strip())
    second = second if second.is_absolute() else project["folder"] / second
    done = scoreboard("compare", str(report), str(second), "--output", str(tmp_path / "cmp.html"), cwd=tmp_path)
    assert done.returncode in (0, 3), done.stdout + done.stderr
    text = page_text((tmp_path / "cmp.html").read_text(encoding="utf-8"))
    no_hidden(text)
    assert "w\\x1b[31mRED" in text


def test_the_aggregate_html_spells_control_and_direction_characters(tmp_path):
    from tests.test_aggregate import make_suite, stage

    make_suite(tmp_path, screen=4, heldout=6,
               variants={"good\x1b[2J": {"subject": "python:subjects:good"},
                         "weak\u2067": {"subject": "python:subjects:weak"}})
    screen, held = stage(tmp_path, "screen"), stage(tmp_path, "heldout")
    out = tmp_path / "agg" / "a.json"
    done = scoreboard("aggregate", str(screen), str(held), "--output", str(out), cwd=tmp_path)
    assert done.returncode in (0, 3), done.stdout + done.stderr
    text = page_text(out.with_suffix(".html").read_text(encoding="utf-8"))
    no_hidden(text)
    assert "good\\x1b[2J" in text and "weak\\u2067" in text


def test_a_lone_surrogate_is_spelt_and_an_emoji_is_not(browser, tmp_path):
    from scoreboard.record.html import render_html
    from tests.record.conftest import make_report

    report = make_report(2, runs=1, case_id=lambda i: ["lone\ud800x", "pair\U0001F600x"][i])
    path = tmp_path / "r.html"
    path.write_text(render_html(report), encoding="utf-8")
    page = browser.new_page()
    try:
        page.goto(path.resolve().as_uri())
        page.wait_for_selector("html[data-ready=true]", timeout=30_000)
        ids = page.locator('[data-testid="case-row"]').all_inner_texts()
        assert any("lone\\ud800x" in t for t in ids) and any("pair\U0001F600x" in t for t in ids), ids
    finally:
        page.close()
