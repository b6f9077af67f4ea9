"""Probe 16: `scoreboard import openai-evals` on real OpenAI Evals registry entries the earlier
probes did not take (openai/evals at 4bfc1f58, evals/registry/evals/*.yaml, copied verbatim
below; their data files are Git LFS objects, so the samples are written here in their shape), the
converted suite run against a loopback server on fixed replies, and every figure compared with
what OpenAI Evals' own code returns on the same replies. The reference functions are OpenAI
Evals' code ported verbatim (the file each comes from is named); the `evals` package itself
builds an OpenAI client at import and cannot be imported offline."""

from __future__ import annotations

import json
import os
import re
import shutil
import string
import subprocess
from collections import Counter
from pathlib import Path

import yaml

from tests.cli_inprocess import run_cli
from tests.servers.fake_provider import FakeProvider

# ---- the reference: OpenAI Evals' code ---------------------------------------------------------


def normalize(s: str) -> str:  # evals/elsuite/utils.py
    """Lower text and remove punctuation, articles and extra whitespace."""
    s = s.lower()
    exclude = set(string.punctuation)
    s = "".join(char for char in s if char not in exclude)
    s = re.sub(r"\b(a|an|the)\b", " ", s)
    s = " ".join(s.split())
    return s


def fuzzy_match(s1: str, s2: str) -> bool:  # evals/elsuite/utils.py
    s1 = normalize(s1)
    s2 = normalize(s2)

    if s1 == "" or s2 == "":
        return s1 == s2

    return s1 in s2 or s2 in s1


def f1_score(prediction: str, answers: list[str]) -> float:  # evals/elsuite/utils.py
    def _f1_score(prediction: str, ground_truth: str):
        prediction_tokens = normalize(prediction).split()
        ground_truth_tokens = normalize(ground_truth).split()
        common = Counter(prediction_tokens) & Counter(ground_truth_tokens)
        num_same = sum(common.values())
        if num_same == 0:
            return 0
        precision = 1.0 * num_same / len(prediction_tokens)
        recall = 1.0 * num_same / len(ground_truth_tokens)
        f1 = (2 * precision * recall) / (precision + recall)
        return f1

    return max([_f1_score(prediction, answer) for answer in answers])


def fuzzy_match_eval(samples_and_replies) -> dict:
    """evals/elsuite/basic/fuzzy_match.py FuzzyMatch.eval_sample and run: the metrics it reports."""
    accuracy, f1 = [], []
    for test_sample, sampled in samples_and_replies:
        correct_answers = test_sample["ideal"]
        if not isinstance(correct_answers, list):
            correct_answers = [correct_answers]
        matches = [fuzzy_match(sampled, correct_answer) for correct_answer in correct_answers]
        accuracy.append(float(True in matches))
        f1.append(f1_score(sampled, correct_answers))
    return {"accuracy": sum(accuracy) / len(accuracy), "f1_score": sum(f1) / len(f1),
            "per_sample": accuracy}


# ---- running the importer and the converted suite ----------------------------------------------


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def lines(*records) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def scoreboard(args, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, SCOREBOARD_STORE="none", OPENAI_API_KEY="test-key")
    return run_cli(args, cwd, env)


def convert(tmp: Path, registry_file: str) -> tuple[str, dict]:
    done = scoreboard(["import", "openai-evals", f"registry/evals/{registry_file}", "--output", "out"], tmp)
    assert done.returncode in (0, 3), done.stderr
    cases = {json.loads(x)["id"]: json.loads(x) for x in (tmp / "out/cases.jsonl").read_text().splitlines()}
    return (tmp / "out/conversion-report.md").read_text(), cases


