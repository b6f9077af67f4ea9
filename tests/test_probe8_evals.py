"""Probe 8: real OpenAI Evals registry entries (their shapes, written small here) through
`scoreboard import openai-evals`, from the outside: every entry is converted as OpenAI Evals runs
it, or listed where it cannot be (never an internal error), and the suite written validates."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def scoreboard(args, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, SCOREBOARD_STORE="none", OPENAI_API_KEY="test-key")
    return subprocess.run([sys.executable, "-m", "scoreboard", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300, check=False)


def registry(tmp: Path, entries: str) -> None:
    write(tmp / "registry" / "evals" / "probe.yaml", entries)
    write(tmp / "registry" / "data" / "qa" / "samples.jsonl",
          json.dumps({"input": [{"role": "system", "content": "Answer tersely."},
                                {"role": "user", "content": "Capital of France?"}], "ideal": "Paris"}) + "\n"
          + json.dumps({"input": "Capital of Peru?", "ideal": ["Lima"]}) + "\n")
    write(tmp / "registry" / "data" / "qa" / "json.jsonl",
          json.dumps({"input": "Shape?", "ideal": '{"sides": 4}'}) + "\n")


def converted(tmp: Path) -> tuple[subprocess.CompletedProcess, str, list[dict]]:
    done = scoreboard(["import", "openai-evals", "registry/evals/probe.yaml", "--output", "out"], tmp)
    report = (tmp / "out" / "conversion-report.md").read_text() if (tmp / "out").is_dir() else ""
    cases = [json.loads(x) for x in (tmp / "out" / "cases.jsonl").read_text().splitlines()] \
        if (tmp / "out" / "cases.jsonl").is_file() else []
    return done, report, cases


def not_converted(report: str) -> str:
    return report.split("## Not converted", 1)[1].split("## Converted with a difference", 1)[0]


GRADED = """\
ok.dev.v0:
  class: evals.elsuite.modelgraded.classify:ModelBasedClassify
  args: {samples_jsonl: qa/samples.jsonl, modelgraded_spec: fact, eval_type: cot_classify}
listed-type.dev.v0:
  class: evals.elsuite.modelgraded.classify:ModelBasedClassify
  args: {samples_jsonl: qa/samples.jsonl, modelgraded_spec: fact, eval_type: [cot_classify]}
listed-match.dev.v0:
  class: evals.elsuite.modelgraded.classify:ModelBasedClassify
  args: {samples_jsonl: qa/samples.jsonl, modelgraded_spec: fact, eval_type: cot_classify, match_fn: [include]}
listed-sample-kwargs.dev.v0:
  class: evals.elsuite.modelgraded.classify:ModelBasedClassify
  args: {samples_jsonl: qa/samples.jsonl, modelgraded_spec: fact, eval_type: cot_classify, sample_kwargs: [0.4]}
listed-eval-kwargs.dev.v0:
  class: evals.elsuite.modelgraded.classify:ModelBasedClassify
  args: {samples_jsonl: qa/samples.jsonl, modelgraded_spec: fact, eval_type: cot_classify, eval_kwargs: [1]}
"""


def test_classify_arguments_of_the_wrong_shape_are_listed_not_an_internal_error(tmp_path):
    # eval_type as a list was `TypeError: unhashable type: 'list'` and sample_kwargs as a list
    # `'list' object is not a mapping`: the whole import stopped (exit 2) and nothing was written
    registry(tmp_path, GRADED)
    done, report, cases = converted(tmp_path)
    assert "internal error" not in done.stderr
    assert done.returncode == 3, done.stderr
    listed = not_converted(report)
    assert "listed-type.dev.v0: eval_type ['cot_classify'] is not one of" in listed
    assert "listed-match.dev.v0: match_fn ['include'] is not one of" in listed
    assert "listed-sample-kwargs.dev.v0: sample_kwargs [0.4] is not a mapping" in listed
    assert "listed-eval-kwargs.dev.v0: eval_kwargs [1] is not a mapping" in listed
    assert sorted(c["id"] for c in cases) == ["ok.dev.v0-1", "ok.dev.v0-2"]
    check = scoreboard(["validate", "out/suite.yaml"], tmp_path)
    assert check.returncode == 0, check.stderr


KWARGS = """\
top-p.dev.v0:
  class: evals.elsuite.modelgraded.classify:ModelBasedClassify
  args: {samples_jsonl: qa/samples.jsonl, modelgraded_spec: fact, eval_type: cot_classify,
         sample_kwargs: {temperature: 0.4, top_p: 0.5}}
judge-kwargs.dev.v0:
  class: evals.elsuite.modelgraded.classify:ModelBasedClassify
  args: {samples_jsonl: qa/samples.jsonl, modelgraded_spec: fact, eval_type: cot_classify,
         eval_kwargs: {max_tokens: 64, seed: 3}}
