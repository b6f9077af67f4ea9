"""Probe 23: privacy across the session's new surfaces, from outside. Distinctive fake secrets
are planted where a user keeps them (a subject's URL query, env vars, headers, a judge's config,
an agent's environment, a transcript) and every byte scoreboard writes is read back: reports in
every format, run.json, the attempt log, the history store, the viewer's answers, the terminal.
(Earlier probes: tests/test_redact.py, tests/test_probe11_batch_privacy.py, tests/test_probe21_manual.py.)"""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

from tests.cli_inprocess import run_cli

ROOT = Path(__file__).resolve().parents[1]
KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "SCOREBOARD_STORE")


def scoreboard(*args: str, cwd: Path, **extra: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in KEYS}
    env.update({"PYTHONPATH": str(ROOT / "src"), **extra})
    return run_cli(args, cwd, env)  # in-process: no test here is about the process


def jsonl(rows: list[dict]) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


def leaks(root: Path, secrets, skip=()) -> list[tuple[str, str]]:
    """(secret, file) for each file under root holding one, in any byte."""
    return [(s, str(p.relative_to(root))) for p in sorted(root.rglob("*")) if p.is_file() and p.name not in skip
            for s in secrets if s.encode() in p.read_bytes()]


class Echo(http.server.BaseHTTPRequestHandler):
    """Answers {"a": "ok"}; a request whose body asks for it gets a 500 echoing its own URL."""
    seen: list = []

    def do_POST(self):  # noqa: N802
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        type(self).seen.append(self.path)
        status, out = (500, {"error": f"no such route {self.path}"}) if b"fail" in body else (200, {"a": "ok"})
        data = json.dumps(out).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def serve(handler) -> http.server.ThreadingHTTPServer:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def test_azure_and_aws_query_credentials_are_masked_in_every_spelling(tmp_path, monkeypatch):
    """An Azure Logic Apps trigger URL carries its key as `sig=`, an Azure Functions endpoint as
    `code=`, an AWS presigned URL `X-Amz-Credential=`: none of these names matched, so the key was
    written in clear into run.json, every report, the attempt log and the history store (and an
    error body echoing the URL). A value with `+` or a lowercase `%2b` in the URL was masked only
    in its decoded spelling, so the URL as written kept it."""
    monkeypatch.chdir(tmp_path)
    Echo.seen = []
    server = serve(Echo)
    sig, code, cred = "Sig+p23azureSAS%2bKEY", "p23functionsKEY0099", "AKIAP23AWSCRED7788"
    try:
        url = (f"http://127.0.0.1:{server.server_address[1]}/workflows/run?api-version=2016-10-01"
               f"&sp=%2Ftriggers%2Fmanual%2Frun&sv=1.0&sig={sig}&code={code}&X-Amz-Credential={cred}")
        (tmp_path / "cases.jsonl").write_text(jsonl([{"id": "c1", "input": "x", "expected": "ok"},
                                                     {"id": "c2", "input": "fail", "expected": "ok"}]))
        (tmp_path / "suite.yaml").write_text(
            f"name: q\ncases: cases.jsonl\nsubject: {{type: http, url: '{url}', output_path: a}}\n")
        done = scoreboard("run", "suite.yaml", "--format", "json,md,html,junit", "--output", "r.json",
                          "--no-progress", "-v", cwd=tmp_path)
        assert done.returncode == 2, done.stdout + done.stderr
        assert Echo.seen and "sig=Sig+p23azureSAS%2BKEY" in Echo.seen[0]  # sent
        secrets = ("p23azureSAS", "Sig p23azure", "p23functionsKEY0099", "AKIAP23AWSCRED7788")
        assert not [s for s in secrets if s in done.stdout + done.stderr]
        assert (tmp_path / ".scoreboard" / "history.sqlite").exists()
        assert leaks(tmp_path, secrets, skip=("suite.yaml",)) == []
        assert "sig=***" in (tmp_path / "r.json").read_text()
        # on the command line such a URL is refused, as ?api_key= is
        spec = json.dumps({"type": "http", "url": url, "output_path": "a"})
        flag = scoreboard("run", "--cases", "cases.jsonl", "--subject", spec, "--output", "f.json", cwd=tmp_path)
        assert flag.returncode == 1 and "subject.url" in flag.stderr, flag.stderr
    finally:
        server.shutdown()


