"""Model-graded evaluation from the outside (probe 12): a loopback judge (a FakeProvider) whose
answers are scripted per request, the reports it gives read back by `verify`, `rescore` and
the renderings. Earlier probes (test_probe2/3_judges, tests/judges/) are not repeated here."""

from __future__ import annotations

import copy
import itertools
import json
from pathlib import Path

import pytest

from scoreboard.engine.pipeline import RunOptions, run
from scoreboard.engine.reruns import rescore
from scoreboard.record.figures import judge_usage_words
from scoreboard.record.verify import verify_report
from scoreboard.stats.summary import summarize
from scoreboard.suite.load import load_suite
from tests.cli_inprocess import run_cli
from tests.servers.fake_provider import FakeProvider

CASES = [{"id": f"q{i}", "input": f"What is {i}+{i}?", "expected": str(2 * i)} for i in range(4)]


@pytest.fixture
def judge_srv():
    with FakeProvider() as srv:
        yield srv


@pytest.fixture(autouse=True)
def _no_store(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SCOREBOARD_STORE", "none")


def openai(srv: FakeProvider, model: str) -> dict:
    return {"type": "openai", "base_url": srv.base_url + "/v1", "model": model}


def run_suite(tmp_path: Path, judge: FakeProvider, **settings) -> dict:
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in CASES), encoding="utf-8")
    suite = {"name": "probe", "cases": "cases.jsonl", "output_dir": str(tmp_path / "out"), "formats": ["json"],
             "concurrency": 1, "timeout_ms": 10_000, "judge": openai(judge, "judge"), **settings}
    (tmp_path / "suite.json").write_text(json.dumps(suite), encoding="utf-8")
    outcome = run(load_suite(tmp_path / "suite.json", {}), RunOptions(progress=False))
    return outcome


def schema_answer(answers: itertools.cycle):
    """A judge reply: an answer of the schema the request asks for, the next of a scripted cycle
    of choices (so repeated asks disagree)."""

    def reply(req):
        props = req["response_format"]["json_schema"]["schema"]["properties"]
        pick = next(answers)
        if "winner" in props:
            return json.dumps({"winner": ["A", "B", "tie"][pick % 3], "explanation": "x"})
        if "verdict" in props:
            return json.dumps({"verdict": pick % 2 == 0, "explanation": "x"})
        if "scores" in props:
            return json.dumps({"scores": {d: (pick + i) % 4 for i, d in enumerate(sorted(props["scores"]["required"]))},
                               "explanation": "x"})
        if "choice" in props:
            enum = props["choice"]["enum"]
            return json.dumps({"choice": enum[pick % len(enum)], "explanation": "x"})
        low, high = props["score"]["minimum"], props["score"]["maximum"]
        return json.dumps({"score": low + pick % (high - low + 1), "explanation": "x"})

    return reply


GRADERS = [{"llm-judge": "right?"}, {"rubric-score": {"rubric": "r", "scale": [1, 5], "threshold": 3}},
           {"pointwise": {"dimensions": ["a", "b"]}}, {"classify": {"choices": ["A", "B", "C"]}},
           {"g-eval": {"criteria": ["one", "two"]}}]


def _resummarized(report: dict) -> dict:
    """A tampered report made self-consistent everywhere a careful editor could: the attempt's
    status and the summary recomputed from the edited grades."""
    from scoreboard.graders.scoring import score_attempt

    for a in report["attempts"]:
        case = next(c for c in report["plan"]["cases"] if c["id"] == a["case_id"])
        coro = score_attempt(a["grades"], a.get("error"), case.get("threshold"), None)
        try:
            coro.send(None)
        except StopIteration as done:
            a["status"] = done.value["status"]
    report["summary"] = {**report["summary"], **summarize(report["plan"], report["attempts"], report.get("pairwise"),
                                                          reviews=report.get("reviews"))}
    return report


def _paths(report: dict) -> list[str]:
    return sorted(m["path"] for m in verify_report(report).mismatches)


