"""The suite errors and warnings left without a line by tests/test_probe9_linenos.py name FILE:LINE
too: a gate's bad entry (`fail_under`, `fail_under_metrics`, `min_dq`, `min_rubric`) names its own
line, not its block's (a `--fail-under` flag still names the flag); `validate` on a JSON suite
that does not parse names the line as `run` and `plan` do (it took the file for a case file);
a warning about a key of the suite file names the key's line."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.cli_inprocess import run_cli

CASE = json.dumps({"id": "a", "input": "hi", "expected": "hi"}) + "\n"
TWO = "cases: c.jsonl\nvariants:\n  v1: {subject: mock}\n  v2: {subject: mock}\n"
COMMANDS = (("run", "s.yaml", "--output-dir", "out"), ("validate", "s.yaml"), ("plan", "s.yaml"))


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")}
    env["SCOREBOARD_STORE"] = "none"
    return run_cli(args, cwd, env)


def lines_of(done: subprocess.CompletedProcess, kind: str = "error") -> list[str]:
    head = f"scoreboard: {kind}: "
    return [line.removeprefix(head) for line in done.stderr.splitlines() if line.startswith(head)]


def suite(tmp_path: Path, text: str, name: str = "s.yaml") -> None:
    (tmp_path / "c.jsonl").write_text(CASE, encoding="utf-8")
    (tmp_path / name).write_text(text, encoding="utf-8")


GATES = [
    (TWO + "fail_under:\n  v1: 0.5\n  v9: 0.5\n",
     ["s.yaml:7, field 'fail_under.v9': names an unknown variant 'v9' (variants: v1, v2)"]),
    (TWO + "fail_under_metrics:\n  pass_rate: 0.5\n  bogus: 0.5\n",
     ["s.yaml:7, field 'fail_under_metrics.bogus': unknown metric 'bogus'"]),
    (TWO + "fail_under_metrics:\n  pass_rate: 0.5\n  v1:pass_rate: 5\n",
     ["s.yaml:7, field 'fail_under_metrics.v1:pass_rate': the floor of 'v1:pass_rate' is a share"]),
    (TWO + "graders: [exact, {rubric-score: {rubric: r}}]\njudge: mock\nmin_rubric:\n  v1: 3\n  v7: 2\n",
     ["s.yaml:9, field 'min_rubric.v7': names an unknown variant 'v7' (variants: v1, v2)"]),
    (TWO + "graders: [exact, pointwise]\njudge: mock\nmin_dq:\n  v1/v2: 0.1\n  v1/v3: 0.1\n",
     ["s.yaml:9, field 'min_dq.v1/v3': --min-dq names a pair as A/B of two variants (v1, v2), got 'v1/v3'"]),
    # every bad entry is said, each at its own line
    (TWO + "fail_under:\n  v8: 0.5\n  v1: 0.5\n  v9: 0.5\n",
     ["s.yaml:6, field 'fail_under.v8': names an unknown variant 'v8'",
      "s.yaml:8, field 'fail_under.v9': names an unknown variant 'v9'"]),
]


@pytest.mark.parametrize("text,expected", GATES)
def test_a_bad_gate_entry_names_its_own_line(tmp_path, text, expected):
    suite(tmp_path, text)
    for args in COMMANDS:
        done = cli(tmp_path, *args)
        assert done.returncode == 1, (args, done.stdout, done.stderr)
        got = lines_of(done)
        assert len(got) == len(expected), (args, done.stderr)
        assert all(line.startswith(want) for line, want in zip(got, expected)), (args, done.stderr)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.jsonl", "s.yaml"]


@pytest.mark.parametrize("flag,expected", [
    (["--fail-under", "v8=0.4"], "flag --fail-under: names an unknown variant 'v8' (variants: v1, v2)"),
    (["--fail-under-metric", "bogus=0.4"], "flag --fail-under-metric: unknown metric 'bogus'"),
    (["--min-rubric", "v5=2"], "flag --min-rubric: names an unknown variant 'v5' (variants: v1, v2)"),
])
def test_a_gate_flag_error_still_names_the_flag(tmp_path, flag, expected):
    suite(tmp_path, TWO + "graders: [exact, {rubric-score: {rubric: r}}]\njudge: mock\n")
    done = cli(tmp_path, "plan", "s.yaml", *flag)
    assert done.returncode == 1, done.stderr
    got = lines_of(done)
    assert len(got) == 1 and got[0].startswith(expected), done.stderr


def test_validate_names_the_line_of_a_json_suites_duplicate_key(tmp_path):
    suite(tmp_path, '{\n  "cases": "c.jsonl",\n  "subject": "mock",\n  "runs": 1,\n  "runs": 2\n}\n', "s.json")
    said = []
    for args in (("validate", "s.json"), ("plan", "s.json"), ("run", "s.json", "--output-dir", "out")):
        done = cli(tmp_path, *args)
        assert done.returncode == 1, (args, done.stderr)
        said.append(lines_of(done))
    assert said[0] == said[1] == said[2] == [
        "s.json:5: duplicate key 'runs' (first at line 4, again at line 5: only one may be given)"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.jsonl", "s.json"]


def test_a_json_suites_number_out_of_range_names_its_line(tmp_path):
    suite(tmp_path, '{\n  "cases": "c.jsonl",\n  "subject": "mock",\n  "runs": 1e999\n}\n', "s.json")
    for args in (("validate", "s.json"), ("plan", "s.json"), ("run", "s.json", "--output-dir", "out")):
        done = cli(tmp_path, *args)
        assert done.returncode == 1, (args, done.stderr)
        got = lines_of(done)
        assert len(got) == 1 and got[0].startswith("s.json:4, field 'runs': number 1e999 is out of range"), (
            args, done.stderr)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.jsonl", "s.json"]


def test_a_json_case_file_is_still_checked_as_cases(tmp_path):
    (tmp_path / "cases.json").write_text(json.dumps({"cases": [{"id": "a", "input": "x", "expected": "x"}]}), encoding="utf-8")
    done = cli(tmp_path, "validate", "cases.json")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("OK: 1 case in cases.json")


WARNED = """cases: c.jsonl
variants:
  v1:
    subject: {type: command, argv: [cat]}
    params:
      temperature: 0.2
  v2:
    subject: {type: command, argv: [cat]}