def run_converted(tmp: Path, replies: dict) -> dict:
    """Run out/suite.yaml against a loopback server replying `replies[last message]`."""
    suite = yaml.safe_load((tmp / "out/suite.yaml").read_text())
    with FakeProvider() as srv:
        srv.set_default("chat", {"reply": lambda req: replies[req["messages"][-1]["content"]]})
        suite["subject"].update(base_url=srv.base_url + "/v1", model="m")
        (tmp / "out/suite.yaml").write_text(yaml.safe_dump(suite))
        run = scoreboard(["run", "out/suite.yaml", "--output", "report.json"], tmp)
    assert run.returncode in (0, 3), run.stderr
    return json.loads((tmp / "report.json").read_text())


# ---- FuzzyMatch: accuracy and f1_score ---------------------------------------------------------

# evals/registry/evals/largest_country.yaml and logic-grid-eval.yaml, verbatim (descriptions cut)
FUZZY = """\
largest_country:
  id: largest_country.dev.v0
  description: Determining the largest country by the area from the list
  metrics: [accuracy]

largest_country.dev.v0:
  class: evals.elsuite.basic.fuzzy_match:FuzzyMatch
  args:
    samples_jsonl: largest_country/samples.jsonl
logic-grid:
  id: logic-grid.dev.v0
  metrics: [accuracy]
logic-grid.dev.v0:
  class: evals.elsuite.basic.fuzzy_match:FuzzyMatch
  args:
    samples_jsonl: logic-grid/logic-grid.jsonl
    max_tokens: 3072
"""
COUNTRIES = [  # (sample, the model's reply)
    ({"input": [{"role": "system", "content": "Which is the largest? Russia, Peru, Chad"}], "ideal": "Russia"},
     "The largest is Russia."),
    ({"input": [{"role": "system", "content": "Which is the largest? Brazil, Chad"}], "ideal": ["Brazil"]},
     "Chad, then Brazil"),
    ({"input": [{"role": "system", "content": "Which is the largest? Chad, Niger"}], "ideal": "Chad"},
     "Niger"),
    ({"input": "Which is the largest? Canada, the United States",
      "ideal": ["Canada", "the Dominion of Canada"]}, "It is the Dominion of Canada, by area"),
]
GRIDS = [
    ({"input": [{"role": "system", "content": "Solve: who owns the fish?"},
                {"role": "user", "content": "Answer with the name."}], "ideal": "The German"}, "german"),
    ({"input": [{"role": "system", "content": "Solve: who drinks water?"},
                {"role": "user", "content": "Answer with the nationality."}], "ideal": "Norwegian"},
     "the norwegian drinks water, the dane drinks tea"),
    ({"input": "Solve: the third house?", "ideal": "red"}, "..."),
]


def test_fuzzy_match_reports_accuracy_and_f1_score_as_openai_evals_does(tmp_path):
    write(tmp_path / "registry/evals/fuzzy.yaml", FUZZY)
    write(tmp_path / "registry/data/largest_country/samples.jsonl", lines(*(s for s, _ in COUNTRIES)))
    write(tmp_path / "registry/data/logic-grid/logic-grid.jsonl", lines(*(s for s, _ in GRIDS)))
    report_md, cases = convert(tmp_path, "fuzzy.yaml")
    assert "(here the metric largest_country.dev.v0/f1_score" in report_md  # where OpenAI Evals' figure went
    replies = {}
    for sample, reply in COUNTRIES + GRIDS:
        prompt = sample["input"]
        replies[prompt if isinstance(prompt, str) else prompt[-1]["content"]] = reply
    report = run_converted(tmp_path, replies)
    status = {a["case_id"]: a["status"] for a in report["attempts"]}
    for entry, pairs in (("largest_country.dev.v0", COUNTRIES), ("logic-grid.dev.v0", GRIDS)):
        ref = fuzzy_match_eval(pairs)
        for i, ok in enumerate(ref["per_sample"], start=1):
            assert status[f"{entry}-{i}"] == ("passed" if ok else "failed"), (entry, i)
        # the metric f1_score over the entry's cases is OpenAI Evals' f1_score (the mean over samples)
        f1s = [a["metrics"][f"{entry}/f1_score"] for a in report["attempts"]
               if a["case_id"].startswith(entry + "-")]
        assert abs(sum(f1s) / len(f1s) - ref["f1_score"]) < 1e-9, (entry, f1s, ref)
        # and it is a figure that tells the samples apart: neither all 0 nor all 1
        assert 0 < ref["f1_score"] < 1 and 0 < ref["accuracy"] < 1
        # each entry's own figure, as OpenAI Evals reports one per eval
        variant = report["summary"]["variants"]["m"]
        assert abs(variant["metrics"][f"{entry}/f1_score"]["value"] - ref["f1_score"]) < 1e-9


