"""A provider that reports more usage than the request allowed (400,016 tokens for a request
capped at 50 output tokens under a 1,000-token budget; $12.00 against a $0.05 budget): flagged
on the attempt and counted in the summary, the run stopped (exit 2) when the spend breaks a
budget, and `scoreboard verify` names the broken budget."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from scoreboard.engine.ledger import OVER_BOUND, Budget, Ledger
from scoreboard.errors import BudgetExceeded
from tests.subjects import ListLog

ROOT = Path(__file__).resolve().parent.parent
RETRIES = {"attempts": 1}


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run([sys.executable, "-m", "scoreboard", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)


def run_suite(tmp_path: Path, subject: dict, *flags: str, n: int = 3) -> tuple[subprocess.CompletedProcess, Path]:
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "input": f"q{i}", "expected": f"q{i}"})
                                                  + "\n" for i in range(n)))
    (tmp_path / "suite.json").write_text(json.dumps({"name": "over", "cases": "cases.jsonl", "subject": subject,
                                                     "concurrency": 1, "formats": ["json"]}))
    proc = cli(tmp_path, "run", "suite.json", "--no-progress", *flags)
    [report] = (tmp_path / "eval-results" / "over").glob("*.json")
    return proc, report


def verify(tmp_path: Path, report: Path) -> tuple[int, list[str]]:
    proc = cli(tmp_path, "verify", str(report), "--json")
    return proc.returncode, [m["path"] for m in json.loads(proc.stdout)["mismatches"]]


def test_the_ledger_flags_usage_above_the_bound_and_halts_when_a_budget_breaks():
    log = ListLog()
    ledger = Ledger(Budget(max_tokens=1000), log)
    ok = ledger.reserve(("c0", "v", 0), max_tokens=300, max_output_tokens=50)
    ledger.complete(ok, ok=True, input_tokens=20, output_tokens=50)
    assert ledger.take_over_bound(("c0", "v", 0)) == [] and ledger.exhausted is None
    big = ledger.reserve(("c1", "v", 0), max_tokens=300, max_output_tokens=50)
    ledger.complete(big, ok=True, input_tokens=16, output_tokens=400_000)
    over = {"message": OVER_BOUND, "request": big.id, "role": "subject", "reported_tokens": 400_016,
            "bound_tokens": 300, "reported_output_tokens": 400_000, "max_output_tokens": 50}
    assert ledger.take_over_bound(("c1", "v", 0)) == [over]
    assert log.records[-1]["over_bound"] == over
    assert ledger.exhausted == f"token budget of 1000 broken: 400,086 tokens spent ({OVER_BOUND})"
    with pytest.raises(BudgetExceeded, match="the run stopped"):
        ledger.reserve(("c2", "v", 0), max_tokens=1)


def test_a_cost_above_the_bound_is_flagged_without_a_budget():
    ledger = Ledger(Budget())
    ticket = ledger.reserve(("c", "v", 0), role="judge", max_tokens=100, max_cost=0.0001)
    ledger.complete(ticket, ok=True, input_tokens=10, output_tokens=10, cost_usd=12.0)
    [over] = ledger.take_over_bound(("c", "v", 0))
    assert over["role"] == "judge" and over["reported_cost_usd"] == 12.0 and over["bound_cost_usd"] == 0.0001
    assert ledger.exhausted is None and ledger.halted is None  # no budget to break: flagged only


def test_tokens_above_the_request_stop_the_run_and_fail_verify(tmp_path, fake_provider):
    srv = fake_provider
    srv.push("chat", {"usage": {"prompt_tokens": 16, "completion_tokens": 400_000}})
    subject = {"type": "openai", "base_url": srv.base_url + "/v1", "model": "m", "params": {"max_tokens": 50},
               "retries": RETRIES}
    proc, report_path = run_suite(tmp_path, subject, "--max-tokens", "1000")
    assert proc.returncode == 2, proc.stderr
    report = json.loads(report_path.read_text())
    assert report["run"]["status"] == "stopped"
    assert f"token budget of 1000 broken: 400,016 tokens spent ({OVER_BOUND})" in report["run"]["stop_reason"]
    first, *rest = report["attempts"]
    [over] = first["subject_info"]["usage_over_bound"]
    assert over["message"] == OVER_BOUND and over["reported_tokens"] == 400_016
    assert over["reported_output_tokens"] == 400_000 and over["max_output_tokens"] == 50
    assert over["bound_tokens"] < 1000
    assert [a["status"] for a in rest] == ["not-run", "not-run"] and len(srv.requests_to("chat")) == 1
    assert report["summary"]["variants"]["m"]["usage_over_bound"] == 1
    assert report["requests"]["tokens_spent"] == 400_016
    assert OVER_BOUND in report["requests"]["exhausted"]
    code, paths = verify(tmp_path, report_path)
    assert code == 1 and paths == ["requests.tokens_spent"]


def test_a_cost_above_the_budget_stops_the_run_and_fails_verify(tmp_path, fake_provider):
    srv = fake_provider
    srv.push("generic", {"cost": 12.0})
    subject = {"type": "http", "url": srv.base_url + "/generic", "output_path": "output.text", "cost_path": "cost",
               "max_output_tokens": 100, "price": {"input_per_mtok": 1.0, "output_per_mtok": 2.0}, "retries": RETRIES}
    proc, report_path = run_suite(tmp_path, subject, "--max-cost", "0.05")
    assert proc.returncode == 2, proc.stderr
    report = json.loads(report_path.read_text())
    assert report["run"]["status"] == "stopped"
    assert "cost budget of $0.05 broken: $12 spent" in report["run"]["stop_reason"]
    [over] = report["attempts"][0]["subject_info"]["usage_over_bound"]
    assert over["reported_cost_usd"] == 12.0 and over["bound_cost_usd"] < 0.05
    assert report["summary"]["variants"]["http"]["usage_over_bound"] == 1
    assert report["requests"]["cost_spent_usd"] == 12.0
    code, paths = verify(tmp_path, report_path)
    assert code == 1 and paths == ["requests.cost_spent_usd"]


def test_over_reported_usage_without_a_budget_is_flagged_and_counted(tmp_path, fake_provider):
    srv = fake_provider
    srv.push("chat", {"usage": {"completion_tokens": 900}}, {}, {"usage": {"completion_tokens": 901}})
    subject = {"type": "openai", "base_url": srv.base_url + "/v1", "model": "m", "params": {"max_tokens": 10},
               "retries": RETRIES}
    proc, report_path = run_suite(tmp_path, subject)
    assert proc.returncode == 0, proc.stderr  # nothing broken: the run completes, flagged
    report = json.loads(report_path.read_text())
    flagged = [a["case_id"] for a in report["attempts"] if "usage_over_bound" in (a.get("subject_info") or {})]
    assert flagged == ["c0", "c2"]
    assert report["summary"]["variants"]["m"]["usage_over_bound"] == 2
    assert verify(tmp_path, report_path) == (0, [])
    # Every rendering says so: the terminal, and the Markdown report made from the record.
    assert "provider reported more usage than the request allowed on 2 attempts" in proc.stdout
    md = cli(tmp_path, "report", str(report_path), "--format", "md")
    assert md.returncode == 0, md.stderr
    assert "more usage than the request allowed on 2 attempts" in md.stdout
