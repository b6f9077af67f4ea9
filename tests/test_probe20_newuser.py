"""A new user's first hour, round 7 (probe 20): a support-bot suite run, read in every output,
interrupted and resumed, compared and looked up in history. Each test is a moment of confusion
the first hour met, run as the real command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.cli_inprocess import run_cli

ROOT = Path(__file__).resolve().parents[1]
KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL")


def scoreboard(*args: str, cwd: Path, process: bool = False, **extra: str) -> subprocess.CompletedProcess:
    """`scoreboard ARGS` in this process (tests/cli_inprocess.py), what the command says and writes
    being the point; as a process where `process` (a subject that signals its own process)."""
    env = {k: v for k, v in os.environ.items() if k not in KEYS and k != "SCOREBOARD_STORE"}
    env.update({"SCOREBOARD_STORE": "none", "PYTHONPATH": str(ROOT / "src"), **extra})
    if not process:
        return run_cli(args, cwd, env)
    return subprocess.run([sys.executable, "-m", "scoreboard", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def jsonl(rows: list[dict]) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


def test_the_markdown_measurements_keep_every_digit_of_a_token_count_and_write_dollars_as_dollars(tmp_path):
    """A run of a million tokens read `1.23457e+06` in the Markdown's Measurements table (Python's
    `:g`: six significant digits, the rest dropped) while the HTML read 1,234,567; a cost of
    $0.00009 read `9e-05` beside the HTML's 0.0001 and the Requests line's $0.0001."""
    (tmp_path / "cases.jsonl").write_text(jsonl([{"id": "c1", "input": "x", "expected": "ok"},
                                                 {"id": "c2", "input": "y", "expected": "ok"}]), encoding="utf-8")
    (tmp_path / "out.jsonl").write_text(jsonl([
        {"case_id": "c1", "output": "ok", "input_tokens": 1234567, "output_tokens": 2000000, "cost_usd": 0.00009},
        {"case_id": "c2", "output": "ok", "input_tokens": 1, "output_tokens": 1, "cost_usd": 1234.5}]),
        encoding="utf-8")
    (tmp_path / "suite.yaml").write_text("name: big\ncases: cases.jsonl\nvariants:\n  a: {subject: 'recorded:out.jsonl'}\n",
                                         encoding="utf-8")
    done = scoreboard("run", "suite.yaml", "--format", "json,md", "--output", "r", "--no-progress", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    md = (tmp_path / "r.md").read_text(encoding="utf-8")
    table = md.split("## Measurements", 1)[1].split("\n## ", 1)[0]
    row = next(line for line in table.splitlines() if line.startswith("| a | "))
    assert "| 1,234,568 | 2,000,001 | 1,234.5001 |" in row, row
    assert "e+0" not in table and "e-0" not in table, table


def test_a_run_stopped_by_ctrl_c_says_in_the_terminal_the_command_that_finishes_it(tmp_path):
    """After Ctrl+C the terminal said `stopped: interrupted by SIGINT` and nothing more: the
    Markdown says `--resume` finishes the run, the terminal (what the user is looking at) did not
    say it nor which folder to give. It now prints the command, and that command runs as printed."""
    rows = [{"id": f"c{i}", "input": f"x{i}", "expected": "ok"} for i in range(12)]
    (tmp_path / "cases.jsonl").write_text(jsonl(rows), encoding="utf-8")
    (tmp_path / "bot.py").write_text(
        "import os, subprocess\n\n\ndef answer(input):\n"
        "    if input == 'x0' and not os.path.exists('resumed'):\n"
        "        subprocess.run(['kill', '-s', 'INT', str(os.getpid())])  # the user's Ctrl+C, mid-run (from outside)\n"
        "    return 'ok'\n", encoding="utf-8")
    first = scoreboard("run", "--cases", "cases.jsonl", "--subject", "python:bot:answer", "--concurrency", "1",
                       "--no-progress", "--format", "json,md", "--output", "out", cwd=tmp_path, process=True)
    assert first.returncode == 2, first.stdout + first.stderr
    stopped = next(line for line in first.stdout.splitlines() if line.strip().startswith("stopped:"))
    assert stopped.strip() == "stopped: interrupted by SIGINT; finish it with scoreboard run --resume out", stopped
    (tmp_path / "resumed").write_text("", encoding="utf-8")
    command = stopped.split("finish it with ", 1)[1].split()
    assert command[:3] == ["scoreboard", "run", "--resume"]
    again = scoreboard(*command[1:], "--no-progress", cwd=tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr
    report = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    assert report["run"]["status"] == "completed"
    assert report["summary"]["variants"]["answer"]["passed"] == 12
    assert "stopped:" not in again.stdout


def _chromium() -> str | None:
    import shutil

    return next((p for p in ("/usr/bin/chromium", shutil.which("chromium"), shutil.which("chromium-browser")) if p),
                None)


def test_the_html_measurements_never_show_a_known_cost_of_a_few_millionths_as_0(tmp_path):
    """Twenty short answers of a cheap model cost $0.000004: the Markdown and the Requests line say
    so, the HTML's Measurements table read `0` (4 places, the rest rounded away), which reads as
    free, or as an unknown cost taken for zero."""
    import pytest

    chromium = _chromium()
    if chromium is None:
        pytest.skip("needs Debian's chromium (scripts/test.sh installs it)")
    (tmp_path / "cases.jsonl").write_text(jsonl([{"id": "c1", "input": "x", "expected": "ok"},
                                                 {"id": "c2", "input": "y", "expected": "ok"}]), encoding="utf-8")
    (tmp_path / "out.jsonl").write_text(jsonl([
        {"case_id": "c1", "output": "ok", "input_tokens": 5, "output_tokens": 5, "cost_usd": 0.000003},
        {"case_id": "c2", "output": "ok", "input_tokens": 1, "output_tokens": 1, "cost_usd": 0.000001}]),
        encoding="utf-8")
    (tmp_path / "suite.yaml").write_text("name: cheap\ncases: cases.jsonl\nvariants:\n  a: {subject: 'recorded:out.jsonl'}\n",
                                         encoding="utf-8")
    done = scoreboard("run", "suite.yaml", "--format", "json,md,html", "--output", "r", "--no-progress", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    dom = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={tmp_path / 'p'}",
                          "--dump-dom", (tmp_path / "r.html").as_uri()], capture_output=True, text=True, timeout=120)
    cell = dom.stdout.split('data-testid="measure-a-cost_usd">', 1)[1].split("</td>", 1)[0]
    assert "<span>0.000004</span>" in cell, cell
    md = (tmp_path / "r.md").read_text(encoding="utf-8")
    assert "| 4e-06 |" in md.split("## Measurements", 1)[1].split("\n## ", 1)[0]


def test_a_baseline_gate_says_why_its_sign_test_has_no_p_and_over_how_many_cases_it_has_one(tmp_path):
    """`gate passed: ... (change +0.0 points, allowed drop 3.0 points; sign test p=n/a)`: a p-value
    of n/a with no reason, and where there was one, no count of the cases it was taken over."""
    rows = [{"id": f"c{i}", "input": f"x{i}", "expected": "ok"} for i in range(4)]
    (tmp_path / "cases.jsonl").write_text(jsonl(rows), encoding="utf-8")
    (tmp_path / "bot.py").write_text("import os\n\n\ndef answer(input):\n"
                                     "    return 'no' if input == 'x0' and os.path.exists('flip') else 'ok'\n",
                                     encoding="utf-8")
    run = ("run", "--cases", "cases.jsonl", "--subject", "python:bot:answer", "--no-progress", "--format", "json")
    assert scoreboard(*run, "--output", "main.json", cwd=tmp_path).returncode == 0
    same = scoreboard(*run, "--output", "same.json", "--baseline", "main.json", "--max-regression", "0.5", cwd=tmp_path)
    gate = next(line for line in same.stdout.splitlines() if "vs baseline" in line)
    assert "sign test n/a: no shared case changed)" in gate, gate
    (tmp_path / "flip").write_text("", encoding="utf-8")
    worse = scoreboard(*run, "--output", "worse.json", "--baseline", "main.json", "--max-regression", "0.5",
                       cwd=tmp_path)
    gate = next(line for line in worse.stdout.splitlines() if "vs baseline" in line)
    assert "sign test p=1.0000 over 1 changed case, 1 worse and 0 better)" in gate, gate


def test_an_unchecked_judge_is_said_with_what_checks_it_in_the_terminal_and_the_markdown(tmp_path):
    """A first llm-judge suite printed `judge check never ran: these figures are unverified` and
    nothing more: no word of what a judge check is or how to run one, until a gate was refused."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Judge(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            content = json.dumps({"verdict": True, "explanation": "apologises"})
            body = json.dumps({"choices": [{"index": 0, "finish_reason": "stop",
                                            "message": {"role": "assistant", "content": content}}],
                               "usage": {"prompt_tokens": 3, "completion_tokens": 2}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Judge)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        (tmp_path / "cases.jsonl").write_text(jsonl([{"id": "q1", "input": "late parcel", "expected": "sorry"}]),
                                              encoding="utf-8")
        (tmp_path / "suite.yaml").write_text(
            "name: support\ncases: cases.jsonl\nvariants:\n  a: {subject: mock}\n"
            f"judge: {{type: openai, base_url: 'http://127.0.0.1:{server.server_port}/v1', model: j}}\n"
            "graders:\n  - llm-judge: {rubric: apologetic}\n", encoding="utf-8")
        done = scoreboard("run", "suite.yaml", "--no-progress", "--format", "json,md", "--output", "r", cwd=tmp_path)
        trusted = scoreboard("run", "suite.yaml", "--no-progress", "--format", "json", "--output", "t",
                             "--trust-unchecked-judge", cwd=tmp_path)
    finally:
        server.shutdown()
    assert done.returncode == 0, done.stdout + done.stderr
    said = ("judge check never ran: these figures are unverified; check the judge by running the suite with "
            "--stage check (its instrument: block names known-good controls)")
    assert f"  {said}" in done.stdout.splitlines(), done.stdout
    assert f"- {said}" in (tmp_path / "r.md").read_text(encoding="utf-8")
    assert trusted.returncode == 0, trusted.stdout + trusted.stderr
    assert ("  judge check never ran: these figures are unverified; trusted by --trust-unchecked-judge"
            in trusted.stdout.splitlines()), trusted.stdout


def test_a_run_folder_or_a_rendering_given_where_a_report_is_wanted_names_the_json_beside_it(tmp_path):
    """`scoreboard compare` on the folder `--resume` takes, or on the `.md` the run printed, said
    `is a directory, expected a report JSON file` / `report is not a JSON object`: not which file."""
    (tmp_path / "cases.jsonl").write_text(jsonl([{"id": "a", "input": "hi", "expected": "hi"}]), encoding="utf-8")
    done = scoreboard("run", "--cases", "cases.jsonl", "--subject", "mock", "--no-progress", "--format", "json,md,html",
                      "--output", "runs/r1", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    want = "; give its JSON report, " + str(Path("runs") / "r1.json")
    for command in (("compare", "runs/r1", "runs/r1.json"), ("report", "runs/r1/"), ("verify", "runs/r1"),
                    ("compare", "runs/r1.json", "runs/r1.md"), ("report", "runs/r1.html")):
        res = scoreboard(*command, cwd=tmp_path)
        errs = [line for line in res.stderr.splitlines() if line.startswith("scoreboard: error:")]
        assert res.returncode == 1 and len(errs) == 1 and errs[0].endswith(want), (command, res.stderr)
    (tmp_path / "other").mkdir()
    res = scoreboard("report", "other", cwd=tmp_path)
    assert res.stderr.strip() == "scoreboard: error: other: is a directory, expected a report JSON file", res.stderr


def test_history_says_which_gates_a_run_failed(tmp_path):
    """A run whose gate failed (exit 3 in CI) was listed by `scoreboard history` as `completed`
    with its pass rates, exactly like one that passed: the failure was nowhere in the list."""
    (tmp_path / "cases.jsonl").write_text(jsonl([{"id": "a", "input": "hi", "expected": "hi"},
                                                 {"id": "b", "input": "yo", "expected": "no"}]), encoding="utf-8")
    store = str(tmp_path / "h.sqlite")
    run = ("run", "--cases", "cases.jsonl", "--subject", "mock", "--no-progress", "--format", "json")
    failed = scoreboard(*run, "--fail-under", "0.9", cwd=tmp_path, SCOREBOARD_STORE=store)
    assert failed.returncode == 3, failed.stdout + failed.stderr
    passed = scoreboard(*run, "--fail-under", "0.5", cwd=tmp_path, SCOREBOARD_STORE=store)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    listed = scoreboard("history", cwd=tmp_path, SCOREBOARD_STORE=store)
    assert listed.returncode == 0, listed.stderr
    gates = [line.strip() for line in listed.stdout.splitlines() if line.strip().startswith("gate ")]
    assert gates == ["gate passed: mock: pass rate 50.0% ≥ 50.0%", "gate FAILED: mock: pass rate 50.0% < 90.0%"], \
        listed.stdout
