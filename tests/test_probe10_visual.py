"""Open-ended and visual work probed as a careless or hostile user would: judges that refuse,
gates over every pair, what leads the report when dQ cannot be computed."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from scoreboard.stats.gates import dq_gates
from tests.cli_inprocess import run_cli

JUDGE_MODULE = '''import json, re
def a(input): return "GOOD answer"
def b(input): return "plain answer"
def c(input): return "REFUSEME answer"
def judge(input):
    text = input if isinstance(input, str) else json.dumps(input)
    if "REFUSEME" in text:
        return "I can't help with that."
    dims = re.search(r"DIMENSIONS: (.*)", text).group(1).split(", ")
    return json.dumps({"scores": {d: 3 if "GOOD" in text else 1 for d in dims}, "explanation": "ok"})
'''


def scoreboard(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return run_cli(args, cwd, dict(os.environ, SCOREBOARD_STORE="none"))  # in-process


def three_variants(tmp_path: Path, variants=("a", "b", "c")) -> None:
    """Variant c's answers are refused by the judge on every case: it has no pointwise score."""
    (tmp_path / "mods.py").write_text(JUDGE_MODULE)
    (tmp_path / "cases.jsonl").write_text('{"id": "c1", "input": "x"}\n{"id": "c2", "input": "y"}\n')
    listed = "".join(f"  {v}: {{subject: \"python:mods:{v}\"}}\n" for v in variants)
    (tmp_path / "suite.yaml").write_text(
        "name: three\ncases: cases.jsonl\nvariants:\n" + listed +
        "graders: [{pointwise: {dimensions: [content, clarity]}}]\njudge: \"python:mods:judge\"\n")


def test_min_dq_gates_every_pair_a_pair_without_dq_fails_not_skipped(tmp_path):
    # Before: `--min-dq 1.0` ("gates every pair") gated only the pairs that had a dQ; with a third
    # variant whose every judgment failed, its two pairs were left out and the gate passed (rc 0).
    three_variants(tmp_path)
    proc = scoreboard(["run", "suite.yaml", "--no-progress", "--format", "json", "--trust-unchecked-judge",
                       "--min-dq", "1.0"], tmp_path)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "gate passed: dQ a - b: +2.00" in proc.stdout
    assert "gate FAILED: dQ a - c: n/a" in proc.stdout and "gate FAILED: dQ b - c: n/a" in proc.stdout
    path = next((tmp_path / "eval-results" / "three").glob("*.json"))
    gates = json.loads(path.read_text())["gates"]
    assert [(g["metric"], g["passed"]) for g in gates] == [("dq:a/b", True), ("dq:a/c", False), ("dq:b/c", False)]
    assert scoreboard(["verify", str(path)], tmp_path).returncode == 0


def test_dq_gates_name_every_pair_of_the_run():
    summary = {"judges": {"dq": [{"a": "a", "b": "b", "dq": 2.0, "ci": None}]}}
    gates = dq_gates(summary, {"*": 1.0}, ["a", "b", "c"])
    assert [(g["metric"], g["value"], g["passed"]) for g in gates] == [
        ("dq:a/b", 2.0, True), ("dq:a/c", None, False), ("dq:b/c", None, False)]


REFUSAL = "I'm sorry, I can't help with that."