def test_verify_names_a_judge_grade_edited_against_its_own_recorded_answers(judge_srv, fake_provider, tmp_path):
    """verify listed every model grade as "not recomputable offline" and checked nothing of it:
    a failed llm-judge grade flipped to a pass (its recorded judge answers still [false, ...]),
    with the status and summary made to follow, verified with no mismatch. The judge's call
    cannot be made again, but its recorded answers can be combined again (majority, median per
    dimension, threshold): a grade that disagrees with them is named."""
    judge_srv.set_default("chat", {"reply": schema_answer(itertools.cycle([0, 1, 2, 3, 4, 5, 7]))})
    report = run_suite(tmp_path, judge_srv, subject=openai(fake_provider, "subj"), graders=GRADERS,
                       judge_runs=3).report
    result = verify_report(report)
    assert result.ok, result.mismatches[:3]  # every report a run gives verifies
    assert {s["grader"] for s in result.not_recomputable} == {"llm-judge", "rubric-score", "pointwise", "classify",
                                                               "g-eval"}
    grades = {g["grader"]: (i, j, g) for i, a in enumerate(report["attempts"]) for j, g in enumerate(a["grades"])}

    def tampered(grader: str, **edit) -> list[str]:
        copied = copy.deepcopy(report)
        i, j, _ = grades[grader]
        copied["attempts"][i]["grades"][j].update(edit)
        return _paths(_resummarized(copied))

    i, j, g = grades["llm-judge"]
    flipped = not g["passed"] if g["passed"] is not None else True
    assert f"attempts[{i}].grades[{j}].passed" in tampered("llm-judge", passed=flipped, score=float(flipped))
    i, j, g = grades["rubric-score"]
    assert f"attempts[{i}].grades[{j}].rubric_score" in tampered("rubric-score", rubric_score=5, passed=True,
                                                                  score=1.0)
    i, j, g = grades["pointwise"]
    assert f"attempts[{i}].grades[{j}].scores" in tampered("pointwise", scores={"a": 3, "b": 3}, passed=True,
                                                            score=1.0)
    i, j, g = grades["classify"]
    other = "C" if g.get("choice") != "C" else "B"
    assert f"attempts[{i}].grades[{j}].choice" in tampered("classify", choice=other)
    i, j, g = grades["g-eval"]
    assert f"attempts[{i}].grades[{j}].criteria_scores" in tampered("g-eval", criteria_scores=[1.0, 1.0],
                                                                     passed=True, score=1.0)
    # a judge failure made into a verdict
    copied = copy.deepcopy(report)
    i, j, _ = grades["llm-judge"]
    copied["attempts"][i]["grades"][j].update(judge_failure=True, passed=True, score=1.0)
    assert f"attempts[{i}].grades[{j}].passed" in _paths(_resummarized(copied))
    # answers this grader never accepts (a score off its scale) are named where they are
    copied = copy.deepcopy(report)
    i, j, _ = grades["rubric-score"]
    copied["attempts"][i]["grades"][j]["judge"]["answers"] = [9, 9, 9]
    assert f"attempts[{i}].grades[{j}].judge.answers" in _paths(copied)


def test_verify_names_an_edited_pairwise_verdict(judge_srv, fake_provider, tmp_path):
    """A judge that always prefers the first position gives ties (the verdict flips with the
    order); a report whose verdicts were edited to wins, the summary recomputed from them,
    verified: the verdicts are now checked against the two orders' recorded answers."""
    judge_srv.set_default("chat", {"reply": json.dumps({"winner": "A", "explanation": "first"})})
    report = run_suite(tmp_path, judge_srv, graders=[{"contains": "ANSWER"}], pairwise=True,
                       variants={"oak": {"subject": openai(fake_provider, "m1")},
                                 "elm": {"subject": openai(fake_provider, "m2")}}).report
    assert verify_report(report).ok
    (pair,) = report["summary"]["judges"]["pairwise"]
    assert (pair["ties"], pair["position_consistency"]) == (4, 0.0)
    copied = copy.deepcopy(report)
    for j in copied["pairwise"]["judgments"]:
        j.update(verdict="oak", consistent=True)
    copied = _resummarized(copied)
    assert copied["summary"]["judges"]["pairwise"][0]["a_wins"] == 4  # the edit reads as a clean sweep
    found = _paths(copied)
    assert [p for p in found if p.startswith("pairwise.")] == sorted(
        f"pairwise.judgments[{k}].{key}" for k in range(4) for key in ("consistent", "verdict"))


