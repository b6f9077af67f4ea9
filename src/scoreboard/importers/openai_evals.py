"""`scoreboard import openai-evals REGISTRY.yaml --output DIR`: OpenAI Evals registry entries and
their samples JSONL as a scoreboard suite, with OpenAI Evals' semantics (openai/evals:
evals/registry.py, evals/eval.py, evals/data.py, evals/api.py, evals/elsuite/basic/*.py,
evals/elsuite/modelgraded/*.py, evals/prompt/base.py).

The registry: the file's entries are name -> spec (`class`, `args`) or an alias (a name, or a
mapping with `id`, followed to the end; aliases may name entries of the other files of an
`evals/` folder). `key`, `group` and `cls` are reserved. Data paths (`samples_jsonl`,
`few_shot_jsonl`) resolve as Eval._prefix_registry_path does: the path itself when it is a file,
else `<registry>/data/<path>`, where `<registry>` holds the `evals/` folder the file is in (a file
elsewhere: its own folder, where the path is also tried as is). A samples path may be a folder
(its `*.jsonl` files) or gzipped; every line must be JSON (a blank line stops OpenAI Evals).

Classes converted:
- Match: record_and_check_match: the sampled text starts with an ideal (`num_few_shot` examples
  from `few_shot_jsonl` go before the last input message); temperature 0;
- Includes: utils.get_answer: an ideal occurs in the text (`ignore_case`: both sides lower());
- FuzzyMatch: utils.fuzzy_match either way (scoreboard's fuzzy-match is its port), and its second
  figure, f1_score (utils.f1_score), as the metric `<entry>/f1_score` (an `f1` grader at threshold 0);
  temperature 0, max_tokens (default 100);
- JsonMatch: json_match (openai_evals_grade.py, a python grader named by the suite);
  temperature 0, max_tokens (default 512);
- ModelBasedClassify: openai_evals_classify.py;
- MultipleChoice: openai_evals_mc.py (its hf:// dataset from a local copy, --hf-dataset URL FILE).
An ideal must be a text or a list of texts (the four basic classes stop on anything else); a list
with no ideal never matches. A text input is sent as one system message (ChatCompletionPrompt).
Every other class, argument or sample a case cannot hold (messages out of a chat's order
among them) is listed as not converted; every difference as a note. The cases are written as
OpenAI Evals sends them, the suite's `limits:` raised to what they need (suite_limits.py).
Nothing is run.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from ..errors import ConfigError, shorten
from .common import Report, Source, read_config, write_output
from .openai_evals_classify import CLASSIFY_ARGS, Judge, NotConverted, find_spec, whole_tokens
from .openai_evals_mc import MC_ARGS, MC_CLASS, mc_cases, mc_params
from .openai_evals_registry import Registry, read_samples, read_yaml
from .suite_limits import case_files, limits_note, order_problem

_CLASSES = {"evals.elsuite.basic.match:Match": "match", "evals.elsuite.basic.includes:Includes": "includes",
            "evals.elsuite.basic.fuzzy_match:FuzzyMatch": "fuzzy", "evals.elsuite.basic.json_match:JsonMatch": "json",
            "evals.elsuite.modelgraded.classify:ModelBasedClassify": "classify", MC_CLASS: "mc"}
#: each class's keyword arguments (Eval's own: samples_jsonl, seed); any other is a TypeError there
_ARGS = {"match": {"max_tokens", "num_few_shot", "few_shot_jsonl"}, "includes": {"ignore_case"},
         "fuzzy": {"max_tokens"}, "json": {"max_tokens"}, "classify": CLASSIFY_ARGS,
         "mc": MC_ARGS}
#: why classes the registry uses often are not converted (said beside "is not converted")
_WHY_NOT = {
    "evals.elsuite.mmmu.eval:MMMU": "its questions carry images (the mmmu/mmmu dataset's image_1..image_7, sent "
                                    "as image_url parts) and a case's messages hold text",
    "evals.elsuite.basic.match_with_solvers:MatchWithSolvers": "it asks a Solver (oaieval's --completion_fn names "
                                                               "one of solvers/*.yaml, which builds the prompt "
                                                               "from task_description and the messages its own "
                                                               "way), not a completion of the sample's messages",
}
JSON_GRADER = "python:scoreboard.importers.openai_evals_grade:json_match"
_NEVER = {"regex": {"patterns": ["(?!)"]}}  # an empty list of ideals: OpenAI Evals never matches
_ALWAYS = {"regex": {"patterns": [r"\A"]}}  # an empty ideal: every text starts with / includes it



def import_openai_evals(registry: str, out_dir: str, only: str | None = None,
                        max_file_bytes: int | None = None,
                        hf_datasets: dict[str, str] | None = None) -> tuple[Path, Report]:
    """Convert every eval entry of the registry file (or the one `only` names); write DIR.
    `max_file_bytes` (--max-file-bytes): the largest samples file read (default 16 MiB);
    `hf_datasets` (--hf-dataset URL FILE): local copies of MultipleChoice's hf:// datasets."""
    try:
        data, source = read_config(registry)
    except ConfigError as exc:
        if not exc.detail.startswith("duplicate key"):
            raise
        data, source = None, Source(Path(registry))
    if not registry.lower().endswith(".json"):  # the values as OpenAI Evals reads them (yaml.safe_load)
        data = read_yaml(Path(registry), registry)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise source.error("a registry file is a mapping of entries")
    reg = Registry(Path(registry), data, registry)
    if max_file_bytes is not None:
        reg.max_file_bytes = max_file_bytes
    reg.hf_datasets = dict(hf_datasets or {})
    report = Report(registry)
    if only is not None:
        targets = reg.evals_of_set(only, report) or [reg.resolve(only, only)]
    else:
        targets, seen = [], set()
        for name in reg.own:
            spec = reg.entries[name]
            if isinstance(spec, dict) and "class" in spec and "id" not in spec:
                found = (name, spec)
            elif isinstance(spec, str) or "id" in spec:
                found = reg.resolve(name, name)
            elif reg.evals_of_set(name) is not None:  # an eval set (eval_sets/*.yaml): oaievalset runs each
                for found in reg.evals_of_set(name, report):
                    if found[0] not in seen:
                        seen.add(found[0])
                        targets.append(found)
                continue
            else:
                report.skip(name, "names no class (nor an id): OpenAI Evals cannot run it")
                continue
            if found[0] not in seen:
                seen.add(found[0])
                targets.append(found)
    cases: list[dict] = []
    named_urls = {str((spec.get("args") or {}).get("dataset")) for _, spec in targets
                  if isinstance(spec, dict) and isinstance(spec.get("args"), dict)}
    for url in sorted(set(reg.hf_datasets) - named_urls):  # a typo would otherwise go unnoticed
        report.note(f"--hf-dataset {url!r}: no entry converted here names that dataset (it is written as the "
                    "registry writes it)")
    params: dict[str, dict] = {}
    judge_params: dict[str, dict] = {}
    kinds: set[str] = set()
    for name, spec in targets:
        bad = next((c for c in name if ord(c) < 0x20 or 0x7f <= ord(c) <= 0x9f), None)
        if bad is not None:
            report.skip(repr(name), f"its name holds a control character (U+{ord(bad):04X}): a case id (name-N) "
                                    "cannot")
            continue
        if "class" not in spec:
            report.skip(name, "names no class: OpenAI Evals cannot run it")
            continue
        kind = _CLASSES.get(str(spec["class"]))
        if kind is None:
            why = _WHY_NOT.get(str(spec["class"]))
            report.skip(name, f"class {spec['class']!r} is not converted" + (f": {why}" if why else ""))
            continue
        args = spec.get("args") or {}
        if not isinstance(args, dict):
            raise ConfigError("args is a mapping", file=reg.where[name], field=f"{name}.args")
        try:
            entry_cases, entry_params, entry_judge = _entry(name, kind, args, reg, report)
        except NotConverted as exc:
            report.skip(name, str(exc))
            continue
        if "." not in name:
            report.note(f"{name}: oaieval asks for a <base>.<split> name (Eval name must at least have "
                        f"<base_eval>.<split>); converted as named")
        cases += entry_cases
        params[name] = entry_params
        if entry_judge is not None:
            judge_params[name] = entry_judge
        kinds.add(kind)
    suite: dict[str, Any] = {"name": Path(registry).stem, "cases": "cases.jsonl",
                             "subject": {"type": "openai", "model": "gpt-4o-mini"}}
    report.note("subject: OpenAI Evals names the model at run time (--completion_fn); the suite's subject is "
                "gpt-4o-mini: change `subject:` (or pass --model)")
    chosen = _common_params(params, report, "the model", "subject")
    if chosen:
        suite["subject"]["params"] = chosen
    if "json" in kinds:
        suite["graders"] = [JSON_GRADER]  # the JsonMatch cases name no grader of their own
    if "classify" in kinds:
        suite["judge"] = {"type": "openai", "model": "gpt-4o-mini",
                          "params": _common_params(judge_params, report, "its judge", "judge")}
        report.note("judge: OpenAI Evals' judge is the last --completion_fn; the suite's judge is gpt-4o-mini (change "
                    "`judge:`), asked with the settings OpenAI Evals sends it (max_tokens 1024, temperature 0 and "
                    "PromptFn's others, under eval_kwargs)")
    report.counts.update({"cases": len(cases)})
    case_texts, suite["cases"], limits = case_files(cases)
    if limits:
        suite["limits"] = limits
        report.note(limits_note(limits))
    files = {"suite.yaml": yaml.safe_dump(suite, sort_keys=False, allow_unicode=True), **case_texts,
             "conversion-report.md": report.text()}
    return write_output(out_dir, files), report


