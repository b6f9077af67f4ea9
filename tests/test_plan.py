"""`scoreboard plan`: what a run would do, with no model call and no subject started."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from scoreboard.cli.plan import build_plan, requests_per_call
from scoreboard.engine.pipeline import RunOptions, run
from scoreboard.subjects.registry import build_subject
from scoreboard.suite.load import load_suite
from tests.cli_inprocess import run_cli
from tests.servers.fake_provider import FakeProvider

CASES = [{"id": "q1", "input": "What is 2+2?", "expected": "ANSWER: 4"},
         {"id": "q2", "input": "What is 3+4?", "expected": "ANSWER: 7"},
         {"id": "q3", "input": "What is 5+5?", "expected": "ANSWER: 10"},
         {"id": "h1", "input": "What is 9+9?", "expected": "ANSWER: 18", "split": "heldout"}]


def scoreboard(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return run_cli(args, cwd)


@pytest.fixture
def judge_srv():
    with FakeProvider() as srv:
        yield srv


def write_suite(tmp_path: Path, subject_srv, judge_srv, **settings) -> Path:
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in CASES), encoding="utf-8")
    suite = {"name": "planned", "cases": "cases.jsonl", "runs": 2, "output_dir": str(tmp_path / "out"),
             "formats": ["json"], "timeout_ms": 10_000,
             "variants": {"remote": {"subject": {"type": "openai", "base_url": subject_srv.base_url + "/v1",
                                                 "model": "m"}},
                          "local": {"subject": {"type": "mock", "default": "ANSWER: 4"}}},
             "judge": {"type": "openai", "base_url": judge_srv.base_url + "/v1", "model": "judge",
                       "retries": {"attempts": 2, "base_delay_s": 0}},
             "judge_runs": 3, "pairwise": True,
             "graders": [{"llm-judge": {"rubric": "right?"}}, {"contains": "ANSWER"}], **settings}
    path = tmp_path / "suite.json"
    path.write_text(json.dumps(suite), encoding="utf-8")
    return path


def judge_reply(req):
    name = req["response_format"]["json_schema"]["name"]
    return json.dumps({"verdict": True, "explanation": "ok"} if name == "verdict"
                      else {"winner": "tie", "explanation": "same"})


def test_plan_counts_and_makes_no_request(fake_provider, judge_srv, tmp_path):
    path = write_suite(tmp_path, fake_provider, judge_srv)
    done = scoreboard(["plan", str(path)], tmp_path)
    assert done.returncode == 0, done.stderr
    assert fake_provider.requests == [] and judge_srv.requests == []
    assert not (tmp_path / "out").exists()  # nothing written either
    text = done.stdout
    assert "3 cases" in text and "2 variants x 2 runs = 12 attempts" in text
    suite = load_suite(path)
    for case in suite.cases:
        assert f"{case.id}  {case.input_hash}" in text
    assert "h1" not in text  # held out by default
    assert "72 judge calls (12 model-graded grades x 3 + 6 pairwise comparisons x 2 orders x 3)" in text
    assert "most requests: 312 (24 subject + 288 judge, retries included)" in text

    plan = build_plan(suite)
    assert fake_provider.requests == [] and judge_srv.requests == []
    assert plan["attempts"] == 12 and plan["runs"] == 2 and plan["cases"]["count"] == 3
    remote, local = plan["variants"]
    assert (remote["requests_per_attempt"], remote["most_requests"]) == (4, 24)  # the default 4 tries
    assert (local["requests_per_attempt"], local["most_requests"]) == (0, 0)
    judge = plan["judge"]
    assert judge["calls"] == {"grades": 36, "pairwise": 36, "total": 72} and plan["judge_calls"] == 72
    assert judge["requests_per_ask"] == 2 and judge["asks_per_call"] == 2
    # each judge call: 2 asks (the parse retry) x 2 retry attempts of the judge subject
    assert plan["most_requests"] == {**plan["most_requests"], "subjects": 24, "judge": 288, "total": 312}
    assert plan["fixture_hash"] == suite.plan()["fixture_hash"]


def test_a_run_stays_within_its_plan(fake_provider, judge_srv, tmp_path):
    judge_srv.set_default("chat", {"reply": judge_reply})
    path = write_suite(tmp_path, fake_provider, judge_srv)
    plan = build_plan(load_suite(path))
    outcome = run(load_suite(path), RunOptions(progress=False))
    by_role = outcome.report["requests"]["by_role"]
    # No retry was needed: one request per remote attempt and one per judge call.
    assert by_role == {"judge": plan["judge_calls"], "subject": 6}
    assert by_role["judge"] + by_role["subject"] <= plan["most_requests"]["total"]
    assert outcome.report["plan"]["fixture_hash"] == plan["fixture_hash"]
    assert outcome.report["plan"]["suite_hash"] == plan["suite_hash"]


def test_plan_flags_json_and_output_file(fake_provider, judge_srv, tmp_path):
    path = write_suite(tmp_path, fake_provider, judge_srv)
    done = scoreboard(["plan", str(path), "--split", "all", "--runs", "1", "--judge-runs", "1",
                       "--max-requests", "10", "--json", "--output", "plan.json"], tmp_path)
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    saved = json.loads((tmp_path / "plan.json").read_text(encoding="utf-8"))
    assert shown == saved and (tmp_path / "plan.json").stat().st_mode & 0o777 == 0o600
    assert [c["id"] for c in saved["cases"]["items"]] == ["q1", "q2", "q3", "h1"]
    assert saved["cases"]["items"][3]["split"] == "heldout" and saved["split"] == "all"
    assert saved["attempts"] == 8 and saved["judge_calls"] == 4 * 2 + 4 * 2  # 8 grades + 4 comparisons x 2
    assert saved["budget"]["max_requests"] == 10 and saved["budget_may_stop_run"] is True
    # Created exclusively.
    done = scoreboard(["plan", str(path), "--output", "plan.json"], tmp_path)
    assert done.returncode == 1 and "overwrite" in done.stderr
    assert json.loads((tmp_path / "plan.json").read_text(encoding="utf-8")) == saved
    assert fake_provider.requests == [] and judge_srv.requests == []


def test_plan_from_flags_only_and_its_errors(tmp_path):
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in CASES), encoding="utf-8")
    done = scoreboard(["plan", "--cases", "cases.jsonl", "--subject", "mock", "--split", "heldout"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "cases: 1 case (split: heldout)" in done.stdout and "h1" in done.stdout and "judge: none" in done.stdout
    assert "most requests: 0 (0 subject + 0 judge" in done.stdout
    done = scoreboard(["plan", "--cases", "cases.jsonl", "--subject", "mock", "--grader", "llm-judge"], tmp_path)
    assert done.returncode == 1
    (line,) = done.stderr.strip().splitlines()
    assert "needs a judge" in line
    done = scoreboard(["plan", "--cases", "missing.jsonl", "--subject", "mock"], tmp_path)
    assert done.returncode == 1 and "missing.jsonl" in done.stderr


def test_requests_per_call_by_kind(tmp_path):
    assert requests_per_call(build_subject({"type": "openai", "model": "m"}, tmp_path)) == 4
    assert requests_per_call(build_subject({"type": "anthropic", "model": "m"}, tmp_path)) == 4
    assert requests_per_call(build_subject({"type": "openai", "model": "m", "retries": {"attempts": 7}},
                                           tmp_path)) == 7
    assert requests_per_call(build_subject({"type": "claude-cli"}, tmp_path)) == 1
    assert requests_per_call(build_subject({"type": "codex-cli"}, tmp_path)) == 1
    for spec in ({"type": "mock"}, {"type": "python", "function": "x:y"},
                 {"type": "command", "argv": ["echo", "{input}"]}):
        assert requests_per_call(build_subject(spec, tmp_path)) == 0
