"""Probing open-ended and visual work from the outside (round 4), as a design team comparing two
page generators would: pages in real headless Chromium (Debian's), judges on a loopback fake
provider whose request bodies are read back. What a blind judge is shown when it is not shown
screenshots, and pages too tall or too wide for one full-page shot."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.render.test_renderer import render_all
from tests.test_probe2_judges import FOLDER_MAKER, run_suite, write_suite

chromium = pytest.mark.skipif(not os.path.exists("/usr/bin/chromium"), reason="needs Debian's chromium")


# ------------------------------------------------------------------------- blind judging, text only

def _custom_prompt_judge(req: dict) -> str:
    props = req["response_format"]["json_schema"]["schema"]["properties"]
    if "winner" in props:
        return json.dumps({"winner": "tie", "explanation": "x"})
    if "scores" in props:
        return json.dumps({"scores": {d: 2 for d in props["scores"]["required"]}, "explanation": "x"})
    return json.dumps({"verdict": True, "explanation": "x"})


@chromium
def test_a_rendered_folder_output_judged_from_its_source_alone_never_shows_the_judge_its_path(tmp_path):
    """A suite that renders its folder outputs (`render:`) but judges them from their source
    (no `images`): pointwise, a custom llm-judge prompt and pairwise all showed the judge the
    output's text, the folder's path, which names the variant (here a model's name) and the run's
    folder. The judge is shown the index.html the page was rendered from, as with images."""
    from tests.servers.fake_provider import FakeProvider

    with FakeProvider() as srv:
        srv.set_default("chat", {"reply": _custom_prompt_judge})
        path = write_suite(tmp_path, srv, "folder_sites_p4", FOLDER_MAKER,
                           {"gpt-fancy": "fancy", "claude-plain": "plain"},
                           [{"id": "c1", "input": "Bakery"}, {"id": "c2", "input": "Gym"}],
                           graders=["page-renders", {"pointwise": {}},
                                    {"llm-judge": {"prompt": "Is this page good?\n{{ output }}"}}],
                           pairwise={}, render={"settle_ms": 0})
        outcome = run_suite(path)
        bodies = [json.dumps(r["json"]) for r in srv.requests_to("chat")]
    assert len(bodies) == 2 * 2 * 2 + 2 * 2  # two graders on four attempts, two cases asked in both orders
    for body in bodies:
        assert "gpt-fancy" not in body and "claude-plain" not in body and str(tmp_path) not in body
        assert "<h1>Bakery</h1>" in body or "<h1>Gym</h1>" in body
    attempts = outcome.report["attempts"]
    assert all(a["render"]["kind"] == "folder" for a in attempts)
    assert all(g["passed"] is True for a in attempts for g in a["grades"] if g["grader"] == "llm-judge")


@chromium
def test_a_folder_output_not_rendered_is_still_judged_from_its_text(tmp_path):
    """Without `render:` nothing is rendered and the output is the text it is (no folder read)."""
    from tests.servers.fake_provider import FakeProvider

    with FakeProvider() as srv:
        srv.set_default("chat", {"reply": _custom_prompt_judge})
        path = write_suite(tmp_path, srv, "folder_sites_p4b", FOLDER_MAKER,
                           {"gpt-fancy": "fancy", "claude-plain": "plain"},
                           [{"id": "c1", "input": "Bakery"}], graders=[{"pointwise": {}}])
        outcome = run_suite(path)
        bodies = [json.dumps(r["json"]) for r in srv.requests_to("chat")]
    assert len(bodies) == 2 and all("render" not in a or a["render"] is None for a in outcome.report["attempts"])
    assert any("gpt-fancy" in b for b in bodies)  # the text itself: nothing rendered, nothing replaced


# ------------------------------------------------------------------------- full-page shots

TALL = ("<!doctype html><html><body style='margin:0'><h1>Top of a very long page</h1>"
        "<div style='height:{h}px;width:{w}px;background:linear-gradient(#e76f51,#264653)'></div>"
        "</body></html>")


@chromium
@pytest.mark.parametrize("height,width", [(2_000_000, 600), (3000, 60_000)])
def test_a_page_too_big_for_one_full_page_shot_keeps_its_shots(tmp_path, height, width):
    """With `full_page: true`, a page 2,000,000 px tall (or 60,000 px wide) made Chromium refuse
    the full-page capture: the render was an error, the viewport shot already taken was thrown
    away with it, the page failed page-renders and no judge could see it. The full-page shot is
    cut at the most pixels one shot holds, and the page renders."""
    from scoreboard.render.settings import FULL_PAGE_MAX_PX
    from scoreboard.render.pixels import _pixels

    record = render_all([TALL.format(h=height, w=width)], tmp_path, full_page=True, settle_ms=0)[0]
    assert record["error"] is None and not record["crashed"], record["error"]
    assert [s["full_page"] for s in record["shots"]] == [False, True]
    store = record["_store"]
    full = _pixels(store.get(record["shots"][1]["sha256"]))
    assert full.shape[0] <= FULL_PAGE_MAX_PX and full.shape[1] <= FULL_PAGE_MAX_PX
    assert full.shape[0] * full.shape[1] <= FULL_PAGE_MAX_PX * 4096
    assert full.shape[0] > 768 or full.shape[1] > 1024  # still more than the viewport


@chromium
def test_a_short_page_full_page_shot_is_the_whole_page(tmp_path):
    from scoreboard.render.pixels import _pixels

    record = render_all([TALL.format(h=1500, w=300)], tmp_path, full_page=True, settle_ms=0)[0]
    assert record["error"] is None
    full = _pixels(record["_store"].get(record["shots"][1]["sha256"]))
    assert full.shape[1] == 1024 and 1500 < full.shape[0] < 1700  # the heading and the block, nothing cut


def test_a_page_that_lies_about_its_size_gets_the_largest_shot_not_a_render_error():
    from scoreboard.render.settings import FULL_PAGE_MAX_PX, full_page_clip

    assert full_page_clip([1024, 900], 1) is None
    for lie in (["x", None], [float("nan"), 10], "huge", None, [True, 5], [10]):
        clip = full_page_clip(lie, 2)
        assert clip["width"] * 2 <= FULL_PAGE_MAX_PX and clip["height"] >= 1
    assert full_page_clip([1024, 100_000], 1) == {"x": 0, "y": 0, "width": 1024, "height": FULL_PAGE_MAX_PX}
    assert full_page_clip([60_000, 3000], 1)["width"] == FULL_PAGE_MAX_PX


@chromium
def test_a_page_whose_scripts_break_the_size_measure_still_renders(tmp_path):
    page = ("<!doctype html><html><body><h1>Sizes lie</h1><script>Math.max = () => NaN;"
            "Object.defineProperty(Element.prototype, 'scrollHeight', {get() { return 'tall'; }});"
            "</script></body></html>")
    record = render_all([page], tmp_path, full_page=True, settle_ms=0)[0]
    assert record["error"] is None and [s["full_page"] for s in record["shots"]] == [False, True]


# ------------------------------------------------------------------------- screenshots in the HTML report

def _noisy_png(seed: int, height: int = 180, width: int = 240) -> bytes:
    """A photo-like screenshot (noise compresses as badly as photographs do); 240 px wide by
    default, the thumbnails' width, so that making 300 of them stays cheap."""
    import io

    import numpy as np
    from PIL import Image

    pixels = np.random.default_rng(seed).integers(0, 255, (height, width, 3), dtype=np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format="PNG", compress_level=1)
    return out.getvalue()


def _report_with_shots(tmp_path, pngs: list[bytes]) -> tuple[dict, object]:
    """A real run's report whose attempts are given render records with these screenshots, stored
    in the run folder as the renderer stores them."""
    import copy

    from scoreboard.render.browser import store_for

    (tmp_path / "maker.py").write_text("def page(inp):\n    return '<html><body><p>' + inp + '</p></body></html>'\n")
    (tmp_path / "cases.jsonl").write_text(json.dumps({"id": "c0", "input": "x"}) + "\n")
    suite = {"name": "thumbs", "cases": "cases.jsonl", "output_dir": str(tmp_path / "out"), "formats": ["json"],
             "variants": {"v": {"subject": "python:maker:page"}}}
    (tmp_path / "suite.json").write_text(json.dumps(suite))
    outcome = run_suite(tmp_path / "suite.json")
    report_path = Path(outcome.paths["json"])
    report = json.loads(report_path.read_text())
    store = store_for(report_path.parent / report_path.stem)
    first = report["attempts"][0]
    report["attempts"] = []
    for i, png in enumerate(pngs):
        digest, path = store.put(png)
        attempt = copy.deepcopy(first)
        attempt["case_id"] = f"c{i}"
        attempt["render"] = {"kind": "html", "settings": "0" * 64, "error": None, "blank": False,
                             "shots": [{"moment_ms": 250, "full_page": False, "sha256": digest, "path": path,
                                        "bytes": len(png)}]}
        report["attempts"].append(attempt)
    return report, report_path.parent


def test_many_photo_like_screenshots_keep_the_html_report_under_its_size(tmp_path):
    """Thumbnails were embedded whatever their size (up to 300 of them), outside the report's size
    budget: 300 photo-like pages made a report of over 40 MB, past the 20 MB the HTML report keeps
    to (its other contents shrink to fit; the thumbnails did not). Past a budget of their own the
    rest are shown without a thumbnail, as links that open the full screenshot."""
    from scoreboard.record.html import SIZE_BUDGET, render_html
    from scoreboard.record.view import view_of

    report, folder = _report_with_shots(tmp_path, [_noisy_png(i) for i in range(300)])
    view = view_of(report)
    view.base_dir = folder
    page = render_html(view)
    assert len(page.encode("utf-8")) < SIZE_BUDGET + 2_000_000
    shown = page.count("data:image/png;base64,")
    assert 10 <= shown < 300
    assert page.count("/screenshots/") >= 300  # every shot is still linked


def test_a_full_page_shot_thumbnail_is_the_top_of_the_page_not_a_long_strip(tmp_path):
    import base64
    import io

    from PIL import Image

    from scoreboard.record.html import render_html
    from scoreboard.record.view import view_of

    report, folder = _report_with_shots(tmp_path, [_noisy_png(7, height=16384, width=1024)])
    view = view_of(report)
    view.base_dir = folder
    page = render_html(view)
    (encoded,) = [p.split('"', 1)[0].split("\\", 1)[0] for p in page.split("data:image/png;base64,")[1:]]
    with Image.open(io.BytesIO(base64.b64decode(encoded))) as thumb:
        assert thumb.width == 240 and thumb.height <= 480


def test_a_report_rendered_again_shows_its_screenshots(tmp_path):
    """`scoreboard report REPORT.json --format html` made the page without a single thumbnail
    (the screenshots beside the report were not looked for); it shows them as the run's did."""
    import subprocess
    import sys

    report, folder = _report_with_shots(tmp_path, [_noisy_png(i) for i in range(3)])
    path = folder / "again.json"
    path.write_text(json.dumps(report))
    proc = subprocess.run([sys.executable, "-m", "scoreboard", "report", str(path), "--format", "html",
                           "--output", str(folder / "again.html")], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert (folder / "again.html").read_text().count("data:image/png;base64,") == 3


# ------------------------------------------------------------------------- folder outputs the renderer refuses

@chromium
def test_a_folder_whose_index_html_is_refused_is_not_rendered_and_says_why(tmp_path):
    """A folder whose index.html is over render.max_file_bytes, or a symlink to a file outside the
    folder, was "rendered": the renderer's own 404 page ("not found") was shot with no error, so
    page.ok held and a vision judge was shown that page as the subject's work. The README says a
    page over the limit is not rendered and the record says why; a refused index.html is the same."""
    from scoreboard.render.page import RenderedPage

    big, link = tmp_path / "big", tmp_path / "link"
    big.mkdir()
    link.mkdir()
    (big / "index.html").write_text("<html><body><h1>Big</h1>" + "x" * 70_000 + "</body></html>")
    outside = tmp_path / "secret.html"
    outside.write_text("<html><body><h1>outside the folder</h1></body></html>")
    (link / "index.html").symlink_to(outside)
    records = render_all([str(big), str(link)], tmp_path, settle_ms=0, max_file_bytes=65_536)
    for record in records:
        assert record["kind"] == "folder" and record["shots"] == [] and not RenderedPage(record).ok
    assert "index.html" in records[0]["error"] and "render.max_file_bytes" in records[0]["error"]
    assert "index.html" in records[1]["error"] and "outside" in records[1]["error"]
    assert "--root" not in records[1]["error"]


@chromium
def test_a_folder_file_the_renderer_refuses_is_counted_and_named_not_a_silent_404(tmp_path):
    """A folder page's own image over render.max_file_bytes, or a symlink out of the folder, was
    answered 404 like a missing file: the record never said the renderer refused it, or why."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text("<html><body><h1>Hero</h1><img src='hero.png'><img src='leak.png'>"
                                     "<img src='missing.png'></body></html>")
    (site / "hero.png").write_bytes(b"\x89PNG" + b"\0" * 70_000)
    (tmp_path / "secret.png").write_bytes(b"\x89PNG secret")
    (site / "leak.png").symlink_to(tmp_path / "secret.png")
    (record,) = render_all([str(site)], tmp_path, settle_ms=0, max_file_bytes=65_536)
    assert record["error"] is None and record["shots"]
    assert record["blocked_requests"] == 2
    listed = " ".join(record["blocked"])
    assert "hero.png" in listed and "render.max_file_bytes" in listed
    assert "leak.png" in listed and "outside" in listed and "missing.png" not in listed
