"""History and the viewer, probed from the outside (round 3): the real CLI on real files and the
real `scoreboard view` server on 127.0.0.1 port 0, as a demanding user with many runs meets them."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_inprocess import run_cli
from tests.viewer.conftest import Served, wait_ready

SUITE = """name: demo
cases: cases.jsonl
variants:
  v1:
    subject: {type: python, function: "subj:answer", model_free: true}
"""

SUBJECT = """import json, os
def answer(input):
    if os.environ.get("BREAK") and "3" in input:
        raise RuntimeError("boom")
    return json.dumps({"x": 1, "y": 2 if "a" in input else 3})
"""


def sb(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    """`scoreboard ARGS`: in this process (tests/cli_inprocess.py), what the command says and writes
    being the point here; as a process once the module's browser holds a running event loop
    (Playwright's, its tests are last in this module), where the command's own asyncio.run cannot run."""
    if asyncio._get_running_loop() is None:
        return run_cli(args, cwd, {**os.environ, **env} if env else None)
    return subprocess.run([sys.executable, "-m", "scoreboard", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=180, env={**os.environ, **env}, check=False)


def project(folder: Path, cases: int = 8, start: int = 0) -> Path:
    """A suite whose cases have a case score (json-fields with a threshold)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "subj.py").write_text(SUBJECT)
    (folder / "cases.jsonl").write_text("".join(json.dumps(
        {"id": f"c{i:02d}", "input": f"q{i} {'a' if i % 3 else 'b'}", "expected": {"x": 1, "y": 2},
         "grader": "json-fields", "fields": ["x", "y"], "threshold": 0.9}) + "\n" for i in range(start, start + cases)))
    (folder / "suite.yaml").write_text(SUITE)
    return folder


def keys(folder: Path, *args: str) -> list[str]:
    done = sb("history", "--store", "h.sqlite", "--json", *args, cwd=folder)
    assert done.returncode == 0, done.stderr
    return [r["key"] for r in json.loads(done.stdout)["runs"]]


@pytest.fixture(scope="module")
def errored_pair(tmp_path_factory):
    """Two runs of one suite, the second with an errored attempt (no score): (folder, key A, key B)."""
    folder = project(tmp_path_factory.mktemp("errored") / "p")
    done = sb("run", "suite.yaml", "--no-progress", "--store", "h.sqlite", "--output", "a.json", cwd=folder)
    assert done.returncode == 0, done.stdout + done.stderr
    done = sb("run", "suite.yaml", "--no-progress", "--store", "h.sqlite", "--output", "b.json", cwd=folder, BREAK="1")
    assert done.returncode == 2, done.stdout + done.stderr
    newest, oldest = keys(folder)
    return folder, oldest, newest


def test_the_viewer_compare_says_the_errored_attempts_a_score_comparison_left_out(errored_pair):
    folder, a, b = errored_pair
    cli = sb("compare", "a.json", "b.json", cwd=folder)
    # what the reports say, the side named by its report as the viewer names it (B:)
    assert "left out, B:v1's 1 errored attempt (no score" in cli.stdout, cli.stdout
    served = Served("--store", "h.sqlite", cwd=folder)
    try:
        status, body = served.get(f"/api/compare?a={a}&b={b}")
    finally:
        served.stop()
    assert status == 200, body
    (pair,) = body["comparisons"]
    assert pair["score"]["errored_left_out"] == {"a": 0, "b": 1}


def _post(served: Served, body: str, headers: dict) -> tuple[int, dict]:
    import http.client
    import urllib.parse

    parsed = urllib.parse.urlsplit(served.base)
    conn = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=30)
    try:
        conn.request("POST", "/api/reviews", body=body, headers=headers)
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