def _common_params(params: dict[str, dict], report: Report, asked: str, part: str) -> dict:
    """The request settings every converted entry shares; the most common when they differ."""
    if not params:
        return {}
    counts = Counter(json.dumps(p, sort_keys=True, default=str) for p in params.values())
    chosen = json.loads(counts.most_common(1)[0][0])
    for name, p in params.items():
        if p != chosen:
            report.note(f"{name}: OpenAI Evals asks {asked} with {p or 'the API defaults'}; the suite's {part} "
                        f"has one setting for all cases: {chosen or 'the API defaults'}")
    return chosen


def _entry(name: str, kind: str, args: dict, reg: Registry,
           report: Report) -> tuple[list[dict], dict, dict | None]:
    unknown = sorted(set(args) - _ARGS[kind] - {"samples_jsonl", "seed"})
    if unknown:
        raise NotConverted(f"argument {unknown[0]!r} is not one the class takes (OpenAI Evals raises TypeError)")
    if kind in ("fuzzy", "json"):  # sent with every request (Match keeps its max_tokens unsent)
        whole_tokens(args.get("max_tokens", 100 if kind == "fuzzy" else 512), "max_tokens")
    judge = None
    if kind == "mc":  # its rows come from a HuggingFace dataset, not samples_jsonl
        out = mc_cases(name, args, reg.hf_datasets, reg.max_file_bytes, report)
        for index, case in enumerate(out, start=1):
            case["id"] = f"{name}-{index}"
            case["metadata"] = {"openai_evals": name, "sample": case.pop("_where")}
        return out, mc_params(), None
    if kind == "classify":
        spec_name = args.get("modelgraded_spec")
        if not isinstance(spec_name, str):
            raise NotConverted("ModelBasedClassify without modelgraded_spec")
        folders = [reg.root] + ([reg.folder] if reg.folder != reg.root else [])
        held = Report(report.source)  # the judge's notes: said only when some sample becomes a case
        spec = find_spec(spec_name, folders, lambda p: read_yaml(p, str(p), root=reg.root), held)
        judge = Judge(name, args, spec_name, spec, held)
    rel = args.get("samples_jsonl")
    if rel is None:
        raise NotConverted("no samples_jsonl (OpenAI Evals: To use `get_samples`, you must provide a "
                           "`samples_jsonl` path)")
    if not isinstance(rel, str):
        raise NotConverted(f"samples_jsonl {shorten(repr(rel), 80)} is not a path (OpenAI Evals' basic evals "
                           "read one path)")
    few_shot: list = []
    if kind == "match":
        few_shot = _few_shot(name, args, reg)
    samples = read_samples(name, rel, reg, "samples_jsonl")
    if few_shot:  # every case carries the few-shot messages: a small file can make huge cases
        each = len(json.dumps(few_shot, ensure_ascii=False).encode())
        cap = FEW_SHOT_FACTOR * reg.max_file_bytes
        if each * len(samples) > cap:
            raise NotConverted(f"its {args.get('num_few_shot')} few-shot examples ({each:,} bytes) go into each of "
                               f"{len(samples):,} samples: {each * len(samples):,} bytes of cases, over the "
                               f"{cap:,} one eval may write ({FEW_SHOT_FACTOR} x --max-file-bytes, which raises it)")
    out = []
    for index, (where, sample) in enumerate(samples, start=1):
        try:
            case = _case(name, kind, args, sample, few_shot, judge, report)
        except NotConverted as exc:
            report.skip(f"{name} {where}", str(exc))
            continue
        case["id"] = f"{name}-{index}"
        case["metadata"] = {"openai_evals": name, "sample": where}
        out.append(case)
    if judge is not None and out:
        judge.converted()
        for text in judge.report.notes:
            report.note(text)
    if kind == "fuzzy" and out:
        report.note(f"{name}: OpenAI Evals' FuzzyMatch reports accuracy (here its cases' pass rate) and f1_score "
                    f"(here the metric {name}/f1_score: each case's f1 grader, at threshold 0, never fails it)")
    return out, _params(kind, args, judge), (judge.judge_params() if judge is not None else None)


