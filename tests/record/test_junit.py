"""JUnit XML: one testsuite per variant, one testcase per case, any failed run fails the case."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from scoreboard.record.junit import render_junit
from scoreboard.record.view import view_of
from tests.record.conftest import make_report


def parse(report: dict) -> ET.Element:
    text = render_junit(view_of(report))
    assert text.startswith('<?xml version="1.0" encoding="UTF-8"?>')
    return ET.fromstring(text.encode("utf-8"))


def case(root: ET.Element, variant: str, case_id: str) -> ET.Element:
    suite = root.find(f"testsuite[@name='invoices.{variant}']")
    found = [tc for tc in suite.findall("testcase") if tc.get("name") == case_id]
    assert len(found) == 1
    return found[0]


def test_one_suite_per_variant_one_case_per_case(demo_report):
    root = parse(demo_report)
    suites = root.findall("testsuite")
    # the variants' suites, then the gates' own (one testcase per gate: a failed gate shows in a CI tab)
    assert [s.get("name") for s in suites] == ["invoices.basic", "invoices.careful", "invoices.gates"]
    gates = suites.pop()
    assert int(gates.get("tests")) == len(gates.findall("testcase")) == len(demo_report["gates"]) > 0
    for s in suites:
        cases = s.findall("testcase")
        assert [c.get("name") for c in cases] == [c["id"] for c in demo_report["plan"]["cases"]]
        assert {c.get("classname") for c in cases} == {s.get("name")}
        assert int(s.get("tests")) == len(cases)
    assert int(root.get("tests")) == 2 * len(demo_report["plan"]["cases"]) + len(demo_report["gates"])


def test_any_failed_run_fails_the_case_with_each_runs_reasons(demo_report):
    root = parse(demo_report)
    assert list(case(root, "basic", "case-00000")) == []  # every run passed
    flaky = case(root, "basic", "case-00002")  # run 1 of 3 failed
    failure = flaky.find("failure")
    assert failure is not None and flaky.find("error") is None
    assert failure.get("message").startswith("1 of 3 runs did not pass: run 1: json-fields: 1/2 fields match")
    assert "run 1 (failed)" in failure.text and "total: expected 102.5, got 103.5" in failure.text
    always = case(root, "basic", "case-00001").find("failure")
    assert always.get("message").startswith("3 of 3 runs did not pass")
    assert all(f"run {r} (failed)" in always.text for r in range(3))
    basic = root.find("testsuite[@name='invoices.basic']")
    assert int(basic.get("failures")) == sum(1 for i in range(12) if i % 4 in (1, 2))


def test_errors_are_error_elements(demo_report):
    root = parse(demo_report)
    tc = case(root, "basic", "case-00003")  # run 0 errored, runs 1 and 2 passed
    error = tc.find("error")
    assert error is not None and tc.find("failure") is None
    assert "timeout after 30000 ms" in error.get("message")
    assert error.get("type") == "error"
    assert int(root.find("testsuite[@name='invoices.basic']").get("errors")) == 3


def test_not_run_is_skipped_and_unassessed_is_not_a_failure():
    def status(i, v, r):
        return "not-run" if i == 0 else "passed"

    report = make_report(2, runs=2, status_of=status)
    report["attempts"][-1]["status"] = "unassessed"
    for a in report["attempts"]:
        if a["case_id"] == "case-00001" and a["variant"] == "careful":
            a["status"] = "unassessed"
            a["grades"] = [dict(a["grades"][0], passed=None)] if a["grades"] else []
    root = parse(report)
    skipped = case(root, "basic", "case-00000").find("skipped")
    assert skipped is not None and skipped.get("message") == "not run"
    assert case(root, "careful", "case-00001").find("skipped").get("message").startswith("not assessed")
    # junit-10.xsd allows no `skipped` on <testsuites>: each <testsuite> counts its own
    assert sum(int(ts.get("skipped")) for ts in root.iter("testsuite")) == 3 and int(root.get("failures")) == 0


def test_everything_is_escaped_and_illegal_characters_are_spelt():
    report = make_report(2, runs=1, suite='s<&>"', case_id=lambda i: f'c<{i}>&"\x00\x1b\ud800',
                         status_of=lambda i, v, r: "failed")
    for a in report["attempts"]:
        a["grades"][0]["reason"] = "bad ]]> </failure> <x/> & \x07 bell \ufffe \U0001F600"
    text = render_junit(view_of(report))
    root = ET.fromstring(text.encode("utf-8"))
    names = [tc.get("name") for tc in root.iter("testcase")]
    assert names[:2] == ['c<0>&"\\x00\\x1b\\ud800', 'c<1>&"\\x00\\x1b\\ud800']  # spelt, never dropped
    assert root.find("testsuite").get("name") == 's<&>".basic'
    failure = next(root.iter("failure"))
    assert "bad ]]> </failure> <x/> & \\x07 bell \\ufffe \U0001F600" in failure.text
    assert "\x07" not in text and "\x00" not in text


def test_time_is_the_known_latency_in_seconds(demo_report):
    tc = case(parse(demo_report), "careful", "case-00000")
    assert tc.get("time") == f"{(10 + 11 + 12) / 1000:.3f}"