def test_rescore_keeps_the_sources_pairwise_judgments(judge_srv, fake_provider, tmp_path):
    """rescore grades the recorded outputs again; the pairwise judgments compare those same
    outputs, but the rescored report dropped them (no `pairwise`, no pairwise summary, the
    position-consistency figure gone) with no word said."""
    answers = itertools.cycle(["A", "B"])  # prefers the second answer of every second ask
    judge_srv.set_default("chat", {"reply": lambda req: json.dumps({"winner": next(answers), "explanation": "x"})})
    outcome = run_suite(tmp_path, judge_srv, graders=[{"contains": "ANSWER"}], pairwise=True,
                        variants={"oak": {"subject": openai(fake_provider, "m1")},
                                  "elm": {"subject": openai(fake_provider, "m2")}})
    source = Path(outcome.paths["json"])
    before = outcome.report["summary"]["judges"]["pairwise"]
    new = rescore(str(source), output=str(tmp_path / "new.json")).report
    assert new["pairwise"] == outcome.report["pairwise"]
    assert new["summary"]["judges"]["pairwise"] == before
    assert new["requests"]["sent"] == 0  # carried, not asked again
    assert verify_report(new).ok


def test_import_reviews_says_the_corrected_rate_with_its_interval_over_cases(judge_srv, fake_provider, tmp_path):
    """`import reviews` printed "corrected judge pass rate 86.7%" alone: the Rogan-Gladen rate's
    bootstrap interval (the README's "with a bootstrap 95% interval") and how many cases the
    outputs came from were not said, and an undefined rate gave "n/a" with no reason."""
    import os

    n = itertools.count()
    fake_provider.set_default("chat", {"reply": lambda req: f"ANSWER {next(n) % 7}"})
    # the judge passes every answer but 2, and wrongly fails 5 and 6: Se < 1, Sp = 1
    judge_srv.set_default("chat", {"reply": lambda req: json.dumps({"verdict": (
        "ANSWER 2" not in req["messages"][-1]["content"]) != any(
        f"ANSWER {k}" in req["messages"][-1]["content"] for k in (5, 6)), "explanation": "x"})})
    outcome = run_suite(tmp_path, judge_srv, subject=openai(fake_provider, "subj"), runs=3,
                        graders=[{"llm-judge": "right?"}])
    entries, seen = [], set()
    for a in outcome.report["attempts"]:
        if (a["case_id"], a["output_hash"]) not in seen:
            seen.add((a["case_id"], a["output_hash"]))
            entries.append({"case_id": a["case_id"], "input_hash": a["input_hash"], "output_hash": a["output_hash"],
                            "reviewer_id": "ana", "reviewer_kind": "human", "rubric_version": "v1", "ratings": {},
                            "notes": "read", "verdict": "ANSWER 2" not in a["output"]["text"]})
    (tmp_path / "reviews.json").write_text(json.dumps({"entries": entries}), encoding="utf-8")
    done = run_cli(["import", "reviews", outcome.paths["json"], "reviews.json", "--output", "new.json"], tmp_path,
                   {**os.environ, "SCOREBOARD_STORE": "none"})
    assert done.returncode == 0, done.stderr
    agreement = json.loads((tmp_path / "new.json").read_text(encoding="utf-8"))["summary"]["judge_agreement"]
    rate, ci = agreement["corrected_pass_rate"]["value"], agreement["corrected_pass_rate"]["ci"]
    assert agreement["cases"] == 4 and agreement["n"] == len(entries) and agreement["small_sample"] is True
    said = (f"judge vs human on {len(entries)} outputs of 4 cases: kappa {agreement['kappa']:.2f}, corrected judge "
            f"pass rate {rate * 100:.1f}% [95% CI {ci['low'] * 100:.1f}%–{ci['high'] * 100:.1f}%, bootstrap over "
            "cases] (fewer than 30 reviewed cases: treat as indicative)")
    assert said in done.stdout, done.stdout


