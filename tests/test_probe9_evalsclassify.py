"""OpenAI Evals ModelBasedClassify specs without `choice_scores` (fact.yaml, best.yaml,
possible.yaml, rhyming.yaml in openai/evals' registry/modelgraded): OpenAI Evals gives them no score, it only
records which choice the judge picked and reports `counts/<choice>` (evals/elsuite/modelgraded/
classify.py: `score` only `if self.mg.choice_scores`). The import made them classify graders that
passed on the first choice and failed on every other: an invented verdict. They are record-only
now: the choice recorded with the attempt and counted per variant in every rendering, the attempt
not graded, `verify` and `rescore` as for any report."""

from __future__ import annotations

import json
import os
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from tests.cli_inprocess import run_cli
from tests.servers.fake_provider import FakeProvider

ENTRIES = """\
facts.dev.v0:
  class: evals.elsuite.modelgraded.classify:ModelBasedClassify
  args: {samples_jsonl: qa/samples.jsonl, modelgraded_spec: myfact}
scored.dev.v0:
  class: evals.elsuite.modelgraded.classify:ModelBasedClassify
  args: {samples_jsonl: qa/samples.jsonl, modelgraded_spec: graded}
"""
# fact.yaml's shape: five choices and no choice_scores; and the same with scores
SPECS = """\
myfact:
  prompt: "FACT Question: {input}\\nExpert: {ideal}\\nSubmission: {completion}\\nPick (A) subset (B) superset (C) same (D) disagree (E) differ-but-fine"
  choice_strings: ABCDE
  input_outputs: {input: completion}
graded:
  prompt: "GRADED Question: {input}\\nExpert: {ideal}\\nSubmission: {completion}"
  choice_strings: [Right, Wrong]
  choice_scores: {Right: 1.0, Wrong: 0.0}
  input_outputs: {input: completion}
"""
SAMPLES = [{"input": "Capital of France?", "ideal": "Paris"}, {"input": "2+2?", "ideal": "4"},
           {"input": "Sky colour?", "ideal": "blue"}, {"input": "Largest planet?", "ideal": "Jupiter"}]
#: the judge's pick per expert answer (None: a reply that never parses: a judge failure)
FACT_PICKS = {"Paris": "C", "4": "A", "blue": "C", "Jupiter": None}
GRADED_PICKS = {"Paris": "Right", "4": "Wrong", "blue": "Right", "Jupiter": "Wrong"}


def scoreboard(args, cwd, env=None):
    return run_cli(args, cwd, {**os.environ, "SCOREBOARD_STORE": "none", **(env or {})})


def judge_reply(picks_by_spec):
    def reply(req):
        text = json.dumps(req["messages"])
        for marker, picks in picks_by_spec.items():
            if marker in text:
                for ideal, pick in picks.items():
                    if f"Expert: {ideal}\\n" in text:
                        return "no json here" if pick is None else json.dumps({"choice": pick, "explanation": "why"})
        return "an answer"
    return reply


def imported(tmp: Path) -> Path:
    root = tmp / "registry"
    for path, text in (("evals/facts.yaml", ENTRIES), ("modelgraded/mine.yaml", SPECS),
                       ("data/qa/samples.jsonl", "".join(json.dumps(s) + "\n" for s in SAMPLES))):
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    done = scoreboard(["import", "openai-evals", "registry/evals/facts.yaml", "--output", "out"], tmp)
    assert done.returncode == 0, done.stderr
    return tmp / "out"


def run_suite(tmp: Path, out: Path) -> tuple[subprocess.CompletedProcess, dict, Path]:
    suite = yaml.safe_load((out / "suite.yaml").read_text())
    with FakeProvider() as srv:
        srv.set_default("chat", {"reply": judge_reply({"FACT Question": FACT_PICKS, "GRADED Question": GRADED_PICKS})})
        for part in ("subject", "judge"):
            suite[part].update(base_url=srv.base_url + "/v1", api_key_env="PROBE9_KEY")
        suite["variants"] = {"a": {}, "b": {"params": {"temperature": 0.5}}}
        (out / "suite.yaml").write_text(yaml.safe_dump(suite))
        run = scoreboard(["run", "out/suite.yaml", "--output-dir", "res", "--format", "json,md,html"], tmp,
                         {"PROBE9_KEY": "k"})
    assert run.returncode in (0, 3), run.stderr
    (report_path,) = sorted((tmp / "res").glob("*/*.json"))
    return run, json.loads(report_path.read_text()), report_path


