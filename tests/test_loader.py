"""Case files: every bad-input class is one line naming file, line, case id and field, exit 1,
and nothing written; the good shapes (BOM, CRLF, YAML/JSON documents, @file, messages) load."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from scoreboard.cases import load_cases
from scoreboard.cases.formats import load_case_records
from scoreboard.errors import ConfigError
from scoreboard.suite.config import Limits
from tests.cli_inprocess import run_cli

OK = '{"id": "ok", "input": "x", "expected": "x"}\n'


def cli(args: list[str], cwd: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "scoreboard", *args], cwd=cwd, env=dict(os.environ),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(proc: subprocess.Popen) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=60)
    return proc.returncode, out, err


def ran(args: list[str], cwd: Path) -> tuple[int, str, str]:
    """`finish(cli(args, cwd))` in-process: what the command says, without an interpreter start."""
    done = run_cli(args, cwd, dict(os.environ))
    return done.returncode, done.stdout, done.stderr


def in_process(args: list[str]) -> tuple[int, str, str]:
    from scoreboard.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(args)
    return rc, out.getvalue(), err.getvalue()


@dataclass
class Bad:
    name: str
    file: str
    content: bytes | str
    line: int | None
    case_id: str | None
    field: str | None
    words: tuple[str, ...] = ()
    extra: dict = field(default_factory=dict)  # more files: name -> content
    limits: dict | None = None  # run through a suite file with these limits


def _messages(value) -> str:
    return json.dumps({"id": "m", "input": value, "expected": "x"}) + "\n"


BAD = [
    Bad("invalid-json-line", "cases.jsonl", OK + '{"id": "b", "input": \n', 2, None, None, ("invalid JSON",)),
    Bad("non-object-line", "cases.jsonl", OK + "[1, 2]\n", 2, None, None, ("must be a JSON object", "list")),
    Bad("non-object-scalar", "cases.jsonl", OK + '"just text"\n', 2, None, None, ("must be a JSON object",)),
    Bad("missing-id", "cases.jsonl", OK + '{"input": "x", "expected": "x"}\n', 2, None, "id", ("missing",)),
    Bad("empty-id", "cases.jsonl", '{"id": "", "input": "x", "expected": "x"}\n', 1, "", "id"),
    Bad("blank-id", "cases.jsonl", '{"id": "   ", "input": "x", "expected": "x"}\n', 1, "   ", "id",
        ("nonempty",)),
    Bad("non-string-id", "cases.jsonl", '{"id": 7, "input": "x", "expected": "x"}\n', 1, None, "id",
        ("string", "7")),
    Bad("duplicate-id", "cases.jsonl",
        '{"id": "a", "input": "x", "expected": "x"}\n{"id": "b", "input": "x", "expected": "x"}\n'
        '{"id": "a", "input": "y", "expected": "y"}\n', 3, "a", "id", ("duplicate", "line 1")),
    Bad("unknown-field", "cases.jsonl", OK + '{"id": "u", "input": "x", "expectd": "x"}\n', 2, "u", "expectd",
        ("unknown field",)),
    Bad("missing-input", "cases.jsonl", '{"id": "n", "expected": "x"}\n', 1, "n", "input", ("missing",)),
    Bad("input-not-text", "cases.jsonl", '{"id": "n", "input": 42, "expected": "x"}\n', 1, "n", "input",
        ("got 42",)),
    Bad("at-file-missing", "cases.jsonl", '{"id": "f", "input": "@docs/nope.txt", "expected": "x"}\n', 1, "f",
        "input", ("nope.txt", "not found")),
    Bad("at-file-not-utf8", "cases.jsonl", '{"id": "f", "input": "@latin1.txt", "expected": "x"}\n', 1, "f",
        "input", ("latin1.txt", "UTF-8"), extra={"latin1.txt": b"caf\xe9 \xff\n"}),
    Bad("input-over-limit", "cases.jsonl", OK + '{"id": "big", "input": "' + "x" * 64 + '", "expected": "x"}\n',
        2, "big", "input", ("64 bytes", "max_input_bytes"), limits={"max_input_bytes": 32}),
    Bad("at-file-over-limit", "cases.jsonl", '{"id": "bigf", "input": "@big.txt", "expected": "x"}\n', 1, "bigf",
        "input", ("big.txt", "max_input_bytes"), extra={"big.txt": "y" * 100}, limits={"max_input_bytes": 32}),
    Bad("messages-over-limit", "cases.jsonl",
        _messages([{"role": "user", "content": "z" * 20}, {"role": "assistant", "content": "z" * 20}]),
        1, "m", "input", ("max_input_bytes",), limits={"max_input_bytes": 32}),
    Bad("file-over-limit", "cases.jsonl", OK * 10, None, None, None, ("max_file_bytes",),
        limits={"max_file_bytes": 100}),
    Bad("too-many-cases", "cases.jsonl", "".join(
        json.dumps({"id": f"c{i}", "input": "x", "expected": "x"}) + "\n" for i in range(5)), 4, None, None,
        ("more than 3", "max_cases"), limits={"max_cases": 3}),
    Bad("message-role", "cases.jsonl", _messages([{"role": "robot", "content": "hi"}]), 1, "m", "input.0.role",
        ("robot", "user")),
    Bad("message-no-content", "cases.jsonl", _messages([{"role": "user"}]), 1, "m", "input.0.content",
        ("missing",)),
    Bad("message-not-object", "cases.jsonl", _messages(["hello"]), 1, "m", "input.0", ("hello",)),
    Bad("message-extra-key", "cases.jsonl", _messages([{"role": "user", "content": "x", "nickname": "n"}]), 1, "m",
        "input.0.nickname", ("unknown field",)),
    Bad("messages-a-mapping", "cases.jsonl", _messages({"role": "user", "content": "x"}), 1, "m", "input",
        ("string", "list")),
    Bad("yaml-bad-case", "cases.yaml",
        "cases:\n  - id: a\n    input: x\n    expected: x\n  - id: b\n    inptu: y\n    expected: y\n",
        5, "b", "inptu", ("unknown field",)),
    Bad("yaml-syntax", "cases.yaml", "cases:\n  - id: a\n    input: [x\n  - id: b\n", 4, None, None,
        ("invalid YAML",)),
    Bad("yaml-not-a-document", "cases.yaml", "- id: a\n  input: x\n", None, None, None, ('{"cases"',)),
    Bad("json-doc-bad-case", "cases.json",
        '{\n  "cases": [\n    {"id": "a", "input": "x", "expected": "x"},\n\n    {"id": "b", "input": "x", '
        '"expected": "x", "colour": 1}\n  ]\n}\n', 5, "b", "colour", ("unknown field",)),
    Bad("json-doc-unknown-key", "cases.json",
        '{"cases": [{"id": "a", "input": "x", "expected": "x"}], "version": 1, "extras": true}\n', 1, None,
        "extras", ("unknown field",)),
    Bad("json-doc-cases-not-list", "cases.json", '{"cases": {"id": "a"}}\n', 1, None, "cases", ("list",)),
    Bad("surrogate-escape", "cases.jsonl", '{"id": "s", "input": "\\udc80", "expected": "x"}\n', 1, "s", "input",
        ("surrogate",)),
    Bad("not-utf8-file", "cases.jsonl", OK.encode() + b'{"id": "l", "input": "caf\xe9"}\n', 2, None, None,
        ("UTF-8",)),
    Bad("empty-file", "cases.jsonl", "", None, None, None, ("no cases",)),
    Bad("blank-lines-only", "cases.jsonl", "\n   \n\r\n", None, None, None, ("no cases",)),
    Bad("unknown-grader", "cases.jsonl", '{"id": "g", "input": "x", "expected": "x", "grader": "exactly"}\n', 1,
        "g", "grader", ("unknown grader", "exactly")),
    Bad("json-fields-missing-field", "cases.jsonl",
        '{"id": "j", "input": "x", "expected": {"total": 1}, "fields": ["total", "vendor"]}\n', 1, "j",
        "expected.vendor", ("vendor",)),
    Bad("json-fields-no-expected", "cases.jsonl", '{"id": "j", "input": "x", "grader": "json-fields"}\n', 1, "j",
        "expected", ("expected",)),
]


def _write(base: Path, bad: Bad) -> Path:
    path = base / bad.file
    path.write_bytes(bad.content.encode() if isinstance(bad.content, str) else bad.content)
    for name, content in bad.extra.items():
        (base / name).write_bytes(content.encode() if isinstance(content, str) else content)
    return path


def _load(path: Path, limits: dict | None):
    """What `load_suite` does for a case file: load, then check each case against its graders."""
    from scoreboard.suite.config import SuiteConfig
    from scoreboard.suite.grading import resolve_graders

    cases = load_cases(path, Limits(**(limits or {})))
    resolve_graders(SuiteConfig(), cases)
    return cases


@pytest.mark.parametrize("bad", BAD, ids=[b.name for b in BAD])
def test_bad_case_file_library(tmp_path, bad):
    path = _write(tmp_path, bad)
    with pytest.raises(ConfigError) as info:
        _load(path, bad.limits)
    exc = info.value
    assert exc.file == str(path)
    assert exc.line == bad.line, str(exc)
    assert exc.case_id == bad.case_id, str(exc)
    assert exc.field == bad.field, str(exc)
    text = str(exc)
    assert "\n" not in text
    for word in bad.words:
        assert word in text, text


def _assert_one_line(err: str, bad: Bad) -> None:
    lines = err.splitlines()
    assert len(lines) == 1, err
    line = lines[0]
    assert line.startswith("scoreboard: error: "), line
    assert "Traceback" not in err
    assert bad.file in line, line
    if bad.line is not None:
        assert f"{bad.file}:{bad.line}" in line, line
    if bad.case_id:
        assert repr(bad.case_id) in line, line
    if bad.field:
        assert f"field {bad.field!r}" in line, line
    for word in bad.words:
        assert word in line, line


@pytest.mark.parametrize("bad", BAD, ids=[b.name for b in BAD])
def test_bad_case_file_cli(tmp_path, monkeypatch, bad):
    """`run` and `validate` both exit 1 with the one line, and nothing is written."""
    path = _write(tmp_path, bad)
    if bad.limits:
        suite = tmp_path / "suite.yaml"
        suite.write_text(json.dumps({"cases": bad.file, "subject": "mock", "formats": ["json", "md"],
                                     "limits": bad.limits}))
        run_args = ["run", "suite.yaml", "--output-dir", "out"]
        validate_args = ["validate", "suite.yaml"]
    else:
        run_args = ["run", "--cases", path.name, "--subject", "mock", "--output-dir", "out", "--format", "json,md"]
        validate_args = ["validate", path.name]
    before = sorted(p.name for p in tmp_path.iterdir())
    # Both in-process, the code path of a real process without another interpreter start
    # (`run` and `validate` through real processes are covered below, on a sample).
    monkeypatch.chdir(tmp_path)
    rc, out, err = in_process(validate_args)
    assert rc == 1, (validate_args, out, err)
    _assert_one_line(err, bad)
    assert out == ""
    rc, out, err = in_process(run_args)
    assert rc == 1, (run_args, out, err)
    _assert_one_line(err, bad)
    assert out == ""
    assert not (tmp_path / "out").exists()
    assert not (tmp_path / "eval-results").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == before


SAMPLE = ["invalid-json-line", "duplicate-id", "message-role", "yaml-bad-case", "json-doc-unknown-key",
          "not-utf8-file", "at-file-missing", "too-many-cases"]


@pytest.mark.parametrize("bad", [b for b in BAD if b.name in SAMPLE], ids=lambda b: b.name)
def test_bad_case_file_validate_subprocess(tmp_path, bad):
    """`validate` and `run` through real processes (exit status, stderr), nothing written."""
    _write(tmp_path, bad)
    if bad.limits:
        (tmp_path / "suite.yaml").write_text(json.dumps({"cases": bad.file, "subject": "mock",
                                                        "limits": bad.limits}))
        run_args = ["run", "suite.yaml", "--output-dir", "out"]
    else:
        run_args = ["run", "--cases", bad.file, "--subject", "mock", "--output-dir", "out", "--format", "json,md"]
    before = sorted(p.name for p in tmp_path.iterdir())
    run = cli(run_args, tmp_path)
    rc, out, err = finish(cli(["validate", "suite.yaml" if bad.limits else bad.file], tmp_path))
    assert rc == 1, (out, err)
    _assert_one_line(err, bad)
    rc, out, err = finish(run)
    assert rc == 1, (run.args, out, err)
    _assert_one_line(err, bad)
    assert out == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_bad_cases_in_second_file_run_nothing(tmp_path):
    """A bad second case file stops the run before the first file's cases run."""
    (tmp_path / "good.jsonl").write_text(OK)
    (tmp_path / "bad.jsonl").write_text('{"id": "z", "input": "x", "expected": "x", "oops": 1}\n')
    rc, out, err = ran(["run", "--cases", "good.jsonl", "--cases", "bad.jsonl", "--subject", "mock",
                       "--output-dir", "out"], tmp_path)
    assert rc == 1
    assert "bad.jsonl:1" in err and "'oops'" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_duplicate_id_across_files_names_both(tmp_path):
    (tmp_path / "a.jsonl").write_text(OK)
    (tmp_path / "b.jsonl").write_text('{"id": "other", "input": "x", "expected": "x"}\n' + OK)
    rc, _, err = ran(["run", "--cases", "a.jsonl", "--cases", "b.jsonl", "--subject", "mock",
                     "--output-dir", "out"], tmp_path)
    assert rc == 1
    assert len(err.splitlines()) == 1
    assert "b.jsonl:2" in err and "'ok'" in err and "a.jsonl" in err and "duplicate" in err
    assert not (tmp_path / "out").exists()


