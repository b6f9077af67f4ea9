"""Probes of scoreboard wired into CI, as a team meets it: `scoreboard run` and the pytest plugin
in a GitHub job (its step summary), the Action's comment and outputs, and the exit codes.

- GitHub shows nothing of a step summary over 1 MiB: `scoreboard run` (and each suite pytest
  runs) appended the whole Markdown report with no bound, so a big suite, or a second suite in
  the same step, left the job with no summary at all. Only the Action's own step cut it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.cli_inprocess import run_cli

ROOT = Path(__file__).resolve().parents[1]
GITHUB_LIMIT = 1 << 20  # GitHub refuses (and shows none of) a step summary over 1 MiB


def env_with(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_") and k != "PYTEST_ADDOPTS"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    return {**env, **extra}


def qa_suite(root: Path, n: int = 60) -> Path:
    """A suite of n questions answered by a python function: every fourth answer is wrong."""
    evals = root / "evals"
    evals.mkdir(parents=True)
    (evals / "app.py").write_text("def answer(text):\n    return 'wrong' if text.endswith('!') else text\n")
    cases = [{"id": f"q{i:04d}", "input": f"question {i}" + ("!" if i % 4 == 0 else ""),
              "expected": f"question {i}"} for i in range(n)]
    (evals / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    (evals / "suite.yaml").write_text("name: qa\ncases: cases.jsonl\ngraders: [exact]\nformats: [json, md]\n"
                                      "subject: {type: python, function: 'app:answer'}\n")
    return evals / "suite.yaml"


def scoreboard(cwd: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    return run_cli(args, cwd, env)


# ---- the step summary -------------------------------------------------------------------------


def test_a_run_keeps_the_step_summary_within_githubs_limit(tmp_path):
    """What an earlier suite of the same step wrote (here 990,000 bytes) stays whole, and the run's
    report (3,000 cases: about 80 kB) is cut at a line's end with a note naming the whole report,
    never past 1 MiB."""
    qa_suite(tmp_path, 3000)
    summary = tmp_path / "summary.md"
    earlier = "an earlier suite's line\n" * 41_250  # 990,000 bytes
    summary.write_text(earlier)
    done = scoreboard(tmp_path, env_with(GITHUB_STEP_SUMMARY=str(summary)), "run", "evals/suite.yaml",
                      "--no-progress", "--fail-under", "0.9")
    assert done.returncode == 3, done.stderr  # 75% < 90%: the cut changes no verdict
    text = summary.read_text(encoding="utf-8")
    assert len(text.encode("utf-8")) <= GITHUB_LIMIT
    assert text.startswith(earlier)
    mine = text[len(earlier):]
    assert mine.startswith("# scoreboard report: qa\n")
    md = next(line.split(": ", 1)[1] for line in done.stdout.splitlines() if line.strip().startswith("md: "))
    note = mine.index("> ⚠️ The report is cut short here: GitHub shows at most 1 MiB of a step summary.")
    assert mine[note - 2:note] == "\n\n"  # cut at a line's end
    assert md in mine[note:]  # names the whole report
    assert Path(tmp_path / md).read_text().count("\n| q") == 3000  # which is whole


def test_a_full_step_summary_gets_a_warning_not_a_report_past_the_limit(tmp_path):
    qa_suite(tmp_path, 8)
    summary = tmp_path / "summary.md"
    summary.write_text("x" * 999_990 + "\n")
    done = scoreboard(tmp_path, env_with(GITHUB_STEP_SUMMARY=str(summary)), "run", "evals/suite.yaml",
                      "--no-progress")
    assert done.returncode == 0, done.stderr
    assert summary.read_text() == "x" * 999_990 + "\n"
    assert "warning: GITHUB_STEP_SUMMARY already holds 999991 bytes: the report is not added" in done.stderr


def test_a_run_that_fits_appends_its_whole_report(tmp_path):
    qa_suite(tmp_path)
    summary = tmp_path / "summary.md"
    done = scoreboard(tmp_path, env_with(GITHUB_STEP_SUMMARY=str(summary)), "run", "evals/suite.yaml",
                      "--no-progress")
    assert done.returncode == 0, done.stderr
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("# scoreboard report: qa\n") and "cut short" not in text
    assert text.count("\n| q") == 60


# ---- the Action's comparison with a baseline ----------------------------------------------------

TOKEN = "ghs_" + "probe4" * 6


def action_step(work: Path, api: str, *args: str) -> tuple[subprocess.CompletedProcess, dict, str]:
    """The Action's step script on a pull request's event, against a loopback fake of GitHub."""
    from tests.test_github_action import parse_outputs

    gh = work.parent / "github"
    gh.mkdir(exist_ok=True)
    (gh / "event.json").write_text(json.dumps({"pull_request": {"number": 7}}))
    for name in ("summary.md", "output.txt"):
        (gh / name).write_text("")
    env = env_with(GITHUB_STEP_SUMMARY=str(gh / "summary.md"), GITHUB_OUTPUT=str(gh / "output.txt"),
                   GITHUB_EVENT_PATH=str(gh / "event.json"), GITHUB_API_URL=api, GITHUB_REPOSITORY="octo/app",
                   GITHUB_TOKEN=TOKEN)
    done = subprocess.run([sys.executable, "-m", "scoreboard.cli.github_action", "evals/suite.yaml", *args], cwd=work,
                          env=env, capture_output=True, text=True, timeout=180, check=False)
    return done, parse_outputs((gh / "output.txt").read_text()), (gh / "summary.md").read_text(encoding="utf-8")


def test_a_baseline_of_another_suite_is_said_to_compare_nothing(tmp_path):
    """A baseline that shares no case (another suite's report, downloaded from the wrong job) was
    shown as a comparison: a row of n/a with a sign test p of 1. It compares nothing: say so, and
    name both suites."""
    from tests.servers.fake_github import FakeGitHub

    other = tmp_path / "other"
    evals = qa_suite(other, 5).parent
    (evals / "cases.jsonl").write_text("".join(json.dumps({"id": f"z{i}", "input": f"z {i}", "expected": f"z {i}"})
                                               + "\n" for i in range(5)))
    (evals / "suite.yaml").write_text((evals / "suite.yaml").read_text().replace("name: qa", "name: billing"))
    work = tmp_path / "repo"
    qa_suite(work, 8)
    made = scoreboard(other, env_with(), "run", "evals/suite.yaml", "--no-progress", "--output",
                      str(work / "main.json"), "--format", "json")
    assert made.returncode == 0, made.stderr
    with FakeGitHub(token=TOKEN) as gh:
        done, out, summary = action_step(work, gh.url, "--baseline", "main.json")
        (comment,) = [c["body"] for c in gh.comments.values()]
    assert done.returncode == 0 and out["verdict"] == "passed" and out["comment"] == "created", done.stderr
    for text in (comment, summary):
        compared = text[text.index("#### Compared with the baseline"):]
        assert "Nothing was compared: no case of this run is in the baseline (same id and input hash)" in compared
        assert "the baseline is a report of suite billing; this run is of suite qa" in compared
        assert "sign test p" not in compared and "n/a" not in compared
    assert "warning: nothing was compared with the baseline main.json" in done.stderr


def test_a_pair_with_no_case_judged_on_both_sides_has_no_p_value():
    """Shared cases that errored on one side leave the pair nothing to test: its p is unknown
    (n/a), not the 1 of a sign test on no pairs."""
    from scoreboard.cli.github_comment import comparison_markdown

    pair = {"a": "m", "b": "m", "a_pass_rate": 0.5, "b_pass_rate": None, "cases": 0, "a_wins": 0, "b_wins": 0,
            "ties": 0, "sign_test_p": 1.0, "flags": ["no case was judged in both variants"]}
    result = {"a": {"run_id": "base", "suite": "qa"}, "b": {"run_id": "now", "suite": "qa"}, "shared_cases": 4,
              "inputs_differ": [], "only_in_a": [], "only_in_b": [], "comparisons": [pair]}
    text = comparison_markdown(result)
    assert "| m | 50.0% | n/a | n/a | 0 | 0 | 0 | n/a |" in text, text
    assert "suite" not in text.split("\n", 3)[2]  # one suite: nothing said of suites


def test_a_dry_run_in_the_action_is_not_called_passed(tmp_path):
    """`args: --dry-run` (a suite checked before spending) ran the mock and skipped every gate,
    yet the step's verdict was `passed` and the comment said "✅ passed" over the mock's figures."""
    from tests.servers.fake_github import FakeGitHub

    work = tmp_path / "repo"
    qa_suite(work, 8)
    made = scoreboard(work, env_with(), "run", "evals/suite.yaml", "--no-progress", "--output", "main.json",
                      "--format", "json")
    assert made.returncode == 0, made.stderr
    with FakeGitHub(token=TOKEN) as gh:
        done, out, summary = action_step(work, gh.url, "--baseline", "main.json", "--max-regression", "0.05",
                                         "--args", "--dry-run")
        (comment,) = [c["body"] for c in gh.comments.values()]
    assert done.returncode == 0, done.stderr  # as `scoreboard run --dry-run` exits: no gate was evaluated
    assert out["verdict"] == "dry-run" and out["exit-code"] == "0"
    heading = comment.splitlines()[1]
    assert "DRY RUN (mock subject)" in heading and "passed" not in heading, heading
    assert "no model was called and no gate was evaluated" in comment


# ---- the pytest plugin ------------------------------------------------------------------------


def test_a_mistyped_setting_of_a_pytest_suite_names_the_one_meant():
    import pytest

    import scoreboard.testing

    with pytest.raises(TypeError, match=r"unknown setting\(s\) fail_undr \(did you mean 'fail_under'\?\)"):
        scoreboard.testing.suite("evals/suite.yaml", fail_undr=0.9)
    with pytest.raises(TypeError, match=r"fail_under_metric \(did you mean 'fail_under_metrics'\?\)"):
        scoreboard.testing.suite("evals/suite.yaml", fail_under_metric={"pass@3": 0.8})


def test_the_comment_says_how_many_attempts_its_pass_rate_judged():
    """30 of 40 attempts not assessed (a cost bound with no price): "100.0% ... 10 / 40" read as a
    contradiction, or as 30 failures. The rate is over the judged attempts: the column says so."""
    from scoreboard.cli.github_comment import comment_body

    variant = {"attempts": 40, "passed": 10, "failed": 0, "errors": 0, "unassessed": 30, "not_run": 0,
               "pass_rate": 1.0, "pass_rate_ci": {"low": 0.72, "high": 1.0, "method": "wilson-effective-n"}}
    head = {"run": {"suite": "qa"}, "summary": {"variants": {"m": variant}}, "gates": []}
    body = comment_body(head, 0, None, "")
    assert "| m | 100.0% | 72.0% – 100.0% (wilson-effective-n) | 10 / 10 judged (30 of 40 attempts not judged) |" \
        in body, body
    variant.update(passed=30, failed=10, unassessed=0)
    assert "| 30 / 40 |" in comment_body(head, 0, None, "")


# ---- the comment's API calls --------------------------------------------------------------------


def test_an_api_that_drips_its_answer_cannot_hold_the_step(monkeypatch):
    """Each read had a 30 s timeout, but an answer sent a byte at a time (a stalled proxy, a
    hostile GITHUB_API_URL) never tripped it: the step waited for as long as it dripped. A call
    now has a deadline for the whole answer, and missing it is a comment that failed."""
    import socket
    import threading

    import pytest

    from scoreboard.cli import github_comment

    stop = threading.Event()
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()

    def drip():
        conn, _ = server.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n[")
            while not stop.wait(0.05):
                try:
                    conn.sendall(b" ")
                except OSError:
                    return

    thread = threading.Thread(target=drip, daemon=True)
    thread.start()
    monkeypatch.setattr(github_comment, "CALL_DEADLINE_S", 1.0)
    api = github_comment.GitHub(f"http://127.0.0.1:{server.getsockname()[1]}", "octo/app", TOKEN)
    try:
        with pytest.raises(github_comment.CommentError, match=r"GET /issues/7/comments.*no whole answer within 1 s"):
            api.find_comment(7, "<!-- scoreboard-comment:qa -->")
    finally:
        stop.set()
        server.close()
        thread.join(10)


def test_a_case_test_failure_prints_no_terminal_escape_nor_workflow_command(tmp_path):
    """A model's output (and the grader's reason quoting it) went into pytest's failure message
    as it was: in a GitHub job its `::error ...::` line forged an annotation, `::add-mask::` hid
    a value from the log, and ESC sequences set the terminal's title or cleared it. `scoreboard
    run` prints such text spelt out (record.terminal.printable); so does the plugin now."""
    evals = qa_suite(tmp_path, 2).parent
    (evals / "app.py").write_text(
        "def answer(text):\n"
        "    return 'ok\\n::error file=app.py,line=1::forged\\n  ::add-mask::question\\n"
        "\\x1b]0;title\\x07\\x1b[2J ##[group]x'\n")
    (tmp_path / "test_evals.py").write_text("import scoreboard.testing\nqa = scoreboard.testing.suite('evals/suite.yaml')\n")
    from tests.test_probe_pytest_action import plugin_args

    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider", "-rs",
                           *plugin_args(), "test_evals.py"], cwd=tmp_path, env=env_with(),
                          capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 1 and "2 failed" in done.stdout, done.stdout + done.stderr
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout
    assert not [line for line in done.stdout.splitlines() if line.lstrip().startswith("::") or "##[" in line]
    assert "\\x3a:error file=app.py,line=1::forged" in done.stdout  # shown, spelt out
    assert "\\x1b]0;title\\x07\\x1b[2J" in done.stdout


def test_two_suites_whose_names_differ_only_in_other_scripts_or_signs_keep_their_own_comments():
    """The marker kept [A-Za-z0-9._-] and wrote every other character `_`: suites named 評価 and
    試験 (or `qa v1` and `qa_v1`) shared one marker, so each run of a matrix overwrote the other
    suite's comment. A name that loses characters now carries a hash of itself; a plain one keeps
    the marker it had, so earlier comments are still found and updated."""
    from scoreboard.cli.github_comment import marker

    assert marker("qa") == "<!-- scoreboard-comment:qa -->"
    assert marker("評価") != marker("試験")
    assert marker("qa v1") != marker("qa_v1") == "<!-- scoreboard-comment:qa_v1 -->"
    for name in ("評価", "qa v1", "a-->b", "x--y"):
        inner = marker(name)[len("<!--"):-len("-->")]
        assert ">" not in inner and "<" not in inner  # the comment cannot end early
