"""A newcomer's first hour (issue 13): each friction reproduced as the issue reports it, through
the CLI as a user meets it. Budgets that need a bound say which; validate and plan need no API
key; the baseline is checked alike everywhere; the default grader is named; command paths
resolve against the suite file; every error is reported in the project's words, a flag's
error names the flag; the natural first mistakes get the right form back; compare pairs
variants by name; a dry run is marked everywhere; resume counts what it reused; a command can
be model-free; counts agree with their nouns."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

import pytest

from scoreboard.engine.ledger import Budget, Ledger
from scoreboard.errors import BudgetExceeded
from tests.cli_inprocess import run_cli

CASES = [{"id": f"c{i}", "input": f"q{i}", "expected": f"q{i}"} for i in range(3)]


def cli(cwd: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY",
                                                             "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL")}
    full.update(env or {})
    return run_cli(args, cwd, full)  # in-process: no test here is about the process


def jsonl(rows) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


def suite_in(folder: Path, cases=CASES, **settings) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "cases.jsonl").write_text(jsonl(cases), encoding="utf-8")
    path = folder / "suite.json"
    path.write_text(json.dumps({"cases": "cases.jsonl", "output_dir": "out", **settings}), encoding="utf-8")
    return path


def errors_of(proc: subprocess.CompletedProcess) -> list[str]:
    assert proc.returncode == 1, (proc.args, proc.stdout, proc.stderr)
    lines = [line for line in proc.stderr.splitlines() if not line.startswith("scoreboard: warning:")]
    assert lines and all(line.startswith("scoreboard: error: ") for line in lines), proc.stderr
    assert not any("Input should" in line for line in lines), proc.stderr
    return [line[len("scoreboard: error: "):] for line in lines]


# ---- 1. the README's main example -------------------------------------------------------------

PRICED = {"gpt-4o-mini": {"input_per_mtok": 0.15, "output_per_mtok": 0.6},
          "claude-sonnet-4-5": {"input_per_mtok": 3, "output_per_mtok": 15}}


def test_a_cost_budget_without_max_tokens_fails_before_running_and_says_to_set_it(tmp_path):
    suite = suite_in(tmp_path, subject={"type": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "gpt-4o-mini"},
                     prices=PRICED, budget={"max_cost_usd": 2.0})
    for command in (("validate",), ("plan",), ("run", "--dry-run"), ("run",)):
        (line,) = errors_of(cli(tmp_path, *command, str(suite)))
        assert "field 'budget.max_cost_usd'" in line and "params.max_tokens" in line, (command, line)
        assert "no price" not in line  # the price is there: the error no longer blames it
    assert not (tmp_path / "out").exists()


def test_a_cost_budget_on_an_unpriced_model_names_the_model_and_the_prices_table(tmp_path):
    suite = suite_in(tmp_path, prices={"gpt-4o-mini": PRICED["gpt-4o-mini"]}, budget={"max_cost_usd": 2.0},
                     variants={"a": {"subject": {"type": "openai", "base_url": "http://127.0.0.1:9/v1",
                                                 "model": "gpt-4o-mini", "params": {"max_tokens": 64}}},
                               "b": {"subject": {"type": "anthropic", "base_url": "http://127.0.0.1:9",
                                                 "model": "claude-sonnet-4-5"}}})
    (line,) = errors_of(cli(tmp_path, "validate", str(suite)))
    assert "variant 'b'" in line and "'claude-sonnet-4-5' has no price" in line and "prices:" in line
    (line,) = errors_of(cli(tmp_path, "plan", str(suite), "--max-tokens", "1000", "--max-cost", "1"))
    assert line.startswith("flag --max-cost") and "no price" in line


def test_the_ledger_says_why_a_request_cannot_be_bounded():
    ledger = Ledger(Budget(max_cost_usd=1.0))
    with pytest.raises(BudgetExceeded, match="no max_tokens"):
        ledger.reserve(("c", "v", 0), max_tokens=None, max_cost=None, unbounded="no max_tokens: its output is unbounded")
    ledger = Ledger(Budget(max_cost_usd=1.0))
    with pytest.raises(BudgetExceeded, match="no price for its model"):
        ledger.reserve(("c", "v", 0), max_tokens=100, max_cost=None, unbounded="no price for its model")


def test_validate_plan_and_dry_run_need_no_api_key_but_a_real_run_does(tmp_path):
    suite = suite_in(tmp_path, subject={"type": "openai", "model": "gpt-4o-mini"},
                     variants={"a": {}, "b": {"subject": {"type": "anthropic", "model": "claude-sonnet-4-5"}}})
    for command in (("validate",), ("plan",), ("run", "--dry-run", "--no-progress")):
        proc = cli(tmp_path, *command, str(suite))
        assert proc.returncode == 0, (command, proc.stderr)
        warnings = [w for w in proc.stderr.splitlines() if w.startswith("scoreboard: warning:")]
        assert len(warnings) == 2, proc.stderr  # one per variable, naming the variants needing it
        assert "OPENAI_API_KEY is not set" in proc.stderr and "ANTHROPIC_API_KEY is not set" in proc.stderr
        assert "variant 'b'" in proc.stderr and "a real run needs it" in proc.stderr
    lines = errors_of(cli(tmp_path, "run", str(suite)))
    assert any("OPENAI_API_KEY is not set" in line and "variant 'a'" in line for line in lines)
    assert any("ANTHROPIC_API_KEY is not set" in line for line in lines)


def test_base_url_comes_from_the_sdk_variable_when_the_spec_has_none(tmp_path, fake_provider):
    suite = suite_in(tmp_path, subject={"type": "openai", "model": "gpt-4o-mini", "params": {"max_tokens": 16}},
                     prices=PRICED, budget={"max_cost_usd": 1.0}, formats=["json"])
    proc = cli(tmp_path, "run", str(suite), "--no-progress",
               env={"OPENAI_BASE_URL": fake_provider.base_url + "/v1", "OPENAI_API_KEY": "sk-test-placeholder"})
    assert proc.returncode in (0, 3), proc.stderr
    assert len(fake_provider.requests_to("chat")) == 3
    report = json.loads(next((tmp_path / "out").rglob("*.json")).read_text())
    assert report["plan"]["variants"][0]["subject"]["base_url"] == fake_provider.base_url + "/v1"


def test_a_missing_baseline_is_the_same_clear_error_for_validate_plan_dry_run_and_run(tmp_path):
    suite_in(tmp_path / "evals", subject="mock", gates={"baseline": "reports/main.json", "max_regression": 0.05})
    seen = set()
    for command in (("validate",), ("plan",), ("run", "--dry-run"), ("run",)):
        (line,) = errors_of(cli(tmp_path, *command, "evals/suite.json"))
        seen.add(line)
        assert "field 'gates.baseline'" in line and str(tmp_path / "evals" / "reports") in line
        assert "--output evals/reports/main.json" in line
    assert len(seen) == 1
    # once it exists, all four accept it
    first = suite_in(tmp_path / "first", subject="mock")
    assert cli(tmp_path, "run", str(first), "--no-progress", "--output", "evals/reports/main.json").returncode == 0
    for command in (("validate",), ("plan",), ("run", "--dry-run", "--no-progress"), ("run", "--no-progress")):
        proc = cli(tmp_path, *command, "evals/suite.json")
        assert proc.returncode == 0, (command, proc.stderr)


# ---- 2. the default grader is named -----------------------------------------------------------

def test_an_object_expected_with_no_grader_warns_and_the_run_names_its_grader(tmp_path):
    cases = [{"id": f"j{i}", "input": "x", "expected": {"total": i}} for i in range(2)] + \
            [{"id": "t", "input": "x", "expected": "x", "grader": "exact"}]
    suite = suite_in(tmp_path, cases, subject={"type": "mock", "default": {"total": 0}}, formats=["json"])
    proc = cli(tmp_path, "validate", str(tmp_path / "cases.jsonl"))
    assert proc.returncode == 0
    assert "cases.jsonl:1: 2 cases (the first: 'j0') name no grader and expect a JSON object" in proc.stderr
    assert "json-fields" in proc.stderr
    run = cli(tmp_path, "run", str(suite), "--no-progress")
    assert "graders: exact (2 cases: the default, no grader named); exact (1 case)" in run.stdout
    assert "graded by 'exact'" in run.stderr


# ---- 3. command paths resolve against the suite file -----------------------------------------

def _script(path: Path, body: str) -> None:
    path.write_text("#!/bin/sh\n" + body + "\n", encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def test_a_command_subject_runs_in_the_suite_folder_wherever_the_user_stands(tmp_path):
    folder = tmp_path / "evals"
    suite = suite_in(folder, subject="command:./v1.sh {input}", formats=["json"])
    _script(folder / "v1.sh", 'cat data.txt >/dev/null && printf "%s" "$1"')  # a relative read, too
    (folder / "data.txt").write_text("x")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    proc = cli(elsewhere, "run", str(suite), "--no-progress")
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert "pass rate 100.0%" in proc.stdout


def test_a_missing_command_names_the_folder_searched_and_the_variant(tmp_path):
    folder = tmp_path / "evals"
    suite = suite_in(folder, variants={"old": {"subject": "command:./v1.sh {input}"}})
    (line,) = errors_of(cli(tmp_path, "validate", "evals/suite.json"))
    assert "variant 'old'" in line and f"'./v1.sh' not found in {folder}" in line
    assert suite.exists()


def test_a_command_marked_model_free_records_a_known_zero(tmp_path):
    suite = suite_in(tmp_path, subject={"type": "command", "argv": ["echo", "{input}"], "model_free": True},
                     formats=["json"])
    assert cli(tmp_path, "run", str(suite), "--no-progress").returncode == 0
    report = json.loads(next((tmp_path / "out").rglob("*.json")).read_text())
    m = report["attempts"][0]["measurements"]
    assert (m["input_tokens"], m["output_tokens"], m["cost_usd"], m["requests"]) == (0, 0, 0.0, 0)
    cost = report["summary"]["variants"]["echo"]["measurements"]["cost_usd"]
    assert cost["unknown_count"] == 0 and cost["total"] == 0.0
    (line,) = errors_of(cli(tmp_path, "validate", str(suite_in(tmp_path / "b", subject={
        "type": "command", "argv": ["echo"], "model_free": "yes"}))))
    assert "model_free" in line


# ---- 4. every error, in our words, flags named ------------------------------------------------

def test_validate_reports_every_invalid_case_not_only_the_first(tmp_path):
    rows = [{"id": "a", "input": "x", "expectd": 1}, {"id": "b", "input": 3}, {"id": "ok", "input": "x", "expected": "x"},
            {"id": "", "input": "x"}]
    (tmp_path / "c.jsonl").write_text(jsonl(rows) + "{broken\n", encoding="utf-8")
    lines = errors_of(cli(tmp_path, "validate", "c.jsonl"))
    assert lines[0] == "c.jsonl:1, case 'a', field 'expectd': unknown field (did you mean 'expected'?)"
    assert lines[1] == "c.jsonl:2, case 'b', field 'input': must be text (a string) or a list (got 3)"
    assert lines[2] == "c.jsonl:4, case '', field 'id': must not be empty (got '')"
    assert lines[3].startswith("c.jsonl:5: ")
    assert len(lines) == 4


def test_errors_stop_at_the_cap_and_say_so(tmp_path):
    (tmp_path / "c.jsonl").write_text(jsonl({"id": f"c{i}", "input": i} for i in range(30)), encoding="utf-8")
    proc = cli(tmp_path, "validate", "c.jsonl")
    assert proc.returncode == 1
    lines = proc.stderr.splitlines()
    assert len(lines) == 21 and "stopped after 20 errors" in lines[-1]


def test_a_flag_error_names_the_flag_not_the_suite_file(tmp_path):
    suite = suite_in(tmp_path, subject="mock")
    lines = errors_of(cli(tmp_path, "run", str(suite), "--runs", "0", "--concurrency", "0", "--alpha", "2"))
    assert "flag --runs: must be at least 1 (got 0)" in lines
    assert "flag --concurrency: must be at least 1 (got 0)" in lines
    assert "flag --alpha: must be less than 1 (got 2.0)" in lines
    assert not any("suite.json" in line for line in lines)


def test_a_suite_with_several_mistakes_reports_them_all_with_suggestions(tmp_path):
    (tmp_path / "cases.jsonl").write_text(jsonl(CASES), encoding="utf-8")
    (tmp_path / "s.yaml").write_text("cases: cases.jsonl\nsubject: mock\nrunz: 3\nconcurency: 2\n"
                                     "limits: {max_cass: 3}\nformats: [pdf]\n", encoding="utf-8")
    lines = errors_of(cli(tmp_path, "validate", "s.yaml"))
    assert "s.yaml:3, field 'runz': unknown field (did you mean 'runs'?)" in lines
    assert "s.yaml:4, field 'concurency': unknown field (did you mean 'concurrency'?)" in lines
    assert "s.yaml:5, field 'limits.max_cass': unknown field (did you mean 'max_cases'?)" in lines
    assert "s.yaml:6, field 'formats.0': must be one of 'json', 'md', 'html' or 'junit' (got 'pdf')" in lines


def test_variants_are_all_checked(tmp_path):
    suite = suite_in(tmp_path, variants={"a": {"subject": "command:./nope-a {input}"},
                                         "b": {"subject": {"type": "openai", "base_url": "http://127.0.0.1:9/v1",
                                                           "modle": "x"}}})
    lines = errors_of(cli(tmp_path, "validate", str(suite)))
    assert any("variant 'a'" in line and "nope-a" in line for line in lines)
    assert any("variant 'b'" in line and "did you mean 'model'?" in line for line in lines)


# ---- 5. the natural first mistakes -------------------------------------------------------------

def test_a_case_file_given_as_the_suite_says_to_use_cases(tmp_path):
    (tmp_path / "cases.jsonl").write_text(jsonl(CASES), encoding="utf-8")
    (line,) = errors_of(cli(tmp_path, "run", "cases.jsonl"))
    assert "case file (JSONL), not a suite" in line and "scoreboard run --cases cases.jsonl --subject SPEC" in line
    assert "document start" not in line
    (tmp_path / "doc.json").write_text(json.dumps({"cases": CASES}), encoding="utf-8")
    (line,) = errors_of(cli(tmp_path, "run", "doc.json"))
    assert "case document" in line and "--cases doc.json" in line


def test_one_case_object_in_a_json_file_gets_the_document_form(tmp_path):
    (tmp_path / "one.json").write_text(json.dumps(CASES[0]), encoding="utf-8")
    for command in (("validate", "one.json"), ("run", "--cases", "one.json", "--subject", "mock"), ("run", "one.json")):
        (line,) = errors_of(cli(tmp_path, *command))
        assert "one case object" in line, (command, line)
        assert "unknown field" not in line
        if "--cases" in command or command[0] == "validate":
            assert '{"cases": [' in line, line
        else:
            assert "--cases one.json" in line, line


def test_a_case_over_several_lines_in_jsonl_says_why(tmp_path):
    (tmp_path / "c.jsonl").write_text('{"id": "a",\n "input": "x", "expected": "x"}\n', encoding="utf-8")
    lines = errors_of(cli(tmp_path, "validate", "c.jsonl"))
    assert lines[0].startswith("c.jsonl:1: ") and "one whole JSON object on one line" in lines[0]


@pytest.mark.parametrize("spec, hint", [
    ("./v1.sh", "'command:./v1.sh {input}'"),
    ("agent.py", "'python:agent:FUNCTION'"),
    ("gpt-4o-mini", "'openai:gpt-4o-mini'"),
    ("claude-sonnet-4-5", "'anthropic:claude-sonnet-4-5'"),
    ("comand:./v1.sh {input}", "did you mean 'command'?"),
])
def test_a_subject_with_no_kind_gets_the_right_form(tmp_path, spec, hint):
    (tmp_path / "c.jsonl").write_text(jsonl(CASES), encoding="utf-8")
    (line,) = errors_of(cli(tmp_path, "run", "--cases", "c.jsonl", "--subject", spec))
    assert hint in line, line


# ---- 7. compare, dry run, resume, plurals ------------------------------------------------------

def _report(tmp_path: Path, name: str, variant: str, outputs: dict, other: str | None = None) -> Path:
    folder = tmp_path / name
    variants = {variant: {"subject": {"type": "mock", "outputs": outputs}}}
    if other:
        variants[other] = {"subject": "mock"}
    suite = suite_in(folder, variants=variants, formats=["json"])
    out = folder / "r.json"
    assert cli(folder, "run", str(suite), "--no-progress", "--output", str(out)).returncode in (0, 3)
    return out


def test_compare_with_differently_named_variants_exits_1_and_pairs_by_flag(tmp_path):
    old = _report(tmp_path, "a", "old", {"c0": "q0", "c1": "q1", "c2": "nope"}, other="x")
    new = _report(tmp_path, "b", "new", {"c0": "q0", "c1": "q1", "c2": "q2"}, other="y")
    page = tmp_path / "page.html"
    a = cli(tmp_path, "compare", str(old), str(new), "--output", str(page))
    (line,) = errors_of(a)
    assert "nothing compared" in line and "--pair old=new" in line
    assert not page.exists()
    both = _report(tmp_path, "c", "both", {})
    paired = cli(tmp_path, "compare", str(old), str(new), "--pair", "old=new", "--json")
    assert paired.returncode == 0, paired.stderr
    (comp,) = json.loads(paired.stdout)["comparisons"]
    assert (comp["a"], comp["b"], comp["cases"], comp["b_wins"]) == ("old", "new", 3, 1)
    (line,) = errors_of(cli(tmp_path, "compare", str(old), str(both), "--pair", "old=bothh"))
    assert line.startswith("flag --pair") and "did you mean 'both'?" in line


def test_a_dry_run_is_marked_in_every_output_and_skips_its_gates(tmp_path):
    suite = suite_in(tmp_path, subject={"type": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m"},
                     fail_under=1.0, formats=["json", "md", "html", "junit"])
    proc = cli(tmp_path, "run", str(suite), "--dry-run", "--no-progress")
    assert proc.returncode == 0, proc.stderr  # the mock echoes: exact would pass; the gate would too,
    assert "DRY RUN (mock subject)" in proc.stdout and "gates skipped" in proc.stdout
    folder = next(p for p in (tmp_path / "out").rglob("*.json"))
    report = json.loads(folder.read_text())
    assert report["run"]["dry_run"] is True and report["gates"] == []
    md = folder.with_suffix(".md").read_text()
    assert "DRY RUN (mock subject)" in md.split("\n## ")[0]
    html = folder.with_suffix(".html").read_text()
    assert "<title>DRY RUN (mock subject): scoreboard report" in html
    junit = folder.with_name(folder.stem + ".junit.xml").read_text()
    assert 'name="DRY RUN (mock subject)' in junit and 'name="dry_run"' in junit
    verify = cli(tmp_path, "verify", str(folder))
    assert verify.returncode == 0, verify.stdout + verify.stderr


def test_a_failing_gate_does_not_fail_a_dry_run(tmp_path):
    suite = suite_in(tmp_path, subject={"type": "mock", "default": "wrong"}, fail_under=0.9, formats=["json"])
    assert cli(tmp_path, "run", str(suite), "--no-progress").returncode == 3
    assert cli(tmp_path, "run", str(suite), "--no-progress", "--dry-run").returncode == 0


def test_resume_says_how_many_attempts_it_reused(tmp_path, fake_provider):
    cases = [{"id": f"c{i}", "input": f"q{i}", "expected": "hi"} for i in range(5)]
    fake_provider.set_default("chat", {"reply": "hi"})
    suite = suite_in(tmp_path, cases, subject={"type": "openai", "base_url": fake_provider.base_url + "/v1",
                                               "model": "m", "retries": {"attempts": 1}},
                     concurrency=1, budget={"max_requests": 2}, formats=["json"])
    first = cli(tmp_path, "run", str(suite), "--no-progress")
    assert first.returncode == 2, first.stderr
    folder = next(p for p in (tmp_path / "out").rglob("*") if p.is_dir() and (p / "run.json").exists())
    resumed = cli(tmp_path, "run", "--resume", str(folder), "--no-progress")
    assert "resumed: 2 attempts reused from the run's log (not run again)" in resumed.stdout


def test_counts_agree_with_their_nouns(tmp_path):
    suite = suite_in(tmp_path, [CASES[0]], subject="mock", formats=["json"])
    plan = cli(tmp_path, "plan", str(suite))
    assert "1 case (split" in plan.stdout and "1 variant x 1 run = 1 attempt" in plan.stdout
    validate = cli(tmp_path, "validate", str(suite))
    assert "1 case, 1 variant (mock), 1 run" in validate.stdout
    run = cli(tmp_path, "run", str(suite), "--no-progress")
    assert "graders: exact (1 case: the default" in run.stdout
    for text in (plan.stdout, validate.stdout, run.stdout):
        assert "(s)" not in text and " 1 cases" not in text and " 1 runs" not in text


# ---- 8. the recorded envelope ------------------------------------------------------------------

def _recorded_run(tmp_path: Path, records: list[dict], cases: list[dict]) -> dict:
    (tmp_path / "out.jsonl").write_text(jsonl(records), encoding="utf-8")
    suite = suite_in(tmp_path, cases, subject="recorded:out.jsonl", formats=["json"])
    cli(tmp_path, "run", str(suite), "--no-progress")
    return json.loads(next((tmp_path / "out").rglob("*.json")).read_text())


def test_an_explicit_json_output_is_never_taken_for_the_envelope(tmp_path):
    report = _recorded_run(tmp_path, [{"case_id": "s", "json": {"status": "done"}}],
                           [{"id": "s", "input": "x", "expected": {"status": "done"}, "grader": {"json-fields": ["status"]}}])
    (a,) = report["attempts"]
    assert a["status"] == "passed", a
    assert a["output"]["json"] == {"status": "done"} and a["output"]["status"] is None


def test_an_output_object_is_the_output_itself(tmp_path):
    report = _recorded_run(tmp_path, [{"case_id": "s", "output": {"status": "done", "text": "all good"}}],
                           [{"id": "s", "input": "x", "expected": {"status": "done", "text": "all good"}}])
    (a,) = report["attempts"]
    assert a["output"]["json"] == {"status": "done", "text": "all good"} and a["status"] == "passed"
    assert a["output"]["text"] != "all good"


def test_a_report_shaped_output_and_record_fields_still_work(tmp_path):
    envelope = {"text": "hello", "json": None, "tool_calls": [{"name": "search", "args": {}}], "status": "stop"}
    report = _recorded_run(tmp_path, [{"case_id": "a", "output": envelope},
                                      {"case_id": "b", "text": "hi", "status": "done",
                                       "tool_calls": [{"name": "x", "args": {}}]}],
                           [{"id": "a", "input": "x", "expected": "hello"}, {"id": "b", "input": "x", "expected": "hi"}])
    a, b = report["attempts"]
    assert a["output"]["text"] == "hello" and a["output"]["tool_calls"][0]["name"] == "search" and a["status"] == "passed"
    assert b["output"]["text"] == "hi" and b["output"]["status"] == "done" and b["status"] == "passed"


def test_output_beside_text_or_json_is_refused_as_ambiguous(tmp_path):
    (tmp_path / "out.jsonl").write_text(jsonl([{"case_id": "c0", "output": "x", "json": {"a": 1}}]), encoding="utf-8")
    suite = suite_in(tmp_path, subject="recorded:out.jsonl")
    (line,) = errors_of(cli(tmp_path, "validate", str(suite)))
    assert "give the output once" in line and "field 'json'" in line
