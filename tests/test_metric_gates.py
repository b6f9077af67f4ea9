"""--fail-under-metric and a suite's fail_under_metrics: gates on pass@k, pass^k, field
accuracy, recomputed by `verify`; and `compare` of reports run with a negative seed."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.cli_inprocess import run_cli

# Case q<i> answers wrongly on the runs listed in FLAKY (a counter file per case), so pass@k and
# pass^k differ from the pass rate in a known way.
SUBJECT = '''
import json, os
from pathlib import Path

def answer(text):
    flaky = json.loads(os.environ.get("FLAKY", "{}"))
    seen = Path(os.environ["COUNTS"]) / text
    n = int(seen.read_text()) if seen.exists() else 0
    seen.write_text(str(n + 1))
    if n in flaky.get(text, []):
        return json.dumps({"total": 0, "name": "wrong"})
    return json.dumps({"total": 1, "name": text})
'''


def scoreboard(args: list[str], cwd: Path, **env) -> subprocess.CompletedProcess:
    """`python -m scoreboard ARGS` with `env` added, run in this process (tests/cli_inprocess.py)."""
    return run_cli(args, cwd, {**os.environ, **env})


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "subj.py").write_text(SUBJECT)
    lines = [json.dumps({"id": f"c{i}", "input": f"q{i}", "expected": {"total": 1, "name": f"q{i}"},
                         "fields": ["total", "name"]}) for i in range(10)]
    (tmp_path / "cases.jsonl").write_text("\n".join(lines) + "\n")
    return tmp_path


def run(work: Path, out: str, *extra: str, flaky: dict | None = None) -> subprocess.CompletedProcess:
    counts = work / f"counts-{out}"
    counts.mkdir()
    return scoreboard(["run", "--cases", "cases.jsonl", "--subject", "python:subj:answer", "--name", "m",
                       "--output-dir", out, "--no-progress", "--format", "json", "--runs", "3", "--concurrency", "1",
                       *extra], work, FLAKY=json.dumps(flaky or {}), COUNTS=str(counts))


def report_of(work: Path, out: str) -> tuple[Path, dict]:
    (path,) = sorted((work / out / "m").glob("*.json"))
    return path, json.loads(path.read_text())


# Two cases fail once in three runs: pass@3 = 1.0, pass^3 = 0.8, pass rate = 28/30.
FLAKY = {"q0": [1], "q1": [2]}


def test_metric_gates_pass_and_fail_on_the_figures_shown(work):
    done = run(work, "ok", "--fail-under-metric", "pass@3=0.95", "--fail-under-metric", "fields=0.9",
               flaky=FLAKY)
    assert done.returncode == 0, done.stdout + done.stderr
    path, report = report_of(work, "ok")
    gates = {g["metric"]: g for g in report["gates"]}
    assert set(gates) == {"pass@3", "fields"} and all(g["passed"] for g in gates.values())
    assert gates["pass@3"]["value"] == pytest.approx(1.0)
    assert report["summary"]["variants"]["answer"]["pass_hat_k"]["3"]["value"] == pytest.approx(0.8)
    assert scoreboard(["verify", str(path)], work).returncode == 0

    bad = run(work, "bad", "--fail-under-metric", "answer:pass^3=0.9", flaky=FLAKY)
    assert bad.returncode == 3, bad.stdout + bad.stderr
    _, report = report_of(work, "bad")
    (gate,) = report["gates"]
    assert gate["metric"] == "pass^3" and gate["variant"] == "answer" and not gate["passed"]
    assert gate["value"] == pytest.approx(0.8)
    assert "gate FAILED" in bad.stdout and "pass^3" in bad.stdout


def test_field_metric_gate_counts_each_field(work):
    # q0 answers wrongly on all three runs: both fields wrong on 3 of 30 attempts.
    done = run(work, "f", "--fail-under-metric", "field:total=0.95", flaky={"q0": [0, 1, 2]})
    assert done.returncode == 3, done.stdout + done.stderr
    _, report = report_of(work, "f")
    (gate,) = report["gates"]
    assert gate["metric"] == "field:total" and gate["value"] == pytest.approx(0.9) and not gate["passed"]


def test_verify_recomputes_a_metric_gate(work):
    assert run(work, "v", "--fail-under-metric", "pass^3=0.9", flaky=FLAKY).returncode == 3
    path, report = report_of(work, "v")
    report["gates"][0]["passed"] = True
    report["gates"][0]["value"] = 0.95
    tampered = work / "tampered.json"
    tampered.write_text(json.dumps(report))
    done = scoreboard(["verify", str(tampered)], work)
    assert done.returncode != 0 and "gates" in done.stdout + done.stderr


def test_suite_file_metric_gates_and_unknown_names(work):
    (work / "suite.yaml").write_text("name: m\ncases: cases.jsonl\nsubject: python:subj:answer\nruns: 3\n"
                                     "fail_under_metrics: {\"pass^3\": 0.9}\n")
    counts = work / "counts-suite"
    counts.mkdir()
    done = scoreboard(["run", "suite.yaml", "--output-dir", "s", "--no-progress", "--format", "json"], work,
                      FLAKY=json.dumps(FLAKY), COUNTS=str(counts))
    assert done.returncode == 3, done.stdout + done.stderr

    (work / "suite.yaml").write_text("name: m\ncases: cases.jsonl\nsubject: python:subj:answer\n"
                                     "fail_under_metrics: {\"recall\": 0.9}\n")
    bad = scoreboard(["run", "suite.yaml", "--output-dir", "s2", "--no-progress"], work, COUNTS=str(counts))
    assert bad.returncode == 1 and "suite.yaml" in bad.stderr and "recall" in bad.stderr
    assert not (work / "s2").exists()
    for flag in ("pass@3", "pass@3=2", "nosuch:pass@3=0.5"):
        wrong = run(work, f"w{len(flag)}{flag[0]}", "--fail-under-metric", flag)
        assert wrong.returncode == 1 and "flag --fail-under-metric" in wrong.stderr, (flag, wrong.stderr)


def test_compare_reports_run_with_a_negative_seed(work):
    assert run(work, "a", "--seed", "-5", flaky=FLAKY).returncode == 0
    assert run(work, "b", "--seed", "-5").returncode == 0
    (a, _), (b, _) = report_of(work, "a"), report_of(work, "b")
    done = scoreboard(["compare", str(a), str(b), "--json"], work)
    assert done.returncode == 0, done.stderr
    (comp,) = json.loads(done.stdout)["comparisons"]
    assert comp["cases"] == 10 and comp["b_wins"] == 2 and comp["a_wins"] == 0


def test_field_accuracy_states_its_denominator_and_the_errored_attempts(work):
    # q0 raises on every run: 3 errored attempts with no fields, reported beside the figure.
    (work / "subj2.py").write_text(SUBJECT + "\n\ndef raising(text):\n    if text == 'q0':\n"
                                   "        raise RuntimeError('boom')\n    return answer(text)\n")
    counts = work / "counts-e"
    counts.mkdir()
    done = scoreboard(["run", "--cases", "cases.jsonl", "--subject", "python:subj2:raising", "--name", "m",
                       "--output-dir", "e", "--no-progress", "--format", "json,md", "--runs", "3"], work,
                      COUNTS=str(counts))
    assert done.returncode == 2, done.stderr  # execution errors
    assert "fields 100.0%" in done.stdout and "54/54 fields over 27 graded attempts; 3 errored, not graded" in done.stdout
    _, report = report_of(work, "e")
    over = report["summary"]["variants"]["raising"]["field_accuracy_over"]
    assert over == {"graded_attempts": 27, "errored_attempts": 3}
    (md,) = (work / "e" / "m").glob("*.md")
    assert "raising: 54/54 fields over 27 graded attempts; 3 errored, not graded" in md.read_text()


def test_a_floor_above_one_gates_a_derived_total_and_is_refused_on_a_share(work):
    # --fail-under-metric refused every value above 1, while the suite file took any: a derived
    # metric over totals (aggregate: sum) could only be gated from the file. Now both take any
    # finite floor for a metric, and both refuse a share's floor outside 0..1 (90 for 90%).
    counts = work / "counts-total"
    counts.mkdir()
    (work / "plain.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "input": f"q{i}", "expected":
                                                          {"total": 1, "name": f"q{i}"}}) + "\n" for i in range(10)))
    (work / "suite.yaml").write_text(
        "name: m\ncases: plain.jsonl\nsubject: python:subj:answer\n"
        "graders: [{json-fields: {fields: [total, name]}, metric: right}]\n"
        "derived_metrics: {right_total: {expression: right, aggregate: sum}}\n")
    ok = scoreboard(["run", "suite.yaml", "--output-dir", "t1", "--no-progress", "--format", "json",
                     "--fail-under-metric", "right_total=9.5"], work, COUNTS=str(counts))
    assert ok.returncode == 0, ok.stdout + ok.stderr
    (path,) = (work / "t1" / "m").glob("*.json")
    (gate,) = json.loads(path.read_text())["gates"]
    assert (gate["metric"], gate["threshold"], gate["value"], gate["passed"]) == ("right_total", 9.5, 10, True)
    low = scoreboard(["run", "suite.yaml", "--output-dir", "t2", "--no-progress", "--format", "json",
                      "--fail-under-metric", "right_total=10.5"], work, COUNTS=str(counts))
    assert low.returncode == 3, low.stdout + low.stderr
    for flag in ("pass_rate=90", "pass@3=1.5", "fields=-0.1", "right_total=nan", "right_total=inf"):
        bad = scoreboard(["run", "suite.yaml", "--output-dir", "t3", "--no-progress", "--fail-under-metric", flag],
                         work, COUNTS=str(counts))
        assert bad.returncode == 1 and "fail-under-metric" in bad.stderr, (flag, bad.stderr)
        assert len(bad.stderr.strip().splitlines()) == 1 and not (work / "t3").exists(), (flag, bad.stderr)
    (work / "suite.yaml").write_text("name: m\ncases: cases.jsonl\nsubject: python:subj:answer\n"
                                     "fail_under_metrics: {pass_rate: 90}\n")
    bad = scoreboard(["run", "suite.yaml", "--output-dir", "t4", "--no-progress"], work, COUNTS=str(counts))
    assert bad.returncode == 1 and "suite.yaml" in bad.stderr and "between 0 and 1" in bad.stderr, bad.stderr
