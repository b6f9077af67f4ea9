"""Gates and CI: --fail-under, --baseline/--max-regression (with significance), JUnit,
GITHUB_STEP_SUMMARY, and `scoreboard compare` of two saved reports."""

from __future__ import annotations

import json
import os
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from scipy.stats import binomtest

from tests.cli_inprocess import run_cli

SUBJECT = '''
import os
WRONG = set(filter(None, os.environ.get("WRONG", "").split(",")))

def answer(text):
    return "wrong" if text in WRONG else text
'''


def scoreboard(args: list[str], cwd: Path, **env) -> subprocess.CompletedProcess:
    return run_cli(args, cwd, {**os.environ, **env})


def write_cases(folder: Path, n: int, name: str = "cases.jsonl", changed: set[int] = frozenset()) -> None:
    lines = []
    for i in range(n):
        text = f"q{i}" + ("-edited" if i in changed else "")
        lines.append(json.dumps({"id": f"c{i}", "input": text, "expected": text}))
    (folder / name).write_text("\n".join(lines) + "\n")


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "subj.py").write_text(SUBJECT)
    write_cases(tmp_path, 40)
    return tmp_path


def run(work: Path, out: str, *extra: str, wrong: str = "", **env) -> subprocess.CompletedProcess:
    return scoreboard(["run", "--cases", "cases.jsonl", "--subject", "python:subj:answer", "--name", "g",
                       "--output-dir", out, "--no-progress", "--format", "json", *extra], work, WRONG=wrong, **env)


def report_of(work: Path, out: str) -> tuple[Path, dict]:
    (path,) = sorted((work / out / "g").glob("*.json"))
    return path, json.loads(path.read_text())


def wrong(ids: range) -> str:
    return ",".join(f"q{i}" for i in ids)


def test_baseline_regression_fails_past_the_allowed_drop(work):
    assert run(work, "base", wrong=wrong(range(2))).returncode == 0          # 38/40 = 95%
    base, _ = report_of(work, "base")
    ok = run(work, "small", "--baseline", str(base), "--max-regression", "0.05", wrong=wrong(range(4)))
    assert ok.returncode == 0, ok.stdout + ok.stderr                          # 90%: a 5-point drop is allowed
    _, small = report_of(work, "small")
    (gate,) = small["gates"]
    assert gate["gate"] == "baseline" and gate["passed"] and gate["shared_cases"] == 40
    assert gate["value"] == pytest.approx(-0.05) and gate["baseline_rate"] == pytest.approx(0.95)
    bad = run(work, "big", "--baseline", str(base), "--max-regression", "0.05", wrong=wrong(range(6)))
    assert bad.returncode == 3, bad.stdout + bad.stderr                       # 85%: 10 points down
    _, big = report_of(work, "big")
    (gate,) = big["gates"]
    assert not gate["passed"] and gate["worse"] == 4 and gate["better"] == 0
    assert gate["sign_test_p"] == pytest.approx(binomtest(4, 4, 0.5).pvalue)
    assert "gate FAILED" in bad.stdout


def test_require_significance_fails_only_when_the_paired_test_agrees(work):
    assert run(work, "base").returncode == 0                                  # 40/40
    base, _ = report_of(work, "base")
    # 4 cases worse: a 10-point drop, but 4 discordant pairs give p = 0.125: not significant
    few = run(work, "few", "--baseline", str(base), "--max-regression", "0.05", "--require-significance",
              wrong=wrong(range(4)))
    assert few.returncode == 0, few.stdout
    _, report = report_of(work, "few")
    assert report["gates"][0]["passed"] and not report["gates"][0]["significant"]
    # 12 cases worse: p = 2 * 0.5**12, significant at the default alpha of 0.05
    many = run(work, "many", "--baseline", str(base), "--max-regression", "0.05", "--require-significance",
               wrong=wrong(range(12)))
    assert many.returncode == 3
    _, report = report_of(work, "many")
    assert report["gates"][0]["significant"] and not report["gates"][0]["passed"]
    # a stricter alpha lets the same drop through
    strict = run(work, "strict", "--baseline", str(base), "--max-regression", "0.05", "--require-significance",
                 "--alpha", "0.0001", wrong=wrong(range(12)))
    assert strict.returncode == 0


