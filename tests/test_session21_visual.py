"""A full-page screenshot taller than a judge's provider takes (session of 2026-12-06, ninth): real
headless Chromium renders the page, a loopback Anthropic-shaped judge records what it is sent."""

from __future__ import annotations

import json
import os

import pytest
import yaml

from scoreboard.judges.images import png_size
from tests.cli_inprocess import run_cli
from tests.servers.fake_provider import VisionJudge, request_images

pytestmark = pytest.mark.skipif(not os.path.exists("/usr/bin/chromium"), reason="needs Debian's chromium")

TALL = ("<!doctype html><html><body style='margin:0'>"
        + "".join(f"<div style='height:2000px;background:hsl({i * 40},70%,60%)'><h1>Section {i}</h1></div>"
                  for i in range(10)) + "</body></html>")


def test_a_full_page_shot_over_anthropics_8000_px_is_cut_into_parts_the_judge_is_told_of(fake_provider, tmp_path):
    """A 20,000 px page shot full-page (16,384 px, its cap) went to an Anthropic judge as one
    image, which the Messages API refuses over 8,000 px on a side: every judgment failed with the
    provider's 400. Now it is sent as parts within the limit, top to bottom, and the prompt says
    which images are which screenshot; a screenshot within the limit is sent byte for byte."""
    judge = VisionJudge()
    fake_provider.set_default("messages", {"reply": judge})
    (tmp_path / "pages.py").write_text(f"def tall(input):\n    return {TALL!r}\n")
    (tmp_path / "cases.jsonl").write_text('{"id": "long", "input": "a long page"}\n')
    suite = {"name": "tall", "cases": "cases.jsonl", "subject": "python:pages:tall",
             "render": {"full_page": True},
             "graders": [{"rubric-score": {"images": "all", "rubric": "a long landing page", "source": False}}],
             "judge": {"type": "anthropic", "model": "claude-x", "base_url": fake_provider.base_url,
                       "api_key_required": False}}
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump(suite, sort_keys=False))
    proc = run_cli(["run", "suite.yaml", "--no-progress", "--output", "r.json"], tmp_path,
                   {**os.environ, "SCOREBOARD_STORE": "none"})
    report = json.loads((tmp_path / "r.json").read_text())
    (attempt,) = report["attempts"]
    shots = attempt["render"]["shots"]
    assert [s["full_page"] for s in shots] == [False, True], shots
    grade = attempt["grades"][0]
    assert grade["passed"] is not None, (grade, proc.stdout, proc.stderr)  # judged, not a provider error
    (body,) = [r["json"] for r in fake_provider.requests_to("messages")]
    images = request_images(body)
    sizes = [png_size(png) for png in images]
    assert sizes[0] == (1024, 768)  # the viewport shot, as stored
    assert sizes[1:] == [(1024, 8000), (1024, 8000), (1024, 384)], sizes
    stored = (tmp_path / shots[0]["path"]).read_bytes()
    assert images[0] == stored
    text = body["messages"][0]["content"][-1]["text"]
    assert "screenshot 2 (1024x16384 px) is cut into 3 parts to fit the judge's image limits: images 2-4, " \
           "top to bottom" in text, text


def test_the_html_report_gives_each_category_its_cases_and_interval(tmp_path, browser):
    """The page's by-category table showed a bare rate and passed / attempts; statistics 20
    gives each category its cases and interval, and the page shows them with the small-sample
    word."""
    from tests.test_session21_fixes import _category_run

    _category_run(tmp_path)
    page = browser.new_page()
    page.goto((tmp_path / "r.html").as_uri())
    page.wait_for_selector("html[data-ready=true]")
    page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
    cell = page.locator("[data-testid^=category-][data-testid$=-billing]").first.inner_text()
    assert "4 cases (small sample)" in cell and "95% interval" in cell, cell
    assert "fewer than 30 cases is a small sample" in page.locator("[data-testid=by-category]").inner_text()
    page.close()
