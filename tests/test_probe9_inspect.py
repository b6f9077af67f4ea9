"""Inspect AI datasets as cases (`cases: {format: inspect, path}`), probed from outside with the
real CLI on small dataset files: each test is a defect found by comparing what scoreboard loads
with what inspect_ai's json_dataset / csv_dataset and an Inspect eval make of the same bytes."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.cli_inprocess import run_cli


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return run_cli(args, cwd, env=dict(os.environ, SCOREBOARD_STORE="none"))


def suite(tmp_path: Path, cases: str, extra: str = "") -> Path:
    path = tmp_path / "suite.yaml"
    path.write_text(f"name: t\n{extra}cases: {cases}\nsubject: mock\n")
    return path


def test_dataset_json_held_to_the_suites_own_number_and_depth_limits(tmp_path):
    """A dataset's JSON was parsed under the default bounds whatever the suite's `limits:` said:
    `max_number_chars: 200` still refused a 150-digit number "over the limit of 100", and
    `max_number_chars: 5` / `max_depth: 4` let longer numbers and deeper nesting through (a
    case file under the same suite is held to them)."""
    big = int("9" * 150)
    (tmp_path / "big.jsonl").write_text(json.dumps({"input": "q", "target": "a", "metadata": {"n": big}}) + "\n")
    suite(tmp_path, "{format: inspect, path: big.jsonl}", "limits: {max_number_chars: 200}\n")
    done = cli(tmp_path, "validate", "suite.yaml")
    assert done.returncode == 0, done.stderr

    (tmp_path / "small.jsonl").write_text(json.dumps({"input": "q", "target": "a", "metadata": {"n": 123456}}) + "\n")
    suite(tmp_path, "{format: inspect, path: small.jsonl}", "limits: {max_number_chars: 5}\n")
    done = cli(tmp_path, "validate", "suite.yaml")
    assert done.returncode == 1
    assert "small.jsonl:1, field 'metadata.n'" in done.stderr and "limit of 5 (limits.max_number_chars)" in done.stderr

    deep = {"input": "q", "metadata": {"a": [[[[1]]]]}}
    (tmp_path / "deep.json").write_text(json.dumps([deep]))
    suite(tmp_path, "{format: inspect, path: deep.json}", "limits: {max_depth: 4}\n")
    done = cli(tmp_path, "validate", "suite.yaml")
    assert done.returncode == 1 and "deep.json" in done.stderr and "limits.max_depth" in done.stderr

    # JSON text in a CSV cell (metadata) is held to them too
    (tmp_path / "m.csv").write_text('input,metadata\nq,"{""n"": 1234567}"\n')
    suite(tmp_path, "{format: inspect, path: m.csv}", "limits: {max_number_chars: 5}\n")
    done = cli(tmp_path, "validate", "suite.yaml")
    assert done.returncode == 1
    assert "m.csv:2" in done.stderr and "'metadata.n'" in done.stderr and "limit of 5" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_dataset_records_counted_as_they_are_read(tmp_path):
    """A 16 MiB CSV of one-letter rows (8 million records) took 155 s and 7.8 GB of memory to be
    refused for limits.max_cases: every row was made a sample and a case first, the count came
    after. Now the reader stops at the first record past max_cases (naming the dataset's line),
    and with a `limit:` (all records are read, for Inspect's shuffle) each record read counts
    toward limits.max_values: the records' values, not only the few cases kept."""
    rows = "".join(f"q{i},a\n" for i in range(30)) + "ragged,row,here\n"
    (tmp_path / "d.csv").write_text("input,target\n" + rows)
    suite(tmp_path, "{format: inspect, path: d.csv}", "limits: {max_cases: 10}\n")
    done = cli(tmp_path, "validate", "suite.yaml")
    assert done.returncode == 1
    # the 11th record (line 12) is refused: the reader never got to the ragged line 32
    assert "d.csv:12: more than 10 records" in done.stderr and "limits.max_cases" in done.stderr, done.stderr

    (tmp_path / "d.jsonl").write_text("".join(json.dumps({"input": f"q{i}"}) + "\n" for i in range(30)))
    suite(tmp_path, "{format: inspect, path: d.jsonl}", "limits: {max_cases: 10}\n")
    done = cli(tmp_path, "validate", "suite.yaml")
    assert done.returncode == 1 and "d.jsonl:11: more than 10 records" in done.stderr, done.stderr

    # limit: 3 keeps 3 cases, but all 30 records (5 values each) were parsed: over max_values 100
    (tmp_path / "d.csv").write_text("input,target\n" + "".join(f"q{i},a\n" for i in range(30)))
    suite(tmp_path, "{format: inspect, path: d.csv, limit: 3}", "limits: {max_values: 100}\n")
    done = cli(tmp_path, "validate", "suite.yaml")
    assert done.returncode == 1 and "d.csv:22:" in done.stderr and "limits.max_values" in done.stderr, done.stderr
    suite(tmp_path, "{format: inspect, path: d.csv, limit: 3}", "limits: {max_values: 1000}\n")
    done = cli(tmp_path, "validate", "suite.yaml")
    assert done.returncode == 0 and "3 cases" in done.stdout, done.stderr


def test_a_target_naming_a_choice_twice_is_refused(tmp_path):
    """Target "AA" (or ["A", "a"], or "B, b") loaded as a multiple-answer case expecting "AA",
    which no answer can ever be: Inspect's choice scorer compares the sorted target positions
    [0, 0] with the distinct choices picked, so the sample is scored wrong whatever the model
    says. Like a target beyond the choices, it is refused, naming the file, line, case and field."""
    records = [{"input": "q", "choices": ["x", "y", "z"], "target": "B"},
               {"input": "q", "choices": ["x", "y", "z"], "target": ["A", "a"], "id": "dup"}]
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    suite(tmp_path, "{format: inspect, path: d.jsonl}")
    done = cli(tmp_path, "validate", "suite.yaml")
    assert done.returncode == 1
    assert "d.jsonl:2, case 'dup', field 'target'" in done.stderr and "choice A more than once" in done.stderr
    (tmp_path / "d.csv").write_text('input,choices,answer\nq,"x,y,z","B, b"\n')
    suite(tmp_path, "{format: inspect, path: d.csv, fields: {target: answer}}")
    done = cli(tmp_path, "validate", "suite.yaml")
    assert done.returncode == 1 and "d.csv:2, case '1', field 'answer'" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_csv_options_on_a_json_dataset_are_refused(tmp_path):
    """`fieldnames:`, `dialect:` and `delimiter:` on a .jsonl or .json dataset were silently
    ignored (Inspect's json_dataset takes none of them): the user's mapping did nothing."""
    (tmp_path / "d.jsonl").write_text(json.dumps({"question": "q", "target": "a"}) + "\n")
    (tmp_path / "d.json").write_text(json.dumps([{"input": "q"}]))
    for name, option, field in [("d.jsonl", "fieldnames: [input, target]", "fieldnames"),
                                ("d.json", "dialect: excel", "dialect"), ("d.jsonl", "delimiter: ';'", "delimiter")]:
        suite(tmp_path, f"{{format: inspect, path: {name}, {option}}}")
        done = cli(tmp_path, "validate", "suite.yaml")
        assert done.returncode == 1, (option, done.stdout)
        assert f"suite.yaml:2, field 'cases.{field}': {field} is an option of a CSV dataset" in done.stderr
    (tmp_path / "d.csv").write_text("q,a\n")
    suite(tmp_path, "{format: inspect, path: d.csv, fieldnames: [input, target], delimiter: ','}")
    done = cli(tmp_path, "validate", "suite.yaml")
    assert done.returncode == 0, done.stderr


def test_fieldnames_naming_a_column_twice_is_refused(tmp_path):
    """A header naming a column twice is an error, but `fieldnames: [input, target, input]` was
    taken silently, each record keeping only the last cell of the name (the third column became
    the input)."""
    (tmp_path / "d.csv").write_text("first,a,third\n")
    suite(tmp_path, "{format: inspect, path: d.csv, fieldnames: [input, target, input]}")
    done = cli(tmp_path, "validate", "suite.yaml")
    assert done.returncode == 1
    assert "suite.yaml:2, field 'cases.fieldnames.2': column 'input' appears twice in fieldnames" in done.stderr


def test_several_correct_letters_read_as_one_letter_is_refused(tmp_path):
    """With `template:` (answers parsed as one letter unless multiple_correct: true) or
    `multiple_correct: false`, a sample whose target names two choices ("A, C") loaded as a case
    that no answer can pass: one letter parsed, two expected (Inspect scores it wrong whatever
    the answer too). Every such case counted as a failure of the model. Now refused, naming the
    sample; with multiple_correct: true it loads and a right answer passes."""
    records = [{"input": "q1", "choices": ["x", "y", "z"], "target": "B"},
               {"input": "q2", "choices": ["x", "y", "z"], "target": "A, C", "id": "two"}]
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    template = "'{question}\\n{choices}\\nANSWER: one of {letters}'"
    for option in [f"template: {template}", "multiple_correct: false"]:
        suite(tmp_path, f"{{format: inspect, path: d.jsonl, {option}}}")
        done = cli(tmp_path, "validate", "suite.yaml")
        assert done.returncode == 1, option
        assert "d.jsonl:2, case 'two', field 'target': the target names 2 choices" in done.stderr
        assert "multiple_correct: true" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    (tmp_path / "out.jsonl").write_text(json.dumps({"id": "1", "output": "ANSWER: B"}) + "\n"
                                        + json.dumps({"id": "two", "output": "ANSWER: A, C"}) + "\n")
    (tmp_path / "suite.yaml").write_text(f"name: t\ncases: {{format: inspect, path: d.jsonl, template: {template}, "
                                         "multiple_correct: true}\nsubject: recorded:out.jsonl\n")
    done = cli(tmp_path, "run", "suite.yaml", "--output", "r.json")
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    (variant,) = report["summary"]["variants"].values()
    assert variant["passed"] == 2, variant