def test_baseline_compares_only_cases_with_the_same_input(work):
    assert run(work, "base").returncode == 0
    base, _ = report_of(work, "base")
    write_cases(work, 40, changed={0, 1, 2})
    done = run(work, "edited", "--baseline", str(base), "--max-regression", "0.0")
    assert done.returncode == 0, done.stdout
    _, report = report_of(work, "edited")
    gate = report["gates"][0]
    assert gate["shared_cases"] == 37 and gate["inputs_differ"] == ["c0", "c1", "c2"]
    assert "3 cases with changed inputs left out" in gate["description"]


def test_baseline_needs_max_regression_and_a_readable_report(work):
    done = run(work, "x", "--baseline", "nope.json", "--max-regression", "0.1")
    assert done.returncode == 1 and "nope.json" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    (work / "base.json").write_text("{}")
    done = run(work, "x", "--baseline", "base.json")
    assert done.returncode == 1 and "--max-regression" in done.stderr
    assert not (work / "x").exists()


def test_fail_under_per_variant_and_junit_and_step_summary(work):
    summary = work / "step-summary.md"
    summary.write_text("earlier step\n")
    done = scoreboard(["run", "--cases", "cases.jsonl", "--subject", "python:subj:answer", "--vs-subject",
                       "mock", "--name", "g", "--output-dir", "out", "--no-progress", "--format", "json",
                       "--fail-under", "answer=0.9", "--fail-under", "mock=0.5", "--junit", "junit.xml"],
                      work, WRONG=wrong(range(8)), GITHUB_STEP_SUMMARY=str(summary))
    # answer 80% < 90% fails its gate; mock (echo) 100% passes
    assert done.returncode == 3, done.stdout + done.stderr
    _, report = report_of(work, "out")
    gates = {g["variant"]: g["passed"] for g in report["gates"]}
    assert gates == {"answer": False, "mock": True}
    root = ET.parse(work / "junit.xml").getroot()
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    # each variant's cases, and the gates in a testsuite of their own (a CI tab shows the failed one)
    assert set(suites) == {"g.answer", "g.mock", "g.gates"}
    failures = [tc for tc in root.iter("testcase") if tc.find("failure") is not None]
    assert len(failures) == 8 + 1 and len(list(root.iter("testcase"))) == 80 + 2
    assert [tc.get("name") for tc in suites["g.gates"].iter("testcase") if tc.find("failure") is not None] == [
        "fail-under [answer]"]
    text = summary.read_text()
    assert text.startswith("earlier step\n") and "# scoreboard report: g" in text and "## Gates" in text
    # the failures come before the per-case table there (GitHub drops what overflows a step
    # summary, and a very large run's table would push them out); the report file keeps its order
    assert text.index("## Failures (8 attempts") < text.index("## Cases")
    md = scoreboard(["report", str(report_of(work, "out")[0]), "--format", "md"], work)
    assert md.returncode == 0 and md.stdout.index("## Cases") < md.stdout.index("## Failures (8 attempts"), md.stderr


def test_compare_reports_on_shared_cases(work):
    assert run(work, "a", wrong=wrong(range(2))).returncode == 0
    write_cases(work, 40, changed={39})
    assert run(work, "b", wrong=wrong(range(10))).returncode == 0
    a, _ = report_of(work, "a")
    b, _ = report_of(work, "b")
    done = scoreboard(["compare", str(a), str(b), "--json"], work)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["shared_cases"] == 39 and result["inputs_differ"] == ["c39"]
    (comp,) = result["comparisons"]
    assert comp["cases"] == 39 and comp["a_wins"] == 8 and comp["b_wins"] == 0 and comp["ties"] == 31
    assert comp["sign_test_p"] == pytest.approx(binomtest(8, 8, 0.5).pvalue)
    text = scoreboard(["compare", str(a), str(b), "--html", "cmp.html"], work)
    assert "left out, inputs differ: 1 (c39)" in text.stdout
    page = (work / "cmp.html").read_text()
    assert "<script" not in page and "c39" in page
    again = scoreboard(["compare", str(a), str(b), "--html", "cmp.html"], work)
    assert again.returncode == 1 and "refusing to overwrite" in again.stderr
