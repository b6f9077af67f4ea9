"""A new user's first hour, from the README alone: the examples and errors a newcomer meets."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def scoreboard(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "SCOREBOARD_STORE": "none", "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run([sys.executable, "-m", "scoreboard", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_promptfoo_provider_map_with_text_options_is_listed_not_a_crash(tmp_path):
    # `- exec: ./say.sh` (a YAML mapping where `exec:./say.sh` was meant) is the
    # {provider id: options} form with text options: it was "internal error: TypeError"
    (tmp_path / "promptfooconfig.yaml").write_text(
        'prompts: ["Hello {{name}}"]\n'
        "providers:\n  - exec: ./say.sh\n  - echo\n"
        "tests:\n  - vars: {name: Ada}\n    assert: [{type: contains, value: Ada}]\n")
    res = scoreboard("import", "promptfoo", "promptfooconfig.yaml", "--output", "out", cwd=tmp_path)
    assert "internal error" not in res.stderr, res.stderr
    assert res.returncode == 3, (res.returncode, res.stdout, res.stderr)
    listed = [line for line in res.stdout.splitlines() if line.startswith("- providers.0:")]
    assert listed and "mapping" in listed[0], res.stdout
    assert (tmp_path / "out" / "suite.yaml").is_file()


def test_import_into_a_used_folder_says_what_to_do(tmp_path):
    # the Inspect import says "import again with --dataset FILE"; doing so into the same folder
    # was refused without saying how to go on
    (tmp_path / "task.py").write_text(
        "from inspect_ai import Task, task\nfrom inspect_ai.dataset import hf_dataset\n"
        "from inspect_ai.scorer import match\n\n@task\ndef t():\n"
        "    return Task(dataset=hf_dataset('gsm8k', split='test'), scorer=match())\n")
    (tmp_path / "gsm8k.jsonl").write_text('{"input": "1+1?", "target": "2"}\n')
    first = scoreboard("import", "inspect", "task.py", "--output", "out", cwd=tmp_path)
    assert first.returncode == 3 and "--dataset FILE" in first.stdout, first.stdout
    again = scoreboard("import", "inspect", "task.py", "--output", "out", "--dataset", "gsm8k.jsonl", cwd=tmp_path)
    assert again.returncode == 1
    lines = again.stderr.strip().splitlines()
    assert len(lines) == 1 and "out" in lines[0] and "--output" in lines[0], again.stderr
    assert "a new folder" in lines[0] and "remove" in lines[0], again.stderr


def test_a_missing_skill_names_the_flag_or_suite_field_that_gave_it(tmp_path):
    # README "Variants and suites": --skill skills/careful --vs skills/basic; a --vs path not
    # found was blamed on --skill, and a suite variant's on a bare field 'skill'
    (tmp_path / "skills" / "careful").mkdir(parents=True)
    (tmp_path / "skills" / "careful" / "SKILL.md").write_text("Be careful.\n")
    (tmp_path / "agent.py").write_text("def answer(input, skill):\n    return 'Hello!'\n")
    (tmp_path / "cases.jsonl").write_text('{"id": "c1", "input": "Hi", "expected": "Hello!"}\n')
    res = scoreboard("run", "--cases", "cases.jsonl", "--subject", "python:agent:answer",
                     "--skill", "skills/careful", "--vs", "skills/basic", cwd=tmp_path)
    assert res.returncode == 1
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("scoreboard: error: flag --vs:"), res.stderr
    assert "skills/basic" in lines[0] and "not found" in lines[0], res.stderr
    first = scoreboard("run", "--cases", "cases.jsonl", "--subject", "python:agent:answer",
                       "--skill", "skills/nope", "--vs", "skills/careful", cwd=tmp_path)
    assert first.stderr.strip().startswith("scoreboard: error: flag --skill:"), first.stderr
    (tmp_path / "s.yaml").write_text("cases: cases.jsonl\nsubject: python:agent:answer\n"
                                     "variants:\n  a: {skill: skills/careful}\n  b: {skill: skills/nope.md}\n")
    suite = scoreboard("validate", "s.yaml", cwd=tmp_path)
    assert suite.returncode == 1
    assert "s.yaml:5, field 'variants.b.skill': variant 'b': skill 'skills/nope.md' not found" in suite.stderr, suite.stderr


def test_power_words_do_not_claim_a_disagreement_the_run_did_not_see(tmp_path):
    # two variants that agree on every case (one run each): the power figure takes the
    # assumption's half, and said "the variants disagreeing on 50% of cases" beside
    # "better on 0 cases, worse on 0, 2 ties"
    (tmp_path / "cases.jsonl").write_text('{"id": "fr", "vars": {"country": "France"}, "expected": "x"}\n'
                                          '{"id": "de", "vars": {"country": "Germany"}, "expected": "x"}\n'
                                          '{"id": "it", "vars": {"country": "Italy"}, "expected": "x"}\n')
    (tmp_path / "suite.yaml").write_text(
        "name: agree\ncases: cases.jsonl\nsubject: mock\n"
        "prompts:\n  terse: 'Capital of {{ country }}?'\n  careful: 'Name the capital of {{ country }}.'\n"
        "graders: [{python: 'True'}]\nformats: [json, md, html]\n")
    res = scoreboard("run", "suite.yaml", "--output", "r.json", "--no-progress", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "worse on 0, 3 ties" in res.stdout, res.stdout
    text = res.stdout + (tmp_path / "r.md").read_text()
    assert "the variants disagreeing on 50%" not in text, text
    line = next(x for x in res.stdout.splitlines() if "80% power" in x)
    assert "assumed to disagree on 50% of cases (they agreed on every case)" in line, line
    for js in ("record/templates/report.js", "viewer/static/app.js"):  # the page and the viewer say the same
        assert "they agreed on every case" in (ROOT / "src" / "scoreboard" / js).read_text(), js
