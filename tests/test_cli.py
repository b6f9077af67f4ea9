"""The CLI end to end: exit codes 0/1/2/3, report files (exclusive, 0600, re-renderable), the
attempt log, deterministic order, skills, suite files and flag overrides. Commands run through
the CLI's main in-process (tests/cli_inprocess.py); through real processes where the test is about
them (two runs started in the same second, a timeout's kill of a process group)."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli_inprocess import run_cli

FIXTURES = Path(__file__).parent / "fixtures" / "core"


def start(args: list[str], cwd: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "scoreboard", *args], cwd=cwd, env=dict(os.environ),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def many(arg_lists: list[list[str]], cwd: Path) -> list[subprocess.CompletedProcess]:
    """Run several independent commands (each writes its own output dir), in-process, in turn."""
    return [scoreboard(args, cwd) for args in arg_lists]


def scoreboard(args: list[str], cwd: Path, timeout: float | None = None) -> subprocess.CompletedProcess:
    """The command in-process; with a timeout, in a process of its own (killed at the timeout)."""
    if timeout is None:
        return run_cli(args, cwd, dict(os.environ))
    return subprocess.run([sys.executable, "-m", "scoreboard", *args], cwd=cwd, env=dict(os.environ),
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """tmp_path holding the core fixtures: core_subjects.py, skills/, cases.jsonl, suites."""
    for item in FIXTURES.iterdir():
        if item.name == "__pycache__":
            continue
        if item.is_dir():
            shutil.copytree(item, tmp_path / item.name)
        else:
            shutil.copy(item, tmp_path / item.name)
    return tmp_path


def reports(out: Path, ext: str = ".json") -> list[Path]:
    return sorted(p for p in out.rglob(f"*{ext}") if p.parent.parent == out and p.is_file())


def only_report(out: Path) -> dict:
    (path,) = reports(out)
    return json.loads(path.read_text(encoding="utf-8"))


def one_line_error(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def write_cases(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


# ---- exit 0 ------------------------------------------------------------------------------

def test_exit_0_all_pass_and_files(work):
    res = scoreboard(["run", "--cases", "cases.jsonl", "--subject", "python:core_subjects:echo",
                      "--runs", "2", "--format", "json,md,html,junit", "--output-dir", "out"], work)
    assert res.returncode == 0, res.stderr
    assert "pass rate 100.0%" in res.stdout
    (json_path,) = reports(work / "out")
    assert str(json_path.relative_to(work)) in res.stdout
    md_path = json_path.with_suffix(".md")
    assert md_path.is_file() and str(md_path.relative_to(work)) in res.stdout
    report = json.loads(json_path.read_text())
    assert report["run"]["status"] == "completed"
    assert len(report["attempts"]) == 3 * 2
    assert {a["status"] for a in report["attempts"]} == {"passed"}
    # owner-only permissions on every file the run wrote
    run_dir = json_path.with_suffix("")
    written = [json_path, md_path, json_path.with_suffix(".html"), json_path.with_suffix(".junit.xml"),
               run_dir / "attempts.jsonl", run_dir / "run.json"]
    for path in written:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    assert not any(p.name.startswith(".tmp-") for p in json_path.parent.rglob("*"))
    # the attempt log holds one complete line per attempt
    lines = (run_dir / "attempts.jsonl").read_text().splitlines()
    assert len(lines) == 6
    logged = sorted((r["case_id"], r["variant"], r["run"]) for r in map(json.loads, lines))
    assert logged == sorted((a["case_id"], a["variant"], a["run"]) for a in report["attempts"])


def test_version_and_help(work):
    res = scoreboard(["--version"], work)
    assert res.returncode == 0 and res.stdout.startswith("scoreboard ")
    from scoreboard import __version__

    assert __version__ in res.stdout
    for args in [[cmd, "--help"] for cmd in ("run", "validate", "report")] + [["--help"]]:
        proc = scoreboard(args, work)
        assert proc.returncode == 0, (proc.args, proc.stderr)
        assert "usage:" in proc.stdout


# ---- exit 1 ------------------------------------------------------------------------------

@pytest.mark.parametrize("args,words", [
    (["run", "--cases", "cases.jsonl", "--subject", "mock", "--runs", "abc"], ["--runs", "abc"]),
    (["run", "--cases", "cases.jsonl", "--subject", "mock", "--no-such-flag"], ["--no-such-flag"]),
    (["run", "missing-suite.yaml"], ["missing-suite.yaml", "not found"]),
    (["run", "--cases", "cases.jsonl", "--subject", "nosuch:thing"], ["nosuch"]),
    (["run", "--cases", "cases.jsonl", "--subject", "python:core_subjects:no_such_fn"], ["no_such_fn"]),
    (["run", "--cases", "cases.jsonl", "--subject", "python:no_such_module:fn"], ["no_such_module"]),
    (["run", "--cases", "cases.jsonl", "--subject", "mock", "--case", "nobody"], ["nobody"]),
    (["run", "--cases", "cases.jsonl", "--subject", "mock", "--category", "nothing"], ["no case"]),
    (["run", "--cases", "cases.jsonl", "--subject", "mock", "--fail-under", "x=0.5"], ["'x'"]),
    (["run", "--cases", "cases.jsonl", "--subject", "mock", "--fail-under", "1.5"], ["fail"]),
    (["run", "--cases", "cases.jsonl", "--skill", "skills/absent.md", "--subject", "mock"], ["absent.md"]),
    (["run", "--cases", "cases.jsonl"], ["subject"]),
    (["report", "nope.json"], ["nope.json"]),
    (["validate", "nope.jsonl"], ["nope.jsonl"]),
])
def test_exit_1_nothing_runs(work, args, words):
    out_args = ["--output-dir", "out"] if args[0] == "run" else []
    res = scoreboard(args + out_args, work)
    assert res.returncode == 1, (res.stdout, res.stderr)
    line = one_line_error(res.stderr)
    assert "error" in line
    for word in words:
        assert word in line, line
    assert not (work / "out").exists()
    assert not (work / "eval-results").exists()


def test_no_command_is_usage_error(work):
    res = scoreboard([], work)
    assert res.returncode == 1


# ---- exit 2 ------------------------------------------------------------------------------

def test_exit_2_python_subject_raises(work):
    res = scoreboard(["run", "--cases", "cases.jsonl", "--subject", "python:core_subjects:raises",
                      "--format", "json,md", "--output-dir", "out"], work)
    assert res.returncode == 2, res.stderr
    report = only_report(work / "out")
    assert report["run"]["status"] == "completed"
    assert {a["status"] for a in report["attempts"]} == {"error"}
    assert "RuntimeError: boom on alpha" in report["attempts"][0]["error"]
    assert "error" in res.stdout  # the summary line counts the errors
    # a report full of errors renders again from its JSON alone, byte for byte
    (json_path,) = reports(work / "out")
    again = scoreboard(["report", str(json_path)], work)
    assert again.returncode == 0 and again.stdout.encode() == json_path.with_suffix(".md").read_bytes()


def test_missing_command_fails_before_running(work):
    res = scoreboard(["run", "--cases", "cases.jsonl", "--subject", "command:./no-such-binary {input}",
                      "--format", "json", "--output-dir", "out"], work)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "no-such-binary" in one_line_error(res.stderr)
    assert not (work / "out").exists()


def _suite(path: Path, **settings) -> Path:
    path.write_text(json.dumps(settings), encoding="utf-8")
    return path


def test_exit_2_command_nonzero(work):
    code = "import sys; t = sys.stdin.read(); sys.stdout.write(t); sys.exit(3 if t == 'beta' else 0)"
    _suite(work / "cmd.json", cases="cases.jsonl", formats=["json"],
           subject={"type": "command", "argv": [sys.executable, "-c", code]})
    res = scoreboard(["run", "cmd.json", "--output-dir", "out"], work)
    assert res.returncode == 2, res.stderr
    by_case = {a["case_id"]: a for a in only_report(work / "out")["attempts"]}
    assert by_case["beta"]["status"] == "error"
    assert "status 3" in by_case["beta"]["error"]
    assert by_case["alpha"]["status"] == "passed"
    assert by_case["one"]["output"]["text"] == "one"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            state = handle.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")


def test_exit_2_timeout_kills_process_group(work):
    script = work / "sleeper.sh"
    script.write_text('#!/bin/sh\nsleep 30 &\necho $! > "$1.pid"\nwait\n')
    script.chmod(0o755)
    write_cases(work / "slow.jsonl", [{"id": "s1", "input": "s1", "expected": "x"}])
    start_t = time.monotonic()
    res = scoreboard(["run", "--cases", "slow.jsonl", "--subject", f"command:{script} {{input}}",
                      "--timeout", "400", "--format", "json", "--output-dir", "out"], work, timeout=25)
    assert time.monotonic() - start_t < 20
    assert res.returncode == 2, res.stderr
    (attempt,) = only_report(work / "out")["attempts"]
    assert attempt["status"] == "error"
    assert "timeout" in attempt["error"]
    pid = int((work / "s1.pid").read_text())
    deadline = time.monotonic() + 5
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pid), f"the grandchild sleep {pid} survived the timeout"


# ---- exit 3 ------------------------------------------------------------------------------

def test_exit_3_fail_under(work):
    base = ["run", "--cases", "cases.jsonl", "--subject", "python:core_subjects:echo",
            "--vs-subject", "python:core_subjects:half_wrong", "--format", "json"]
    # half_wrong passes only "alpha": 1/3
    r1, r2, r3 = many([base + ["--fail-under", "0.9", "--output-dir", "o1"],
                       base + ["--fail-under", "half_wrong=0.3", "--output-dir", "o2"],
                       base + ["--fail-under", "half_wrong=0.5", "--output-dir", "o3"]], work)
    assert r1.returncode == 3, r1.stderr
    gates = only_report(work / "o1")["gates"]
    assert {g["variant"]: g["passed"] for g in gates} == {"echo": True, "half_wrong": False}
    assert "gate FAILED" in r1.stdout

    assert r2.returncode == 0, r2.stdout + r2.stderr

    assert r3.returncode == 3
    gates = only_report(work / "o3")["gates"]
    assert [(g["variant"], g["passed"]) for g in gates] == [("half_wrong", False)]


def test_errors_beat_gates(work):
    """Execution errors exit 2 even when a gate also fails."""
    res = scoreboard(["run", "--cases", "cases.jsonl", "--subject", "python:core_subjects:raises",
                      "--fail-under", "0.9", "--format", "json", "--output-dir", "out"], work)
    assert res.returncode == 2


# ---- output ------------------------------------------------------------------------------

def test_json_on_stdout_and_report_rerender(work):
    res = scoreboard(["run", "suite.json", "--json", "--format", "json,md", "--output-dir", "out"], work)
    assert res.returncode == 0, res.stderr  # no gate: half_wrong failing is not an error
    printed = json.loads(res.stdout)
    (json_path,) = reports(work / "out")
    saved = json.loads(json_path.read_text())
    assert printed == saved
    assert "pass rate" in res.stderr
    md = json_path.with_suffix(".md").read_bytes()
    again = scoreboard(["report", str(json_path), "--format", "md"], work)
    assert again.returncode == 0, again.stderr
    assert again.stdout.encode() == md
    # and into a file, created exclusively
    target = work / "again.md"
    res = scoreboard(["report", str(json_path), "--format", "md", "--output", str(target)], work)
    assert res.returncode == 0 and target.read_bytes() == md
    res = scoreboard(["report", str(json_path), "--format", "md", "--output", str(target)], work)
    assert res.returncode == 1 and "again.md" in one_line_error(res.stderr)


def test_synthetic_only_when_every_case_is(work):
    write_cases(work / "all.jsonl", [{"id": "a", "input": "a", "expected": "a", "synthetic": True},
                                     {"id": "b", "input": "b", "expected": "b", "synthetic": True}])
    write_cases(work / "some.jsonl", [{"id": "a", "input": "a", "expected": "a", "synthetic": True},
                                      {"id": "b", "input": "b", "expected": "b"}])
    for n in ("all", "some"):
        proc = scoreboard(["run", "--cases", f"{n}.jsonl", "--subject", "mock", "--format", "json,md",
                           "--output-dir", f"out-{n}"], work)
        assert proc.returncode == 0, proc.stderr
    every = only_report(work / "out-all")
    some = only_report(work / "out-some")
    assert every["run"]["synthetic"] is True
    assert some["run"]["synthetic"] is False
    (md_all,) = reports(work / "out-all", ".md")
    (md_some,) = reports(work / "out-some", ".md")
    assert "synthetic" in md_all.read_text()
    assert "synthetic" not in md_some.read_text()


def test_two_runs_same_second_never_share_files(work):
    args = ["run", "--cases", "cases.jsonl", "--subject", "mock", "--format", "json,md",
            "--output-dir", "out", "--name", "same"]
    procs = [start(args, work) for _ in range(2)]
    for proc in procs:
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
    first = reports(work / "out")
    assert len(first) == 2
    contents = {p: p.read_bytes() for p in first}
    ids = {json.loads(c)["run"]["id"] for c in contents.values()}
    assert len(ids) == 2 and ids == {p.stem for p in first}
    # a third run, back to back: a new file, the earlier ones untouched
    res = scoreboard(args, work)
    assert res.returncode == 0
    now = reports(work / "out")
    assert len(now) == 3
    assert all(p.read_bytes() == c for p, c in contents.items())
    assert len(reports(work / "out", ".md")) == 3
    for path in now:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_report_order_deterministic_under_random_completion(work):
    rows = [{"id": f"c{i:02d}", "input": f"in{i}", "expected": f"in{i}"} for i in range(24)]
    write_cases(work / "many.jsonl", rows)
    res = scoreboard(["run", "--cases", "many.jsonl", "--subject", "python:core_subjects:jitter",
                      "--vs-subject", "python:core_subjects:async_echo", "--runs", "2", "--concurrency", "8",
                      "--format", "json", "--output-dir", "out"], work)
    assert res.returncode == 0, res.stderr
    report = only_report(work / "out")
    keys = [(a["case_id"], a["variant"], a["run"]) for a in report["attempts"]]
    expected = [(r["id"], v, n) for r in rows for v in ("jitter", "async_echo") for n in range(2)]
    assert keys == expected
    (json_path,) = reports(work / "out")
    log = [json.loads(line) for line in (json_path.with_suffix("") / "attempts.jsonl").read_text().splitlines()]
    assert sorted((a["case_id"], a["variant"], a["run"]) for a in log) == sorted(expected)


def test_skill_dir_vs_file(work):
    res = scoreboard(["run", "--cases", "cases.jsonl", "--skill", "skills/careful", "--vs", "skills/terse.md",
                      "--subject", "python:core_subjects:with_skill", "--grader", '{"contains": "skill"}',
                      "--format", "json", "--output-dir", "out"], work)
    assert res.returncode == 0, res.stderr
    report = only_report(work / "out")
    names = [v["name"] for v in report["plan"]["variants"]]
    assert names[0] == "careful" and names[1].startswith("terse")
    texts = {a["variant"]: a["output"]["text"] for a in report["attempts"]}
    assert texts[names[0]] == (work / "skills" / "careful" / "SKILL.md").read_text()
    assert texts[names[1]] == (work / "skills" / "terse.md").read_text()
    assert report["plan"]["variants"][0]["skill_hash"] != report["plan"]["variants"][1]["skill_hash"]


def test_suite_file_settings_and_flag_overrides(work):
    r1, r2, r3 = many([
        ["run", "suite.yaml", "--output-dir", "o1"],
        ["run", "suite.yaml", "--runs", "1", "--format", "json", "--name", "renamed", "--output-dir", "o2"],
        # --subject replaces the suite's variants
        ["run", "suite.yaml", "--runs", "1", "--subject", "python:core_subjects:upper", "--format", "json",
         "--output-dir", "o3"]], work)
    assert r1.returncode == 0, r1.stderr
    report = only_report(work / "o1")
    assert report["run"]["suite"] == "core-yaml"
    assert report["plan"]["runs"] == 3
    assert [v["name"] for v in report["plan"]["variants"]] == ["plain", "shouty"]
    assert len(report["attempts"]) == 3 * 2 * 3
    assert len(reports(work / "o1", ".md")) == 1  # formats from the suite

    assert r2.returncode == 0, r2.stderr
    report = only_report(work / "o2")
    assert report["plan"]["runs"] == 1 and report["run"]["suite"] == "renamed"
    assert len(report["attempts"]) == 3 * 2
    assert reports(work / "o2", ".md") == []

    assert r3.returncode == 0
    assert [v["name"] for v in only_report(work / "o3")["plan"]["variants"]] == ["upper"]


def test_filters(work):
    r1, r2 = many([
        ["run", "--cases", "cases.jsonl", "--subject", "mock", "--category", "greek", "--format", "json",
         "--output-dir", "o1"],
        ["run", "--cases", "cases.jsonl", "--subject", "mock", "--case", "one", "--case", "alpha",
         "--format", "json", "--output-dir", "o2"]], work)
    assert r1.returncode == 0, r1.stderr
    assert [c["id"] for c in only_report(work / "o1")["plan"]["cases"]] == ["alpha", "beta"]
    assert r2.returncode == 0, r2.stderr
    assert [c["id"] for c in only_report(work / "o2")["plan"]["cases"]] == ["alpha", "one"]


@pytest.mark.parametrize("suite,name,runs,variants", [
    ("suite.toml", "core-toml", 2, ["echo"]),
    ("suite.json", "core-json", 1, ["echo", "half"]),
])
def test_toml_and_json_suites(work, suite, name, runs, variants):
    res = scoreboard(["run", suite, "--output-dir", "out"], work)
    assert res.returncode == 0, res.stderr
    report = only_report(work / "out")
    assert report["run"]["suite"] == name
    assert report["plan"]["runs"] == runs
    assert [v["name"] for v in report["plan"]["variants"]] == variants


@pytest.mark.parametrize("suite", [
    "suite.toml",
    "suite.yaml",
    "suite.json",
])
def test_validate_suite_files(work, suite):
    res = scoreboard(["validate", suite], work)
    assert res.returncode == 0, res.stderr
    assert "OK: suite" in res.stdout


def test_validate_runs_nothing(work):
    res = scoreboard(["validate", "cases.jsonl"], work)
    assert res.returncode == 0, res.stderr
    assert "3 cases" in res.stdout
    assert not (work / "eval-results").exists()


def test_messages_reach_python_subject(work):
    msgs = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    write_cases(work / "chat.jsonl", [{"id": "chat", "input": msgs, "expected": "system,user"}])
    res = scoreboard(["run", "--cases", "chat.jsonl", "--subject", "python:core_subjects:messages_roles",
                      "--format", "json", "--output-dir", "out"], work)
    assert res.returncode == 0, res.stderr
