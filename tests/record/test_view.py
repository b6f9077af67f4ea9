"""The renderers' view: every attempt when the run is small; on a big run, every attempt that did
not pass and an evenly spread sample of passes, with counts from every attempt, and renderings
that say what was left out (checked in a real headless Chromium too)."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

import pytest
from playwright.sync_api import expect

from scoreboard.errors import ConfigError
from scoreboard.record.html import page_data, render_html
from scoreboard.record.junit import render_junit
from scoreboard.record.markdown import render_markdown
from scoreboard.record.render import EXTENSIONS, FORMATS, render
from scoreboard.record.view import ATTEMPT_CAP, CaseTally, build_view, view_of
from tests.record.conftest import FAILED, make_report

CAP = 500
COUNTER = {"passed": "passed", "failed": "failed", "error": "errors", "unassessed": "unassessed",
           "not-run": "not_run", "interrupted": "interrupted"}


def rare_failures(i: int, variant: str, run: int) -> str:
    """105 of 30,000 attempts do not pass: 100 failures and 5 errors, spread over the run."""
    if i % 100 == 7 and run == (1 if variant == "basic" else 2):
        return "failed"
    if i % 1000 == 3 and run == 0 and variant == "basic":
        return "error"
    return "passed"


@pytest.fixture(scope="module")
def big() -> dict:
    """5,000 cases x 2 variants x 3 runs: 30,000 attempts."""
    return make_report(5000, runs=3, status_of=rare_failures)


def head_of(report: dict) -> dict:
    return {k: v for k, v in report.items() if k != "attempts"}


def passes_of(report: dict) -> int:
    return sum(s["passed"] for s in report["summary"]["variants"].values())


@pytest.fixture(scope="module")
def part(big):
    return build_view(head_of(big), (a for a in big["attempts"]), cap=CAP, passes_total=passes_of(big))


@pytest.fixture(scope="module")
def full(big):
    return view_of(big, cap=len(big["attempts"]))


def keys(attempts) -> list[tuple]:
    return [(a.case_id, a.variant, a.run) for a in attempts]


def tallies_by_hand(attempts: list[dict]) -> dict[tuple[str, str], CaseTally]:
    out: dict[tuple[str, str], CaseTally] = {}
    for a in attempts:
        t = out.setdefault((a["case_id"], a["variant"]), CaseTally())
        t.runs += 1
        setattr(t, COUNTER[a["status"]], getattr(t, COUNTER[a["status"]]) + 1)
        latency = a["measurements"]["latency_ms"]
        if latency is not None:
            t.latency_ms_total = latency + (t.latency_ms_total or 0)
        fields = [f for g in a.get("grades") or () for f in g.get("fields") or ()]
        if fields:  # fields graded correct / graded over the runs: the per-document figures
            t.fields_correct = (t.fields_correct or 0) + sum(f["passed"] is True for f in fields)
            t.fields_total = (t.fields_total or 0) + len(fields)
    return out


# ---------------------------------------------------------------------------------- the view


def test_a_small_report_is_complete(demo_report):
    view = view_of(demo_report)
    assert view.complete and view.omitted is None and view.total_attempts == len(demo_report["attempts"])
    assert [a.model_dump(by_alias=True, exclude_unset=True) for a in view.report.attempts] == demo_report["attempts"]
    assert view.tallies == tallies_by_hand(demo_report["attempts"])
    assert ATTEMPT_CAP >= len(demo_report["attempts"])


def test_not_run_attempts_have_no_known_latency():
    report = make_report(2, runs=2, status_of=lambda i, v, r: "not-run" if i == 0 else "passed")
    tally = view_of(report).tallies[("case-00000", "basic")]
    assert (tally.runs, tally.not_run, tally.latency_ms_total) == (2, 2, None)


def test_a_big_run_keeps_what_did_not_pass_and_an_even_sample_of_passes(big, part, full):
    attempts = big["attempts"]
    index = {(a["case_id"], a["variant"], a["run"]): i for i, a in enumerate(attempts)}
    kept = [index[k] for k in keys(part.report.attempts)]
    assert not part.complete and part.total_attempts == 30_000 and len(kept) == CAP
    assert kept == sorted(kept)  # report order
    not_passed = [i for i, a in enumerate(attempts) if a["status"] != "passed"]
    assert len(not_passed) == 105 and set(not_passed) <= set(kept)
    # The 395 passes kept are spread over all 29,895: no gap is more than twice the even step.
    pass_rank = {i: r for r, i in enumerate(i for i, a in enumerate(attempts) if a["status"] == "passed")}
    ranks = [pass_rank[i] for i in kept if i in pass_rank]
    assert len(ranks) == CAP - 105
    step = 29_895 / len(ranks)
    assert ranks[0] < step and ranks[-1] > 29_895 - 2 * step
    assert max(b - a for a, b in zip(ranks, ranks[1:])) <= 2 * step
    shown_cases = sorted({a.case_id for a in part.report.attempts})
    assert part.omitted == {"attempts": 30_000, "kept": CAP, "cap": CAP, "passes_omitted": 29_895 - len(ranks),
                            "not_passed_omitted": 0, "note": part.omitted["note"],
                            "cases": 5000, "cases_shown": len(shown_cases)}
    # A run with more cases than the cap: the typed plan holds the cases of the attempts kept.
    assert [c.id for c in part.report.plan.cases] == shown_cases and part.total_cases == 5000
    assert "JSON report holds every attempt" in part.omitted["note"]
    # Counts come from every attempt, whatever was kept.
    assert part.tallies == full.tallies == tallies_by_hand(attempts)
    assert full.complete and keys(full.report.attempts) == [(a["case_id"], a["variant"], a["run"]) for a in attempts]


def test_the_sample_is_deterministic_and_even_without_the_number_of_passes(big, part):
    again = build_view(head_of(big), iter(big["attempts"]), cap=CAP, passes_total=passes_of(big))
    assert keys(again.report.attempts) == keys(part.report.attempts)
    unknown = build_view(head_of(big), iter(big["attempts"]), cap=CAP)
    assert len(unknown.report.attempts) == CAP and unknown.tallies == part.tallies
    passes = [a for a in unknown.report.attempts if a.status == "passed"]
    runs_seen = {a.case_id for a in passes}
    assert min(runs_seen) < "case-00100" and max(runs_seen) > "case-04900"  # first to last, not a prefix


def test_attempts_read_once_from_a_generator(big):
    source = (a for a in big["attempts"])
    view = build_view(head_of(big), source, cap=CAP, passes_total=passes_of(big))
    assert next(source, None) is None and view.total_attempts == 30_000


def test_more_attempts_that_did_not_pass_than_the_cap(big):
    view = build_view(head_of(big), iter(big["attempts"]), cap=50, passes_total=passes_of(big))
    first = [(a["case_id"], a["variant"], a["run"]) for a in big["attempts"] if a["status"] != "passed"][:50]
    assert keys(view.report.attempts) == first
    assert view.omitted["not_passed_omitted"] == 55 and view.omitted["passes_omitted"] == 29_895
    assert view.failures_total() == 105


def test_a_bad_attempt_is_named_by_its_place_in_the_report(big):
    attempts = [dict(a) for a in big["attempts"]]
    attempts[20_001] = dict(attempts[20_001], status="great")
    with pytest.raises(ConfigError, match=r"field 'attempts\[20001\]\.status'"):
        build_view(head_of(big), attempts, cap=CAP, source="run.json")
    attempts = [dict(a) for a in big["attempts"]]
    bad = next(i for i, a in enumerate(attempts) if i > 15_000 and a["status"] == "failed")
    attempts[bad] = dict(attempts[bad], measurements={**attempts[bad]["measurements"], "latency_ms": "slow"})
    with pytest.raises(ConfigError) as err:
        build_view(head_of(big), attempts, cap=CAP, source="run.json")
    assert f"field 'attempts[{bad}].measurements.latency_ms'" in str(err.value) and "run.json" in str(err.value)


# ---------------------------------------------------------------------------------- renderings


def test_markdown_says_what_was_left_out_and_counts_every_attempt(part, full):
    whole, shown = render_markdown(full), render_markdown(part)
    assert "Attempts shown" not in whole
    (line,) = [ln for ln in shown.splitlines() if ln.startswith("- **Attempts shown**")]
    assert "500 of 30,000" in line and "29,500 passing attempts are left out" in line
    assert "the JSON report holds them all" in line
    # Apart from that line, the same document: the case table and failures come out the same.
    assert shown.replace(line + "\n", "") == whole
    failing = {a.case_id for a in full.report.attempts if a.status in ("failed", "error", "interrupted")}
    assert f"## Failures (105 attempts in {len(failing)} cases; first 3 cases expanded)" in shown
    # Three different cases, never three runs of one.
    expanded = [ln for ln in shown.splitlines() if ln.startswith("### ")]
    assert len(expanded) == 3 and len({ln.split(" · ")[0] for ln in expanded}) == 3


def test_junit_counts_and_times_come_from_every_attempt(part, full):
    whole, shown = render_junit(full), render_junit(part)
    (prop,) = re.findall(r'\n *<property name="attempts_omitted" value="[^"]*" />', shown)[:1] or [None]
    assert prop is not None and "JSON report" in prop
    assert shown.replace(prop, "") == whole
    root = ET.fromstring(shown.encode("utf-8"))
    # every case's testcase, and one per gate in the gates testsuite (probe 24J), which all passed
    gates = sum(int(ts.get("tests")) for ts in root.iter("testsuite") if ts.get("name").endswith(".gates"))
    assert gates == len(full.report.gates)
    assert int(root.get("tests")) == 10_000 + gates and int(root.get("failures")) == 100 and int(root.get("errors")) == 5


def test_junit_of_a_view_missing_failures_still_counts_them(big):
    view = build_view(head_of(big), iter(big["attempts"]), cap=50, passes_total=passes_of(big))
    root = ET.fromstring(render_junit(view).encode("utf-8"))
    assert int(root.get("failures")) == 100 and int(root.get("errors")) == 5
    late = [tc for tc in root.iter("testcase") if tc.get("name") == "case-04907"]
    failure = next(tc.find("failure") for tc in late if tc.find("failure") is not None)
    assert failure.get("message").startswith("1 of 3 runs did not pass")
    assert "see the JSON report" in failure.text


def test_page_data_carries_the_counts_of_every_case(part, big):
    data = page_data(part)
    assert data["omitted"]["shown"] == CAP and data["omitted"]["attempts"] == 30_000
    assert sum(len(c["a"]) for c in data["cases"]) == CAP
    tallies = tallies_by_hand(big["attempts"])
    for c in data["cases"][:200]:
        for vi, name in enumerate(("basic", "careful")):
            t = tallies[(c["id"], name)]
            assert c["n"][vi] == [t.runs, t.passed, t.judged, t.errors, t.not_passed,
                                  t.unassessed, t.not_run, t.interrupted]
    assert "omitted" not in page_data(view_of(make_report(3, runs=1)))


def test_render_by_format_name(part):
    assert FORMATS == ("json", "md", "html", "junit") and set(EXTENSIONS) == set(FORMATS)
    assert EXTENSIONS["junit"] == ".junit.xml"
    assert render(part, "md") == render_markdown(part) and render(part, "junit") == render_junit(part)
    assert render(part, "html") == render_html(part)
    with pytest.raises(ConfigError, match="unknown report format 'pdf'"):
        render(part, "pdf")
    with pytest.raises(ConfigError, match="the engine writes it"):
        render(part, "json")


# ---------------------------------------------------------------------------------- in Chromium


def test_the_page_of_an_incomplete_view_says_so_and_works(opened, part, big, tmp_path):
    path = tmp_path / "part.html"
    path.write_text(render_html(part), encoding="utf-8")
    page = opened.open(path)
    note = page.get_by_test_id("omitted-note")
    expect(note).to_be_visible()
    assert "Showing 500 of 30,000 attempts" in note.inner_text()
    assert "29,500 passing attempts" in note.inner_text() and "JSON report" in note.inner_text()
    assert page.get_by_test_id("case-count").get_attribute("data-count") == "5000"
    # Rows count every run, not just those on the page: case-00000 passed 3 of 3 in each variant.
    row = page.locator('[data-testid="case-row"][data-case-id="case-00000"]')
    assert row.get_by_test_id("case-cell-basic").locator(".num").inner_text() == "3/3"
    row.click()
    assert "of 3 runs shown here" in page.get_by_test_id("case-detail").inner_text()
    page.get_by_test_id("filter-failing").check()
    failing = {a["case_id"] for a in big["attempts"] if a["status"] in FAILED}
    expect(page.get_by_test_id("case-count")).to_have_attribute("data-count", str(len(failing)))
    page.locator('[data-testid="case-row"][data-case-id="case-00007"]').click()
    detail = page.get_by_test_id("case-detail").last
    assert "failed" in detail.get_by_test_id("variant-pane-basic").inner_text()
    assert not opened.errors
    assert all(u.startswith(("file:", "data:", "about:")) for u in opened.requests)


def test_the_page_of_a_complete_view_has_no_such_note(opened, demo_report, tmp_path):
    path = tmp_path / "whole.html"
    path.write_text(render_html(view_of(demo_report)), encoding="utf-8")
    page = opened.open(path)
    assert page.get_by_test_id("omitted-note").count() == 0
    assert page.get_by_test_id("runs-omitted").count() == 0
    data = json.loads(re.search(r'id="data">(.*?)</script>', path.read_text(encoding="utf-8"), re.S).group(1))
    assert all("n" not in c for c in data["cases"])
    assert not opened.errors
