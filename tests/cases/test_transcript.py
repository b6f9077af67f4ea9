"""Transcript files -> cases, graders and matched runs; the limit graders they use."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scoreboard.cases.case import Case
from scoreboard.cases.transcript import (
    load_exports,
    load_replay_cases,
    load_transcript,
    transcript_suite,
)
from scoreboard.cases.transcript_match import match_run
from scoreboard.cases.transcript_model import RunRecord, TranscriptCase
from scoreboard.engine.pipeline import RunOptions, run
from scoreboard.errors import ConfigError
from scoreboard.graders.grade import GradeContext
from scoreboard.graders.registry import build_grader
from scoreboard.hashing import sha256_bytes
from scoreboard.subjects.recorded import RecordedSubject
from scoreboard.subjects.values import Measurements, Output

FIX = Path(__file__).resolve().parent.parent / "fixtures"
TRANSCRIPTS = FIX / "transcripts"
EXPORTS = FIX / "agent_exports"


def _specs(t, case_id):
    return [g.spec for g in t.graders[case_id]]


# --------------------------------------------------------------------------- the file


def test_the_transcript_tool_example_loads_with_its_graders():
    t = load_transcript(TRANSCRIPTS / "search.json")
    assert [c.id for c in t.cases] == ["search"]
    case = t.cases[0]
    assert case.input == "search then answer"
    assert case.metadata == {"index": 0, "matched_by": "tag", "run_id": "run_1", "tag": "search"}
    assert _specs(t, "search") == [
        {"tool-calls": {"required": ["search"], "forbidden": [], "ordered": False}},
        {"status": {"expected": "completed"}},
        {"max-latency-ms": {"max": 30000.0}},
        {"contains": {"patterns": ["ok"], "mode": "all", "ignore_case": False}},
        {"not-contains": {"patterns": ["traceback"], "ignore_case": False}},
    ]
    record = t.assigned["search"]
    assert (record.id, record.status, record.latency_ms, record.cost_usd) == ("run_1", "completed", 812, 0.01)
    assert (record.input_tokens, record.output_tokens) == (40, 80)
    assert t.sources[0]["sha256"] == sha256_bytes((TRANSCRIPTS / "search.json").read_bytes())


def test_every_case_field_becomes_a_grader():
    t = load_transcript(TRANSCRIPTS / "all_fields.json")
    assert (t.prompt, t.room_id, t.agent_id) == ("find the weather then answer", "lobby", "assistant")
    names = [next(iter(s)) if isinstance(s, dict) else s for s in _specs(t, "good")]
    assert names == ["tool-calls", "status", "max-latency-ms", "contains", "not-contains", "max-cost", "max-tokens"]
    specs = _specs(t, "good")
    assert specs[0] == {"tool-calls": {"required": ["search", "fetch"], "forbidden": ["delete"], "ordered": False}}
    assert specs[3]["contains"]["patterns"] == ["sunny", "20"]
    assert specs[4]["not-contains"]["patterns"] == ["traceback", "error"]
    assert specs[5] == {"max-cost": {"max": 0.05}}
    assert specs[6] == {"max-tokens": {"max": 500}}
    # a single string is one pattern
    assert _specs(t, "bad")[3]["contains"]["patterns"] == ["sunny"]


def test_matching_rules_tag_id_index_duplicates_and_no_match():
    t = load_transcript(TRANSCRIPTS / "matching.json")
    got = {m["case_id"]: (m["matched_by"], m["run_id"]) for m in t.matches}
    assert got == {
        "by-tag": ("tag", "run_a"),
        "run_b": ("id", "run_b"),
        "nothing-has-this-tag": ("index", "run_c"),   # a tag that matches nothing falls back to the index
        "case-4": ("index", "run_d"),                 # no tag, no id: index, and a generated id
        "dup": ("tag", "run_e"),                      # two runs tagged "dup": the first one
        "dup-2": ("tag", "run_e"),                    # a repeated case tag gets a suffix
        "ghost": (None, None),                        # nothing at all: an execution error, not dropped
    }
    by_id = {c.id: c for c in t.cases}
    assert "matched no run" in by_id["nothing-has-this-tag"].metadata["match_warning"]
    assert "matches 2 runs (run_e, run_f)" in by_id["dup"].metadata["match_warning"]
    assert t.errors["ghost"].startswith("no run matched: tag 'ghost' matched no run")
    assert any("reported as 'dup-2'" in w for w in t.warnings)
    assert t.run_info()["transcript"]["unmatched_runs"] == ["run_f"]


def test_match_run_prefers_tag_over_id_over_index():
    runs = [RunRecord(id="x", tag="t1", status="completed", output=""),
            RunRecord(id="y", tag=None, status="completed", output="")]
    assert match_run(TranscriptCase(tag="t1", id="y"), 1, runs)[:2] == (runs[0], "tag")
    assert match_run(TranscriptCase(tag="zzz", id="y"), 0, runs)[:2] == (runs[1], "id")
    assert match_run(TranscriptCase(id="zzz"), 1, runs)[:2] == (runs[1], "index")
    run_, how, note = match_run(TranscriptCase(), 2, runs)
    assert run_ is None and how is None and "no run at index 2" in note


def test_cases_without_runs_default_to_an_empty_list(tmp_path):
    p = tmp_path / "t.json"
    p.write_text(json.dumps({"cases": [{"tag": "a", "expectedStatus": "completed"}]}))
    t = load_transcript(p)
    assert t.runs == [] and "no run matched" in t.errors["a"]


@pytest.mark.parametrize("name, needles", [
    ("invalid_unknown_field.json", ["invalid_unknown_field.json", "case 'b'", "cases[1].expectedStatuss", "unknown field"]),
    ("invalid_wrong_type.json", ["case 'a'", "cases[0].maxCost", "must be a number"]),
    ("invalid_missing_run_field.json", ["runs[0].status", "run 'r1'", "required field is missing"]),
    ("invalid_no_cases.json", ["field 'cases'", "required field is missing"]),
    ("invalid_no_expectation.json", ["case 'a'", "sets no expectation"]),
    ("invalid_tool_both.json", ["case 'c1'", "cases[0].requiredTools", "both required and forbidden"]),
    ("invalid_json.json", ["invalid_json.json:3", "invalid JSON"]),
])
def test_invalid_files_are_one_line_errors_naming_file_case_and_field(name, needles):
    with pytest.raises(ConfigError) as info:
        load_transcript(TRANSCRIPTS / name)
    message = str(info.value)
    assert "\n" not in message
    for needle in needles:
        assert needle in message


@pytest.mark.parametrize("case, field", [
    ({"tag": "a", "maxTokens": 1.5}, "maxTokens"),
    ({"tag": "a", "maxTokens": "10"}, "maxTokens"),
    ({"tag": "a", "maxCost": -1}, "maxCost"),
    ({"tag": "a", "maxLatencyMs": 0}, "maxLatencyMs"),
    ({"tag": "a", "requiredTools": "search"}, "requiredTools"),
    ({"tag": "a", "expectedOutputContains": [""]}, "expectedOutputContains"),
    ({"tag": "a", "expectedOutputContains": 5}, "expectedOutputContains"),
    ({"tag": 3, "expectedStatus": "completed"}, "tag"),
])
def test_wrong_types_in_case_fields(tmp_path, case, field):
    p = tmp_path / "t.json"
    p.write_text(json.dumps({"cases": [case], "runs": []}))
    with pytest.raises(ConfigError) as info:
        load_transcript(p)
    assert f"cases[0].{field}" in str(info.value)


def test_a_run_tool_call_needs_a_name(tmp_path):
    p = tmp_path / "t.json"
    p.write_text(json.dumps({"cases": [{"tag": "a", "expectedStatus": "completed"}],
                             "runs": [{"id": "r", "status": "completed", "latency_ms": 1,
                                       "tool_calls": [{"args": {}}], "output": "x"}]}))
    with pytest.raises(ConfigError, match=r"runs\[0\]\.tool_calls\[0\]\.name"):
        load_transcript(p)


def test_a_run_without_latency_ms_records_it_unknown_and_a_latency_bound_is_not_assessed(tmp_path):
    """A transcript that does not record a run's duration loads: its latency is unknown (null,
    never 0), and a maxLatencyMs on its case is not assessed (failing the all-pass rule)."""
    p = tmp_path / "t.json"
    p.write_text(json.dumps({"cases": [{"tag": "a", "expectedOutputContains": "ok"},
                                       {"tag": "b", "maxLatencyMs": 100}],
                             "runs": [{"id": "r1", "tag": "a", "status": "completed", "tool_calls": [], "output": "ok"},
                                      {"id": "r2", "tag": "b", "status": "completed", "tool_calls": [], "output": "x"}]}))
    t = load_transcript(p)
    suite = transcript_suite(t, RecordedSubject.holding(t.recorded(), {"transcript": t.source}), variant="recorded",
                             output_dir=str(tmp_path / "out"), formats=["json"])
    outcome = run(suite, RunOptions(progress=False, require_all_pass=True, extra_run=t.run_info()))
    by_case = {a["case_id"]: a for a in outcome.report["attempts"]}
    assert by_case["a"]["status"] == "passed" and by_case["a"]["measurements"]["latency_ms"] is None
    assert by_case["b"]["status"] == "unassessed" and by_case["b"]["measurements"]["latency_ms"] is None
    assert [g["passed"] for g in by_case["b"]["grades"]] == [None]
    assert outcome.exit_code == 3


def test_replay_cases_are_not_matched(tmp_path):
    t = load_replay_cases(TRANSCRIPTS / "replay.json")
    assert [m["matched_by"] for m in t.matches] == ["live", "live"]
    assert t.errors == {} and t.runs[0].id == "run_1"


# --------------------------------------------------------------------------- through the pipeline


def test_pipeline_grades_each_case_on_its_run(tmp_path):
    t = load_transcript(TRANSCRIPTS / "all_fields.json")
    suite = transcript_suite(t, RecordedSubject.holding(t.recorded(), {"transcript": t.source}), variant="recorded", output_dir=str(tmp_path), formats=["json"])
    outcome = run(suite, RunOptions(progress=False, require_all_pass=True, extra_run=t.run_info()))
    by_case = {a["case_id"]: a for a in outcome.report["attempts"]}
    assert by_case["good"]["status"] == "passed"
    assert by_case["bad"]["status"] == "failed"
    bad = {g["grader"]: g["passed"] for g in by_case["bad"]["grades"]}
    assert bad == {"tool-calls": False, "status": False, "max-latency-ms": False, "contains": False,
                   "not-contains": False, "max-cost": False, "max-tokens": False}
    unknown = {g["grader"]: g["passed"] for g in by_case["unknown-cost"]["grades"]}
    assert unknown == {"max-cost": None, "max-tokens": None}
    assert by_case["unknown-cost"]["status"] == "unassessed"
    assert outcome.exit_code == 3
    assert outcome.report["run"]["transcript"]["sources"][0]["format"] == "transcript"


# --------------------------------------------------------------------------- agent exports as runs


def test_exports_with_flag_expectations_make_one_case_per_file():
    t = load_exports([EXPORTS / "claude_tool_stream.jsonl", EXPORTS / "codex_tool.jsonl"],
                     expectations={"expectedOutputContains": "hello from notes", "maxTokens": 100000})
    assert [c.id for c in t.cases] == ["claude_tool_stream", "codex_tool"]
    assert [m["matched_by"] for m in t.matches] == ["id", "id"]
    assert [s["format"] for s in t.sources] == ["claude-stream", "codex"]
    assert t.assigned["codex_tool"].cost_usd is None


def test_exports_with_a_cases_file_match_by_stem_then_index(tmp_path):
    cases = tmp_path / "cases.json"
    cases.write_text(json.dumps({"cases": [{"id": "codex_plain", "expectedOutputContains": "42"},
                                           {"expectedStatus": "error"}]}))
    t = load_exports([EXPORTS / "claude_plain.json", EXPORTS / "codex_error.jsonl"], cases_file=cases)
    assert [(m["case_id"], m["matched_by"], m["run_id"]) for m in t.matches] == [
        ("codex_plain", "index", "claude_plain"), ("case-2", "index", "codex_error")]
    t = load_exports([EXPORTS / "codex_error.jsonl", EXPORTS / "codex_plain.jsonl"], cases_file=cases)
    assert t.matches[0]["matched_by"] == "id" and t.matches[0]["run_id"] == "codex_plain"


def test_exports_refuse_checks_they_cannot_support():
    with pytest.raises(ConfigError, match="record no tool calls"):
        load_exports([EXPORTS / "claude_plain.json"], expectations={"requiredTools": ["Read"]})
    with pytest.raises(ConfigError, match="no duration"):
        load_exports([EXPORTS / "codex_plain.jsonl"], expectations={"maxLatencyMs": 100})
    with pytest.raises(ConfigError, match="need expectations"):
        load_exports([EXPORTS / "codex_plain.jsonl"])
    with pytest.raises(ConfigError, match="not both"):
        load_exports([EXPORTS / "codex_plain.jsonl"], cases_file="x.json", expectations={"expectedStatus": "x"})


def test_same_file_names_get_unique_run_ids(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    for d in (a, b):
        (d / "run.jsonl").write_bytes((EXPORTS / "codex_plain.jsonl").read_bytes())
    t = load_exports([a / "run.jsonl", b / "run.jsonl"], expectations={"expectedStatus": "completed"})
    assert [c.id for c in t.cases] == ["run", "run-2"]


# --------------------------------------------------------------------------- limit graders


def _ctx(**m):
    return GradeContext(Case(id="c", input=None), Output(text="x"), Measurements(**m))


def test_max_cost_grader():
    g = build_grader({"max-cost": {"max": 0.05}})
    assert g.spec == {"max-cost": {"max": 0.05}}
    assert g.grade(_ctx(cost_usd=0.05)).passed is True
    assert g.grade(_ctx(cost_usd=0.0501)).passed is False
    unknown = g.grade(_ctx(cost_usd=None))
    assert unknown.passed is None and "unknown" in unknown.reason
    assert build_grader({"max-cost": 1}).options == {"max": 1}
    assert build_grader({"max-cost": 0}).grade(_ctx(cost_usd=0.0)).passed is True


def test_max_tokens_grader_sums_input_and_output():
    g = build_grader({"max-tokens": {"max": 100}})
    assert g.grade(_ctx(input_tokens=60, output_tokens=40)).passed is True
    failed = g.grade(_ctx(input_tokens=60, output_tokens=41))
    assert failed.passed is False and "101 tokens" in failed.reason
    assert g.grade(_ctx(input_tokens=60, output_tokens=None)).passed is None
    assert g.grade(_ctx(input_tokens=None, output_tokens=None)).passed is None


@pytest.mark.parametrize("spec", [
    {"max-cost": -0.1}, {"max-cost": "1"}, {"max-cost": True}, {"max-cost": {"limit": 1}},
    {"max-cost": float("nan")}, {"max-tokens": 1.5}, {"max-tokens": -1}, {"max-tokens": None},
])
def test_limit_graders_reject_bad_options(spec):
    with pytest.raises(ConfigError):
        build_grader(spec)
