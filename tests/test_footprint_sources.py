"""Origin 003's context footprint, the rest: MCP `initialize` responses and paginated
`tools/list` pages recognised (alone, as an array, or as a captured JSON-lines session), a
CLI's output captured by running it, `--output FILE`, and a measurement without the optional
tokenizer (bytes exact, tokens estimated as ceil(characters / 4) and labelled so)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from scoreboard.agents import footprint_sources
from scoreboard.agents.footprint import (
    count_tokens,
    estimate_tokens,
    measure,
    token_counter,
)
from scoreboard.errors import ConfigError
from tests.cli_inprocess import run_cli

SRC = str(Path(__file__).resolve().parents[1] / "src")
INIT = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {"listChanged": True}},
        "serverInfo": {"name": "shop", "version": "1.2.0"}, "instructions": "Use the shop tools."}
PAGE1 = {"tools": [{"name": "search", "description": "Search products", "inputSchema": {"type": "object"}}],
         "nextCursor": "p2"}
PAGE2 = {"tools": [{"name": "save", "description": "Save to the wishlist", "inputSchema": {"type": "object"}}]}


def compact(value) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def session(tmp_path: Path, *results, name: str = "session.jsonl") -> Path:
    lines = [{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}}]  # the client's request: skipped
    lines += [{"jsonrpc": "2.0", "id": i + 1, "result": r} for i, r in enumerate(results)]
    path = tmp_path / name
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def test_a_captured_session_gives_initialize_and_every_tools_page(tmp_path):
    setup = measure([str(session(tmp_path, INIT, PAGE1, PAGE2))])
    init, tools = setup.items
    assert (init.kind, init.bytes, init.tokens) == ("mcp-initialize", len(compact(INIT).encode()),
                                                    count_tokens(compact(INIT)))
    assert init.detail == "MCP initialize: shop 1.2.0, protocol 2025-06-18, instructions 19 characters"
    every = PAGE1["tools"] + PAGE2["tools"]
    assert (tools.kind, tools.tools, tools.bytes) == ("tools", 2, len(compact(every).encode()))
    assert tools.detail.startswith("MCP tools/list: 2 tools in 2 pages")
    # A capture that stops at a page naming a nextCursor says the list is incomplete.
    cut = measure([str(session(tmp_path, INIT, PAGE1, name="cut.jsonl"))]).items[1]
    assert "the last page names a nextCursor: more tools were not captured" in cut.detail


def test_responses_in_a_json_array_and_initialize_alone(tmp_path):
    (tmp_path / "pages.json").write_text(json.dumps([{"jsonrpc": "2.0", "id": 1, "result": PAGE1},
                                                     {"jsonrpc": "2.0", "id": 2, "result": PAGE2}]))
    (item,) = measure([str(tmp_path / "pages.json")]).items
    assert item.kind == "tools" and item.tools == 2
    (tmp_path / "init.json").write_text(json.dumps({"jsonrpc": "2.0", "id": 1, "result": INIT}))
    (item,) = measure([str(tmp_path / "init.json")]).items
    assert item.kind == "mcp-initialize" and item.bytes == len(compact(INIT).encode())
    (tmp_path / "other.json").write_text(json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"content": []}}))
    assert measure([str(tmp_path / "other.json")]).items[0].kind == "cli-output"
    with pytest.raises(ConfigError, match="not tool schemas or MCP answers"):
        measure([f"mcp:{tmp_path / 'other.json'}"])


def test_a_command_is_run_and_its_output_measured(tmp_path):
    code = "print('agent-browser skills get core: ' + 'x' * 37)"
    (item,) = measure([f"run:{sys.executable} -c \"{code}\""]).items
    expected = "agent-browser skills get core: " + "x" * 37 + "\n"
    assert item.kind == "cli-output" and item.path.startswith("$ ") and item.bytes == len(expected.encode())
    assert item.tokens == count_tokens(expected)
    with pytest.raises(ConfigError, match=r"exited with status 3: boom"):
        measure([f"run:{sys.executable} -c \"import sys; sys.stderr.write('boom'); sys.exit(3)\""])
    with pytest.raises(ConfigError, match="did not finish within 0.5 s"):
        measure([f"run:{sys.executable} -c \"import time; time.sleep(30)\""], run_timeout_s=0.5)
    with pytest.raises(ConfigError, match="cannot run 'surely-no-such-program-x'"):
        measure(["run:surely-no-such-program-x --help"])


def test_a_command_printing_without_end_is_stopped(monkeypatch):
    monkeypatch.setattr(footprint_sources, "MAX_OUTPUT_BYTES", 100_000)
    with pytest.raises(ConfigError, match="printed more than 100,000 bytes"):
        measure([f"run:{sys.executable} -c \"import sys\nwhile True: sys.stdout.write('y' * 4096)\""])


def test_the_estimate_is_origin_003s():
    assert estimate_tokens("") == 0 and estimate_tokens("abcd") == 1 and estimate_tokens("abcde") == 2
    assert estimate_tokens("😀😀") == 1  # JavaScript's length: two UTF-16 code units each
    counter = token_counter(approximate=True)
    assert counter.estimated and counter.count("x" * 41) == math.ceil(41 / 4)
    assert "ceil(characters / 4)" in counter.words() and "bytes are exact" in counter.words()


def footprint(cwd: Path, *args, pythonpath: str = SRC) -> subprocess.CompletedProcess:
    """`scoreboard footprint ARGS`: in-process, but in a process of its own where PYTHONPATH is the
    point (what a fresh interpreter can import)."""
    env = {**os.environ, "PYTHONPATH": pythonpath}
    if pythonpath == SRC:
        return run_cli(["footprint", *args], cwd, env)
    return subprocess.run([sys.executable, "-m", "scoreboard", "footprint", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120, check=False)


def test_without_the_optional_tokenizer_bytes_are_exact_and_tokens_labelled(tmp_path):
    # A folder first on the path whose bpe_openai and tiktoken cannot be imported: as if neither
    # optional package were installed.
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    for name in ("bpe_openai", "tiktoken"):
        (blocked / f"{name}.py").write_text("raise ImportError('not installed')\n")
    prompt = tmp_path / "system.txt"
    prompt.write_text("You are a careful assistant. ✓\n", encoding="utf-8")
    path = os.pathsep.join([str(blocked), SRC])
    done = footprint(tmp_path, prompt, session(tmp_path, INIT, PAGE1, PAGE2), "--json", pythonpath=path)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["tokens_estimated"] is True and data["tokenizer"] is None
    assert "no tokenizer" in data["approximate"] and "pip install" in data["approximate"]
    first = data["setups"][0]["items"][0]
    text = prompt.read_text(encoding="utf-8")
    assert first["bytes"] == len(text.encode()) and first["tokens"] == estimate_tokens(text)
    table = footprint(tmp_path, prompt, pythonpath=path)
    assert table.returncode == 0 and "~tokens (estimate)" in table.stdout
    assert "tokens: approximate, estimated as ceil(characters / 4)" in table.stdout


def test_output_file_is_written_once_and_never_overwritten(tmp_path):
    target = tmp_path / "footprint.json"
    done = footprint(tmp_path, "--run", f"{sys.executable} -c \"print('hello')\"", "--output", target)
    assert done.returncode == 0, done.stderr
    assert f"json: {target}" in done.stdout
    data = json.loads(target.read_text())
    assert data["setups"][0]["items"][0]["bytes"] == len("hello\n")
    before = target.read_bytes()
    again = footprint(tmp_path, "--run", f"{sys.executable} -c \"print('other')\"", "--output", target)
    assert again.returncode == 1 and target.read_bytes() == before
    bad = footprint(tmp_path, "--run", f"{sys.executable} -c \"import sys; sys.exit(2)\"")
    assert bad.returncode == 1 and "exited with status 2" in bad.stderr and "Traceback" not in bad.stderr