def test_duplicate_id_across_files_names_both_lines(tmp_path, monkeypatch):
    from scoreboard.suite.load import load_suite

    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.jsonl").write_text('{"id": "first", "input": "x", "expected": "x"}\n' + OK)
    (tmp_path / "b.jsonl").write_text(OK)
    with pytest.raises(ConfigError) as info:
        load_suite(None, {"cases": ["a.jsonl", "b.jsonl"], "subject": "mock"})
    assert "b.jsonl:1" in str(info.value) and "a.jsonl:2" in str(info.value)


def test_missing_case_file(tmp_path):
    rc, _, err = ran(["run", "--cases", "nope.jsonl", "--subject", "mock", "--output-dir", "out"],
                     tmp_path)
    assert rc == 1 and "nope.jsonl" in err and "not found" in err and len(err.splitlines()) == 1
    rc, _, err = ran(["validate", "nope.jsonl"], tmp_path)
    assert rc == 1 and "nope.jsonl" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "out").exists()


# ---- good shapes -------------------------------------------------------------------------

def test_bom_and_crlf_jsonl(tmp_path):
    path = tmp_path / "cases.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + b'{"id": "a", "input": "x", "expected": "x"}\r\n\r\n'
                     b'{"id": "b", "input": "y\\r\\nz", "expected": "y"}\r\n')
    cases = load_cases(path)
    assert [c.id for c in cases] == ["a", "b"]
    assert [c.line for c in cases] == [1, 3]
    assert cases[1].input == "y\r\nz"
    rc, out, err = ran(["validate", "cases.jsonl"], tmp_path)
    assert rc == 0, err
    assert "2 cases" in out