def test_import_makes_a_spec_without_choice_scores_record_only(tmp_path):
    out = imported(tmp_path)
    cases = {json.loads(x)["id"]: json.loads(x) for x in (out / "cases.jsonl").read_text().splitlines()}
    fact = cases["facts.dev.v0-1"]["graders"][0]["classify"]
    assert fact["record_only"] is True and fact["label"] == "facts.dev.v0"
    assert "choice_scores" not in fact and fact["choices"] == list("ABCDE")
    scored = cases["scored.dev.v0-1"]["graders"][0]["classify"]
    assert scored["choice_scores"] == {"Right": 1.0, "Wrong": 0.0} and "record_only" not in scored
    note = (out / "conversion-report.md").read_text()
    assert "facts.dev.v0: spec 'myfact' has no choice_scores, so no score" in note
    assert "record_only" in note and "scores 'A' 1" not in note


def test_choices_are_recorded_and_counted_never_a_verdict(tmp_path):
    out = imported(tmp_path)
    run, report, path = run_suite(tmp_path, out)
    attempts = {(a["case_id"], a["variant"]): a for a in report["attempts"]}
    for (cid, variant), a in attempts.items():
        ideal = SAMPLES[int(cid.rsplit("-", 1)[1]) - 1]["ideal"]
        (g,) = a["grades"]
        if cid.startswith("facts."):
            # no score: the attempt is not graded whatever the judge picked (C, A, or nothing)
            assert a["status"] == "not-graded", (cid, a["status"])
            assert g["record_only"] is True and g["passed"] is None and g["score"] is None
            assert g.get("choice") == FACT_PICKS[ideal]
            assert g["label"] == "facts.dev.v0"
        else:  # a spec with choice_scores grades as before
            assert a["status"] == ("passed" if GRADED_PICKS[ideal] == "Right" else "failed"), cid
            assert "record_only" not in g and g["choice"] == GRADED_PICKS[ideal]
            assert g["score"] == (1.0 if GRADED_PICKS[ideal] == "Right" else 0.0)
    for variant in ("a", "b"):
        vs = report["summary"]["variants"][variant]
        assert vs["not_graded"] == 4 and vs["passed"] == 2 and vs["failed"] == 2
        jv = report["summary"]["judges"]["variants"][variant]
        # OpenAI Evals' counts/<choice>, the denominator stated, the judge failure counted apart
        assert jv["choices"] == {"facts.dev.v0": {"counts": {"A": 1, "C": 2}, "no_choice": 1, "attempts": 4}}
        assert jv["judge_failures"] == 1
    terminal = run.stdout
    assert "a: facts.dev.v0 choices: A 1, C 2 of 4 attempts; 1 without a choice" in terminal
    md = path.with_suffix(".md").read_text()
    assert "- **b**, facts.dev.v0: A 1, C 2 of 4 attempts; 1 without a choice" in md
    html = path.with_suffix(".html").read_text()
    assert '"ro":"C"' in html.replace(" ", "")  # the choice travels with the attempt (shown by the browser test)
    junit = scoreboard(["report", str(path), "--format", "junit"], tmp_path)
    assert junit.returncode == 0, junit.stderr
    props = {(suite.get("name"), p.get("name")): p.get("value")
             for suite in ET.fromstring(junit.stdout).iter("testsuite") for p in suite.iter("property")}
    assert props[(f"{report['run']['suite']}.b", "choices_facts.dev.v0")].startswith(
        "A 1, C 2 of 4 attempts; 1 without a choice")
    check = scoreboard(["verify", str(path)], tmp_path)
    assert check.returncode == 0, check.stdout + check.stderr


def test_rescore_keeps_record_only_and_verify_accepts_it(tmp_path):
    out = imported(tmp_path)
    _, _, path = run_suite(tmp_path, out)
    flipped = {k: ("E" if v == "C" else v) for k, v in FACT_PICKS.items()}
    with FakeProvider() as srv:
        srv.set_default("chat", {"reply": judge_reply({"FACT Question": flipped, "GRADED Question": GRADED_PICKS})})
        judge = json.dumps({"type": "openai", "model": "m", "base_url": srv.base_url + "/v1",
                            "api_key_env": "PROBE9_KEY"})
        done = scoreboard(["rescore", str(path), "--allow-judge", "--judge", judge, "--output", "rescored.json"],
                          tmp_path, {"PROBE9_KEY": "k"})
    assert done.returncode in (0, 3), done.stderr
    report = json.loads((tmp_path / "rescored.json").read_text())
    jv = report["summary"]["judges"]["variants"]["a"]
    assert jv["choices"]["facts.dev.v0"] == {"counts": {"A": 1, "E": 2}, "no_choice": 1, "attempts": 4}
    assert report["summary"]["variants"]["a"]["not_graded"] == 4
    check = scoreboard(["verify", "rescored.json"], tmp_path)
    assert check.returncode == 0, check.stdout + check.stderr