def test_a_review_posted_from_another_origin_is_refused_even_with_the_token(errored_pair):
    folder, a, _ = errored_pair
    served = Served("--store", "h.sqlite", cwd=folder)
    try:
        meta = served.get("/api/meta")[1]
        detail = served.get(f"/api/runs/{a}/case?id=c01")[1]
        form = json.dumps({"run": a, "case_id": "c01", "output_hash": detail["attempts"][0]["output_hash"],
                           "reviewer_id": "ana", "rubric_version": "v1", "verdict": "pass", "ratings": {},
                           "notes": "fine"})
        headers = {"Content-Type": "application/json", "X-CSRF-Token": meta["csrf"]}
        for foreign in ({"Origin": "http://evil.example"}, {"Origin": "null"},
                        {"Origin": served.base.replace("127.0.0.1", "localhost")},
                        {"Origin": served.base + "1"}, {"Sec-Fetch-Site": "cross-site"}):
            status, body = _post(served, form, {**headers, **foreign})
            assert status == 403 and "another origin" in body["error"], (foreign, status, body)
        assert served.get(f"/api/reviews/export?run={a}")[1]["entries"] == []
        status, body = _post(served, form, {**headers, "Origin": served.base, "Sec-Fetch-Site": "same-origin"})
        assert status == 200, body
        status, body = _post(served, form, headers)  # a script with no Origin: the token is the check
        assert status == 200, body
        assert len(served.get(f"/api/reviews/export?run={a}")[1]["entries"]) == 1
    finally:
        served.stop()


SLOW_SUBJECT = """import json, os, time
def answer(input):
    if os.environ.get("SLOW"):
        time.sleep(0.4)
    return json.dumps({"x": 1, "y": 2 if "a" in input else 3})
"""


