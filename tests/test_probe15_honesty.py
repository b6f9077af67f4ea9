"""Honest accounting, from outside (probe 15): a grader's time limit holds for an async grader
that blocks the loop; a failed request's unknown cost leaves the Measurements total unknown, as
the Requests block says; dQ's reason counts only the judge failures behind the cases it left out."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from tests.cli_inprocess import run_cli
from tests.servers.fake_provider import FakeProvider


def sb(cwd: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return run_cli(args, cwd, {**os.environ, "SCOREBOARD_STORE": "none", **(env or {})})


def sb_process(cwd: Path, *args: str, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """A real process: for a grader that hangs, whose thread must end with the run, the timeout the net under it."""
    return subprocess.run([sys.executable, "-m", "scoreboard", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout,
                          env={**os.environ, "SCOREBOARD_STORE": "none", **(env or {})})


def test_an_async_grader_that_blocks_the_loop_is_cut_at_its_timeout_and_the_run_finishes(tmp_path):
    (tmp_path / "checks.py").write_text("import time\n\nasync def hang(output, context):\n"
                                        "    time.sleep(1000)\n    return True\n\n"
                                        "async def fine(output, context):\n    print('graded')\n"
                                        "    return output == context['expected']\n")
    (tmp_path / "cases.jsonl").write_text('{"id":"a","input":"x","expected":"x"}\n'
                                          '{"id":"b","input":"y","expected":"y"}\n')
    (tmp_path / "suite.yaml").write_text(
        "name: s\ncases: cases.jsonl\nsubject: {type: mock, outputs: {a: x, b: y}}\n"
        "graders:\n  - {python: {file: checks.py, function: hang, timeout_s: 1}}\n"
        "  - python-file:checks.py:fine\n"
        "output_dir: out\nformats: [json, md]\n")
    done = sb_process(tmp_path, "run", "suite.yaml", "--no-progress", timeout=60)
    assert done.returncode == 2, done.stdout + done.stderr  # errors, reported: not a hang
    (path,) = (tmp_path / "out" / "s").glob("*.json")
    report = json.loads(path.read_text())
    assert report["run"]["status"] == "completed"
    for attempt in report["attempts"]:
        hang, fine = attempt["grades"]
        assert "timed out after 1 s" in hang["reason"], hang
        assert fine["passed"] is True, fine
    assert report["summary"]["variants"]["mock"]["errors"] == 2
    assert "graded" in done.stderr and "graded" not in done.stdout  # an async grader's print: stderr


def _html_data(path: Path) -> dict:
    html = path.read_text(encoding="utf-8")
    return json.loads(re.search(r'<script type="application/json" id="data">(.*?)</script>', html, re.S).group(1))


def test_a_request_that_failed_before_its_retry_leaves_the_measured_cost_unknown_as_the_requests_block_says(tmp_path):
    with FakeProvider() as srv:
        srv.push("chat", {"status": 500})  # c0's first request fails, its retry is answered with usage
        (tmp_path / "cases.jsonl").write_text("".join(
            json.dumps({"id": f"c{i}", "input": f"q{i}", "expected": f"q{i}"}) + "\n" for i in range(3)))
        subject = {"type": "openai", "base_url": srv.base_url + "/v1", "model": "m", "api_key_env": "K",
                   "price": {"input_per_mtok": 1.0, "output_per_mtok": 2.0}, "max_concurrency": 1,
                   "retries": {"attempts": 3, "base_delay_s": 0.01, "max_delay_s": 0.02}}
        (tmp_path / "suite.json").write_text(json.dumps({"name": "s", "cases": "cases.jsonl", "subject": subject,
                                                         "graders": ["exact", {"max-cost": 1.0}],
                                                         "output_dir": "out", "formats": ["json", "md", "html"]}))
        done = sb(tmp_path, "run", "suite.json", "--no-progress", env={"K": "dummy"})
    assert done.returncode == 0, done.stdout + done.stderr
    (path,) = (tmp_path / "out" / "s").glob("*.json")
    report = json.loads(path.read_text())
    assert report["requests"]["cost_spent_usd"] is None and report["requests"]["cost_unknown_requests"] == 1
    retried = [a for a in report["attempts"] if a["measurements"]["requests"] == 2]
    assert len(retried) == 1 and retried[0]["measurements"]["cost_usd"] is None
    assert retried[0]["measurements"]["input_tokens"] is None
    # a cost limit cannot pass on the answered request's cost alone: not assessed, saying why
    limit = retried[0]["grades"][1]
    assert limit["passed"] is None and "a request of the attempt failed with its usage unknown" in limit["reason"]
    cost = report["summary"]["variants"]["m"]["measurements"]["cost_usd"]
    assert cost["total"] is None and cost["unknown_count"] == 1, cost  # never the answered requests' alone
    assert report["summary"]["variants"]["m"]["measurements"]["requests"]["total"] == 4
    # the Requests block: unknown, its known part never shown as $0.0000
    # ... and why, as "Not measured" says it: the price is set, the failed request reported no usage
    assert ("cost unknown: $9e-06 known, 1 request with no known cost (no price, or no usage reported) "
            "and no bound") in done.stdout
    md = next((tmp_path / "out" / "s").glob("*.md")).read_text()
    measured = md.split("## Measurements", 1)[1].split("## Requests", 1)[0]
    row = next(line for line in measured.splitlines() if line.startswith("| m | "))
    assert "| unknown (2 known, subtotal 6e-06; 1 unknown) | 4 |" in row, row
    assert "cost unknown: $9e-06 known" in md.split("## Requests", 1)[1]
    data = _html_data(next((tmp_path / "out" / "s").glob("*.html")))
    assert data["summary"]["variants"]["m"]["measurements"]["cost_usd"]["total"] is None
    assert "cost unknown: $9e-06 known" in data["requests"]["lines"][1]
    assert sb(tmp_path, "verify", path).returncode == 0


def _judge(req: dict) -> str:
    """Pointwise 2s and rubric scores at the top, except: a BROKEN output is not judged (both
    graders), and the rubric judge fails on the answers to c1 (which leaves no case out of dQ)."""
    props = req["response_format"]["json_schema"]["schema"]["properties"]
    text = req["messages"][-1]["content"]
    if "BROKEN" in text or ("scores" not in props and "fine answer to c1" in text):
        return "no"
    if "scores" in props:
        return json.dumps({"scores": {d: 2 for d in props["scores"]["required"]}, "explanation": "x"})
    return json.dumps({"score": props["score"]["maximum"], "explanation": "x"})


def test_the_dq_reason_counts_only_the_judge_failures_behind_the_cases_it_left_out(tmp_path):
    (tmp_path / "dq_maker.py").write_text("def good(x):\n    return 'a fine answer to ' + x\n\n"
                                          "def flaky(x):\n    return 'a fine answer to ' + x if x == 'c1' else 'BROKEN'\n")
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps({"id": c, "input": c}) + "\n" for c in ("c1", "c2", "c3")))
    with FakeProvider() as srv:
        srv.set_default("chat", {"reply": _judge})
        suite = {"name": "probe", "cases": "cases.jsonl", "output_dir": "out", "formats": ["json", "md", "html"],
                 "judge": {"type": "openai", "base_url": srv.base_url + "/v1", "model": "judge"},
                 "graders": [{"pointwise": {}}, {"rubric-score": {}}],
                 "variants": {name: {"subject": f"python:dq_maker:{name}"} for name in ("good", "flaky")}}
        (tmp_path / "suite.json").write_text(json.dumps(suite))
        done = sb(tmp_path, "run", "suite.json", "--no-progress", "--trust-unchecked-judge", env={"OPENAI_API_KEY": "k"})
        json_only = sb(tmp_path, "run", "suite.json", "--no-progress", "--trust-unchecked-judge", "--format", "json",
                       env={"OPENAI_API_KEY": "k"})
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(sorted((tmp_path / "out" / "probe").glob("*.json"))[0].read_text())
    failures = {v: s["judge_failures"] for v, s in report["summary"]["judges"]["variants"].items()}
    assert failures == {"good": 1, "flaky": 5}  # rubric failures included there: every failure of the judge
    said = ("dQ good - flaky: +0.00 (95% CI -2.38 to +2.38, student-t) on 1 of 3 cases (2 left out: a variant had "
            "no pointwise score there; judge failures: flaky 2)")  # the 2 pointwise failures on c2, c3
    md = sorted((tmp_path / "out" / "probe").glob("*.md"))[0].read_text()
    html = _html_data(sorted((tmp_path / "out" / "probe").glob("*.html"))[0])
    for text in (done.stdout, md, json.dumps(html, ensure_ascii=False), json_only.stdout):
        assert said in text, text