@pytest.mark.parametrize("name,content", [
    ("cases.yaml", "\ufeffname: demo\r\ncases:\r\n  - id: a\r\n    input: x\r\n    expected: x\r\n"
                   "  - id: b\r\n    input: y\r\n    expected: {k: 1}\r\n    tags: [t]\r\n"),
    ("cases.yml", "cases:\n- {id: a, input: x, expected: x}\n- {id: b, input: y, expected: {k: 1}, tags: [t]}\n"),
    ("cases.json", '\ufeff{"version": 1, "cases": [\r\n {"id": "a", "input": "x", "expected": "x"},\r\n'
                   ' {"id": "b", "input": "y", "expected": {"k": 1}, "tags": ["t"]}]}\r\n'),
])
def test_documents(tmp_path, name, content):
    path = tmp_path / name
    path.write_text(content, encoding="utf-8", newline="")
    cases = load_cases(path)
    assert [(c.id, c.input, c.expected) for c in cases] == [("a", "x", "x"), ("b", "y", {"k": 1})]
    assert cases[1].tags == ["t"]
    rc, out, err = ran(["validate", name], tmp_path)
    assert rc == 0, err


def test_json_document_lines(tmp_path):
    path = tmp_path / "cases.json"
    path.write_text('{\n "name": "x",\n "cases": [\n  {"id": "a", "input": "x", "expected": "x"},\n'
                    '  {"id": "b",\n   "input": "y", "expected": "y"}\n ]\n}\n')
    assert [line for line, _ in load_case_records(path)] == [4, 5]