def test_fuzzy_match_with_no_ideal_is_listed_not_a_case_that_fails(tmp_path):
    write(tmp_path / "registry/evals/fuzzy.yaml", FUZZY)
    write(tmp_path / "registry/data/largest_country/samples.jsonl", lines(
        {"input": "Which is the largest? Chad, Niger", "ideal": []}, COUNTRIES[0][0]))
    write(tmp_path / "registry/data/logic-grid/logic-grid.jsonl", lines(GRIDS[0][0]))
    report_md, cases = convert(tmp_path, "fuzzy.yaml")
    # FuzzyMatch.eval_sample: f1_score(sampled, []) is max() of nothing: OpenAI Evals stops on it
    try:
        f1_score("anything", [])
        raise AssertionError("the reference no longer stops on an empty ideal")
    except ValueError:
        pass
    assert "largest_country.dev.v0 samples.jsonl:1: ideal []" in report_md
    assert sorted(cases) == ["largest_country.dev.v0-2", "logic-grid.dev.v0-1"]


# ---- ModelBasedClassify: the score OpenAI Evals reports ------------------------------------------

INVALID_STR = "__invalid__"  # evals/elsuite/modelgraded/classify_utils.py
MATCH_FNS = {"starts_or_endswith": lambda x, y: x.startswith(y) or x.endswith(y)}


def get_choice(text: str, eval_type: str, match_fn, choice_strings) -> str:  # classify_utils.py
    """Clean the answer string to a choice string to one of choice_strings. Return '__invalid__.' if no match."""
    if isinstance(match_fn, str):
        match_fn = MATCH_FNS[match_fn]
    lines = text.strip().split("\n")
    if eval_type.startswith("cot_classify"):
        lines = lines[::-1]  # reverse lines
    for line in lines:
        line = line.strip()
        line = "".join(c for c in line if c not in string.punctuation)
        if not line:
            continue
        for choice in choice_strings:
            if match_fn(line, choice):
                return choice
    return INVALID_STR


def get_choice_score(choice: str, choice_strings, choice_scores=None):  # classify_utils.py
    if choice_scores is None:
        return None
    if choice_scores == "from_strings":
        choice_scores = {c: float(c) for c in choice_strings}
    # assumption: each INVALID_STR contributes the lowest score
    if choice == INVALID_STR:
        return min(choice_scores.values())
    return choice_scores[choice]


def classify_score(choice_strings, choice_scores, eval_type, judge_texts) -> float:
    """ModelBasedClassify.run: `score`, the mean of the samples' choice scores."""
    scores = [get_choice_score(get_choice(t, eval_type, "starts_or_endswith", choice_strings), choice_strings,
                               choice_scores) for t in judge_texts]
    return sum(scores) / len(scores)


