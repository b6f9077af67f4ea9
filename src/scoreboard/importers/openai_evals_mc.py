"""OpenAI Evals' MultipleChoice (openai/evals: evals/elsuite/multiple_choice.py, evals/formatting.py
make_abc, evals/eval.py eval_all_samples) as scoreboard cases, for `import openai-evals`.

Its `dataset` is a HuggingFace URL (`hf://hendrycks_test?name=anatomy&split=validation`) that
`datasets.load_dataset` downloads at run time; nothing is downloaded here: the rows come from a
local copy the user names (`--hf-dataset URL FILE`, a JSONL file as `Dataset.to_json` writes it).
Each row becomes the prompt MultipleChoice sends: `instructions`, "\\nPlease answer with the letter
of the correct answer.\\n\\n", the question, a newline and the answers as `A) ...` lines, shuffled
by make_abc with the sample's own `random.Random(f"{base}.{split}.{idx}:{seed}")` (seed: oaieval's
--seed, 20220722 unless given); the text goes to the chat model as one system message, with
temperature 0 and max_tokens 1, and passes when the reply starts with the correct letter
(record_and_check_match)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

from ..errors import ConfigError, shorten
from ..safefile import FileRefused, not_utf8
from .common import parse_json_line, refusal
from .openai_evals_classify import NotConverted

MC_CLASS = "evals.elsuite.multiple_choice:MultipleChoice"
MC_ARGS = {"dataset", "instructions"}
#: oaieval's --seed default; its --seed replaces a `seed` the registry's args give (make_object's partial)
OAIEVAL_SEED = 20220722
#: the dataset columns get_dataset reads: question, answers, label
_COLUMNS = {"hellaswag": ("ctx", "endings", "label"), "hendrycks_test": ("question", "choices", "answer")}


def mc_params() -> dict:
    return {"temperature": 0.0, "max_tokens": 1}


def mc_cases(name: str, args: dict, datasets: dict[str, str], max_bytes: int, report: Any) -> list[dict]:
    """The cases of one MultipleChoice entry (each with its `input`, `expected` and grader)."""
    url = args.get("dataset")
    if not isinstance(url, str):
        raise NotConverted("MultipleChoice without a dataset URL (it takes one: dataset: hf://...)")
    instructions = args.get("instructions", "")
    if not isinstance(instructions, str):
        raise NotConverted(f"instructions {shorten(repr(instructions), 60)} is not a text (OpenAI Evals adds it to "
                           "a text: TypeError)")
    parsed = urlparse(url)
    if parsed.scheme != "hf" or parsed.netloc not in _COLUMNS:
        raise NotConverted(f"dataset {shorten(url, 80)!r}: OpenAI Evals reads only hf://hellaswag and "
                           "hf://hendrycks_test (ValueError: Unknown question dataset)")
    if url not in datasets:
        query = {k: v[0] for k, v in parse_qs(parsed.query).items()}
        raise NotConverted(f"dataset {url!r} is downloaded by HuggingFace datasets at run time "
                           f"(load_dataset({parsed.netloc!r}, **{query!r})); give a local copy: --hf-dataset "
                           f"'{url}' FILE.jsonl")
    if "seed" in args:
        report.note(f"{name}: args.seed {args['seed']!r} is replaced by oaieval's --seed (default {OAIEVAL_SEED}), "
                    "as oaieval passes it; the choices are shuffled with that")
    question, answers, label = _COLUMNS[parsed.netloc]
    base, split = name.split(".")[0:2] if "." in name else (name, "")
    out = []
    for idx, (where, row) in enumerate(_rows(datasets[url], max_bytes)):
        if not isinstance(row, dict) or any(k not in row for k in (question, answers, label)):
            raise NotConverted(f"{where}: a row has no {question!r}, {answers!r} and {label!r} (OpenAI Evals' "
                               f"get_dataset stops on it)")
        q, a, correct = row[question], row[answers], _label(row[label], parsed.netloc == "hellaswag", where)
        if not isinstance(q, str) or not isinstance(a, list) or not all(isinstance(x, str) for x in a):
            raise NotConverted(f"{where}: {question!r} is not a text or {answers!r} not a list of texts (OpenAI "
                               "Evals' Sample refuses it)")
        if not 0 <= correct < len(a):
            raise NotConverted(f"{where}: {label!r} {correct} names no answer of {len(a)} (make_abc: ValueError)")
        rng = random.Random(f"{base}.{split}.{idx}:{OAIEVAL_SEED}".encode("utf-8"))
        options, letter = make_abc(a, correct, rng)
        prompt = (instructions + "\nPlease answer with the letter of the correct answer." + "\n\n" + q + "\n"
                  + options)
        out.append({"input": [{"role": "system", "content": prompt}], "expected": letter,
                    "graders": [{"starts-with": letter}], "_where": where})
    if out:
        report.note(f"{name}: MultipleChoice's dataset {url!r} read from {datasets[url]} (the local copy given); "
                    "OpenAI Evals downloads it at run time")
    return out


def make_abc(answers: list[str], correct_idx: int, rng: random.Random) -> tuple[str, str]:
    """evals/formatting.py make_abc (shuffle=True): the answers as `A) ...` lines in a shuffled
    order, and the correct answer's letter."""
    p = list(range(len(answers)))
    rng.shuffle(p)
    options = ""
    for i, j in enumerate(p):
        if i > 0:
            options += "\n"
        options += chr(ord("A") + i) + ") " + answers[j]
    return options, chr(ord("A") + p.index(correct_idx))


def _label(value: Any, hellaswag: bool, where: str) -> int:
    """The label as get_dataset and Sample(label: int) read it: hellaswag's through int()."""
    if hellaswag and isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            raise NotConverted(f"{where}: label {shorten(value, 40)!r} is not a number (OpenAI Evals' int() "
                               "stops on it; hellaswag's test split has no labels)") from None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise NotConverted(f"{where}: label {shorten(repr(value), 40)} is not a whole number")


def _rows(file: str, max_bytes: int) -> list[tuple[str, Any]]:
    from ..safefile import read_regular

    shown = file
    try:
        raw = read_regular(file, limit=max_bytes, limit_name="--max-file-bytes")
        text = raw.decode("utf-8-sig")
    except FileRefused as exc:
        raise ConfigError(f"file {refusal(exc)}", file=shown, field="--hf-dataset") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(not_utf8(raw, exc.start), file=shown, field="--hf-dataset") from None
    except OSError as exc:
        raise ConfigError(f"cannot read it: {exc.strerror or exc}", file=shown, field="--hf-dataset") from None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    out = []
    for number, line in enumerate(lines, start=1):
        try:
            out.append((f"{Path(file).name}:{number}", parse_json_line(line.rstrip("\r"))))
        except ValueError as exc:
            raise ConfigError(f"{exc} (a dataset copy is JSONL: one row on every line)", file=shown, line=number,
                              field="--hf-dataset") from None
    return out
