"""Probe 10: `scoreboard verify` against forged and hostile reports.

A real run (a loopback OpenAI-compatible server and a Python subject, two variants, two runs,
an error, a conversation, a judge) is written by the CLI; each test forges one thing in a copy
and runs `scoreboard verify` on it from the outside: a forgery is refused naming the field,
hostile input gets a one-line answer and exit 1, never a traceback or a hang.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from scoreboard.stats.methods import STATS_VERSION
from tests.cli_inprocess import run_cli
from tests.servers.fake_provider import FakeProvider

CASES = [
    {"id": "a", "input": "alpha one", "expected": "alpha", "graders": [{"contains": "alpha"}]},
    {"id": "b", "input": "beta two", "expected": "beta",
     "graders": [{"contains": "beta"}, {"llm-judge": {"rubric": "must say beta"}}]},
    {"id": "c", "input": "gamma three", "expected": "zzz", "graders": [{"contains": "zzz"}]},
    {"id": "d", "input": "delta four", "expected": "delta", "graders": [{"contains": "delta"}]},
    {"id": "conv", "conversation": {"topic": "survey", "notes": "47 birds.\n\nRain on Tuesday."},
     "turns": [{"id": "t1", "question": "How many birds?", "graders": [{"contains": "birds"}]},
               {"id": "t2", "question": "What happened on Tuesday?", "graders": [{"contains": "Tuesday"}]}]},
]

SUBJECT = '''
def answer(input, skill, run):
    text = input if isinstance(input, str) else str(input)
    if "delta" in text and run == 1:
        raise RuntimeError("boom on delta")
    return text
'''


def sb(*args: str, cwd: Path, timeout: float | None = None) -> subprocess.CompletedProcess:
    """The CLI in this process; with a timeout, in a process of its own that may take no longer."""
    env = {**os.environ, "SCOREBOARD_STORE": "none", "FAKE_KEY": "x"}
    if timeout is None:
        return run_cli(args, cwd, env)
    return subprocess.run([sys.executable, "-m", "scoreboard", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> dict:
    """The report of a real run: openai subject on loopback (priced, judged case b) and a python one."""
    root = tmp_path_factory.mktemp("probe10")
    (root / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in CASES), encoding="utf-8")
    (root / "subj.py").write_text(SUBJECT, encoding="utf-8")
    with FakeProvider(latency_ms=0) as server:
        url = server.base_url + "/v1"
        suite = {"name": "p10", "cases": "cases.jsonl", "runs": 2,
                 "prices": {"m1": {"input_per_mtok": 1.0, "output_per_mtok": 2.0}},
                 "budget": {"max_requests": 200}, "fail_under": {"oa": 0.5, "py": 0.9},
                 "judge": {"type": "openai", "base_url": url, "model": "m1", "api_key_env": "FAKE_KEY",
                           "params": {"max_tokens": 100}},
                 "variants": {"oa": {"subject": {"type": "openai", "base_url": url, "model": "m1",
                                                 "api_key_env": "FAKE_KEY", "params": {"max_tokens": 100}}},
                              "py": {"subject": {"type": "python", "function": "subj:answer", "model_free": True}}}}
        (root / "suite.json").write_text(json.dumps(suite), encoding="utf-8")
        done = sb("run", "suite.json", "--no-progress", "--format", "json", cwd=root)
    assert done.returncode == 2 and "gate FAILED: py" in done.stdout, done.stdout + done.stderr
    (path,) = (root / "eval-results" / "p10").glob("*.json")
    report = json.loads(path.read_text(encoding="utf-8"))
    assert any(a["status"] == "error" for a in report["attempts"])
    return report


def verify(report: dict, tmp_path: Path, name: str = "r.json", text: str | None = None,
           timeout: float | None = None) -> subprocess.CompletedProcess:
    (tmp_path / name).write_text(text if text is not None else json.dumps(report), encoding="utf-8")
    return sb("verify", name, cwd=tmp_path, timeout=timeout)


def refused(done: subprocess.CompletedProcess, *where: str) -> None:
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr
    assert "FAILED" in done.stdout, done.stdout + done.stderr
    for w in where:
        assert f"  {w}" in done.stdout, done.stdout


def test_the_untouched_report_verifies(source, tmp_path):
    done = verify(source, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "verified, no mismatch" in done.stdout


# ---- hostile numbers


def test_a_huge_plan_runs_is_refused_at_once_not_counted_to(source, tmp_path):
    """plan.runs = 10**30 walked every planned attempt (cases x variants x 10**30) and never ended."""
    report = copy.deepcopy(source)
    report["plan"]["runs"] = 10 ** 30
    done = verify(report, tmp_path, timeout=60)
    refused(done, "plan.runs")
    assert "1 to 1000" in done.stdout


def test_many_missing_attempts_are_named_up_to_a_bound_then_counted(source, tmp_path):
    report = copy.deepcopy(source)
    report["plan"]["runs"] = 1000
    (tmp_path / "r.json").write_text(json.dumps(report), encoding="utf-8")
    done = sb("verify", "r.json", "--json", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    missing = [m for m in json.loads(done.stdout)["mismatches"] if m["path"] == "attempts"]
    assert len(missing) == 101  # the first 100 named, then how many more
    assert missing[-1]["found"] == f"{6 * 2 * 1000 - 24 - 100} more missing"


@pytest.mark.parametrize("where", ["gate", "plan-threshold", "budget"])
def test_a_whole_number_past_a_doubles_range_is_named_not_an_internal_error(source, tmp_path, where):
    """A gate threshold, a case threshold or a budget of 10**400 (valid JSON: 401 digits) was an
    internal error, OverflowError: int too large to convert to float (exit 2)."""
    report = copy.deepcopy(source)
    if where == "gate":
        report["gates"][0]["threshold"] = 10 ** 400
        path = "gates[0].threshold"
    elif where == "plan-threshold":
        report["plan"]["cases"][0]["threshold"] = 10 ** 400
        path = "plan.cases[0].threshold"
    else:
        report["plan"]["budget"]["max_cost_usd"] = 10 ** 400
        path = "plan.budget.max_cost_usd"
    done = verify(report, tmp_path)
    refused(done, path)
    assert "401 digits" in done.stdout


# ---- the ledger (requests block) against itself and against what the attempts measured


def _hide_judges(r: dict) -> str:
    """The judges' requests taken out of the ledger, which then adds up by itself."""
    judge = r["requests"]["by_role"].pop("judge")
    for key in ("sent", "completed"):
        r["requests"][key] -= judge
    return "requests.sent"