# evals/registry/evals/japanese_onomatopoeia.yaml and research-question-extraction.yaml, verbatim
# (the description cut); their specs are OpenAI Evals' built-in onomatopoeia.yaml (A..F scored 1.0
# down to 0.0) and research-question-extraction.yaml (1..5, from_strings)
GRADED = """\
japanese_onomatopoeia:
  id: japanese_onomatopoeia.dev.v0
  metrics: [accuracy]

japanese_onomatopoeia.dev.v0:
  class: evals.elsuite.modelgraded.classify:ModelBasedClassify
  args:
    samples_jsonl: Japanese_onomatopoeia/samples.jsonl
    eval_type: cot_classify
    modelgraded_spec: onomatopoeia
research-question-extraction:
  id: research-question-extraction.dev.v0
  metrics:
    - accuracy

research-question-extraction.dev.v0:
  class: evals.elsuite.modelgraded.classify:ModelBasedClassify
  args:
    samples_jsonl: research-question-extraction/research-question-extraction-samples.jsonl
    eval_type: cot_classify
    modelgraded_spec: research-question-extraction
"""
#: (sample, the model's answer, the judge's pick)
ONOMATOPOEIA = [({"input": [{"role": "user", "content": f"Onomatopoeia {i}?"}], "ideal": f"sound {i}"},
                 f"ANSWER-O{i}", pick) for i, pick in enumerate("ABCDFC", start=1)]
QUESTIONS = [({"input": [{"role": "user", "content": f"Abstract {i}"}]}, f"ANSWER-Q{i}", pick)
             for i, pick in enumerate("15342", start=1)]


def test_model_graded_score_is_the_figure_openai_evals_reports(tmp_path):
    write(tmp_path / "registry/evals/graded.yaml", GRADED)
    write(tmp_path / "registry/data/Japanese_onomatopoeia/samples.jsonl", lines(*(s for s, _, _ in ONOMATOPOEIA)))
    write(tmp_path / "registry/data/research-question-extraction/research-question-extraction-samples.jsonl",
          lines(*(s for s, _, _ in QUESTIONS)))
    report_md, cases = convert(tmp_path, "graded.yaml")
    assert "metric japanese_onomatopoeia.dev.v0/score" in report_md
    answers = {s["input"][-1]["content"]: answer for s, answer, _ in ONOMATOPOEIA + QUESTIONS}
    picks = {answer: pick for _, answer, pick in ONOMATOPOEIA + QUESTIONS}

    def reply(req):
        text = json.dumps(req["messages"])
        judged = [a for a in picks if a in text]
        if judged:  # the judge, asked about one answer: scoreboard's schema
            return json.dumps({"choice": picks[judged[0]], "explanation": "because"})
        return answers[req["messages"][-1]["content"]]

    suite = yaml.safe_load((tmp_path / "out/suite.yaml").read_text())
    with FakeProvider() as srv:
        srv.set_default("chat", {"reply": reply})
        for part in ("subject", "judge"):
            suite[part].update(base_url=srv.base_url + "/v1", model="m")
        (tmp_path / "out/suite.yaml").write_text(yaml.safe_dump(suite))
        run = scoreboard(["run", "out/suite.yaml", "--output", "report.json"], tmp_path)
    assert run.returncode in (0, 3), run.stderr
    figures = json.loads((tmp_path / "report.json").read_text())["summary"]["variants"]["m"]["metrics"]
    # OpenAI Evals' score on the same picks (its judge writing its reasoning, then the choice)
    onomatopoeia = classify_score("ABCDEF", {"A": 1.0, "B": 0.8, "C": 0.6, "D": 0.4, "E": 0.2, "F": 0.0},
                                  "cot_classify", [f"Reasoning...\n{p}" for _, _, p in ONOMATOPOEIA])
    assert abs(onomatopoeia - 3.4 / 6) < 1e-9  # (1 + .8 + .6 + .4 + 0 + .6) / 6
    assert abs(figures["japanese_onomatopoeia.dev.v0/score"]["value"] - onomatopoeia) < 1e-9
    questions = classify_score("12345", "from_strings", "cot_classify", [f"So:\n{p}" for _, _, p in QUESTIONS])
    assert questions == 3.0
    # from_strings 1..5 is rescaled into 0..1, as the conversion report says: 1 + s * 4
    assert "1 + s * 4" in report_md
    assert abs(1 + figures["research-question-extraction.dev.v0/score"]["value"] * 4 - questions) < 1e-9


