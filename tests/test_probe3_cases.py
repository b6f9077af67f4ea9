"""Loose ends in case loading and templates, probed from the outside: a case's threshold is a
strict number, a template never loads another file (refused at load, wherever it is compiled),
a dataset item's error names the item, and a gold directory's errors are collected. Each test
runs the real command (`python -m scoreboard`) on files written under tmp_path, unless it checks
a module's shape."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.cli_inprocess import run_cli

SUBJECT = "def reply(prompt, skill, run, params):\n    return 'ANSWER: ' + prompt\n"


def scoreboard(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return run_cli(args, cwd)


def write_suite(folder: Path, cases: list[dict], extra: str = "") -> Path:
    (folder / "subj.py").write_text(SUBJECT)
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    suite = folder / "suite.yaml"
    suite.write_text("name: probe3\ncases: cases.jsonl\n"
                     "subject: {type: python, function: 'subj:reply', model_free: true}\n" + extra)
    return suite


def one_error(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.stderr


# --- 1. a case's threshold is a number in [0, 1], never a boolean or a text ---

def test_case_threshold_true_or_text_is_an_error_naming_line_case_and_field(tmp_path):
    suite = write_suite(tmp_path, [
        {"id": "fine", "input": "x", "grader": {"contains": "x"}, "threshold": 1},
        {"id": "flag", "input": "x", "grader": {"contains": "x"}, "threshold": True},
        {"id": "text", "input": "x", "grader": {"contains": "x"}, "threshold": "0.5"},
    ])
    err = one_error(scoreboard("validate", str(suite), cwd=tmp_path))
    lines = err.strip().splitlines()
    assert any("cases.jsonl:2" in ln and "'flag'" in ln and "'threshold'" in ln for ln in lines), err
    assert any("cases.jsonl:3" in ln and "'text'" in ln and "'threshold'" in ln for ln in lines), err


def test_case_threshold_numbers_still_load(tmp_path):
    suite = write_suite(tmp_path, [
        {"id": "int", "input": "x", "grader": {"contains": "x"}, "threshold": 0},
        {"id": "float", "input": "x", "grader": {"contains": "x"}, "threshold": 0.75},
    ])
    proc = scoreboard("validate", str(suite), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr


# --- 2. a template never loads another file: refused at load wherever it is compiled ---

JUDGE = "judge: {type: openai, base_url: 'http://127.0.0.1:9/v1', model: judge-model}\n"


@pytest.mark.parametrize("tag, text", [
    ("include", "{% include '/etc/passwd' %} {{ output }}"),
    ("import", "{% import '../x.j2' as m %}{{ output }}"),
    ("from ... import", "{% from 'x' import y %}{{ output }}"),
    ("extends", "{% extends 'base' %}"),
])
def test_judge_prompt_loading_another_file_is_refused_at_load(tmp_path, tag, text):
    suite = write_suite(tmp_path, [{"id": "a", "input": "x"}],
                        JUDGE + "graders:\n  - llm-judge: {prompt: " + json.dumps(text) + "}\n")
    err = one_error(scoreboard("validate", str(suite), cwd=tmp_path))
    assert len(err.strip().splitlines()) == 1, err
    assert "suite.yaml" in err and "llm-judge" in err and "{% " + tag + " %}" in err, err
    assert "no loader" not in err


def test_judge_prompt_with_include_never_fails_per_case(tmp_path):
    suite = write_suite(tmp_path, [{"id": "a", "input": "x"}, {"id": "b", "input": "y"}],
                        JUDGE + "graders:\n  - classify: {prompt: \"{% include 'x' %}\", choices: [A, B]}\n")
    proc = scoreboard("run", str(suite), "--output", str(tmp_path / "r.json"), "--no-progress",
                      "--format", "json", cwd=tmp_path)
    err = one_error(proc)
    assert "{% include %}" in err and "classify" in err, err
    assert not (tmp_path / "r.json").exists()


def test_prompt_and_chat_message_loading_another_file_still_refused(tmp_path):
    suite = write_suite(tmp_path, [{"id": "a", "vars": {"q": "x"}}],
                        "prompt:\n  - {role: system, content: hi}\n"
                        "  - {role: user, content: \"{% extends '../x' %}{{ q }}\"}\n")
    err = one_error(scoreboard("validate", str(suite), cwd=tmp_path))
    assert "{% extends %} on message 2 (user)" in err and "cannot load another file" in err, err


def test_environment_refuses_loading_tags_when_compiled():
    from jinja2 import TemplateSyntaxError

    from scoreboard.templating import environment

    for undefined in ("error", "empty"):
        with pytest.raises(TemplateSyntaxError) as info:
            environment(undefined).from_string("a\n{% include '/etc/passwd' %}")
        assert info.value.lineno == 2 and info.value.loading_tag == "include"


# --- 3. templating/limits.py split: the budget (limits.py) and the sizing (sizes.py) ---

def test_templating_modules_stay_under_400_lines_and_the_split_names_import():
    folder = Path(__file__).resolve().parents[1] / "src" / "scoreboard" / "templating"
    for module in folder.glob("*.py"):
        assert len(module.read_text().splitlines()) <= 400, module.name
    from scoreboard.templating import limits, sizes

    assert limits.render_budget and limits._Budget and limits._render
    assert sizes._text_size and sizes._charge and sizes._method_check and sizes._percent_size
    with limits.render_budget(10):
        assert sizes._text_size(limits._budget(), ["ab", {"c": 1}]) > 0


# --- 4. a dataset entry's error names the entry: `cases.1.format`, or `cases.format` alone ---

def write_dataset_suite(folder: Path, cases: str) -> Path:
    (folder / "subj.py").write_text(SUBJECT)
    (folder / "plain.jsonl").write_text('{"id": "x", "input": "y"}\n')
    (folder / "d.jsonl").write_text('{"input": "q", "target": "a"}\n')
    suite = folder / "suite.yaml"
    suite.write_text(f"name: probe3\ncases: {cases}\n"
                     "subject: {type: python, function: 'subj:reply', model_free: true}\n")
    return suite


@pytest.mark.parametrize("cases, field", [
    ("[plain.jsonl, {format: jsonl, path: d.jsonl}]", "cases.1.format"),
    ("{format: jsonl, path: d.jsonl}", "cases.format"),
    ("[plain.jsonl, {format: inspect, path: d.jsonl, bogus: 1}]", "cases.1.bogus"),
    ("[plain.jsonl, {format: inspect, path: ../d.jsonl}]", "cases.1.path"),
    ("[plain.jsonl, {format: hf, path: d.jsonl, auto_id: true}]", "cases.1.auto_id"),
    ("[{format: inspect, path: d.jsonl, encoding: nope}]", "cases.0.encoding"),
])
def test_dataset_entry_error_names_the_item(tmp_path, cases, field):
    suite = write_dataset_suite(tmp_path, cases)
    err = one_error(scoreboard("validate", str(suite), cwd=tmp_path))
    assert len(err.strip().splitlines()) == 1, err
    assert f"suite.yaml:2, field {field!r}:" in err, err  # the line of `cases:`


# --- 5. a gold directory reports every bad entry (up to 20), a duplicate key names its line ---

def write_gold(folder: Path) -> Path:
    gold = folder / "gold"
    gold.mkdir()
    (gold / "a.txt").write_text("doc a")
    (gold / "a.gold.json").write_text('{\n  "fields": {"x": 1},\n  "fields": {"x": 2}\n}\n')
    (gold / "b.txt").write_text("doc b")
    (gold / "b.gold.json").write_text('{"fields": {},\n "doc_class": 3,\n "bogus": 1}\n')
    (gold / "c.txt").write_text("doc c")
    (gold / "c.gold.json").write_text('{"fields": {\n  "k": 1,\n  "k": 2\n}}\n')
    (gold / "ok.txt").write_text("fine")
    (gold / "ok.gold.json").write_text('{"fields": {"k": 1}}\n')
    (gold / "orphan.gold.json").write_text('{"fields": {}}\n')
    return gold


def test_gold_directory_reports_every_bad_entry_with_lines(tmp_path):
    gold = write_gold(tmp_path)
    err = one_error(scoreboard("validate", str(gold), cwd=tmp_path))
    lines = err.strip().splitlines()
    assert any("orphan.gold.json" in ln and "has no document" in ln for ln in lines), err
    assert any("a.gold.json:3" in ln and "duplicate key 'fields'" in ln for ln in lines), err
    assert any("b.gold.json:2" in ln and "'doc_class'" in ln for ln in lines), err
    assert any("b.gold.json:3" in ln and "'bogus'" in ln for ln in lines), err
    assert any("c.gold.json:3" in ln and "duplicate key 'k'" in ln for ln in lines), err
    assert len(lines) == 5, err


def test_gold_directory_in_a_suite_reports_every_bad_entry(tmp_path):
    write_gold(tmp_path)
    (tmp_path / "subj.py").write_text(SUBJECT)
    suite = tmp_path / "suite.yaml"
    suite.write_text("name: probe3\ncases: gold\nsubject: {type: python, function: 'subj:reply', model_free: true}\n")
    err = one_error(scoreboard("validate", str(suite), cwd=tmp_path))
    assert len(err.strip().splitlines()) == 5, err


def test_gold_directory_errors_stop_at_twenty(tmp_path):
    gold = tmp_path / "gold"
    gold.mkdir()
    (gold / "ok.txt").write_text("fine")
    (gold / "ok.gold.json").write_text('{"fields": {}}\n')
    for i in range(25):
        (gold / f"orphan{i:02}.gold.json").write_text('{"fields": {}}\n')
    err = one_error(scoreboard("validate", str(gold), cwd=tmp_path))
    lines = err.strip().splitlines()
    assert len(lines) == 21 and "stopped after 20 errors" in lines[-1], err


def test_gold_key_line_follows_the_path():
    from scoreboard.cases.gold import _key_line

    text = '{\n "fields": {\n  "document_id": "x",\n  "a": [1, {"b": 2,\n "b": 3}]\n },\n "document_id": "y"\n}'
    assert _key_line(text, ("document_id",)) == 7
    assert _key_line(text, ("fields", "document_id")) == 3
    assert _key_line(text, ("fields", "a", 1, "b"), 2) == 5
    assert _key_line(text, ("missing",)) is None


# --- validate: a suite whose `cases:` list holds a bad item is still checked as a suite ---

def test_validate_suite_with_a_bad_cases_item_reports_the_item_not_subject(tmp_path):
    suite = write_dataset_suite(tmp_path, "[plain.jsonl, 5]")
    err = one_error(scoreboard("validate", str(suite), cwd=tmp_path))
    assert "field 'cases.1'" in err and "'subject'" not in err, err


# --- an Inspect dataset's `template` cannot make an input too big to hold (str.format's widths) ---

def test_inspect_template_width_is_refused_at_load(tmp_path):
    (tmp_path / "mc.jsonl").write_text('{"input": "q", "target": "A", "choices": ["x", "y"]}\n')
    suite = write_dataset_suite(
        tmp_path, "[{format: inspect, path: mc.jsonl, template: '{question}{choices}{letters:>1000000000000000}'}]")
    err = one_error(scoreboard("validate", str(suite), cwd=tmp_path))
    assert "suite.yaml:2, field 'cases.0.template'" in err and "more than" in err, err
    assert "internal error" not in err and "MemoryError" not in err


def test_inspect_template_repeating_a_long_question_is_refused_before_it_is_made(tmp_path):
    question = "q" * 2000
    (tmp_path / "mc.jsonl").write_text(json.dumps({"input": question, "target": "A", "choices": ["x", "y"]}) + "\n")
    template = "{choices}" + "{question}" * 10000  # 20 million characters once filled
    suite = write_dataset_suite(tmp_path, "[{format: inspect, path: mc.jsonl, template: '" + template + "'}]")
    err = one_error(scoreboard("validate", str(suite), cwd=tmp_path))
    assert "mc.jsonl:1" in err and "template" in err and "more than" in err, err


def test_inspect_template_filled_size_counts_before_formatting():
    from scoreboard.cases.datasets_inspect import MAX_FILLED, filled_size

    values = {"question": "abc", "choices": "A) x", "letters": "A,B"}
    assert filled_size("{question}: {choices}", values) >= len("abc: A) x")
    assert filled_size("{letters:>50}", values) >= 50
    assert filled_size("{letters:>99999999999999999999}", values) > MAX_FILLED


# --- suite defaults and expand: every case's mistake is reported, not only the first ---

def test_defaults_and_expand_errors_are_collected_across_cases(tmp_path):
    suite = write_suite(tmp_path, [
        {"id": "a", "vars": {"q": "x"}, "expand": ["z"]},
        {"id": "b", "vars": [1]},
        {"id": "c", "vars": {"q": "x"}, "expand": ["w"]},
        {"id": "ok", "vars": {"q": ["x", "y"]}, "expand": ["q"]},
    ], "prompt: '{{ q }}'\ndefaults: {vars: {k: 1}}\n")
    err = one_error(scoreboard("validate", str(suite), cwd=tmp_path))
    lines = err.strip().splitlines()
    assert len(lines) == 3, err
    assert "case 'a', field 'expand'" in lines[0] and "case 'b', field 'vars'" in lines[1], err
    assert "case 'c', field 'expand'" in lines[2], err
