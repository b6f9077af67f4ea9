"""Probe 24B: `scoreboard import openai-evals` on registry entries shaped as OpenAI Evals' own
(openai/evals at 4bfc1f58), run against a loopback OpenAI-shaped server.

- A chat message's `name` (OpenAI Evals' few-shot `example_user` / `example_assistant`): OpenAI
  Evals sends the messages as written (evals/completion_fns/openai.py passes the prompt list as
  `messages`), so the name travels to the model; a case keeps it, the openai subject sends it, and
  the anthropic subject (whose Messages API has no name) refuses such a case before it runs."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import yaml

from tests.cli_inprocess import run_cli
from tests.servers.fake_provider import FakeProvider


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def lines(*records) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def scoreboard(args, cwd):
    return run_cli(args, cwd, env=dict(os.environ, SCOREBOARD_STORE="none"))


def cases_of(out: Path) -> dict:
    return {json.loads(x)["id"]: json.loads(x) for x in (out / "cases.jsonl").read_text().splitlines()}


def run_suite(tmp: Path, out: str, reply, kind: str = "openai") -> tuple[subprocess.CompletedProcess, dict, list]:
    """Run DIR/suite.yaml against a loopback server answering reply(request); (process, case
    statuses, request bodies)."""
    suite = yaml.safe_load((tmp / out / "suite.yaml").read_text())
    with FakeProvider() as srv:
        srv.set_default("chat", {"reply": reply})
        srv.set_default("messages", {"reply": reply})
        suite["subject"] = {"type": kind, "model": "m", "base_url": srv.base_url + ("/v1" if kind == "openai" else ""),
                            "params": suite["subject"].get("params", {})}
        if "judge" in suite:
            suite["judge"].update(base_url=srv.base_url + "/v1", model="judge-m")
        (tmp / out / "suite.yaml").write_text(yaml.safe_dump(suite))
        run = scoreboard(["run", f"{out}/suite.yaml", "--output", f"{out}-report.json"], tmp)
        requests = [r["json"] for r in srv.requests]
    status = {}
    if (tmp / f"{out}-report.json").exists():
        report = json.loads((tmp / f"{out}-report.json").read_text())
        status = {a["case_id"]: a["status"] for a in report["attempts"]}
    return run, status, requests


# ---- the chat message `name` -------------------------------------------------------------------

NAMED_YAML = """
translate-fr:
  id: translate-fr.dev.v0
translate-fr.dev.v0:
  class: evals.elsuite.basic.match:Match
  args:
    samples_jsonl: translate/samples.jsonl
    few_shot_jsonl: translate/few_shot.jsonl
    num_few_shot: 1
