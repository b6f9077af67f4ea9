"""Suite files as people write them, typed strictly: a value of the wrong type is refused with
one line naming the file and the field, never coerced into something the author did not write
(`runs: "3"` ran three times, `require_live: "no"` turned the live guard off, `cache: 1`
switched the cache on, `budget: {max_requests: true}` was a budget of one request)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from scoreboard.errors import ConfigError, ConfigErrors
from scoreboard.suite.load import load_suite
from tests.cli_inprocess import run_cli


def scoreboard(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return run_cli(args, cwd)


def write(folder: Path, extra: str, name: str = "suite.yaml") -> Path:
    cases = [{"id": "a", "input": "hi", "expected": "hi"}, {"id": "b", "input": "yo", "expected": "yo"}]
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    suite = folder / name
    suite.write_text("cases: cases.jsonl\nsubject: mock\ngraders: [exact]\n" + extra)
    return suite


def refused(suite: Path) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_suite(suite, {}, offline=True)
    exc = info.value
    return exc.lines() if isinstance(exc, ConfigErrors) else [str(exc)]


# (suite text, field, what the message says the value must be)
WRONG_TYPES = [
    # whole numbers written as text or as a boolean
    ('runs: "3"\n', "runs", "must be a whole number (got '3')"),
    ("runs: true\n", "runs", "must be a whole number (got True)"),
    ('concurrency: "4"\n', "concurrency", "must be a whole number"),
    ('timeout_ms: "1000"\n', "timeout_ms", "must be a whole number"),
    ('seed: "7"\n', "seed", "must be a whole number"),
    ("seed: true\n", "seed", "must be a whole number"),
    ('checkpoint_every: "10"\n', "checkpoint_every", "must be a whole number"),
    ('judge_runs: "3"\n', "judge_runs", "must be a whole number"),
    ('limits: {max_cases: "10"}\n', "limits.max_cases", "must be a whole number"),
    ('limits: {conversation: {max_turns: "5"}}\n', "limits.conversation.max_turns", "must be a whole number"),
    ('limits: {live: {max_requests: "5"}}\n', "limits.live.max_requests", "must be a whole number"),
    ("budget: {max_requests: true}\n", "budget.max_requests", "must be a whole number"),
    ('budget: {max_tokens: "1000"}\n', "budget.max_tokens", "must be a whole number"),
    ('render: {width: "800"}\n', "render.width", "must be a whole number"),
    ('stages: {screen: {first: "2"}}\n', "stages.screen.first", "must be a whole number"),
    # numbers written as text or as a boolean
    ('budget: {max_cost_usd: "5"}\n', "budget.max_cost_usd", "must be a number (got '5')"),
    ("budget: {max_cost_usd: true}\n", "budget.max_cost_usd", "must be a number (got True)"),
    ('grace_seconds: "30"\n', "grace_seconds", "must be a number"),
    ('checkpoint_seconds: "10"\n', "checkpoint_seconds", "must be a number"),
    ('gates: {max_regression: "0.05"}\n', "gates.max_regression", "must be a number"),
    ("gates: {max_regression: true}\n", "gates.max_regression", "must be a number"),
    ('gates: {alpha: "0.05"}\n', "gates.alpha", "must be a number"),
    ('max_dq_drop: "0.5"\n', "max_dq_drop", "must be a number"),
    ('prices: {m: {input_per_mtok: "0.15", output_per_mtok: 0.6}}\n', "prices.m.input_per_mtok", "must be a number"),
    ('render: {device_scale_factor: "2"}\n', "render.device_scale_factor", "must be a number"),
    # booleans written as text or as a number ("no" and "false" were read as false, "1" as true)
    ('require_live: "no"\n', "require_live", "must be true or false (got 'no')"),
    ('require_isolation: "false"\n', "require_isolation", "must be true or false"),
    ("cache: 1\n", "cache", "must be true or false (got 1)"),
    ('allow_case_code: "yes"\n', "allow_case_code", "must be true or false"),
    ('trust_unchecked_judge: "on"\n', "trust_unchecked_judge", "must be true or false"),
    ('gates: {require_significance: "true"}\n', "gates.require_significance", "must be true or false"),
    ('render: {full_page: "yes"}\n', "render.full_page", "must be true or false"),
]


@pytest.mark.parametrize("text, field, message", WRONG_TYPES, ids=[f"{f}={t.split(':', 1)[1].strip()}"
                                                                    for t, f, _ in WRONG_TYPES])
def test_a_suite_setting_of_the_wrong_type_is_refused_naming_file_and_field(tmp_path, text, field, message):
    suite = write(tmp_path, text)
    lines = refused(suite)
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"{suite}"), lines
    assert f"field '{field}': {message}" in lines[0], lines


@pytest.mark.parametrize("text", ['judge: mock\npairwise: "yes"\n', 'render: "on"\n', "judge: mock\npairwise: 1\n"])
def test_a_switch_that_also_takes_a_mapping_refuses_text_and_numbers(tmp_path, text):
    lines = refused(write(tmp_path, text))
    assert len(lines) == 1 and "must be true or false" in lines[0], lines


def test_runs_given_as_text_fails_validate_with_one_line_and_exit_1(tmp_path):
    suite = write(tmp_path, 'runs: "3"\n')
    proc = scoreboard("validate", str(suite), cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout
    assert proc.stderr.strip().splitlines() == [
        f"scoreboard: error: {suite}:4, field 'runs': must be a whole number (got '3')"]


def test_yaml_exponent_without_a_dot_is_a_number_where_a_number_is_wanted(tmp_path):
    # PyYAML (YAML 1.1) reads 1e-3 as the text "1e-3"; YAML 1.2 and its author read a number:
    # taken as one where a number is wanted, and refused (as text) where a whole number is
    suite = load_suite(write(tmp_path, "budget: {max_cost_usd: 1e-3}\ngates: {alpha: 5e-2}\n"), {}, offline=True)
    assert suite.config.budget.max_cost_usd == 0.001 and suite.config.gates.alpha == 0.05
    lines = refused(write(tmp_path, "budget: {max_requests: 1e3}\n"))
    assert len(lines) == 1 and "field 'budget.max_requests': must be a whole number (got '1e3')" in lines[0], lines


@pytest.mark.parametrize("text", [
    "runs: 3\n", "cache: true\n", "cache: false\n", "require_live: false\n",
    "budget: {max_cost_usd: 5}\n",  # a whole number where a number is wanted
    "budget: {max_cost_usd: 1.0e-3}\n", "gates: {alpha: 0.01, require_significance: true}\n",
    "judge: mock\npairwise: true\n", "category: smoke\n", "case: [a]\n", "fail_under: 1\n", "fail_under: {mock: 0.5}\n",
    "render: false\n",
])
def test_the_documented_forms_still_load(tmp_path, text):
    suite = write(tmp_path, text)
    if text.startswith("category"):
        (tmp_path / "cases.jsonl").write_text(json.dumps({"id": "a", "input": "x", "expected": "x",
                                                          "category": "smoke"}) + "\n")
    load_suite(suite, {}, offline=True)


def test_toml_and_json_suites_are_held_to_the_same_types(tmp_path):
    write(tmp_path, "")
    toml = tmp_path / "suite.toml"
    toml.write_text('cases = "cases.jsonl"\nsubject = "mock"\ngraders = ["exact"]\nruns = "3"\n')
    assert "field 'runs': must be a whole number (got '3')" in refused(toml)[0]
    js = tmp_path / "suite.json"
    js.write_text(json.dumps({"cases": "cases.jsonl", "subject": "mock", "graders": ["exact"], "cache": "false"}))
    assert "field 'cache': must be true or false (got 'false')" in refused(js)[0]


# --- a variant's task mode is checked against its tasks before anything runs ---------------------
AGENT_TASK = Path(__file__).resolve().parents[1] / "examples" / "agent-task"


def agent_suite(tmp_path: Path, mode_line: str, modes: str | None = None) -> Path:
    import shutil

    folder = tmp_path / "agent-task"
    shutil.copytree(AGENT_TASK, folder, ignore=shutil.ignore_patterns("__pycache__"))
    suite = folder / "suite.yaml"
    suite.write_text(suite.read_text().replace("params: {mode: hostile-result}", mode_line))
    if modes is not None:
        task = folder / "tasks" / "wishlist" / "task.yaml"
        text = task.read_text()
        assert "modes: [ordinary, hostile, hostile-schema, hostile-result]" in text
        task.write_text(text.replace("modes: [ordinary, hostile, hostile-schema, hostile-result]", modes))
    return suite


def test_a_variant_naming_a_mode_its_task_lacks_fails_validate_not_every_attempt(tmp_path):
    # A misspelt mode passed `validate`, and at run time every attempt of the variant was an error.
    suite = agent_suite(tmp_path, "params: {mode: hostile-reslt}")
    proc = scoreboard("validate", str(suite), cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout
    assert proc.stderr.strip().splitlines() == [
        f"scoreboard: error: {suite}:17, field 'variants.hostile-result.params.mode': variant 'hostile-result' "
        "runs mode 'hostile-reslt', which task 'wishlist' does not have (its modes: ordinary, hostile, "
        "hostile-schema, hostile-result)"]


@pytest.mark.parametrize("mode_line, modes, wanted", [
    # a mode the task does not list
    ("params: {mode: hostile}", "modes: [ordinary, hostile-result]", "runs mode 'hostile', which task 'wishlist'"),
    # no mode is the ordinary mode, which this task does not offer
    ("params: {}", "modes: [hostile, hostile-schema, hostile-result]", "runs mode 'ordinary', which task"),
    # a mode that is not text was run as ordinary
    ("params: {mode: [hostile-result]}", None, "a task's mode is text"),
    ("params: {mode: true}", None, "a task's mode is text"),
])
def test_a_task_mode_is_checked_when_the_suite_loads(tmp_path, mode_line, modes, wanted):
    suite = agent_suite(tmp_path, mode_line, modes)
    lines = refused(suite)  # one line per variant that cannot run its task
    assert all(line.startswith(f"{suite}:") and ", field 'variants." in line for line in lines), lines
    ours = [line for line in lines if line.startswith(f"{suite}:17, field 'variants.hostile-result.params.mode': ")]
    assert len(ours) == 1 and wanted in ours[0], lines


def test_the_agent_task_example_still_validates(tmp_path):
    load_suite(agent_suite(tmp_path, "params: {mode: hostile-result}"), {}, offline=True)


# --- a suite's own subject spec that cannot be read names the suite file -----------------------
@pytest.mark.parametrize("text, field", [
    ("subject: echo\n", "subject"),               # no such kind (promptfoo's provider name)
    ("subject: {model: gpt-4o}\n", "subject.type"),  # a mapping without its type
    ("subject: ''\n", "subject"),
])
def test_the_suites_own_subject_spec_error_names_the_suite_file(tmp_path, text, field):
    suite = write(tmp_path, "")
    suite.write_text(suite.read_text().replace("subject: mock\n", text))
    proc = scoreboard("validate", str(suite), cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"scoreboard: error: {suite}:2, field '{field}': "), lines


def test_a_subject_flag_error_still_names_the_flag_not_the_suite(tmp_path):
    suite = write(tmp_path, "")
    proc = scoreboard("plan", str(suite), "--subject", "echo", cwd=tmp_path)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and str(suite) not in lines[0] and "unknown subject kind 'echo'" in lines[0], lines


# --- params scoreboard itself reads from a model subject's request body ------------------------
@pytest.mark.parametrize("subject, variant_params, field, wanted", [
    # "100" went to the API as text (a 400 for every attempt) and bounded nothing for a budget
    ("{type: openai, model: gpt-4o}", '{max_tokens: "100"}', "variants.a.params.max_tokens", "a whole number"),
    ("{type: openai, model: gpt-4o}", "{max_completion_tokens: 100.5}", "variants.a.params.max_completion_tokens",
     "a whole number"),
    ("{type: openai, model: gpt-4o}", '{n: "2"}', "variants.a.params.n", "a whole number"),
    # stream: "no" streamed (bool("no") is true)
    ("{type: openai, model: gpt-4o}", '{stream: "no"}', "variants.a.params.stream", "true or false"),
    ("{type: anthropic, model: claude-x}", '{max_tokens: "100"}', "variants.a.params.max_tokens", "a whole number"),
    ("{type: openai, model: gpt-4o, params: {max_tokens: '100'}}", "{}", "subject.params.max_tokens",
     "a whole number"),
    ("{type: anthropic, model: claude-x, params: {stream: 'false'}}", "{}", "subject.params.stream",
     "true or false"),
])
def test_a_model_params_value_scoreboard_reads_is_typed(tmp_path, subject, variant_params, field, wanted):
    suite = write(tmp_path, "")
    suite.write_text(suite.read_text().replace("subject: mock\n", f"subject: {subject}\n")
                     + f"variants: {{a: {{params: {variant_params}}}}}\n")
    lines = refused(suite)
    assert len(lines) == 1, lines
    line = 4 if field.startswith("variants.") else 2  # the appended `variants:`, or `subject:`
    assert lines[0].startswith(f"{suite}:{line}, field '{field}': ") and wanted in lines[0], lines


def test_model_params_of_the_right_types_still_load(tmp_path):
    suite = write(tmp_path, "")
    suite.write_text(suite.read_text().replace("subject: mock\n", "subject: {type: openai, model: gpt-4o, "
                                               "params: {max_tokens: 100, stream: false}}\n")
                     + "variants: {a: {params: {temperature: '0.2', max_completion_tokens: 50, n: 1}}}\n")
    load_suite(suite, {}, offline=True)  # a param scoreboard does not read is the provider's to judge


@pytest.mark.parametrize("options, field", [
    ('latency_ms: "5"', "subject.latency_ms"),   # every attempt failed at run time
    ("latency_ms: true", "subject.latency_ms"),
    ("runs: {a: hi}", "subject.runs"),            # a run's output picked by index from the text 'hi'
])
def test_the_mock_subjects_options_are_typed(tmp_path, options, field):
    suite = write(tmp_path, "")
    suite.write_text(suite.read_text().replace("subject: mock\n", f"subject: {{type: mock, {options}}}\n"))
    lines = refused(suite)
    assert len(lines) == 1 and lines[0].startswith(f"{suite}:2, field '{field}': "), lines


# --- the files a suite's cases: names as settings: a dataset reader, a task.yaml ---------------
@pytest.mark.parametrize("options, field", [
    ('limit: "1"', "cases.limit"),        # "1" read one record
    ("auto_id: 1", "cases.auto_id"),
    ('shuffle: "no"', "cases.shuffle"),   # "no" was read as false, "yes" as true
    ('max_rows: "10"', "cases.max_rows"),
])
def test_a_dataset_readers_settings_are_typed(tmp_path, options, field):
    rows = [{"input": "2+2?", "target": "4"}, {"input": "3+3?", "target": "6"}]
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    suite = tmp_path / "suite.yaml"
    ids = "" if "auto_id" in options else "auto_id: true, "
    suite.write_text(f"cases: {{format: inspect, path: data.jsonl, {ids}{options}}}\nsubject: mock\n")
    lines = refused(suite)
    assert len(lines) == 1 and lines[0].startswith(f"{suite}:1, field '{field}': "), lines


@pytest.mark.parametrize("edit, field", [
    (("timeout: 120\n", 'timeout: "120"\n'), "timeout"),
    (("skill_file:", 'max_tool_output_bytes: "8192"\nskill_file:'), "max_tool_output_bytes"),
    (("  audit: /audit\n", '  audit: /audit\n  shared: "no"\n'), "environment.shared"),
    (("run: [python3, checks/wishlist.py]\n", 'run: [python3, checks/wishlist.py]\n    timeout: "30"\n'),
     "checks.0.timeout"),
])
def test_a_task_files_settings_are_typed(tmp_path, edit, field):
    suite = agent_suite(tmp_path, "params: {mode: hostile-result}")
    task = suite.parent / "tasks" / "wishlist" / "task.yaml"
    text = task.read_text()
    assert edit[0] in text
    task.write_text(text.replace(edit[0], edit[1], 1))
    bad = next(part for part in edit[1].splitlines() if '"' in part)  # the line of the mistyped value
    line = task.read_text().splitlines().index(bad) + 1
    lines = refused(suite)
    assert len(lines) == 1 and lines[0].startswith(f"{task}:{line}, case 'wishlist', field '{field}': "), lines
