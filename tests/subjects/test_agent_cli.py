"""`claude-cli` and `codex-cli`: the real CLIs against the loopback FakeProvider.

The CLIs are found under $SCOREBOARD_TEST_CLI_DIR (default: <repo>/.agent-clis, filled by
`npm install --prefix .agent-clis @anthropic-ai/claude-code @openai/codex`); tests that need
them are marked `agent_cli` and skipped when they are absent. HOME, CLAUDE_CONFIG_DIR and
CODEX_HOME point into tmp dirs, and the working directory is the test's tmp dir.
"""

from __future__ import annotations

import asyncio
import glob
import os
import re
import shutil
import stat
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

from scoreboard.engine.ledger import Ledger
from scoreboard.errors import ConfigError, SubjectError
from scoreboard.subjects.agent_cli import API_KEY_VARS, TMP_ROOT, toml_string
from scoreboard.subjects.registry import build_subject, parse_subject_spec
from scoreboard.subjects.values import SubjectRequest

ROOT = Path(__file__).resolve().parents[2]
CLI_DIR = Path(os.environ.get("SCOREBOARD_TEST_CLI_DIR") or ROOT / ".agent-clis")
MODULES = CLI_DIR / "node_modules"
SKILL = 'SKILL-MARKER: answer "briefly".\nÜnïcödé ✓ and a \\ backslash'
# tools codex keeps with shell, unified exec, sub-agents, goals, images and web search disabled
CODEX_TOOLS_LEFT = {"request_user_input", "apply_patch"}


def _claude_binary() -> str | None:
    # The platform package's native binary is the real program (usable even when npm's
    # postinstall step did not link it into .bin).
    for path in sorted(glob.glob(str(MODULES / "@anthropic-ai" / "claude-code-*" / "claude"))):
        if os.access(path, os.X_OK):
            return path
    path = MODULES / ".bin" / "claude"
    return str(path) if os.access(path, os.X_OK) else None


def _codex_binary() -> str | None:
    path = MODULES / ".bin" / "codex"
    return str(path) if os.access(path, os.X_OK) and shutil.which("node") else None


CLAUDE = _claude_binary()
CODEX = _codex_binary()
need_claude = pytest.mark.skipif(CLAUDE is None, reason=f"Claude Code not installed under {MODULES} "
                                 "(npm install --prefix .agent-clis @anthropic-ai/claude-code)")
