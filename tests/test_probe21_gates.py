"""Gates and CI, round 4: probed from the outside as a team gating merges on an eval would,
through the CLI on real files."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.cli_inprocess import run_cli

SUBJECT = '''
import json

def answer(text):
    if text.startswith("err"):
        raise RuntimeError("boom")
    return json.dumps({"total": 1, "name": text})
'''
FIELDS = [{"path": "total", "type": "integer"}, {"path": "name", "type": "string"}]


def scoreboard(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return run_cli(args, cwd, {**os.environ, "SCOREBOARD_STORE": "none"})


def write_cases(work: Path, inputs: list[str]) -> None:
    lines = [json.dumps({"id": f"c{i}", "input": text, "expected": {"total": 1, "name": text}, "fields": FIELDS})
             for i, text in enumerate(inputs)]
    (work / "cases.jsonl").write_text("\n".join(lines) + "\n")


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "subj.py").write_text(SUBJECT)
    write_cases(tmp_path, ["q0", "q1", "q2"])
    return tmp_path


def run(work: Path, *extra: str) -> subprocess.CompletedProcess:
    return scoreboard(["run", "--cases", "cases.jsonl", "--subject", "python:subj:answer", "--name", "g",
                       "--output-dir", "out", "--no-progress", *extra], work)


def report_of(work: Path) -> tuple[Path, dict]:
    (path,) = (work / "out" / "g").glob("*.json")
    return path, json.loads(path.read_text())


def test_a_field_gate_that_reads_nothing_says_why_everywhere(work):
    # "gate FAILED: answer: field accuracy n/a < 50.0%": every attempt errored, and no rendering said so
    write_cases(work, ["err0", "err1", "err2"])
    done = run(work, "--fail-under-fields", "0.5", "--fail-under-metric", "field:total=0.5", "--junit", "j.xml")
    assert done.returncode == 2, done.stdout + done.stderr  # errors, and a failed gate
    why = "n/a (no attempt of this variant was graded field by field: 3 errored, not graded) < 50.0%"
    assert f"gate FAILED: answer: field accuracy {why}" in done.stdout, done.stdout
    assert f"gate FAILED: answer: accuracy of total {why}" in done.stdout, done.stdout
    path, report = report_of(work)
    assert sorted(g["description"] for g in report["gates"]) == [f"answer: accuracy of total {why}",
                                                                 f"answer: field accuracy {why}"]
    escaped = why.replace("<", "&lt;")
    assert path.with_suffix(".md").read_text().count(escaped) == 2
    # each gate's property, and its testcase in the gates' testsuite (the failure's message and text)
    assert (work / "j.xml").read_text().count(escaped) == 2 * 3
    assert path.with_suffix(".html").read_text().count(why.replace("<", "\\u003c")) == 2
    verified = scoreboard(["verify", str(path)], work)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    # an earlier build's words (n/a alone) for the same figures still verify
    for g in report["gates"]:
        g["description"] = g["description"].split(" n/a (")[0] + " n/a < 50.0%"
    path.write_text(json.dumps(report))
    again = scoreboard(["verify", str(path)], work)
    assert again.returncode == 0, again.stdout + again.stderr


def test_a_field_or_score_gate_a_suite_file_cannot_feed_names_the_file_line_and_key(work):
    # "scoreboard: error: field 'fail_under_metrics': the gate on 'field:tota' ...": no file, no
    # line, not the key; and only the first such gate was said
    (work / "suite.yaml").write_text("name: g\ncases: cases.jsonl\ngraders: [json-fields]\nvariants:\n"
                                     "  - name: a\n    subject: python:subj:answer\nfail_under_metrics:\n"
                                     "  \"field:tota\": 0.5\n  score: 0.5\n")
    done = scoreboard(["run", "suite.yaml", "--output-dir", "out", "--no-progress"], work)
    assert done.returncode == 1, done.stdout + done.stderr
    first, second = done.stderr.strip().splitlines()
    assert first.startswith("scoreboard: error: suite.yaml:8, field 'fail_under_metrics.field:tota': "), first
    assert "did you mean 'total'" in first
    assert second.startswith("scoreboard: error: suite.yaml:9, field 'fail_under_metrics.score': "), second
    assert not (work / "out").exists()
    checked = scoreboard(["validate", "suite.yaml"], work)
    assert checked.returncode == 1 and checked.stderr.strip().splitlines() == [first, second], checked.stderr
    # the flag's gate still names the flag
    flag = scoreboard(["run", "suite.yaml", "--output-dir", "out", "--no-progress",
                       "--fail-under-metric", "field:tota=0.5"], work)
    assert flag.returncode == 1 and "flag --fail-under-metric" in flag.stderr, flag.stderr


def test_verify_recomputes_the_gates_the_plan_records_and_names_one_cut_or_added(work):
    # a report whose gates block was deleted or cut by hand still verified: CI trusts that block
    write_cases(work, ["err0", "q1", "q2", "q3", "q4"])
    lines = (work / "cases.jsonl").read_text().splitlines()
    lines[3:] = [line.replace('"name": "q3"}', '"name": "zz"}').replace('"name": "q4"}', '"name": "zz"}')
                 for line in lines[3:]]
    (work / "cases.jsonl").write_text("\n".join(lines) + "\n")
    done = run(work, "--fail-under", "0.5", "--fail-under-fields", "0.9")
    assert done.returncode == 2, done.stdout + done.stderr  # c0 errored
    # by hand: c1, c2 pass; c3, c4 get name wrong; c0 errored: 2/5 = 40%; fields 6/8 = 75%
    assert "gate FAILED: answer: pass rate 40.0% < 50.0%" in done.stdout
    assert "gate FAILED: answer: field accuracy 75.0% < 90.0%" in done.stdout
    path, report = report_of(work)
    assert report["plan"]["gates"] == {"fail_under": 0.5, "fail_under_metrics": {"fields": 0.9}}
    ok = scoreboard(["verify", str(path)], work)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    for name, edit in (("cut", lambda r: r["gates"].pop(0)), ("emptied", lambda r: r["gates"].clear()),
                       ("deleted", lambda r: r.pop("gates")),
                       ("added", lambda r: r["gates"].append({**r["gates"][0], "gate": "fail-under-metric",
                                                              "metric": "pass_rate"}))):
        changed = json.loads(path.read_text())
        edit(changed)
        (work / f"{name}.json").write_text(json.dumps(changed))
        checked = scoreboard(["verify", f"{name}.json"], work)
        assert checked.returncode == 1, (name, checked.stdout)
        if name == "added":
            assert "a gate the plan's settings do not give" in checked.stdout, checked.stdout
        else:
            assert ("gates: a gate the plan's settings give is missing from the report: expected answer: pass rate "
                    "40.0% < 50.0%") in checked.stdout, (name, checked.stdout)


def test_a_dry_run_records_no_gate_settings(work):
    done = run(work, "--fail-under", "0.5", "--dry-run")
    assert done.returncode == 0, done.stdout + done.stderr
    path, report = report_of(work)
    assert "gates" not in report["plan"] and report["gates"] == []
    assert scoreboard(["verify", str(path)], work).returncode == 0
