"""Probe 24W: GitHub workflow annotations (failed gates, failed/errored cases at their file and
line, escaped as @actions/core escapes them, printed where the runner reads commands) and the
hint a budget-stopped run prints."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from scoreboard.record.annotations import command

ENV = {**os.environ, "SCOREBOARD_STORE": "none"}
for name in [k for k in ENV if k.startswith("GITHUB_")]:
    del ENV[name]


def test_commands_are_escaped_as_the_toolkit_escapes_them():
    # command.ts: escapeData % CR LF; escapeProperty also : and ,; empty properties left out
    line = command("warning", "100% a\r\nb::c,d", file="x,y:z%.jsonl", line=3, title="")
    assert line == "::warning file=x%2Cy%3Az%25.jsonl,line=3::100%25 a%0D%0Ab::c,d"
    assert command("error", "") == "::error::"


def test_control_characters_in_a_message_or_property_are_spelt_out():
    """An ESC or BEL in a reason or a case file's name would colour, retitle or clear the log
    GitHub shows: spelt \\x1b, \\x07, as the terminal summary spells them; line ends stay %0A."""
    line = command("warning", "red \x1b[31mX\x07\nnext \u202e", file="a\x1bb.jsonl")
    assert line == "::warning file=a\\x1bb.jsonl::red \\x1b[31mX\\x07%0Anext \\u202e"
    assert "\x1b" not in line and "\x07" not in line


def _suite(tmp: Path, n: int = 13) -> None:
    (tmp / "app.py").write_text("def answer(text):\n"
                                "    if text == 'boom':\n        raise RuntimeError('kaput\\n::set-output name=x::1')\n"
                                "    return 'wrong'\n")
    cases = [{"id": "boom", "input": "boom", "expected": "x"}]
    cases += [{"id": f"q{i},a::b%", "input": f"q{i}", "expected": "right"} for i in range(n - 1)]
    (tmp / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    (tmp / "suite.yaml").write_text("name: qa\ncases: cases.jsonl\ngraders: [exact]\n"
                                    "subject: {type: python, function: 'app:answer'}\nformats: [json]\n")


def _run(tmp: Path, *extra: str, **env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "scoreboard", "run", "suite.yaml", "--no-progress",
                           "--output-dir", "out", *extra], cwd=tmp, capture_output=True, text=True,
                          env={**ENV, **env}, timeout=120)


def test_run_under_github_actions_annotates_gates_and_cases_at_their_lines(tmp_path):
    _suite(tmp_path)
    out = _run(tmp_path, "--fail-under", "0.9", GITHUB_ACTIONS="true")
    assert out.returncode in (2, 3), out.stdout + out.stderr
    lines = out.stdout.splitlines()
    notes = [x for x in lines if x.startswith("::")]
    assert notes, out.stdout
    # after the summary (the report path is its last line)
    assert lines.index(notes[0]) > max(i for i, x in enumerate(lines) if x.strip().startswith("json:"))
    assert notes[0].startswith("::error title=scoreboard gate::gate failed: ")
    cases = [x for x in notes if "title=scoreboard case" in x]
    assert len(cases) == 10
    assert cases[0].startswith("::error file=cases.jsonl,line=1,title=scoreboard case errored::case boom (")
    assert "%0A::set-output name=x::1" in cases[0] and "\n" not in cases[0]
    assert cases[1].startswith("::warning file=cases.jsonl,line=2,title=scoreboard case failed::case q0,a::b%25 (")
    assert notes[-1].startswith("::notice::3 more failed or errored cases not annotated: see ")
    # nothing outside GitHub Actions
    plain = _run(tmp_path, "--fail-under", "0.9")
    assert not [x for x in plain.stdout.splitlines() if x.startswith("::")], plain.stdout


def test_the_action_prints_annotations_after_commands_are_resumed(tmp_path):
    _suite(tmp_path, n=3)
    (tmp_path / "gh").mkdir()
    env = {**ENV, "GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(tmp_path / "gh" / "s.md"),
           "GITHUB_OUTPUT": str(tmp_path / "gh" / "o.txt")}
    out = subprocess.run([sys.executable, "-m", "scoreboard.cli.github_action", "suite.yaml", "--comment", "false",
                          "--args", "--fail-under 0.9 --output-dir out"], cwd=tmp_path, capture_output=True,
                         text=True, env=env, timeout=120)
    assert out.returncode == 2, out.stdout + out.stderr  # an errored case: exit 2
    lines = out.stdout.splitlines()
    stop = next(i for i, x in enumerate(lines) if x.startswith("::stop-commands::"))
    token = lines[stop].split("::")[2]
    resumed = lines.index(f"::{token}::")
    notes = [i for i, x in enumerate(lines) if x.startswith(("::error", "::warning", "::notice"))]
    assert notes and min(notes) > resumed, out.stdout  # read by the runner, not swallowed
    assert len(notes) == 1 + 3  # the gate and each case, once


class _Provider(BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length") or 0))
        body = json.dumps({"output": {"text": "ok"}}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_a_budget_stopped_run_says_a_resume_keeps_the_budget(tmp_path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Provider)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/"
        cases = [{"id": f"c{i}", "input": f"c{i}", "expected": "ok", "graders": ["contains"]} for i in range(4)]
        (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
        (tmp_path / "suite.json").write_text(json.dumps({
            "name": "st", "cases": "cases.jsonl", "concurrency": 1,
            "subject": {"type": "http", "url": url, "body": {"prompt": "{{input}}"}, "output_path": "output.text"}}))
        out = subprocess.run([sys.executable, "-m", "scoreboard", "run", "suite.json", "--output-dir", "out",
                              "--no-progress", "--max-requests", "2", "--format", "json,md"], cwd=tmp_path, capture_output=True,
                             text=True, env=ENV, timeout=120)
    finally:
        server.shutdown()
        server.server_close()
    assert out.returncode == 2, out.stdout + out.stderr
    (stopped,) = [x for x in out.stdout.splitlines() if x.strip().startswith("stopped:")]
    assert "request budget of 2 used up" in stopped
    assert "finish it with" not in stopped
    assert "keeps this budget" in stopped and "a larger --max-requests (or budget.max_requests)" in stopped
    (md,) = (tmp_path / "out" / "st").glob("*.md")
    stopped_md = next(x for x in md.read_text(encoding="utf-8").splitlines() if x.startswith("- **Stopped**"))
    assert "finishes it" not in stopped_md
    assert "keeps this budget" in stopped_md and "a larger `--max-requests` (or `budget.max_requests`)" in stopped_md
