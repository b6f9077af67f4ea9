"""Probes of the carried-attempts pipeline as a user who re-grades months-old reports meets it:
`rescore`, `import comparisons`, `import reviews`, `verify` and `score` over reports and
exports that scoreboard itself wrote or that agent CLIs export."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from scoreboard.record.verify import verify_report
from tests.cli_inprocess import run_cli

ROOT = Path(__file__).resolve().parents[1]


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return run_cli(args, cwd, dict(os.environ))


@pytest.fixture(scope="module")
def capitals(tmp_path_factory) -> Path:
    """The README's suites example run once (it has a record-only case: `graders: []`)."""
    where = tmp_path_factory.mktemp("capitals")
    shutil.copytree(ROOT / "examples" / "suites", where / "s")
    done = cli(where / "s", "run", "suite.yaml", "--output-dir", "out", "--format", "json", "--no-progress")
    assert done.returncode == 0, done.stderr
    (path,) = (where / "s" / "out" / "capitals").glob("*.json")
    shutil.copy(path, where / "s" / "r.json")
    return where / "s"


# ---- a record-only case (no grader: recorded, not graded) does not block rescore or imports


def test_rescore_keeps_a_record_only_case_recorded_and_not_graded(capitals, tmp_path):
    work = tmp_path / "w"
    shutil.copytree(capitals, work)
    done = cli(work, "rescore", "r.json", "--output", "again.json")
    assert done.returncode == 0, done.stderr
    report = json.loads((work / "again.json").read_text())
    peru = [a for a in report["attempts"] if a["case_id"] == "peru-notes"]
    assert peru and {a["status"] for a in peru} == {"not-graded"}
    assert verify_report(report).ok, verify_report(report).mismatches


def test_import_reviews_into_a_report_with_a_record_only_case(capitals, tmp_path):
    work = tmp_path / "w"
    shutil.copytree(capitals, work)
    source = json.loads((work / "r.json").read_text())
    first = source["attempts"][0]
    (work / "reviews.json").write_text(json.dumps({"entries": [{
        "case_id": first["case_id"], "input_hash": first["input_hash"], "output_hash": first["output_hash"],
        "reviewer_id": "ann", "reviewer_kind": "human", "rubric_version": "v1", "ratings": {}, "verdict": True, "notes": "right"}]}))
    done = cli(work, "import", "reviews", "r.json", "reviews.json", "--output", "reviewed.json")
    assert done.returncode == 0, done.stderr
    assert verify_report(json.loads((work / "reviewed.json").read_text())).ok


def test_a_review_bound_by_one_variants_input_hash_must_review_that_variants_output(capitals, tmp_path):
    work = tmp_path / "w"
    shutil.copytree(capitals, work)
    source = json.loads((work / "r.json").read_text())
    terse, careful = (next(a for a in source["attempts"] if a["case_id"] == "france" and a["variant"] == v)
                      for v in ("terse", "careful"))
    assert terse["input_hash"] != careful["input_hash"]  # the prompt axis sends each variant its own input
    (work / "reviews.json").write_text(json.dumps({"entries": [{
        "case_id": "france", "input_hash": terse["input_hash"], "output_hash": careful["output_hash"],
        "reviewer_id": "ann", "reviewer_kind": "human", "rubric_version": "v1", "ratings": {}, "verdict": True,
        "notes": "right"}]}))
    done = cli(work, "import", "reviews", "r.json", "reviews.json", "--output", "reviewed.json")
    assert done.returncode == 1 and "entries[0].output_hash" in done.stderr, done.stderr
    assert not (work / "reviewed.json").exists()


# ---- an export cut off mid-line is a run the CLI did not finish, not an invalid file

EXPORTS = ROOT / "tests" / "fixtures" / "agent_exports"


@pytest.mark.parametrize("source", ["claude_tool_stream.jsonl", "codex_tool.jsonl"])
def test_an_export_whose_last_line_is_cut_mid_event_scores_as_a_cut_off_run(tmp_path, source):
    text = (EXPORTS / source).read_text().rstrip("\n")
    (tmp_path / "whole.jsonl").write_text(text + "\n")
    (tmp_path / "cut.jsonl").write_text(text[:-15])  # the writer was killed inside the last event
    done = cli(tmp_path, "score", "whole.jsonl", "cut.jsonl", "--expect-contains", "notes", "--expect-status",
               "completed", "--output-dir", "o", "--format", "json")
    assert done.returncode == 3, done.stderr  # scored: the cut run is data, not an invalid file
    (path,) = (tmp_path / "o").glob("*/*.json")
    report = json.loads(path.read_text())
    sources = {s["path"]: s for s in report["run"]["transcript"]["sources"]}
    cut = sources["cut.jsonl"]
    assert cut["status"] == "error" and "cut off" in cut["error"]
    assert any("line" in w and "cut off" in w for w in cut["warnings"]), cut["warnings"]
    attempt = next(a for a in report["attempts"] if a["case_id"] == "cut")
    assert attempt["status"] != "passed"
    assert verify_report(report).ok