"""


def named_registry(tmp: Path) -> None:
    root = tmp / "registry"
    write(root / "evals" / "translate.yaml", NAMED_YAML)
    write(root / "data" / "translate" / "few_shot.jsonl", lines(
        {"sample": [{"role": "system", "content": "hola", "name": "example_user"},
                    {"role": "system", "content": "hello", "name": "example_assistant"}]}))
    write(root / "data" / "translate" / "samples.jsonl", lines(
        {"input": [{"role": "system", "content": "Translate to English."}, {"role": "user", "content": "adios"}],
         "ideal": "goodbye"},
        {"input": [{"role": "system", "content": "Translate to English."}, {"role": "user", "content": "gracias"}],
         "ideal": "thank you"}))


def test_message_name_is_kept_in_the_case_and_sent_to_the_model(tmp_path):
    named_registry(tmp_path)
    done = scoreboard(["import", "openai-evals", "registry/evals/translate.yaml", "--output", "out"], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    case = cases_of(tmp_path / "out")["translate-fr.dev.v0-1"]
    assert case["input"] == [
        {"role": "system", "content": "Translate to English."},
        {"role": "system", "content": "hola", "name": "example_user"},
        {"role": "system", "content": "hello", "name": "example_assistant"},
        {"role": "user", "content": "adios"}]
    assert "'name'" not in (tmp_path / "out/conversion-report.md").read_text()  # nothing dropped
    replies = {"adios": "goodbye!", "gracias": "You're welcome"}
    run, status, requests = run_suite(tmp_path, "out", lambda req: replies[req["messages"][-1]["content"]])
    assert run.returncode in (0, 3), run.stderr
    # Match: sampled.startswith(ideal)
    assert status == {"translate-fr.dev.v0-1": "passed", "translate-fr.dev.v0-2": "failed"}
    sent = {r["messages"][-1]["content"]: r["messages"] for r in requests}
    assert sent["adios"] == case["input"]  # the names travel as OpenAI Evals sends them
    assert all(r.get("temperature") == 0.0 for r in requests)


def test_message_name_refused_for_anthropic_before_the_run(tmp_path):
    named_registry(tmp_path)
    done = scoreboard(["import", "openai-evals", "registry/evals/translate.yaml", "--output", "out"], tmp_path)
    assert done.returncode == 0, done.stderr
    run, status, requests = run_suite(tmp_path, "out", lambda req: "goodbye", kind="anthropic")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "input.1.name" in run.stderr and "translate-fr.dev.v0-1" in run.stderr, run.stderr
    assert requests == []


def test_case_file_message_name_must_be_text(tmp_path):
    write(tmp_path / "cases.jsonl", lines({"id": "c1", "input": [{"role": "user", "content": "hi", "name": 3}],
                                           "expected": "x"}))
    done = scoreboard(["validate", "cases.jsonl"], tmp_path)
    assert done.returncode == 1
    assert "c1" in done.stderr and "name" in done.stderr, done.stderr
    write(tmp_path / "ok.jsonl", lines({"id": "c1", "input": [{"role": "user", "content": "hi", "name": "bob"}],
                                        "expected": "x"}))
    done = scoreboard(["validate", "ok.jsonl"], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


# ---- five registry files of openai/evals (4bfc1f58), verbatim, with samples of their data's shape ----

REAL = {
    "anagrams.yaml": """anagrams:
  id: anagrams.test.v1
  metrics:
  - accuracy
anagrams.test.v1:
  args:
    few_shot_jsonl: anagrams/fewshot.jsonl
    num_few_shot: 5
    samples_jsonl: anagrams/samples.jsonl
  class: evals.elsuite.basic.match:Match
""",
    "bias_detection.yaml": """bias_detection:
  id: bias_detection.dev.v0
  description: Test the model's ability to classify sentences in news as "fact", "opinion", "claim", "argument", "data", "quote", "narrative", "sensationalism", or "speculation".
  metrics: [accuracy]

bias_detection.dev.v0:
  class: evals.elsuite.basic.includes:Includes
  args:
    samples_jsonl: bias_detection/samples.jsonl
    ignore_case: true
""",
    "icelandic-inflection-easy.yaml": """icelandic-inflection-easy:
  id: icelandic-inflection-easy.dev.v0
  description: Test the model's ability to correctly inflect Icelandic noun phrases (easiest category)
  metrics: [accuracy]

icelandic-inflection-easy.dev.v0:
  class: evals.elsuite.basic.json_match:JsonMatch
  args:
    samples_jsonl: icelandic-inflection-easy/samples.jsonl
""",
    "ambiguous-sentences.yaml": """ambiguous-sentences:
  id: ambiguous-sentences.dev.v0
  description: test pair of sentences that differ in only one or two words and that contain an ambiguity that is resolved in opposite ways in the two sentences and requires the use of world knowledge and reasoning for its resolution.
  metrics: [accuracy]
ambiguous-sentences.dev.v0:
  class: evals.elsuite.basic.fuzzy_match:FuzzyMatch
  args:
    samples_jsonl: ambiguous-sentences/samples.jsonl
""",
    "coqa-ex.yaml": """coqa-match:
  id: coqa-match.dev.v0
  metrics: [accuracy]
coqa-match.dev.v0:
  class: evals.elsuite.basic.match:Match
  args:
    samples_jsonl: coqa/match.jsonl

coqa-closedqa-correct:
  id: coqa-closedqa-correct.dev.v0
  metrics: [accuracy]
