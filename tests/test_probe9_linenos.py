"""An error about a setting of a suite file (or a task.yaml, or a graders file) names FILE:LINE of
the offending key, not only the file and the field: the settings are validated after parsing,
where the lines were gone, so `runs: "three"` on line 40 of a long suite read
`suite.yaml, field 'runs': ...` and the user had to search for it."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from scoreboard.errors import ConfigError
from scoreboard.located import key_lines, line_of
from tests.cli_inprocess import run_cli

CASE = json.dumps({"id": "a", "input": "hi", "expected": "hi"}) + "\n"


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    """`python -m scoreboard ARGS` in `cwd`, in-process (these tests are about what it says)."""
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")}
    env["SCOREBOARD_STORE"] = "none"
    return run_cli(args, cwd, env)


def errors_of(done: subprocess.CompletedProcess) -> list[str]:
    return [line.removeprefix("scoreboard: error: ") for line in done.stderr.splitlines()
            if line.startswith("scoreboard: error: ")]


SHAPES = [
    # a wrong type at the top
    ("cases: c.jsonl\nsubject: mock\n\nruns: \"three\"\n",
     "s.yaml:4, field 'runs': must be a whole number (got 'three')"),
    # a misspelt key deep in a variant, with its hint
    ("cases: c.jsonl\nvariants:\n  v1:\n    subject: mock\n    paramz: {}\n",
     "s.yaml:5, field 'variants.v1.paramz': unknown field (did you mean 'params'?)"),
    # a misspelt top-level key
    ("cases: c.jsonl\nsubject: mock\nconcurency: 2\n",
     "s.yaml:3, field 'concurency': unknown field (did you mean 'concurrency'?)"),
    # nested blocks
    ("cases: c.jsonl\nsubject: mock\nlimits:\n  max_depth: 8\n  max_cases: -1\n",
     "s.yaml:5, field 'limits.max_cases': must be more than 0 (got -1)"),
    ("cases: c.jsonl\nsubject: mock\ngates:\n  min: 1\n", "s.yaml:4, field 'gates.min': unknown field"),
    ("cases: c.jsonl\nsubject: mock\nbudget:\n  max_cost_usd: -5\n",
     "s.yaml:4, field 'budget.max_cost_usd': must be at least 0 (got -5)"),
    # flow style over two lines: the line the key is on
    ("{cases: c.jsonl, subject: mock,\n runs: 0}\n", "s.yaml:2, field 'runs': must be at least 1 (got 0)"),
    # a subject option inside a variant: named where it is written (it read 'subject.temprature')
    ("cases: c.jsonl\nvariants:\n  v1:\n    subject: mock\n  v2:\n    subject:\n      type: mock\n"
     "      temprature: 0.5\n",
     "s.yaml:8, field 'variants.v2.subject.temprature': variant 'v2': subject 'mock': unknown field"),
    # a list of variants: the item's place in the list
    ("cases: c.jsonl\nvariants:\n  - subject: mock\n  - subject:\n      type: mock\n      bogus: 2\n",
     "s.yaml:6, field 'variants.1.subject.bogus': variant 'mock-2': subject 'mock': unknown field"),
    # the suite's own subject, taken by a variant that names none: the suite's `subject:` line
    ("cases: c.jsonl\nsubject: {type: mock, bogus: 1}\nvariants:\n  v1: {params: {}}\n",
     "s.yaml:2, field 'subject.bogus': variant 'v1': subject 'mock': unknown field"),
    # the judge and the gates, checked after the settings
    ("cases: c.jsonl\nsubject: mock\n\njudge: {type: mock, bogus: 1}\n",
     "s.yaml:4, field 'judge.bogus'"),
    ("cases: c.jsonl\nsubject: mock\nfail_under:\n  mock: 0.5\n  nope: 0.5\n",
     "s.yaml:5, field 'fail_under.nope': names an unknown variant 'nope'"),
    # a missing required field: the line of the mapping that lacks it
    ("cases: c.jsonl\nsubject: mock\ngates:\n  baseline: base.json\n",
     "s.yaml:3, field 'gates.max_regression': a baseline needs max_regression"),
    # a byte order mark and Windows line ends change no line
    ("\ufeffcases: c.jsonl\r\nsubject: mock\r\nruns: x\r\n", "s.yaml:3, field 'runs': must be a whole number"),
]


@pytest.mark.parametrize("text,expected", SHAPES)
def test_a_suite_setting_error_names_the_line_of_its_key(tmp_path, text, expected):
    (tmp_path / "c.jsonl").write_text(CASE, encoding="utf-8")
    (tmp_path / "s.yaml").write_bytes(text.encode("utf-8"))
    for args in (("run", "s.yaml", "--output-dir", "out"), ("validate", "s.yaml"), ("plan", "s.yaml")):
        done = cli(tmp_path, *args)
        assert done.returncode == 1, (args, done.stdout, done.stderr)
        assert any(line.startswith(expected) for line in errors_of(done)), (args, done.stderr)
        assert not (tmp_path / "out").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.jsonl", "s.yaml"]


def test_every_error_of_a_suite_names_its_own_line(tmp_path):
    (tmp_path / "c.jsonl").write_text(CASE, encoding="utf-8")
    (tmp_path / "s.yaml").write_text("name: x\ncases: c.jsonl\nruns: \"three\"\nvariants:\n  v1:\n    subject: mock\n"
                                     "    timeot_s: 3\nconcurency: 2\n", encoding="utf-8")
    done = cli(tmp_path, "run", "s.yaml", "--output-dir", "out")
    assert done.returncode == 1
    assert errors_of(done) == ["s.yaml:7, field 'variants.v1.timeot_s': unknown field",
                               "s.yaml:3, field 'runs': must be a whole number (got 'three')",
                               "s.yaml:8, field 'concurency': unknown field (did you mean 'concurrency'?)"]
    assert not (tmp_path / "out").exists()


def test_a_suite_folder_names_its_suite_yaml_and_the_line(tmp_path):
    (tmp_path / "c.jsonl").write_text(CASE, encoding="utf-8")
    (tmp_path / "suite.yaml").write_text("cases: c.jsonl\nsubject: mock\nruns: 0\n", encoding="utf-8")
    done = cli(tmp_path, "validate", ".")
    assert done.returncode == 1
    assert errors_of(done) == ["suite.yaml:3, field 'runs': must be at least 1 (got 0)"]


def test_a_flag_error_names_the_flag_and_no_line(tmp_path):
    (tmp_path / "c.jsonl").write_text(CASE, encoding="utf-8")
    (tmp_path / "s.yaml").write_text("cases: c.jsonl\nsubject: mock\nruns: 2\n", encoding="utf-8")
    done = cli(tmp_path, "plan", "s.yaml", "--runs", "0")
    assert done.returncode == 1
    assert errors_of(done) == ["flag --runs: must be at least 1 (got 0)"]


def test_json_and_toml_suites_name_the_line_too(tmp_path):
    (tmp_path / "c.jsonl").write_text(CASE, encoding="utf-8")
    (tmp_path / "s.json").write_text('{\n  "cases": "c.jsonl",\n  "subject": "mock",\n  "limits": {\n'
                                     '    "max_cases": 0\n  }\n}\n', encoding="utf-8")
    (tmp_path / "s.toml").write_text('cases = "c.jsonl"\nsubject = "mock"\nnotes = """\nruns = 1\n"""\n\n'
                                     '[gates]\nmax_regresion = 0.1\n', encoding="utf-8")
    done = cli(tmp_path, "validate", "s.json")
    assert done.returncode == 1
    assert errors_of(done) == ["s.json:5, field 'limits.max_cases': must be more than 0 (got 0)"]
    done = cli(tmp_path, "validate", "s.toml")
    assert done.returncode == 1
    assert sorted(errors_of(done)) == ["s.toml:3, field 'notes': unknown field",
                                       "s.toml:8, field 'gates.max_regresion': unknown field "
                                       "(did you mean 'max_regression'?)"]


def test_a_key_given_twice_names_both_lines(tmp_path):
    """YAML keeps the last of two equal keys silently; the suite refuses it, naming both."""
    (tmp_path / "c.jsonl").write_text(CASE, encoding="utf-8")
    (tmp_path / "s.yaml").write_text("cases: c.jsonl\nruns: 2\nsubject: mock\nruns: 3\n", encoding="utf-8")
    done = cli(tmp_path, "run", "s.yaml", "--output-dir", "out")
    assert done.returncode == 1
    assert errors_of(done) == ["s.yaml:4: duplicate key 'runs' (first at line 2, again at line 4: "
                               "only one may be given)"]
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("text,expected", [
    ("", "s.yaml: a suite file must be a mapping of settings"),
    ("- c.jsonl\n", "s.yaml: a suite file must be a mapping of settings"),
    ("cases: c.jsonl\nsubject: *m\n", "s.yaml:2, field 'subject': YAML alias *m names no anchor before it"),
    ("cases: c.jsonl\n\tsubject: mock\n", "s.yaml:2: invalid YAML: found a tab character"),
])
def test_a_file_that_is_not_a_mapping_of_settings_is_one_line(tmp_path, text, expected):
    (tmp_path / "c.jsonl").write_text(CASE, encoding="utf-8")
    (tmp_path / "s.yaml").write_text(text, encoding="utf-8")
    done = cli(tmp_path, "run", "s.yaml", "--output-dir", "out")
    assert done.returncode == 1
    assert len(errors_of(done)) == 1 and errors_of(done)[0].startswith(expected), done.stderr
    assert not (tmp_path / "out").exists()


def test_a_task_yaml_setting_error_names_its_line(tmp_path):
    (tmp_path / "t" / "workspace").mkdir(parents=True)
    (tmp_path / "t" / "task.yaml").write_text("id: t1\ninstruction: do it\ncheks: []\n", encoding="utf-8")
    (tmp_path / "s.yaml").write_text("cases: t\nsubject: mock\n", encoding="utf-8")
    done = cli(tmp_path, "validate", "s.yaml")
    assert done.returncode == 1
    task = os.path.join("t", "task.yaml")
    assert errors_of(done)[0].startswith(f"{task}:3, case 't1', field 'cheks': unknown field"), done.stderr


def test_a_graders_file_entry_error_names_its_line(tmp_path):
    from scoreboard.suite.from_report import read_graders_file

    path = tmp_path / "g.yaml"
    path.write_text("default: [exact]\ncases:\n  a: [exact]\n  zz: [exact]\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        read_graders_file(str(path), ["a"])
    assert str(info.value) == f"{path}:4, case 'zz', field 'cases.zz': case id not in the report's plan"


def test_line_of_takes_the_nearest_enclosing_key_and_list_indexes():
    lines = key_lines("a:\n  b.c:\n    - x\n    - {d: 1,\n       e: 2}\n")
    assert lines == {"a": 1, "a.b.c": 2, "a.b.c.0": 3, "a.b.c.1": 4, "a.b.c.1.d": 4, "a.b.c.1.e": 5}
    assert line_of("a.b.c[1].e", lines) == 5
    assert line_of("a.b.c.1.missing", lines) == 4
    assert line_of("nowhere", lines) is None
    assert line_of(None, lines) is None
    # a document that stops parsing keeps the lines found before the problem
    assert key_lines("a: 1\nb: [\n")["a"] == 1


def test_a_setting_checked_when_the_run_starts_names_its_line_too(tmp_path):
    """require_live is checked after the suite loaded (a run without --live): its line as well."""
    (tmp_path / "c.jsonl").write_text(CASE, encoding="utf-8")
    (tmp_path / "s.yaml").write_text("cases: c.jsonl\nsubject: mock\n\nrequire_live: true\ncase: [a]\n"
                                     "budget: {max_requests: 3}\n", encoding="utf-8")
    done = cli(tmp_path, "run", "s.yaml", "--output-dir", "out")
    assert done.returncode == 1
    (line,) = errors_of(done)
    assert line.startswith("s.yaml:4, field 'require_live': this suite sets require_live: true"), line
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("text,expected", [
    # found by the walk after json.loads, which has no line: the YAML reading of the text finds it
    ('{\n "cases": "c.jsonl",\n "runs": 2,\n "subject": "mock",\n "runs": 3\n}\n',
     "s.json:5: duplicate key 'runs' (first at line 3, again at line 5: only one may be given)"),
    ('{\n "cases": "c.jsonl",\n "subject": "mock",\n "limits": {"max_cases": 1e999}\n}\n',
     "s.json:4, field 'limits.max_cases': number 1e999 is out of range (not a finite double)"),
])
def test_a_json_suite_refused_after_parsing_names_the_line(tmp_path, text, expected):
    (tmp_path / "c.jsonl").write_text(CASE, encoding="utf-8")
    (tmp_path / "s.json").write_text(text, encoding="utf-8")
    for command in ("run", "plan"):
        done = cli(tmp_path, command, "s.json", "--output-dir", "out") if command == "run" else \
            cli(tmp_path, command, "s.json")
        assert done.returncode == 1
        assert errors_of(done) == [expected], done.stderr
    assert not (tmp_path / "out").exists()


def test_a_prompt_file_that_does_not_parse_names_its_own_line(tmp_path):
    """`prompt: "@p.yaml"` whose YAML is broken said where the suite names it, not where in the
    prompt file the problem is."""
    (tmp_path / "c.jsonl").write_text(CASE, encoding="utf-8")
    (tmp_path / "p.yaml").write_text("- role: system\n  content: hi\n- role: user\n  content: [x\n  y: 1\n",
                                     encoding="utf-8")
    (tmp_path / "s.yaml").write_text("cases: c.jsonl\nsubject: mock\nprompt: \"@p.yaml\"\n", encoding="utf-8")
    done = cli(tmp_path, "run", "s.yaml", "--output-dir", "out")
    assert done.returncode == 1
    (line,) = errors_of(done)
    assert line.startswith("s.yaml:3, field 'prompt': prompt file 'p.yaml' line 5: invalid YAML"), line
    assert not (tmp_path / "out").exists()


def test_a_missing_case_file_of_a_list_names_its_item_and_line(tmp_path):
    (tmp_path / "c.jsonl").write_text(CASE, encoding="utf-8")
    (tmp_path / "s.yaml").write_text("cases:\n  - c.jsonl\n  - missing.jsonl\nsubject: mock\n", encoding="utf-8")
    done = cli(tmp_path, "run", "s.yaml", "--output-dir", "out")
    assert done.returncode == 1
    assert errors_of(done) == ["s.yaml:3, field 'cases.1': cases 'missing.jsonl' not found"]
    assert not (tmp_path / "out").exists()
