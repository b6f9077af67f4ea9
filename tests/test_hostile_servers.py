"""A hostile provider, end to end through the CLI: servers that echo the credentials they were
sent (in 401 bodies and in answers), answers of 100 MB (plain and streamed), commands that
print the keys they inherit or flood stdout, a judge and replay's live agent doing the same.

Every file the run wrote (the reports in every format, the run folder, JUnit, the response
cache) and everything it printed is searched for the planted key: zero occurrences. Every file
is 0600 in a folder made 0700. Peak memory is bounded in a subprocess under RLIMIT_AS."""

from __future__ import annotations

import base64
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.servers.fake_agent import FakeAgent

ROOT = Path(__file__).resolve().parent.parent
KEY = "sk-planted-9f8e7d6c5b4a3210"
HDR = "hdr-planted-0a1b2c3d4e5f"
ENV = {"SB_PLANTED_KEY": KEY, "SB_PLANTED_HDR": HDR}
RETRIES = {"attempts": 2, "base_delay_s": 0.01, "max_delay_s": 0.02}
MIB = 1 << 20
FORMATS = ["json", "md", "html", "junit"]


def cli(cwd: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    full = {**os.environ, "PYTHONPATH": str(ROOT / "src"), **(env or {})}
    return subprocess.run([sys.executable, "-m", "scoreboard", *args], cwd=cwd, env=full, capture_output=True,
                          text=True, timeout=120)


def setup(tmp_path: Path, subject: dict, n: int = 4, **settings) -> tuple[Path, Path]:
    """(the suite file, outside the folder the run works in; that folder)."""
    inputs, work = tmp_path / "in", tmp_path / "work"
    inputs.mkdir()
    work.mkdir()
    (inputs / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "input": f"q{i}", "expected": f"q{i}"})
                                                + "\n" for i in range(n)))
    suite = {"name": "hostile", "cases": "cases.jsonl", "output_dir": str(work / "out"), "formats": FORMATS,
             "subject": subject, **settings}
    (inputs / "suite.json").write_text(json.dumps(suite))
    return inputs / "suite.json", work


def run_files(work: Path) -> list[Path]:
    files = [p for p in work.rglob("*") if p.is_file()]
    assert any(p.name == "attempts.jsonl" for p in files) and any(p.name == "run.json" for p in files)
    return files


def assert_nowhere(work: Path, secrets: list[str], *printed: str) -> list[Path]:
    """No secret in any file under `work` nor in what was printed; returns the files."""
    files = run_files(work)
    for path in files:
        data = path.read_bytes()
        for secret in secrets:
            assert secret.encode() not in data, (path, secret)
    for text in printed:
        for secret in secrets:
            assert secret not in text
    return files


def assert_private(work: Path) -> None:
    """Every file 0600, every folder the run made 0700."""
    for path in work.rglob("*"):
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode == (0o700 if path.is_dir() else 0o600), (path, oct(mode))


def report(work: Path) -> dict:
    [path] = (work / "out" / "hostile").glob("*.json")
    return json.loads(path.read_text())


# --------------------------------------------------------------------------- secrets


SUBJECTS = {
    "openai": lambda url: {"type": "openai", "base_url": url + "/v1", "model": "m", "api_key_env": "SB_PLANTED_KEY",
                           "headers": {"api-key": "${SB_PLANTED_HDR}"}, "retries": RETRIES},
    "anthropic": lambda url: {"type": "anthropic", "base_url": url, "model": "m", "api_key_env": "SB_PLANTED_KEY",
                              "headers": {"Authorization": "Bearer ${SB_PLANTED_HDR}"}, "retries": RETRIES},
    "http": lambda url: {"type": "http", "url": url + "/generic", "output_path": "output.text",
                         "bearer_token_env": "SB_PLANTED_KEY", "headers": {"api-key": "${SB_PLANTED_HDR}"},
                         "retries": RETRIES},
}
ROUTES = {"openai": "chat", "anthropic": "messages", "http": "generic"}


