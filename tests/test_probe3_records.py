"""Honest records, found by probing from outside: a report read by every reader the same way,
a model-free subject's failure costing a known zero, tags that a person can read, `--output -`."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_inprocess import run_cli

SUBJECT = '''
import time

def answer(text):
    if "boom" in text:
        raise RuntimeError("kaboom")
    if "slow" in text:
        time.sleep(0.5)
    return text
'''


def scoreboard(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return run_cli(args, cwd, dict(os.environ))


def one_error_line(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and re.match(r"scoreboard( [a-z]+)*: error:", lines[0]), proc.stderr
    assert "Traceback" not in proc.stderr
    return lines[0]


def write_work(folder: Path) -> Path:
    (folder / "subj.py").write_text(SUBJECT)
    (folder / "cases.jsonl").write_text("".join(
        json.dumps({"id": f"c{i}", "input": text, "expected": text}) + "\n"
        for i, text in enumerate(["q0", "boom", "q2"])))
    (folder / "suite.yaml").write_text(
        "name: s\ncases: cases.jsonl\noutput_dir: out\nvariants:\n"
        "  a:\n    subject: {type: python, function: 'subj:answer', model_free: true}\n")
    return folder


@pytest.fixture
def work(tmp_path: Path) -> Path:
    return write_work(tmp_path)


def run_report(work: Path, *extra: str) -> Path:
    proc = scoreboard(["run", "suite.yaml", "--no-progress", "--format", "json", *extra], work)
    assert proc.returncode in (0, 2), proc.stdout + proc.stderr
    reports = sorted((work / "out" / "s").glob("*.json"))
    assert reports, proc.stdout + proc.stderr
    return reports[-1]


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> dict[str, Path]:
    """The `work` suite run once for the module, as is and with `--store h.sqlite`: a test that only
    reads that run copies its folder (each run is a whole `scoreboard run`)."""
    folders = {}
    for kind, extra in (("plain", ()), ("stored", ("--store", "h.sqlite"))):
        folders[kind] = write_work(tmp_path_factory.mktemp(f"probe3_{kind}"))
        run_report(folders[kind], *extra)
    return folders


def made_report(made: dict[str, Path], work: Path, kind: str = "plain") -> Path:
    """`run_report(work)` (kind "stored": with `--store h.sqlite`), copied from the module's run."""
    shutil.copytree(made[kind] / "out", work / "out")
    for store in made[kind].glob("h.sqlite*"):
        shutil.copy2(store, work / store.name)
    reports = sorted((work / "out" / "s").glob("*.json"))
    assert len(reports) == 1, reports
    return reports[-1]


# -- 2: a model-free subject that fails still ran no model ----------------------------------

def test_a_model_free_python_subject_that_raises_records_a_known_zero(work, made):
    report = json.loads(made_report(made, work).read_text())
    failed = [a for a in report["attempts"] if a["case_id"] == "c1"]
    assert failed and "kaboom" in failed[0]["error"]
    m = failed[0]["measurements"]
    assert (m["input_tokens"], m["output_tokens"], m["cost_usd"], m["requests"]) == (0, 0, 0.0, 0)
    assert isinstance(m["latency_ms"], (int, float))  # as measured
    totals = report["summary"]["variants"]["a"]["measurements"]
    assert totals["cost_usd"]["total"] == 0.0 and totals["requests"]["total"] == 0


def test_a_model_free_subject_cut_by_the_timeout_records_a_known_zero(work):
    (work / "cases.jsonl").write_text(json.dumps({"id": "s", "input": "slow", "expected": "slow"}) + "\n")
    (work / "suite.yaml").write_text(
        "name: s\ncases: cases.jsonl\noutput_dir: out\ntimeout_ms: 50\nvariants:\n"
        "  a:\n    subject: {type: python, function: 'subj:answer', model_free: true, thread: true}\n")
    report = json.loads(run_report(work).read_text())
    m = report["attempts"][0]["measurements"]
    assert report["attempts"][0]["error"], report["attempts"][0]
    assert (m["input_tokens"], m["output_tokens"], m["cost_usd"], m["requests"]) == (0, 0, 0.0, 0)


def test_a_model_free_command_that_exits_nonzero_records_a_known_zero(work):
    (work / "suite.yaml").write_text(
        "name: s\ncases: cases.jsonl\noutput_dir: out\nvariants:\n"
        f"  a:\n    subject: {{type: command, argv: [{json.dumps(sys.executable)}, '-c', 'raise SystemExit(3)'], "
        "model_free: true}\n")
    report = json.loads(run_report(work).read_text())
    for attempt in report["attempts"]:
        m = attempt["measurements"]
        assert "status 3" in attempt["error"], attempt
        assert (m["input_tokens"], m["output_tokens"], m["cost_usd"], m["requests"]) == (0, 0, 0.0, 0)


def test_a_subject_that_may_call_a_model_and_fails_keeps_its_usage_unknown(work):
    (work / "suite.yaml").write_text(
        "name: s\ncases: cases.jsonl\noutput_dir: out\nvariants:\n"
        "  a:\n    subject: {type: python, function: 'subj:answer'}\n")
    report = json.loads(run_report(work).read_text())
    failed = [a for a in report["attempts"] if a["case_id"] == "c1"][0]
    assert failed["measurements"]["cost_usd"] is None and failed["measurements"]["requests"] is None


# -- 1: a report holding a key twice is refused by every reader, as verify refuses it --------