LEDGER_FORGERIES = {
    "tokens-lowered": lambda r: (r["requests"].__setitem__("tokens_spent", 5), "requests.tokens_spent")[1],
    "cost-zeroed": lambda r: (r["requests"].update(cost_spent_usd=0.0, cost_known_usd=0.0),
                              "requests.cost_known_usd")[1],
    "cost-raised": lambda r: (r["requests"].__setitem__("cost_spent_usd", 99.0), "requests.cost_spent_usd")[1],
    "completed-lowered": lambda r: (r["requests"].__setitem__("completed", 3), "requests.completed")[1],
    "sent-raised": lambda r: (r["requests"].update(sent=500, completed=500), "requests.by_role")[1],
    "judges-hidden": _hide_judges,
    "billed-dropped": lambda r: (r["requests"].__setitem__("pending_unresolved", 1), "requests.possibly_billed")[1],
}


@pytest.mark.parametrize("forgery", sorted(LEDGER_FORGERIES))
def test_a_forged_ledger_total_is_refused_naming_the_field(source, tmp_path, forgery):
    """Each of these verified as 'no mismatch': the ledger was read only for the budget and for
    sent >= the attempts' own requests (not their judges', tokens or cost)."""
    report = copy.deepcopy(source)
    assert report["requests"]["by_role"]["judge"] > 0 and report["requests"]["pending_unresolved"] == 0
    where = LEDGER_FORGERIES[forgery](report)
    refused(verify(report, tmp_path), where)


@pytest.mark.parametrize("version", [STATS_VERSION + 1, 10 ** 400], ids=["next", "401-digits"])
def test_a_statistics_version_above_this_builds_is_refused_not_taken_on_its_word(source, tmp_path, version):
    """summary.methods.version = 8 when 7 was this build's (or 10**400) verified as 'no mismatch': a version other than
    this build's has its intervals left unchecked, so a forger raised it and edited them freely."""
    report = copy.deepcopy(source)
    report["summary"]["methods"]["version"] = version
    report["summary"]["variants"]["py"]["pass_rate_ci"]["low"] = 0.6
    done = verify(report, tmp_path)
    refused(done, "summary.methods.version")
    assert "newer than this build's" in done.stdout