def test_jsonl_unicode_line_separators_inside_strings(tmp_path):
    """JSON allows raw U+2028, U+2029, U+0085 and form feeds inside strings: they are not line breaks."""
    path = tmp_path / "cases.jsonl"
    tricky = "a\u2028b\u2029c\x85d\x0ce\x1cf"
    path.write_text(json.dumps({"id": "t", "input": tricky, "expected": tricky}, ensure_ascii=False) + "\n"
                    + json.dumps({"id": "u", "input": "x", "expected": "x"}) + "\n", encoding="utf-8")
    cases = load_cases(path)
    assert [(c.id, c.line) for c in cases] == [("t", 1), ("u", 2)]
    assert cases[0].input == tricky


def test_surrogate_escapes_rejected(tmp_path):
    path = tmp_path / "cases.jsonl"
    path.write_text('{"id": "s", "input": "x", "expected": "x", "metadata": {"k": ["\\ud800"]}}\n')
    with pytest.raises(ConfigError) as info:
        load_cases(path)
    assert (info.value.line, info.value.case_id, info.value.field) == (1, "s", "metadata.k.0")


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_endless_files_are_refused(tmp_path):
    """stat() says 0 bytes for a device or pipe, and reading one never ends (or blocks): only
    regular files are read, so a device is refused before any byte is read."""
    with pytest.raises(ConfigError, match="is a device, not a regular file"):
        load_cases("/dev/zero", Limits(max_file_bytes=1000))
    os.symlink("/dev/zero", tmp_path / "zero")
    path = tmp_path / "cases.jsonl"
    for rel in ("/dev/zero", "zero"):
        path.write_text(json.dumps({"id": "z", "input": "@" + rel, "expected": "x"}) + "\n")
        with pytest.raises(ConfigError) as info:
            load_cases(path, Limits(max_input_bytes=1000))
        assert (info.value.case_id, info.value.field) == ("z", "input")
    # Allowed to reach /dev (root "/"), the device is still refused as not a regular file.
    with pytest.raises(ConfigError, match="is a device") as info:
        load_cases(path, Limits(max_input_bytes=1000), root="/")
    assert (info.value.case_id, info.value.field) == ("z", "input")