def _params(kind: str, args: dict, judge: Judge | None) -> dict:
    """What each class sends with its completion (the rest: the API's defaults)."""
    if kind == "match":
        return {"temperature": 0.0}  # Match keeps max_tokens but never sends it
    if kind == "includes":
        return {}
    if kind in ("fuzzy", "json"):
        return {"temperature": 0.0, "max_tokens": args.get("max_tokens", 100 if kind == "fuzzy" else 512)}
    return judge.params() if judge is not None else {}


#: the few-shot messages repeated in every case of an eval may fill at most this many times the
#: largest file the import reads (--max-file-bytes; 1 GiB at the default 16 MiB)
FEW_SHOT_FACTOR = 64


def _few_shot(name: str, args: dict, reg: Registry) -> list:
    n = args.get("num_few_shot", 0)
    if not isinstance(n, int) or isinstance(n, bool):
        raise NotConverted(f"num_few_shot {n!r} is not a number")
    if n <= 0:
        return []
    rel = args.get("few_shot_jsonl")
    if not isinstance(rel, str):
        raise NotConverted("num_few_shot without few_shot_jsonl (OpenAI Evals: few shot requires few shot "
                           "sample dataset)")
    shots = []
    for where, record in read_samples(name, rel, reg, "few_shot_jsonl")[:n]:
        messages = record.get("sample") if isinstance(record, dict) else None
        if not isinstance(messages, list):
            raise NotConverted(f"few-shot record {where} has no 'sample' list of messages")
        shots.extend(messages)
    return shots


