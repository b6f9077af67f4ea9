"""Open-ended and visual work probed from the outside (round 14), as a demanding user would: python
page makers and a python judge, the CLI on real files, real headless Chromium (Debian's)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.cli_inprocess import run_cli

needs_chromium = pytest.mark.skipif(
    not os.path.exists("/usr/bin/chromium") or importlib.util.find_spec("playwright") is None,
    reason="needs Debian's chromium and playwright")


def scoreboard(args: list[str], cwd: Path, timeout: int = 300) -> subprocess.CompletedProcess:
    """`python -m scoreboard ARGS`, run in this process (what the command says and writes is the
    point, not the process; `timeout` is kept for the callers' sake)."""
    return run_cli(args, cwd, dict(os.environ, SCOREBOARD_STORE="none"))


HANG = "<!doctype html><html><body><h1>Hang</h1><script>while (true) {}</script></body></html>"
FETCHES = ('<!doctype html><html><body><h1>Sunrise Bakery</h1><img src="http://203.0.113.9/logo.png">'
           '<img src="file:///etc/hostname"></body></html>')
PLAIN = "<!doctype html><html><body><h1>Sunrise Bakery</h1><p>Fresh bread daily</p></body></html>"

MODULE = f'''
import json

HANG, FETCHES, PLAIN = {HANG!r}, {FETCHES!r}, {PLAIN!r}


def fetches(input):
    return FETCHES if input == "x" else PLAIN


def plain(input):
    return PLAIN


def hangs(input):
    return HANG


def judge(input):
    return json.dumps({{"scores": {{"content": 2, "clarity": 2}}, "explanation": "ok"}})
'''


def suite(tmp_path: Path, variants: dict[str, str], graders: list) -> None:
    (tmp_path / "mods.py").write_text(MODULE)
    (tmp_path / "cases.jsonl").write_text('{"id": "c1", "input": "x"}\n{"id": "c2", "input": "y"}\n')
    spec = {"name": "pages", "cases": "cases.jsonl", "graders": graders, "judge": "python:mods:judge",
            "render": {"settle_ms": 0, "timeout_ms": 4000, "concurrency": 1},  # a hang starves a page beside it (4 s: a page beside it on a loaded CI machine renders in time)
            "variants": {name: {"subject": f"python:mods:{fn}"} for name, fn in variants.items()}}
    (tmp_path / "suite.json").write_text(json.dumps(spec))


def report_of(proc: subprocess.CompletedProcess, tmp_path: Path) -> Path:
    line = next(x for x in proc.stdout.splitlines() if x.strip().startswith("json: "))
    return tmp_path / line.split("json: ", 1)[1].strip()


# ------------------------------------------------------------------------- (1) blocked requests, in every rendering

BLOCKED = ("requests blocked by the renderer (not loaded): fetcher 2 on 1 of 2 pages; "
           "listed per attempt in the JSON report (render.blocked)")


@needs_chromium
def test_blocked_requests_are_said_in_the_terminal_markdown_html_and_junit(tmp_path):
    """A page that asked for an image on another host and a `file:` URL: both were blocked,
    listed in the JSON's render record and counted in the HTML's attempt details, but the
    terminal summary and the Markdown never said so (a reader of either took the page for one
    that loaded all it asked for), nor did the JUnit. Every rendering says it per variant, and
    where the list is."""
    suite(tmp_path, {"fetcher": "fetches", "plain": "plain"}, ["page-renders"])
    proc = scoreboard(["run", "suite.json", "--no-progress", "--format", "json,md,html,junit"], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"  {BLOCKED}" in proc.stdout.splitlines(), proc.stdout
    report = report_of(proc, tmp_path)
    attempts = json.loads(report.read_text())["attempts"]
    assert sum(a["render"]["blocked_requests"] for a in attempts) == 2
    assert f"- ⚠️ {BLOCKED}" in report.with_suffix(".md").read_text()
    assert BLOCKED in report.with_suffix(".html").read_text()
    junit = report.with_suffix(".junit.xml").read_text()
    assert junit.count('name="blocked_requests"') == 1  # the fetcher's; the plain pages made none
    assert ('name="blocked_requests" value="2 on 1 of 2 pages; listed per attempt in the JSON report '
            '(render.blocked)"') in junit
    assert scoreboard(["verify", str(report)], tmp_path).returncode == 0


@needs_chromium
def test_blocked_requests_are_said_by_a_json_only_run_too(tmp_path):
    suite(tmp_path, {"fetcher": "fetches", "plain": "plain"}, ["page-renders"])
    proc = scoreboard(["run", "suite.json", "--no-progress", "--format", "json"], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"  {BLOCKED}" in proc.stdout.splitlines(), proc.stdout


@needs_chromium
def test_pages_that_block_nothing_add_no_line(tmp_path):
    suite(tmp_path, {"a": "plain", "b": "plain"}, ["page-renders"])
    proc = scoreboard(["run", "suite.json", "--no-progress", "--format", "json,md,junit"], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "blocked" not in proc.stdout
    report = report_of(proc, tmp_path)
    assert "blocked" not in report.with_suffix(".md").read_text()
    assert "blocked" not in report.with_suffix(".junit.xml").read_text()


# ------------------------------------------------------------------------- (2) dQ left out for pages that never rendered

POINTWISE = [{"pointwise": {"dimensions": ["content", "clarity"], "images": True, "source": False}}]


@needs_chromium
def test_a_dq_with_no_case_says_the_pages_that_did_not_render(tmp_path):
    """Every page of one variant timed out, so the judge (shown screenshots only) scored none of
    them and dQ was n/a: the line gave no reason (it lists judge failures only, and there were
    none). The pages that did not render are said per variant, with why (timed out, crashed)."""
    suite(tmp_path, {"a": "plain", "b": "hangs"}, POINTWISE)
    proc = scoreboard(["run", "suite.json", "--no-progress", "--format", "json,md,junit",
                       "--trust-unchecked-judge"], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    said = ("dQ a - b: n/a (no case has a pointwise score from both variants; "
            "pages not rendered: b 2 (2 timed out))")
    assert f"  {said}" in proc.stdout.splitlines(), proc.stdout
    report = report_of(proc, tmp_path)
    assert f"- {said}" in report.with_suffix(".md").read_text()
    assert 'name="pages_not_rendered" value="2 (2 timed out)"' in report.with_suffix(".junit.xml").read_text()


@needs_chromium
def test_a_dq_on_fewer_cases_says_the_pages_that_did_not_render(tmp_path):
    suite(tmp_path, {"a": "plain", "b": "hangs"}, POINTWISE)
    (tmp_path / "mods.py").write_text(MODULE.replace("def hangs(input):\n    return HANG",
                                                     "def hangs(input):\n    return HANG if input == 'y' else PLAIN"))
    proc = scoreboard(["run", "suite.json", "--no-progress", "--format", "json", "--trust-unchecked-judge"],
                      tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert ("on 1 of 2 cases (1 left out: a variant had no pointwise score there; "
            "pages not rendered: b 1 (1 timed out))") in proc.stdout, proc.stdout


# ------------------------------------------------------------------------- (3) a folder's source under the suite's limit

JUDGE_SEES = '''
import json, pathlib


def site(input):
    return "site"


def judge(input):
    with open("seen.txt", "a") as f:
        f.write(input if isinstance(input, str) else json.dumps(input))
    return json.dumps({"scores": {"content": 2}, "explanation": "ok"})
'''


@needs_chromium
def test_a_folder_page_over_the_suites_max_file_bytes_is_not_shown_to_the_judge(tmp_path):
    """`render.max_file_bytes: 4096` and a folder output whose index.html is 20 KB: the renderer
    refused it (not rendered, the record says why), yet the judge was shown all 20 KB of it as
    the page's source: the source was read under the default 16 MiB, not the suite's limit."""
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "index.html").write_text(
        "<!doctype html><html><body><h1>SECRET-MARKER</h1>" + "<p>filler text</p>" * 1200 + "</body></html>")
    (tmp_path / "mods.py").write_text(JUDGE_SEES)
    (tmp_path / "cases.jsonl").write_text('{"id": "c1", "input": "x"}\n')
    spec = {"name": "folder", "cases": "cases.jsonl", "judge": "python:mods:judge",
            "graders": [{"pointwise": {"dimensions": ["content"]}}],
            "render": {"settle_ms": 0, "max_file_bytes": 4096}, "variants": {"a": {"subject": "python:mods:site"}}}
    (tmp_path / "suite.json").write_text(json.dumps(spec))
    proc = scoreboard(["run", "suite.json", "--no-progress", "--format", "json", "--trust-unchecked-judge"], tmp_path)
    assert proc.returncode in (0, 3), proc.stdout + proc.stderr
    attempt = json.loads(report_of(proc, tmp_path).read_text())["attempts"][0]
    assert "over the limit of 4096" in attempt["render"]["error"]
    seen = (tmp_path / "seen.txt").read_text()
    assert "SECRET-MARKER" not in seen and "filler text" not in seen
    assert "index.html is over render.max_file_bytes: it is not shown" in seen
    assert str(tmp_path / "site") not in seen  # blind: never the folder's path


def test_a_folder_page_under_a_raised_max_file_bytes_is_shown_whole(tmp_path):
    """The other way: `max_file_bytes` raised past 16 MiB renders a 17 MiB index.html, but the
    judge was shown the 'cannot be read' sentence instead of its source."""
    from scoreboard.render.page import RenderedPage

    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "index.html").write_bytes(b"<p>big page</p>" + b" " * (17 * 1024 * 1024))
    page = RenderedPage({"kind": "folder"}, roots=(tmp_path,), limit=32 * 1024 * 1024)
    shown = page.judged_source(str(tmp_path / "site"))
    assert shown.startswith("<p>big page</p>") and len(shown) > 17 * 1024 * 1024


# ------------------------------------------------------------------------- (4) a page that floods the driver

HASH_LOOP = ("<!doctype html><html><body><h1>Hash</h1><script>let i = 0; "
             "for (;;) { location.hash = 'h' + (i++); }</script></body></html>")
HASH_MODULE = f'''
HASH, PLAIN = {HASH_LOOP!r}, {PLAIN!r}


def page(input):
    return HASH if input == "loop" else PLAIN.replace("Sunrise", input)
'''


@needs_chromium
def test_a_page_looping_on_location_hash_costs_only_its_own_attempt(tmp_path):
    """Each `location.hash = ...` is a navigation the driver reports to scoreboard; a page that
    assigns it in a loop queued events faster than they were read. Its deadline passed, but
    closing its context waited behind the backlog, and every later page of the run timed out
    too (history.pushState is capped in the page, the hash setter cannot be). The browser a
    page timed out in is killed now, never waited on, and the next page gets a fresh one."""
    (tmp_path / "mods.py").write_text(HASH_MODULE)
    (tmp_path / "cases.jsonl").write_text('{"id": "loop", "input": "loop"}\n{"id": "c2", "input": "Harbor"}\n'
                                          '{"id": "c3", "input": "Garden"}\n')
    spec = {"name": "hash", "cases": "cases.jsonl", "graders": ["page-renders", {"page-text-visible": ["Bakery"]}],
            "render": {"settle_ms": 0, "timeout_ms": 3000, "concurrency": 1},
            "variants": {"a": {"subject": "python:mods:page"}}}
    (tmp_path / "suite.json").write_text(json.dumps(spec))
    proc = scoreboard(["run", "suite.json", "--no-progress", "--format", "json"], tmp_path, timeout=200)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    attempts = {a["case_id"]: a for a in json.loads(report_of(proc, tmp_path).read_text())["attempts"]}
    assert attempts["loop"]["render"]["error"] == "render timed out after 3000 ms"
    for case in ("c2", "c3"):
        assert attempts[case]["status"] == "passed", attempts[case]["grades"]
        assert attempts[case]["render"]["error"] is None and attempts[case]["render"]["shots"]
