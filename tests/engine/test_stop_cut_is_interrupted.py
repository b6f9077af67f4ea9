"""An attempt whose retry wait the run's stop cut short is `interrupted`, as one a Ctrl+C cut
mid-request: the subject did nothing wrong, the run stopped. A real `scoreboard run` process
(the signal is the point) against a loopback server answering 503 with Retry-After: 60, SIGTERM
while the attempt waits to retry; then, in-process, its report, verify and --resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.cli_inprocess import run_cli

ENV = {**os.environ, "SCOREBOARD_STORE": "none"}


class Server:
    """POST /gen: the prompt `wait` is answered 503 with Retry-After: 60 the first time, 200 after;
    any other prompt 200. `answered` is set once the 503 and every other answer of the run are out."""

    def __init__(self, others: int):
        self.requests: list[str] = []
        self.answered = threading.Event()
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                prompt = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))["prompt"]
                with outer._lock:
                    outer.requests.append(prompt)
                    first_wait = prompt == "wait" and outer.requests.count("wait") == 1
                status, body = (503, {"error": "busy"}) if first_wait else (200, {"output": {"text": "ok"}})
                data = json.dumps(body).encode()
                self.send_response(status)
                if first_wait:
                    self.send_header("Retry-After", "60")
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                self.wfile.flush()
                if len(outer.requests) >= 1 + others and "wait" in outer.requests:
                    outer.answered.set()

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/gen"

    def __enter__(self):
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def write_suite(tmp: Path, url: str) -> None:
    cases = [{"id": i, "input": i, "expected": "ok", "graders": ["contains"]} for i in ("wait", "ok")]
    (tmp / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    subject = {"type": "http", "url": url, "body": {"prompt": "{{input}}"}, "output_path": "output.text"}
    suite = {"name": "st", "cases": "cases.jsonl", "subject": subject, "timeout_ms": 600_000,
             "concurrency": 2, "output_dir": "out", "formats": ["json", "md"]}
    (tmp / "suite.json").write_text(json.dumps(suite), encoding="utf-8")


def test_a_retry_wait_the_stop_cut_is_interrupted_not_an_error_and_resume_completes_it(tmp_path, browser):
    with Server(others=1) as srv:
        write_suite(tmp_path, srv.url)
        proc = subprocess.Popen([sys.executable, "-m", "scoreboard", "run", "suite.json", "--no-progress",
                                 "--grace", "300"], cwd=tmp_path, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=ENV)
        try:
            assert srv.answered.wait(60), "the server was not asked for both cases"
            # the 503 is out: the attempt waits (or is about to wait) 60 s before its retry
            proc.send_signal(signal.SIGTERM)
            stdout, stderr = proc.communicate(timeout=60)  # a hang guard, far below the 60 s wait + grace
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert proc.returncode == 2, stdout + stderr
        (folder,) = [p for p in (tmp_path / "out" / "st").iterdir() if p.is_dir()]
        rep = json.loads(folder.with_name(folder.name + ".json").read_text(encoding="utf-8"))
        assert rep["run"]["status"] == "stopped" and rep["run"]["stop_reason"] == "interrupted by SIGTERM"
        by_id = {a["case_id"]: a for a in rep["attempts"]}
        cut = by_id["wait"]
        assert cut["status"] == "interrupted", cut
        assert "no retry: the run stopped" in cut["error"] and "503" in cut["error"]
        assert cut["output"] is None and cut["grades"] == []
        # its request was sent (possibly billed): measured as the ledger counted it
        assert cut["measurements"]["requests"] == 1 and rep["requests"]["sent"] == 2
        assert by_id["ok"]["status"] == "passed"
        (summary,) = rep["summary"]["variants"].values()
        assert (summary["errors"], summary["interrupted"], summary["passed"]) == (0, 1, 1), summary
        assert summary["pass_rate"] == 1.0  # an interrupted attempt is no failure of the subject
        assert summary["measurements"]["requests"]["known_subtotal"] == 2
        # the terminal and the Markdown say interrupted, never error
        assert "1 interrupted" in stdout and "error" not in stdout.lower(), stdout
        md = folder.with_name(folder.name + ".md").read_text(encoding="utf-8")
        assert "ERROR" not in md and "### wait · http · run 0 · interrupted" in md, md
        # the summary table: no error, the interrupted attempt among those not run (never lost)
        assert "| http | 100.0% (20.7%–100.0%) | 1 / 1 | 0 | 0 | 1 (1 interrupted) |" in md, md
        # the HTML page's case table, as a reader sees it: "1 interrupted", never "1 error"
        html = tmp_path / "cut.html"
        made = run_cli(["report", str(folder.with_name(folder.name + ".json")), "--format", "html",
                        "--output", str(html)], tmp_path, ENV)
        assert made.returncode == 0, made.stdout + made.stderr
        page = browser.new_page()
        try:
            page.goto(html.as_uri())
            page.wait_for_selector("html[data-ready=true]")
            cell = page.locator('[data-testid="case-row"][data-case-id="wait"] [data-testid="case-cell-http"]')
            text = cell.inner_text()
            assert "1 interrupted" in text and "error" not in text, text
        finally:
            page.close()
        # verify recomputes the statistics from the attempts and agrees
        verified = run_cli(["verify", str(folder.with_name(folder.name + ".json"))], tmp_path, ENV)
        assert verified.returncode == 0, verified.stdout + verified.stderr

        # --resume runs it again (its retry is answered now); the other attempt is carried
        resumed = run_cli(["run", "--resume", str(folder), "--no-progress"], tmp_path, ENV)
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        assert srv.requests.count("wait") == 2 and srv.requests.count("ok") == 1
    rep = json.loads(folder.with_name(folder.name + ".json").read_text(encoding="utf-8"))
    assert rep["run"]["status"] == "completed"
    assert {a["case_id"]: a["status"] for a in rep["attempts"]} == {"wait": "passed", "ok": "passed"}
    (summary,) = rep["summary"]["variants"].values()
    assert (summary["errors"], summary["interrupted"], summary["passed"]) == (0, 0, 2), summary
    assert rep["requests"]["sent"] == 3  # the cut request stays counted beside the resumed one
    verified = run_cli(["verify", str(folder.with_name(folder.name + ".json"))], tmp_path, ENV)
    assert verified.returncode == 0, verified.stdout + verified.stderr


@pytest.mark.slow
def test_on_ray_an_attempt_the_quota_stop_refused_a_retry_is_interrupted(tmp_path):
    """--executor ray: one attempt is answered 429 (Retry-After: 1) and sleeps before its retry in a
    Ray worker; the other's 402 stops the run. The driver's stop cuts the worker's wait (or the
    retry is refused by the run's ledger service): the worker records the attempt interrupted (not
    error),
    the 402 stays its attempt's error, verify agrees, and --resume (the quota back) completes both."""
    pytest.importorskip("ray", reason="Ray is an optional extra: pip install 'scoreboard[ray]'")
    from tests.servers.fake_provider import FakeProvider

    env = {**ENV, "RAY_USAGE_STATS_ENABLED": "0", "SB_CUT_KEY": "k"}
    with FakeProvider() as srv:
        (tmp_path / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "input": f"q{i}", "expected": f"q{i}"})
                                                      + "\n" for i in range(2)))
        subject = {"type": "openai", "base_url": srv.base_url + "/v1", "model": "m", "api_key_env": "SB_CUT_KEY",
                   "retries": {"attempts": 3, "base_delay_s": 0.01, "max_delay_s": 0.05}}
        (tmp_path / "suite.json").write_text(json.dumps({"name": "r", "cases": "cases.jsonl", "output_dir": "out",
                                                         "formats": ["json"], "subject": subject, "concurrency": 2}))
        srv.push("chat", {"status": 429, "retry_after": 1}, {"status": 402, "latency_ms": 200})
        done = subprocess.run([sys.executable, "-m", "scoreboard", "run", "suite.json", "--no-progress",
                               "--executor", "ray"], cwd=tmp_path, capture_output=True, text=True, env=env,
                              timeout=300)
        assert done.returncode == 2, done.stdout + done.stderr[-3000:]
        (path,) = (tmp_path / "out" / "r").glob("*.json")
        rep = json.loads(path.read_text(encoding="utf-8"))
        assert rep["run"]["status"] == "stopped" and rep["run"]["executor"] == "ray"
        by_status = {a["status"]: a for a in rep["attempts"]}
        assert sorted(by_status) == ["error", "interrupted"], rep["attempts"]
        assert "402" in by_status["error"]["error"]
        cut = by_status["interrupted"]
        # the driver's stop reaches the worker (its retry wait cut: "no retry: the run stopped"),
        # or the retry's reservation is refused first, whichever comes first on this machine
        assert cut["error"].startswith("the run stopped during this attempt") or \
            "(no retry: the run stopped)" in cut["error"], cut["error"]
        assert cut["measurements"]["requests"] == 1 and rep["requests"]["sent"] == 2 == len(srv.requests)
        (summary,) = rep["summary"]["variants"].values()
        assert (summary["errors"], summary["interrupted"]) == (1, 1), summary
        verified = run_cli(["verify", str(path)], tmp_path, env)
        assert verified.returncode == 0, verified.stdout + verified.stderr
        resumed = run_cli(["run", "--resume", str(path.with_suffix("")), "--no-progress", "--executor", "local"],
                          tmp_path, env)
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    rep = json.loads(path.read_text(encoding="utf-8"))
    assert rep["run"]["status"] == "completed"
    assert [a["status"] for a in rep["attempts"]] == ["passed", "passed"]


