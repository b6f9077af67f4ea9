"""The README as the user's manual (probe 21): the sections Running, A run you can trust, Live
runs, Reports, Verify/rescore/imports, Exit codes and Privacy, read sentence by sentence and run
as printed. Each test is a sentence the tool did not do."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.cli_inprocess import run_cli

ROOT = Path(__file__).resolve().parents[1]
KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL")


def scoreboard(*args: str, cwd: Path, **extra: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in KEYS and k != "SCOREBOARD_STORE"}
    env.update({"SCOREBOARD_STORE": "none", "PYTHONPATH": str(ROOT / "src"), **extra})
    return run_cli(args, cwd, env)


def jsonl(rows: list[dict]) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


def small_suite(tmp_path: Path) -> Path:
    (tmp_path / "cases.jsonl").write_text(jsonl([{"id": "c1", "input": "x", "expected": "ok"},
                                                 {"id": "c2", "input": "y", "expected": "ok"}]), encoding="utf-8")
    (tmp_path / "bot.py").write_text("def answer(input):\n    return 'ok'\n", encoding="utf-8")
    (tmp_path / "suite.yaml").write_text(
        "name: small\ncases: cases.jsonl\nvariants:\n  a: {subject: {type: python, function: 'bot:answer', "
        "model_free: true}}\n", encoding="utf-8")
    return tmp_path / "suite.yaml"


@pytest.mark.parametrize("name", ["results.xml", "results.XML"])
def test_run_output_named_as_xml_is_refused_with_the_json_name_as_junit_xml_is(tmp_path, name):
    """`--output results.xml` (the CI habit for JUnit) wrote results.xml.json, results.xml.md,
    results.xml.html and a folder results.xml, where the README says a name another format would
    have is refused with the JSON name to give (and `report` takes a bare .xml as JUnit)."""
    small_suite(tmp_path)
    done = scoreboard("run", "suite.yaml", "--output", name, "--no-progress", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    line = done.stderr.strip()
    assert "\n" not in line and "results.json" in line and "junit" in line, line
    assert not any(p.name.startswith("results") for p in tmp_path.iterdir())
    # rescore takes the same rule
    first = scoreboard("run", "suite.yaml", "--output", "r.json", "--format", "json", "--no-progress", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    again = scoreboard("rescore", "r.json", "--output", name, cwd=tmp_path)
    assert again.returncode == 1 and "results.json" in again.stderr, again.stderr
    assert not any(p.name.startswith("results") for p in tmp_path.iterdir())


def test_a_key_in_a_urls_query_is_sent_and_written_nowhere_and_refused_on_the_command_line(tmp_path):
    """A provider that takes its key in the URL (`?key=...`, `&api_token=...`) had it written in
    clear into run.json, the JSON, HTML and JUnit reports: the README says every credential the
    run knows is written nowhere, and a suite file may hold one; only URL userinfo was known."""
    import http.server
    import threading

    seen: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            seen.append(self.path)
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            body = json.dumps({"a": "ok"}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        key = "qk-4f9d2c7b1e8a"
        (tmp_path / "cases.jsonl").write_text(jsonl([{"id": "c1", "input": "x", "expected": "ok"}]), encoding="utf-8")
        url = f"http://127.0.0.1:{server.server_address[1]}/v1/x?lang=en&api_key={key}"
        (tmp_path / "suite.yaml").write_text(
            f"name: q\ncases: cases.jsonl\nsubject: {{type: http, url: '{url}', output_path: a}}\n", encoding="utf-8")
        done = scoreboard("run", "suite.yaml", "--format", "json,md,html,junit", "--output", "r.json",
                          "--no-progress", "-v", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert seen and key in seen[0]  # the provider got its key
        assert key not in done.stdout + done.stderr
        leaked = [p.name for p in tmp_path.rglob("*") if p.is_file() and p.name != "suite.yaml"
                  and key in p.read_text(encoding="utf-8", errors="replace")]
        assert leaked == [], leaked
        assert "api_key=***" in (tmp_path / "r.json").read_text(encoding="utf-8")
        # on the command line it is refused, as user:password@ is, before anything is sent
        spec = json.dumps({"type": "http", "url": url.replace("api_key", "token"), "output_path": "a"})
        flag = scoreboard("run", "--cases", "cases.jsonl", "--subject", spec, "--output", "f.json", cwd=tmp_path)
        assert flag.returncode == 1 and "subject.url" in flag.stderr, flag.stderr
        assert len(seen) == 1 and not (tmp_path / "f.json").exists()
    finally:
        server.shutdown()


def test_rescore_and_the_imports_refuse_a_report_labelled_v1_that_holds_a_v2_field(tmp_path):
    """The README: v2 adds run.executor and run.dry_run, 'so a report labelled v1 that holds
    either is refused'. `report`, `compare` and `verify` refused it; `rescore` and `import
    comparisons` read it and wrote a new report from it (exit 0)."""
    small_suite(tmp_path)
    done = scoreboard("run", "suite.yaml", "--output", "r.json", "--format", "json", "--no-progress", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert "executor" in report["run"]
    report["schema"] = "scoreboard.report/v1"
    (tmp_path / "v1.json").write_text(json.dumps(report), encoding="utf-8")
    case = report["plan"]["cases"][0]
    (tmp_path / "comparisons.json").write_text(json.dumps({"entries": [{
        "case_id": case["id"], "input_hash": case["input_hash"], "provider": "acme", "model": "m",
        "model_version": "1", "settings": {}, "output": "ok", "generated_at": "2024-01-01T00:00:00Z"}]}),
        encoding="utf-8")
    for args in (("rescore", "v1.json", "--output", "new.json"),
                 ("import", "comparisons", "v1.json", "comparisons.json", "--output", "new.json")):
        refused = scoreboard(*args, cwd=tmp_path)
        assert refused.returncode == 1, (args, refused.stdout, refused.stderr)
        line = refused.stderr.strip()
        assert "\n" not in line and "v1.json" in line and "run.executor" in line, line
        assert not (tmp_path / "new.json").exists()
    # a v1 report without a v2 field still loads
    del report["run"]["executor"]
    report["run"].pop("dry_run", None)
    (tmp_path / "v1ok.json").write_text(json.dumps(report), encoding="utf-8")
    ok = scoreboard("rescore", "v1ok.json", "--output", "new.json", cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr


@pytest.mark.parametrize("text", ["{}\n", "cases: {}\n", "default:\ncases: {}\n"])
def test_rescore_refuses_a_graders_file_that_names_no_grader(tmp_path, text):
    """`--graders` holding `{}` rescored with the report's own graders and exit 0 ('graders
    changed for 0 of N cases'), where an empty list `[]` was refused: a graders file that names no
    grader is a mistake (an empty or truncated file), and says so naming the file and field."""
    small_suite(tmp_path)
    done = scoreboard("run", "suite.yaml", "--output", "r.json", "--format", "json", "--no-progress", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (tmp_path / "g.yaml").write_text(text, encoding="utf-8")
    again = scoreboard("rescore", "r.json", "--graders", "g.yaml", "--output", "new.json", cwd=tmp_path)
    assert again.returncode == 1, again.stdout
    line = again.stderr.strip()
    assert "\n" not in line and "g.yaml" in line and "default" in line, line
    assert not (tmp_path / "new.json").exists()


def test_resume_given_the_report_name_of_a_run_that_has_not_written_it_names_the_folder(tmp_path):
    """`--resume r.json` of a run killed before its first checkpoint (its folder r/ holds run.json
    and the attempt log, r.json was never written) said 'not a run folder (no run.json): give the
    folder a run made, eval-results/<suite>/<UTC stamp>'; the README says a report's name is refused
    with the folder to give instead, as it is once r.json exists."""
    small_suite(tmp_path)
    done = scoreboard("run", "suite.yaml", "--output", "r.json", "--format", "json", "--no-progress", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (tmp_path / "r.json").unlink()  # as a run killed before any checkpoint leaves it
    assert (tmp_path / "r" / "run.json").is_file()
    again = scoreboard("run", "--resume", "r.json", cwd=tmp_path)
    assert again.returncode == 1
    line = again.stderr.strip()
    assert "\n" not in line and "give the run folder 'r'" in line, line