graders:
  - contains: "{{ expected }}"
derived_metrics:
  foo: bar * 2
"""


def test_a_warning_about_a_suite_key_names_its_line(tmp_path):
    suite(tmp_path, WARNED)
    for args in COMMANDS:
        done = cli(tmp_path, *args)
        warned = lines_of(done, "warning")
        for want in ("s.yaml:5, field 'variants.v1.params': the command subject is sent no params",
                     "s.yaml:10, field 'graders[0]': grader 'contains' matches '{{ expected }}' as written",
                     "s.yaml:12, field 'derived_metrics.foo': names 'bar'"):
            assert sum(line.startswith(want) for line in warned) == 1, (args, want, done.stderr)


def test_a_suite_folders_warning_names_its_suite_yaml_and_line(tmp_path):
    (tmp_path / "d").mkdir()
    suite(tmp_path / "d", WARNED, "suite.yaml")
    for args in (("validate", "d"), ("plan", "d")):
        done = cli(tmp_path, *args)
        assert done.returncode == 0, (args, done.stderr)
        warned = lines_of(done, "warning")
        want = f"{os.path.join('d', 'suite.yaml')}:5, field 'variants.v1.params': the command subject"
        assert any(line.startswith(want) for line in warned), (args, done.stderr)


@pytest.mark.parametrize("name, text, expected", [
    ("cases.json", '{"cases": [\n  {"id": "a", "input": "x",\n   "id": "b"}\n]}\n',
     "cases.json:3, case 'b': duplicate key 'id' (first at line 2, again at line 3: only one may be given)"),
    ("list.json", '[\n {"id": "a", "input": "x"},\n {"id": "b",\n  "input": "y", "input": "z"}\n]\n',
     "list.json:4, field '1': duplicate key 'input' (first at line 4, again at line 4: only one may be given)"),
])
def test_a_json_case_document_with_a_key_given_twice_names_its_lines(tmp_path, name, text, expected):
    # the JSON reader finds a duplicate after parsing, with no line: it said "list.json, field '1':
    # duplicate key 'input'" (and a document named the case's first line, not the duplicate's)
    (tmp_path / name).write_text(text, encoding="utf-8")
    done = cli(tmp_path, "validate", name)
    assert done.returncode == 1
    assert lines_of(done) == [expected], done.stderr


SHARED = """name: s
subject: {type: openai, model: m, FIELD: 0.2}
cases: c.jsonl
variants:
  - name: a
    params: {temperature: 0}
  - name: b
    params: {temperature: 1}
"""


@pytest.mark.parametrize("field, hint", [
    ("temperature", "('temperature' is a request parameter: it goes under params, as in params: {temperature: ...})"),
    ("tmprture", "(did you mean the request parameter 'temperature'? it goes under params, as in "
                 "params: {temperature: ...})"),
    ("modle", "(did you mean 'model'?)"),
])
def test_the_suites_own_subject_shared_by_variants_is_refused_once_naming_them(tmp_path, field, hint):
    # the same error was printed once per variant sharing the suite's subject, each naming one
    (tmp_path / "c.jsonl").write_text('{"id": "a", "input": "x"}\n', encoding="utf-8")
    suite(tmp_path, SHARED.replace("FIELD", field))
    for command in ("validate", "plan"):
        done = cli(tmp_path, command, "s.yaml")
        assert done.returncode == 1
        (line,) = lines_of(done)
        assert line.startswith(f"s.yaml:2, field 'subject.{field}': variants 'a', 'b' (the suite's subject): "
                               f"subject 'openai': unknown field {hint}"), line
