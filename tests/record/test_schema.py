"""The typed report: every shape the commands write validates, a v1 report loads, a bad field
fails with one line naming its JSON path, and `scoreboard schema` is a JSON Schema those
reports satisfy."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from scoreboard.errors import ConfigError
from scoreboard.record.io import load_report, parse_report, read_report
from scoreboard.record.schema import (
    JUDGE_GRADER_NAMES,
    MEASUREMENT_KEYS,
    SCHEMA,
    SCHEMAS,
    Report,
)
from tests.cli_inprocess import run_cli
from tests.record.conftest import make_report
from tests.servers.fake_provider import FakeProvider

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "invoices" / "suite.yaml"
GOOD = {"c0", "c2"}


def scoreboard(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return run_cli(args, cwd, dict(os.environ))


def one_report(folder: Path) -> Path:
    """The JSON report a run wrote under `folder` (not the run.json inside its run folder)."""
    (path,) = [p for p in folder.rglob("*.json") if p.name != "run.json"]
    return path


def judge_reply(req: dict) -> str:
    """The judge's answer for each kind of question, from the schema it was asked for."""
    name = ((req.get("response_format") or {}).get("json_schema") or {}).get("name")
    good = "GOOD" in req["messages"][-1]["content"].split("ANSWER")[-1]
    answers = {"verdict": {"verdict": good, "explanation": "read it"},
               "score": {"score": 4 if good else 2, "explanation": "scored"},
               "scores": {"scores": {"accuracy": 3 if good else 1, "style": 2}, "explanation": "scored"},
               "winner": {"winner": "A", "explanation": "first"}}
    return json.dumps(answers[name])


def judged_run(folder: Path) -> Path:
    """Two mock variants, three model graders, pairwise judging, a request budget."""
    cases = [{"id": f"c{i}", "input": f"Task {i}", "expected": f"answer {i}"} for i in range(4)]
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    with FakeProvider() as judge:
        judge.set_default("chat", {"reply": judge_reply})
        outputs = {f"c{i}": f"{'GOOD' if f'c{i}' in GOOD else 'POOR'} answer {i}" for i in range(4)}
        suite = {"name": "judged", "cases": "cases.jsonl", "seed": 3, "formats": ["json"],
                 "variants": {"one": {"subject": {"type": "mock", "outputs": outputs}},
                              "two": {"subject": {"type": "mock"}}},
                 "judge": {"type": "openai", "base_url": judge.base_url + "/v1", "model": "judge"},
                 "graders": [{"llm-judge": {"rubric": "Is it good?"}}, {"rubric-score": {"rubric": "How good?"}},
                             {"pointwise": {"dimensions": ["accuracy", "style"]}}],
                 "pairwise": True, "budget": {"max_requests": 500}}
        (folder / "suite.json").write_text(json.dumps(suite), encoding="utf-8")
        done = scoreboard(["run", "suite.json", "--output-dir", "judged", "--no-progress"], folder)
    assert done.returncode in (0, 3), done.stderr
    return one_report(folder / "judged")


def reviews_for(report: dict) -> list[dict]:
    return [{"case_id": a["case_id"], "input_hash": a["input_hash"], "output_hash": a["output_hash"],
             "reviewer_id": "ann", "reviewer_kind": "human", "rubric_version": "v1",
             "ratings": {"correctness": 4, "coherence": None}, "verdict": a["case_id"] in GOOD, "notes": "checked"}
            for a in report["attempts"] if a["variant"] == "one"]


@pytest.fixture(scope="module")
def shapes(tmp_path_factory) -> dict[str, Path]:
    """A report of each shape the commands write: the demo run, its rescore and its verified
    copy, a judged run (model graders, pairwise, budget) and that run with reviews imported."""
    if not EXAMPLE.exists():
        pytest.skip("the demo suite is not in this checkout")
    folder = tmp_path_factory.mktemp("shapes")
    done = scoreboard(["run", str(EXAMPLE), "--output-dir", "demo", "--no-progress", "--format", "json"], folder)
    assert done.returncode in (0, 3), done.stderr
    out = {"demo": one_report(folder / "demo")}
    for name, args in (("rescored", ["rescore", str(out["demo"]), "--output", "rescored.json"]),
                       ("verified", ["verify", str(out["demo"]), "--output", "verified.json"])):
        done = scoreboard(args, folder)
        assert done.returncode in (0, 3), done.stderr
        out[name] = folder / f"{name}.json"
    out["judged"] = judged_run(folder)
    reviews = folder / "reviews.json"
    reviews.write_text(json.dumps({"version": "v1", "entries": reviews_for(load_report(out["judged"]))}))
    done = scoreboard(["import", "reviews", str(out["judged"]), str(reviews), "--output", "reviewed.json"], folder)
    assert done.returncode in (0, 3), done.stderr
    out["reviewed"] = folder / "reviewed.json"
    return out


