"""Report fixtures built from plain dicts (the report JSON shape), and one shared headless browser."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Callable

import pytest

from scoreboard.stats.summary import summarize

CHROMIUM = "/usr/bin/chromium"
BROWSER_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost"]
FAILED = ("failed", "error", "interrupted")
CATEGORIES = ("invoice", "receipt", "rental")


def demo_status(i: int, variant: str, run: int) -> str:
    """A mix: always passing, always failing, flaky, an error run; `careful` is better."""
    if variant == "careful":
        return "failed" if (i == 5 and run == 2) else "passed"
    kind = i % 4
    if kind == 1:
        return "failed"
    if kind == 2:
        return "failed" if run == 1 else "passed"
    if kind == 3:
        return "error" if run == 0 else "passed"
    return "passed"


def _attempt(case: dict, variant: str, run: int, status: str, output_text: str | None) -> dict:
    expected = case["expected"]
    if status == "not-run":
        return {"case_id": case["id"], "variant": variant, "run": run, "status": status, "input_hash": "h",
                "output": None, "output_hash": None, "error": "not run",
                "measurements": {k: None for k in ("latency_ms", "input_tokens", "output_tokens", "cost_usd", "requests")},
                "grades": []}
    ok = status == "passed"
    actual_total = expected["total"] if ok else round(expected["total"] + 1, 2)
    actual = {"total": actual_total, "currency": expected["currency"]}
    text = output_text if output_text is not None else json.dumps(actual)
    grades = []
    error = None
    if status == "error":
        error = "timeout after 30000 ms"
        output = None
    else:
        output = {"text": text, "json": actual, "tool_calls": [], "status": None}
        grades.append({"grader": "json-fields", "passed": ok, "score": 1.0 if ok else 0.5,
                       "reason": "2/2 fields match" if ok else f"1/2 fields match; total: expected "
                                                               f"{expected['total']}, got {actual_total}",
                       "fields": [
                           {"path": "total", "passed": ok, "expected": expected["total"], "actual": actual_total, "reason": ""},
                           {"path": "currency", "passed": True, "expected": expected["currency"],
                            "actual": expected["currency"], "reason": ""}]})
    return {"case_id": case["id"], "variant": variant, "run": run, "status": status, "input_hash": "h",
            "output": output, "output_hash": None if output is None else "o", "error": error,
            "measurements": {"latency_ms": 10.0 + run, "input_tokens": 100 if variant == "careful" else None,
                             "output_tokens": None, "cost_usd": None, "requests": 1},
            "grades": grades}


def flaky_of(attempts: list[dict]) -> dict[str, list[str]]:
    """variant -> cases whose judged runs disagree."""
    seen: dict[tuple[str, str], set[bool]] = {}
    for a in attempts:
        if a["status"] in ("passed", "failed", "error"):
            seen.setdefault((a["variant"], a["case_id"]), set()).add(a["status"] == "passed")
    out: dict[str, list[str]] = {}
    for (variant, case_id), outcomes in seen.items():
        if len(outcomes) > 1:
            out.setdefault(variant, []).append(case_id)
    return out


def add_stats(report: dict) -> dict:
    """The statistics keys the summary gains (intervals, stability, comparisons, not measured)."""
    summary = report["summary"]
    flaky = flaky_of(report["attempts"])
    runs: dict[str, dict[str, list[bool]]] = {}
    for a in report["attempts"]:
        runs.setdefault(a["variant"], {}).setdefault(a["case_id"], []).append(a["status"] == "passed")
    for name, s in summary["variants"].items():
        rate = s["pass_rate"] or 0.0
        s["pass_rate_ci"] = {"low": max(0.0, rate - 0.1234), "high": min(1.0, rate + 0.0567), "level": 0.95,
                             "method": "wilson", "unit": "case"}
        per_case = runs.get(name, {})
        s["cases"] = len(per_case)
        s["case_stability"] = {cid: sum(ok) / len(ok) for cid, ok in per_case.items()}
        s["flaky_cases"] = sorted(flaky.get(name, []))
    names = [v["name"] for v in report["plan"]["variants"]]
    if len(names) >= 2:
        summary["comparisons"] = [{
            "a": names[0], "b": names[1], "cases": len(report["plan"]["cases"]), "a_wins": 1, "b_wins": 7,
            "ties": len(report["plan"]["cases"]) - 8, "discordant": 8, "sign_test_p": 0.0703125,
            "mcnemar": {"b01": 7, "b10": 1, "p": 0.0771},
            "mean_difference": -0.2917, "mean_difference_ci": {"low": -0.45, "high": -0.1234, "level": 0.95,
                                                               "method": "paired-bootstrap"},
            "detectable_difference": {"value": 0.25, "power": 0.8, "alpha": 0.05, "difference_sd": 0.4,
                                      "sd_from": "this run", "cases": 12, "test": "paired t"},
            "fields": {"total": {"cases": 12, "a_wins": 0, "b_wins": 6, "ties": 6, "sign_test_p": 0.03125,
                                 "mean_difference": -0.3056, "mean_difference_ci": {"low": -0.5278, "high": -0.1111},
                                 "detectable_difference": {"value": 0.3, "power": 0.8, "alpha": 0.05,
                                                           "difference_sd": 0.45, "sd_from": "this run", "cases": 12,
                                                           "test": "paired t"},
                                 "odd_extra": 0.5},
                       "currency": {"cases": 12, "a_wins": 0, "b_wins": 0, "ties": 12, "sign_test_p": 1.0,
                                    "mean_difference": 0.0, "mean_difference_ci": {"low": 0.0, "high": 0.0}}},
            "flags": ["Only 8 cases differ between the variants; the comparison is weak.", "few-discordant"],
            "headline": f"{names[1]} passes more cases than {names[0]}",
            "differs_in": ["subject.function"]}]
    summary["not_measured"] = [{"what": "cost", "why": "the subject reports no token usage"},
                               {"what": "production accuracy", "why": "every case is synthetic"}]
    return report


def make_report(n_cases: int = 12, variants: tuple[str, ...] = ("basic", "careful"), runs: int = 3, *,
                status_of: Callable[[int, str, int], str] = demo_status,
                output_of: Callable[[int, str, int], str | None] | None = None,
                stats: bool = True, suite: str = "invoices", run_status: str = "completed",
                case_id: Callable[[int], str] | None = None, category_of: Callable[[int], str | None] | None = None,
                synthetic: bool = True) -> dict:
    """A report in the JSON shape, with every summary figure computed by scoreboard.stats."""
    cases = []
    for i in range(n_cases):
        cid = case_id(i) if case_id else f"case-{i:05d}"
        cat = category_of(i) if category_of else CATEGORIES[i % len(CATEGORIES)]
        cases.append({"id": cid, "input": f"Invoice {i}\nTotal due: {100 + i}.50 EUR", "expected":
                      {"total": 100 + i + 0.5, "currency": "EUR"}, "category": cat, "synthetic": synthetic,
                      "input_hash": "h", "graders": [{"json-fields": {"fields": ["total", "currency"]}}]})
    attempts = []
    for i, case in enumerate(cases):
        for v in variants:
            for r in range(runs):
                text = output_of(i, v, r) if output_of else None
                attempts.append(_attempt(case, v, r, status_of(i, v, r), text))
    plan = {"fixture_hash": "f" * 64, "suite_hash": "s" * 64, "cases": cases,
            "variants": [{"name": v, "subject": {"type": "python", "function": f"extractors:{v}"},
                          "skill_path": None, "skill_hash": None, "params": {}} for v in variants],
            "runs": runs}
    summary = summarize(plan, attempts)
    gates = [{"gate": "fail-under", "variant": v, "threshold": 0.8, "value": summary["variants"][v]["pass_rate"],
              "passed": (summary["variants"][v]["pass_rate"] or 0) >= 0.8,
              "description": f"{v}: pass rate vs 80.0%"} for v in variants]
    report = {"schema": "scoreboard.report/v1",
              "run": {"id": "20261130T000000Z", "suite": suite, "status": run_status,
                      "started_at": "2026-11-30T00:00:00Z", "finished_at": "2026-11-30T00:01:00Z",
                      "argv": ["run"], "versions": {"scoreboard": "0.1.0", "python": "3.11"},
                      "synthetic": synthetic, "stop_reason": None},
              "plan": plan, "attempts": attempts, "summary": summary, "gates": gates}
    return add_stats(report) if stats else strip_stats(report)


STAT_KEYS = ("pass_rate_ci", "cases", "case_stability", "flaky_cases")


def strip_stats(report: dict) -> dict:
    """The report as it was before the summary had intervals and comparisons."""
    for s in report["summary"]["variants"].values():
        for key in STAT_KEYS:
            s.pop(key, None)
    report["summary"].pop("comparisons", None)
    report["summary"].pop("not_measured", None)
    return report


XSS_OUTPUT = '<script>window.__xss=1</script><img src=x onerror="window.__xss=2">'


def xss_report() -> dict:
    """Outputs, ids, categories and reasons that would run script if they were ever parsed as HTML."""
    def output_of(i: int, v: str, r: int) -> str | None:
        return XSS_OUTPUT if i == 0 else None

    report = make_report(3, runs=1, output_of=output_of, suite="xss</script><script>window.__xss=4</script>",
                         case_id=lambda i: "case-</script><script>window.__xss=7</script>" if i == 2 else f"case-{i}",
                         category_of=lambda i: '<b onmouseover="window.__xss=5">cat</b>' if i == 1 else "plain")
    report["plan"]["cases"][0]["expected"] = {"total": 100.5, "currency": "</script><script>window.__xss=3</script>"}
    for a in report["attempts"]:
        for g in a["grades"]:
            g["reason"] = '<img src=x onerror="window.__xss=6"> reason'
    return report


@pytest.fixture
def demo_report() -> dict:
    return make_report()


@pytest.fixture(scope="session")
def big_report() -> dict:
    """10,000 cases x 2 variants, one run each (20,000 attempts)."""
    return make_report(10_000, runs=1, status_of=lambda i, v, r: "failed" if (v == "basic" and i % 7 == 3) else "passed")


@pytest.fixture(scope="session")
def big_html(big_report, tmp_path_factory) -> Path:
    from scoreboard.record.html import render_html
    from scoreboard.record.view import view_of

    # Every attempt on the page (a complete view): what the page must carry within its budget.
    path = tmp_path_factory.mktemp("big") / "report.html"
    path.write_text(render_html(view_of(big_report, cap=len(big_report["attempts"]))), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def browser():
    """One headless Chromium per test module (Debian's, never a downloaded one)."""
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} is not installed (CI installs Debian's chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=BROWSER_ARGS)
        try:
            yield b
        finally:
            b.close()


class Opened:
    """A page with every request it made recorded."""

    def __init__(self, page):
        self.page = page
        self.requests: list[str] = []
        self.errors: list[str] = []
        self.console: list[str] = []
        page.on("request", lambda req: self.requests.append(req.url))
        page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        # The page's CSP blocks any load before it becomes a request; the violation shows here.
        page.on("console", lambda msg: self.console.append(msg.text))

    def open(self, path: Path):
        self.page.goto(path.resolve().as_uri())
        self.page.wait_for_selector("html[data-ready=true]", timeout=30_000)
        return self.page


@pytest.fixture
def opened(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(15_000)
    try:
        yield Opened(page)
    finally:
        context.close()
