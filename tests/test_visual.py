"""Open-ended and visual work end to end (issue 17): outputs rendered in real headless Chromium,
vision judges on a loopback fake provider that scores the screenshots it is sent, the
instrument check, stages, dQ gates and verify over the screenshots."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.cli_inprocess import run_cli
from tests.servers.fake_provider import VisionJudge, request_images

pytestmark = pytest.mark.skipif(not os.path.exists("/usr/bin/chromium"), reason="needs Debian's chromium")

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "landing-pages"
VARIANTS = ("polished", "plain")


def scoreboard(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """`python -m scoreboard ARGS` in `cwd`, run in this process (what a command says and writes is
    the point here, not the process: each process spent about 0.7 s of CPU importing)."""
    return run_cli(args, cwd, dict(os.environ))


def make_suite(tmp_path: Path, judge: dict, **over) -> Path:
    """A small landing-page suite: 3 cases (+1 held out), the example's page makers and controls."""
    shutil.copy(EXAMPLE / "pages.py", tmp_path / "pages.py")
    shutil.copytree(EXAMPLE / "controls", tmp_path / "controls")
    cases = [{"id": "bakery", "input": "Sunrise Bakery", "category": "food"},
             {"id": "gym", "input": "Ironworks Gym", "category": "fitness"},
             {"id": "cafe", "input": "Corner Cafe", "category": "food"},
             {"id": "yoga", "input": "Still Yoga", "category": "fitness", "split": "heldout"}]
    (tmp_path / "cases.jsonl").write_text("\n".join(json.dumps(c) for c in cases) + "\n")
    controls = [{"id": "cinema", "input": "A cinema", "output": "@controls/harbor.html"},
                {"id": "garden", "input": "A garden centre", "output": "@controls/garden.html"}]
    (tmp_path / "controls.jsonl").write_text("\n".join(json.dumps(c) for c in controls) + "\n")
    suite = {"name": "pages", "cases": "cases.jsonl",
             "variants": {v: {"subject": f"python:pages:{v}"} for v in VARIANTS},
             "graders": ["page-renders", {"pointwise": {"dimensions": ["content", "visual", "layout"],
                                                        "images": True, "source": False}}],
             "judge": judge,
             "instrument": {"controls": "controls.jsonl", "degrade": ["blank", "unstyled", "no-images"],
                            "repeats": 2},
             "stages": {"screen": {"per_category": 1, "seed": 3}},
             # one browser a run, its pages one after another: a second browser's launch is CPU
             # these tests do not need (concurrency changes no pixel: not in the settings' hash)
             "render": {"concurrency": 1}}
    suite.update(over)
    path = tmp_path / "suite.yaml"
    path.write_text(yaml.safe_dump(suite, sort_keys=False))
    return path


def openai_judge(srv) -> dict:
    return {"type": "openai", "model": "vision-x", "base_url": srv.base_url + "/v1"}


def report_of(proc: subprocess.CompletedProcess, cwd: Path) -> tuple[Path, dict]:
    line = next(x for x in proc.stdout.splitlines() if x.strip().startswith("json: "))
    path = cwd / line.split("json: ", 1)[1].strip()
    return path, json.loads(path.read_text())