def test_every_shape_the_commands_write_validates(shapes):
    typed = {name: read_report(path) for name, path in shapes.items()}
    demo = typed["demo"]
    assert demo.schema_ == SCHEMA and demo.run.status == "completed"
    assert [v.name for v in demo.plan.variants] == ["basic", "careful"]
    assert len(demo.attempts) == len(demo.plan.cases) * 2 * demo.plan.runs
    assert {a.status for a in demo.attempts} <= {"passed", "failed"}
    assert demo.summary.variants["careful"].pass_rate_ci.method == "wilson-effective-n"
    assert typed["rescored"].run.rescore.source_run_id == demo.run.id
    assert typed["verified"].verification.ok is True
    judged = typed["judged"]
    grades = {g.grader for a in judged.attempts for g in a.grades}
    assert grades == {"llm-judge", "rubric-score", "pointwise"} <= JUDGE_GRADER_NAMES
    pointwise = next(g for g in judged.attempts[0].grades if g.grader == "pointwise")
    assert pointwise.model_extra["scores"] == {"accuracy": 3, "style": 2}  # a grader's own keys are kept
    assert judged.summary.judges.pairwise[0].cases == 4 and len(judged.pairwise.judgments) == 4
    assert judged.requests.budget.max_requests == 500 and judged.requests.by_role["judge"] > 0
    reviewed = typed["reviewed"]
    assert len(reviewed.reviews.human) == 4 and reviewed.summary.reviews.human.with_verdict == 4
    assert reviewed.summary.judge_agreement.n == 4 and reviewed.run.reviews_imported[0].human == 4


def test_dump_gives_back_the_record(shapes):
    for path in shapes.values():
        data = json.loads(path.read_text(encoding="utf-8"))
        assert parse_report(data, str(path)).dump() == data


def test_measurements_are_the_records_and_unknown_is_null(shapes):
    demo = read_report(shapes["demo"])
    assert tuple(demo.attempts[0].measurements.model_dump(exclude_unset=True)) == MEASUREMENT_KEYS
    report = make_report(2, runs=1)
    report["attempts"][0]["measurements"] = {key: None for key in MEASUREMENT_KEYS}
    assert parse_report(report, "r.json").attempts[0].measurements.latency_ms is None


def test_a_v1_report_loads_with_v2_defaults(shapes, tmp_path):
    data = json.loads(shapes["demo"].read_text(encoding="utf-8"))
    data["schema"] = "scoreboard.report/v1"
    for key in ("executor", "dry_run"):
        data["run"].pop(key, None)
    path = tmp_path / "v1.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    assert load_report(path)["schema"] == "scoreboard.report/v1"
    report = read_report(path)
    assert (report.schema_, report.run.executor, report.run.dry_run) == ("scoreboard.report/v1", None, False)
    assert SCHEMAS == ("scoreboard.report/v1", "scoreboard.report/v2")
    data["schema"] = "scoreboard.report/v3"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ConfigError, match="not a scoreboard report"):
        read_report(path)


def test_v2_run_fields_are_typed():
    report = make_report(2, runs=1)
    report["schema"] = SCHEMA
    report["run"].update(executor="local", dry_run=True)
    typed = parse_report(report, "r.json")
    assert (typed.run.executor, typed.run.dry_run) == ("local", True)


def _set(data: dict, path: tuple, value) -> None:
    for part in path[:-1]:
        data = data[part]
    data[path[-1]] = value