def _input(raw: Any, report: Report, name: str) -> Any:
    """The model's prompt as OpenAI Evals' chat completion function sends it."""
    if isinstance(raw, str):
        return [{"role": "system", "content": raw}]  # ChatCompletionPrompt: a text is a system message
    if not isinstance(raw, list) or not raw or not all(isinstance(m, dict) for m in raw):
        raise NotConverted(f"input {shorten(repr(raw), 60)} is neither a text nor chat messages")
    out = []
    for m in raw:
        if m.get("role") not in ("system", "user", "assistant") or not isinstance(m.get("content"), str):
            raise NotConverted(f"a message {shorten(repr(m), 60)} is not a system, user or assistant message with "
                               "text content")
        extra = sorted(set(m) - {"role", "content", "name"})
        if extra:
            raise NotConverted(f"a message has {extra[0]!r}: case messages hold role, content and name")
        if "name" in m and not isinstance(m["name"], str):  # the chat API takes a text
            raise NotConverted(f"a message's name {shorten(repr(m['name']), 40)} is not a text")
        # the name (few-shot examples' example_user / example_assistant) is sent as OpenAI Evals sends it
        out.append({"role": m["role"], "content": m["content"], **({"name": m["name"]} if "name" in m else {})})
    problem = order_problem(out)
    if problem is not None:
        raise NotConverted(f"{problem} (OpenAI Evals sends messages in any order; a case's are a chat's)")
    return out


