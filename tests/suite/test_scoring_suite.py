"""A suite's custom scoring function (defaults.scoring) through a run, verify, and a code change."""

from __future__ import annotations

import json

import yaml

from scoreboard.engine.options import RunOptions
from scoreboard.engine.pipeline import run
from scoreboard.record.verify import verify_report
from scoreboard.suite.load import load_suite

SCORING = '''
def decide(scores, context):
    # pass when accuracy is perfect, whatever the style grader said
    return {"pass": scores.get("accuracy", 0) == 1.0, "score": scores.get("accuracy", 0), "reason": "accuracy decides"}
'''


def test_scoring_function_decides_and_verify_recomputes(tmp_path):
    (tmp_path / "scoring.py").write_text(SCORING)
    (tmp_path / "cases.jsonl").write_text(json.dumps({"id": "a", "input": "Paris", "expected": "Paris"}) + "\n"
                                          + json.dumps({"id": "b", "input": "Lyon", "expected": "Paris"}) + "\n")
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump({
        "cases": "cases.jsonl", "subject": "mock", "output_dir": "out", "formats": ["json"],
        "defaults": {"scoring": "python-file:scoring.py:decide",
                     "graders": [{"exact": None, "metric": "accuracy"}, {"contains": "zzz", "metric": "style"}]}}))
    suite = load_suite(tmp_path / "suite.yaml")
    report = run(suite, RunOptions(progress=False)).report
    by_case = {a["case_id"]: a for a in report["attempts"]}
    assert by_case["a"]["status"] == "passed" and by_case["a"]["scoring_reason"] == "accuracy decides"
    assert by_case["a"]["grades"][1]["passed"] is False  # the scoring function overrode it
    assert by_case["b"]["status"] == "failed" and by_case["b"]["score"] == 0.0
    assert report["plan"]["cases"][0]["scoring"]["sha256"]
    assert verify_report(report).ok
    # the recorded status no longer follows: verify names it
    by_case["a"]["status"] = "failed"
    assert any(m["path"].endswith("status") for m in verify_report(report).mismatches)
    by_case["a"]["status"] = "passed"
    # the code changed since the run: not recomputed, and said so
    (tmp_path / "scoring.py").write_text(SCORING + "\n# edited\n")
    from scoreboard.graders import scoring

    scoring._SCORERS.clear()
    checked = verify_report(report)
    assert any("scoring function not available" in (s.get("why") or "") for s in checked.not_recomputable)