@pytest.mark.parametrize("where,value,shown,words", [
    (("attempts", 3, "measurements", "latency_ms"), "fast", "attempts[3].measurements.latency_ms", "number"),
    (("attempts", 5, "measurements", "input_tokens"), 1.5, "attempts[5].measurements.input_tokens", "whole number"),
    (("attempts", 0, "grades", 0, "passed"), "yes", "attempts[0].grades[0].passed", "true or false"),
    (("attempts", 2, "grades", 0, "fields", 1, "passed"), 1, "attempts[2].grades[0].fields[1].passed", "true or false"),
    (("attempts", 4, "status"), "great", "attempts[4].status", "great"),
    (("attempts", 2, "colour"), "red", "attempts[2].colour", "unknown field"),
    (("run", "status"), "done", "run.status", "done"),
    (("run", "bogus"), 1, "run.bogus", "unknown field"),
    (("plan", "cases", 1, "id"), 7, "plan.cases[1].id", "string"),
    (("summary", "variants", "basic", "pass_rate"), "high", "summary.variants.basic.pass_rate", "number"),
    (("summary", "comparisons", 0, "mcnemar", "extra"), 0, "summary.comparisons[0].mcnemar.extra", "unknown field"),
    (("gates", 0, "passed"), "no", "gates[0].passed", "true or false"),
])
def test_a_bad_field_is_one_line_naming_its_json_path(tmp_path, where, value, shown, words):
    report = make_report(3, runs=2)
    _set(report, where, value)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(report), encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        read_report(path)
    message = str(err.value)
    assert "\n" not in message and str(path) in message and f"field {shown!r}" in message
    assert words in message


def test_a_variant_name_that_is_not_an_identifier_is_quoted_in_the_path():
    report = make_report(2, runs=1, variants=("openai/gpt-4.1", "b"))
    report["summary"]["variants"]["openai/gpt-4.1"]["errors"] = "none"
    with pytest.raises(ConfigError, match=r"""field 'summary\.variants\["openai/gpt-4\.1"\]\.errors'"""):
        parse_report(report, "r.json")


def test_grades_keep_what_graders_add_and_free_form_parts_stay_free():
    report = make_report(2, runs=1)
    report["attempts"][0]["grades"][0]["my_grader_key"] = {"anything": [1, "two"]}
    report["plan"]["cases"][0]["metadata"] = {"source": {"row": 3}}
    report["plan"]["variants"][0]["subject"]["headers"] = {"X-Team": "evals"}
    typed = parse_report(report, "r.json")
    assert typed.attempts[0].grades[0].model_extra == {"my_grader_key": {"anything": [1, "two"]}}
    assert typed.dump() == report


def test_the_cli_reports_a_bad_report_in_one_line(tmp_path):
    report = make_report(3, runs=1)
    report["attempts"][1]["measurements"]["cost_usd"] = "free"
    (tmp_path / "bad.json").write_text(json.dumps(report), encoding="utf-8")
    (tmp_path / "good.json").write_text(json.dumps(make_report(3, runs=1)), encoding="utf-8")
    done = scoreboard(["compare", "bad.json", "good.json"], tmp_path)
    assert done.returncode == 1
    (line,) = done.stderr.strip().splitlines()
    assert "bad.json" in line and "attempts[1].measurements.cost_usd" in line and "Traceback" not in done.stderr


def test_schema_command_prints_a_json_schema_the_reports_satisfy(shapes, tmp_path):
    done = scoreboard(["schema"], tmp_path)
    assert done.returncode == 0, done.stderr
    schema = json.loads(done.stdout)
    Draft202012Validator.check_schema(schema)
    assert schema == {"$schema": "https://json-schema.org/draft/2020-12/schema", **Report.model_json_schema()}
    validator = Draft202012Validator(schema)
    for path in shapes.values():
        data = json.loads(path.read_text(encoding="utf-8"))
        assert list(validator.iter_errors(data)) == [], path
    data = json.loads(shapes["demo"].read_text(encoding="utf-8"))
    data["attempts"][0]["measurements"]["latency_ms"] = "fast"
    data["run"]["bogus"] = 1
    assert {tuple(e.absolute_path) for e in validator.iter_errors(data)} == {
        ("attempts", 0, "measurements", "latency_ms"), ("run",)}


def test_schema_command_writes_a_new_file_only(tmp_path):
    done = scoreboard(["schema", "--output", "report.schema.json"], tmp_path)
    assert done.returncode == 0, done.stderr
    Draft202012Validator.check_schema(json.loads((tmp_path / "report.schema.json").read_text(encoding="utf-8")))
    again = scoreboard(["schema", "--output", "report.schema.json"], tmp_path)
    assert again.returncode == 1 and "refusing to overwrite" in again.stderr