def _case(name: str, kind: str, args: dict, sample: Any, few_shot: list, judge: Judge | None,
          report: Report) -> dict:
    if not isinstance(sample, dict):
        raise NotConverted("a sample is a JSON object")
    if kind == "classify":
        grader = judge.grader(sample)
        case: dict[str, Any] = {"input": _input(sample[judge.input_key], report, name), "graders": [grader]}
        if "ideal" in sample:
            case["expected"] = sample["ideal"]
        return case
    for need in ("input", "ideal"):
        if need not in sample:
            raise NotConverted(f"the sample has no {need!r} (OpenAI Evals asserts it)")
    ideal = sample["ideal"]
    ideals = ideal if isinstance(ideal, list) else [ideal]
    if not all(isinstance(i, str) for i in ideals):
        raise NotConverted(f"ideal {shorten(repr(ideal), 60)} is not a text or a list of texts")
    prompt = sample["input"]
    if few_shot:
        if not (isinstance(prompt, list) and all(isinstance(m, dict) for m in prompt)):
            raise NotConverted("num_few_shot needs chat messages as input (OpenAI Evals: few shot requires chat "
                               "prompt)")
        prompt = prompt[:-1] + few_shot + prompt[-1:]
    case = {"input": _input(prompt, report, name), "expected": ideal}
    if kind == "json":
        for i in ideals:
            try:
                json.loads(i)
            except ValueError:
                raise NotConverted(f"ideal {shorten(i, 60)!r} is not JSON (OpenAI Evals stops on it)") from None
        return case  # graded by the suite's JsonMatch grader
    if kind == "fuzzy":
        if not ideals:  # utils.f1_score takes max() over the ideals: ValueError
            raise NotConverted("ideal [] (an empty list): OpenAI Evals' FuzzyMatch stops on it (f1_score: max() of "
                               "an empty sequence)")
        # FuzzyMatch records accuracy (the case's verdict) and f1_score (utils.f1_score, the best
        # token F1 over the ideals): the entry's metric <name>/f1_score, its grader never failing the case
        case["graders"] = [{"fuzzy-match": {"value": ideals}},
                           {"f1": {"value": ideals, "threshold": 0}, "metric": f"{name}/f1_score"}]
        return case
    case["graders"] = [_grader(kind, ideals, args)]
    return case


def _grader(kind: str, ideals: list[str], args: dict) -> dict:
    if not ideals:
        return _NEVER
    if "" in ideals:
        return _ALWAYS
    if kind == "match":
        if len(ideals) == 1:
            return {"starts-with": ideals[0]}
        import re

        return {"regex": {"patterns": [r"\A" + re.escape(t) for t in ideals], "mode": "any"}}
    options: dict[str, Any] = {"patterns": ideals, "mode": "any"}
    if args.get("ignore_case"):
        options.update(ignore_case=True, fold="lower")  # get_answer: text.lower().rfind(ideal.lower())
    return {"contains": options}