def test_verify_refuses_a_judge_grade_marked_record_only_to_hide_a_failure(tmp_path):
    out = imported(tmp_path)
    _, report, path = run_suite(tmp_path, out)
    i, a = next((i, a) for i, a in enumerate(report["attempts"]) if a["status"] == "failed")
    a["grades"][0]["record_only"] = True
    a["status"] = "not-graded"
    forged = tmp_path / "forged.json"
    forged.write_text(json.dumps(report))
    check = scoreboard(["verify", str(forged)], tmp_path)
    assert check.returncode != 0
    assert f"attempts[{i}].grades[0].record_only" in check.stdout + check.stderr


def test_classify_record_only_options():
    from scoreboard.errors import ScoreboardError
    from scoreboard.judges.scaled import ClassifyGrader

    # a user's classify keeps its documented default: the first choice 1, the rest 0
    assert ClassifyGrader.parse_options({"choices": ["Y", "N"]})["choice_scores"] == {"Y": 1.0, "N": 0.0}
    opts = ClassifyGrader.parse_options({"choices": ["Y", "N"], "record_only": True, "label": "x"})
    assert "choice_scores" not in opts and "threshold" not in opts
    for bad, word in (({"record_only": True, "choice_scores": {"Y": 1, "N": 0}}, "choice_scores"),
                      ({"record_only": True, "pass": ["Y"]}, "pass"),
                      ({"record_only": "yes"}, "record_only"), ({"label": "x"}, "label")):
        with pytest.raises(ScoreboardError, match=word):
            ClassifyGrader.parse_options({"choices": ["Y", "N"], **bad})


def test_html_report_shows_the_counts_and_each_recorded_choice(tmp_path):
    chromium = "/usr/bin/chromium"
    if not os.path.exists(chromium):
        pytest.skip(f"{chromium} is not installed (CI installs Debian's chromium)")
    from playwright.sync_api import sync_playwright

    from tests.record.conftest import BROWSER_ARGS

    out = imported(tmp_path)
    _, _, path = run_suite(tmp_path, out)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, headless=True, args=BROWSER_ARGS)
        try:
            page = browser.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(path.with_suffix(".html").resolve().as_uri())
            rows = page.locator("[data-testid=choice-counts] tbody tr")
            assert rows.count() == 2
            assert rows.nth(0).inner_text().split("\t") == ["a", "facts.dev.v0", "A: 1, C: 2", "1", "4"]
            page.locator("text=facts.dev.v0-1").first.click()
            grade = page.locator("[data-testid=grade]").first
            assert grade.locator(".mark").get_attribute("title") == "recorded only: chose C"
            assert "judge chose C (recorded only: no score)" in grade.inner_text()
            assert errors == []
        finally:
            browser.close()


def test_rescore_with_allow_judge_asks_the_judge_the_report_was_graded_by(tmp_path):
    """`rescore --allow-judge` without --judge stopped with "'classify' needs a judge: set
    'judge:' in the suite or --judge SPEC" though the plan records the run's judge; it is now
    that judge (and its judge_runs), and the rescored report verifies: the requests its attempts
    measured were sent by the source's run, whose ledger it keeps (run.rescore.source_requests)."""
    out = imported(tmp_path)
    suite = yaml.safe_load((out / "suite.yaml").read_text())
    with FakeProvider() as srv:
        picks = {"FACT Question": FACT_PICKS, "GRADED Question": GRADED_PICKS}
        srv.set_default("chat", {"reply": judge_reply(picks)})
        for part in ("subject", "judge"):
            suite[part].update(base_url=srv.base_url + "/v1", api_key_env="PROBE9_KEY")
        (out / "suite.yaml").write_text(yaml.safe_dump(suite))
        run = scoreboard(["run", "out/suite.yaml", "--output", "first.json"], tmp_path, {"PROBE9_KEY": "k"})
        assert run.returncode in (0, 3), run.stderr
        flipped = {k: ("E" if v == "C" else v) for k, v in FACT_PICKS.items()}
        srv.set_default("chat", {"reply": judge_reply({**picks, "FACT Question": flipped})})
        done = scoreboard(["rescore", "first.json", "--allow-judge", "--output", "again.json"], tmp_path,
                          {"PROBE9_KEY": "k"})
    assert done.returncode in (0, 3), done.stdout + done.stderr
    report = json.loads((tmp_path / "again.json").read_text())
    (variant,) = report["summary"]["judges"]["variants"].values()
    assert variant["choices"]["facts.dev.v0"]["counts"] == {"A": 1, "E": 2}
    assert report["plan"]["judge"] == json.loads((tmp_path / "first.json").read_text())["plan"]["judge"]
    check = scoreboard(["verify", "again.json"], tmp_path)
    assert check.returncode == 0, check.stdout + check.stderr
