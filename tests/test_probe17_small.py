"""Probe 17: small honesty leftovers, each driven from the outside (the CLI on real files)."""

from __future__ import annotations

import asyncio
import html
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_inprocess import run_cli
from tests.test_reviews import make_report


def _browser_loop_running() -> bool:
    """Once the module's Playwright `browser` is up its asyncio loop runs in this process, and the
    CLI's asyncio.run() would refuse to start: the tests from then on run a real process."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def scoreboard(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess:
    if not _browser_loop_running():
        return run_cli(args, cwd=cwd, env={**os.environ, **env})
    return subprocess.run([sys.executable, "-m", "scoreboard", *args], cwd=cwd, env={**os.environ, **env},
                          capture_output=True, text=True, timeout=120)


@pytest.fixture(autouse=True)
def own_project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SCOREBOARD_STORE", "none")


# ---------------------------------------------------------------------------------------------
# (1) import reviews: a reviewer id or rubric version the store or the viewer would refuse


def _review_file(folder: Path, report: Path, **fields) -> Path:
    doc = json.loads(report.read_text(encoding="utf-8"))
    attempt = doc["attempts"][0]
    case = next(c for c in doc["plan"]["cases"] if c["id"] == attempt["case_id"])
    entry = {"case_id": attempt["case_id"], "input_hash": case["input_hash"], "output_hash": attempt["output_hash"],
             "reviewer_id": "ana", "reviewer_kind": "human", "rubric_version": "v1", "ratings": {},
             "notes": "fine", **fields}
    path = folder / "reviews.json"
    path.write_text(json.dumps({"entries": [entry]}, indent=1), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def plain_report(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("plain")
    old = os.environ.get("SCOREBOARD_STORE")
    os.environ["SCOREBOARD_STORE"] = "none"
    try:
        return make_report(folder, judged=False)
    finally:
        if old is None:
            del os.environ["SCOREBOARD_STORE"]
        else:
            os.environ["SCOREBOARD_STORE"] = old


@pytest.mark.parametrize("field,value,said", [
    ("reviewer_id", "ana\x1b[31m", "control character U+001B"),
    ("rubric_version", "v" * 900, "900 characters long, over the 200"),
    ("reviewer_id", "é" * 201, "201 characters long, over the 200"),
    ("rubric_version", "v1\n", "control character U+000A"),
    ("reviewer_id", "   ", "blank"),
])
def test_import_reviews_refuses_a_name_the_store_or_viewer_refuses(tmp_path, plain_report, field, value, said):
    reviews = _review_file(tmp_path, plain_report, **{field: value})
    # the history store is in use: it would have refused the report after the import wrote it
    done = scoreboard(["import", "reviews", str(plain_report), str(reviews), "--output", "new.json"], tmp_path,
                      SCOREBOARD_STORE=str(tmp_path / "h.sqlite"))
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert f"{reviews}:" in lines[0] and f"entries[0].{field}" in lines[0] and said in lines[0], lines[0]
    line = int(lines[0].split(f"{reviews}:")[1].split(",")[0])
    assert f'"{field}"' in reviews.read_text(encoding="utf-8").splitlines()[line - 1]
    assert not (tmp_path / "new.json").exists()


def test_import_reviews_takes_a_name_at_the_limit(tmp_path, plain_report):
    reviews = _review_file(tmp_path, plain_report, reviewer_id="é" * 200, rubric_version="v1 (draft)")
    done = scoreboard(["import", "reviews", str(plain_report), str(reviews), "--output", "new.json"], tmp_path,
                      SCOREBOARD_STORE=str(tmp_path / "h.sqlite"))
    assert done.returncode == 0, done.stderr
    assert "warning" not in done.stderr.lower()
    saved = json.loads((tmp_path / "new.json").read_text(encoding="utf-8"))
    assert saved["reviews"]["human"][0]["reviewer_id"] == "é" * 200


# ---------------------------------------------------------------------------------------------
# (2) a score or metric comparison says each side's errored attempts it leaves out

ERRORS_SUITE = """name: errs
cases: cases.jsonl
graders:
  - {contains: x, metric: acc, weight: 1}