def test_unreadable_input_path_is_one_line(tmp_path):
    path = tmp_path / "cases.jsonl"
    path.write_text(json.dumps({"id": "n", "input": "@" + "a" * 300, "expected": "x"}) + "\n")
    with pytest.raises(ConfigError) as info:
        load_cases(path)
    assert (info.value.line, info.value.case_id, info.value.field) == (1, "n", "input")


def test_jsonl_named_json(tmp_path):
    """A .json file holding one object per line is read as JSONL."""
    path = tmp_path / "cases.json"
    path.write_text(OK + '{"id": "two", "input": "y", "expected": "y"}\n')
    assert [c.id for c in load_cases(path)] == ["ok", "two"]


def test_at_file_input(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "one.txt").write_bytes("\ufeffh\u00e9llo\r\nworld\n".encode())
    path = tmp_path / "cases.jsonl"
    path.write_text('{"id": "a", "input": "@docs/one.txt", "expected": "x"}\n')
    (case,) = load_cases(path)
    assert case.input == "h\u00e9llo\r\nworld\n"
    # the file is read relative to the case file, not the working directory
    rc, out, err = ran(["validate", str(path)], Path("/"))
    assert rc == 0, err


def test_at_file_exactly_at_limit(tmp_path):
    (tmp_path / "a.txt").write_text("x" * 32)
    path = tmp_path / "cases.jsonl"
    path.write_text('{"id": "a", "input": "@a.txt", "expected": "x"}\n{"id": "b", "input": "' + "y" * 32
                    + '", "expected": "y"}\n')
    assert len(load_cases(path, Limits(max_input_bytes=32))) == 2
    assert len(load_cases(path, Limits(max_cases=2, max_file_bytes=path.stat().st_size))) == 2


def test_messages_input(tmp_path):
    path = tmp_path / "cases.jsonl"
    msgs = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "hello"}, {"role": "tool", "content": "{}"}]
    path.write_text(json.dumps({"id": "chat", "input": msgs, "expected": "x"}) + "\n")
    (case,) = load_cases(path)
    assert case.input == msgs


def test_every_field_and_shorthands(tmp_path):
    path = tmp_path / "cases.jsonl"
    record = {"id": "full", "input": "x", "expected": {"a": 1, "b": {"c": 2}}, "grader": "exact",
              "graders": [{"contains": "x"}], "fields": ["a", "b.c"], "category": "cat", "tags": ["t1", "t2"],
              "metadata": {"k": [1]}, "synthetic": True, "rubric": "be right", "notes": "n"}
    path.write_text(json.dumps(record) + "\n")
    (case,) = load_cases(path)
    assert case.graders == ["exact", {"contains": "x"}, {"json-fields": {"fields": ["a", "b.c"]}}]
    assert (case.category, case.tags, case.metadata, case.synthetic, case.rubric, case.notes) == \
        ("cat", ["t1", "t2"], {"k": [1]}, True, "be right", "n")
    assert case.input_hash and case.source == str(path) and case.line == 1
    _load(path, None)  # graders build and check against the reference


def test_expected_null_is_a_reference(tmp_path):
    path = tmp_path / "cases.jsonl"
    path.write_text('{"id": "a", "input": "x", "expected": null}\n{"id": "b", "input": "x"}\n')
    a, b = load_cases(path)
    assert a.has_expected and a.expected is None
    assert not b.has_expected
