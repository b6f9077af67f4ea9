"""Probing the judge figures (round 3): the instrument check's counts when the judge fails, the
Markdown's judge section, judge prompts naming undefined variables, and a bad --judge spec."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from scoreboard.stats.instrument import InstrumentAccumulator

# ------------------------------------------------------------------------- the instrument check


def _plan(repeats: int = 2) -> dict:
    return {"variants": [{"name": n} for n in ("good", "blank", "unstyled")],
            "instrument": {"judge_hash": "h" * 64, "grader": {"pointwise": {}}, "repeats": repeats,
                           "min_accuracy": 0.5, "min_self_agreement": 0.5, "position_alpha": 0.05,
                           "pairwise": False}}


def _attempt(variant: str, case: str, run: int, score: int | None) -> dict:
    grade = {"grader": "pointwise", "passed": None, "scores": None} if score is None else \
        {"grader": "pointwise", "passed": True, "scores": {"quality": score}}
    return {"variant": variant, "case_id": case, "run": run, "grades": [grade]}


def _check(answers: dict[tuple[str, str], list[int | None]], repeats: int = 2) -> dict:
    acc = InstrumentAccumulator(_plan(repeats))
    for (variant, case), scores in answers.items():
        for run, score in enumerate(scores, 1):
            acc.add(_attempt(variant, case, run, score))
    return acc.summary(None)


def test_pairs_the_judge_left_unjudged_count_against_the_check():
    """The judge failed on every blank page: half the pairs were judged, all correctly. The check
    counted only those (2/2, passed at min_accuracy 0.5 while judging half the pairs); the
    unjudged pairs now count as not above."""
    answers = {}
    for case in ("c1", "c2"):
        answers[("good", case)] = [3, 3]
        answers[("unstyled", case)] = [1, 1]
        answers[("blank", case)] = [None, None]
    answers[("good", "c3")] = [3, 3]
    answers[("unstyled", "c3")] = [3, 3]  # a tie: judged, not above
    answers[("blank", "c3")] = [None, None]
    out = _check(answers)
    a = out["accuracy"]
    assert (a["count"], a["of"], a["unjudged_pairs"], a["ties"]) == (2, 6, 3, 1)
    assert a["value"] == 2 / 6 and a["ci"]["method"] == "wilson"
    assert out["passed"] is False and out["status"] == "failed"
    assert out["reasons"][0] == ("ranked good above degraded on 33.3% of 6 pairs; 3 pairs not judged, which "
                                 "count as not above (needs 50%)")


def test_a_judge_that_fails_on_every_good_control_shows_every_pair_unjudged():
    """With no good control judged, `unjudged_pairs` was 0 (the loop ran over the judged good
    controls only) and the reason read "ranked good above degraded on no pair judged of pairs"."""
    answers = {}
    for case in ("c1", "c2"):
        answers[("good", case)] = [None, None]
        answers[("unstyled", case)] = [1, 1]
        answers[("blank", case)] = [0, 0]
    out = _check(answers)
    a = out["accuracy"]
    assert (a["count"], a["of"], a["unjudged_pairs"], a["value"]) == (0, 4, 4, 0.0)
    assert out["judge_failures"] == 4 and out["passed"] is False
    assert out["reasons"][0] == ("ranked good above degraded on 0.0% of 4 pairs; 4 pairs not judged, which "
                                 "count as not above (needs 50%)")


def test_a_check_with_no_attempt_says_no_control_was_judged():
    out = _check({})
    assert out["accuracy"]["value"] is None and out["accuracy"]["of"] == 0
    assert out["reasons"][0] == "no control was judged (needs good above degraded on 50% of pairs)"


def test_a_repeat_the_judge_failed_beside_an_answer_is_not_agreement():
    """Self-agreement left out every judge failure: a control answered once and failed twice (or
    answered twice and failed once) counted as agreeing with itself."""
    answers = {("good", "c1"): [3, 3, None], ("blank", "c1"): [0, 0, 0], ("unstyled", "c1"): [1, None, None]}
    out = _check(answers, repeats=3)
    s = out["self_agreement"]
    assert (s["count"], s["of"]) == (1, 3)
    assert out["accuracy"]["unjudged_pairs"] == 0 and out["accuracy"]["count"] == 2


# ------------------------------------------------------------------------- the Markdown's judge section


def _judges_block() -> dict:
    """A judge block as a run writes it: variant `flaky` scored on one case of three."""
    def ci(low, high, cases):
        return {"low": low, "high": high, "level": 0.95, "method": "student-t", "unit": "case", "cases": cases,
                "small_sample": True}

    def variant(mean, low, high, cases):
        return {"judged": cases, "judge_failures": 3 - cases, "pointwise": {"clarity": mean, "correctness": mean},
                "pointwise_ci": {"clarity": ci(low, high, cases), "correctness": ci(low, high, cases)}}

    return {"variants": {"good": variant(2.0, 1.0, 2.5, 3), "flaky": variant(2.0, 0.41, 2.79, 1)},
            "dq": [{"a": "good", "b": "flaky", "cases": 1, "dq": 0.0,
                    "ci": {"low": -2.38, "high": 2.38, "level": 0.95, "method": "student-t", "unit": "case",
                           "cases": 1}, "small_sample": True, "flags": ["small sample: fewer than 30 cases"]}]}


def test_the_markdown_dq_line_says_its_interval_method_and_which_cases_it_is_on():
    """The judge section's dQ line read '+0.00 (95% CI -2.38 to +2.38) on 1 cases': no method,
    and nothing said of the cases left out."""
    from scoreboard.record.markdown_parts import judges_section
    from scoreboard.record.schema_judge import JudgeSummary

    lines = judges_section(JudgeSummary.model_validate(_judges_block()), None)
    (dq,) = [line for line in lines if line.startswith("- **dQ")]
    assert dq == ("- **dQ good − flaky**: +0.00 (95% CI -2.38 to +2.38, student-t) on 1 case where both variants "
                  "have a pointwise score; small sample: fewer than 30 cases")


def test_the_markdown_pointwise_means_carry_their_intervals_and_method():
    """The per-dimension means table showed bare means although the JSON summary has each one's
    interval (pointwise_ci)."""
    from scoreboard.record.markdown_parts import judges_section
    from scoreboard.record.schema_judge import JudgeSummary

    block = _judges_block()
    block["variants"]["flaky"]["pointwise_ci"]["clarity"] = {"low": None, "high": None, "cases": 1}
    lines = judges_section(JudgeSummary.model_validate(block), None)
    assert "| clarity | 2.00 [1.00–2.50, 3 cases] | 2.00 (no interval, 1 case) |" in lines
    assert "| correctness | 2.00 [1.00–2.50, 3 cases] | 2.00 [0.41–2.79, 1 case] |" in lines
    assert "Interval method: student-t (the case is the unit); small sample: fewer than 30 cases." in lines


# ------------------------------------------------------------------------- judge prompts


def _cli(args: list[str], cwd: Path):
    return subprocess.run([sys.executable, "-m", "scoreboard", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120, check=False)


def _prompt_suite(tmp_path: Path, graders: list, case_graders: list | None = None) -> Path:
    (tmp_path / "m.py").write_text("def f(x):\n    return x\n", encoding="utf-8")
    case = {"id": "c1", "input": "hi", "expected": "hi"}
    if case_graders is not None:
        case["graders"] = case_graders
    (tmp_path / "cases.jsonl").write_text(json.dumps(case) + "\n", encoding="utf-8")
    suite = {"name": "p", "cases": "cases.jsonl", "graders": graders, "variants": {"a": {"subject": "python:m:f"}},
             "judge": {"type": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "judge"}}
    (tmp_path / "suite.json").write_text(json.dumps(suite), encoding="utf-8")
    return tmp_path / "suite.json"


@pytest.mark.parametrize("grader", [
    {"llm-judge": {"prompt": "Is {{ output }} right for {{ nosuch.var }}?"}},
    {"classify": {"prompt": "{{ inputs }}: {{ output }}", "choices": ["good", "bad"]}},
    {"rubric-score": {"prompt": "{% if nosuch %}{{ output }}{% endif %}"}},
    {"g-eval": {"criteria": "clear", "prompt": "{{ output }} {{ rubric }} {{ nosuch }}"}},
])
def test_a_judge_prompt_naming_an_undefined_variable_is_refused_at_load(tmp_path, grader):
    """`validate` passed such a suite; every judgment of the run then failed, each attempt 'not
    assessed'. It is refused at load, naming the suite file, the grader and the name."""
    _prompt_suite(tmp_path, ["exact", grader])
    done = _cli(["validate", "suite.json"], tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    name = next(iter(grader))
    err = done.stderr.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith(f"scoreboard: error: suite.json:1, field 'graders[1]': grader '{name}': the prompt names '")
    assert "which a judge prompt is not given: it may use output, expected, input, vars, metadata, rubric" in err[0]


def test_a_case_judge_prompt_naming_an_undefined_variable_names_the_case(tmp_path):
    _prompt_suite(tmp_path, ["exact"], [{"llm-judge": {"prompt": "{{ output }} {{ question }}"}}])
    done = _cli(["validate", "suite.json"], tmp_path)
    assert done.returncode == 1
    assert done.stderr.strip() == ("scoreboard: error: cases.jsonl:1, case 'c1', field 'graders.0': grader 'llm-judge': "
                                   "the prompt names 'question', which a judge prompt is not given: it may use "
                                   "output, expected, input, vars, metadata, rubric")


def test_a_judge_prompt_using_its_names_loops_and_globals_still_loads(tmp_path):
    prompt = ("{% set q = input %}{% for k, v in vars.items() %}{{ k }}={{ v }} {{ loop.index }}{% endfor %}"
              "{{ q }} {{ output }} {{ expected }} {{ metadata }} {{ rubric }} {{ range(2) | list }}")
    _prompt_suite(tmp_path, ["exact", {"llm-judge": {"prompt": prompt}}])
    done = _cli(["validate", "suite.json"], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


# ------------------------------------------------------------------------- the judge spec


@pytest.mark.parametrize(("judge", "field"), [
    ({"type": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "j", "timeout_mss": 5}, "judge.timeout_mss"),
    ({"type": "nosuch"}, "judge.type"),
    ({"type": "openai", "base_url": "http://127.0.0.1:9/v1"}, "judge.model"),
])
def test_a_bad_judge_spec_is_blamed_on_the_judge_not_a_subject(tmp_path, judge, field):
    """`--judge '{..., "timeout_mss": 5}'` said "field 'subject.timeout_mss'", as if a variant's
    subject were wrong; so did the suite's own `judge:`."""
    from scoreboard.errors import ConfigError
    from scoreboard.suite.load import load_suite

    path = _prompt_suite(tmp_path, ["exact", {"llm-judge": {}}])
    with pytest.raises(ConfigError) as flagged:
        load_suite(path, {"judge": judge})
    assert str(flagged.value).startswith(f"field '{field}': ")
    suite = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps({**suite, "judge": judge}), encoding="utf-8")
    with pytest.raises(ConfigError) as own:
        load_suite(path)
    assert str(own.value).startswith(f"{path}:1, field '{field}': ")  # a one-line JSON file


def test_a_judge_spec_string_of_an_unknown_kind_is_blamed_on_the_judge(tmp_path):
    from scoreboard.errors import ConfigError
    from scoreboard.suite.load import load_suite

    path = _prompt_suite(tmp_path, ["exact", {"llm-judge": {}}])
    with pytest.raises(ConfigError) as flagged:
        load_suite(path, {"judge": "nosuch:foo"})
    assert str(flagged.value).startswith("field 'judge': unknown subject kind 'nosuch'")
