"""A new user walking the README from "Cases" to "Privacy": the mistakes they make on the
command line get a one-line answer from the command they typed, `--help` says what the README
says, and the README's synopses show only combinations the commands take."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

from tests.cli_inprocess import run_cli

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
CASES = [{"id": f"c{i}", "input": f"q{i}", "expected": f"q{i}"} for i in range(2)]


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY",
                                                            "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL")}
    env.update(COLUMNS="200", NO_COLOR="1")
    return run_cli(args, cwd, env)  # in-process: no test here is about the process


def cases_in(folder: Path) -> Path:
    path = folder / "cases.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in CASES), encoding="utf-8")
    return path


def test_a_mistyped_flag_is_named_by_its_command_with_the_flag_it_resembles(tmp_path):
    cases_in(tmp_path)
    proc = cli(tmp_path, "run", "--cases", "cases.jsonl", "--subject", "mock", "--fail-undr", "0.9")
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [
        "scoreboard run: error: unrecognized arguments: --fail-undr (did you mean --fail-under?)"]
    assert not (tmp_path / "eval-results").exists()  # nothing ran, nothing was written
    # a nested command's own flags, and the --flag=value spelling
    proc = cli(tmp_path, "import", "csv", "--csv", "x.csv", "--map", "input=a,expected=b", "--output", "o.jsonl",
               "--feilds", "a")
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [
        "scoreboard import csv: error: unrecognized arguments: --feilds a (did you mean --fields?)"]
    proc = cli(tmp_path, "compare", "a.json", "b.json", "--pairs=x=y")
    assert proc.stderr.splitlines() == [
        "scoreboard compare: error: unrecognized arguments: --pairs=x=y (did you mean --pair?)"]


def test_a_flag_nothing_resembles_is_still_one_line_with_no_guess(tmp_path):
    proc = cli(tmp_path, "plan", "--resume", "somewhere")  # run's flag, which plan does not take
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == ["scoreboard plan: error: unrecognized arguments: --resume"]


def test_run_help_gives_the_grace_default_the_readme_gives(tmp_path):
    assert re.search(r"`--grace S` \(default\s+30\)", README)
    proc = cli(tmp_path, "run", "--help")
    assert proc.returncode == 0
    grace = re.search(r"\n\s+--grace S\s+(.*?)\n\s+--executor NAME", proc.stdout, re.S)
    assert grace and "(default 30)" in " ".join(grace.group(1).split())


def test_import_csv_takes_fields_or_a_grader_as_its_synopsis_shows(tmp_path):
    assert "[--fields document_type,total | --grader exact]" in README
    (tmp_path / "corrections.csv").write_text('case_id,doc_text,corrected_json\nr1,"Total: 3","{""total"": 3}"\n',
                                              encoding="utf-8")
    base = ["import", "csv", "--csv", "corrections.csv", "--map", "input=doc_text,expected=corrected_json,id=case_id"]
    proc = cli(tmp_path, *base, "--fields", "total", "--grader", "exact", "--output", "both.jsonl")
    assert proc.returncode == 1 and len(proc.stderr.splitlines()) == 1
    assert "flag --fields" in proc.stderr and not (tmp_path / "both.jsonl").exists()
    assert cli(tmp_path, *base, "--fields", "total", "--output", "fields.jsonl").returncode == 0
    assert cli(tmp_path, *base, "--grader", "exact", "--output", "exact.jsonl").returncode == 0


def test_verify_exits_1_on_a_mismatch_as_the_exit_code_table_says(tmp_path):
    assert "| 1 | invalid usage or input" in README and "for `verify`, a mismatch |" in README
    cases_in(tmp_path)
    run = cli(tmp_path, "run", "--cases", "cases.jsonl", "--subject", "mock", "--output", "r.json", "--format", "json",
              "--no-progress")
    assert run.returncode == 0, run.stderr
    assert cli(tmp_path, "verify", "r.json").returncode == 0
    report = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    report["attempts"][0]["status"] = "failed"
    (tmp_path / "t.json").write_text(json.dumps(report), encoding="utf-8")
    proc = cli(tmp_path, "verify", "t.json")
    assert proc.returncode == 1
    assert "attempts[0].status" in proc.stdout + proc.stderr


def test_an_existing_junit_file_or_report_is_refused_before_anything_runs(tmp_path):
    """`--junit` and `--output NAME` (no .json: the report is NAME.json) name files the run would
    have to overwrite at its end: refused up front, exit 1, the file kept, nothing run."""
    cases_in(tmp_path)
    (tmp_path / "j.xml").write_text("keep")
    proc = cli(tmp_path, "run", "--cases", "cases.jsonl", "--subject", "mock", "--junit", "j.xml")
    assert proc.returncode == 1 and proc.stderr.splitlines() == [
        "scoreboard: error: j.xml: refusing to overwrite an existing file"], proc.stderr
    assert (tmp_path / "j.xml").read_text() == "keep" and not (tmp_path / "eval-results").exists()
    (tmp_path / "z.txt.json").write_text("keep")
    proc = cli(tmp_path, "run", "--cases", "cases.jsonl", "--subject", "mock", "--output", "z.txt")
    assert proc.returncode == 1 and "z.txt.json: refusing to overwrite an existing file" in proc.stderr, proc.stderr
    assert (tmp_path / "z.txt.json").read_text() == "keep" and not (tmp_path / "z.txt").exists()
    proc = cli(tmp_path, "run", "--cases", "cases.jsonl", "--subject", "mock", "--output", "fresh")
    assert proc.returncode == 0 and (tmp_path / "fresh.json").is_file(), proc.stderr


def test_one_case_is_one_case_in_every_figure_and_in_verify(tmp_path):
    (tmp_path / "cases.jsonl").write_text('{"id": "a", "input": "q", "expected": "q"}\n', encoding="utf-8")
    (tmp_path / "suite.yaml").write_text(
        "name: one\ncases: cases.jsonl\nsubject: mock\noutput_dir: out\nformats: [json, md]\n"
        "graders: [{exact: null, weight: 2, metric: quality}]\n", encoding="utf-8")
    proc = cli(tmp_path, "run", "suite.yaml", "--output", "r.json", "--no-progress")
    assert proc.returncode == 0, proc.stderr
    md = (tmp_path / "r.md").read_text(encoding="utf-8")
    # the score's line and the metric's both say their one case and one attempt (46989db gave
    # the score line its attempts)
    assert "(weighted grade score, mean by case, 1 case, 1 attempt)" in md, md
    assert "metric quality | 100.0% [95% CI 20.7%–100.0%] (mean by case, 1 case, 1 attempt)" in md, md
    assert not re.search(r"\b1 (cases|attempts)\b", md + proc.stdout), md
    proc = cli(tmp_path, "verify", "r.json")
    assert proc.returncode == 0 and "1 attempt," in proc.stdout and not re.search(r"\b1 [a-z ]+s\b", proc.stdout), \
        proc.stdout


def test_a_mistyped_key_of_a_rescore_graders_file_gets_a_suggestion(tmp_path):
    import pytest

    from scoreboard.errors import ConfigError
    from scoreboard.suite.from_report import read_graders_file

    path = tmp_path / "graders.yaml"
    path.write_text("defualt: [exact]\n", encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        read_graders_file(str(path), ["a"])
    assert "unknown field (did you mean 'default'?) (allowed: default, cases)" in str(err.value)
    assert err.value.field == "defualt"