def test_a_real_runs_gates_under_a_dry_run_flag_are_refused(source, tmp_path):
    """run.dry_run set on a report with gates verified: a dry run evaluates none (its answers are
    the mock's), so the flag and the gates cannot both be true."""
    report = copy.deepcopy(source)
    report["run"]["dry_run"] = True
    refused(verify(report, tmp_path), "gates")


def test_a_judge_runs_no_suite_can_plan_is_refused(source, tmp_path):
    """plan.judge_runs = 10**30 verified as 'no mismatch' (a suite asks each judgment 1 to 15 times)."""
    report = copy.deepcopy(source)
    report["plan"]["judge_runs"] = 10 ** 30
    done = verify(report, tmp_path)
    refused(done, "plan.judge_runs")
    assert "1 to 15" in done.stdout


def test_a_run_variant_flagged_imported_to_drop_its_failures_is_refused(source, tmp_path):
    """plan.variants[py].imported = true (an import may lack attempts), py's failed and errored
    attempts dropped, the summary and gates recomputed: verified as 'no mismatch', py at 100%."""
    from scoreboard.stats.gates import fail_under_gates, refuse_unchecked
    from scoreboard.stats.summary import summarize

    report = copy.deepcopy(source)
    (i,) = [i for i, v in enumerate(report["plan"]["variants"]) if v["name"] == "py"]
    report["plan"]["variants"][i]["imported"] = True
    report["attempts"] = [a for a in report["attempts"]
                          if not (a["variant"] == "py" and a["status"] in ("failed", "error"))]
    report["summary"] = summarize(report["plan"], report["attempts"], report.get("pairwise"))
    report["gates"] = [refuse_unchecked(fail_under_gates(report["summary"], {g["variant"]: g["threshold"]},
                                                         [g["variant"]]), report.get("instrument"))[0]
                       for g in report["gates"]]
    assert report["summary"]["variants"]["py"]["pass_rate"] == 1.0
    refused(verify(report, tmp_path), f"plan.variants[{i}].imported")


def test_a_version_7_report_is_still_checked_in_full_not_only_its_counts(source, tmp_path):
    """Version 8 changed only the p-values of a comparison of no common case; a version-7 report
    (every report the previous build wrote) keeps every figure checked, so an interval edited in
    one is refused, not waved through as 'computed with another version'."""
    from scoreboard.record.verify_totals import _as_previous_version

    report = copy.deepcopy(source)
    report["summary"]["methods"]["version"] = 7
    for figures in report["summary"]["variants"].values():  # up to version 17 every error was counted here
        figures["field_accuracy_over"]["errored_attempts"] = figures["errors"]
        for cat in figures["by_category"].values():  # up to version 19 a category had its rate alone
            del cat["cases"], cat["ci"]
            cat.pop("units", None)  # (20: with conversations, its units)
        for block in ("pass_at_k", "pass_hat_k"):  # ... and pass@k over conversations said its unit "case"
            for fig in (figures.get(block) or {}).values():
                fig["ci"]["unit"] = "case"
    for comparison in report["summary"]["comparisons"]:  # up to version 18 a conversation's unit was said as cases
        comparison["flags"] = [f.replace("fewer than 30 units (a conversation counts once)", "fewer than 30 cases")
                               for f in comparison["flags"]]
    done = verify(report, tmp_path)
    assert done.returncode == 0 and "not recomputed" not in done.stdout, done.stdout
    report["summary"]["variants"]["py"]["pass_rate_ci"]["low"] = 0.6
    refused(verify(report, tmp_path, name="edited.json"), "summary")
    # what version 7 wrote for a comparison of no common case
    summary = {"methods": {"version": 8}, "comparisons": [
        {"cases": 0, "sign_test_p": None, "mcnemar": {"b01": 0, "b10": 0, "p": None}},
        {"cases": 3, "sign_test_p": 0.25, "mcnemar": {"b01": 0, "b10": 2, "p": 0.5}}]}
    seven = _as_previous_version(summary)
    assert seven["methods"]["version"] == 7 and summary["methods"]["version"] == 8
    assert seven["comparisons"][0]["sign_test_p"] == 1.0 and seven["comparisons"][0]["mcnemar"]["p"] == 1.0
    assert seven["comparisons"][1] == summary["comparisons"][1]
