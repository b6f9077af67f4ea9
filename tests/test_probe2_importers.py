"""Second probe of the importers from outside: real promptfoo shapes (its own examples/ folder)
whose conversion differed from what promptfoo does, each test naming the promptfoo source it
follows (promptfoo 0.121: src/prompts/processors/*.ts, src/csv.ts, util/config/load.ts)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from scoreboard.importers.promptfoo import import_promptfoo


def _pf(tmp_path: Path, config: str, files: dict[str, str] | None = None, **kw) -> tuple[list[dict], object]:
    for rel, text in (files or {}).items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    (tmp_path / "promptfooconfig.yaml").write_text(config)
    out, report = import_promptfoo(str(tmp_path / "promptfooconfig.yaml"), str(tmp_path / "out"), **kw)
    cases = [json.loads(line) for line in (out / "cases.jsonl").read_text().splitlines()]
    return cases, report


def _suite(tmp_path: Path) -> dict:
    return yaml.safe_load((tmp_path / "out" / "suite.yaml").read_text())


# ---- prompts from files (src/prompts/index.ts processPrompt, by extension)

def test_csv_prompt_file_is_a_prompt_per_row_named_by_label(tmp_path):
    # examples/csv-prompts: processCsvPrompts reads the `prompt` column, the `label` names it
    csv_text = 'prompt,label\n"Tell me about {{topic}}","Basic Query"\n"Poem on {{topic}}",Poetry\n'
    _, report = _pf(tmp_path, "prompts: [file://prompts.csv]\nproviders: [echo]\ntests: [{vars: {topic: x}}]\n",
                    {"prompts.csv": csv_text})
    assert _suite(tmp_path)["prompts"] == {"Basic Query": "Tell me about {{ (topic) | js }}",
                                           "Poetry": "Poem on {{ (topic) | js }}"}
    assert not report.left_out


def test_csv_prompt_file_without_commas_is_a_prompt_per_line(tmp_path):
    _pf(tmp_path, "prompts: [file://p.csv]\nproviders: [echo]\n", {"p.csv": "prompt\nHi {{a}}\n\nBye {{a}}\n"})
    assert list(_suite(tmp_path)["prompts"].values()) == ["Hi {{ (a) | js }}", "Bye {{ (a) | js }}"]


def test_jsonl_prompt_file_is_a_chat_prompt_per_line(tmp_path):
    lines = ('[{"role": "system", "content": "Be brief"}, {"role": "user", "content": "{{q}}"}]\n'
             '[{"role": "user", "content": "Say {{q}}"}]\n')
    _pf(tmp_path, "prompts: [file://chats.jsonl]\nproviders: [echo]\n", {"chats.jsonl": lines})
    prompts = _suite(tmp_path)["prompts"]
    assert list(prompts.values()) == [
        [{"role": "system", "content": "Be brief"}, {"role": "user", "content": "{{ (q) | js }}"}],
        [{"role": "user", "content": "Say {{ (q) | js }}"}]]


@pytest.mark.parametrize("prompt, files", [
    ("file://make_prompt.sh", {"make_prompt.sh": "#!/bin/sh\necho hi\n"}),
    ("file://notes.prompt", {"notes.prompt": "not a kind of file promptfoo reads"}),
    ("'exec:./make_prompt.sh'", {"make_prompt.sh": "#!/bin/sh\necho hi\n"}),
])
def test_script_or_unknown_prompt_file_is_listed_not_sent_as_text(tmp_path, prompt, files):
    # processPrompt: scripts are run (processExecutableFile); other extensions give no prompt
    _, report = _pf(tmp_path, f"prompts: [{prompt}, 'plain {{{{x}}}}']\nproviders: [echo]\n", files)
    assert "echo hi" not in (tmp_path / "out" / "suite.yaml").read_text()
    assert _suite(tmp_path)["prompt"] == "plain {{ (x) | js }}"
    assert any(item.startswith("prompts.0") for item in report.left_out)


def test_prompt_config_is_listed_not_dropped(tmp_path):
    # examples/f-score: a prompt's own `config` (response_format) changes what the provider is sent
    _, report = _pf(tmp_path, "prompts: [{raw: 'Rate {{t}}', label: r, config: {response_format: {type: json_object}}}]\n"
                              "providers: [echo]\n")
    assert any(item.startswith("prompts.0.config") for item in report.left_out)
