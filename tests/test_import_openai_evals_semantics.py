"""`scoreboard import openai-evals` against OpenAI Evals' own rules: a registry laid out as OpenAI
Evals lays it out (registry/evals/*.yaml, registry/data/..., registry/modelgraded/*.yaml), run
against a loopback server, every verdict compared with what OpenAI Evals' code decides for the
same output. The oracle below is OpenAI Evals' logic ported line for line (openai/evals at
4bfc1f58: evals/api.py record_and_check_match, evals/elsuite/utils.py get_answer / normalize /
fuzzy_match / format_necessary, evals/elsuite/basic/json_match.py json_match,
evals/elsuite/modelgraded/classify_utils.py, evals/prompt/base.py); the `evals` package itself
needs the network and an API key at import (evals/registry.py builds an OpenAI client)."""

from __future__ import annotations

import json
import os
import re
import string
import subprocess
import sys
from pathlib import Path

import yaml

from tests.servers.fake_provider import FakeProvider

# ---- the oracle: OpenAI Evals' code ------------------------------------------------------------


def oe_match(sampled: str, expected) -> bool:  # evals/api.py record_and_check_match
    expected = expected if isinstance(expected, list) else [expected]
    picked = None
    for option in expected:
        if not sampled.startswith(option):
            continue
        picked = option
        break
    return picked in expected


def oe_get_answer(text, answer_prompt, ignore_case=False):  # evals/elsuite/utils.py
    idx = text.lower().rfind(answer_prompt.lower()) if ignore_case else text.rfind(answer_prompt)
    return None if idx == -1 else text[idx: idx + len(answer_prompt)]


def oe_includes(sampled: str, ideal, ignore_case=False) -> bool:  # evals/elsuite/basic/includes.py
    ideal = ideal if isinstance(ideal, list) else [ideal]
    return any(oe_get_answer(sampled, ref, ignore_case) is not None for ref in ideal)


def oe_normalize(s: str) -> str:  # evals/elsuite/utils.py
    s = s.lower()
    s = "".join(ch for ch in s if ch not in set(string.punctuation))
    s = re.sub(r"\b(a|an|the)\b", " ", s)
    return " ".join(s.split())


def oe_fuzzy(sampled: str, ideal) -> bool:  # evals/elsuite/basic/fuzzy_match.py + utils.fuzzy_match
    ideal = ideal if isinstance(ideal, list) else [ideal]
    out = []
    for ref in ideal:
        a, b = oe_normalize(sampled), oe_normalize(ref)
        out.append(a == b if a == "" or b == "" else (a in b or b in a))
    return True in out


def oe_json_match(s, c) -> bool:  # evals/elsuite/basic/json_match.py
    if s is None or c is None:
        return False
    if isinstance(s, dict):
        return isinstance(c, dict) and all(oe_json_match(s.get(k), c.get(k)) for k in set(s) | set(c))
    if isinstance(s, list):
        return isinstance(c, list) and len(s) == len(c) and all(oe_json_match(x, y) for x, y in zip(s, c))
    return s == c


def oe_json(sampled: str, ideal) -> bool:
    ideal = ideal if isinstance(ideal, list) else [ideal]
    try:
        got = json.loads(sampled)
    except ValueError:
        got = None
    return True in [oe_json_match(got, json.loads(i)) for i in ideal]


def oe_chat_to_text(prompt, for_completion=True):  # evals/prompt/base.py
    prefixes = {"system": "", "example_user": "User: ", "example_assistant": "Assistant: "}
    if len(prompt) == 1:
        return prompt[0]["content"]
    text = ""
    for msg in prompt:
        role = msg["name"] if "name" in msg else msg["role"]
        text += f"{prefixes.get(role, role.capitalize() + ': ')}{msg['content']}\n"
    if for_completion:
        text += prefixes.get("assistant", "Assistant: ").rstrip()
    return text.lstrip()