def prompt_fn_request(max_tokens, temperature=0, n_samples=None, completion_kwargs=None) -> dict:
    """What evals/elsuite/utils.py PromptFn(prompt, completion_fn, **kwargs)() sends with the prompt;
    ModelBasedClassify asks its judge through it with eval_kwargs ({"max_tokens": 1024} updated
    by the entry's) in classify_utils.classify."""
    return dict(max_tokens=max_tokens, temperature=temperature, top_p=1, frequency_penalty=0, presence_penalty=0,
                n=(1 if n_samples is None else n_samples), **(completion_kwargs or {}))


JUDGED = """\
plain.dev.v0:
  class: evals.elsuite.modelgraded.classify:ModelBasedClassify
  args:
    samples_jsonl: Japanese_onomatopoeia/samples.jsonl
    eval_type: cot_classify
    modelgraded_spec: onomatopoeia
"""


def test_the_judge_is_asked_with_the_settings_openai_evals_asks_it_with(tmp_path):
    write(tmp_path / "registry/evals/judged.yaml", JUDGED)
    write(tmp_path / "registry/data/Japanese_onomatopoeia/samples.jsonl", lines(*(s for s, _, _ in ONOMATOPOEIA[:2])))
    report_md, _ = convert(tmp_path, "judged.yaml")
    answers = {s["input"][-1]["content"]: answer for s, answer, _ in ONOMATOPOEIA}
    picks = {answer: pick for _, answer, pick in ONOMATOPOEIA}

    def reply(req):
        judged = [a for a in picks if a in json.dumps(req["messages"])]
        if judged:
            return json.dumps({"choice": picks[judged[0]], "explanation": "because"})
        return answers[req["messages"][-1]["content"]]

    suite = yaml.safe_load((tmp_path / "out/suite.yaml").read_text())
    with FakeProvider() as srv:
        srv.set_default("chat", {"reply": reply})
        for part in ("subject", "judge"):
            suite[part].update(base_url=srv.base_url + "/v1", model="m")
        (tmp_path / "out/suite.yaml").write_text(yaml.safe_dump(suite))
        run = scoreboard(["run", "out/suite.yaml", "--output", "report.json"], tmp_path)
        requests = [r["json"] for r in srv.requests]
    assert run.returncode in (0, 3), run.stderr
    judge = [r for r in requests if any(a in json.dumps(r["messages"]) for a in picks)]
    assert len(judge) == 2
    want = prompt_fn_request(max_tokens=1024)
    want.pop("n")  # one completion: the API's default
    for r in judge:
        assert {k: r.get(k) for k in want} == want, r



def test_eval_kwargs_reach_the_judge_and_one_no_request_can_carry_is_listed(tmp_path):
    entries = JUDGED + """\
warm.dev.v0:
  class: evals.elsuite.modelgraded.classify:ModelBasedClassify
  args:
    samples_jsonl: Japanese_onomatopoeia/samples.jsonl
    eval_type: cot_classify
    modelgraded_spec: onomatopoeia
    eval_kwargs: {temperature: 0.5, max_tokens: 300, completion_kwargs: {seed: 7}}
warm2.dev.v0:
  class: evals.elsuite.modelgraded.classify:ModelBasedClassify
  args:
    samples_jsonl: Japanese_onomatopoeia/samples.jsonl
    eval_type: cot_classify
    modelgraded_spec: onomatopoeia
    eval_kwargs: {temperature: 0.5, max_tokens: 300, completion_kwargs: {seed: 7}}
broken.dev.v0:
  class: evals.elsuite.modelgraded.classify:ModelBasedClassify
  args:
    samples_jsonl: Japanese_onomatopoeia/samples.jsonl
    eval_type: cot_classify
    modelgraded_spec: onomatopoeia
    eval_kwargs: {max_tokens: 0}
"""
    write(tmp_path / "registry/evals/judged.yaml", entries)
    write(tmp_path / "registry/data/Japanese_onomatopoeia/samples.jsonl", lines(ONOMATOPOEIA[0][0]))
    report_md, cases = convert(tmp_path, "judged.yaml")
    judge = yaml.safe_load((tmp_path / "out/suite.yaml").read_text())["judge"]
    want = prompt_fn_request(max_tokens=300, temperature=0.5, completion_kwargs={"seed": 7})
    want.pop("n")
    assert judge["params"] == want  # the setting two of the three converted entries share
    assert "plain.dev.v0: OpenAI Evals asks its judge with" in report_md  # the other one's, said
    assert "broken.dev.v0: eval_kwargs.max_tokens 0 is not a whole number" in report_md
    assert not any(c.startswith("broken.") for c in cases)
    assert "broken.dev.v0: OpenAI Evals reports score" not in report_md  # no note for what was not converted


