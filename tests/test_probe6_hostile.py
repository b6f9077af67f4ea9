"""Hostile input, round 3 (probe 6), through `python -m scoreboard` as a user runs it.

A report is data someone may hand you (a CI artifact, a colleague's run): reading it must not run
code it names. Its grader specs can name a Python expression (whose restricted namespace keeps
accidents out, not an attacker: `re.enum.sys.modules['os']` is one attribute walk away), a Python
file or module (a relative one was looked up in the current directory), or JavaScript (run by
Node with `process` in reach). `verify` and every command that checks a report before using it
(store verify, export turns, import reviews, import comparisons) recomputed those grades, so a
shared report ran its code on `scoreboard verify`. Now such grades are listed as not recomputed
unless `verify --allow-code` is given.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_inprocess import run_cli

ROOT = Path(__file__).resolve().parent.parent


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run([sys.executable, "-m", "scoreboard", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300, check=False)


def cli_in(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    """`cli` in-process, where what is checked is what a command did with the report, not the
    process. A report naming a relative Python file is read by a real `python -m scoreboard`
    (whose sys.path starts at the folder it runs in), and a huge file under a memory limit."""
    return run_cli(args, cwd, {**os.environ, "PYTHONPATH": str(ROOT / "src")})


def _report(folder: Path, grader: str) -> Path:
    """A real report of one passing case, graded by the suite's `grader` (YAML text)."""
    folder.mkdir()
    (folder / "echo.py").write_text("def answer(text):\n    return text\n")
    (folder / "cases.jsonl").write_text('{"id": "a", "input": "hi", "expected": "hi"}\n')
    (folder / "suite.yaml").write_text(f"name: s\ncases: cases.jsonl\nsubject: python:echo:answer\n"
                                       f"graders:\n  - {grader}\n")
    done = cli_in(folder, "run", "suite.yaml", "--no-progress", "--format", "json", "--output", "rep")
    assert done.returncode == 0, done.stderr[-2000:]
    return folder / "rep.json"


def _swap(report: Path, old, new) -> None:
    """Replace the grader spec `old` by `new` wherever the report records it."""
    text = report.read_text()
    old_json, new_json = json.dumps(old, separators=(",", ":")), json.dumps(new, separators=(",", ":"))
    assert old_json in text, (old_json, text[:2000])
    report.write_text(text.replace(old_json, new_json))


def _commands(report: Path) -> list[list[str]]:
    empty = report.parent / "reviews.jsonl"
    empty.write_text("")
    return [["verify", report.name], ["store", "verify", report.name, "--store", "h.sqlite"],
            ["export", "turns", report.name, "--output", "turns.json"],
            ["import", "reviews", report.name, empty.name, "--output", "reviewed.json"],
            ["import", "comparisons", report.name, empty.name, "--output", "compared.json"]]