@pytest.mark.parametrize("kind", sorted(SUBJECTS))
def test_keys_echoed_by_the_server_are_written_nowhere(tmp_path, fake_provider, kind):
    srv = fake_provider
    route = ROUTES[kind]
    # One answer repeats the keys in its text; every other request gets a 401 that echoes them.
    srv.push(route, {"reply": f"your keys: {KEY} and {HDR}"})
    srv.set_default(route, {"echo_credentials": True})
    suite, work = setup(tmp_path, SUBJECTS[kind](srv.base_url), cache=True)
    proc = cli(work, "run", str(suite), "--no-progress", "--json", "--junit", "junit.xml", env=ENV)
    assert proc.returncode == 2, proc.stderr
    sent = [r["headers"] for r in srv.requests_to(route)]
    assert all(KEY in json.dumps(h) and HDR in json.dumps(h) for h in sent)  # the keys did go out
    attempts = report(work)["attempts"]
    errors = [a["error"] for a in attempts if a["status"] == "error"]
    assert len(errors) == 3 and all("invalid credentials" in e and "***" in e for e in errors)
    [answered] = [a for a in attempts if a["status"] != "error"]
    assert answered["output"]["text"] == "your keys: *** and ***"
    files = assert_nowhere(work, [KEY, HDR], proc.stdout, proc.stderr)
    assert {"responses.sqlite", "junit.xml", "run.json"} <= {p.name for p in files}
    assert_private(work)
    # The output was replaced before it was graded and hashed: the record still verifies.
    [path] = (work / "out" / "hostile").glob("*.json")
    checked = cli(work, "verify", str(path))
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_a_judge_echoing_its_key_writes_it_nowhere(tmp_path, fake_provider):
    srv = fake_provider
    verdict = json.dumps({"verdict": True, "explanation": f"checked with {KEY}"})
    srv.push("chat", {"reply": verdict})
    srv.set_default("chat", {"echo_credentials": True})
    judge = {"type": "openai", "base_url": srv.base_url + "/v1", "model": "judge", "api_key_env": "SB_PLANTED_KEY",
             "retries": RETRIES}
    suite, work = setup(tmp_path, {"type": "mock"}, n=3, judge=judge,
                        graders=[{"llm-judge": {"rubric": "the answer repeats the question"}}])
    proc = cli(work, "run", str(suite), "--no-progress", "--json", env=ENV)
    assert proc.returncode in (0, 3), proc.stderr  # judge failures are not-assessed grades
    assert all(r["headers"]["authorization"] == f"Bearer {KEY}" for r in srv.requests_to("chat"))
    reasons = [g["reason"] for a in report(work)["attempts"] for g in a["grades"]]
    assert any("invalid credentials" in r for r in reasons) and any("checked with ***" in r for r in reasons)
    assert_nowhere(work, [KEY], proc.stdout, proc.stderr)
    assert_private(work)


PRINTS_KEYS = ("import os, sys\n"
               "text = sys.stdin.read()\n"
               "if text == 'q0': print(os.environ['OPENAI_API_KEY'], os.environ['SERVICE_TOKEN'])\n"
               "elif text == 'q1': sys.stderr.write(os.environ['OPENAI_API_KEY']); sys.exit(4)\n"
               "elif text == 'q2':\n"
               "    for _ in range(300): sys.stdout.write('y' * (1 << 20))\n"
               "else: sys.stdout.write(text)\n")


def test_a_command_printing_its_keys_or_a_flood_writes_neither(tmp_path):
    subject = {"type": "command", "argv": [sys.executable, "-c", PRINTS_KEYS], "keep_stderr": True,
               "env": {"SERVICE_TOKEN": HDR}}
    suite, work = setup(tmp_path, subject)
    proc = cli(work, "run", str(suite), "--no-progress", "--json", env={"OPENAI_API_KEY": KEY})
    assert proc.returncode == 2, proc.stderr
    by_case = {a["case_id"]: a for a in report(work)["attempts"]}
    assert by_case["c0"]["output"]["text"] == "*** ***\n"
    assert by_case["c1"]["error"] == "command exited with status 4: ***"
    assert "its stdout is larger than max_response_bytes (4,194,304 bytes)" in by_case["c2"]["error"]
    assert by_case["c3"]["status"] == "passed"
    files = assert_nowhere(work, [KEY, HDR], proc.stdout, proc.stderr)
    assert max(p.stat().st_size for p in files) < MIB  # the flood reached no file
    assert_private(work)