def test_vision_judge_sees_screenshots_blind(fake_provider, tmp_path):
    judge = VisionJudge()
    fake_provider.set_default("chat", {"reply": judge})
    make_suite(tmp_path, openai_judge(fake_provider))
    proc = scoreboard(["run", "suite.yaml", "--no-progress"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    path, report = report_of(proc, tmp_path)
    requests = [r["json"] for r in fake_provider.requests_to("chat")]
    assert len(requests) == 6 and judge.images_seen == [1] * 6
    for body in requests:
        text = json.dumps(body)
        assert not any(v in text for v in VARIANTS)  # blind: no variant name reaches the judge
        parts = body["messages"][-1]["content"]
        assert parts[0]["type"] == "text" and parts[1]["image_url"]["url"].startswith("data:image/png;base64,")
        assert "Sunrise Bakery" not in parts[0]["text"].split("ANSWER")[-1]  # source: false
    shown = set()
    for a in report["attempts"]:
        shots = a["render"]["shots"]
        grade = a["grades"][1]
        assert grade["judge"]["screenshots"] == [shots[-1]["sha256"]]
        shown.add(shots[-1]["sha256"])
        assert (path.parent / shots[-1]["path"]).is_file()
    assert len(shown) == 6
    # Screenshots sent are the stored ones, byte for byte.
    sent = {__import__("hashlib").sha256(request_images(b)[0]).hexdigest() for b in requests}
    assert sent == shown
    dq = report["summary"]["judges"]["dq"][0]
    assert (dq["a"], dq["b"], dq["dq"]) == ("polished", "plain", 3.0)
    assert report["instrument"]["status"] == "never-run"
    lines = proc.stdout.splitlines()
    status = next(i for i, line in enumerate(lines) if ": completed (" in line)
    assert lines[status + 1].startswith("  dQ polished - plain: +3.00")  # dQ leads, under the run's line
    assert "judge check never ran" in proc.stdout
    assert "## Quality first" in path.with_suffix(".md").read_text()
    # The HTML report: dQ first, thumbnails drawn from the stored shots, each opening full size.
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        page = browser.new_page()
        page.goto(path.with_suffix(".html").as_uri())
        page.wait_for_selector("html[data-ready=true]")
        assert "dQ polished - plain" in page.inner_text("[data-testid=lead]")
        page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
        page.locator("[data-testid=case-row]").first.click()
        thumbs = page.locator("[data-testid=thumbnail]")
        assert thumbs.count() >= 1
        assert page.evaluate("document.querySelector('[data-testid=thumbnail]').naturalWidth") == 240
        href = page.evaluate("document.querySelector('[data-testid=thumbnail]').parentElement.href")
        assert Path(href.removeprefix("file://")).is_file()
        browser.close()
    html = path.with_suffix(".html").read_text()
    assert html.count("data:image/png;base64,") == 6


def test_anthropic_judge_gets_image_blocks(fake_provider, tmp_path):
    fake_provider.set_default("messages", {"reply": VisionJudge()})
    judge = {"type": "anthropic", "model": "claude-x", "base_url": fake_provider.base_url, "api_key_required": False}
    make_suite(tmp_path, judge, graders=[{"rubric-score": {"images": "all", "rubric": "landing page"}}])
    proc = scoreboard(["run", "suite.yaml", "--no-progress", "--min-rubric", "polished=4"], tmp_path)
    assert proc.returncode == 3, proc.stdout + proc.stderr  # the gate refuses: the judge was never checked
    _, report = report_of(proc, tmp_path)
    body = fake_provider.requests_to("messages")[0]["json"]
    blocks = body["messages"][0]["content"]
    assert blocks[0]["type"] == "image" and blocks[0]["source"]["media_type"] == "image/png"
    assert blocks[-1]["type"] == "text" and "source" in blocks[-1]["text"]  # source shown too (default)
    rubric = report["summary"]["judges"]["variants"]["polished"]["rubric"]
    assert rubric["scale"] == [1, 5] and rubric["mean"] == 5
    gate = report["gates"][0]
    assert gate["gate"] == "min-rubric" and gate["value"] == 5 and gate["passed"] is False and gate["refused"]
    proc = scoreboard(["run", "suite.yaml", "--no-progress", "--min-rubric", "polished=4",
                       "--trust-unchecked-judge"], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_instrument_check_passes_then_dq_gate(fake_provider, tmp_path):
    fake_provider.set_default("chat", {"reply": VisionJudge()})
    make_suite(tmp_path, openai_judge(fake_provider))
    check = scoreboard(["run", "suite.yaml", "--stage", "check", "--no-progress"], tmp_path)
    assert check.returncode == 0, check.stderr
    path, report = report_of(check, tmp_path)
    inst = report["summary"]["instrument"]
    assert inst["passed"] and inst["accuracy"]["count"] == inst["accuracy"]["of"] == 6
    assert inst["accuracy"]["ci"]["method"] == "wilson" and inst["self_agreement"]["value"] == 1.0
    assert [v["name"] for v in report["plan"]["variants"]] == ["good", "blank", "unstyled", "no-images"]
    assert scoreboard(["verify", str(path)], tmp_path).returncode == 0
    kept = list((tmp_path / "eval-results" / "pages" / "checks").rglob("*.json"))
    assert len(kept) == 1 and json.loads(kept[0].read_text())["passed"] is True
    run = scoreboard(["run", "suite.yaml", "--no-progress", "--min-dq", "polished/plain=1"], tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    path, report = report_of(run, tmp_path)
    assert report["instrument"]["status"] == "passed" and report["gates"][0]["passed"]
    assert scoreboard(["verify", str(path)], tmp_path).returncode == 0
    low = scoreboard(["run", "suite.yaml", "--no-progress", "--min-dq", "plain/polished=0"], tmp_path)
    assert low.returncode == 3 and "dQ plain - polished: -3.00" in low.stdout


def test_judge_that_cannot_tell_good_from_degraded_fails_the_check(fake_provider, tmp_path):
    fake_provider.set_default("chat", {"reply": VisionJudge("constant")})
    make_suite(tmp_path, openai_judge(fake_provider))
    check = scoreboard(["run", "suite.yaml", "--stage", "check", "--no-progress"], tmp_path)
    assert check.returncode == 3, check.stderr  # a failed check is a failed gate on the judge
    _, report = report_of(check, tmp_path)
    inst = report["summary"]["instrument"]
    assert inst["passed"] is False and inst["accuracy"]["value"] == 0.0 and inst["accuracy"]["ties"] == 6
    assert "instrument check FAILED" in check.stdout
    run = scoreboard(["run", "suite.yaml", "--no-progress", "--min-dq", "-3"], tmp_path)
    assert run.returncode == 3
    _, report = report_of(run, tmp_path)
    assert report["instrument"]["status"] == "failed"
    assert "judge check FAILED" in run.stdout and "refused" in report["gates"][0]


def test_position_biased_judge_is_caught(fake_provider, tmp_path):
    fake_provider.set_default("chat", {"reply": VisionJudge("first")})
    make_suite(tmp_path, openai_judge(fake_provider), graders=["page-renders"], pairwise={"images": True},
               instrument={"controls": "controls.jsonl", "degrade": ["blank", "unstyled"], "repeats": 2})
    check = scoreboard(["run", "suite.yaml", "--stage", "check", "--no-progress"], tmp_path)
    assert check.returncode == 3, check.stderr
    _, report = report_of(check, tmp_path)
    inst = report["summary"]["instrument"]
    assert inst["position"]["first_share"] == 1.0 and inst["position"]["biased"] is True
    assert inst["passed"] is False and any("first position" in r for r in inst["reasons"])
    judged = report["pairwise"]["judgments"]
    assert {(j["a"], j["b"]) for j in judged} == {("good", "blank"), ("good", "unstyled")}
    assert all(j["forward"] == j["backward"] == "A" and j["verdict"] == "tie" for j in judged)


def test_tampered_screenshot_is_caught_by_verify(fake_provider, tmp_path):
    fake_provider.set_default("chat", {"reply": VisionJudge()})
    make_suite(tmp_path, None, graders=["page-renders", "page-no-console-errors"])
    proc = scoreboard(["run", "suite.yaml", "--no-progress"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    path, report = report_of(proc, tmp_path)
    assert scoreboard(["verify", str(path)], tmp_path).returncode == 0
    shot = path.parent / report["attempts"][0]["render"]["shots"][0]["path"]
    shot.chmod(0o600)
    shot.write_bytes(shot.read_bytes()[:-10] + b"0123456789")
    out = scoreboard(["verify", str(path)], tmp_path)
    assert out.returncode == 1 and "attempts[0].render.shots[0].sha256" in out.stdout
    assert "changed since the run" in out.stdout
    # A path that leaves the report's folder is refused, not followed.
    report["attempts"][1]["render"]["shots"][0]["path"] = "../../etc/passwd"
    forged = tmp_path / "forged.json"
    forged.write_text(json.dumps(report))
    out = scoreboard(["verify", str(forged)], tmp_path)
    assert out.returncode == 1 and "leaves the report's folder" in out.stdout


def test_page_graders_read_the_rendered_page(tmp_path):
    (tmp_path / "pages.py").write_text(
        "def ok(input):\n    return '<html><body><h1>Sign up</h1></body></html>'\n"
        "def broken(input):\n    return '<html><body><p style=\"display:none\">Sign up</p>"
        "<script>console.error(\"boom\")</script></body></html>'\n")
    (tmp_path / "cases.jsonl").write_text('{"id": "a", "input": "x"}\n')
    suite = {"cases": "cases.jsonl", "variants": {"ok": {"subject": "python:pages:ok"},
                                                  "broken": {"subject": "python:pages:broken"}},
             "graders": ["page-renders", "page-no-console-errors", {"page-text-visible": ["Sign up"]}],
             "render": {"concurrency": 1}}
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump(suite, sort_keys=False))
    proc = scoreboard(["run", "suite.yaml", "--no-progress"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    _, report = report_of(proc, tmp_path)
    ok, broken = report["attempts"]
    assert (ok["variant"], broken["variant"]) == ("ok", "broken")
    assert [g["passed"] for g in ok["grades"]] == [True, True, True]
    assert [g["passed"] for g in broken["grades"]] == [False, False, False]  # blank, console error, hidden
    assert "boom" in broken["grades"][1]["reason"]
    # The page graders are recomputed by verify from the render record.
    report["attempts"][1]["render"]["console_errors"] = []
    (tmp_path / "edited.json").write_text(json.dumps(report))
    out = scoreboard(["verify", "edited.json"], tmp_path)
    assert out.returncode == 1 and "attempts[1].grades[1]" in out.stdout


def test_screen_and_heldout_stages(fake_provider, tmp_path):
    fake_provider.set_default("chat", {"reply": VisionJudge()})
    make_suite(tmp_path, None, graders=["page-renders"])
    screen = scoreboard(["run", "suite.yaml", "--stage", "screen", "--no-progress"], tmp_path)
    assert screen.returncode == 0, screen.stderr
    _, report = report_of(screen, tmp_path)
    chosen = [c["id"] for c in report["plan"]["cases"]]
    assert report["plan"]["stage"] == "screen" and len(chosen) == 2 and "yoga" not in chosen
    assert report["plan"]["stage_selection"]["method"] == "per_category"
    held = scoreboard(["run", "suite.yaml", "--stage", "heldout", "--no-progress"], tmp_path)
    _, report = report_of(held, tmp_path)
    assert [c["id"] for c in report["plan"]["cases"]] == ["yoga"] and report["plan"]["stage"] == "heldout"
    bad = scoreboard(["run", "suite.yaml", "--stage", "judge"], tmp_path)
    assert bad.returncode == 1 and "rescore" in bad.stderr


def test_missing_browser_is_a_one_line_error(tmp_path):
    (tmp_path / "cases.jsonl").write_text('{"id": "a", "input": "<h1>x</h1>"}\n')
    proc = scoreboard(["run", "--cases", "cases.jsonl", "--subject", "mock", "--grader", "page-renders",
                       "--no-progress"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump({"cases": "cases.jsonl", "subject": "mock",
                                                          "graders": ["page-renders"],
                                                          "render": {"browser": "/nonexistent/chromium"}}))
    proc = scoreboard(["run", "suite.yaml", "--no-progress"], tmp_path)
    assert proc.returncode == 1 and len(proc.stderr.strip().splitlines()) == 1
    assert "pip install 'scoreboard[render]'" in proc.stderr and "/nonexistent/chromium" in proc.stderr


@pytest.mark.slow
def test_aggregate_over_check_screen_and_heldout(fake_provider, tmp_path):
    """The stages of a visual suite aggregated: dQ is the primary figure, the screen's pick is
    named, the held-out dQ (one case) is not enough to confirm it, the judge check is carried, and a
    dQ gate on an unchecked judge refuses to pass."""
    fake_provider.set_default("chat", {"reply": VisionJudge()})
    make_suite(tmp_path, openai_judge(fake_provider))
    screen = report_of(scoreboard(["run", "suite.yaml", "--stage", "screen", "--no-progress"], tmp_path), tmp_path)[0]
    held = report_of(scoreboard(["run", "suite.yaml", "--stage", "heldout", "--no-progress"], tmp_path), tmp_path)[0]
    refused = scoreboard(["aggregate", str(screen), str(held), "--min-dq", "0.5", "--output", "unchecked.json"],
                         tmp_path)
    assert refused.returncode == 3, refused.stdout + refused.stderr
    record = json.loads((tmp_path / "unchecked.json").read_text())
    assert record["judge_check"]["status"] == "never-run" and record["gates"][0]["refused"]
    check = report_of(scoreboard(["run", "suite.yaml", "--stage", "check", "--no-progress"], tmp_path), tmp_path)[0]
    proc = scoreboard(["aggregate", str(check), str(held), str(screen), "--min-dq", "0.5", "--output", "agg.json"],
                      tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    record = json.loads((tmp_path / "agg.json").read_text())
    assert record["primary"] == "dq" and [r["stage"] for r in record["stages"]] == ["screen", "heldout", "check"]
    assert (record["pick"]["variant"], record["pick"]["runner_up"], record["pick"]["margin"]) == ("polished", "plain", 3.0)
    assert record["screen"]["cases"] == ["bakery", "gym"] and record["heldout"]["cases"] == ["yoga"]
    assert record["screen"]["dq"][0]["cases"] == 2 and record["heldout"]["dq"][0]["cases"] == 1
    conf = record["confirmation"]
    assert conf["figure"] == "dq" and conf["value"] == 3.0 and conf["verdict"] == "not-confirmed"
    assert conf["tests"]["t_test_p"] is None and conf["tests"]["t_test_why"] == "fewer than two cases"
    assert "too few held-out cases to confirm" in conf["words"]
    assert record["judge_check"]["status"] == "passed" and record["judge_check"]["source"].startswith("check report")
    assert record["gates"][0]["gate"] == "min-dq" and record["gates"][0]["passed"]
    assert record["disjointness"]["disjoint"]
    assert scoreboard(["verify", "agg.json"], tmp_path).returncode == 0
    # The HTML in Chromium: the lead, then the two stages in sections of their own.
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        page = browser.new_page()
        page.goto((tmp_path / "agg.html").as_uri())
        assert "NOT CONFIRMED on the held-out cases" in page.inner_text("[data-testid=lead]")
        assert "yoga" in page.inner_text("[data-testid=heldout]") and "yoga" not in page.inner_text(
            "[data-testid=screen]")
        browser.close()
