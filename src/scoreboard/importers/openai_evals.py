"""`scoreboard import openai-evals REGISTRY.yaml --output DIR`: OpenAI Evals registry entries and
their samples JSONL as a scoreboard suite.

Classes converted (evals/elsuite/basic/*.py, evals/elsuite/modelgraded/classify.py):
- Match: the sampled text starts with an ideal answer (a prefix match, not equality);
- Includes: an ideal answer occurs in the sampled text;
- FuzzyMatch: normalised containment either way (scoreboard's fuzzy-match is its port);
- JsonMatch: the sampled text parsed as JSON equals the ideal's (numbers equal across int/float);
- ModelBasedClassify: the judge picks one of the spec's choice_strings, scored by choice_scores.
Every other class is listed as not converted. Each sample: `input` (chat messages or text) and
`ideal` (a text or a list). Nothing is run.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from .common import Report, Source, jsonl, read_config, write_output

_CLASSES = {"Match": "match", "Includes": "includes", "FuzzyMatch": "fuzzy", "JsonMatch": "json",
            "ModelBasedClassify": "classify"}


def _ideals(sample: dict) -> list:
    ideal = sample.get("ideal")
    return ideal if isinstance(ideal, list) else [ideal]


def _graders(kind: str, ideals: list, args: dict, classify: dict | None) -> tuple[list, Any]:
    texts = [i for i in ideals if isinstance(i, str)]
    if kind == "match":
        if len(texts) == 1:
            return [{"starts-with": texts[0]}], texts[0]
        return [{"regex": {"patterns": [r"\A" + re.escape(t) for t in texts], "mode": "any"}}], texts
    if kind == "includes":
        return [{"contains": {"patterns": texts, "mode": "any", "ignore_case": bool(args.get("ignore_case"))}}], texts
    if kind == "fuzzy":
        return [{"fuzzy-match": {"value": texts}}], texts
    if kind == "json":
        return [{"exact": {"fences": False, "numeric_types": False}}], None
    return [{"classify": classify}], texts[0] if len(texts) == 1 else texts


def import_openai_evals(registry: str, out_dir: str, only: str | None = None) -> tuple[Path, Report]:
    """Convert every eval entry (or `only`) of the registry file; write DIR."""
    data, source = read_config(registry)
    if not isinstance(data, dict):
        raise source.error("a registry file is a mapping of entries")
    report = Report(registry)
    cases: list[dict] = []
    judged = False
    names = [only] if only else [n for n, v in data.items() if isinstance(v, dict) and "class" in v]
    if only and only not in data:
        raise source.error(f"no entry {only!r}", only)
    for name in names:
        entry = data[name]
        if not isinstance(entry, dict) or "class" not in entry:
            entry = data.get(str((entry or {}).get("id"))) if isinstance(entry, dict) else None
            if not isinstance(entry, dict):
                raise source.error("an entry names a class (or an id that does)", name)
        cls = str(entry["class"]).rpartition(":")[2]
        kind = _CLASSES.get(cls)
        if kind is None:
            report.skip(name, f"class {entry['class']!r} is not converted")
            continue
        args = entry.get("args") or {}
        classify = _classify(args, source, report, name) if kind == "classify" else None
        if kind == "classify" and classify is None:
            continue
        judged = judged or kind == "classify"
        samples_path = args.get("samples_jsonl")
        if not isinstance(samples_path, str):
            report.skip(name, "no samples_jsonl")
            continue
        cases += _samples(name, kind, args, classify, samples_path, source, report)
    suite: dict[str, Any] = {"name": Path(registry).stem, "cases": "cases.jsonl",
                             "subject": {"type": "openai", "model": "gpt-4o-mini"}}
    report.note("subject: OpenAI Evals names the model at run time (--completion_fn); the suite's subject is "
                "gpt-4o-mini: change `subject:` (or pass --model)")
    if judged:
        suite["judge"] = {"type": "openai", "model": "gpt-4o-mini"}
    report.counts.update({"cases": len(cases)})
    files = {"suite.yaml": yaml.safe_dump(suite, sort_keys=False), "cases.jsonl": jsonl(cases),
             "conversion-report.md": report.text()}
    return write_output(out_dir, files), report


def _classify(args: dict, source: Source, report: Report, name: str) -> dict | None:
    spec_name = args.get("modelgraded_spec")
    if not isinstance(spec_name, str):
        report.skip(name, "ModelBasedClassify without modelgraded_spec")
        return None
    rel = f"modelgraded/{spec_name}.yaml"
    spec = source.read_data(rel, f"{name}.args.modelgraded_spec") if (source.folder / rel).is_file() else None
    if not isinstance(spec, dict) or not isinstance(spec.get(spec_name, spec), dict):
        report.skip(name, f"modelgraded spec {spec_name!r} not found beside the registry (modelgraded/{spec_name}.yaml)")
        return None
    spec = spec.get(spec_name, spec)
    prompt = spec.get("prompt")
    if isinstance(prompt, list):
        prompt = "\n\n".join(str(m.get("content", "")) for m in prompt if isinstance(m, dict))
    raw = spec.get("choice_strings") or []
    choices = list(raw) if isinstance(raw, str) else [str(c) for c in raw]  # "ABCDE" is five choices
    if not isinstance(prompt, str) or len(choices) < 2:
        report.skip(name, "the modelgraded spec needs a prompt and choice_strings")
        return None
    text = re.sub(r"\{(input|completion|ideal)\}", lambda m: {"input": "{{ input }}", "completion": "{{ output }}",
                                                              "ideal": "{{ expected }}"}[m.group(1)], prompt)
    scores = spec.get("choice_scores")
    out: dict = {"prompt": text, "choices": choices}
    if isinstance(scores, dict):
        out["choice_scores"] = {c: float(scores.get(c, 0)) for c in choices}
    return out


def _samples(name: str, kind: str, args: dict, classify: dict | None, rel: str, source: Source,
             report: Report) -> list[dict]:
    from ..safeparse import ParseError, parse_json

    out = []
    for number, line in enumerate(source.read_text(rel, f"{name}.args.samples_jsonl").split("\n"), start=1):
        if not line.strip():
            continue
        try:
            sample = parse_json(line)
        except ParseError as exc:
            raise source.error(exc.message, file=str(source.folder / rel), line=number) from None
        if not isinstance(sample, dict) or "input" not in sample:
            raise source.error("a sample is {input, ideal}", "input", file=str(source.folder / rel), line=number)
        ideals = _ideals(sample)
        if kind != "json" and not all(isinstance(i, str) for i in ideals):
            report.skip(f"{rel}:{number}", "ideal is not text")
            continue
        graders, expected = _graders(kind, ideals, args, classify)
        case: dict[str, Any] = {"id": f"{name}-{number}", "input": sample["input"], "graders": graders,
                                "metadata": {"openai_evals": name}}
        if kind == "json":
            import json

            try:
                parsed = [json.loads(i) if isinstance(i, str) else i for i in ideals]
            except ValueError:
                report.skip(f"{rel}:{number}", "an ideal is not JSON")
                continue
            if len(parsed) > 1:
                case["graders"] = [{"one-of": {"values": parsed}}]
                report.note(f"{rel}:{number}: several JSON ideals: one-of compares them strictly (1 != 1.0)")
            expected = parsed[0]
        if expected is not None:
            case["expected"] = expected
        out.append(case)
    return out