FAKE_CLAUDE = """#!{python}
import json, os
vals = " ".join(f"{{k}}={{v}}" for k, v in sorted(os.environ.items()) if k.startswith("P23"))
print(json.dumps({{"type": "system", "subtype": "init", "session_id": "s1", "tools": ["Bash"], "model": "m"}}))
print(json.dumps({{"type": "assistant", "message": {{"id": "m1", "role": "assistant", "model": "m", "content": [
    {{"type": "tool_use", "id": "t1", "name": "Bash", "input": {{"command": "env # " + vals}}}}]}}}}))
print(json.dumps({{"type": "result", "subtype": "success", "is_error": False, "result": "ok env: " + vals,
    "duration_ms": 5, "num_turns": 1, "total_cost_usd": 0.001,
    "usage": {{"input_tokens": 1, "output_tokens": 1}}, "session_id": "s1"}}))
"""


def test_an_agent_clis_env_entries_named_as_the_readme_lists_credentials_are_never_written(tmp_path, monkeypatch):
    """The README lists env entries named with cookie, session, signature or passwd as
    credentials: an agent CLI's `env` (claude-cli, codex-cli) knew only auth|key|token|secret|
    password, so `DB_PASSWD: literal`, `SESSION_COOKIE: literal` or `REQUEST_SIGNATURE:
    ${VAR}` were written in clear in run.json's plan and, echoed by the agent (its env in a
    Bash call and its answer), in the attempt log, every report and the history store."""
    monkeypatch.chdir(tmp_path)
    claude = tmp_path / "claude"
    claude.write_text(FAKE_CLAUDE.format(python=sys.executable))
    claude.chmod(0o755)
    (tmp_path / "cases.jsonl").write_text(jsonl([{"id": "c1", "input": "hi", "expected": "ok"}]))
    env = {"P23_DB_PASSWD": "passwdP23LITERAL01", "P23_SESSION_COOKIE": "cookieP23LITERAL02",
           "P23_REQUEST_SIGNATURE": "${P23_HOST_SIG}", "P23_API_KEY": "apikeyP23LITERAL04", "P23_LANG": "en_GB"}
    (tmp_path / "suite.json").write_text(json.dumps({
        "name": "ag", "cases": "cases.jsonl", "graders": [{"contains": "ok"}],
        "subject": {"type": "claude-cli", "binary": str(claude), "env": env}}))
    done = scoreboard("run", "suite.json", "--output-dir", "out", "--format", "json,md,html,junit",
                      "--no-progress", "-v", cwd=tmp_path, P23_HOST_SIG="hostsigP23VALUE05")
    assert done.returncode == 0, done.stdout + done.stderr
    secrets = ("passwdP23LITERAL01", "cookieP23LITERAL02", "hostsigP23VALUE05", "apikeyP23LITERAL04")
    assert not [s for s in secrets if s in done.stdout + done.stderr]
    assert (tmp_path / ".scoreboard" / "history.sqlite").exists()
    assert leaks(tmp_path, secrets, skip=("suite.json", "claude")) == []
    (run_json,) = (tmp_path / "out").rglob("run.json")
    assert "en_GB" in run_json.read_text()  # an ordinary variable is kept
    (rep,) = (tmp_path / "out" / "ag").glob("*.json")
    assert "P23_DB_PASSWD=***" in rep.read_text()  # the agent's echo, masked


