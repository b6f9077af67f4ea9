"""`scoreboard import openai-evals` on shapes real OpenAI Evals registries hold (openai/evals at
4bfc1f58, evals/registry/): every suite it writes must load as written, whatever size or shape
its samples have, and a ModelBasedClassify judge prompt keeps the sample's text exactly.
Small inline copies of the shapes that broke; no network, no snapshot."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scoreboard.importers.openai_evals import import_openai_evals
from scoreboard.suite.load import load_suite
from scoreboard.templating import render_text

MATCH = "evals.elsuite.basic.match:Match"


def _registry(tmp_path: Path, entries: dict, samples: dict[str, list]) -> Path:
    (tmp_path / "registry" / "evals").mkdir(parents=True)
    (tmp_path / "registry" / "data").mkdir()
    for rel, records in samples.items():
        path = tmp_path / "registry" / "data" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    reg = tmp_path / "registry" / "evals" / "x.yaml"
    reg.write_text(json.dumps(entries), encoding="utf-8")
    return reg


def _import(tmp_path: Path, reg: Path):
    out, report = import_openai_evals(str(reg), str(tmp_path / "out"))
    return out, report, load_suite(out / "suite.yaml", offline=True)


def test_long_chat_messages_load_as_written(tmp_path):
    # A reading-comprehension sample: a long passage in the user message, a long system prompt,
    # and many few-shot turns; OpenAI Evals sends them as they are.
    passage = "The quick brown fox jumps over the lazy dog. " * 120  # 5,400 characters
    messages = [{"role": "system", "content": "Read carefully. " * 4000}]  # 64,000 characters
    for i in range(25):
        messages += [{"role": "user", "content": f"Q{i}: {passage}"}, {"role": "assistant", "content": "A" * 30000}]
    messages.append({"role": "user", "content": passage + " What jumps?"})
    reg = _registry(tmp_path, {"long.dev.v0": {"class": MATCH, "args": {"samples_jsonl": "long/s.jsonl"}}},
                    {"long/s.jsonl": [{"input": messages, "ideal": "fox"},
                                      {"input": [{"role": "user", "content": "short"}], "ideal": "x"}]})
    out, report, suite = _import(tmp_path, reg)
    assert [c.id for c in suite.cases] == ["long.dev.v0-1", "long.dev.v0-2"]
    assert suite.cases[0].input == messages
    assert not report.left_out
    # the suite raises only what these cases need, and says so
    assert "limits" in (out / "conversion-report.md").read_text(encoding="utf-8")


def test_large_input_and_many_cases_load_as_written(tmp_path):
    big = "x" * (1024 * 1024 + 10)  # over the default limits.max_input_bytes
    records = [{"input": big, "ideal": "x"}] + [{"input": f"q{i}" + "y" * 600, "ideal": "y"} for i in range(28000)]
    reg = _registry(tmp_path, {"big.dev.v0": {"class": MATCH, "args": {"samples_jsonl": "big"}}},
                    {"big/a.jsonl": records[:14000], "big/b.jsonl": records[14000:]})
    out, report, suite = _import(tmp_path, reg)
    assert len(suite.cases) == 28001
    assert suite.cases[0].input == [{"role": "system", "content": big}]
    # every file it wrote is under the default file limit (the cases are split into parts)
    assert all(p.stat().st_size <= 16 * 1024 * 1024 for p in out.iterdir())


def test_small_import_writes_no_limits(tmp_path):
    reg = _registry(tmp_path, {"s.dev.v0": {"class": MATCH, "args": {"samples_jsonl": "s.jsonl"}}},
                    {"s.jsonl": [{"input": "q", "ideal": "a"}]})
    out, _, suite = _import(tmp_path, reg)
    text = (out / "suite.yaml").read_text(encoding="utf-8")
    assert "limits" not in text and "cases: cases.jsonl" in text
    assert len(suite.cases) == 1


def test_message_order_a_case_cannot_hold_is_listed_not_written(tmp_path):
    # OpenAI Evals sends any order; a case's messages are a chat's (system first, a user message
    # before an assistant's): such a sample is listed as not converted, the rest load.
    reg = _registry(tmp_path, {"o.dev.v0": {"class": MATCH, "args": {"samples_jsonl": "o.jsonl"}}},
                    {"o.jsonl": [{"input": [{"role": "user", "content": "u"}, {"role": "system", "content": "s"}],
                                  "ideal": "a"},
                                 {"input": [{"role": "system", "content": "s"}, {"role": "assistant", "content": "a"}],
                                  "ideal": "a"},
                                 {"input": "fine", "ideal": "a"}]})
    _, report, suite = _import(tmp_path, reg)
    assert [c.id for c in suite.cases] == ["o.dev.v0-3"]
    assert len(report.left_out) == 2
    assert all("o.jsonl:" in item and "message" in item for item in report.left_out)


@pytest.mark.parametrize("text", ["line one\r\nline two", "old mac\rline", "tail\r"])
def test_classify_judge_prompt_keeps_carriage_returns(tmp_path, text):
    # ModelBasedClassify fills the spec's prompt with str.format: the sample's text as it is.
    spec = "q:\n  prompt: \"Q: {input}\\nIdeal: {ideal}\\nNote: {note}\\nA: {completion}\"\n" \
           "  choice_strings: [Y, N]\n  choice_scores: {Y: 1.0, N: 0.0}\n  input_outputs: {input: completion}\n"
    reg = _registry(tmp_path, {"c.dev.v0": {"class": "evals.elsuite.modelgraded.classify:ModelBasedClassify",
                                            "args": {"samples_jsonl": "c.jsonl", "modelgraded_spec": "q"}}},
                    {"c.jsonl": [{"input": text, "ideal": text, "note": text}]})
    (tmp_path / "registry" / "modelgraded").mkdir()
    (tmp_path / "registry" / "modelgraded" / "q.yaml").write_text(spec, encoding="utf-8")
    _, _, suite = _import(tmp_path, reg)
    case = suite.cases[0]
    prompt = case.graders[0]["classify"]["prompt"] if isinstance(case.graders[0], dict) else None
    if prompt is None:
        prompt = json.loads((tmp_path / "out" / "cases.jsonl").read_text(encoding="utf-8"))["graders"][0][
            "classify"]["prompt"]
    got = render_text(prompt, {"output": "out\r\nput", "expected": case.expected})
    assert got == f"Q: {text}\nIdeal: {text}\nNote: {text}\nA: out\r\nput"


def test_samples_file_over_16_mib_names_the_flag_that_reads_it(tmp_path, capsys):
    # openai/evals' registry holds Match samples files of 85 and 170 MB (formal_logic, diabetes):
    # the refusal names the flag that reads them, and with it the suite loads.
    from scoreboard.cli.main import main

    line = json.dumps({"input": [{"role": "user", "content": "p" * 4000}], "ideal": "x"}) + "\n"
    count = 17 * 1024 * 1024 // len(line) + 1
    reg = _registry(tmp_path, {"big.dev.v0": {"class": MATCH, "args": {"samples_jsonl": "big.jsonl"}}}, {})
    (tmp_path / "registry" / "data" / "big.jsonl").write_text(line * count, encoding="utf-8")
    out = tmp_path / "out"
    assert main(["import", "openai-evals", str(reg), "--output", str(out)]) == 1
    err = capsys.readouterr().err
    assert "big.jsonl" in err and "--max-file-bytes" in err and "limits.max_file_bytes" not in err
    assert not out.exists() or not any(out.iterdir())
    assert main(["import", "openai-evals", str(reg), "--output", str(out), "--max-file-bytes", "40000000"]) == 0
    suite = load_suite(out / "suite.yaml", offline=True)
    assert len(suite.cases) == count
    assert all(p.stat().st_size <= 16 * 1024 * 1024 for p in out.iterdir())


def test_nothing_converted_does_not_say_run_it(tmp_path, capsys):
    # a registry of custom classes only (openai/evals' mmmu.yaml, bluff.yaml, ...): the suite
    # written has no case, which `run` refuses, so the last line does not offer it
    from scoreboard.cli.main import main

    reg = _registry(tmp_path, {"b.dev.v0": {"class": "evals.elsuite.bluff.eval:BluffEval", "args": {}}}, {})
    assert main(["import", "openai-evals", str(reg), "--output", str(tmp_path / "out")]) == 3
    out = capsys.readouterr().out
    assert "run it with" not in out and "no case was converted" in out