def test_a_broken_line_before_the_last_is_still_an_invalid_file(tmp_path):
    lines = (EXPORTS / "codex_tool.jsonl").read_text().rstrip("\n").split("\n")
    lines[2] = lines[2][:-5]
    (tmp_path / "bad.jsonl").write_text("\n".join(lines) + "\n")
    done = cli(tmp_path, "score", "bad.jsonl", "--expect-contains", "x", "--output-dir", "o")
    assert done.returncode == 1 and "bad.jsonl:3" in done.stderr, done.stderr
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("last", ["not json", '{"type": "turn.completed"} trailing'])
def test_a_last_line_that_is_no_event_cut_short_is_still_an_invalid_file(tmp_path, last):
    text = (EXPORTS / "codex_tool.jsonl").read_text().rstrip("\n")
    (tmp_path / "bad.jsonl").write_text(text + "\n" + last + "\n")
    done = cli(tmp_path, "score", "bad.jsonl", "--expect-contains", "x", "--output-dir", "o")
    assert done.returncode == 1 and "bad.jsonl:" in done.stderr, done.stderr
    assert not (tmp_path / "o").exists()


def test_a_cut_off_export_does_not_pass_on_its_text_alone_and_says_why(tmp_path):
    text = (EXPORTS / "claude_tool_stream.jsonl").read_text().rstrip("\n")
    (tmp_path / "cut.jsonl").write_text(text[:-15])  # the result event is cut: the run never finished
    done = cli(tmp_path, "score", "cut.jsonl", "--expect-contains", "notes", "--output-dir", "o", "--format", "json")
    assert done.returncode == 3, done.stdout + done.stderr
    assert "cut.jsonl" in done.stderr and "cut off" in done.stderr  # said on the terminal, not only in the file
    # asked for explicitly, an error run is what the case expects
    again = cli(tmp_path, "score", "cut.jsonl", "--expect-status", "error", "--output-dir", "o", "--format", "json")
    assert again.returncode == 0, again.stdout + again.stderr


# ---- verify: a plan's prompt template edited after the run


def test_verify_names_a_prompt_template_edited_after_the_run(capitals):
    report = json.loads((capitals / "r.json").read_text())
    assert verify_report(report).ok
    prompt = report["plan"]["variants"][0]["prompt"]
    prompt["template"] = "Largest city of {{ country }}?"  # not what was sent: inputs and hashes still say so
    found = verify_report(report)
    assert not found.ok
    assert any(m["path"] == "plan.variants[0].prompt.sha256" for m in found.mismatches), found.mismatches


# ---- rescore and imports keep the source's derived metrics, reducers and metric gates


def test_rescore_keeps_derived_metrics_reducers_and_the_metric_gate(capitals, tmp_path):
    work = tmp_path / "w"
    shutil.copytree(capitals, work)
    source = json.loads((work / "r.json").read_text())
    assert [g["gate"] for g in source["gates"]] == ["fail-under-metric"]
    done = cli(work, "rescore", "r.json", "--output", "same.json")
    assert done.returncode == 0, done.stderr
    same = json.loads((work / "same.json").read_text())
    assert same["plan"]["derived_metrics"] == source["plan"]["derived_metrics"]
    assert same["plan"]["reducers"] == source["plan"]["reducers"]
    assert same["gates"] == source["gates"]
    assert same["summary"]["variants"]["careful"]["derived_metrics"] == \
        source["summary"]["variants"]["careful"]["derived_metrics"]
    assert verify_report(same).ok
    # graders that break the recall metric: the gate on f1 now fails, as the source's run would have
    specs = [{"contains": "ANSWER", "metric": "precision"}, {"contains": "Lima", "metric": "recall"}]
    (work / "strict.json").write_text(json.dumps({"cases": {c: specs for c in ("france", "spain", "italy")}}))
    strict = cli(work, "rescore", "r.json", "--graders", "strict.json", "--output", "strict-report.json")
    assert strict.returncode == 3, strict.stdout + strict.stderr
    gates = json.loads((work / "strict-report.json").read_text())["gates"]
    assert [(g["gate"], g["passed"]) for g in gates] == [("fail-under-metric", False)]


# ---- a dry run stays a dry run through rescore and imports


def test_rescore_of_a_dry_run_report_stays_a_dry_run(capitals, tmp_path):
    work = tmp_path / "w"
    shutil.copytree(capitals, work)
    done = cli(work, "run", "suite.yaml", "--dry-run", "--output", "dry.json", "--no-progress")
    assert done.returncode == 0, done.stderr
    assert json.loads((work / "dry.json").read_text())["run"]["dry_run"] is True
    again = cli(work, "rescore", "dry.json", "--output", "again.json")
    assert again.returncode == 0, again.stderr
    report = json.loads((work / "again.json").read_text())
    assert report["run"]["dry_run"] is True and report["gates"] == []
    assert verify_report(report).ok
    compared = cli(work, "compare", "again.json", "r.json")
    assert "dry" in compared.stdout.lower(), compared.stdout


# ---- verify: a review's rating outside 1-5 is no report scoreboard writes


def test_verify_refuses_a_review_rating_outside_one_to_five(capitals, tmp_path):
    work = tmp_path / "w"
    shutil.copytree(capitals, work)
    first = json.loads((work / "r.json").read_text())["attempts"][0]
    (work / "reviews.json").write_text(json.dumps({"entries": [{
        "case_id": first["case_id"], "input_hash": first["input_hash"], "output_hash": first["output_hash"],
        "reviewer_id": "ann", "reviewer_kind": "human", "rubric_version": "v1", "ratings": {"correctness": 5},
        "verdict": True, "notes": "right"}]}))
    assert cli(work, "import", "reviews", "r.json", "reviews.json", "--output", "reviewed.json").returncode == 0
    report = json.loads((work / "reviewed.json").read_text())
    assert verify_report(report).ok
    report["reviews"]["human"][0]["ratings"]["correctness"] = 9
    found = verify_report(report)
    assert not found.ok
    assert any("reviews.human[0].ratings" in m["path"] for m in found.schema_errors), found.schema_errors
