"""Hostile input and outputs, round 7 (helper 21F). Files whose lines end in a bare carriage
return (classic Mac) are refused by every reader that splits at "\\n", naming the file and line,
never read as one giant line (YAML, CSV and Inspect's readers split at a CR and read them)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.cli_inprocess import run_cli

ENV = {**os.environ, "SCOREBOARD_STORE": "none", "NO_COLOR": "1"}
CR_SAID = "the lines end in a bare carriage return (\\r, classic Mac line endings)"


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    """`python -m scoreboard ARGS` in-process: these tests are about what the readers say, not
    about the process (each subprocess spent about 0.7 s of CPU importing)."""
    return run_cli(args, cwd, ENV)


def one_error(done: subprocess.CompletedProcess) -> str:
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert done.returncode == 1 and len(lines) == 1, (done.returncode, done.stderr[-2000:])
    assert lines[0].startswith("scoreboard: error: ") and len(lines[0]) < 1200, lines[0][:2000]
    return lines[0]


def _cr(*lines: str) -> str:
    return "".join(line + "\r" for line in lines)


def test_a_cr_only_case_file_is_refused_or_read_never_one_line(tmp_path):
    rows = [json.dumps({"id": i, "input": "x", "expected": "x"}) for i in ("a", "b")]
    (tmp_path / "c.jsonl").write_text(_cr(*rows), newline="")
    # before: "c.jsonl:1: invalid JSON: Extra data at column 39", not saying why
    error = one_error(cli(tmp_path, "validate", "c.jsonl"))
    assert error.startswith("scoreboard: error: c.jsonl:1: " + CR_SAID), error
    (tmp_path / "c.yaml").write_text(_cr("cases:", *(f"  - {r}" for r in rows)), newline="")
    done = cli(tmp_path, "validate", "c.yaml")
    assert done.returncode == 0 and "2 cases" in done.stdout, done.stderr
    (tmp_path / "i.csv").write_text(_cr("id,input,target", "a,x,x", "b,y,y"), newline="")
    (tmp_path / "s.yaml").write_text("name: s\ncases: {format: inspect, path: i.csv}\n"
                                     "variants: [{name: v, subject: mock}]\ngraders: [exact]\n")
    done = cli(tmp_path, "validate", "s.yaml")
    assert done.returncode == 0 and "2 cases" in done.stdout, done.stderr
    (tmp_path / "in.csv").write_text(_cr("q,a", "x,x", "y,y"), newline="")
    done = cli(tmp_path, "import", "csv", "--csv", "in.csv", "--map", "input=q,expected=a", "--grader", "exact",
               "--output", "o.jsonl")
    assert done.returncode == 0 and len((tmp_path / "o.jsonl").read_text().splitlines()) == 2, done.stderr


def test_crlf_and_a_trailing_cr_still_read(tmp_path):
    from scoreboard.lineends import bare_cr_lines

    assert not bare_cr_lines('{"a": 1}\r\n{"a": 2}\r\n') and not bare_cr_lines('{"a": 1}\r')
    assert not bare_cr_lines("a\nb\rc\nd\n")  # one stray CR in a text of LF lines
    assert bare_cr_lines("a\rb\r") and bare_cr_lines("a\rb\rc\nd")


def test_a_cr_only_promptfoo_prompt_or_tests_file_is_refused(tmp_path):
    (tmp_path / "p.txt").write_text(_cr("hello {{x}}", "---", "bye {{x}}"), newline="")
    (tmp_path / "p.yaml").write_text('prompts: ["file://p.txt"]\nproviders: [echo]\ntests: [{vars: {x: 1}}]\n')
    # before: one prompt "hello {{x}}\r---\rbye {{x}}", converted without a word
    error = one_error(cli(tmp_path, "import", "promptfoo", "p.yaml", "--output", "o1"))
    assert f"p.txt:1, field 'prompts.0': {CR_SAID}" in error, error
    (tmp_path / "ps.csv").write_text(_cr("prompt", "hello {{x}}", "bye {{x}}"), newline="")
    (tmp_path / "p2.yaml").write_text('prompts: ["file://ps.csv"]\nproviders: [echo]\ntests: [{vars: {x: 1}}]\n')
    assert f"ps.csv:1, field 'prompts.0': {CR_SAID}" in one_error(cli(tmp_path, "import", "promptfoo", "p2.yaml",
                                                                       "--output", "o2"))
    (tmp_path / "t.jsonl").write_text(_cr('{"vars": {"x": 1}}', '{"vars": {"x": 2}}'), newline="")
    (tmp_path / "p3.yaml").write_text('prompts: ["hi {{x}}"]\nproviders: [echo]\ntests: file://t.jsonl\n')
    assert f"t.jsonl:1, field 't.jsonl': {CR_SAID}" in one_error(cli(tmp_path, "import", "promptfoo", "p3.yaml",
                                                                      "--output", "o3"))
    (tmp_path / "t.csv").write_text(_cr("x,__expected", "1,contains:1", "2,contains:2"), newline="")
    (tmp_path / "p4.yaml").write_text('prompts: ["hi {{x}}"]\nproviders: [echo]\ntests: file://t.csv\n')
    done = cli(tmp_path, "import", "promptfoo", "p4.yaml", "--output", "o4")
    assert done.returncode == 0 and len((tmp_path / "o4" / "cases.jsonl").read_text().splitlines()) == 2, done.stderr


def test_cr_only_openai_evals_samples_are_refused(tmp_path):
    (tmp_path / "evals/registry/evals").mkdir(parents=True)
    (tmp_path / "evals/registry/data/e").mkdir(parents=True)
    (tmp_path / "evals/registry/evals/e.yaml").write_text(
        "e:\n  id: e.dev.v0\ne.dev.v0:\n  class: evals.elsuite.basic.match:Match\n  args:\n    samples_jsonl: e/s.jsonl\n")
    rows = [json.dumps({"input": [{"role": "user", "content": q}], "ideal": "x"}) for q in ("hi", "yo")]
    (tmp_path / "evals/registry/data/e/s.jsonl").write_text(_cr(*rows), newline="")
    error = one_error(cli(tmp_path, "import", "openai-evals", "evals/registry/evals/e.yaml", "--output", "o"))
    assert f"s.jsonl:1, field 'e.dev.v0.args.samples_jsonl': {CR_SAID}" in error, error


def test_a_cr_only_hf_jsonl_file_is_refused():
    import pytest

    from scoreboard.cases.datasets import _jsonl_rows
    from scoreboard.errors import ConfigError

    with pytest.raises(ConfigError) as caught:
        _jsonl_rows(_cr('{"q": 1}', '{"q": 2}').encode(), "d.jsonl", None)
    assert str(caught.value).startswith(f"d.jsonl:1: {CR_SAID}")


def _contains_json(text: str):
    from scoreboard.graders.grade import GradeContext
    from scoreboard.graders.json_more import ContainsJsonGrader

    grader = ContainsJsonGrader({})
    ctx = GradeContext.__new__(GradeContext)
    object.__setattr__(ctx, "output", type("O", (), {"text": text, "json": None})())
    return grader.grade(ctx)


def test_contains_json_over_a_megabyte_of_nested_braces_gives_up_unassessed():
    from scoreboard.graders.json_more import ExtractionGaveUp, extract_json_objects

    # before: 28 s (nested objects) and 63 s (nested lists) for one grade, 11 s for 1 MB of "{"
    for text in ('{"a":' * 200_000, '{"a":[' * 170_000):
        import pytest

        with pytest.raises(ExtractionGaveUp):
            extract_json_objects(text)
        grade = _contains_json(text)
        assert grade.passed is None and grade.score is None and "gave up looking for JSON objects" in grade.reason
    assert extract_json_objects("{" * 1_000_000) == []
    assert len(extract_json_objects('{"k": 1} ' * 100_000)) == 100_000


def test_contains_json_still_finds_long_and_embedded_objects():
    from scoreboard.graders.json_more import MAX_OBJECT_CHARS, extract_json_objects

    long = {"a": "x" * 50_000, "b": [{"c": 1}] * 500}
    text = "see { not json } then " + json.dumps(long) + " and {\"d\": {\"e\": 2}} end {"
    assert extract_json_objects(text) == [long, {"d": {"e": 2}}]
    over = {"a": "y" * MAX_OBJECT_CHARS, "in": 0}
    assert extract_json_objects(json.dumps(over)) == []  # over the cap: its inner objects only (none)
    assert _contains_json("a { b").passed is False


def test_an_imported_promptfoo_contains_json_over_unbalanced_braces_gives_up_unassessed():
    from scoreboard.importers.promptfoo_runtime_json import contains_json, extract_json_objects

    # before: 6 s for 2,000 "{" and 153 s for 10,000 (each "{" scanned to the end and read as YAML)
    for text in ("{" * 20_000, '{"a":' * 4_000, "a { b " * 4_000):
        for schema, inverse in ((None, False), ({"type": "object"}, True)):
            result = contains_json(text, schema, inverse)
            assert result["pass"] is None and "gave up looking for JSON objects" in result["reason"], result
    # one object is enough without a schema: the rest of a megabyte is not read
    assert contains_json('{"k": 1} ' * 100_000, None, False)["pass"] is True
    assert contains_json('{"k": 1} ' * 100_000, None, True)["pass"] is False
    assert extract_json_objects("x {a: 1, 'b': [1,2],} y {z}} {\"q\": {\"r\": 2}} {") == \
        [{"a": 1, "b": [1, 2]}, {"z": None}, {"q": {"r": 2}}]


def _is_json(text: str):
    from scoreboard.graders.grade import GradeContext
    from scoreboard.graders.json_more import IsJsonGrader

    ctx = GradeContext.__new__(GradeContext)
    object.__setattr__(ctx, "output", type("O", (), {"text": text, "json": None})())
    return IsJsonGrader({}).grade(ctx)


def test_json_nested_too_deep_to_read_is_not_assessed_but_unbalanced_brackets_fail():
    deep = "[" * 5_000 + "]" * 5_000
    # before: valid JSON nested 5,000 deep failed "Expected output to be valid JSON" (a RecursionError)
    grade = _is_json(f' {{"a": {deep}}}\n')
    assert grade.passed is None and "nested deeper than Python's JSON reader goes" in grade.reason
    for broken in ("[" * 5_000, "[" * 5_000 + "]" * 4_999 + "}", "{" * 1_000_000, deep + " extra"):
        assert _is_json(broken).passed is False, broken[-20:]
    grade = _contains_json(f'here: {{"a": {deep}}} done')
    assert grade.passed is None and "1 object(s) in the output nested deeper" in grade.reason
    assert _contains_json(f'here: {{"a": {deep}}} and {{"b": 1}}').passed is True
    assert _contains_json('here: {"a": ' + "[" * 5_000 + "} done").passed is False


def test_an_error_body_loses_whole_string_escape_sequences_even_when_cut_inside_one():
    from scoreboard.subjects._wire import error_detail

    link = "\x1b]8;;http://evil.example/\x1b\\click\x1b]8;;\x1b\\"
    message = f"bad {link} \x1b[31mred\x1b[0m \x9b1mc1\x9d0;title\x9c end \x1b]52;c;" + "QUFB" * 1000
    # before: 'bad 8;;http://evil.example/click8;; red ... end 52;c;QUFBQUFB...': the introducer
    # went, the link's address and the clipboard payload (cut at 2,000 characters) stayed as text
    assert error_detail({"error": {"message": message}}, "")[0] == "bad click red c1 end "
    said = error_detail(None, "x \x1b]0;title\x07 y \x1bP1$r\x1b\\ z \x1b_apc" + "A" * 30_000)[0]
    assert said == "x y z", said