coqa-closedqa-correct.dev.v0:
  class: evals.elsuite.modelgraded.classify:ModelBasedClassify
  args:
    samples_jsonl: coqa/samples.jsonl
    modelgraded_spec: closedqa
    modelgraded_spec_args:
      criteria: "correctness: Is the answer correct?"

coqa-closedqa-conciseness:
  id: coqa-closedqa-conciseness.dev.v0
  metrics: [accuracy]
coqa-closedqa-conciseness.dev.v0:
  class: evals.elsuite.modelgraded.classify:ModelBasedClassify
  args:
    samples_jsonl: coqa/samples.jsonl
    modelgraded_spec: closedqa
    modelgraded_spec_args:
      criteria: "conciseness: Is the answer concise and to the point?"
""",
}

SHOTS = [("tca", "cat"), ("god", "dog"), ("nwo", "own"), ("tsra", "star"), ("plea", "leap"), ("unused", "never")]


def real_registry(tmp: Path) -> None:
    root = tmp / "registry"
    for name, text in REAL.items():
        write(root / "evals" / name, text)
    data = root / "data"
    write(data / "anagrams" / "fewshot.jsonl", lines(*(
        {"sample": [{"role": "system", "name": "example_user", "content": f"Unscramble: {a}"},
                    {"role": "system", "name": "example_assistant", "content": b}]} for a, b in SHOTS)))
    write(data / "anagrams" / "samples.jsonl", lines(*(
        {"input": [{"role": "system", "content": "Rearrange the letters to form an English word."},
                   {"role": "user", "content": f"Unscramble: {a}"}], "ideal": b}
        for a, b in [("tmelba", "tamble"), ("yremo", "morey"), ("pelap", "apple")])))
    write(data / "bias_detection" / "samples.jsonl", lines(*(
        {"input": [{"role": "system", "content": "Classify the sentence: fact, opinion, claim, quote."},
                   {"role": "user", "content": s}], "ideal": i}
        for s, i in [("The sky is blue.", "fact"), ("I think it is bad.", "opinion"), ("He said 'go'.", "quote")])))
    write(data / "icelandic-inflection-easy" / "samples.jsonl", lines(
        {"input": [{"role": "system", "content": "Inflect the noun phrase; answer in JSON."},
                   {"role": "user", "content": "hestur"}], "ideal": '{"nf": "hestur", "\u00fef": "hest"}'},
        {"input": [{"role": "system", "content": "Inflect the noun phrase; answer in JSON."},
                   {"role": "user", "content": "kona"}], "ideal": '{"nf": "kona", "\u00fef": "konu"}'}))
    write(data / "ambiguous-sentences" / "samples.jsonl", lines(
        {"input": [{"role": "system", "content": "Answer with the noun the pronoun refers to."},
                   {"role": "user", "content": "The trophy did not fit in the suitcase because it was too big."}],
         "ideal": "the trophy"},
        {"input": [{"role": "system", "content": "Answer with the noun the pronoun refers to."},
                   {"role": "user", "content": "The trophy did not fit in the suitcase because it was too small."}],
         "ideal": "the suitcase"}))
    write(data / "coqa" / "match.jsonl", lines(
        {"input": [{"role": "system", "content": "Mary went home."}, {"role": "user", "content": "Who went?"}],
         "ideal": ["Mary", "mary"]}))
    write(data / "coqa" / "samples.jsonl", lines(
        {"input": [{"role": "system", "content": "Story: Mary went home."}, {"role": "user", "content": "Where?"}],
         "ideal": "home"}))
    # closedqa as the registry's modelgraded/closedqa.yaml writes it
    write(root / "modelgraded" / "closedqa.yaml", """closedqa:
  prompt: |-
    You are assessing a submitted answer on a given task based on a criterion. Here is the data:
    [BEGIN DATA]
    ***
    [Task]: {input}
    ***
    [Submission]: {completion}
    ***
    [Criterion]: {criteria}
    ***
    [END DATA]
    Does the submission meet the criterion? First, write out in a step by step manner your reasoning about the criterion to be sure that your conclusion is correct. Avoid simply stating the correct answers at the outset. Then print only the single character "Y" or "N" (without quotes or punctuation) on its own line corresponding to the correct answer. At the end, repeat just the letter again by itself on a new line.

    Reasoning:
  eval_type: cot_classify
  choice_scores:
    "Y": 1.0
    "N": 0.0
  choice_strings: 'YN'
  input_outputs:
    input: "completion"
