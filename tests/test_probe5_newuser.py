"""A new user's own project, following the README section by section (probe 5): each defect met
reproduced as the user meets it, through the CLI where that is where it shows."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from scoreboard.engine.executor import YIELD_S
from scoreboard.testing.messages import describe_attempt
from tests.cli_inprocess import run_cli


def cli(cwd: Path, *args: str, process: bool = False) -> subprocess.CompletedProcess:
    """`scoreboard ARGS` in this process (tests/cli_inprocess.py), what the command says and writes
    being the point; as a process where `process` (a subject that signals its own process)."""
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY",
                                                            "SCOREBOARD_STORE")}
    if not process:
        return run_cli(args, cwd, env)
    return subprocess.run([sys.executable, "-m", "scoreboard", *args], cwd=cwd, env=env, check=False,
                          capture_output=True, text=True, timeout=120)


def jsonl(rows) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


CASES = [{"id": "p1", "input": "I love it", "expected": "positive"},
         {"id": "n1", "input": "This is bad", "expected": "negative"},
         {"id": "u1", "input": "a chair", "expected": "neutral"}]


def test_a_suite_grader_error_is_said_once_not_again_for_every_case_under_a_default_transform(tmp_path):
    # an unknown grader in the suite's `graders:` was said once on its own, and once more for
    # every case (naming the case file's line, which names no grader) when `defaults:` set a
    # transform: the transform made a new spec the "already said" check did not recognise
    (tmp_path / "cases.jsonl").write_text(jsonl(CASES), encoding="utf-8")
    (tmp_path / "suite.yaml").write_text(
        "name: x\ncases: cases.jsonl\nsubject: mock\ngraders: [exactt]\ndefaults:\n  transform: trim\n",
        encoding="utf-8")
    done = cli(tmp_path, "validate", "suite.yaml")
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("scoreboard: error: suite.yaml:4, field 'graders[0]': unknown grader 'exactt'")
    assert "cases.jsonl" not in done.stderr


def test_a_case_own_bad_grader_still_names_the_case_under_a_default_transform(tmp_path):
    rows = [dict(CASES[0], graders=["exactt"]), CASES[1]]
    (tmp_path / "cases.jsonl").write_text(jsonl(rows), encoding="utf-8")
    (tmp_path / "suite.yaml").write_text(
        "name: x\ncases: cases.jsonl\nsubject: mock\ndefaults:\n  transform: trim\n", encoding="utf-8")
    done = cli(tmp_path, "validate", "suite.yaml")
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        line for line in done.stderr.strip().splitlines() if "cases.jsonl:1, case 'p1', field 'graders.0'" in line]


def test_pytest_failure_message_numbers_runs_as_every_other_rendering_does():
    # the report, the terminal (--verbose), JUnit, HTML and the viewer all say "run 0" for the
    # first run; the pytest message said "run 1", a run the report does not have when runs=1
    text = describe_attempt({"variant": "m", "run": 0, "status": "failed", "grades": [],
                             "output": {"text": "x"}})
    assert text.startswith("variant m, run 0: failed")


def test_exact_says_when_only_surrounding_whitespace_differs(tmp_path):
    # a shell script's `echo` ends its answer with a newline: every exact grade failed with
    # `got "positive\n"` and nothing said how to read a program's output trimmed
    (tmp_path / "cases.jsonl").write_text(jsonl(CASES), encoding="utf-8")
    (tmp_path / "label.sh").write_text(
        '#!/bin/sh\ncase "$1" in *love*) echo positive;; *bad*) echo negative;; *) echo other;; esac\n',
        encoding="utf-8")
    (tmp_path / "label.sh").chmod(0o755)
    done = cli(tmp_path, "run", "--cases", "cases.jsonl", "--subject", "command:./label.sh {input}",
               "--verbose", "--no-progress", "--format", "json", "--store", "none")
    assert done.returncode == 0, done.stderr
    out = done.stdout + done.stderr
    assert 'expected "positive", got "positive\\n" (only surrounding whitespace differs' in out
    # a real difference gets no such note
    assert 'expected "neutral", got "other\\n"\n' in out
    # the option it names exists and makes them pass
    (tmp_path / "suite.yaml").write_text(
        "name: trimmed\ncases: cases.jsonl\nsubject: {type: command, argv: ['./label.sh', '{input}'], trim: true}\n",
        encoding="utf-8")
    done = cli(tmp_path, "run", "suite.yaml", "--no-progress", "--format", "json", "--store", "none")
    assert "(2/3)" in done.stdout + done.stderr, done.stdout + done.stderr


def test_ctrl_c_during_a_sync_python_subject_stops_dispatching_at_the_next_attempt(tmp_path):
    # a sync python function (the default, thread: false) runs on the event loop, and the
    # workers never gave the loop a turn between attempts: SIGINT was only seen after every
    # attempt had run (a long run could not be stopped by Ctrl-C, and then said "stopped")
    rows = [{"id": f"c{i}", "input": f"x{i}", "expected": "neutral"} for i in range(30)]
    (tmp_path / "cases.jsonl").write_text(jsonl(rows), encoding="utf-8")
    (tmp_path / "interrupts.py").write_text(
        "import os, subprocess, time\n\n\ndef label(input):\n"
        "    if input == 'x2':\n        subprocess.run(['kill', '-s', 'INT', str(os.getpid())])  # the user's Ctrl-C (from outside)\n"
        f"    time.sleep({YIELD_S * 2})  # longer than the workers' turn interval: a turn after each\n"
        "    return 'neutral'\n", encoding="utf-8")
    done = cli(tmp_path, "run", "--cases", "cases.jsonl", "--subject", "python:interrupts:label",
               "--concurrency", "1", "--no-progress", "--format", "json", "--output", "out.json",
               "--store", "none", process=True)
    assert done.returncode == 2, done.stderr
    report = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    assert report["run"]["status"] == "stopped"
    ran = [a["case_id"] for a in report["attempts"] if a["status"] == "passed"]
    # the loop reads the signal within a turn or two (asyncio's self-pipe), never after the run
    assert ran[:3] == ["c0", "c1", "c2"] and len(ran) < 10, ran
    assert all(a["status"] == "not-run" for a in report["attempts"] if a["case_id"] not in ran)
    assert report["summary"]["variants"]["label"]["not_run"] == 30 - len(ran)


def test_the_github_step_names_the_flag_a_misspelt_args_flag_resembles(tmp_path):
    # `scoreboard run --fail-undr` says "did you mean --fail-under?"; the same flag given to the
    # action's `args` input said only "scoreboard: error: unrecognized arguments"
    (tmp_path / "cases.jsonl").write_text(jsonl(CASES), encoding="utf-8")
    (tmp_path / "suite.yaml").write_text("name: x\ncases: cases.jsonl\nsubject: mock\n", encoding="utf-8")
    outputs = tmp_path / "gh_output"
    outputs.write_text("", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    env.update(GITHUB_OUTPUT=str(outputs), GITHUB_STEP_SUMMARY=str(tmp_path / "summary.md"))
    done = subprocess.run([sys.executable, "-m", "scoreboard.cli.github_action", "suite.yaml", "--args",
                           "--fail-undr 0.9", "--comment", "false"], cwd=tmp_path, env=env, check=False,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "scoreboard run: error: unrecognized arguments: --fail-undr 0.9 (did you mean --fail-under?)"]
    assert "verdict=invalid" in outputs.read_text(encoding="utf-8")
    assert not (tmp_path / "eval-results").exists()


def test_a_run_of_few_cases_says_small_sample_in_words_in_the_terminal_and_markdown(tmp_path):
    # history said "small sample: fewer than 30 cases" of a run's pass rate; the run itself (one
    # variant, so no comparison flag) printed a 30-to-95% interval and nowhere said why it is wide
    (tmp_path / "cases.jsonl").write_text(jsonl(CASES), encoding="utf-8")
    done = cli(tmp_path, "run", "--cases", "cases.jsonl", "--subject", "mock", "--output", "r.json",
               "--format", "json,md", "--no-progress", "--store", "none")
    assert done.returncode == 0, done.stderr
    assert "  small sample: fewer than 30 cases (3 per variant): the intervals are wide\n" in done.stdout
    md = next(tmp_path.glob("r*.md")) if not (tmp_path / "r.md").exists() else tmp_path / "r.md"
    assert "- small sample: fewer than 30 cases (3 per variant): the intervals are wide" in md.read_text("utf-8")


def test_thirty_cases_are_not_called_a_small_sample(tmp_path):
    rows = [{"id": f"c{i}", "input": f"x{i}", "expected": f"x{i}"} for i in range(30)]
    (tmp_path / "cases.jsonl").write_text(jsonl(rows), encoding="utf-8")
    done = cli(tmp_path, "run", "--cases", "cases.jsonl", "--subject", "mock", "--format", "json",
               "--no-progress", "--store", "none")
    assert done.returncode == 0, done.stderr
    assert "small sample" not in done.stdout


def test_a_python_subject_named_by_its_file_gets_the_module_form_back(tmp_path):
    # `python:classify.py:label` (the file, as one types it) said only "No module named
    # 'classify.py'; 'classify' is not a package"
    (tmp_path / "cases.jsonl").write_text(jsonl(CASES), encoding="utf-8")
    (tmp_path / "classify.py").write_text("def label(input):\n    return 'neutral'\n", encoding="utf-8")
    for spec, module in (("python:classify.py:label", "classify"), ("python:./classify.py:label", "classify"),
                         ("python:lib/classify.py:label", "lib.classify")):
        done = cli(tmp_path, "plan", "--cases", "cases.jsonl", "--subject", spec)
        assert done.returncode == 1
        assert f"name the module, not its file: python:{module}:label" in done.stderr, done.stderr


def test_a_suite_without_variants_is_named_in_the_error(tmp_path):
    (tmp_path / "cases.jsonl").write_text(jsonl(CASES), encoding="utf-8")
    (tmp_path / "suite.yaml").write_text("name: x\ncases: cases.jsonl\nvariants: {}\n", encoding="utf-8")
    done = cli(tmp_path, "validate", "suite.yaml")
    assert done.returncode == 1
    assert done.stderr.startswith("scoreboard: error: suite.yaml:3, field 'variants': no variants"), done.stderr
    (tmp_path / "suite.yaml").write_text("name: x\ncases: cases.jsonl\nvariants: {a: {params: {t: 1}}}\n",
                                         encoding="utf-8")
    done = cli(tmp_path, "validate", "suite.yaml")
    assert done.stderr.startswith("scoreboard: error: suite.yaml:3, field 'variants.a.subject': "), done.stderr
    # a flag's error still names the flag, not the suite
    done = cli(tmp_path, "validate", "suite.yaml")
    done = cli(tmp_path, "run", "suite.yaml", "--vs", "x.md")
    assert done.stderr.startswith("scoreboard: error: flag --vs"), done.stderr


def test_a_variant_with_no_judged_case_is_not_called_a_small_sample():
    from types import SimpleNamespace as NS

    from scoreboard.record.figures import small_sample_words

    summary = NS(variants={"a": NS(cases=0)}, comparisons=[])
    assert small_sample_words(summary) is None  # nothing ran: no interval to call wide
    summary = NS(variants={"a": NS(cases=0), "b": NS(cases=4)}, comparisons=[])
    assert small_sample_words(summary) == "small sample: fewer than 30 cases (4 per variant): the intervals are wide"


def test_output_named_as_another_format_is_refused_with_the_json_name_to_give(tmp_path):
    # `--output report.md` ran and wrote report.md.json, report.md.md and report.md.html, with
    # the run id "report.md": --output names the JSON report (the README's FILE.json)
    (tmp_path / "cases.jsonl").write_text(jsonl(CASES), encoding="utf-8")
    for name, fmt in (("report.md", "md"), ("report.html", "html"), ("out/report.junit.xml", "junit")):
        done = cli(tmp_path, "run", "--cases", "cases.jsonl", "--subject", "mock", "--output", name,
                   "--no-progress", "--store", "none")
        assert done.returncode == 1
        stem = name.split(".")[0]
        assert done.stderr.strip() == (
            f"scoreboard: error: flag --output: --output names the JSON report: give {stem}.json "
            f"(the {fmt} rendering is written beside it, as {stem}{ {'md': '.md', 'html': '.html', 'junit': '.junit.xml'}[fmt]})"), done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cases.jsonl"]
    # a name without a report suffix still names the run folder and its report, as documented
    done = cli(tmp_path, "run", "--cases", "cases.jsonl", "--subject", "mock", "--output", "main",
               "--format", "json", "--no-progress", "--store", "none")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "main.json").is_file()


def test_a_csv_given_as_a_case_file_gets_the_two_ways_to_read_it(tmp_path):
    # a spreadsheet given to --cases was "invalid JSON" on every line
    (tmp_path / "cases.csv").write_text("id,input,expected\na,hi,hello\n", encoding="utf-8")
    for args in (("validate", "cases.csv"), ("run", "--cases", "cases.csv", "--subject", "mock", "--store", "none")):
        done = cli(tmp_path, *args)
        assert done.returncode == 1
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1, done.stderr
        assert lines[0].startswith("scoreboard: error: cases.csv: a CSV file is not a case file"), lines[0]
        assert "scoreboard import csv --csv cases.csv" in lines[0] and "{format: inspect, path: cases.csv, fields: {target: COL}}" in lines[0]
