"""Rendered visual outputs judged blind, probed from the outside (round 22): real headless Chromium
(Debian's), the renderer as a run drives it, a scripted loopback judge, and the CLI on real files."""

from __future__ import annotations

import asyncio
import importlib.util
import os
from pathlib import Path

import pytest

from tests.cli_inprocess import run_cli

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


# ------------------------------------------------- (1) a page navigating where no request goes

def page(title: str, script: str) -> str:
    return f"<!doctype html><html><body><h1>{title}</h1><script>{script}</script></body></html>"


@needs_chromium
def test_a_page_moving_to_about_blank_a_blob_or_a_data_url_stays_on_screen_and_is_counted(tmp_path):
    # The renderer keeps a page that navigates away on screen by answering the navigation's
    # request with a 204; a navigation that makes no request never reached it. A page moving to
    # about:blank was shot blank (the judge saw an empty page, nothing said it moved), one moving to
    # a page of its own made as a blob: URL failed to render ('Execution context was destroyed',
    # no shot), and Chromium's refusal of a data: URL read as the page's own console error.
    about, blob, data = render_each([
        page("About page", "setTimeout(() => { location.href = 'about:blank'; }, 10)"),
        page("Blob page", "setTimeout(() => { location.href = URL.createObjectURL("
                          "new Blob(['<h1>Elsewhere</h1>'], {type: 'text/html'})); }, 10)"),
        page("Data page", "setTimeout(() => { location.href = 'data:text/html,<h1>Elsewhere</h1>'; }, 10)"),
    ], tmp_path)
    for record, title in ((about, "About page"), (blob, "Blob page"), (data, "Data page")):
        assert record["error"] is None and len(record["shots"]) == 1, record
        assert record["blank"] is False and record["text"] == title, record
        assert record["console_errors"] == [] and record["blocked_requests"] == 1, record
    assert about["blocked"] == ["navigation about:blank"]
    assert blob["blocked"][0].startswith("navigation blob:http://output.invalid/")
    assert data["blocked"] == ["navigation data:text/html,<h1>Elsewhere</h1>"]


@needs_chromium
def test_a_page_reloading_or_moving_among_its_own_files_is_still_followed(tmp_path):
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "index.html").write_text(page("Start", "location.href = 'next.html'"))
    (tmp_path / "site" / "next.html").write_text(page("Next", ""))
    reload, moved = render_each([
        page("Reloaded", "if (!sessionStorage.r) { sessionStorage.r = 1; location.reload(); }"),
        str(tmp_path / "site"),
    ], tmp_path)
    assert (reload["error"], reload["text"], reload["blocked"]) == (None, "Reloaded", []), reload
    assert (moved["error"], moved["text"], moved["blocked"]) == (None, "Next", []), moved


# ------------------------------------------- (2) a rubric mean over fewer cases says why

@needs_chromium
def test_a_rubric_mean_over_fewer_cases_says_the_pages_that_did_not_render(fake_provider, tmp_path):
    # dQ says why cases were left out (judge failures, pages not rendered); the rubric-score mean
    # beside it read 'over 1 of 2 cases (1 not scored)' with no reason, though the variant's page
    # had timed out and the judge was shown nothing.
    import json

    import yaml

    from tests.servers.fake_provider import VisionJudge

    fake_provider.set_default("chat", {"reply": VisionJudge()})
    (tmp_path / "pages.py").write_text(
        "def page(input):\n"
        "    if input == 'loop':\n"
        "        return '<!doctype html><html><body><script>while (true) {}</script></body></html>'\n"
        "    return '<!doctype html><html><body><h1>' + input + '</h1></body></html>'\n")
    (tmp_path / "cases.jsonl").write_text('{"id": "ok", "input": "Fine"}\n{"id": "stuck", "input": "loop"}\n')
    suite = {"name": "rubric", "cases": "cases.jsonl", "subject": "python:pages:page",
             "render": {"timeout_ms": 5000},
             "graders": [{"rubric-score": {"images": True, "source": False, "rubric": "a landing page"}}],
             "judge": {"type": "openai", "model": "vision-x", "base_url": fake_provider.base_url + "/v1"}}
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump(suite, sort_keys=False))
    proc = run_cli(["run", "suite.yaml", "--no-progress", "--trust-unchecked-judge", "--output", "r.json"],
                   tmp_path, {**os.environ, "SCOREBOARD_STORE": "none"})
    report = json.loads((tmp_path / "r.json").read_text())
    stuck = next(a for a in report["attempts"] if a["case_id"] == "stuck")
    assert stuck["render"]["error"] == "render timed out after 5000 ms", stuck["render"]
    said = "over 1 of 2 cases (1 not scored; pages not rendered: 1 (1 timed out))"
    assert said in proc.stdout, proc.stdout + proc.stderr
    assert said in (tmp_path / "r.md").read_text()


# ------------------------------- (3) what a page is told of the screen, and the same bytes twice

MEDIA = ("<!doctype html><html><head><style>body{background:#fff;color:#000}"
         "@media (prefers-color-scheme: dark){body{background:#000;color:#fff}}"
         "@keyframes s{to{transform:rotate(360deg)}}.s{width:40px;height:40px;border:6px solid #ccc;"
         "border-top-color:#333;border-radius:50%;animation:s 1s linear infinite}</style>"
         "<link rel=stylesheet href='https://fonts.example.com/css?family=X'></head><body><div class=s></div>"
         "<p id=m></p><script>document.getElementById('m').textContent = 'dark=' + "
         "matchMedia('(prefers-color-scheme: dark)').matches + ' reduce=' + "
         "matchMedia('(prefers-reduced-motion: reduce)').matches + ' width=' + innerWidth</script></body></html>")


@needs_chromium
def test_a_page_is_shot_light_with_reduced_motion_at_its_viewport_the_same_bytes_twice(tmp_path):
    first, second = render_each([MEDIA, MEDIA], tmp_path, width=375, height=667)
    (wide,) = render_each([MEDIA], tmp_path / "wide", width=1440, height=900)
    assert first["text"] == "dark=false reduce=true width=375" and wide["text"] == "dark=false reduce=true width=1440"
    assert first["blocked"] == ["https://fonts.example.com/css?family=X"] and first["blocked_requests"] == 1
    assert [s["sha256"] for s in first["shots"]] == [s["sha256"] for s in second["shots"]]
    assert first["shots"][0]["sha256"] != wide["shots"][0]["sha256"]