def oe_judge_prompt(spec: dict, eval_type, sample: dict, completion: str, spec_args: dict) -> str:
    """classify.py eval_sample + classify_utils.classify up to the judge's call, for a text
    prompt and input_outputs {input: completion} (the one message's content)."""
    sample = dict(sample)
    inp = sample["input"]  # scrub_formatting_from_prompt
    if isinstance(inp, list):
        sample["input"] = [dict(m, content=m["content"].replace("{", "{{").replace("}", "}}")) for m in inp]
    else:
        sample["input"] = inp.replace("{", "{{").replace("}", "}}")
    choices = list(spec["choice_strings"])
    content = spec["prompt"]
    if eval_type:
        answers = {"cot_classify": ("First, write out in a step by step manner your reasoning to be sure that "
                                    "your conclusion is correct. Avoid simply stating the correct answer at the "
                                    "outset. Then print only a single choice from {choices} (without quotes or "
                                    "punctuation) on its own line corresponding to the correct answer. At the end, "
                                    "repeat just the answer by itself on a new line.\n\nReasoning:")}
        content += "\n\n" + answers[eval_type].format(choices=" or ".join(f'"{c}"' for c in choices))
    kwargs = {"completion": completion, **sample, **spec_args}
    kwargs = {k: oe_chat_to_text(v, for_completion=False) if isinstance(v, list) and all(
        isinstance(m, dict) for m in v) else v for k, v in kwargs.items()}
    keys = [k[1] for k in string.Formatter().parse(content) if k[1]]
    return content.format(**{k: kwargs[k] for k in keys})


# ---- the registry -------------------------------------------------------------------------------

def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def lines(*records) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


BASIC = """\
# written as OpenAI Evals' own registry/evals/test-basic.yaml is
caps:
  id: caps.s1.simple-v0
  metrics: [accuracy]
caps.s1.simple-v0:
  class: evals.elsuite.basic.match:Match
  args:
    samples_jsonl: caps/samples.jsonl
caps-fewshot:
  id: caps-fewshot.s1.v0
caps-fewshot.s1.v0:
  class: evals.elsuite.basic.match:Match
  args:
    samples_jsonl: caps/chat.jsonl
    few_shot_jsonl: caps/few_shot.jsonl
    num_few_shot: 2
words-includes: words-includes.dev.v0
words-includes.dev.v0:
  class: evals.elsuite.basic.includes:Includes
  args: {samples_jsonl: words/samples.jsonl, ignore_case: true}
words-fuzzy:
  id: words-fuzzy.dev.v0
words-fuzzy.dev.v0:
  class: evals.elsuite.basic.fuzzy_match:FuzzyMatch
  args: {samples_jsonl: words/samples.jsonl, max_tokens: 64}
shapes.dev.v0:
  class: evals.elsuite.basic.json_match:JsonMatch
  args: {samples_jsonl: shapes/samples.jsonl}
elsewhere:
  id: moved.dev.v0
bad-arg.dev.v0:
  class: evals.elsuite.basic.includes:Includes
  args: {samples_jsonl: words/samples.jsonl, num_few_shot: 3}
listed.dev.v0:
  class: evals.elsuite.basic.match:Match
  args: {samples_jsonl: [caps/samples.jsonl]}
"""
OTHER = """\
moved.dev.v0:
  class: evals.elsuite.basic.match:Match
  args: {samples_jsonl: caps/samples.jsonl}
"""
CAPS = [  # (sample, the model's reply)
    ({"input": "Capital of France?", "ideal": "Paris"}, "Paris."),
    ({"input": "Capital of Peru?", "ideal": "Lima"}, " Lima"),  # a leading space: no prefix match
    ({"input": "Capital of Italy?", "ideal": ["Rome", "Roma"]}, "Roma, of course"),
    ({"input": "Anything?", "ideal": ""}, "whatever"),  # every text starts with ""
    ({"input": "Nothing?", "ideal": []}, "nothing"),  # no ideal: never a match
]
WORDS = [
    ({"input": "German street?", "ideal": "STRASSE"}, "Straße"),  # lower(), not casefold: no match
    ({"input": "Say Hello", "ideal": ["hello", "hi"]}, "Well, HELLO there"),
    ({"input": "Say the Cat", "ideal": "the cat!"}, "A cat"),  # fuzzy: articles and punctuation dropped
    ({"input": "Say nothing", "ideal": "the"}, "..."),  # fuzzy: both normalise to "": a match
]
SHAPES = [
    ({"input": "square?", "ideal": '{"sides": 4}'}, '{"sides": 4.0}'),
    ({"input": "flag?", "ideal": '{"on": 1}'}, '{"on": true}'),  # Python: True == 1
    ({"input": "none?", "ideal": '{"a": null}'}, '{"a": null}'),  # a null never matches
    ({"input": "name?", "ideal": '"Paris"'}, "Paris"),  # not JSON
    ({"input": "quoted?", "ideal": '"Paris"'}, '"Paris"'),
    ({"input": "fenced?", "ideal": '[1, 2]'}, '```json\n[1, 2]\n```'),
    ({"input": "either?", "ideal": ['{"x": 1}', '{"x": 2}']}, ' {"x": 2} '),
]