def doubled(report: Path, dest: Path) -> Path:
    """`report` with attempts[1] holding "status" twice: the first says passed, the last its own."""
    text = report.read_text()
    at = text.index('"status"', re.search(r'"case_id":\s*"c1"', text).start())
    dest.write_text(text[:at] + '"status": "passed", ' + text[at:])
    return dest


@pytest.mark.parametrize("command", [
    ["verify", "dup.json"],
    ["compare", "dup.json", "good.json"],
    ["compare", "good.json", "dup.json"],
    ["rescore", "dup.json", "--output", "rescored.json"],
    ["report", "dup.json", "--format", "md", "--output", "dup.md"],
    ["run", "suite.yaml", "--no-progress", "--baseline", "dup.json", "--max-regression", "0.1"],
    ["store", "import", "dup.json", "--store", "h.sqlite"],
])
def test_every_reader_of_a_report_refuses_a_key_held_twice_naming_the_file_and_json_path(work, made, command):
    good = made_report(made, work)
    (work / "good.json").write_bytes(good.read_bytes())
    doubled(good, work / "dup.json")
    (work / "dup.md").write_text("kept")
    before = sorted(p.name for p in (work / "out" / "s").iterdir())
    proc = scoreboard(command, work)
    if command[0] == "store":  # store import says per file what it did not store, then exits 1
        assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
        (line,) = [x for x in (proc.stdout + proc.stderr).splitlines() if "twice" in x]
    else:
        line = one_error_line(proc)
    assert "dup.json" in line and "field 'attempts[1].status'" in line, line
    assert "twice in one object" in line, line
    assert (work / "dup.md").read_text() == "kept" and not (work / "rescored.json").exists()
    assert sorted(p.name for p in (work / "out" / "s").iterdir()) == before  # nothing run, nothing written


def test_a_report_with_a_key_twice_deep_inside_is_refused_where_it_is(work, made):
    report = json.loads(made_report(made, work).read_text())
    report["attempts"][0]["measurements"] = {"latency_ms": 1.0}
    text = json.dumps(report).replace('"measurements": {"latency_ms": 1.0}',
                                      '"measurements": {"latency_ms": 1.0, "latency_ms": 2.0}')
    (work / "deep.json").write_text(text)
    line = one_error_line(scoreboard(["report", "deep.json", "--format", "md", "--output", "x.md"], work))
    assert "field 'attempts[0].measurements.latency_ms'" in line and "'latency_ms' twice" in line, line
    assert not (work / "x.md").exists()



# -- 3: a tag a person can read, refused at the flag otherwise -------------------------------

BAD_TAGS = ["", "   ", "a\nb", "x" * 5000, "\x1b[31mred", "tab\there", "a\u202eb"]


@pytest.mark.parametrize("tag", BAD_TAGS)
def test_run_refuses_a_tag_nobody_can_read_before_anything_runs(work, tag):
    line = one_error_line(scoreboard(["run", "suite.yaml", "--no-progress", "--tag", tag], work))
    assert "argument --tag" in line and "a tag is 1 to 100 characters" in line, line
    assert not (work / "out").exists()


@pytest.mark.parametrize("tag", BAD_TAGS)
def test_store_tag_and_store_import_refuse_a_tag_nobody_can_read(work, made, tag):
    report = made_report(made, work, "stored")
    before = (work / "h.sqlite").read_bytes()
    line = one_error_line(scoreboard(["store", "tag", report.stem, "ok", tag, "--store", "h.sqlite"], work))
    assert "argument TAG" in line and "a tag is 1 to 100 characters" in line, line
    line = one_error_line(scoreboard(["store", "import", str(report), "--tag", tag, "--store", "h.sqlite"], work))
    assert "argument --tag" in line and "a tag is 1 to 100 characters" in line, line
    assert (work / "h.sqlite").read_bytes() == before  # neither the good tag nor anything else was written


def test_the_tag_rule_is_in_help_and_a_readable_tag_is_kept(work):
    for command in (["run", "--help"], ["store", "tag", "--help"], ["store", "import", "--help"]):
        proc = scoreboard(command, work)
        assert "a tag is 1 to 100" in " ".join(proc.stdout.split()), proc.stdout
    run_report(work, "--store", "h.sqlite", "--tag", "nightly ünïcode 🙂")
    proc = scoreboard(["history", "--store", "h.sqlite", "--tag", "nightly ünïcode 🙂", "--json"], work)
    assert proc.returncode == 0 and "nightly" in proc.stdout, proc.stdout + proc.stderr


# -- 4: --output - ----------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["md", "json"])
def test_report_output_dash_is_stdout_not_a_file_named_dash(work, made, fmt):
    report = made_report(made, work)
    proc = scoreboard(["report", str(report), "--format", fmt, "--output", "-"], work)
    assert proc.returncode == 0, proc.stderr
    assert not (work / "-").exists()
    expected = scoreboard(["report", str(report), "--format", fmt], work).stdout
    assert proc.stdout == expected and expected.strip()
    assert "'-' is stdout" in " ".join(scoreboard(["report", "--help"], work).stdout.split())


def test_rescore_output_dash_is_refused_in_one_line_naming_json(work, made):
    report = made_report(made, work)
    line = one_error_line(scoreboard(["rescore", str(report), "--output", "-"], work))
    assert "--output" in line and "--json" in line, line
    assert not (work / "-").exists()
