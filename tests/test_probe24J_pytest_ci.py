"""Probes (24J) of scoreboard in CI as a demanding team wires it: `scoreboard run --junit` fed to a
CI test tab (validated against the JUnit schema Jenkins' xUnit plugin checks, junit-10.xsd, and
read with junitparser), and a failed gate seen in that tab.

- `<testsuites>` carried a `skipped` attribute, which junit-10.xsd does not allow there (only
  name, time, tests, failures, errors): the file failed validation in Jenkins' xUnit plugin.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

SUITE = ("name: ci\ncases: cases.jsonl\ngraders: [exact]\nformats: [json]\n"
         "subject: {type: python, function: 'app:answer'}\n")
#: answers "bad..." wrong, raises on "err..." (an execution error), echoes the rest
APP = ("def answer(text):\n"
       "    if text.startswith('err'):\n"
       "        raise RuntimeError('boom %0A::error::x')\n"
       "    return 'wrong' if text.startswith('bad') else text\n")

#: junit-10.xsd's constraints on the elements scoreboard writes (jenkinsci/xunit-plugin,
#: src/main/resources/org/jenkinsci/plugins/xunit/types/model/xsd/junit-10.xsd), restated here
JUNIT_XSD = """<?xml version="1.0" encoding="UTF-8"?>
<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema">
  <xs:simpleType name="TIME"><xs:restriction base="xs:string">
    <xs:pattern value="(([0-9]{0,3},)*[0-9]{3}|[0-9]{0,3})*(\\.[0-9]*)?"/></xs:restriction></xs:simpleType>
  <xs:complexType name="outcome" mixed="true">
    <xs:attribute name="type" type="xs:string"/><xs:attribute name="message" type="xs:string"/></xs:complexType>
  <xs:element name="failure" type="outcome"/><xs:element name="error" type="outcome"/>
  <xs:element name="skipped" type="outcome"/>
  <xs:element name="system-out" type="xs:string"/><xs:element name="system-err" type="xs:string"/>
  <xs:element name="property"><xs:complexType>
    <xs:attribute name="name" type="xs:string" use="required"/>
    <xs:attribute name="value" type="xs:string" use="required"/></xs:complexType></xs:element>
  <xs:element name="properties"><xs:complexType><xs:sequence>
    <xs:element ref="property" minOccurs="0" maxOccurs="unbounded"/></xs:sequence></xs:complexType></xs:element>
  <xs:element name="testcase"><xs:complexType><xs:sequence><xs:choice minOccurs="0" maxOccurs="unbounded">
      <xs:element ref="skipped"/><xs:element ref="error"/><xs:element ref="failure"/>
      <xs:element ref="system-out"/><xs:element ref="system-err"/></xs:choice></xs:sequence>
    <xs:attribute name="name" type="xs:string" use="required"/><xs:attribute name="time" type="xs:string"/>
    <xs:attribute name="classname" type="xs:string"/><xs:attribute name="group" type="xs:string"/>
  </xs:complexType></xs:element>
  <xs:element name="testsuite"><xs:complexType><xs:choice minOccurs="0" maxOccurs="unbounded">
      <xs:element ref="testsuite"/><xs:element ref="properties"/><xs:element ref="testcase"/>
      <xs:element ref="system-out"/><xs:element ref="system-err"/></xs:choice>
    <xs:attribute name="name" type="xs:string" use="required"/><xs:attribute name="tests" type="xs:string" use="required"/>
    <xs:attribute name="failures" type="xs:string" use="required"/><xs:attribute name="errors" type="xs:string" use="required"/>
    <xs:attribute name="group" type="xs:string"/><xs:attribute name="time" type="TIME"/>
    <xs:attribute name="skipped" type="xs:string"/><xs:attribute name="timestamp" type="xs:string"/>
    <xs:attribute name="hostname" type="xs:string"/><xs:attribute name="id" type="xs:string"/>
    <xs:attribute name="package" type="xs:string"/><xs:attribute name="file" type="xs:string"/>
    <xs:attribute name="log" type="xs:string"/><xs:attribute name="url" type="xs:string"/>
  </xs:complexType></xs:element>
  <xs:element name="testsuites"><xs:complexType><xs:sequence>
      <xs:element ref="testsuite" minOccurs="0" maxOccurs="unbounded"/></xs:sequence>
    <xs:attribute name="name" type="xs:string"/><xs:attribute name="time" type="TIME"/>
    <xs:attribute name="tests" type="xs:string"/><xs:attribute name="failures" type="xs:string"/>
    <xs:attribute name="errors" type="xs:string"/>
  </xs:complexType></xs:element>