def registry(tmp: Path) -> Path:
    root = tmp / "registry"
    write(root / "evals" / "basic.yaml", BASIC)
    write(root / "evals" / "other.yaml", OTHER)
    write(root / "data" / "caps" / "samples.jsonl", lines(*(s for s, _ in CAPS)))
    write(root / "data" / "caps" / "chat.jsonl", lines(
        {"input": [{"role": "system", "content": "Answer tersely."}, {"role": "user", "content": "Capital of Spain?"}],
         "ideal": "Madrid"}))
    write(root / "data" / "caps" / "few_shot.jsonl", lines(
        {"sample": [{"role": "system", "content": "Capital of Chile?", "name": "example_user"},
                    {"role": "system", "content": "Santiago", "name": "example_assistant"}]},
        {"sample": [{"role": "user", "content": "Capital of Japan?"}, {"role": "assistant", "content": "Tokyo"}]},
        {"sample": [{"role": "user", "content": "never used"}]}))
    write(root / "data" / "words" / "samples.jsonl", lines(*(s for s, _ in WORDS)))
    write(root / "data" / "shapes" / "samples.jsonl", lines(*(s for s, _ in SHAPES)))
    return root


def scoreboard(args, cwd):
    return subprocess.run([sys.executable, "-m", "scoreboard", *args], cwd=cwd, env=dict(os.environ),
                          capture_output=True, text=True, timeout=300, check=False)


def run_converted(tmp: Path, out: str, replies: dict) -> tuple[dict, list]:
    """Run the converted suite against a loopback server replying `replies[last message]`."""
    suite = yaml.safe_load((tmp / out / "suite.yaml").read_text())
    with FakeProvider() as srv:
        srv.set_default("chat", {"reply": lambda req: replies[req["messages"][-1]["content"]]})
        suite["subject"].update(base_url=srv.base_url + "/v1", model="m")
        (tmp / out / "suite.yaml").write_text(yaml.safe_dump(suite))
        run = scoreboard(["run", f"{out}/suite.yaml", "--output", f"{out}-report.json"], tmp)
        requests = [r["json"] for r in srv.requests]
    assert run.returncode in (0, 3), run.stderr
    report = json.loads((tmp / f"{out}-report.json").read_text())
    return {a["case_id"]: a["status"] for a in report["attempts"]}, requests