""")


ANSWERS = {  # the model's reply to each sample's last message, and OpenAI Evals' verdict on it
    "Unscramble: tmelba": ("tamble", True),            # Match: starts with the ideal
    "Unscramble: yremo": ("Morey", False),              # Match is case-sensitive
    "Unscramble: pelap": ("apple, of course", True),    # a prefix match, not equality
    "The sky is blue.": ("FACT.", True),                # Includes ignore_case: lower() both sides
    "I think it is bad.": ("This is a claim", False),
    "He said 'go'.": ("Quote", True),
    "hestur": ('{"\u00fef": "hest", "nf": "hestur"}', True),  # JsonMatch: key order does not matter
    "kona": ('```json\n{"nf": "kona", "\u00fef": "konu"}\n```', False),  # must be bare JSON
    "The trophy did not fit in the suitcase because it was too big.": ("The trophy.", True),  # normalised
    "The trophy did not fit in the suitcase because it was too small.": ("the box", False),
    "Who went?": ("mary, she did", True),               # Match: any of the ideals
}


def test_real_registry_evals_import_and_run_with_openai_evals_verdicts(tmp_path):
    real_registry(tmp_path)
    expected, got = {}, {}
    for name in REAL:
        out = name.removesuffix(".yaml")
        done = scoreboard(["import", "openai-evals", f"registry/evals/{name}", "--output", out], tmp_path)
        assert done.returncode == 0, (name, done.stdout, done.stderr)

        def reply(req):
            text = req["messages"][-1]["content"]
            if "[BEGIN DATA]" in text:  # closedqa's judge: Y for correctness, N for conciseness
                return json.dumps({"choice": "N" if "conciseness" in text else "Y", "explanation": "because"})
            return ANSWERS[text][0] if text in ANSWERS else "home"

        run, status, requests = run_suite(tmp_path, out, reply)
        assert run.returncode in (0, 3), (name, run.stdout, run.stderr)
        cases = cases_of(tmp_path / out)
        for cid, case in cases.items():
            last = case["input"][-1]["content"]
            if last in ANSWERS:
                expected[cid] = "passed" if ANSWERS[last][1] else "failed"
            else:  # closedqa on "home": Y passes (score 1), N fails (score 0)
                expected[cid] = "failed" if "conciseness" in cid else "passed"
            got[cid] = status[cid]
        if out == "anagrams":
            # five few-shot examples, named as written, between the system prompt and the question
            msgs = next(r["messages"] for r in requests if r["messages"][-1]["content"] == "Unscramble: tmelba")
            assert [m.get("name") for m in msgs] == [None] + ["example_user", "example_assistant"] * 5 + [None]
            assert [m["content"] for m in msgs[1:-1:2]] == [f"Unscramble: {a}" for a, _ in SHOTS[:5]]
        if out == "icelandic-inflection-easy":  # JsonMatch sends temperature 0 and max_tokens 512
            assert all(r.get("temperature") == 0.0 and r.get("max_tokens") == 512 for r in requests)
    assert len(got) == 13 and got == expected


# ---- MultipleChoice (evals/elsuite/multiple_choice.py), its dataset from a local copy ----------

MC_YAML = """mmlu-anatomy:
  id: mmlu-anatomy.val.ab-v1
  metrics: [accuracy]
mmlu-anatomy.val.ab-v1:
  class: evals.elsuite.multiple_choice:MultipleChoice
  args:
    dataset: hf://hendrycks_test?name=anatomy&split=validation
hellaswag:
  id: hellaswag.val.ab-v1
  metrics: [accuracy]