variants:
  good: {subject: {type: mock, default: "x"}}
  bad: {subject: {type: mock, default: "x", errors: [c1, c2]}}
formats: [json, md, html]
output_dir: out
"""
LEFT = "left out, bad's 2 errored attempts (no "


@pytest.fixture
def errored_run(tmp_path) -> tuple[Path, subprocess.CompletedProcess]:
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "input": f"q{i}", "expected": "x"}) + "\n"
                                                  for i in range(1, 5)), encoding="utf-8")
    (tmp_path / "suite.yaml").write_text(ERRORS_SUITE, encoding="utf-8")
    done = scoreboard(["run", "suite.yaml", "--no-progress"], tmp_path)
    assert done.returncode == 2 and "2 attempts ended in an error" in done.stdout, done.stdout + done.stderr
    (report,) = (tmp_path / "out" / "errs").glob("*.json")
    return report, done


def test_score_and_metric_comparisons_say_the_errored_attempts_left_out(errored_run, tmp_path):
    report, done = errored_run
    doc = json.loads(report.read_text(encoding="utf-8"))
    (comp,) = doc["summary"]["comparisons"]
    assert comp["score"]["errored_left_out"] == {"a": 0, "b": 2}
    assert comp["metrics"]["acc"]["errored_left_out"] == {"a": 0, "b": 2}
    # the terminal: each pair line, and the score line gives its attempts as the metric lines do
    pair_lines = [line for line in done.stdout.splitlines() if "good vs bad," in line]
    assert len(pair_lines) == 2 and all(LEFT in line for line in pair_lines), done.stdout
    assert "score: 100.0% [95% CI 34.2%–100.0%] (weighted grade score, mean by case, 2 cases, 2 attempts)" \
        in done.stdout
    # the Markdown
    md = report.with_suffix(".md").read_text(encoding="utf-8")
    assert sum(LEFT in line for line in md.splitlines() if "good vs bad," in line) == 2
    # compare: text, JSON and its page
    text = scoreboard(["compare", str(report), str(report), "--pair", "good=bad"], tmp_path)
    assert text.returncode == 0, text.stderr
    # two reports: each side named by its report, as the pair's own line names them
    assert sum(LEFT.replace("bad's", "B:bad's") in line for line in text.stdout.splitlines()
               if "A:good vs B:bad," in line) == 2, text.stdout
    as_json = scoreboard(["compare", str(report), str(report), "--pair", "good=bad", "--json"], tmp_path)
    (pair,) = json.loads(as_json.stdout)["comparisons"]
    assert pair["score"]["errored_left_out"] == {"a": 0, "b": 2}
    scoreboard(["compare", str(report), str(report), "--pair", "good=bad", "--html", "cmp.html"], tmp_path)
    assert LEFT.replace("bad's", "B:bad's") in html.unescape((tmp_path / "cmp.html").read_text(encoding="utf-8"))
    # the new figure is checked, not a mismatch
    checked = scoreboard(["verify", str(report)], tmp_path)
    assert checked.returncode == 0 and "no mismatch" in checked.stdout, checked.stdout + checked.stderr


def test_a_pair_with_no_errored_attempt_says_nothing_left_out(errored_run, tmp_path):
    report, _ = errored_run
    text = scoreboard(["compare", str(report), str(report), "--pair", "good=good"], tmp_path)
    assert text.returncode == 0, text.stderr
    assert "A:good vs B:good, score" in text.stdout and "left out" not in text.stdout


def test_the_page_says_the_errored_attempts_left_out(errored_run, browser):
    report, _ = errored_run
    page = browser.new_page()
    try:
        page.goto(report.with_suffix(".html").resolve().as_uri())
        page.wait_for_selector("html[data-ready=true]", timeout=30_000)
        said = page.locator("[data-testid=cmp-metric-errored]").all_text_contents()
    finally:
        page.close()
    assert len(said) == 2 and all(LEFT in s for s in said), said


# ---------------------------------------------------------------------------------------------
# (3) promptfoo import: a row error with mixed prompts; out-of-range namedScores


def _promptfoo(tmp_path: Path, config: str, out: str = "out") -> subprocess.CompletedProcess:
    (tmp_path / "promptfooconfig.yaml").write_text(config, encoding="utf-8")
    return scoreboard(["import", "promptfoo", "promptfooconfig.yaml", "--output", out], tmp_path)


def test_mixed_json_and_text_prompts_list_a_var_whose_template_throws(tmp_path):
    # promptfoo 0.121.20 renders the vars with Nunjucks before each text prompt (not a JSON one):
    # join on a string throws there, so the text prompt's rows error and the chat prompt's do not;
    # the import checked the vars only when every prompt was text, and said nothing
    done = _promptfoo(tmp_path, """prompts:
  - '[{"role": "user", "content": "{{out}}"}]'
  - 'Say {{out}}'
