"""Hostile case and suite files (helper 24M): each is refused with one line naming the file,
the line and the field, exit 1, in a child process held to 2 GB of address space."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

PYTHON = sys.executable
ENV = {**os.environ, "SCOREBOARD_STORE": "none", "NO_COLOR": "1"}
_LIMIT_AS = ("import resource, runpy, sys; resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30)); "
             "sys.argv = ['scoreboard', *sys.argv[1:]]; runpy.run_module('scoreboard', run_name='__main__')")


def cli(cwd: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([PYTHON, "-c", _LIMIT_AS, *args], cwd=cwd, env=ENV, capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def one_error(done: subprocess.CompletedProcess) -> str:
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert done.returncode == 1 and len(lines) == 1, (done.returncode, done.stderr[-2000:])
    assert lines[0].startswith("scoreboard: error: ") and len(lines[0]) < 1200, lines[0][:2000]
    return lines[0]


def _suite_dir(tmp_path: Path) -> Path:
    (tmp_path / "c.jsonl").write_text('{"id": "a", "input": "hi", "expected": "hi"}\n')
    return tmp_path


def test_toml_suite_integer_past_pythons_digit_limit_is_one_line_naming_line_and_key(tmp_path):
    # tomllib converts a decimal literal with int(), which raises a plain ValueError past 4,300
    # digits: it escaped as "internal error: ValueError ... sys.set_int_max_str_digits()", exit 2
    d = _suite_dir(tmp_path)
    (d / "s.toml").write_text('name = "s"\ncases = "c.jsonl"\nsubject = "mock"\nruns = ' + "9" * 5000 + "\n")
    line = one_error(cli(d, "validate", "s.toml"))
    assert line.startswith("scoreboard: error: s.toml:4, field 'runs': a number of 5000 characters"), line
    assert "limits.max_number_chars" in line and "set_int_max_str_digits" not in line
    # inside a table's inline value, the key of that line is named
    (d / "t.toml").write_text('name = "s"\ncases = "c.jsonl"\nsubject = "mock"\n\n[variants.a]\n'
                              "params = {x = [1, " + "1_" * 5000 + "1]}\n")
    line = one_error(cli(d, "validate", "t.toml"))
    assert line.startswith("scoreboard: error: t.toml:6, field 'variants.a.params': a number of 10001 characters"), line


def test_gold_directory_ids_hold_no_control_characters(tmp_path):
    # README: an id has no control characters "in case files, gold directories, import csv and
    # task folders alike"; a gold file's document_id with an escape, and a document whose file
    # name (the id when no document_id is given) holds a newline, were taken as ids
    gold = tmp_path / "g"
    gold.mkdir()
    (gold / "a.txt").write_text("doc")
    (gold / "a.gold.json").write_text('{"document_id": "a\\u001b[31m", "fields": {"x": 1}}')
    line = one_error(cli(tmp_path, "validate", "g"))
    assert line.startswith("scoreboard: error: g/a.gold.json:1, field 'document_id': must not hold control "
                           "characters (found U+001B)"), line
    (gold / "a.gold.json").unlink()
    (gold / "a.txt").unlink()
    (gold / "x\nFAKE PASS.txt").write_text("doc")
    (gold / "x\nFAKE PASS.gold.json").write_text('{"fields": {"x": 1}}')
    done = cli(tmp_path, "run", "--cases", "g", "--subject", "mock", "--output-dir", "out")
    line = one_error(done)
    assert "field 'id'" in line and "control characters (found U+000A)" in line and "document_id" in line, line
    assert not (tmp_path / "out").exists()
    # a document_id given makes the file name no id: that gold pair loads
    (gold / "x\nFAKE PASS.gold.json").write_text('{"document_id": "x", "fields": {"x": 1}}')
    done = cli(tmp_path, "validate", "g")
    assert done.returncode == 0 and "OK: gold directory g: 1 case" in done.stdout, done.stderr


def test_expanded_ids_hold_no_control_characters_and_lookalike_values_collide(tmp_path):
    # `expand` names each case ID[var=value]: a value holding a newline or an escape put it in
    # the case id (which README says never holds one), and two values that only look alike
    # (café as é and as e + a combining accent) made two ids nobody can tell apart
    import json

    (tmp_path / "c.jsonl").write_text(json.dumps({"id": "c", "vars": {"lang": ["fr", "x\nFAKE PASS \x1b[2J"]},
                                                  "expand": ["lang"], "expected": "x"}) + "\n")
    (tmp_path / "s.yaml").write_text('cases: c.jsonl\nsubject: mock\nprompt: "{{ lang }}"\n')
    done = cli(tmp_path, "run", "s.yaml", "--output", "r.json", "--no-progress")
    assert done.returncode == 0, done.stderr  # the cases fail (mock output) with no gate: nothing refused
    ids = [c["id"] for c in json.loads((tmp_path / "r.json").read_text())["plan"]["cases"]]
    assert ids == ["c[lang=fr]", "c[lang=x\\nFAKE PASS \\x1b[2J]"], ids
    assert not any(ord(ch) < 0x20 or 0x7f <= ord(ch) <= 0x9f for cid in ids for ch in cid)
    # the value itself reaches the template unchanged
    inputs = [c["input"] for c in json.loads((tmp_path / "r.json").read_text())["plan"]["cases"]]
    assert inputs[1] == "x\nFAKE PASS \x1b[2J", inputs

    (tmp_path / "c.jsonl").write_text(json.dumps({"id": "c", "vars": {"lang": ["caf\u00e9", "cafe\u0301"]},
                                                  "expand": ["lang"], "expected": "x"}) + "\n")
    line = one_error(cli(tmp_path, "validate", "s.yaml"))
    assert line.startswith("scoreboard: error: c.jsonl:1, case 'c[lang=cafe\u0301]', field 'expand': an expanded "
                           "case id is taken (looks the same as"), line
    assert "NFC and NFD" in line, line


def test_json_nested_past_the_recursion_limit_names_its_line(tmp_path):
    # 100,000 brackets reach the decoder's RecursionError before the depth walk: the error named
    # the file only ("deep.json: invalid JSON: nested deeper than 64 levels"), no line
    (tmp_path / "deep.json").write_text('{"cases": [\n  {"id": "x", "input": "[[[[{{ not nesting",\n'
                                        '   "metadata": ' + "[" * 100_000 + "]" * 100_000 + "}]}\n")
    line = one_error(cli(tmp_path, "validate", "deep.json"))
    assert line == ("scoreboard: error: deep.json:3: invalid JSON: nested deeper than 64 levels "
                    "(limits.max_depth)"), line
    (tmp_path / "c.jsonl").write_text('{"id": "a", "input": "hi", "expected": "hi"}\n')
    (tmp_path / "s.json").write_text('{"cases": "c.jsonl",\n "subject": "mock",\n "name": '
                                     + "[" * 100_000 + "]" * 100_000 + "}\n")
    line = one_error(cli(tmp_path, "validate", "s.json"))
    assert line.startswith("scoreboard: error: s.json:3: invalid JSON: nested deeper than 64 levels"), line