def test_credentials_an_agent_or_command_inherits_from_the_environment_are_never_written(tmp_path, monkeypatch):
    """A command or an agent CLI inherits scoreboard's whole environment: a CI job's GITHUB_TOKEN
    or AWS_SECRET_ACCESS_KEY, echoed by an agent that runs `env`, was written in clear into the
    attempt log, every report and the history store, since only the four provider keys were
    known. A name about an author (GIT_AUTHOR_NAME) is kept."""
    monkeypatch.chdir(tmp_path)
    claude = tmp_path / "claude"
    claude.write_text(FAKE_CLAUDE.format(python=sys.executable))
    claude.chmod(0o755)
    (tmp_path / "cases.jsonl").write_text(jsonl([{"id": "c1", "input": "hi", "expected": "ok"}]))
    subjects = {"agent": {"type": "claude-cli", "binary": str(claude)},
                "cmd": {"type": "command", "argv": ["sh", "-c", "echo ok; env | grep P23"]}}
    (tmp_path / "suite.json").write_text(json.dumps({
        "name": "inh", "cases": "cases.jsonl", "graders": [{"contains": "ok"}],
        "variants": {name: {"subject": spec} for name, spec in subjects.items()}}))
    secrets = ("ghp_p23INHERITEDTOKEN99", "awsP23SECRETVALUE11")
    done = scoreboard("run", "suite.json", "--output-dir", "out", "--format", "json,md,html,junit",
                      "--no-progress", "-v", cwd=tmp_path, P23_GITHUB_TOKEN=secrets[0],
                      P23_AWS_SECRET_ACCESS_KEY=secrets[1], P23_GIT_AUTHOR_NAME="Jane P23 Developer")
    assert done.returncode == 0, done.stdout + done.stderr
    assert not [s for s in secrets if s in done.stdout + done.stderr]
    assert (tmp_path / ".scoreboard" / "history.sqlite").exists()
    assert leaks(tmp_path, secrets, skip=("suite.json", "claude")) == []
    (rep,) = (tmp_path / "out" / "inh").glob("*.json")
    text = rep.read_text()
    assert text.count("P23_GITHUB_TOKEN=***") >= 2 and "Jane P23 Developer" in text  # both echoes masked


def test_score_masks_its_environments_credentials_in_a_claude_session_log(tmp_path, monkeypatch):
    """`scoreboard score` of a Claude Code session log (and its sub-agent files) wrote the
    agent's Bash calls and tool results as they were: the user's ANTHROPIC_API_KEY in a curl
    the agent ran and the GITHUB_TOKEN its `env` printed were in clear in every report, the
    attempt log and the history store, though the same keys are masked when scoreboard runs
    the agent itself."""
    monkeypatch.chdir(tmp_path)
    key, gh = "sk-ant-p23SESSIONLOGKEY42", "ghp_p23SESSIONGH77"
    session = tmp_path / "s1.jsonl"
    rows = [
        {"type": "user", "sessionId": "s1", "uuid": "u1", "message": {"role": "user", "content": "run env"}},
        {"type": "assistant", "sessionId": "s1", "uuid": "u2", "message": {
            "id": "m1", "role": "assistant", "model": "m", "content": [
                {"type": "tool_use", "id": "t1", "name": "Bash",
                 "input": {"command": f"curl -H 'Authorization: Bearer {key}' http://127.0.0.1:9/"}},
                {"type": "tool_use", "id": "t2", "name": "Task", "input": {"prompt": "look"}}]}},
        {"type": "user", "sessionId": "s1", "uuid": "u3", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": f"GITHUB_TOKEN={gh}"},
            {"type": "tool_result", "tool_use_id": "t2", "content": "done"}]},
         "toolUseResult": {"agentId": "a1"}},
        {"type": "assistant", "sessionId": "s1", "uuid": "u4", "message": {
            "id": "m2", "role": "assistant", "model": "m", "content": [{"type": "text", "text": "done ok"}]}}]
    session.write_text(jsonl([{"parentUuid": None, "isSidechain": False, **r} for r in rows]))
    sub = tmp_path / "s1" / "subagents"
    sub.mkdir(parents=True)
    (sub / "agent-a1.jsonl").write_text(jsonl([{"type": "assistant", "sessionId": "s1", "uuid": "v1",
                                                 "parentUuid": None, "isSidechain": True, "message": {
        "id": "m3", "role": "assistant", "model": "m", "content": [
            {"type": "tool_use", "id": "t3", "name": "Bash", "input": {"command": f"echo {gh} {key}"}}]}}]))
    done = scoreboard("score", "s1.jsonl", "--expect-contains", "ok", "--format", "json,md,html", "--json",
                      cwd=tmp_path, ANTHROPIC_API_KEY=key, GITHUB_TOKEN=gh)
    assert done.returncode in (0, 3), done.stdout + done.stderr
    assert key not in done.stdout + done.stderr and gh not in done.stdout + done.stderr
    assert (tmp_path / ".scoreboard" / "history.sqlite").exists()
    assert leaks(tmp_path, (key, gh), skip=("s1.jsonl", "agent-a1.jsonl")) == []
    (rep,) = (tmp_path / "eval-results" / "s1").glob("*.json")
    text = rep.read_text()
    assert "Bearer ***" in text and "echo *** ***" in text  # the calls kept, the sub-agent's too