# ---- the registry file read as OpenAI Evals reads it ---------------------------------------------

def get_answer(text, answer_prompt, ignore_case=False):  # evals/elsuite/utils.py
    if ignore_case:
        idx = text.lower().rfind(answer_prompt.lower())
    else:
        idx = text.rfind(answer_prompt)

    if idx == -1:
        return None
    return text[idx : idx + len(answer_prompt)]


# YAML 1.1 booleans, as a registry written by hand has them: evals/registry.py reads every file
# with yaml.safe_load (`_load_file`), where an unquoted off / no is False
YAML11 = """\
words.dev.v0:
  class: evals.elsuite.basic.includes:Includes
  args:
    samples_jsonl: words/samples.jsonl
    ignore_case: off
words-ci.dev.v0:
  class: evals.elsuite.basic.includes:Includes
  args: {samples_jsonl: words/samples.jsonl, ignore_case: on}
"""
YAML11_GRADED = """\
graded.dev.v0:
  class: evals.elsuite.modelgraded.classify:ModelBasedClassify
  args:
    samples_jsonl: words/samples.jsonl
    eval_type: cot_classify
    modelgraded_spec: closedqa
    modelgraded_spec_args: {criteria: "correct?"}
    metaeval: no
"""
WORDS = [({"input": "Say Hello", "ideal": "hello"}, "HELLO there"), ({"input": "Say hi", "ideal": "hi"}, "hi!")]


def test_registry_values_are_read_as_openai_evals_reads_them(tmp_path):
    write(tmp_path / "registry/evals/graded.yaml", YAML11_GRADED)
    write(tmp_path / "registry/data/words/samples.jsonl", lines(*(s for s, _ in WORDS)))
    report_md, cases = convert(tmp_path, "graded.yaml")
    assert yaml.safe_load(YAML11_GRADED)["graded.dev.v0"]["args"]["metaeval"] is False  # OpenAI Evals' reading
    # metaeval: no is no metaeval: the entry converts
    assert "graded.dev.v0: metaeval" not in report_md and "graded.dev.v0-1" in cases
    write(tmp_path / "registry/evals/graded.yaml", "")
    shutil.rmtree(tmp_path / "out")
    write(tmp_path / "registry/evals/words.yaml", YAML11)
    report_md, cases = convert(tmp_path, "words.yaml")
    args = yaml.safe_load(YAML11)
    assert args["words.dev.v0"]["args"]["ignore_case"] is False
    report = run_converted(tmp_path, {s["input"]: reply for s, reply in WORDS})
    status = {a["case_id"]: a["status"] for a in report["attempts"] if a["case_id"].startswith("words")}
    want = {}
    for entry in ("words.dev.v0", "words-ci.dev.v0"):
        for i, (sample, reply) in enumerate(WORDS, start=1):
            found = get_answer(reply, sample["ideal"], args[entry]["args"]["ignore_case"]) is not None
            want[f"{entry}-{i}"] = "passed" if found else "failed"
    assert want["words.dev.v0-1"] == "failed" and want["words-ci.dev.v0-1"] == "passed"
    assert status == want
