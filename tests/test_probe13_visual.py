"""Open-ended and visual work probed from the outside (round 13), as a demanding user would: a
loopback fake subject producing pages, a loopback fake judge whose answers the test controls and
whose request bodies it reads back, real headless Chromium (Debian's)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.cli_inprocess import run_cli
from tests.servers.fake_provider import FakeProvider

chromium = pytest.mark.skipif(not os.path.exists("/usr/bin/chromium"), reason="needs Debian's chromium")
playwright = pytest.mark.skipif(importlib.util.find_spec("playwright") is None, reason="needs playwright")


def scoreboard(args: list[str], cwd: Path, timeout: int = 300) -> subprocess.CompletedProcess:
    """`python -m scoreboard ARGS`, run in this process (what the command says and writes is the
    point, not the process; `timeout` is kept for the callers' sake)."""
    return run_cli(args, cwd, dict(os.environ, SCOREBOARD_STORE="none"))


def model_subject(srv: FakeProvider) -> dict:
    return {"type": "openai", "model": "page-maker", "base_url": srv.base_url + "/v1", "api_key_required": False}


# ------------------------------------------------------------------------- a Chromium that will not start

@playwright
def test_a_chromium_that_cannot_start_stops_the_run_before_any_output_is_paid_for(tmp_path):
    """`render.browser` names a file that is there but is no working Chromium (a stub, a broken
    install): the pre-run check saw the file and passed; the browser was launched at the first
    render, after the subject had already been asked (and paid) for several pages. The run then
    stopped with the install hint and those answers were in no report: a resume asked again. The
    browser is started before the first attempt: the same one-line error, nothing spent."""
    stub = tmp_path / "chromium"
    stub.write_text("#!/bin/sh\nexit 1\n")
    stub.chmod(0o755)
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "input": "x"}) + "\n" for i in range(6)))
    with FakeProvider() as srv:
        srv.set_default("chat", {"reply": "<!doctype html><html><body><h1>A paid-for page</h1></body></html>"})
        suite = {"name": "nochrome", "cases": "cases.jsonl", "graders": ["page-renders"],
                 "render": {"browser": str(stub)}, "variants": {"m": {"subject": model_subject(srv)}}}
        (tmp_path / "suite.json").write_text(json.dumps(suite))
        proc = scoreboard(["run", "suite.json", "--no-progress"], tmp_path)
        asked = len(srv.requests_to("chat"))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert "pip install 'scoreboard[render]'" in line and "launching Chromium failed" in line
    assert asked == 0  # no page was paid for that no report holds


# ------------------------------------------------------------------------- the judge check, said wherever figures are

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "landing-pages"


def judged_suite(tmp_path: Path, srv: FakeProvider, graders: list, **over) -> None:
    """The example's page makers, one control (its garden page) and a judge on the fake provider."""
    import shutil

    shutil.copy(EXAMPLE / "pages.py", tmp_path / "pages.py")
    shutil.copytree(EXAMPLE / "controls", tmp_path / "controls")
    (tmp_path / "cases.jsonl").write_text('{"id": "bakery", "input": "Sunrise Bakery"}\n')
    (tmp_path / "controls.jsonl").write_text(
        '{"id": "garden", "input": "A garden centre", "output": "@controls/garden.html"}\n')
    suite = {"name": "judged", "cases": "cases.jsonl", "graders": graders, "render": {"settle_ms": 0, "concurrency": 1},
             "variants": {"polished": {"subject": "python:pages:polished"}, "plain": {"subject": "python:pages:plain"}},
             "judge": {"type": "openai", "model": "vision-x", "base_url": srv.base_url + "/v1",
                       "api_key_required": False},
             "instrument": {"controls": "controls.jsonl", "degrade": ["blank"], "repeats": 2}, **over}
    (tmp_path / "suite.json").write_text(json.dumps(suite))


