"""A new user's first hour on a fresh clone, from the README alone (probe 15): the examples
as printed and the errors a newcomer's typical mistakes get."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.cli_inprocess import run_cli

ROOT = Path(__file__).resolve().parents[1]
KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL")


def scoreboard(*args: str, cwd: Path, **extra: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in KEYS}
    env.update({"SCOREBOARD_STORE": "none", "PYTHONPATH": str(ROOT / "src"), **extra})
    return run_cli(args, cwd, env)  # in this process (tests/cli_inprocess.py): what the command says is the point


def errors(res: subprocess.CompletedProcess) -> list[str]:
    return [line for line in res.stderr.splitlines() if line.startswith("scoreboard: error:")]


def test_a_missing_api_key_of_the_shared_subject_is_said_once(tmp_path):
    # `scoreboard run examples/invoices/llm-suite.yaml` without OPENAI_API_KEY printed the same
    # line twice (once per variant sharing the suite's subject) though it names both variants
    suite = tmp_path / "suite.yaml"
    (tmp_path / "cases.jsonl").write_text('{"id": "a", "input": "hi", "expected": "hi"}\n')
    suite.write_text("name: s\ncases: cases.jsonl\nsubject: {type: openai, model: gpt-4o-mini}\n"
                     "variants:\n  basic: {}\n  careful: {params: {temperature: 0}}\n")
    res = scoreboard("run", "suite.yaml", "--output-dir", "out", cwd=tmp_path)
    assert res.returncode == 1, (res.returncode, res.stderr)
    said = errors(res)
    assert len(said) == 1, said
    assert "suite.yaml:3, field 'subject.api_key_env'" in said[0], said
    assert "'basic', 'careful'" in said[0] and "OPENAI_API_KEY" in said[0], said
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("text,line,hint", [
    ("name: s\ncases: c.jsonl\nsubject:\n\ttype: mock\nvariants: {a: {}}\n", 4, "a tab: YAML indents with spaces only"),
    ("name: s\ncases: c.jsonl\nsubject: mock\nvariants:\n  a: {}\n   b: {}\n", 6, "check this line's indentation"),
    ("name: s\ncases: c.jsonl\nsubject:\n  type: mock\n   default: x\nvariants: {a: {}}\n", 5,
     "a value holding ': ' must be quoted"),
    ("name: s\ncases: c.jsonl\nprompt: @p.txt\nsubject: mock\n", 3, "a value that starts with '@' must be quoted"),
    ('name: "s\ncases: c.jsonl\nsubject: mock\n', 1, "the quote opened on line 1 is never closed"),
    ("name: s\ncases: [c.jsonl\nsubject: mock\n", 3, "the bracket opened on line 2 is never closed"),
])
def test_a_yaml_mistake_gets_its_line_and_a_hint_at_the_usual_cause(tmp_path, text, line, hint):
    # the parser's own words alone ("did not find expected key", "found character that cannot
    # start any token") left a newcomer guessing at a tab, an unquoted @ or a stray space
    (tmp_path / "c.jsonl").write_text('{"id": "a", "input": "hi", "expected": "hi"}\n')
    (tmp_path / "suite.yaml").write_text(text)
    for command in ("validate", "run"):
        res = scoreboard(command, "suite.yaml", cwd=tmp_path)
        assert res.returncode == 1, (command, res.stderr)
        said = errors(res)
        assert len(said) == 1 and len(res.stderr.splitlines()) == 1, res.stderr
        assert said[0].startswith(f"scoreboard: error: suite.yaml:{line}: invalid YAML: "), said
        assert hint in said[0], said


def test_a_mistyped_path_gets_the_name_that_exists(tmp_path):
    # `scoreboard run examples/invoice/suite.yaml`, `--cases case.jsonl`, `cases: case.jsonl` in a
    # suite: "not found" and nothing more, with the right name one letter away
    (tmp_path / "examples" / "invoices").mkdir(parents=True)
    (tmp_path / "examples" / "invoices" / "cases.jsonl").write_text('{"id": "a", "input": "hi", "expected": "hi"}\n')
    (tmp_path / "examples" / "invoices" / "suite.yaml").write_text("cases: case.jsonl\nsubject: mock\n")
    res = scoreboard("run", "examples/invoice/suite.yaml", cwd=tmp_path)
    assert res.returncode == 1
    assert errors(res) == ["scoreboard: error: examples/invoice/suite.yaml: suite file not found "
                           "(did you mean 'examples/invoices/suite.yaml'?)"], res.stderr
    res = scoreboard("validate", "examples/invoices/case.jsonl", cwd=tmp_path)
    assert res.returncode == 1 and "(did you mean 'examples/invoices/cases.jsonl'?)" in res.stderr, res.stderr
    res = scoreboard("run", "--cases", "examples/invoices/case.jsonl", "--subject", "mock", cwd=tmp_path)
    assert res.returncode == 1 and errors(res) == [
        "scoreboard: error: flag --cases: cases 'examples/invoices/case.jsonl' not found "
        "(did you mean 'examples/invoices/cases.jsonl'?)"], res.stderr
    res = scoreboard("validate", "examples/invoices/suite.yaml", cwd=tmp_path)
    assert res.returncode == 1 and errors(res) == [
        "scoreboard: error: examples/invoices/suite.yaml:1, field 'cases': cases 'case.jsonl' not found "
        "(did you mean 'cases.jsonl'?)"], res.stderr
    # nothing close: no guess
    res = scoreboard("validate", "nothing/here.jsonl", cwd=tmp_path)
    assert errors(res) == ["scoreboard: error: nothing/here.jsonl: not found"], res.stderr


def test_a_file_saved_as_utf16_or_latin1_says_so_and_to_save_it_as_utf8(tmp_path):
    # a case file written by PowerShell's `>` (UTF-16 with its BOM) was "not valid UTF-8 (byte 0)",
    # and a suite file in Latin-1 "suite file is not valid UTF-8" with no line and no way out
    (tmp_path / "cases.jsonl").write_bytes('{"id": "a", "input": "hi", "expected": "hi"}\r\n'.encode("utf-16"))
    res = scoreboard("validate", "cases.jsonl", cwd=tmp_path)
    assert res.returncode == 1 and errors(res) == [
        "scoreboard: error: cases.jsonl:1: not valid UTF-8 (byte 0): the file is UTF-16; save it as UTF-8"], res.stderr
    res = scoreboard("run", "--cases", "cases.jsonl", "--subject", "mock", cwd=tmp_path)
    assert res.returncode == 1 and "the file is UTF-16; save it as UTF-8" in res.stderr, res.stderr
    (tmp_path / "ok.jsonl").write_text('{"id": "a", "input": "@note.txt", "expected": "hi"}\n')
    (tmp_path / "note.txt").write_bytes("Café\n".encode("latin-1"))
    (tmp_path / "suite.yaml").write_bytes("cases: ok.jsonl\nsubject: mock\n# café\n".encode("latin-1"))
    res = scoreboard("run", "suite.yaml", cwd=tmp_path)
    assert res.returncode == 1 and errors(res) == [
        "scoreboard: error: suite.yaml:3: suite file is not valid UTF-8 (byte 35, 0xe9); save it as UTF-8"], res.stderr
    res = scoreboard("validate", "ok.jsonl", cwd=tmp_path)
    assert res.returncode == 1 and errors(res) == [
        "scoreboard: error: ok.jsonl:1, case 'a', field 'input': input file 'note.txt' is not valid UTF-8 "
        "(byte 3, 0xe9); save it as UTF-8"], res.stderr
    assert not (tmp_path / "eval-results").exists()


@pytest.mark.parametrize("flag", ["--fail-under", "--fail-under-fields"])
def test_a_pass_rate_floor_written_as_a_percentage_says_to_write_a_share(tmp_path, flag):
    # `--fail-under 90` said "must be between 0 and 1, got 90.0" where --fail-under-metric and the
    # suite's fail_under say "(0.9 for 90%)"
    (tmp_path / "cases.jsonl").write_text('{"id": "a", "input": "hi", "expected": "hi"}\n')
    res = scoreboard("run", "--cases", "cases.jsonl", "--subject", "mock", flag, "90", cwd=tmp_path)
    assert res.returncode == 1 and errors(res) == [
        f"scoreboard: error: flag {flag}: {flag} rate must be between 0 and 1, got 90 (a share: 0.9 for 90%)"], res.stderr
    assert not (tmp_path / "eval-results").exists()


@pytest.mark.parametrize("line,hint", [
    ('{"id": "a", "input": "hi", "expected": "hi",}', "(a comma after the last item: JSON allows none)"),
    ("{'id': 'a', 'input': 'hi'}", "(JSON takes double quotes, not single ones)"),
    ('{"id": "a", "input": "hi", "expected": True}', "(JSON writes true, false and null in lower case)"),
    ('{"id": "a", "input": "say "hi"", "expected": "x"}', "a '\"' inside a text not escaped as \\\""),
])
def test_a_hand_written_json_mistake_gets_a_hint_at_its_cause(tmp_path, line, hint):
    # "Expecting property name enclosed in double quotes at column 45" for a trailing comma
    (tmp_path / "cases.jsonl").write_text(line + "\n")
    res = scoreboard("validate", "cases.jsonl", cwd=tmp_path)
    assert res.returncode == 1 and len(errors(res)) == 1, res.stderr
    assert errors(res)[0].startswith("scoreboard: error: cases.jsonl:1: invalid JSON: ") and hint in errors(res)[0], res.stderr


def test_a_json_document_cut_short_is_not_called_a_trailing_comma(tmp_path):
    (tmp_path / "cases.json").write_text('{"cases": [{"id": "a", "input": "hi"},')
    res = scoreboard("validate", "cases.json", cwd=tmp_path)
    assert res.returncode == 1 and len(errors(res)) == 1 and "comma" not in errors(res)[0], res.stderr


def test_view_on_a_port_already_taken_says_how_to_pick_a_free_one(tmp_path):
    # a second `scoreboard view` (the first still open in another terminal) ended in the OS's
    # "address already in use" with no way on
    import socket

    (tmp_path / "cases.jsonl").write_text('{"id": "a", "input": "hi", "expected": "hi"}\n')
    ran = scoreboard("run", "--cases", "cases.jsonl", "--subject", "mock", "--store", "h.sqlite", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        res = scoreboard("view", "--store", "h.sqlite", "--port", str(port), cwd=tmp_path)
    assert res.returncode == 1 and len(errors(res)) == 1, res.stderr
    assert errors(res)[0].startswith(f"scoreboard: error: flag --port: cannot listen on 127.0.0.1:{port}: "), res.stderr
    assert errors(res)[0].endswith("--port 0 picks a free port"), res.stderr


def test_a_mistyped_case_id_gets_the_id_it_resembles(tmp_path):
    # `--case inv-23` in the demo (its ids are inv-001 ... inv-030) said only "unknown case id"
    (tmp_path / "cases.jsonl").write_text("".join(
        f'{{"id": "inv-{i:03d}", "input": "x", "expected": "x"}}\n' for i in range(1, 31)))
    for command in ("run", "plan"):
        res = scoreboard(command, "--cases", "cases.jsonl", "--subject", "mock", "--case", "inv-23", cwd=tmp_path)
        assert res.returncode == 1 and errors(res) == [
            "scoreboard: error: flag --case: --case names an unknown case id 'inv-23' (did you mean 'inv-023'?)"], res.stderr
    res = scoreboard("run", "--cases", "cases.jsonl", "--subject", "mock", "--case", "zzz", cwd=tmp_path)
    assert errors(res) == ["scoreboard: error: flag --case: --case names an unknown case id 'zzz'"], res.stderr


def test_a_mistyped_skill_folder_gets_the_folder_that_exists(tmp_path):
    # the README's `--skill skills/careful --vs skills/basic`, one letter off: "not found" alone,
    # and a folder whose SKILL.md was saved as skill.md
    (tmp_path / "cases.jsonl").write_text('{"id": "a", "input": "hi", "expected": "hi"}\n')
    (tmp_path / "agent.py").write_text("def answer(input, skill):\n    return input\n")
    for name, file in (("careful", "SKILL.md"), ("basic", "skill.md")):
        (tmp_path / "skills" / name).mkdir(parents=True)
        (tmp_path / "skills" / name / file).write_text("Be careful.\n")
    base = ("run", "--cases", "cases.jsonl", "--subject", "python:agent:answer")
    res = scoreboard(*base, "--skill", "skills/carefull", "--vs", "skills/careful", cwd=tmp_path)
    assert res.returncode == 1 and len(errors(res)) == 1, res.stderr
    assert errors(res)[0].endswith(f"not found (did you mean '{tmp_path / 'skills' / 'careful'}'?)"), res.stderr
    res = scoreboard(*base, "--skill", "skills/careful", "--vs", "skills/basic", cwd=tmp_path)
    assert res.returncode == 1 and len(errors(res)) == 1, res.stderr
    assert errors(res)[0].endswith(f"SKILL.md' not found (did you mean '{tmp_path / 'skills' / 'basic' / 'skill.md'}'?)"), res.stderr


def test_a_missing_at_input_file_offers_the_close_name_and_lists_nothing_outside_the_folder(tmp_path):
    (tmp_path / "inputs").mkdir()
    (tmp_path / "inputs" / "invoice-1.txt").write_text("total 5")
    (tmp_path / "cases.jsonl").write_text('{"id": "a", "input": "@inputs/invoce-1.txt"}\n'
                                          '{"id": "b", "input": "@../outside/invoice-1.txt"}\n')
    done = run_cli(["validate", "cases.jsonl"], tmp_path, {**os.environ, "SCOREBOARD_STORE": "none"})
    assert done.returncode == 1
    assert "did you mean 'inputs/invoice-1.txt'?" in done.stderr, done.stderr

    from scoreboard.nearmiss import near_miss

    (tmp_path.parent / "outside-probe15").mkdir(exist_ok=True)
    (tmp_path.parent / "outside-probe15" / "secret.txt").write_text("x")
    # close to a real file outside the folder: never listed, never offered
    assert near_miss("../outside-probe15/secrt.txt", str(tmp_path), str(tmp_path)) is None
    assert near_miss("inputs/invoce-1.txt", str(tmp_path), str(tmp_path)) == "inputs/invoice-1.txt"