def test_basic_classes_decide_as_openai_evals_does(tmp_path):
    registry(tmp_path)
    done = scoreboard(["import", "openai-evals", "registry/evals/basic.yaml", "--output", "out"], tmp_path)
    assert done.returncode == 3, done.stderr
    report = (tmp_path / "out/conversion-report.md").read_text()
    # listed, never dropped: an argument the class does not take, a list of sample files
    assert "bad-arg.dev.v0: argument 'num_few_shot' is not one the class takes" in report
    assert "listed.dev.v0: samples_jsonl ['caps/samples.jsonl'] is not a path" in report
    cases = {json.loads(x)["id"]: json.loads(x) for x in (tmp_path / "out/cases.jsonl").read_text().splitlines()}
    # aliases followed (to another file of evals/ too), each entry converted once
    assert {c.rsplit("-", 1)[0] for c in cases} == {"caps.s1.simple-v0", "caps-fewshot.s1.v0",
                                                     "words-includes.dev.v0", "words-fuzzy.dev.v0",
                                                     "shapes.dev.v0", "moved.dev.v0"}
    # a text input is what ChatCompletionPrompt sends: one system message
    assert cases["caps.s1.simple-v0-1"]["input"] == [{"role": "system", "content": "Capital of France?"}]
    # few shot: the first num_few_shot examples between the sample's leading messages and its last
    assert [m["content"] for m in cases["caps-fewshot.s1.v0-1"]["input"]] == [
        "Answer tersely.", "Capital of Chile?", "Santiago", "Capital of Japan?", "Tokyo", "Capital of Spain?"]
    # example_user / example_assistant travel as OpenAI Evals sends them (the message's name kept)
    assert [m.get("name") for m in cases["caps-fewshot.s1.v0-1"]["input"]] == [
        None, "example_user", "example_assistant", None, None, None]
    replies = {s["input"]: reply for s, reply in CAPS + WORDS + SHAPES}
    replies["Capital of Spain?"] = "Madrid"
    status, requests = run_converted(tmp_path, "out", replies)
    oracle = {}
    for i, (s, reply) in enumerate(CAPS, start=1):
        oracle[f"caps.s1.simple-v0-{i}"] = oracle[f"moved.dev.v0-{i}"] = oe_match(reply, s["ideal"])
    for i, (s, reply) in enumerate(WORDS, start=1):
        oracle[f"words-includes.dev.v0-{i}"] = oe_includes(reply, s["ideal"], ignore_case=True)
        oracle[f"words-fuzzy.dev.v0-{i}"] = oe_fuzzy(reply, s["ideal"])
    for i, (s, reply) in enumerate(SHAPES, start=1):
        oracle[f"shapes.dev.v0-{i}"] = oe_json(reply, s["ideal"])
    oracle["caps-fewshot.s1.v0-1"] = True
    assert status == {cid: "passed" if ok else "failed" for cid, ok in oracle.items()}
    # the oracle is not trivially true or false on the cases that tell the rules apart
    assert [oracle[f"caps.s1.simple-v0-{i}"] for i in (2, 4, 5)] == [False, True, False]
    assert [oracle[f"words-includes.dev.v0-{i}"] for i in (1, 2)] == [False, True]
    assert [oracle[f"shapes.dev.v0-{i}"] for i in (1, 2, 3, 4, 5, 7)] == [True, True, False, False, True, True]
    assert all(r.get("temperature") == 0.0 for r in requests)  # Match, FuzzyMatch, JsonMatch all send 0


CLASSIFY = """\
qa.dev.v0:
  class: evals.elsuite.modelgraded.classify:ModelBasedClassify
  args:
    samples_jsonl: qa/samples.jsonl
    eval_type: cot_classify
    modelgraded_spec: closedqa
    modelgraded_spec_args:
      criteria: {correct: "Is it right?"}
facts.dev.v0:
  class: evals.elsuite.modelgraded.classify:ModelBasedClassify
  args: {samples_jsonl: qa/samples.jsonl, modelgraded_spec: mine}
funny.dev.v0:
  class: evals.elsuite.modelgraded.classify:ModelBasedClassify
  args: {samples_jsonl: qa/samples.jsonl, modelgraded_spec: humor_likert}
meta.dev.v0:
  class: evals.elsuite.modelgraded.classify:ModelBasedClassify
  args: {samples_jsonl: qa/samples.jsonl, modelgraded_spec: mine, metaeval: true}
best.dev.v0:
  class: evals.elsuite.modelgraded.classify:ModelBasedClassify
  args: {samples_jsonl: qa/samples.jsonl, modelgraded_spec: best, multicomp_n: 2}
"""
MINE = """\
mine:
  prompt: "Question: {input}\\nExpert: {ideal}\\nAnswer: {completion}\\n{{literal}} {{#not jinja#}} {{% raw %}} {{{{ endraw }}}}"
  choice_strings: [Right, Wrong]
  choice_scores: {Right: 1.0, Wrong: 0.0}
  input_outputs: {input: completion}
"""
QA = [{"input": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Set {x}?"}],
       "ideal": "x is {1}"},
      {"input": "What is {{2}}?", "ideal": ["two", "2"]},
      {"input": "Given one", "ideal": "y", "completion": "already answered"}]