def test_a_verdict_with_no_majority_says_so_in_every_rendering_junit_included(judge_srv, fake_provider, tmp_path):
    """judge_runs: 2 and a judge that answers true then false: no majority, not assessed. The
    terminal, Markdown and HTML said why; JUnit skipped the case as "not assessed: no grader
    could judge this case", which a CI tab reads as a judge that never answered."""
    import os
    import xml.etree.ElementTree as ET

    flips = itertools.cycle([True, False])
    judge_srv.set_default("chat", {"reply": lambda req: json.dumps({"verdict": next(flips), "explanation": "x"})})
    (tmp_path / "cases.jsonl").write_text(json.dumps(CASES[0]) + "\n", encoding="utf-8")
    suite = {"name": "probe", "cases": "cases.jsonl", "output_dir": "out", "formats": ["json", "md", "html", "junit"],
             "concurrency": 1, "judge": openai(judge_srv, "judge"), "judge_runs": 2,
             "subject": openai(fake_provider, "subj"), "graders": [{"llm-judge": "right?"}]}
    (tmp_path / "suite.json").write_text(json.dumps(suite), encoding="utf-8")
    done = run_cli(["run", "suite.json", "--no-progress"], tmp_path, {**os.environ, "SCOREBOARD_STORE": "none"})
    assert done.returncode == 0, done.stderr
    assert "judge runs split evenly (not assessed): 1" in done.stdout and "1 unassessed" in done.stdout
    files = {p.name.split(".", 1)[1]: p for p in (tmp_path / "out" / "probe").glob("*.*")}
    report = json.loads(files["json"].read_text(encoding="utf-8"))
    (attempt,) = report["attempts"]
    assert attempt["status"] == "unassessed" and attempt["grades"][0]["passed"] is None
    assert report["summary"]["judges"]["variants"]["subj"]["no_majority"] == 1
    why = "judge split evenly across its runs: no majority"
    md = files["md"].read_text(encoding="utf-8")
    assert "| subj | n/a | 0 / 0 | 0 | 1 | 0 |" in md and f"- **llm-judge**: {why}" in md
    assert why in files["html"].read_text(encoding="utf-8")
    (skipped,) = ET.parse(files["junit.xml"]).iter("skipped")
    assert skipped.get("message") == f"not assessed: run 0: llm-judge: {why}"
    assert skipped.text == f"run 0: llm-judge: {why}"
    assert verify_report(report).ok


def _page_texts(html: Path, *test_ids: str) -> list[str]:
    """The text of each element named by test id once the page has drawn itself (a browser of
    its own, closed at once: the module-scoped fixture's event loop would outlive the test)."""
    import os

    from tests.conftest import BROWSER_ARGS, CHROMIUM

    if not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} is not installed")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=BROWSER_ARGS)
        try:
            page = browser.new_page()
            page.goto(html.resolve().as_uri())
            page.wait_for_selector("html[data-ready=true]", timeout=30_000)
            return [page.get_by_test_id(t).inner_text() for t in test_ids]
        finally:
            browser.close()


def test_what_pairwise_judging_spent_is_shown_beside_the_pair_and_no_grade_usage_reads_zero(
        judge_srv, fake_provider, tmp_path):
    """A run judged only pairwise, with a priced judge: the Model-graded table read "unknown"
    requests and cost for every variant (no grade asked the judge: a known 0), and what the
    pairwise judging spent (its requests, tokens, cost) appeared in no rendering, only in the
    JSON's pair. It is now said beside the pair in the terminal, the Markdown and the page."""
    import os

    judge_srv.set_default("chat", {"reply": json.dumps({"winner": "tie", "explanation": "x"}),
                                   "usage": {"prompt_tokens": 1000, "completion_tokens": 10}})
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in CASES[:2]), encoding="utf-8")
    suite = {"name": "probe", "cases": "cases.jsonl", "output_dir": "out", "formats": ["json", "md", "html"],
             "concurrency": 1, "judge": openai(judge_srv, "judge"), "pairwise": True,
             "graders": [{"contains": "ANSWER"}], "prices": {"judge": {"input_per_mtok": 2.0, "output_per_mtok": 10.0}},
             "variants": {"oak": {"subject": openai(fake_provider, "m1")},
                          "elm": {"subject": openai(fake_provider, "m2")}}}
    (tmp_path / "suite.json").write_text(json.dumps(suite), encoding="utf-8")
    done = run_cli(["run", "suite.json", "--no-progress"], tmp_path, {**os.environ, "SCOREBOARD_STORE": "none"})
    assert done.returncode == 0, done.stderr
    files = {p.name.split(".", 1)[1]: p for p in (tmp_path / "out" / "probe").glob("*.*")}
    report = json.loads(files["json"].read_text(encoding="utf-8"))
    (pair,) = report["summary"]["judges"]["pairwise"]
    assert pair["usage"]["cost_usd"]["total"] == pytest.approx(4 * 0.0021)
    said = "judge 4 requests, tokens 4,000 in / 40 out, cost USD 0.0084"
    assert said in done.stdout, done.stdout
    md = files["md"].read_text(encoding="utf-8")
    assert said in md and "| oak | 0 | 0 | 0 | 0 | 0 / 0 | 0 | n/a |" in md
    pair_text, row = _page_texts(files["html"], "pairwise-oak-elm", "judge-oak")
    assert said in pair_text and "unknown" not in row
    # a pair whose judge had no price: its cost is unknown, never 0
    assert "cost USD unknown" in judge_usage_words({"cost_usd": None})