@pytest.mark.slow
def test_on_ray_a_sigterm_cuts_a_workers_retry_wait_and_the_attempt_is_interrupted(tmp_path):
    """--executor ray, SIGTERM while an attempt sleeps in a Ray worker before its retry
    (Retry-After: 60): the driver tells its workers the run stopped, so the wait ends at once
    (before, the worker slept on and the attempt was cut only at the grace's end, 300 s here) and
    the attempt is recorded interrupted, as on a local run; --resume completes it."""
    pytest.importorskip("ray", reason="Ray is an optional extra: pip install 'scoreboard[ray]'")
    env = {**ENV, "RAY_USAGE_STATS_ENABLED": "0"}
    with Server(others=1) as srv:
        write_suite(tmp_path, srv.url)
        proc = subprocess.Popen([sys.executable, "-m", "scoreboard", "run", "suite.json", "--no-progress",
                                 "--grace", "300", "--executor", "ray"], cwd=tmp_path, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=env)
        try:
            assert srv.answered.wait(120), "the server was not asked for both cases"
            proc.send_signal(signal.SIGTERM)
            stdout, stderr = proc.communicate(timeout=50)  # the 60 s wait is not waited out
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert proc.returncode == 2, stdout + stderr[-3000:]
        (folder,) = [p for p in (tmp_path / "out" / "st").iterdir() if p.is_dir()]
        path = folder.with_name(folder.name + ".json")
        rep = json.loads(path.read_text(encoding="utf-8"))
        assert rep["run"]["status"] == "stopped" and rep["run"]["executor"] == "ray"
        by_id = {a["case_id"]: a for a in rep["attempts"]}
        cut = by_id["wait"]
        assert cut["status"] == "interrupted" and "no retry: the run stopped" in cut["error"], cut
        assert by_id["ok"]["status"] == "passed"
        verified = run_cli(["verify", str(path)], tmp_path, env)
        assert verified.returncode == 0, verified.stdout + verified.stderr
        resumed = run_cli(["run", "--resume", str(folder), "--no-progress", "--executor", "local"], tmp_path, env)
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        assert srv.requests.count("wait") == 2 and srv.requests.count("ok") == 1