def test_a_python_expression_in_a_report_is_not_run_by_reading_it(tmp_path):
    report = _report(tmp_path / "w", 'python: "len(output) > 0"')
    mark = tmp_path / "pwned"
    evil = f"re.enum.sys.modules['os'].mkdir({str(mark)!r}) is None"
    _swap(report, "len(output) > 0", evil)
    for args in _commands(report):
        done = cli_in(report.parent, *args)
        assert not mark.exists(), (args, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr
    done = cli_in(report.parent, "verify", report.name)
    assert "runs code the report names" in done.stdout + done.stderr, done.stdout
    # Asked for, the code runs (the user's choice, as rescore grades with the report's graders).
    cli_in(report.parent, "verify", report.name, "--allow-code")
    assert mark.exists()


def test_a_python_file_named_by_a_report_is_not_imported_from_the_current_folder(tmp_path):
    folder = tmp_path / "w"
    folder.mkdir()
    (folder / "check.py").write_text("def check(ctx):\n    return True\n")
    (folder / "echo.py").write_text("def answer(text):\n    return text\n")
    (folder / "cases.jsonl").write_text('{"id": "a", "input": "hi", "expected": "hi"}\n')
    (folder / "suite.yaml").write_text("name: s\ncases: cases.jsonl\nsubject: python:echo:answer\n"
                                       "graders:\n  - python: {file: check.py, function: check}\n")
    assert cli(folder, "run", "suite.yaml", "--no-progress", "--format", "json", "--output", "rep").returncode == 0
    report = folder / "rep.json"
    # The bundle someone sends: the report names "check.py" (relative) and ships its own.
    victim = tmp_path / "victim"
    victim.mkdir()
    mark = tmp_path / "imported"
    evil = f"import os\nos.mkdir({str(mark)!r})\ndef check(ctx):\n    return True\n"
    (victim / "check.py").write_text(evil)
    text = report.read_text()
    spec = json.loads(text)["plan"]["cases"][0]["graders"][0]["python"]
    new = {"function": "check", "file": "check.py", "sha256": hashlib.sha256(evil.encode()).hexdigest()}
    (victim / "rep.json").write_text(text.replace(json.dumps(spec, separators=(",", ":")),
                                                  json.dumps(new, separators=(",", ":"))))
    assert '"file":"check.py"' in (victim / "rep.json").read_text()
    for args in _commands(victim / "rep.json"):
        done = cli(victim, *args)
        assert not mark.exists(), (args, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")
def test_javascript_in_a_report_is_not_run_by_reading_it(tmp_path):
    report = _report(tmp_path / "w", 'javascript: "output.length > 0"')
    mark = tmp_path / "pwned-js"
    evil = f"process.mainModule.require('fs').mkdirSync({json.dumps(str(mark))}) === undefined"
    _swap(report, "output.length > 0", evil)
    for args in _commands(report):
        done = cli_in(report.parent, *args)
        assert not mark.exists(), (args, done.stdout, done.stderr)


def test_a_report_verified_from_its_own_run_still_recomputes_code_grades(tmp_path):
    """The run's own report, verified with --allow-code: the grade is recomputed and matches."""
    report = _report(tmp_path / "w", 'python: "len(output) > 0"')
    done = cli_in(report.parent, "verify", report.name, "--allow-code", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["checked"]["grades"] == 1


def _limited(cwd: Path, *args: str, memory: int = 2 << 30) -> subprocess.CompletedProcess:
    """`cli` under an address-space limit: a command that reads a huge file whole fails, not the host."""
    import resource

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run([sys.executable, "-m", "scoreboard", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300, check=False, preexec_fn=limit)


@pytest.mark.parametrize("head, tail", [(b"", b""), (b"{", b""), (b"", b"}"), (b"  [", b"]\n")])
def test_a_huge_file_that_is_no_report_is_refused_before_it_is_read(tmp_path, head, tail):
    """A 10 GiB sparse file (zeros), or one that starts or ends like a report: a report is one JSON
    object, so what does not start with '{' and end with '}' is refused from its ends alone (it was
    read whole first: 10 GiB, then 'too large to read in the memory available' at best)."""
    path = tmp_path / "huge.json"
    with open(path, "wb") as handle:
        handle.write(head)
        handle.truncate(10 << 30)
        handle.seek(0, os.SEEK_END)
        handle.write(tail)
    for args in (["verify", path.name], ["report", path.name, "--output", "again.md", "--format", "md"],
                 ["compare", path.name, path.name], ["rescore", path.name, "--output", "new.json"]):
        done = _limited(tmp_path, *args)
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 1 and len(lines) == 1, (args, done.stderr[-2000:])
        assert lines[0].startswith(f"scoreboard: error: {path.name}: report is not a JSON object"), lines[0]
        assert "memory" not in lines[0]


def test_a_skill_measures_no_file_outside_its_folder(tmp_path):
    """A SKILL.md someone shares names `../outside.txt`, `../../../../etc/passwd` and a link that
    leads out of its folder: footprint read them (their size and tokens in its table). They are
    listed as refused now, unread; a file inside the folder is still measured."""
    skill = tmp_path / "skill"
    skill.mkdir()
    (tmp_path / "outside.txt").write_text("secret outside the skill\n")
    (skill / "link.md").symlink_to("../outside.txt")
    (skill / "inside.md").write_text("inside\n")
    climb = "../" * 12 + "etc/hostname"
    (skill / "SKILL.md").write_text(f"# Skill\nSee [a](../outside.txt), [b]({climb}), [c](link.md), "
                                    "[d](inside.md).\n")
    done = cli_in(tmp_path, "footprint", "skill", "--json", "--approximate")
    assert done.returncode == 0, done.stderr
    (setup,) = json.loads(done.stdout)["setups"]
    items = {i["path"] for i in setup["items"]}
    assert items == {"skill/SKILL.md", "skill/inside.md"}, items
    refused = " ".join(setup["missing_references"])
    assert "../outside.txt" in refused and "link.md" in refused and "etc/hostname" in refused, refused
    assert "outside" in refused
