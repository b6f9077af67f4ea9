"""The README's examples run as printed.

Convention (also in README.md, "Development"):

- ``<!-- runnable -->`` on the line immediately before a ```` ```bash ```` fence marks that block
  runnable. ``<!-- runnable exit=N -->`` says the block is meant to end with exit code N (an
  example of a failing gate); without it the block must exit 0.
- ``<!-- file: PATH -->`` on the line immediately before any fence says the block *is* the file
  PATH (relative to the repository root): it is written there before any block runs, so the
  commands read exactly what the README shows. When PATH is also committed in the repository,
  the block must equal the committed file.
- A fence with no language (or ``text``) that follows a runnable block with only blank lines
  between is that block's expected output. Each of its nonblank lines must match a line of the
  output (stdout and stderr merged), in order; the output may hold other lines between them, so
  the README may show an excerpt. Within a line, ``...`` or ``…`` matches any text, and a run
  stamp (``20261130T043840Z``, ``...Z-2``) or an ISO time matches any other; the temporary
  copy's absolute path is removed from the output first. Everything else must match exactly
  (trailing spaces aside): numbers, words and indentation.

Every runnable block runs in README order, in one temporary copy of the repository (so files one
block writes are there for the next, and no output lands in the checkout), with
``bash -e -o pipefail``, ``scoreboard`` on PATH, and no network: ``OPENAI_BASE_URL`` and
``ANTHROPIC_BASE_URL`` point at a loopback fake provider (tests/servers/) that answers the
invoice examples with examples/invoices/extractors.py's careful extractor, and the key
variables hold placeholders. A failure names the README line of the block.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.servers.fake_provider import FakeProvider, extract_prompt

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"

RUNNABLE = re.compile(r"^<!--\s*runnable(?:\s+exit=(\d+))?\s*-->\s*$")
FILE = re.compile(r"^<!--\s*file:\s*(\S+)\s*-->\s*$")
FENCE = re.compile(r"^(`{3,}|~{3,})\s*([\w+-]*)\s*$")
OUTPUT_LANGS = ("", "text")
WILDCARD = re.compile(r"\.\.\.|…|\d{8}T\d{6}Z(?:-\d+)?|\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z")
IGNORED = (".git", ".venv", ".agent-clis", "eval-results", "node_modules", "__pycache__", ".pytest_cache",
           ".ruff_cache", ".scoreboard-cache", "*.egg-info")


@dataclass
class Block:
    """One fenced block of a Markdown text."""

    lang: str
    text: str
    line: int  # 1-based line of the opening fence
    end: int  # 1-based line of the closing fence
    runnable: bool = False
    exit_code: int = 0
    path: str | None = None
    expected: Block | None = None

    @property
    def where(self) -> str:
        return f"README.md:{self.line}"


def parse_blocks(text: str) -> list[Block]:
    """Every fenced block with its marker (the line just above the fence), expected outputs
    attached to the runnable block they follow."""
    lines = text.split("\n")
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, lang = m.group(1), m.group(2)
        j = i + 1
        while j < len(lines) and not (lines[j].startswith(fence[0] * len(fence)) and not lines[j].strip(fence[0]).strip()):
            j += 1
        block = Block(lang, "\n".join(lines[i + 1:j]) + "\n", i + 1, j + 1)
        above = lines[i - 1].strip() if i > 0 else ""
        if (r := RUNNABLE.match(above)) and lang == "bash":
            block.runnable, block.exit_code = True, int(r.group(1) or 0)
        elif f := FILE.match(above):
            block.path = f.group(1)
        previous = blocks[-1] if blocks else None
        if previous is not None and previous.runnable and lang in OUTPUT_LANGS and not above.startswith("<!--") \
                and all(not line.strip() for line in lines[previous.end:i]):
            previous.expected = block
        else:
            blocks.append(block)
        i = j + 1
    return blocks


def line_pattern(expected: str) -> re.Pattern:
    """A README output line as a pattern: wildcards for `...`, `…`, run stamps and ISO times."""
    parts, pos = [], 0
    for m in WILDCARD.finditer(expected):
        parts.append(re.escape(expected[pos:m.start()]))
        token = m.group(0)
        if token in ("...", "…"):
            parts.append(".*")
        elif "T" in token and "-" in token[:5]:
            parts.append(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z")
        else:
            parts.append(r"\d{8}T\d{6}Z(?:-\d+)?")
        pos = m.end()
    parts.append(re.escape(expected[pos:]))
    return re.compile("".join(parts))


def output_mismatch(expected: str, actual: str, root: str | None = None) -> str | None:
    """None when every nonblank expected line matches an output line, in order; else the first
    expected line that found no match."""
    if root:
        actual = actual.replace(root + os.sep, "").replace(root, ".")
    got = [line.rstrip() for line in actual.split("\n")]
    pos = 0
    for want in (line.rstrip() for line in expected.split("\n")):
        if not want.strip():
            continue
        pattern = line_pattern(want)
        while pos < len(got) and not pattern.fullmatch(got[pos]):
            pos += 1
        if pos == len(got):
            return f"expected line not found (in order): {want!r}"
        pos += 1
    return None


# ---- the mechanism itself ------------------------------------------------------------------

SAMPLE = """\
<!-- file: data/x.txt -->
```
hello
```