clash.dev.v0:
  class: evals.elsuite.modelgraded.classify:ModelBasedClassify
  args: {samples_jsonl: qa/samples.jsonl, modelgraded_spec: fact, eval_type: cot_classify,
         sample_kwargs: {completion_kwargs: {top_p: 0.9}}}
stop.dev.v0:
  class: evals.elsuite.modelgraded.classify:ModelBasedClassify
  args: {samples_jsonl: qa/samples.jsonl, modelgraded_spec: fact, eval_type: cot_classify,
         sample_kwargs: {temperature: 0.4, completion_kwargs: {stop: ["\\n\\n"]}}}
"""


def test_sample_kwargs_are_what_prompt_fn_takes_and_sends(tmp_path):
    # PromptFn(prompt, completion_fn, max_tokens, temperature, n_samples, completion_kwargs): any
    # other key is a TypeError in OpenAI Evals (the entry never runs), so is a completion_kwargs
    # key PromptFn sends itself; top_p was dropped without a word, and completion_kwargs (sent
    # with every request) too
    registry(tmp_path, KWARGS)
    done, report, cases = converted(tmp_path)
    assert done.returncode == 3, done.stderr
    listed = not_converted(report)
    assert "top-p.dev.v0: sample_kwargs has 'top_p', which PromptFn does not take" in listed
    assert "judge-kwargs.dev.v0: eval_kwargs has 'seed', which PromptFn does not take" in listed
    assert "clash.dev.v0: sample_kwargs.completion_kwargs has 'top_p', which PromptFn sends itself" in listed
    assert sorted(c["id"] for c in cases) == ["stop.dev.v0-1", "stop.dev.v0-2"]
    params = yaml.safe_load((tmp_path / "out" / "suite.yaml").read_text())["subject"]["params"]
    assert params == {"max_tokens": 1024, "temperature": 0.4, "top_p": 1, "frequency_penalty": 0,
                      "presence_penalty": 0, "stop": ["\n\n"]}


TOKENS = """\
fuzzy.dev.v0:
  class: evals.elsuite.basic.fuzzy_match:FuzzyMatch
  args: {samples_jsonl: qa/samples.jsonl, max_tokens: [64]}
json.dev.v0:
  class: evals.elsuite.basic.json_match:JsonMatch
  args: {samples_jsonl: qa/json.jsonl, max_tokens: "512"}
graded.dev.v0:
  class: evals.elsuite.modelgraded.classify:ModelBasedClassify
  args: {samples_jsonl: qa/samples.jsonl, modelgraded_spec: fact, eval_type: cot_classify,
         sample_kwargs: {max_tokens: 0}}
match.dev.v0:
  class: evals.elsuite.basic.match:Match
  args: {samples_jsonl: qa/samples.jsonl, max_tokens: "never sent"}
"""


def test_max_tokens_no_request_can_carry_is_listed_and_the_suite_validates(tmp_path):
    # FuzzyMatch / JsonMatch send max_tokens with every request (ModelBasedClassify its
    # sample_kwargs'): a list, a text or 0 went into the subject's params, the import said
    # "run it", and validate refused the suite ('max_tokens' must be a whole number)
    registry(tmp_path, TOKENS)
    done, report, cases = converted(tmp_path)
    assert done.returncode == 3, done.stderr
    listed = not_converted(report)
    assert "fuzzy.dev.v0: max_tokens [64] is not a whole number of at least 1" in listed
    assert "json.dev.v0: max_tokens '512' is not a whole number of at least 1" in listed
    assert "graded.dev.v0: sample_kwargs.max_tokens 0 is not a whole number of at least 1" in listed
    assert sorted(c["id"] for c in cases) == ["match.dev.v0-1", "match.dev.v0-2"]  # Match never sends it
    check = scoreboard(["validate", "out/suite.yaml"], tmp_path)
    assert check.returncode == 0, check.stderr


NAMES = """\
"tab\\tname.dev.v0":
  class: evals.elsuite.basic.match:Match
  args: {samples_jsonl: qa/samples.jsonl}
"fine name.dev.v0":
  class: evals.elsuite.basic.match:Match
  args: {samples_jsonl: qa/samples.jsonl}
"""


def test_an_entry_name_no_case_id_can_hold_is_listed(tmp_path):
    # OpenAI Evals runs an entry whose name holds a tab; its cases' ids (name-N) did not load:
    # the import exited 0 and validate refused the suite
    registry(tmp_path, NAMES)
    done, report, cases = converted(tmp_path)
    assert done.returncode == 3, done.stderr
    assert "tab\\tname.dev.v0': its name holds a control character (U+0009)" in not_converted(report)
    assert sorted(c["id"] for c in cases) == ["fine name.dev.v0-1", "fine name.dev.v0-2"]
    check = scoreboard(["validate", "out/suite.yaml"], tmp_path)
    assert check.returncode == 0, check.stderr
