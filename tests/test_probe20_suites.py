"""Suites as people write them, round 7: the README's examples run as printed, then varied as a
user migrating a real suite would (expanded vars with case filters, prompt axes, datasets,
defaults). Each test runs the real command (`python -m scoreboard`, in-process) on files written under
tmp_path, and checks that `verify` accepts every report it wrote."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.cli_inprocess import run_cli

SUBJECT = "def reply(prompt, skill, run, params):\n    return 'ANSWER: ' + str(prompt)\n"


def scoreboard(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "SCOREBOARD_STORE": "none"}
    return run_cli(args, cwd, env)  # in-process: no test here is about the process


def write_suite(folder: Path, cases: list[dict], extra: str) -> Path:
    (folder / "subj.py").write_text(SUBJECT)
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    suite = folder / "suite.yaml"
    suite.write_text("name: probe20\ncases: cases.jsonl\n"
                     "subject: {type: python, function: 'subj:reply', model_free: true}\n" + extra)
    return suite


def run_report(folder: Path, suite: Path, *flags: str) -> tuple[subprocess.CompletedProcess, dict]:
    out = folder / "report.json"
    proc = scoreboard("run", str(suite), "--output", str(out), "--no-progress", "--format", "json,md",
                      *flags, cwd=folder)
    assert out.is_file(), proc.stderr
    verified = scoreboard("verify", str(out), "--allow-code", cwd=folder)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    return proc, json.loads(out.read_text())


EXPANDED = [{"id": "fr", "vars": {"country": "France", "lang": ["en", "fr"]}, "expand": ["lang"],
             "graders": [{"contains": "France"}]},
            {"id": "de", "vars": {"country": "Germany", "lang": "en"}, "graders": [{"contains": "Germany"}]}]


def test_case_names_a_case_that_expand_made_into_several_and_selects_them_all(tmp_path):
    """`expand: [lang]` makes `fr[lang=en]` and `fr[lang=fr]` from the case `fr`; `--case fr` (or
    `case: [fr]` in the suite) said "an unknown case id 'fr'", so the only way to run the case
    the user wrote was to spell out every expansion. As a conversation's id selects all its turns,
    the id of an expanded case now selects every case made from it; an id that names nothing is
    still refused."""
    suite = write_suite(tmp_path, EXPANDED, "prompt: 'Capital of {{ country }} ({{ lang }})?'\n")
    proc, report = run_report(tmp_path, suite, "--case", "fr")
    assert proc.returncode == 0, proc.stderr
    assert sorted(c["id"] for c in report["plan"]["cases"]) == ["fr[lang=en]", "fr[lang=fr]"]
    (tmp_path / "s2.yaml").write_text(suite.read_text() + "case: [fr, de]\n")
    plan = scoreboard("plan", "s2.yaml", cwd=tmp_path)
    assert plan.returncode == 0 and "3 cases" in plan.stdout, plan.stdout + plan.stderr
    (tmp_path / "s3.yaml").write_text(suite.read_text() + "case: [fx]\n")
    bad = scoreboard("plan", "s3.yaml", cwd=tmp_path)
    assert bad.returncode == 1 and "s3.yaml:5, field 'case': names an unknown case id 'fx'" in bad.stderr, bad.stderr


def test_a_prompt_that_reads_a_var_is_not_said_to_name_none_when_the_cases_differ_only_in_another(tmp_path):
    """With one prompt reading `country` and the cases (here the expansions of one case) differing
    only in `lang`, the warning said the prompt "names neither
    {{ input }} nor a case's vars", which is false: it now says which names the cases differ in
    and that the prompt does not name them; a prompt that reads the var the cases differ in is
    not warned of, and one naming nothing keeps its words."""
    suite = write_suite(tmp_path, EXPANDED[:1], "prompts: {terse: 'Capital of {{ country }}?', "
                                            "careful: 'Capital of {{ country }} in {{ lang }}?'}\n")
    proc = scoreboard("plan", str(suite), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "names neither" not in proc.stderr, proc.stderr
    assert "field 'prompts.terse'" in proc.stderr and "they differ only in lang, which it does not name" in proc.stderr
    assert "prompts.careful" not in proc.stderr, proc.stderr
    (tmp_path / "s2.yaml").write_text(suite.read_text().replace("prompts: {", "prompt: 'One word.'\n#{"))
    plain = scoreboard("plan", "s2.yaml", cwd=tmp_path)
    assert "field 'prompt'" in plain.stderr and "it names neither {{ input }} nor a case's vars" in plain.stderr


def test_an_unknown_top_level_key_of_a_case_document_names_its_line_and_what_the_document_holds(tmp_path):
    """A YAML case document with a key of its own beside `cases:` (`common: &g [...]`, the usual
    place for anchors the cases share) was refused as "cases.yaml, field 'common': unknown field":
    no line, and no word of what the document may hold; `cases:` given a mapping named no line
    either. Each now names the line of its key."""
    (tmp_path / "cases.yaml").write_text("name: demo\ncommon: &g\n  - {contains: A}\ncases:\n"
                                         "  - {id: a, input: x, graders: *g}\n")
    proc = scoreboard("validate", "cases.yaml", cwd=tmp_path)
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith("scoreboard: error: cases.yaml:2, field 'common': unknown field (a case "
                                  "document holds cases, description, name, version; an anchor"), proc.stderr
    (tmp_path / "c.json").write_text('{"cases": [{"id": "a", "input": "x"}],\n "extra": 1}\n')
    proc = scoreboard("validate", "c.json", cwd=tmp_path)
    assert proc.returncode == 1 and "c.json:2, field 'extra': unknown field" in proc.stderr, proc.stderr
    assert "anchor" not in proc.stderr
    (tmp_path / "m.yaml").write_text("name: demo\ncases:\n  id: a\n")
    proc = scoreboard("validate", "m.yaml", cwd=tmp_path)
    assert proc.returncode == 1 and "m.yaml:2, field 'cases': must be a list" in proc.stderr, proc.stderr


def test_a_dataset_of_a_kind_no_reader_takes_is_named_at_the_suite_s_line_with_the_tsv_way_out(tmp_path):
    """Excel's "Unicode Text" export is a tab-separated UTF-16 `.txt`; given as
    `{format: inspect, path: qa.txt}` it was refused as "qa.txt, field 'cases.0.path': ...",
    naming the data file beside a field of the suite, with no line. The error now names the
    suite file and the entry's line, and says how such a file is read (name it .tsv)."""
    (tmp_path / "qa.txt").write_text("question\tanswer\r\nq1\tA\r\n", encoding="utf-16")
    (tmp_path / "suite.yaml").write_text(
        "name: probe20\ncases:\n  - {format: inspect, path: qa.txt, fields: {input: question, target: answer},"
        " encoding: utf-16}\nsubject: mock\n")
    proc = scoreboard("validate", "suite.yaml", cwd=tmp_path)
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1, proc.stderr
    assert "suite.yaml:3, field 'cases.0.path': no Inspect dataset reader for '.txt'" in proc.stderr, proc.stderr
    assert "name it .tsv" in proc.stderr
    (tmp_path / "qa.txt").rename(tmp_path / "qa.tsv")
    (tmp_path / "suite.yaml").write_text((tmp_path / "suite.yaml").read_text().replace("qa.txt", "qa.tsv"))
    proc, report = run_report(tmp_path, tmp_path / "suite.yaml")
    assert [c["expected"] for c in report["plan"]["cases"]] == ["A"], proc.stderr