def test_a_scored_verdict_asked_three_times_combines_verdict_and_score_each_on_its_own(
        judge_srv, fake_provider, tmp_path):
    """llm-judge with a threshold (promptfoo's llm-rubric), judge_runs 3, answers (true, 0.9),
    (true, 0.5), (false, 0.9): the verdict's majority is true and the median score 0.9 meets
    0.7, yet the grade failed, reading "judge score 0.9 (pass at 0.7 with a true verdict)": the
    majority was taken over each answer's derived pass/fail, not over each part on its own."""
    answers = itertools.cycle([(True, 0.9), (True, 0.5), (False, 0.9)])

    def reply(req):
        verdict, score = next(answers)
        return json.dumps({"verdict": verdict, "score": score, "explanation": "x"})

    judge_srv.set_default("chat", {"reply": reply})
    report = run_suite(tmp_path, judge_srv, subject=openai(fake_provider, "subj"), judge_runs=3,
                       graders=[{"llm-judge": {"rubric": "r", "threshold": 0.7}}]).report
    (attempt, *_) = report["attempts"]
    (grade,) = attempt["grades"]
    assert grade["judge"]["answers"] == [True, True, False] and grade["judge"]["scores"] == [0.9, 0.5, 0.9]
    assert (grade["passed"], grade["score"]) == (True, 0.9) and attempt["status"] == "passed"
    assert verify_report(report).ok
    # the recorded scores are checked too: a median edited away from them is named
    copied = copy.deepcopy(report)
    copied["attempts"][0]["grades"][0]["score"] = 0.5
    assert "attempts[0].grades[0].score" in _paths(copied)


def test_plan_counts_the_judge_calls_of_every_model_grader(judge_srv, fake_provider, tmp_path, capsys):
    """`plan` counted judge calls for llm-judge, rubric-score and pointwise only: a suite graded
    by g-eval (3 criteria) and classify planned "0 judge calls" and "most requests: 12 (12
    subject + 0 judge)", and the run then sent 12 judge requests (a judge whose answers never
    parse) past the plan's most. Every model grader counts, a g-eval once per criterion."""
    from scoreboard.cli.main import main

    judge_srv.set_default("chat", {"reply": "not json"})
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in CASES[:3]), encoding="utf-8")
    suite = {"name": "probe", "cases": "cases.jsonl", "output_dir": "out", "formats": ["json"], "concurrency": 1,
             "judge": openai(judge_srv, "judge"), "subject": openai(fake_provider, "subj"),
             "graders": [{"g-eval": {"criteria": ["a", "b", "c"]}}, {"classify": {"choices": ["A", "B"]}}]}
    (tmp_path / "suite.json").write_text(json.dumps(suite), encoding="utf-8")
    assert main(["plan", "suite.json", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["judge"]["calls"] == {"grades": 12, "pairwise": 0, "total": 12}  # 3 attempts x (3 + 1)
    per = plan["judge"]["requests_per_ask"]
    assert plan["most_requests"]["judge"] == 12 * 2 * per
    assert main(["run", "suite.json", "--no-progress"]) == 0
    capsys.readouterr()
    assert 0 < len(judge_srv.requests) <= plan["most_requests"]["judge"]


def test_import_comparisons_keeps_the_sources_pairwise_judgments(judge_srv, fake_provider, tmp_path):
    """`import comparisons` adds an imported variant beside the source's; the source's pairwise
    judgments of its own variants (outputs carried unchanged) were dropped from the new report."""
    from scoreboard.engine.reruns import import_comparisons

    judge_srv.set_default("chat", {"reply": json.dumps({"winner": "A", "explanation": "first"})})
    outcome = run_suite(tmp_path, judge_srv, graders=[{"contains": "ANSWER"}], pairwise=True,
                        variants={"oak": {"subject": openai(fake_provider, "m1")},
                                  "elm": {"subject": openai(fake_provider, "m2")}})
    entries = [{"case_id": c["id"], "input_hash": c["input_hash"], "provider": "acme", "model": "m9",
                "model_version": "1", "settings": {}, "output": "ANSWER elsewhere",
                "generated_at": "2025-01-02T03:04:05Z"} for c in outcome.report["plan"]["cases"]]
    (tmp_path / "c.json").write_text(json.dumps({"entries": entries}), encoding="utf-8")
    new = import_comparisons(str(outcome.paths["json"]), str(tmp_path / "c.json"), str(tmp_path / "new.json")).report
    assert len(new["plan"]["variants"]) == 3
    assert new["pairwise"] == outcome.report["pairwise"]
    assert new["summary"]["judges"]["pairwise"] == outcome.report["summary"]["judges"]["pairwise"]
    assert verify_report(new).ok