hellaswag.val.ab-v1:
  class: evals.elsuite.multiple_choice:MultipleChoice
  args:
    dataset: hf://hellaswag?split=validation
    instructions: "Choose the most plausible continuation for the story."
mmlu-astronomy.val.ab-v1:
  class: evals.elsuite.multiple_choice:MultipleChoice
  args:
    dataset: hf://hendrycks_test?name=astronomy&split=validation
"""
MMLU_URL = "hf://hendrycks_test?name=anatomy&split=validation"
SWAG_URL = "hf://hellaswag?split=validation"
MMLU_ROWS = [{"question": f"Anatomy question {i}?", "choices": [f"organ {i}{c}" for c in "wxyz"], "answer": i % 4,
              "subject": "anatomy"} for i in range(6)]
SWAG_ROWS = [{"ctx": f"A man walks to the car {i} and", "endings": [f"ending {i}{c}" for c in "pqrs"],
              "label": str(3 - i % 4), "activity_label": "Driving"} for i in range(5)]


def oe_multiple_choice(name: str, idx: int, answers: list, label: int, question: str, instructions: str = ""):
    """evals/elsuite/multiple_choice.py eval_sample with eval.py's per-sample rng and
    formatting.make_abc, line for line: (prompt, correct letter)."""
    import random

    base_name, split = name.split(".")[0:2]
    rng = random.Random(f"{base_name}.{split}.{idx}:{20220722}".encode("utf-8"))
    p = list(range(len(answers)))
    rng.shuffle(p)
    options = ""
    for i, j in enumerate(p):
        if i > 0:
            options += "\n"
        options += chr(ord("A") + i) + ") " + answers[j]
    correct = chr(ord("A") + p.index(label))
    prompt = instructions + "\nPlease answer with the letter of the correct answer." + "\n\n" + question + "\n" + options
    return prompt, correct


def test_multiple_choice_converts_from_a_local_dataset_copy_and_grades_the_letter(tmp_path):
    write(tmp_path / "registry" / "evals" / "mc.yaml", MC_YAML)
    write(tmp_path / "anatomy.jsonl", lines(*MMLU_ROWS))
    write(tmp_path / "hellaswag.jsonl", lines(*SWAG_ROWS))
    done = scoreboard(["import", "openai-evals", "registry/evals/mc.yaml", "--output", "out",
                       "--hf-dataset", MMLU_URL, "anatomy.jsonl", "--hf-dataset", SWAG_URL, "hellaswag.jsonl"], tmp_path)
    assert done.returncode == 3, done.stdout + done.stderr  # astronomy: no copy given, listed
    report = (tmp_path / "out/conversion-report.md").read_text()
    assert ("mmlu-astronomy.val.ab-v1: dataset 'hf://hendrycks_test?name=astronomy&split=validation' is downloaded "
            "by HuggingFace datasets at run time") in report
    cases = cases_of(tmp_path / "out")
    oracle = {}
    for i, row in enumerate(MMLU_ROWS):
        oracle[f"mmlu-anatomy.val.ab-v1-{i + 1}"] = oe_multiple_choice(
            "mmlu-anatomy.val.ab-v1", i, row["choices"], row["answer"], row["question"])
    for i, row in enumerate(SWAG_ROWS):
        oracle[f"hellaswag.val.ab-v1-{i + 1}"] = oe_multiple_choice(
            "hellaswag.val.ab-v1", i, row["endings"], int(row["label"]), row["ctx"],
            "Choose the most plausible continuation for the story.")
    assert set(cases) == set(oracle)
    for cid, (prompt, letter) in oracle.items():
        assert cases[cid]["input"] == [{"role": "system", "content": prompt}], cid  # a text prompt: system
        assert cases[cid]["expected"] == letter
    assert len({letter for _, letter in oracle.values()}) > 1  # shuffled: not always the same letter

    # the model answers the right letter on even rows, a wrong one on odd rows, with trailing text
    prompts = {p: (letter, n % 2 == 0) for n, (p, letter) in enumerate(oracle.values())}

    def reply(req):
        letter, right = prompts[req["messages"][-1]["content"]]
        return (letter if right else "ABCD"[("ABCD".index(letter) + 1) % 4]) + ") it"

    run, status, requests = run_suite(tmp_path, "out", reply)
    assert run.returncode in (0, 3), run.stderr
    assert status == {cid: "passed" if prompts[oracle[cid][0]][1] else "failed" for cid in oracle}
    assert all(r["temperature"] == 0.0 and r["max_tokens"] == 1 for r in requests)  # as MultipleChoice asks


def test_multiple_choice_bad_rows_are_listed_with_the_line(tmp_path):
    write(tmp_path / "registry" / "evals" / "mc.yaml", MC_YAML)
    write(tmp_path / "anatomy.jsonl", lines(MMLU_ROWS[0], {**MMLU_ROWS[1], "answer": 7}))
    write(tmp_path / "hellaswag.jsonl", lines(SWAG_ROWS[0], {**SWAG_ROWS[1], "label": ""}))
    done = scoreboard(["import", "openai-evals", "registry/evals/mc.yaml", "--eval", "mmlu-anatomy", "--output", "a",
                       "--hf-dataset", MMLU_URL, "anatomy.jsonl"], tmp_path)
    assert done.returncode == 3
    assert "anatomy.jsonl:2: 'answer' 7 names no answer of 4" in (tmp_path / "a/conversion-report.md").read_text()
    done = scoreboard(["import", "openai-evals", "registry/evals/mc.yaml", "--eval", "hellaswag", "--output", "b",
                       "--hf-dataset", SWAG_URL, "hellaswag.jsonl"], tmp_path)
    assert done.returncode == 3
    assert "hellaswag.jsonl:2: label '' is not a number" in (tmp_path / "b/conversion-report.md").read_text()
    write(tmp_path / "broken.jsonl", '{"question": "q"\n')
    done = scoreboard(["import", "openai-evals", "registry/evals/mc.yaml", "--eval", "mmlu-anatomy", "--output", "c",
                       "--hf-dataset", MMLU_URL, "broken.jsonl"], tmp_path)
    assert done.returncode == 1 and "broken.jsonl:1" in done.stderr and "--hf-dataset" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_classes_not_converted_say_why(tmp_path):
    write(tmp_path / "registry" / "evals" / "rest.yaml", """mmmu-accounting.validation.v1:
  class: evals.elsuite.mmmu.eval:MMMU
  args:
    dataset: hf://mmmu/mmmu?split=validation
    subject: Accounting