<!-- runnable -->
```bash
cat data/x.txt
```

```
hello
```

```bash
echo not runnable
```

<!-- runnable exit=3 -->
```bash
exit 3
```
"""


def test_blocks_are_parsed_with_their_markers_and_expected_output():
    blocks = parse_blocks(SAMPLE)
    assert [(b.line, b.runnable, b.path, b.exit_code) for b in blocks] == [
        (2, False, "data/x.txt", 0), (7, True, None, 0), (15, False, None, 0), (20, True, None, 3)]
    assert blocks[1].expected is not None and blocks[1].expected.text == "hello\n"
    assert blocks[1].text == "cat data/x.txt\n"
    assert blocks[3].expected is None


def test_expected_output_matching_is_ordered_and_tolerant_only_of_stamps_paths_and_ellipses():
    out = ("noise\ninvoices: completed (20261201T030514Z-2)\n  basic: pass rate 53.3% (48/90)\n"
           "  json: /tmp/copy/eval-results/invoices/20261201T030514Z.json\n")
    ok = "invoices: completed (20261130T043840Z)\n  basic: pass rate 53.3% (48/90)\n" \
         "  json: eval-results/invoices/20261130T043840Z.json\n"
    assert output_mismatch(ok, out, "/tmp/copy") is None
    assert output_mismatch("  basic: pass rate ... (48/90)\n", out) is None
    assert "53.4%" in output_mismatch("  basic: pass rate 53.4% (48/90)\n", out)
    # order matters: a line shown after another must come after it
    assert output_mismatch("  basic: pass rate 53.3% (48/90)\ninvoices: completed (20261130T043840Z)\n", out)
    # indentation is part of the output
    assert output_mismatch("basic: pass rate 53.3% (48/90)\n", out)


# ---- the README ----------------------------------------------------------------------------

def _careful_extractor():
    spec = importlib.util.spec_from_file_location("readme_extractors", ROOT / "examples/invoices/extractors.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.careful


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """A copy of the repository, a `scoreboard` command, a fake provider, the environment."""
    base = tmp_path_factory.mktemp("readme")
    copy = base / "repo"
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns(*IGNORED), symlinks=True)
    blocks = parse_blocks(README.read_text(encoding="utf-8"))
    for block in blocks:
        if block.path is None:
            continue
        committed = ROOT / block.path
        if committed.exists():
            assert committed.read_text(encoding="utf-8") == block.text, \
                f"{block.where}: the block shown as {block.path} differs from the committed file"
        target = copy / block.path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(block.text, encoding="utf-8")
    bindir = base / "bin"
    bindir.mkdir()
    shim = bindir / "scoreboard"
    shim.write_text(f'#!/bin/sh\nPYTHONPATH="{ROOT / "src"}" exec "{sys.executable}" -m scoreboard "$@"\n')
    shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
    # `python` as in an activated virtual environment: the one with scoreboard's dependencies
    python = bindir / "python"
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    careful = _careful_extractor()

    def reply(request: dict) -> str:
        return json.dumps(careful(extract_prompt(request)), ensure_ascii=False)

    with FakeProvider(reply=reply) as server:
        env = {k: v for k, v in os.environ.items()
               if k not in ("GITHUB_STEP_SUMMARY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL")}
        env.update({"PATH": f"{bindir}{os.pathsep}{env.get('PATH', '')}",
                    "OPENAI_BASE_URL": f"{server.base_url}/v1", "ANTHROPIC_BASE_URL": server.base_url,
                    "OPENAI_API_KEY": "sk-readme-placeholder-key", "ANTHROPIC_API_KEY": "sk-ant-readme-placeholder",
                    "NO_COLOR": "1",
                    # example scripts find the Python with scoreboard's dependencies in ./.venv,
                    # which the copy leaves out: they are given the test's own
                    "PYTHON": sys.executable})
        yield copy, env, server


def _runnable() -> list[Block]:
    return [b for b in parse_blocks(README.read_text(encoding="utf-8")) if b.runnable]


def test_the_readme_has_runnable_examples():
    blocks = _runnable()
    assert len(blocks) >= 4
    assert any(b.expected is not None for b in blocks)


@pytest.mark.slow
@pytest.mark.parametrize("block", _runnable(), ids=lambda b: b.where)
def test_readme_block_runs_as_printed(block: Block, workspace):
    copy, env, _ = workspace
    done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", block.text], cwd=copy, env=env, check=False,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    tail = done.stdout[-3000:]
    assert done.returncode == block.exit_code, \
        f"{block.where}: exit {done.returncode}, expected {block.exit_code}\n{block.text}\n--- output:\n{tail}"
    if block.expected is not None:
        problem = output_mismatch(block.expected.text, done.stdout, str(copy))
        assert problem is None, f"{block.where}: {problem} (expected output at README.md:" \
                                f"{block.expected.line})\n--- output:\n{tail}"
