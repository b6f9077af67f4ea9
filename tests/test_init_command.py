"""`scoreboard init DIR`: a suite a new user runs at once (offline, no key) and then makes theirs:
its files validate and run as written, its commented variants validate once uncommented, and it
never writes over a file (refused whole, naming the file; nothing written)."""

from __future__ import annotations

import json
import os

from tests.cli_inprocess import run_cli

ENV = {**{k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")},
       "SCOREBOARD_STORE": "none"}
FILES = ("suite.yaml", "cases.jsonl", "app.py")


def test_init_writes_a_suite_that_runs_as_written_with_one_failure_to_read(tmp_path):
    done = run_cli(["init", "my-evals"], tmp_path, ENV)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "wrote my-evals/suite.yaml, my-evals/cases.jsonl and my-evals/app.py",
        "  scoreboard validate my-evals/suite.yaml   # check it (no model called)",
        "  scoreboard run my-evals/suite.yaml        # run it: 5 cases, reports in eval-results/my-evals/"]
    assert sorted(p.name for p in (tmp_path / "my-evals").iterdir()) == sorted(FILES)
    checked = run_cli(["validate", "my-evals/suite.yaml"], tmp_path, ENV)
    assert checked.returncode == 0 and "OK: suite my-evals: 5 cases, 1 variant (starter)" in checked.stdout
    ran = run_cli(["run", "my-evals/suite.yaml", "--no-progress", "--format", "json"], tmp_path, ENV)
    assert ran.returncode == 0, ran.stderr
    (report_path,) = (tmp_path / "eval-results" / "my-evals").glob("*.json")  # where init said
    report = json.loads(report_path.read_text())
    statuses = {a["case_id"]: a["status"] for a in report["attempts"]}
    assert statuses == {"france": "passed", "japan": "passed", "kenya": "passed", "peru": "passed",
                        "canada": "failed"}


def test_the_commented_variants_validate_once_uncommented(tmp_path):
    """What the suite file shows for a model, a service and a program is a suite `validate`
    takes (no key needed, nothing called)."""
    assert run_cli(["init", "e"], tmp_path, ENV).returncode == 0
    suite = tmp_path / "e" / "suite.yaml"
    lines = suite.read_text().splitlines()
    examples = [line for line in lines if line.startswith("  # ") and ": {subject:" in line]
    assert [line.split(":")[0].strip("# ") for line in examples] == ["gpt", "service", "script"]
    suite.write_text("\n".join(line.replace("  # ", "  ", 1) if line in examples else line for line in lines) + "\n")
    (tmp_path / "e" / "answer.sh").write_text("#!/bin/sh\necho Paris\n")
    (tmp_path / "e" / "answer.sh").chmod(0o755)
    checked = run_cli(["validate", "e/suite.yaml"], tmp_path, ENV)
    assert checked.returncode == 0, checked.stderr
    assert "4 variants (starter, gpt, service, script)" in checked.stdout


def test_init_never_writes_over_a_file_and_writes_nothing_when_refused(tmp_path):
    assert run_cli(["init", "e"], tmp_path, ENV).returncode == 0
    before = {name: (tmp_path / "e" / name).read_bytes() for name in FILES}
    (tmp_path / "e" / "suite.yaml").write_text("name: mine\n")
    again = run_cli(["init", "e"], tmp_path, ENV)
    assert again.returncode == 1
    assert again.stderr.strip() == ("scoreboard: error: e/suite.yaml: already exists: init writes no file over "
                                    "another (choose another folder)")
    assert (tmp_path / "e" / "suite.yaml").read_text() == "name: mine\n"
    assert {name: (tmp_path / "e" / name).read_bytes() for name in FILES[1:]} == \
        {name: before[name] for name in FILES[1:]}
    # one of the three already there (here app.py): refused, and neither other file is written
    (tmp_path / "f").mkdir()
    (tmp_path / "f" / "app.py").write_text("mine = 1\n")
    refused = run_cli(["init", "f"], tmp_path, ENV)
    assert refused.returncode == 1 and "f/app.py: already exists" in refused.stderr
    assert sorted(p.name for p in (tmp_path / "f").iterdir()) == ["app.py"]
    # a file where the folder would be
    (tmp_path / "g").write_text("")
    not_dir = run_cli(["init", "g"], tmp_path, ENV)
    assert not_dir.returncode == 1 and not_dir.stderr.strip() == (
        "scoreboard: error: g: is not a folder: give a folder to write the suite in")
    # a folder that cannot be made (under a file): one line naming it, nothing left behind
    under_file = run_cli(["init", "g/sub"], tmp_path, ENV)
    assert under_file.returncode == 1 and under_file.stderr.startswith("scoreboard: error: g/sub: cannot be written "
                                                                       "there (not a directory)"), under_file.stderr
    assert (tmp_path / "g").read_text() == ""


def test_the_name_is_the_reports_folder_name(tmp_path):
    """`--name` (or the folder's name) as the reports' folder carries it: one `-` for each run of
    other characters, so the suite file's `name:` and the printed folder agree."""
    done = run_cli(["init", "x", "--name", "team evals: v2/#1"], tmp_path, ENV)
    assert done.returncode == 0, done.stderr
    assert "reports in eval-results/team-evals-v2-1/" in done.stdout
    assert '\nname: "team-evals-v2-1"\n' in (tmp_path / "x" / "suite.yaml").read_text()
    ran = run_cli(["run", "x/suite.yaml", "--no-progress", "--format", "json"], tmp_path, ENV)
    assert ran.returncode == 0, ran.stderr
    assert len(list((tmp_path / "eval-results" / "team-evals-v2-1").glob("*.json"))) == 1
    # a folder named as YAML would read a number or a boolean: the suite's name stays text
    for folder in ("2024", "yes", "null"):
        assert run_cli(["init", folder], tmp_path, ENV).returncode == 0
        checked = run_cli(["validate", f"{folder}/suite.yaml"], tmp_path, ENV)
        assert checked.returncode == 0 and f"OK: suite {folder}: 5 cases" in checked.stdout, checked.stderr


def test_a_run_given_neither_a_suite_nor_cases_points_at_init(tmp_path):
    """`scoreboard run` (or `plan`) with nothing to run: one line that says what to give and how
    to start a suite; a suite without cases keeps its own words."""
    for command in (["run"], ["plan"], ["run", "--subject", "mock"]):
        done = run_cli(command, tmp_path, ENV)
        assert done.returncode == 1
        assert done.stderr.strip() == ("scoreboard: error: field 'cases': no suite and no cases: give a suite file or "
                                       "--cases FILE (`scoreboard init` writes a suite to start from)"), command
    (tmp_path / "s.yaml").write_text("subject: mock\n")
    done = run_cli(["run", "s.yaml"], tmp_path, ENV)
    assert done.stderr.strip() == ("scoreboard: error: s.yaml, field 'cases': no cases: give --cases FILE or 'cases:' "
                                   "in the suite")