class RefusingJudge(BaseHTTPRequestHandler):
    """An OpenAI-compatible judge that declines every judgment (structured outputs' refusal)."""

    asked: list = []

    def do_POST(self):  # noqa: N802 - the http.server name
        self.asked.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
        data = json.dumps({"model": "j", "choices": [{"index": 0, "finish_reason": "stop", "message": {
            "role": "assistant", "content": None, "refusal": REFUSAL}}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 9}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def test_a_judge_that_refuses_is_a_judge_failure_saying_so_not_a_parse_error(tmp_path):
    # Before: the judge's refusal read "judge answer unusable after a retry: output is not valid
    # JSON: Expecting value: line 1 column 1 (char 0)", and each refusal was asked again.
    server = ThreadingHTTPServer(("127.0.0.1", 0), RefusingJudge)
    RefusingJudge.asked = []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        three_variants(tmp_path, variants=("a", "b"))
        judge = json.dumps({"type": "openai", "model": "j", "api_key_required": False,
                            "base_url": f"http://127.0.0.1:{server.server_port}/v1"})
        proc = scoreboard(["run", "suite.yaml", "--no-progress", "--format", "json", "--judge", judge], tmp_path)
    finally:
        server.shutdown()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "judge failures (not assessed): 4" in proc.stdout
    report = json.loads(next((tmp_path / "eval-results" / "three").glob("*.json")).read_text())
    grades = [g for a in report["attempts"] for g in a["grades"]]
    assert len(grades) == 4 and all(g["passed"] is None and g["judge_failure"] for g in grades)
    assert all(g["reason"] == f"judge failure: judge refused: {REFUSAL}" for g in grades), grades[0]["reason"]
    assert len(RefusingJudge.asked) == 4  # a refusal is not asked again as if it had not parsed
    assert all(g["judge"]["usage"]["requests"] == 1 for g in grades)
    # no dQ at all is still said first, with the judge check, never left out
    assert "  dQ a - b: n/a (no case has a pointwise score from both variants; judge failures: a 2, b 2)" \
        in proc.stdout and "judge check never ran" in proc.stdout


def test_the_lead_names_every_dq_pair_one_without_dq_as_n_a(tmp_path):
    # Before: the lead ("dQ first") listed only the pairs that had a dQ; the pairs of a variant the
    # judge refused throughout vanished from the terminal, the Markdown and the HTML in silence.
    three_variants(tmp_path)
    proc = scoreboard(["run", "suite.yaml", "--no-progress", "--format", "json,md", "--trust-unchecked-judge"],
                      tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lead = proc.stdout.splitlines()[2:6]
    assert lead[0].startswith("  dQ a - b: +2.00")
    assert lead[1:] == ["  dQ a - c: n/a (no case has a pointwise score from both variants; judge failures: c 2)",
                        "  dQ b - c: n/a (no case has a pointwise score from both variants; judge failures: c 2)",
                        "  judge check never ran: these figures are unverified; trusted by --trust-unchecked-judge"]
    markdown = next((tmp_path / "eval-results" / "three").glob("*.md")).read_text()
    assert "- dQ b - c: n/a (no case has a pointwise score from both variants; judge failures: c 2)" in markdown


def test_json_only_run_counts_the_cases_a_dq_left_out(tmp_path):
    # Before: with --format json alone the terminal typed the plan without its cases, so a dQ over
    # 1 of 2 cases read "on 1 case" (the case left out unsaid), and a pointwise suite was unknown.
    three_variants(tmp_path, variants=("a", "b"))
    (tmp_path / "mods.py").write_text(JUDGE_MODULE.replace('return "plain answer"',
                                                           'return "REFUSEME" if input == "y" else "plain"'))
    proc = scoreboard(["run", "suite.yaml", "--no-progress", "--format", "json", "--trust-unchecked-judge"],
                      tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # (round 14: and why, per variant: here b's judge refused)
    assert "on 1 of 2 cases (1 left out: a variant had no pointwise score there; judge failures: b 1)" in proc.stdout


SCRIPTED_PAGE = ('<!doctype html><html><body><div id="app"></div><script>document.getElementById("app").innerHTML = '
                 '"<h1>Harbor Lights Cinema</h1><p>Films every night by the sea</p>";</script></body></html>')
STYLED_PAGE = ("<!doctype html><html><head><style>h1{color:#e76f51}</style></head><body><h1>Garden centre</h1>"
               "<p>Plants, pots and advice for every garden</p></body></html>")


def check_suite_files(tmp_path: Path, degrade: list[str]) -> None:
    (tmp_path / "mods.py").write_text(JUDGE_MODULE)
    (tmp_path / "cases.jsonl").write_text('{"id": "c1", "input": "x"}\n')
    (tmp_path / "garden.html").write_text(STYLED_PAGE)
    (tmp_path / "cinema.html").write_text(SCRIPTED_PAGE)
    (tmp_path / "controls.jsonl").write_text(
        '{"id": "garden", "input": "A garden centre", "output": "@garden.html"}\n'
        '{"id": "cinema", "input": "A cinema", "output": "@cinema.html"}\n')
    (tmp_path / "suite.yaml").write_text(
        "name: chk\ncases: cases.jsonl\nvariants:\n  a: {subject: \"python:mods:a\"}\n"
        "graders: [{pointwise: {dimensions: [content, clarity]}}]\njudge: \"python:mods:judge\"\n"
        f"instrument: {{controls: controls.jsonl, degrade: {json.dumps(degrade)}, repeats: 2}}\n")


def test_a_degradation_that_leaves_a_control_as_it_was_is_refused_naming_it(tmp_path):
    # Before: a control whose text its script writes was "truncated" and "shuffled" into the very
    # same page; a judge scoring the two alike (rightly) failed the check for it, blamed on the judge.
    check_suite_files(tmp_path, ["blank", "truncated"])
    proc = scoreboard(["run", "suite.yaml", "--stage", "check", "--no-progress"], tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert "controls.jsonl" in line and ":2" in line and "cinema" in line and "instrument.degrade" in line, line
    assert "degradation 'truncated' leaves this control's page as it was" in line
    assert not (tmp_path / "eval-results").exists()


def test_degradations_that_change_every_control_still_run(tmp_path):
    check_suite_files(tmp_path, ["blank", "no-images"])
    (tmp_path / "cinema.html").write_text(SCRIPTED_PAGE.replace("<body>", "<body><img src=x.png>"))
    (tmp_path / "garden.html").write_text(STYLED_PAGE.replace("<body>", "<body><svg width=9 height=9></svg>"))
    proc = scoreboard(["run", "suite.yaml", "--stage", "check", "--no-progress", "--format", "json"], tmp_path)
    assert "instrument check" in proc.stdout, proc.stdout + proc.stderr