providers: [echo]
tests:
  - vars: {s: abc, out: '{{ s | join("-") }}'}
    assert: [{type: not-contains, value: zzz}]
""")
    assert done.returncode == 3, done.stdout + done.stderr  # something listed as not converted
    report = (tmp_path / "out" / "conversion-report.md").read_text(encoding="utf-8")
    line = next(line for line in report.splitlines() if "tests.0.vars.out" in line)
    assert "Template render error" in line and "JSON prompts'" in line, line
    # every prompt text: the row errors everywhere, a grader that always fails (as before)
    done = _promptfoo(tmp_path, """prompts: ['Say {{out}}']
providers: [echo]
tests:
  - vars: {s: abc, out: '{{ s | join("-") }}'}
    assert: [{type: not-contains, value: zzz}]
""", "out2")
    assert done.returncode == 0 and "tests.0.vars.out: promptfoo renders this var" in done.stdout, done.stdout


def test_named_scores_out_of_range_are_clipped_and_noted(tmp_path):
    done = _promptfoo(tmp_path, """prompts: ['{{out}}']
providers: [echo]
tests:
  - description: py
    vars: {out: hello}
    assert:
      - type: python
        value: "{'pass': True, 'score': 1, 'reason': 'ok', 'namedScores': {'quality': 5, 'low': -2, 'mid': 0.5}}"
  - description: js
    vars: {out: hello}
    assert:
      - type: javascript
        value: "({pass: true, score: 1, reason: 'ok', namedScores: {quality: 5}})"
""")
    assert done.returncode == 0, done.stdout + done.stderr
    report = (tmp_path / "out" / "conversion-report.md").read_text(encoding="utf-8")
    for spot in ("tests.0.assert.0", "tests.1.assert.0"):
        line = next((line for line in report.splitlines() if spot in line and "namedScores" in line), None)
        assert line is not None and "clipped" in line, report
    ran = scoreboard(["run", "out/suite.yaml", "--output-dir", "out/res", "--no-progress"], tmp_path)
    assert "Traceback" not in ran.stderr, ran.stderr
    path = next((tmp_path / "out" / "res").glob("*/*.json"))
    attempts = {a["case_id"]: a for a in json.loads(path.read_text(encoding="utf-8"))["attempts"]}
    # python dropped quality and low (the metric read as if the code never named them)
    assert attempts["py"]["metrics"] == {"quality": 1.0, "low": 0.0, "mid": 0.5}, attempts["py"]


def test_chat_prompts_only_do_not_render_vars_first(tmp_path):
    # JSON.parse reads the raw prompt: promptfoo renders the vars inside it, never the vars first,
    # so nothing throws and the row passes (the import failed it as for a text prompt)
    done = _promptfoo(tmp_path, """prompts:
  - '[{"role": "user", "content": "{{s}}"}]'
providers: [echo]
tests:
  - vars: {s: abc, out: '{{ s | join("-") }}'}
    assert: [{type: not-contains, value: zzz}]
""")
    assert done.returncode == 0 and "vars.out" not in done.stdout, done.stdout + done.stderr