def test_replay_token_echoed_by_the_agent_is_written_nowhere(tmp_path):
    token = "jwt-planted-0123456789abcdef"
    work = tmp_path / "work"
    work.mkdir()
    transcript = ROOT / "tests" / "fixtures" / "transcripts" / "replay.json"
    with FakeAgent(token=token) as srv:
        srv.push("invoke", {"reply": f"ok, token {token}"}, {"status": 500, "echo_credentials": True})
        first = cli(work, "replay", str(transcript), "--worker", srv.base_url, "--token", token, "--json")
        second = cli(work, "replay", str(transcript), "--worker", srv.base_url, "--json",
                     env={"SCOREBOARD_TOKEN": token})
    assert first.returncode == 3, first.stderr  # the live run answered; a case failed
    assert second.returncode == 2 and "HTTP 500" in second.stderr and "invalid credentials" in second.stderr
    outputs = [a["output"]["text"] for a in json.loads(first.stdout)["attempts"]]
    assert outputs and all(o == "ok, token ***" for o in outputs)
    files = [p for p in work.rglob("*") if p.is_file()]
    assert len([p for p in files if p.name == "attempts.jsonl"]) == 2
    for path in files:
        assert token.encode() not in path.read_bytes(), path
    for text in (first.stdout, first.stderr, second.stdout, second.stderr):
        assert token not in text
    assert_private(work)


# --------------------------------------------------------------------------- URLs and the command line


def test_url_userinfo_becomes_an_authorization_header(tmp_path, fake_provider):
    srv = fake_provider
    host = srv.base_url.removeprefix("http://")
    subject = {"type": "openai", "base_url": f"http://scoreboard:{KEY}@{host}/v1", "model": "m",
               "api_key_env": "SB_UNSET_KEY", "retries": RETRIES}
    suite, work = setup(tmp_path, subject, n=3)
    srv.push("chat", {}, {}, {"echo_credentials": True, "status": 403})
    proc = cli(work, "run", str(suite), "--no-progress", "--json")
    assert proc.returncode == 2, proc.stderr
    basic = "Basic " + base64.b64encode(f"scoreboard:{KEY}".encode()).decode()
    assert [r["headers"]["authorization"] for r in srv.requests_to("chat")] == [basic] * 3
    data = report(work)
    assert sorted(a["status"] for a in data["attempts"]) == ["error", "passed", "passed"]
    assert data["plan"]["variants"][0]["subject"]["base_url"] == srv.base_url + "/v1"
    assert_nowhere(work, [KEY, basic.split()[1]], proc.stdout, proc.stderr)