def test_model_graded_prompts_are_the_prompts_openai_evals_sends(tmp_path):
    from scoreboard.importers.openai_evals_specs import FILES
    from scoreboard.templating import render_text

    root = tmp_path / "registry"
    write(root / "evals" / "graded.yaml", CLASSIFY)
    write(root / "modelgraded" / "mine.yaml", MINE)
    write(root / "data" / "qa" / "samples.jsonl", lines(*QA))
    done = scoreboard(["import", "openai-evals", "registry/evals/graded.yaml", "--output", "out"], tmp_path)
    assert done.returncode == 3, done.stderr
    report = (tmp_path / "out/conversion-report.md").read_text()
    assert "meta.dev.v0: metaeval: true" in report and "best.dev.v0: multicomp_n 2" in report
    assert "qa.dev.v0 samples.jsonl:3: the sample gives 'completion'" in report  # listed for each entry
    cases = {json.loads(x)["id"]: json.loads(x) for x in (tmp_path / "out/cases.jsonl").read_text().splitlines()}
    closedqa = yaml.safe_load(FILES["closedqa.yaml"])["closedqa"]
    mine = yaml.safe_load(MINE)["mine"]
    for entry, spec, eval_type, spec_args in (("qa.dev.v0", closedqa, "cot_classify", {"criteria": {"correct": "Is it right?"}}),
                                              ("facts.dev.v0", mine, None, {})):
        for i in (1, 2):
            grader = cases[f"{entry}-{i}"]["graders"][0]["classify"]
            completion = "An {answer} with {{braces}}"
            expected = cases[f"{entry}-{i}"].get("expected")
            shown = render_text(grader["prompt"], {"output": completion, "expected": expected})
            assert shown == oe_judge_prompt(spec, eval_type, QA[i - 1], completion, spec_args)
    qa = cases["qa.dev.v0-1"]["graders"][0]["classify"]
    assert qa["choices"] == ["Y", "N"] and qa["choice_scores"] == {"Y": 1.0, "N": 0.0}
    shown = render_text(qa["prompt"], {"output": "o"})
    # the scrubbed input (braces doubled, as OpenAI Evals shows the judge), the chat rendered as text,
    # the dict argument as Python prints it, the cot_classify answer prompt
    assert "[Task]: Be brief.\nUser: Set {{x}}?\n" in shown and "{'correct': 'Is it right?'}" in shown
    assert shown.endswith('"Y" or "N" (without quotes or punctuation) on its own line corresponding to the correct '
                          'answer. At the end, repeat just the answer by itself on a new line.\n\nReasoning:')
    # from_strings 1-5 scores rescaled into [0, 1], and the report says how
    funny = cases["funny.dev.v0-1"]["graders"][0]["classify"]
    assert funny["choices"] == list("12345") and funny["choice_scores"] == {"1": 0.0, "2": 0.25, "3": 0.5,
                                                                            "4": 0.75, "5": 1.0}
    assert "(score - 1) / 4" in report


def test_registry_errors_are_one_line_and_exit_1(tmp_path):
    root = registry(tmp_path)
    (root / "data" / "words" / "samples.jsonl").write_text(lines(*(s for s, _ in WORDS)) + "\n")
    bad = scoreboard(["import", "openai-evals", "registry/evals/basic.yaml", "--output", "o1"], tmp_path)
    assert bad.returncode == 1
    assert len(bad.stderr.strip().splitlines()) == 1, bad.stderr
    assert "samples.jsonl" in bad.stderr and ":5" in bad.stderr and "blank line" in bad.stderr
    assert "words-includes.dev.v0.args.samples_jsonl" in bad.stderr
    write(root / "evals" / "loop.yaml", "a: b\nb: {id: a}\n")
    loop = scoreboard(["import", "openai-evals", "registry/evals/loop.yaml", "--output", "o2"], tmp_path)
    assert loop.returncode == 1 and "alias cycle a -> b -> a" in loop.stderr
    assert len(loop.stderr.strip().splitlines()) == 1
    write(root / "evals" / "reserved.yaml", "r.dev.v0:\n  class: evals.elsuite.basic.match:Match\n  key: x\n")
    reserved = scoreboard(["import", "openai-evals", "registry/evals/reserved.yaml", "--output", "o3"], tmp_path)
    assert reserved.returncode == 1 and "r.dev.v0.key" in reserved.stderr and "reserved" in reserved.stderr