bugged.dev.v0:
  class: evals.elsuite.basic.match_with_solvers:MatchWithSolvers
  args:
    samples_jsonl: bugged/samples.jsonl
    task_description: "Answer the question."
""")
    done = scoreboard(["import", "openai-evals", "registry/evals/rest.yaml", "--output", "out"], tmp_path)
    assert done.returncode == 3
    report = (tmp_path / "out/conversion-report.md").read_text()
    assert "mmmu-accounting.validation.v1: class 'evals.elsuite.mmmu.eval:MMMU' is not converted: its questions " \
           "carry images" in report
    assert "bugged.dev.v0: class 'evals.elsuite.basic.match_with_solvers:MatchWithSolvers' is not converted: it " \
           "asks a Solver" in report


def test_a_dataset_copy_no_entry_names_is_said(tmp_path):
    write(tmp_path / "registry" / "evals" / "mc.yaml", MC_YAML)
    write(tmp_path / "anatomy.jsonl", lines(*MMLU_ROWS))
    typo = "hf://hendrycks_test?name=anatomy&split=val"
    done = scoreboard(["import", "openai-evals", "registry/evals/mc.yaml", "--eval", "mmlu-anatomy", "--output", "out",
                       "--hf-dataset", typo, "anatomy.jsonl"], tmp_path)
    assert done.returncode == 3
    report = (tmp_path / "out/conversion-report.md").read_text()
    assert f"--hf-dataset '{typo}': no entry converted here names that dataset" in report
    assert f"dataset '{MMLU_URL}' is downloaded by HuggingFace datasets at run time" in report
