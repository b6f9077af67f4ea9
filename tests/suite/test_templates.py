"""Prompt templates with case vars: rendering, errors, the prompt axis, per-variant inputs,
expansion, confinement, the sandbox, defaults, record-only cases, python subjects' params."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from scoreboard.engine.options import RunOptions
from scoreboard.engine.pipeline import run
from scoreboard.errors import ConfigError
from scoreboard.hashing import sha256_json
from scoreboard.record.verify import verify_report
from scoreboard.suite.load import load_suite

SUBJECT = '''
def echo(input, skill, run, params):
    text = input if isinstance(input, str) else " | ".join(m["role"] + ": " + m["content"] for m in input)
    return text + (" " + params["suffix"] if params.get("suffix") else "")
'''


def write(folder: Path, suite: dict, cases: list[dict], files: dict | None = None) -> Path:
    (folder / "subj.py").write_text(SUBJECT)
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    for name, text in (files or {}).items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    path = folder / "suite.yaml"
    path.write_text(yaml.safe_dump({"cases": "cases.jsonl", "subject": {"type": "python", "function": "subj:echo"},
                                    "output_dir": "out", **suite}, sort_keys=False))
    return path


def test_one_prompt_renders_vars_and_is_what_is_hashed(tmp_path):
    path = write(tmp_path, {"prompt": "Translate {{ text }} into {{ lang | upper }}."},
                 [{"id": "a", "vars": {"text": "cat", "lang": "fr"}, "expected": "x"}])
    suite = load_suite(path)
    case = suite.cases[0]
    assert case.input == "Translate cat into FR." and case.input_hash == sha256_json(case.input)
    plan = suite.plan()
    assert plan["cases"][0]["vars"] == {"text": "cat", "lang": "fr"}
    assert plan["variants"][0]["prompt"]["template"] == "Translate {{ text }} into {{ lang | upper }}."


def test_undefined_variable_names_the_case_and_the_variable(tmp_path):
    path = write(tmp_path, {"prompt": "Hello {{ name }} from {{ city }}"},
                 [{"id": "ok", "vars": {"name": "a", "city": "b"}}, {"id": "bad", "vars": {"name": "a"}}])
    with pytest.raises(ConfigError) as info:
        load_suite(path)
    assert info.value.case_id == "bad" and info.value.field == "vars.city" and info.value.line == 2
    assert "city" in str(info.value)


def test_sandbox_refuses_attribute_escapes_and_huge_repeats(tmp_path):
    for template in ("{{ ''.__class__.__mro__ }}", "{{ 'x' * 100000000 }}", "{{ [].append(1) }}"):
        path = write(tmp_path, {"prompt": template}, [{"id": "a", "vars": {}}])
        with pytest.raises(ConfigError) as info:
            load_suite(path)
        assert info.value.case_id == "a"


def test_chat_message_template_from_a_confined_file(tmp_path):
    messages = [{"role": "system", "content": "You answer in {{ lang }}."}, {"role": "user", "content": "{{ q }}"}]
    path = write(tmp_path, {"prompt": "@prompts/chat.json"}, [{"id": "a", "vars": {"lang": "German", "q": "Hi?"}}],
                 {"prompts/chat.json": json.dumps(messages)})
    suite = load_suite(path)
    assert suite.cases[0].input == [{"role": "system", "content": "You answer in German."},
                                    {"role": "user", "content": "Hi?"}]
    (tmp_path.parent / "outside.txt").write_text("secret {{ q }}")
    path = write(tmp_path, {"prompt": "@../outside.txt"}, [{"id": "a", "vars": {"q": "Hi?"}}])
    with pytest.raises(ConfigError) as info:
        load_suite(path)
    assert info.value.field == "prompt"


def test_prompt_axis_makes_one_variant_per_pair_with_its_own_inputs(tmp_path):
    path = write(tmp_path, {"prompts": {"short": "Q: {{ q }}", "long": "Please answer carefully: {{ q }}"},
                            "variants": {"plain": {}, "tuned": {"params": {"suffix": "!"}}}},
                 [{"id": "a", "vars": {"q": "why?"}, "graders": [{"contains": "why"}]}])
    suite = load_suite(path)
    assert [v.name for v in suite.variants] == ["short/plain", "short/tuned", "long/plain", "long/tuned"]
    case = suite.cases[0]
    assert case.inputs["short/plain"] == "Q: why?" and case.inputs["long/tuned"] == "Please answer carefully: why?"
    assert case.input_hash == sha256_json(case.inputs)
    out = run(suite, RunOptions(formats=("json",), progress=False))
    report = out.report
    texts = {a["variant"]: a["output"]["text"] for a in report["attempts"]}
    assert texts["long/tuned"] == "Please answer carefully: why? !"  # params reach the python subject
    hashes = {a["variant"]: a["input_hash"] for a in report["attempts"]}
    assert hashes["short/plain"] == sha256_json("Q: why?")
    assert verify_report(report).ok
    assert [c["a"] + " vs " + c["b"] for c in report["summary"]["comparisons"]][:1] == ["short/plain vs short/tuned"]


def test_variant_prompts_and_tampered_inputs_are_caught_by_verify(tmp_path):
    path = write(tmp_path, {"variants": {"a": {"prompt": "A {{ q }}"}, "b": {"prompt": "B {{ q }}"}}},
                 [{"id": "x", "vars": {"q": "1"}, "expected": "A 1"}])
    out = run(load_suite(path), RunOptions(formats=("json",), progress=False))
    report = out.report
    assert [a["status"] for a in report["attempts"]] == ["passed", "failed"]
    report["plan"]["cases"][0]["inputs"]["b"] = "B 2"
    found = verify_report(report)
    assert not found.ok and any("input_hash" in m["path"] for m in found.mismatches)


def test_expand_list_vars_into_cases(tmp_path):
    path = write(tmp_path, {"prompt": "Say {{ word }} in {{ lang }}"},
                 [{"id": "w", "vars": {"word": "hi", "lang": ["fr", "de"]}, "expand": ["lang"]},
                  {"id": "keep", "vars": {"word": "yo", "lang": ["fr", "de"]}}])
    suite = load_suite(path)
    assert [c.id for c in suite.cases] == ["w[lang=fr]", "w[lang=de]", "keep"]
    assert suite.cases[1].input == "Say hi in de"
    assert suite.cases[2].input == "Say yo in ['fr', 'de']"


def test_vars_without_a_prompt_is_an_error(tmp_path):
    path = write(tmp_path, {}, [{"id": "a", "vars": {"q": 1}}])
    with pytest.raises(ConfigError) as info:
        load_suite(path)
    assert info.value.case_id == "a" and info.value.field == "vars"


def test_defaults_add_graders_vars_metadata_unless_replace(tmp_path):
    path = write(tmp_path, {"prompt": "{{ greeting }} {{ name }}",
                            "defaults": {"graders": [{"contains": "Hello"}], "vars": {"greeting": "Hello"},
                                         "metadata": {"team": "x"}, "threshold": 0.5}},
                 [{"id": "a", "vars": {"name": "Ann"}, "graders": [{"contains": "Ann"}]},
                  {"id": "b", "vars": {"name": "Bob", "greeting": "Hi"}, "graders": [{"contains": "Bob"}],
                   "replace": True, "metadata": {"team": "y"}},
                  {"id": "c", "vars": {"name": "Cy"}}])
    suite = load_suite(path)
    specs = {cid: [g.name for g in gs] for cid, gs in suite.graders.items()}
    assert specs == {"a": ["contains", "contains"], "b": ["contains"], "c": ["contains"]}
    assert suite.cases[1].input == "Hi Bob" and suite.cases[1].metadata == {"team": "y"}
    assert suite.cases[0].metadata == {"team": "x"} and suite.cases[0].threshold == 0.5


def test_record_only_cases_are_not_graded(tmp_path):
    path = write(tmp_path, {}, [{"id": "free", "input": "just record me"},
                                {"id": "none", "input": "x", "graders": []},
                                {"id": "g", "input": "x", "expected": "x"}])
    out = run(load_suite(path), RunOptions(formats=("json", "md"), progress=False))
    report = out.report
    assert [a["status"] for a in report["attempts"]] == ["not-graded", "not-graded", "passed"]
    v = report["summary"]["variants"]["echo"]
    assert v["not_graded"] == 2 and v["passed"] == 1 and v["pass_rate"] == 1.0
    assert out.exit_code == 0 and verify_report(report).ok
    md = Path(out.paths["md"]).read_text()
    assert "not graded" in md


def test_python_code_in_case_files_needs_the_suite_to_allow_it(tmp_path):
    path = write(tmp_path, {}, [{"id": "a", "input": "x", "graders": [{"python": "True"}]}])
    with pytest.raises(ConfigError) as info:
        load_suite(path)
    assert info.value.case_id == "a" and "allow_case_code" in str(info.value)
    suite_text = (tmp_path / "suite.yaml").read_text() + "allow_case_code: true\n"
    (tmp_path / "suite.yaml").write_text(suite_text)
    assert [g.name for g in load_suite(path).graders["a"]] == ["python"]


def test_case_transform_is_folded_into_every_grader_spec(tmp_path):
    path = write(tmp_path, {"defaults": {"transform": "trim"}},
                 [{"id": "a", "input": "  ANSWER: B  ", "expected": "B",
                   "transform": {"last-match": "ANSWER: (\\w)"},
                   "graders": ["exact", {"starts-with": {"value": "B"}, "transform": "lower"}]},
                  {"id": "b", "input": "  yes ", "expected": "yes"}])
    suite = load_suite(path)
    specs = {cid: [g.spec for g in gs] for cid, gs in suite.graders.items()}
    # the case's own transform replaces the defaults'; it runs before a grader's own
    assert specs["a"][0]["transform"] == [{"kind": "last-match", "pattern": "ANSWER: (\\w)"}]
    assert specs["a"][1]["transform"] == [{"kind": "last-match", "pattern": "ANSWER: (\\w)"}, {"kind": "lower"}]
    assert specs["b"] == [{"exact": None, "transform": [{"kind": "trim"}]}]
    report = run(suite, RunOptions(formats=("json",), progress=False)).report
    status = {a["case_id"]: a["status"] for a in report["attempts"]}
    assert status == {"a": "failed", "b": "passed"}  # a: "B" lowered no longer starts with "B"
    assert verify_report(report).ok


def test_rescore_refuses_a_python_grader_whose_code_changed(tmp_path):
    import subprocess
    import sys

    (tmp_path / "checks.py").write_text("def ok(output):\n    return True\n")
    path = write(tmp_path, {"graders": ["python-file:checks.py:ok"]}, [{"id": "a", "input": "x"}])
    report = run(load_suite(path), RunOptions(formats=("json",), progress=False))
    json_path = report.paths["json"]
    (tmp_path / "checks.py").write_text("def ok(output):\n    return False\n")
    done = subprocess.run([sys.executable, "-m", "scoreboard", "rescore", str(json_path), "--output",
                           str(tmp_path / "again.json")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "code changed" in done.stderr
    # verify runs no code a report names unless allowed; allowed, it finds the code changed
    checked = verify_report(json.loads(Path(json_path).read_text()))
    assert checked.ok and any("--allow-code" in (s.get("why") or "") for s in checked.not_recomputable)
    checked = verify_report(json.loads(Path(json_path).read_text()), allow_code=True)
    assert checked.ok and any("code changed" in (s.get("why") or "") for s in checked.not_recomputable)