@chromium
@pytest.mark.parametrize("graders,over", [
    ([{"llm-judge": {"rubric": "Is this a good landing page?", "images": True, "source": False}}], {}),
    (["page-renders"], {"pairwise": {"images": True, "source": False}}),
], ids=["llm-judge", "pairwise"])
def test_a_failed_judge_check_is_said_in_every_rendering_not_only_beside_dq(tmp_path, graders, over):
    """A suite judged by `llm-judge` (or pairwise) with images, not by `pointwise`: its judge
    failed the instrument check (it cannot tell a page from a blank one), yet the run's
    terminal, Markdown, HTML and JUnit showed the judge's verdicts with not a word of it: the
    check's status was said only beside dQ or a rubric mean, and this suite has neither. Only
    the JSON's `instrument` block knew. It is said wherever the judge's figures are."""
    from tests.servers.fake_provider import VisionJudge

    with FakeProvider() as srv:
        srv.set_default("chat", {"reply": VisionJudge("constant")})  # the same verdict for every page
        judged_suite(tmp_path, srv, graders, **over)
        check = scoreboard(["run", "suite.json", "--stage", "check", "--no-progress", "--format", "json"], tmp_path)
        assert check.returncode == 3, check.stdout + check.stderr
        proc = scoreboard(["run", "suite.json", "--no-progress", "--format", "json,md,html,junit"], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    said = "judge check FAILED: these figures are unverified"
    lines = proc.stdout.splitlines()
    status = next(i for i, line in enumerate(lines) if line.startswith("judged: completed ("))
    assert lines[status + 1].startswith(f"  {said}"), proc.stdout  # first, under the run's line
    json_line = next(x for x in lines if x.strip().startswith("json: "))
    report = tmp_path / json_line.split("json: ", 1)[1].strip()
    assert json.loads(report.read_text())["instrument"]["status"] == "failed"
    assert said in report.with_suffix(".md").read_text()
    assert said in report.with_suffix(".html").read_text()
    junit = report.with_suffix(".junit.xml").read_text()
    assert junit.count(f'name="judge_check" value="{said}') == 2  # each variant's properties
    assert scoreboard(["verify", str(report)], tmp_path).returncode == 0


def _judges_only_blank_pages(req: dict) -> str:
    """A pairwise judge that answers (rightly) only when one page is blank; on every other
    comparison its answer is unusable (a judge failure)."""
    from scoreboard.render.pixels import is_blank
    from tests.servers.fake_provider import request_images

    shots = request_images(req)
    blank = [is_blank(png) for png in shots]
    if len(shots) == 2 and any(blank):
        return json.dumps({"winner": "B" if blank[0] else "A", "explanation": "the other page is empty"})
    return "I cannot compare these."


@chromium
def test_pairwise_comparisons_the_judge_left_unjudged_count_against_it_in_the_check(tmp_path):
    """A pairwise check whose judge failed on every comparison but the easy one (good page against
    a blank one) passed: the share of comparisons that chose the good output was taken over the
    comparisons the judge answered only (2 of 6: 100%), though the README says a pair the judge
    left unjudged is not above, every pair counts. It is over every comparison, with how many
    were not judged said."""
    with FakeProvider() as srv:
        srv.set_default("chat", {"reply": _judges_only_blank_pages})
        judged_suite(tmp_path, srv, ["page-renders"], pairwise={"images": True, "source": False},
                     instrument={"controls": "controls.jsonl", "degrade": ["blank", "unstyled", "no-images"],
                                 "repeats": 2})
        check = scoreboard(["run", "suite.json", "--stage", "check", "--no-progress", "--format", "json"], tmp_path)
    assert check.returncode == 3, check.stdout + check.stderr  # the check fails
    json_line = next(x for x in check.stdout.splitlines() if x.strip().startswith("json: "))
    report_path = tmp_path / json_line.split("json: ", 1)[1].strip()
    figures = json.loads(report_path.read_text())["summary"]["instrument"]
    accuracy = figures["pairwise_accuracy"]
    assert (accuracy["count"], accuracy["of"], accuracy["unjudged_pairs"]) == (2, 6, 4)
    assert figures["passed"] is False
    assert "pairwise: good output chosen in 33.3% of 6 comparisons" in check.stdout
    assert "4 not judged" in check.stdout
    assert "pairwise: chose the good output in 33.3% of comparisons, 4 not judged, which count as not chosen" \
        in check.stdout
    assert scoreboard(["verify", str(report_path)], tmp_path).returncode == 0


# ------------------------------------------------------------------------- one page flooding the driver

@chromium
def test_a_page_that_pushes_history_without_end_does_not_time_out_the_pages_after_it(tmp_path):
    """A page that calls history.pushState in a loop (200,000 times) sent the driver one navigation
    event each: its render timed out, and the run's event loop spent the next minute reading
    those events, so every ordinary page rendered after it timed out too (all four here). The
    pushes past a bound do nothing: the page renders, and so do the pages after it."""
    from tests.render.test_renderer import render_all

    flood = ("<html><body><h1>Push state flood</h1><script>for (let i = 0; i < 200000; i++) "
             "history.pushState({}, '', '#' + i); history.replaceState({}, '', '#last')</script></body></html>")
    ordinary = "<html><body><h1>A perfectly ordinary page</h1><p>words words words</p></body></html>"
    records = render_all([flood, ordinary, ordinary], tmp_path, settle_ms=0, timeout_ms=20_000, concurrency=1)
    assert [r["error"] for r in records] == [None, None, None]
    assert all(r["shots"] for r in records) and "Push state flood" in records[0]["text"]