def stopped_project(folder: Path) -> Path:
    """A suite of 30 cases run twice: whole, then stopped part way by a SIGINT (Ctrl-C)."""
    import signal
    import time

    project(folder, cases=30)
    (folder / "subj.py").write_text(SLOW_SUBJECT)
    done = sb("run", "suite.yaml", "--no-progress", "--store", "h.sqlite", cwd=folder)
    assert done.returncode == 0, done.stdout + done.stderr
    proc = subprocess.Popen([sys.executable, "-m", "scoreboard", "run", "suite.yaml", "--no-progress", "--store",
                             "h.sqlite", "--concurrency", "1"], cwd=folder, env={**os.environ, "SLOW": "1"},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    for _ in range(600):  # until the second run has logged a few attempts
        logs = [p for p in (folder / "eval-results" / "demo").glob("*/attempts.jsonl")
                if len(p.read_text().splitlines()) >= 3]
        if len(logs) == 2:
            break
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    out = proc.communicate(timeout=120)[0]
    assert proc.returncode == 2 and "stopped" in out, out
    return folder


@pytest.fixture(scope="module")
def stopped(tmp_path_factory):
    return stopped_project(tmp_path_factory.mktemp("stopped") / "p")


def test_a_trend_says_a_run_stopped_part_way_is_over_the_attempts_that_ran(stopped, browser):
    folder = stopped
    served = Served("--store", "h.sqlite", cwd=folder)
    page = browser.new_page()
    try:
        points = served.get("/api/trends?suite=demo")[1]["series"]["v1"]
        assert [p["status"] for p in points] == ["completed", "stopped"]
        assert points[0]["partial"] is None
        missing = points[1]["not_run"]
        assert 0 < missing < 30
        assert points[1]["partial"] == (f"stopped run: {missing} attempt{'s' if missing > 1 else ''} not run; its "
                                        "figures are over the attempts that ran, not the whole suite")
        page.goto(served.base + "/#/trends/demo")
        wait_ready(page)
        assert points[1]["partial"] in page.locator("#trend-table").inner_text()
    finally:
        page.close()
        served.stop()


TWO_VARIANTS = """name: demo
cases: cases.jsonl
variants:
  base:
    subject: {type: python, function: "subj:answer", model_free: true}
  %s:
    subject: {type: python, function: "subj:answer", model_free: true}
"""


def test_the_viewer_compare_page_shows_the_left_out_note(errored_pair, browser):
    folder, a, b = errored_pair
    served = Served("--store", "h.sqlite", cwd=folder)
    page = browser.new_page()
    try:
        page.goto(served.url.split("?")[0].rstrip("/") + f"/#/compare/{a}/{b}")
        wait_ready(page)
        note = page.locator("[data-errored-left-out=score]")
        assert note.count() == 1
        # which run's attempt: B (the newer run) as the pair's headline names it (test_probe22_viewer.py)
        assert note.inner_text() == ("left out, B:v1's 1 errored attempt (no score; the pass-rate comparison "
                                     "counts them as failures)")
    finally:
        page.close()
        served.stop()


def test_a_trend_says_when_the_cases_changed_between_runs(tmp_path, browser):
    folder = project(tmp_path / "p", cases=6)
    for cases in (6, 6, 9):  # the third run: three cases added
        project(folder, cases=cases)
        done = sb("run", "suite.yaml", "--no-progress", "--store", "h.sqlite", cwd=folder)
        assert done.returncode == 0, done.stdout + done.stderr
    project(folder, cases=6, start=3)  # the fourth: c00-c02 gone, c06-c08 kept
    done = sb("run", "suite.yaml", "--no-progress", "--store", "h.sqlite", cwd=folder)
    assert done.returncode == 0, done.stdout + done.stderr
    served = Served("--store", "h.sqlite", cwd=folder)
    page = browser.new_page()
    try:
        status, body = served.get("/api/trends?suite=demo")
        assert status == 200, body
        points = body["series"]["v1"]
        assert [p["change"]["case_set_changed"] if p["change"] else "first" for p in points] == [
            "first", None, {"only_in_previous": 0, "only_in_this": 3, "inputs_differ": 0},
            {"only_in_previous": 3, "only_in_this": 0, "inputs_differ": 0}]
        assert points[2]["change"]["flags"][0].startswith("the cases changed since the previous run: 3 only in this run")
        assert not any("cases changed" in f for f in points[1]["change"]["flags"])
        page.goto(served.base + "/#/trends/demo")
        wait_ready(page)
        table = page.locator("#trend-table").inner_text()
        assert table.count("the cases changed since the previous run") == 2
        assert "3 only in the previous run" in table
    finally:
        page.close()
        served.stop()


def test_the_compare_page_names_the_variants_a_rename_left_uncompared(tmp_path, browser):
    folder = project(tmp_path / "p", cases=4)
    for name in ("careful", "careful-v2"):  # the second variant renamed between the runs
        (folder / "suite.yaml").write_text(TWO_VARIANTS % name)
        done = sb("run", "suite.yaml", "--no-progress", "--store", "h.sqlite", cwd=folder)
        assert done.returncode == 0, done.stdout + done.stderr
    newest, oldest = keys(folder)
    served = Served("--store", "h.sqlite", cwd=folder)
    page = browser.new_page()
    try:
        body = served.get(f"/api/compare?a={oldest}&b={newest}")[1]
        assert [(c["a"], c["b"]) for c in body["comparisons"]] == [("base", "base")]
        assert body["unmatched_variants"] == {"a": ["careful"], "b": ["careful-v2"]}
        page.goto(served.base + f"/#/compare/{oldest}/{newest}")
        wait_ready(page)
        assert page.locator("section.pair").count() == 1
        assert page.locator("#unmatched-variants").inner_text() == (
            "not compared (no variant of that name in the other run: renamed, added or dropped): only in A: careful; "
            "only in B: careful-v2")
    finally:
        page.close()
        served.stop()


def test_the_compare_page_says_the_pass_rates_are_over_different_cases(stopped, browser):
    whole, part = keys(stopped)[::-1]
    served = Served("--store", "h.sqlite", cwd=stopped)
    page = browser.new_page()
    try:
        (pair,) = served.get(f"/api/compare?a={whole}&b={part}")[1]["comparisons"]
        ran = pair["b_counts"]["cases"]
        assert pair["a_counts"] == {"passed": 20, "judged": 30, "cases": 30}
        assert 0 < ran < 30 and pair["cases"] == ran
        assert pair["flags"][0] == (f"the pass rates are over different cases: A's over 30, B's over {ran} (a run "
                                    f"stopped part way, or cases one side never judged); the paired figures are "
                                    f"over the {ran} both judged")
        page.goto(served.base + f"/#/compare/{whole}/{part}")
        wait_ready(page)
        text = page.locator("section.pair").inner_text()
        assert "66.7% (20/30 attempts, 30 cases)" in text and f"B's over {ran}" in text
    finally:
        page.close()
        served.stop()