@pytest.mark.parametrize("spec,field", [
    ({"headers": {"Authorization": f"Bearer {KEY}"}}, "subject.headers.Authorization"),
    ({"base_url": "http://u:" + KEY + "@127.0.0.1:9/v1"}, "subject.base_url"),
])
def test_a_credential_written_out_on_the_command_line_is_refused(tmp_path, spec, field):
    suite, work = setup(tmp_path, {"type": "mock"})
    subject = json.dumps({"type": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m", **spec})
    for extra in ([], ["--dry-run"]):
        proc = cli(work, "run", str(suite), "--subject", subject, "--no-progress", *extra)
        assert proc.returncode == 1, proc.stderr
        [line] = proc.stderr.strip().splitlines()
        assert field in line and "environment variable" in line and KEY not in line
        assert list(work.iterdir()) == []  # nothing written


def test_a_key_named_by_variable_on_the_command_line_survives_resume(tmp_path, fake_provider):
    srv = fake_provider
    suite, work = setup(tmp_path, {"type": "mock"}, n=4)
    subject = json.dumps({"type": "openai", "base_url": srv.base_url + "/v1", "model": "m", "retries": RETRIES,
                          "headers": {"Authorization": "Bearer ${SB_PLANTED_KEY}"}})
    srv.push("chat", {}, {"status": 402})  # a billing stop after one answer
    first = cli(work, "run", str(suite), "--subject", subject, "--concurrency", "1", "--no-progress", env=ENV)
    assert first.returncode == 2, first.stderr
    [folder] = [p for p in (work / "out" / "hostile").iterdir() if p.is_dir()]
    meta = json.loads((folder / "run.json").read_text())
    assert "${SB_PLANTED_KEY}" in meta["flags"]["subject"]
    resumed = cli(work, "run", "--resume", str(folder), "--no-progress", env=ENV)
    # the attempt the 402 cut is run again (the stop is logged with it), and now answered
    assert resumed.returncode == 0, resumed.stderr
    data = report(work)
    assert data["run"]["status"] == "completed" and data["run"]["resumed"]["attempts_reused"] == 1
    assert {a["status"] for a in data["attempts"]} == {"passed"} and len(data["attempts"]) == 4
    assert all(r["headers"]["authorization"] == f"Bearer {KEY}" for r in srv.requests_to("chat"))
    assert_nowhere(work, [KEY], first.stdout, first.stderr, resumed.stdout, resumed.stderr)
    assert_private(work)


# --------------------------------------------------------------------------- memory

#: `scoreboard ARGS...` under RLIMIT_AS (argv: the limit in bytes, where to write the peak RSS)
LIMITED = ("import atexit, resource, runpy, sys\n"
           "limit, out = int(sys.argv.pop(1)), sys.argv.pop(1)\n"
           "resource.setrlimit(resource.RLIMIT_AS, (limit, limit))\n"
           "def peak():\n"
           "    hwm = [line.split()[1] for line in open('/proc/self/status') if line.startswith('VmHWM:')]\n"
           "    open(out, 'w').write(hwm[0])\n"
           "atexit.register(peak)\n"
           "sys.argv[0] = 'scoreboard'\n"
           "runpy.run_module('scoreboard', run_name='__main__')\n")


def test_three_100_mb_answers_stay_within_a_small_memory_limit(tmp_path, fake_provider):
    srv = fake_provider
    srv.set_default("chat", {"oversize": 100 * MIB})
    srv.set_default("generic", {"oversize": 100 * MIB, "declare_length": True})
    openai = SUBJECTS["openai"](srv.base_url)
    variants = {"plain": {"subject": openai}, "streamed": {"subject": {**openai, "stream": True}},
                "http": {"subject": SUBJECTS["http"](srv.base_url)}}
    suite, work = setup(tmp_path, openai, n=3, variants=variants, formats=["json", "md", "html"])
    peak = tmp_path / "peak-kib"
    # The limit is set in the child itself, and its peak read there (VmHWM): a child forked from
    # this test process would count the test process's own pages in its rusage.
    proc = subprocess.run([sys.executable, "-c", LIMITED, str(512 * MIB), str(peak), "run", str(suite),
                           "--no-progress"], cwd=work, env={**os.environ, "PYTHONPATH": str(ROOT / "src"), **ENV},
                          capture_output=True, text=True, timeout=300)
    stderr = proc.stderr
    assert proc.returncode == 2, stderr
    assert "MemoryError" not in stderr and "Traceback" not in stderr
    attempts = report(work)["attempts"]
    assert len(attempts) == 9 and all(a["status"] == "error" for a in attempts)
    assert all("larger than max_response_bytes (4,194,304 bytes)" in a["error"] for a in attempts)
    assert int(peak.read_text()) * 1024 < 300 * MIB, peak.read_text()  # the peak in KiB
    assert max(p.stat().st_size for p in work.rglob("*") if p.is_file()) < MIB
    assert len(srv.requests_to("chat")) == 6 and len(srv.requests_to("generic")) == 3