</xs:schema>
"""


def make_suite(root: Path, ids: list[str], extra: str = "", record_only: tuple[str, ...] = ()) -> Path:
    evals = root / "evals"
    evals.mkdir(parents=True, exist_ok=True)
    (evals / "app.py").write_text(APP)
    (evals / "cases.jsonl").write_text("".join(
        json.dumps({"id": i, "input": i, **({"graders": [], "replace": True} if i in record_only else {"expected": i})})
        + "\n" for i in ids))
    (evals / "suite.yaml").write_text(SUITE + extra)
    return evals / "suite.yaml"


def run_junit(tmp_path: Path, monkeypatch, *flags: str) -> tuple[int, Path]:
    from scoreboard.cli.main import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SCOREBOARD_STORE", "none")
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    code = main(["run", "evals/suite.yaml", "--no-progress", "--junit", "eval.xml", *flags])
    return code, tmp_path / "eval.xml"


def validate(xml_path: Path) -> None:
    etree = pytest.importorskip("lxml.etree")
    schema = etree.XMLSchema(etree.fromstring(JUNIT_XSD.encode()))
    doc = etree.parse(str(xml_path))
    assert schema.validate(doc), str(schema.error_log)


# ---- JUnit XML as CI consumers read it ----------------------------------------------------------


def test_scoreboards_junit_validates_against_the_junit_schema_and_its_counts_add_up(tmp_path, monkeypatch):
    make_suite(tmp_path, ["ok1", "bad ::error file=x.py,line=1::forged", "bad %25", "err1", "rec"],
               record_only=("rec",))
    code, xml_path = run_junit(tmp_path, monkeypatch)
    assert code == 2  # an execution error
    validate(xml_path)
    root = ET.parse(xml_path).getroot()
    for ts in root.iter("testsuite"):
        cases = list(ts.iter("testcase"))
        outcome = [next((k for k in ("failure", "error", "skipped") if tc.find(k) is not None), "passed")
                   for tc in cases]
        assert int(ts.get("tests")) == len(cases)
        assert [int(ts.get(k)) for k in ("failures", "errors", "skipped")] == [
            outcome.count(k) for k in ("failure", "error", "skipped")], outcome
    for key in ("tests", "failures", "errors"):
        assert int(root.get(key)) == sum(int(ts.get(key)) for ts in root.iter("testsuite"))
    junitparser = pytest.importorskip("junitparser")
    parsed = junitparser.JUnitXml.fromfile(str(xml_path))
    assert (parsed.tests, parsed.failures, parsed.errors, parsed.skipped) == (5, 2, 1, 1)
    results = {case.name: [type(r).__name__ for r in case.result] for ts in parsed for case in ts}
    assert results == {"ok1": [], "bad ::error file=x.py,line=1::forged": ["Failure"], "bad %25": ["Failure"],
                       "err1": ["Error"], "rec": ["Skipped"]}


def test_a_failed_gate_is_a_failing_testcase_where_no_case_failed(tmp_path, monkeypatch):
    """No case fails (both are record-only: skipped), the pass-rate gate fails on n/a: the run
    exits 3, and a CI tab (which shows testcases, not properties) read it all green. The gates
    are now a testsuite of their own, a failed one a <failure>."""
    make_suite(tmp_path, ["r1", "r2"], record_only=("r1", "r2"))
    code, xml_path = run_junit(tmp_path, monkeypatch, "--fail-under", "0.5",
                               "--fail-under-metric", "answer:pass_rate=0.1")
    assert code == 3
    validate(xml_path)
    root = ET.parse(xml_path).getroot()
    (gates,) = [ts for ts in root.iter("testsuite") if ts.get("name") == "ci.gates"]
    cases = {tc.get("name"): tc for tc in gates.iter("testcase")}
    assert set(cases) == {"fail-under [answer]", "fail-under-metric pass_rate [answer]"}, set(cases)
    failure = cases["fail-under [answer]"].find("failure")
    assert failure is not None and failure.get("message") == "answer: pass rate n/a < 50.0%", failure.get("message")
    assert {tc.get("classname") for tc in gates.iter("testcase")} == {"ci.gates"}
    assert (gates.get("tests"), gates.get("failures")) == ("2", "2")
    assert (root.get("tests"), root.get("failures")) == ("4", "2")  # 2 cases and 2 gates
    junitparser = pytest.importorskip("junitparser")
    parsed = junitparser.JUnitXml.fromfile(str(xml_path))
    assert (parsed.failures, parsed.skipped) == (2, 2)


def test_a_case_named_like_a_gate_keeps_its_own_testcase(tmp_path, monkeypatch):
    make_suite(tmp_path, ["fail-under [answer]"])
    code, xml_path = run_junit(tmp_path, monkeypatch, "--fail-under", "0.5")
    assert code == 0
    validate(xml_path)
    pairs = sorted((tc.get("classname"), tc.get("name")) for tc in ET.parse(xml_path).getroot().iter("testcase"))
    assert pairs == [("ci.answer", "fail-under [answer]"), ("ci.gates", "fail-under [answer]")]
