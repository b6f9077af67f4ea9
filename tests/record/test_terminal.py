"""The lines a command prints when a run ends, read from the typed report."""

from __future__ import annotations

import io
from pathlib import Path

from scoreboard.record.io import parse_report
from scoreboard.record.terminal import print_summary
from tests.record.conftest import make_report


def printed(report: dict, paths: dict[str, Path] | None = None) -> list[str]:
    out = io.StringIO()
    print_summary(parse_report(report, "r.json"), paths or {}, out)
    return out.getvalue().splitlines()


def test_variants_comparisons_gates_and_files(demo_report):
    basic = demo_report["summary"]["variants"]["basic"]
    ci = basic["pass_rate_ci"]
    lines = printed(demo_report, {"json": Path("out/r.json"), "md": Path("out/r.md")})
    assert lines[0] == "invoices: completed (20261130T000000Z)"
    judged = basic["passed"] + basic["failed"] + basic["errors"]
    assert lines[1] == (f"  basic: pass rate {basic['pass_rate'] * 100:.1f}% [95% CI {ci['low'] * 100:.1f}%–"
                        f"{ci['high'] * 100:.1f}%] ({basic['passed']}/{judged}, 3 errors)")
    # Three runs per case: pass@3 and pass^3 follow each variant's line.
    assert lines[2].startswith("    pass@3 ") and ", pass^3 " in lines[2] and lines[2].endswith("(by case)")
    # Overall field accuracy with its denominator; the errored attempts are named beside it.
    fo = basic["field_accuracy_overall"]
    graded = basic["field_accuracy_over"]["graded_attempts"]
    assert lines[3].startswith(f"    fields {fo['value'] * 100:.1f}% [") and lines[3].endswith(
        f"({fo['correct']}/{fo['total']} fields over {graded} graded attempts; 3 errored, not graded)")
    assert lines[4].startswith("  careful: pass rate ") and "error" not in lines[4]
    assert lines[5].startswith("    pass@3 ") and lines[6].startswith("    fields ") and "errored" not in lines[6]
    comparison = demo_report["summary"]["comparisons"][0]
    assert lines[7] == f"  {comparison['headline']}"
    detectable = comparison["detectable_difference"]["value"] * 100
    assert lines[8] == f"    could detect differences of {detectable:.0f} points or more (80% power, paired t)"
    gates = [ln for ln in lines if ln.startswith("  gate ")]
    assert gates[0].startswith("  gate FAILED: basic: pass rate vs 80.0%")
    assert gates[1] == "  gate passed: careful: pass rate vs 80.0%"
    assert lines[-2:] == ["  json: out/r.json", "  md: out/r.md"]


def test_counts_other_than_errors_and_a_stop_reason():
    def status(i, v, r):
        return "not-run" if i == 0 else "passed"

    report = make_report(3, variants=("only",), runs=1, status_of=status, stats=False, run_status="stopped")
    report["run"]["stop_reason"] = "budget: max_requests reached"
    report["attempts"][1]["status"] = "unassessed"
    report["summary"]["variants"]["only"].update(passed=1, failed=1, unassessed=1, interrupted=1, pass_rate=0.5)
    report["gates"] = []
    lines = printed(report)
    assert lines[1] == "  only: pass rate 50.0% (1/2, 1 not run, 1 interrupted, 1 unassessed)"
    assert lines[-1] == "  stopped: budget: max_requests reached"


def test_judges_dq_pairwise_and_judge_failures(demo_report):
    usage = {"known_count": 1, "unknown_count": 0, "known_subtotal": 1, "total": 1}
    demo_report["summary"]["judges"] = {
        "variants": {"basic": {"judged": 10, "judge_failures": 2, "usage": {"requests": usage}},
                     "careful": {"judged": 12, "judge_failures": 1}},
        "dq": [{"a": "basic", "b": "careful", "cases": 12, "dq": -0.75, "ci": {"low": -1.0, "high": -0.5}}],
        "pairwise": [{"a": "basic", "b": "careful", "cases": 12, "a_wins": 1, "b_wins": 9, "ties": 2,
                      "position_consistency": 0.5}]}
    lines = printed(demo_report)
    assert "  dQ basic - careful: -0.75 (95% CI -1.00 to -0.50) on 12 cases (blind pointwise quality, 0-3)" in lines
    assert "  pairwise basic vs careful: 1 wins, 9 losses, 2 ties; position consistency 50%" in lines
    assert "  judge failures (not assessed): 3" in lines


def test_an_exact_detectable_difference_says_so_in_the_terminal_and_the_markdown(demo_report):
    from scoreboard.record.markdown import render_markdown
    from scoreboard.record.view import view_of

    figure = demo_report["summary"]["comparisons"][0]["detectable_difference"]
    figure.update(value=0.3355, power_method="exact over every pass/fail outcome", discordance=7 / 15)
    words = "power exact over every pass/fail outcome, the variants disagreeing on 47% of cases"
    assert f"    could detect differences of 34 points or more (80% power, paired t, {words})" in printed(demo_report)
    assert f"this run could detect differences of 34 points or more (80% power, alpha 0.05, paired t, {words}; " \
           in render_markdown(view_of(demo_report))