need_codex = pytest.mark.skipif(CODEX is None, reason=f"Codex (and node) not installed under {MODULES} "
                                "(npm install --prefix .agent-clis @openai/codex)")


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    """Throwaway HOME / config dirs, no API keys in the environment, cwd = tmp_path."""
    home = tmp_path / "home"
    for sub in ("claude", "codex"):
        (home / sub).mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home / "claude"))
    monkeypatch.setenv("CODEX_HOME", str(home / "codex"))
    for name in API_KEY_VARS + ("CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def claude(srv, **options):
    env = {"ANTHROPIC_BASE_URL": srv.base_url, **options.pop("env", {"ANTHROPIC_API_KEY": "test-key"})}
    return build_subject({"type": "claude-cli", "binary": CLAUDE, "env": env, **options}, ROOT)


def codex(srv, **options):
    spec = {"type": "codex-cli", "binary": CODEX, "base_url": srv.base_url + "/v1", "model": "fake-model"}
    return build_subject({**spec, **options}, ROOT)


def run(subject, prompt="What is up?", *, skill=None, ledger=None, timeout=None):
    request = SubjectRequest("c1", prompt, skill=skill, variant="v", ledger=ledger)

    async def go():
        async with asyncio.timeout(timeout):
            return await subject.run(request)

    return asyncio.run(go())


def posts(srv):
    return [r for r in srv.requests if r["method"] == "POST"]


def assert_no_tmp_left(cwd: Path):
    assert not (cwd / TMP_ROOT).exists() or not any((cwd / TMP_ROOT).iterdir())


# --------------------------------------------------------------------------- round trips


@pytest.mark.agent_cli
@need_claude
def test_claude_answer_usage_cost_skill_and_no_tools(fake_provider, isolated):
    (isolated / "CLAUDE.md").write_text("REPO-INSTRUCTIONS-MARKER\n")  # must not be read
    fake_provider.push("messages", {"reply": "The answer is 42", "usage": {"input_tokens": 30, "output_tokens": 4}})
    ledger = Ledger()
    result = run(claude(fake_provider), "What is the answer? --not-a-flag", skill=SKILL, ledger=ledger)
    assert result.output.text == "The answer is 42"
    m = result.measurements
    assert (m.input_tokens, m.output_tokens, m.requests) == (30, 4, 1)
    assert m.cost_usd is not None and m.cost_usd > 0
    assert result.extra["cost_is_estimate"] is True
    (sent,) = posts(fake_provider)
    body = sent["json"]
    assert sent["path"] == "/v1/messages" and sent["headers"]["x-api-key"] == "test-key"
    assert not body.get("tools")
    system = [b["text"] for b in body["system"]] if isinstance(body["system"], list) else [body["system"]]
    assert SKILL in system
    assert "What is the answer? --not-a-flag" in str(body["messages"])
    assert "REPO-INSTRUCTIONS-MARKER" not in sent["body"]
    assert ledger.summary()["completed"] == 1 and ledger.tokens_spent == 34
    assert_no_tmp_left(isolated)


@pytest.mark.agent_cli
@need_codex
def test_codex_answer_usage_no_cost_skill_and_no_shell_tools(fake_provider, isolated):
    (isolated / ".git").mkdir()  # the cwd sits inside a "repository" whose AGENTS.md must not be read
    (isolated / "AGENTS.md").write_text("REPO-INSTRUCTIONS-MARKER\n")
    fake_provider.push("responses", {"reply": "codex says 42", "usage": {"input_tokens": 50, "output_tokens": 3}})
    ledger = Ledger()
    result = run(codex(fake_provider), "What is the answer? --not-a-flag", skill=SKILL, ledger=ledger)
    assert result.output.text == "codex says 42"
    m = result.measurements
    assert (m.input_tokens, m.output_tokens, m.cost_usd, m.requests) == (50, 3, None, 1)
    assert "cost_is_estimate" not in result.extra
    (sent,) = posts(fake_provider)
    body = sent["json"]
    assert sent["path"] == "/v1/responses" and "authorization" not in sent["headers"]
    tools = {t.get("name") or t.get("type") for t in body.get("tools") or []}
    assert tools <= CODEX_TOOLS_LEFT, tools
    developer = [c["text"] for item in body["input"] if item.get("role") == "developer"
                 for c in item["content"]]
    assert SKILL in developer
    assert body["input"][-1]["content"][0]["text"] == "What is the answer? --not-a-flag"
    assert "REPO-INSTRUCTIONS-MARKER" not in sent["body"]
    assert ledger.summary()["completed"] == 1 and ledger.tokens_spent == 53
    assert_no_tmp_left(isolated)


# --------------------------------------------------------------------------- network


def _strace_works() -> bool:
    if not shutil.which("strace"):
        return False
    probe = subprocess.run(["strace", "-f", "-qq", "-e", "trace=connect", "-o", os.devnull, "true"],
                           capture_output=True)
    return probe.returncode == 0


_ADDR = re.compile(r'inet_addr\("([^"]+)"\)|inet_pton\(AF_INET6, "([^"]+)"')
_PORT = re.compile(r"sin6?_port=htons\((\d+)\)")
LOOPBACK = {"127.0.0.1", "::1", "::ffff:127.0.0.1"}


def _traced(binary: str, tmp: Path, name: str) -> tuple[str, Path]:
    """A wrapper that runs `binary` under strace, logging every connect/send with an address."""
    log = tmp / f"{name}.strace"
    wrapper = tmp / f"{name}-traced"
    wrapper.write_text(f'#!/bin/sh\nexec strace -f -qq -e signal=none -e trace=connect,sendto,sendmsg,sendmmsg '
                       f'-o "{log}" -- "{binary}" "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    return str(wrapper), log


@pytest.mark.agent_cli
@pytest.mark.skipif(not _strace_works(), reason="strace is not installed or cannot trace here "
                    "(apt-get install -y strace)")
@pytest.mark.parametrize("kind", ["claude-cli", "codex-cli"])
def test_only_loopback_is_contacted(kind, fake_provider, tmp_path):
    binary = CLAUDE if kind == "claude-cli" else CODEX
    if binary is None:
        pytest.skip(f"{kind} is not installed under {MODULES}")
    wrapper, log = _traced(binary, tmp_path, kind)
    subject = (claude if kind == "claude-cli" else codex)(fake_provider, binary=wrapper)
    assert run(subject, skill=SKILL).output.text
    inet = [line for line in log.read_text().splitlines() if "AF_INET" in line]
    assert inet, "strace saw no network call at all"
    for line in inet:
        match = _ADDR.search(line)
        assert match and (match.group(1) or match.group(2)) in LOOPBACK, line
        assert "htons(53)" not in line, line  # no DNS, not even to a local resolver
    assert any(f"htons({fake_provider.port})" in line for line in inet)


# --------------------------------------------------------------------------- API keys


@pytest.mark.agent_cli
@need_claude
def test_claude_api_keys_stripped_unless_kept_or_explicit(fake_provider, isolated, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sentinel-api-key")
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "sentinel-auth-token")
    monkeypatch.setenv("MY_KEY", "explicit-key")
    monkeypatch.setenv("CLAUDE_CODE_OAUTH_TOKEN", "sk-ant-oat01-subscription")
    # Default: both stripped, so the subscription login (here its token variable) is used.
    assert run(claude(fake_provider, env={})).output.text
    assert "sentinel" not in str([r["headers"] for r in fake_provider.requests])
    assert posts(fake_provider)[-1]["headers"]["authorization"] == "Bearer sk-ant-oat01-subscription"
    monkeypatch.delenv("CLAUDE_CODE_OAUTH_TOKEN")
    # keep_api_keys: the environment's key is used.
    assert run(claude(fake_provider, env={}, keep_api_keys=True)).output.text
    assert posts(fake_provider)[-1]["headers"].get("x-api-key") == "sentinel-api-key"
    # A key named in `env` is always passed (and is never saved literally in the spec).
    subject = claude(fake_provider, env={"ANTHROPIC_API_KEY": "${MY_KEY}"})
    assert run(subject).output.text
    headers = posts(fake_provider)[-1]["headers"]
    assert headers.get("x-api-key") == "explicit-key" and "sentinel" not in str(headers)
    assert subject.spec["env"]["ANTHROPIC_API_KEY"] == "${MY_KEY}"
    assert_no_tmp_left(isolated)


@pytest.mark.agent_cli
@need_codex
def test_codex_api_keys_stripped_unless_named(fake_provider, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sentinel-openai-key")
    monkeypatch.setenv("CODEX_API_KEY", "sentinel-codex-key")
    run(codex(fake_provider))
    assert "sentinel" not in str([r["headers"] for r in fake_provider.requests])
    run(codex(fake_provider, api_key_env="OPENAI_API_KEY"))
    assert posts(fake_provider)[-1]["headers"]["authorization"] == "Bearer sentinel-openai-key"


# --------------------------------------------------------------------------- failures


@pytest.mark.agent_cli
@need_claude
@pytest.mark.parametrize("status, kind", [(500, "server-error"), (401, "auth")])
def test_claude_server_error_fails_fast(status, kind, fake_provider, isolated):
    fake_provider.push("messages", status)
    ledger = Ledger()
    start = time.monotonic()
    with pytest.raises(SubjectError) as info:
        run(claude(fake_provider), ledger=ledger)
    assert time.monotonic() - start < 10
    assert info.value.kind == kind and info.value.status == status
    assert len(posts(fake_provider)) == 1  # no retries
    assert ledger.summary()["failed"] == 1
    assert_no_tmp_left(isolated)


@pytest.mark.agent_cli
@need_codex
@pytest.mark.parametrize("status", [500, 401])
def test_codex_server_error_fails_fast(status, fake_provider, isolated):
    fake_provider.push("responses", status)
    ledger = Ledger()
    start = time.monotonic()
    with pytest.raises(SubjectError) as info:
        run(codex(fake_provider), ledger=ledger)
    assert time.monotonic() - start < 10
    if status == 401:
        assert info.value.kind == "auth" and info.value.status == 401
    assert len(posts(fake_provider)) == 1  # no retries
    assert ledger.summary()["failed"] == 1
    assert_no_tmp_left(isolated)


def _group_alive(pgid: int) -> bool:
    """Whether any non-zombie process is left in process group `pgid` (Linux /proc)."""
    for stat_file in glob.glob("/proc/[0-9]*/stat"):
        try:
            fields = Path(stat_file).read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


@pytest.mark.agent_cli
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("kind", ["claude-cli", "codex-cli"])
def test_timeout_kills_process_group_and_removes_tmp(kind, fake_provider, isolated):
    binary = CLAUDE if kind == "claude-cli" else CODEX
    if binary is None:
        pytest.skip(f"{kind} is not installed under {MODULES}")
    pidfile = isolated / "pid"
    wrapper = isolated / "wrapper"
    wrapper.write_text(f'#!/bin/sh\necho $$ > "{pidfile}"\nexec "{binary}" "$@"\n')
    wrapper.chmod(0o755)
    fake_provider.push("messages" if kind == "claude-cli" else "responses", {"hang": True})
    ledger = Ledger()
    subject = (claude if kind == "claude-cli" else codex)(fake_provider, binary=str(wrapper))
    with pytest.raises(TimeoutError):
        run(subject, ledger=ledger, timeout=3)
    pgid = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while _group_alive(pgid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _group_alive(pgid)
    assert_no_tmp_left(isolated)
    assert ledger.summary()["failed"] == 1 and ledger.summary()["sent"] == 1


# --------------------------------------------------------------------------- no CLI needed


def test_missing_cli_is_a_one_line_config_error(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ConfigError) as info:
        build_subject({"type": "claude-cli"}, tmp_path).check()
    assert str(info.value) == ("claude-cli: 'claude' not found on PATH; "
                               "install with npm install -g @anthropic-ai/claude-code")
    with pytest.raises(ConfigError) as info:
        build_subject({"type": "codex-cli"}, tmp_path).check()
    assert str(info.value) == "codex-cli: 'codex' not found on PATH; install with npm install -g @openai/codex"
    with pytest.raises(SubjectError):
        asyncio.run(build_subject({"type": "codex-cli"}, tmp_path).run(SubjectRequest("c", "x")))
    assert not (tmp_path / TMP_ROOT).exists()


def test_spec_options_and_registry(tmp_path):
    assert parse_subject_spec("claude-cli:sonnet") == {"type": "claude-cli", "model": "sonnet"}
    subject = build_subject({"type": "codex-cli", "env": {"X_TOKEN": "literal", "OTHER": "v",
                                                          "Y_KEY": "${Y}"}}, tmp_path)
    assert subject.spec["env"] == {"X_TOKEN": "***", "OTHER": "v", "Y_KEY": "${Y}"}
    cls = type(subject)
    assert cls.remote and cls.has_model and cls.default_max_concurrency == 8
    for bad in ({"bogus": 1}, {"env": ["A=1"]}, {"extra_args": "-x"}, {"keep_api_keys": "yes"},
                {"api_key_env": "K"}):
        with pytest.raises(ConfigError):
            build_subject({"type": "codex-cli", **bad}, tmp_path)
    with pytest.raises(ConfigError):
        build_subject({"type": "claude-cli", "max_turns": 0}, tmp_path)
    with pytest.raises(ConfigError) as info:
        build_subject({"type": "claude-cli", "env": {"K": "${SURELY_UNSET_VAR_123}"},
                       "binary": sys.executable}, tmp_path).check()
    assert "SURELY_UNSET_VAR_123" in str(info.value)


def test_argv_is_locked_down(tmp_path):
    request = SubjectRequest("c", "-p hi", skill=SKILL)
    argv = build_subject({"type": "claude-cli", "model": "m1", "max_turns": 2}, tmp_path) \
        .command("claude", request, "-p hi", tmp_path)
    for flag in ("--safe-mode", "--strict-mcp-config", "--no-session-persistence", "--disable-slash-commands"):
        assert flag in argv
    assert argv[argv.index("--tools") + 1] == "" and argv[argv.index("--system-prompt") + 1] == SKILL
    assert argv[argv.index("--permission-mode") + 1] == "dontAsk"
    assert argv[-2:] == ["--", "-p hi"] and argv[argv.index("--model") + 1] == "m1"
    argv = build_subject({"type": "codex-cli"}, tmp_path).command("codex", request, "-p hi", tmp_path)
    assert "--ignore-user-config" in argv and argv[-2:] == ["--", "-p hi"]
    assert argv[argv.index("--sandbox") + 1] == "read-only"
    disabled = {argv[i + 1] for i, a in enumerate(argv) if a == "--disable"}
    assert {"shell_tool", "unified_exec", "unbounded_connection_retries"} <= disabled
    overrides = [argv[i + 1] for i, a in enumerate(argv) if a == "-c"]
    assert 'web_search="disabled"' in overrides and "project_doc_max_bytes=0" in overrides
    (instructions,) = [o for o in overrides if o.startswith("developer_instructions=")]
    assert tomllib.loads(instructions)["developer_instructions"] == SKILL


def test_cli_errors_are_classified(tmp_path):
    subject = build_subject({"type": "claude-cli"}, tmp_path)
    cases = {"Not logged in · Please run /login": ("auth", None, False),
             "Invalid API key · Fix external API key (API status 401)": ("auth", 401, False),
             "API Error: 500 Internal server error (API status 500)": ("server-error", 500, False),
             "unexpected status 429 Too Many Requests": ("rate-limit", 429, True),
             "Your credit balance is too low to access the Anthropic API": ("quota", None, True)}
    for detail, (kind, status, stop) in cases.items():
        err = subject.error_of(detail, {"secret"})
        assert (err.kind, err.status, err.stop_run) == (kind, status, stop), detail
        assert str(err).startswith("claude-cli: ")


def test_toml_string_round_trips():
    text = 'quote " backslash \\ tab \t nl \n del \x7f bell \x07 emoji 😀 é'
    assert tomllib.loads("v = " + toml_string(text))["v"] == text
