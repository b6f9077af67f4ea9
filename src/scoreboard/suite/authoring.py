"""Suites as people write them (issue 14): the suite `defaults:` every case starts from, list
vars expanded into cases, the prompt axis crossed with the variants, and each case's input
rendered through its variants' prompt templates (suite/templates.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..cases import budget
from ..cases.case import Case
from ..errors import Collector, ConfigError, shorten
from ..graders.base import Grader
from ..validation import first_repeat, lookalike, twin_problem
from .config import SuiteConfig
from .paths import Places
from .suite import Variant


def unique_name(name: str, taken: set[str]) -> str:
    """`name`, or `name-2`, `name-3`... when taken; the result is marked taken."""
    base, n = name, 2
    while name in taken:
        name, n = f"{base}-{n}", n + 1
    taken.add(name)
    return name


@contextmanager
def code_base(folder: Path) -> Iterator[None]:
    """Python graders named while loading resolve against the suite's folder."""
    from ..graders.code import CODE_BASE

    token = CODE_BASE.set(folder)
    try:
        yield
    finally:
        CODE_BASE.reset(token)


def with_transform(spec: Any, transform: Any) -> Any:
    """A grader spec with the case's transform applied before its own."""
    from ..graders.registry import split_spec

    name, value = split_spec(spec)
    out = dict(spec) if isinstance(spec, dict) else {name: value}
    own = out.get("transform")
    first = transform if isinstance(transform, list) else [transform]
    out["transform"] = first + ((own if isinstance(own, list) else [own]) if own is not None else [])
    return out


def apply_defaults(cfg: SuiteConfig, cases: list[Case], places: Places) -> list[Case]:
    """Defaults' vars and metadata under each case's own, its threshold and scoring function,
    then list-valued vars expanded into one case per value where asked (`expand`)."""
    from ..hashing import sha256_json
    from .templates import expand_case, expansion_size

    d = cfg.defaults
    scoring = None
    if d.scoring is not None:
        from ..graders.code import parse_code_target

        with code_base(places.suite_dir):
            try:
                target = parse_code_target(d.scoring, "scoring")
            except ConfigError as exc:
                raise ConfigError(exc.detail, file=places.source, field="defaults.scoring") from None
        scoring = {k: v for k, v in target.items() if k != "_fn"}
    out: list[Case] = []
    seen: dict[str, str] = {}  # each id by the form it shares with lookalikes (NFC, no invisible characters)
    tally = budget.current()
    errors = Collector()  # every case's mistake (up to 20), a line each, as the case loaders report
    for case in cases:
        names = None
        with errors.each():
            names = _with_defaults(case, d, scoring)
        if names is None:
            continue
        if tally is not None:  # sized before it is built: four lists of 200 values are 1.6 billion cases
            size = expansion_size(case, names)
            tally.added(size - 1, case.source, line=case.line, case_id=case.id, field="expand",
                        why=f"expanding makes {size:,} cases: ")
        for item in expand_case(case, names):
            twin = seen.get(lookalike(item.id))
            if twin is not None:  # an expansion's id, or a case written later with an expansion's id
                alike = "" if twin == item.id else f" ({twin_problem(item.id, twin)})"
                errors.add(ConfigError(("an expanded case id is taken" if item is not case else
                                        "duplicate case id: an expanded case (ID[var=value]) already has it") + alike,
                                       file=case.source, line=case.line, case_id=item.id,
                                       field="expand" if item is not case else "id"))
                continue
            if item is not case:
                item.input_hash = sha256_json(item.input)
            seen[lookalike(item.id)] = item.id
            out.append(item)
    errors.done()
    return out


def _with_defaults(case: Case, d: Any, scoring: dict | None) -> list[str]:
    """The suite's defaults laid under one case (in place); the var names to expand it by."""
    if case.vars is not None and not isinstance(case.vars, dict):
        # the template's names: a list or a text names none (it reached the subject as a crash)
        raise ConfigError(f"vars are a mapping of names to values, got {type(case.vars).__name__}",
                          file=case.source, line=case.line, case_id=case.id, field="vars")
    if d.vars and case.conversation is None:
        case.vars = {**d.vars, **(case.vars or {})}
    if d.metadata:
        case.metadata = {**d.metadata, **case.metadata}
    if case.threshold is None:
        case.threshold = d.threshold
    case.scoring = scoring
    if case.expand is not None:  # a case's own expand naming a var it lacks is a typo, never a no-op
        held = case.vars if isinstance(case.vars, dict) else {}
        lacking = next((n for n in case.expand if n not in held), None)
        if lacking is not None:
            raise ConfigError(f"names {lacking!r}, which is not one of this case's vars "
                              f"({', '.join(map(repr, held)) or 'it has none'})", file=case.source,
                              line=case.line, case_id=case.id, field="expand")
    names = case.expand if case.expand is not None else (d.expand or [])
    held = case.vars if isinstance(case.vars, dict) else {}
    empty = next((n for n in names if held.get(n) == []), None)
    if empty is not None:  # never sent as the text "[]": a matrix axis with no value is a mistake
        raise ConfigError(f"expand names {empty!r}, an empty list: it would make no case (give it a value, "
                          f"or leave it out of expand)", file=case.source, line=case.line, case_id=case.id,
                          field=f"vars.{empty}")
    for name in names:  # the same value twice: the same case twice, counted twice in every figure
        values = held.get(name)
        if isinstance(values, list):
            texts = [json.dumps(v, sort_keys=True) for v in values]
            twice = first_repeat(texts)
            if twice is not None:
                raise ConfigError(f"expand names {name!r}, whose list holds {shorten(texts[twice[1]], 60)} twice "
                                  f"(items {twice[0] + 1} and {twice[1] + 1}): it would make the "
                                  "same case twice", file=case.source, line=case.line, case_id=case.id,
                                  field=f"vars.{name}")
    return names


def graded_metrics(graders: dict[str, list[Grader]]) -> set[str]:
    """The metrics the suite's graders declare: each a mean of grade scores, a share in 0..1."""
    return {getattr(g, "metric", None) for gs in graders.values() for g in gs} - {None}


def declared_names(cfg: SuiteConfig, graders: dict[str, list[Grader]], warnings: list[str] | None = None,
                   source: str | None = None) -> set[str]:
    """Figures a gate may name before anything ran: metrics the graders declare, derived
    metrics, the case score and the reducers (`reducer:NAME`); derived expressions are checked,
    and one naming a metric nothing can give (a typo) is a warning: it will be undefined."""
    from ..stats.gates import is_builtin_figure
    from ..stats.metrics import (
        COUNT_NAME,
        ExpressionError,
        expression_names,
        reducer_name,
    )

    names = graded_metrics(graders)
    metrics = set(names)
    aggregates: dict[str, str] = {}
    for name, spec in (cfg.derived_metrics or {}).items():
        expr, aggregate = (spec, "mean") if isinstance(spec, str) else (spec.expression, spec.aggregate)
        field = f"derived_metrics.{name}"
        if name in metrics:  # two figures of one name: a gate and a reader could not tell them apart
            raise ConfigError(f"{name!r} is already a metric a grader declares: give the derived metric "
                              "another name", field=field)
        if is_builtin_figure(name):  # a gate on the name reads that figure, never this one
            raise ConfigError(f"{name!r} names a figure a gate reads (pass_rate, score, fields, pass@K, pass^K, "
                              "field:, metric:, reducer:): give the derived metric another name", field=field)
        try:
            used = expression_names(expr)
        except ExpressionError as exc:
            raise ConfigError(str(exc), field=field) from None
        if COUNT_NAME in used and aggregate != "sum":
            raise ConfigError(f"{COUNT_NAME} (the number of attempts) is read by a derived metric with "
                              "aggregate: sum", field=field)
        for other in sorted(used & set(aggregates)):
            if aggregates[other] != aggregate:
                raise ConfigError(f"names derived metric {other!r}, whose aggregate is {aggregates[other]}, "
                                  f"not {aggregate}", field=field)
        unknown = sorted(used - metrics - set(aggregates) - {COUNT_NAME})
        if unknown and warnings is not None and not _names_scores(graders):  # only named_scores could give it
            warnings.append(f"{source or 'the suite'}, field {field!r}: names {unknown[0]!r}, which is neither a "
                            "metric a grader declares nor a derived metric defined before it (declared: "
                            f"{', '.join(sorted(metrics)) or 'none'}): it will be undefined")
        aggregates[name] = aggregate
        names.add(name)
    names.add("score")
    for i, r in enumerate(cfg.reducers or []):
        if not isinstance(r, str) and r.kind == "at_least" and r.k is None:
            raise ConfigError("the at_least reducer needs k", field="reducers")
        if not isinstance(r, str) and r.kind != "at_least" and ({"k", "value"} & r.model_fields_set):
            extra = sorted({"k", "value"} & r.model_fields_set)[0]
            raise ConfigError(f"'{extra}' is the at_least reducer's: a {r.kind} reducer reduces every run and "
                              f"takes neither k nor value", field=f"reducers.{i}.{extra}")
        if not isinstance(r, str) and r.kind == "at_least" and r.k is not None and r.k > cfg.runs:
            raise ConfigError(f"at_least k={r.k} needs at least {r.k} runs of each case; the suite runs "
                              f"{cfg.runs} (runs, --runs), so its figure could only be 0", field=f"reducers.{i}.k")
        names.add("reducer:" + reducer_name(r if isinstance(r, str) else r.model_dump(exclude_none=True)))
    return names


def _names_scores(graders: dict[str, list[Grader]]) -> bool:
    """Whether some grader runs code (python, javascript), whose named_scores may name any metric."""
    from ..graders.code import code_spec

    return any(code_spec(g.spec) for gs in {id(gs): gs for gs in graders.values()}.values() for g in gs)


def cross_prompts(cfg: SuiteConfig, configs: list[dict]) -> list[dict]:
    """The prompt axis: each of the suite's `prompts` with each variant (a variant per pair,
    named after the prompt, or PROMPT/VARIANT when there are several variants)."""
    from .templates import prompt_names

    if cfg.prompts is None:
        return configs
    if not cfg.prompts:
        raise ConfigError("'prompts' is empty: give at least one prompt, or leave it out", field="prompts")
    if cfg.prompt is not None:
        raise ConfigError("give 'prompt' or 'prompts', not both", field="prompts")
    own = next((c["name"] for c in configs if c.get("prompt") is not None), None)
    if own is not None:
        raise ConfigError(f"variant {own!r} has its own 'prompt', which cannot be crossed with the suite's "
                          "'prompts' (give one or the other)", field=f"variants.{own}.prompt")
    out, taken, seen = [], set(), {}
    for pname, spec in prompt_names(cfg.prompts):
        if not isinstance(pname, str) or not pname.strip():
            raise ConfigError(f"a prompt's name is blank ({pname!r}): a gate or comparison could not name its "
                              "variant", field="prompts")
        key = json.dumps(spec, sort_keys=True)
        if key in seen:  # "which prompt is better" against itself: a comparison of nothing, twice the cost
            raise ConfigError(f"prompt {pname!r} is the same as prompt {seen[key]!r}: their variants would send "
                              "the same text, a prompt compared with itself (give each prompt once)", field=f"prompts.{pname}")
        seen[key] = pname
        for c in configs:
            name = pname if len(configs) == 1 else f"{pname}/{c['name']}"
            out.append({**c, "name": unique_name(name, taken), "prompt": spec, "prompt_name": pname,
                        "prompt_field": f"prompts.{pname}"})
    return out


def render_inputs(cfg: SuiteConfig, cases: list[Case], variants: list[Variant]) -> list[str]:
    """Each case's input through its variants' prompts: one rendered input when every variant
    renders the same template, else one per variant (`case.inputs`). A case with vars and no
    input needs a prompt. Returns warnings: a prompt that sends every case the same text."""
    limit = cfg.limits.max_input_bytes
    templates = [v.prompt for v in variants]
    if all(t is None for t in templates):
        for case in cases:
            if case.input is None and case.conversation is None:
                raise ConfigError("the case has vars but no input, and the suite names no prompt to render "
                                  "them into", file=case.source, line=case.line, case_id=case.id, field="vars")
        return []
    same = all(t is not None and not t.per_variant for t in templates) \
        and len({t.describe()["sha256"] for t in templates}) == 1
    from ..hashing import sha256_json

    sent_as = {sha256_json([c.input, c.vars]) for c in cases if c.conversation is None}
    differ = _differing_names(cases) if len(sent_as) > 1 else []
    errors = Collector()  # every case's problem, up to MAX_ERRORS, not only the first
    for case in cases:
        with errors.each():
            _render_case(case, variants, templates, same, limit)
    errors.done()
    return _same_text_warnings(cases, variants, same, differ) if len(sent_as) > 1 else []


def _differing_names(cases: list[Case]) -> list[str]:
    """The names a prompt could read (`input`, each var) whose values are not the same in every
    (non-conversation) case."""
    from ..hashing import sha256_json

    plain = [c for c in cases if c.conversation is None]
    names = sorted({k for c in plain if isinstance(c.vars, dict) for k in c.vars} - {"input"})
    out = ["input"] if len({sha256_json(c.input) for c in plain}) > 1 else []
    return out + [n for n in names if len({sha256_json((c.vars or {}).get(n, "\0missing")) for c in plain}) > 1]


def _names_read(template: Any) -> set[str] | None:
    """The names a prompt's text reads (None when that cannot be told)."""
    from jinja2 import meta

    from ..templating import environment

    texts = [template.source] if isinstance(template.source, str) else [
        m.get("content") for m in template.source if isinstance(m, dict) and isinstance(m.get("content"), str)]
    try:
        env = environment(template.undefined)
        return set().union(*(meta.find_undeclared_variables(env.parse(t)) for t in texts))
    except Exception:  # noqa: BLE001 - it compiled once; this only words a warning
        return None


def _same_text_warnings(cases: list[Case], variants: list[Variant], same: bool, differ: list[str]) -> list[str]:
    """A prompt that renders one text for cases whose inputs and vars differ reads none of them
    (an instruction written as the prompt, the question left in `input`): every case is sent
    the same text, and each is graded on an answer to another's question. The words say what
    the prompt does not read: every case name when it reads none, else the names the cases
    differ in (a prompt reading `country` beside cases that differ only in an expanded `lang`)."""
    from ..hashing import sha256_json

    out, seen = [], set()
    for v in variants:
        t = v.prompt
        # a prompt function's code decides what it reads: its same text for every case is its own
        if t is None or t.takes is not None or (t.field, t.describe()["sha256"]) in seen:
            continue
        seen.add((t.field, t.describe()["sha256"]))
        rendered = {sha256_json(c.input if same else (c.inputs or {}).get(v.name)) for c in cases}
        if len(rendered) == 1:
            read = _names_read(t)
            if read is not None and (read & set(differ) or "metadata" in read
                                     or ("vars" in read and any(n != "input" for n in differ))):
                continue  # it reads what differs: the same text is what those values make
            what = ("it names neither {{ input }} nor a case's vars, so what each case holds is never sent"
                    if not read else "they differ only in " + ", ".join(differ) + ", which it does not name")
            out.append(f"field {t.field or 'prompt'!r}: the prompt renders the same text for all {len(cases)} "
                       f"cases, whose inputs and vars differ: {what}")
    return out


def _render_case(case: Case, variants: list[Variant], templates: list, same: bool, limit: int) -> None:
    """One case's input(s) through its variants' prompts (see render_inputs)."""
    from ..hashing import sha256_json
    from .templates import render

    if case.conversation is not None:
        raise ConfigError("prompt templates do not apply to conversation cases", file=case.source,
                          line=case.line, case_id=case.id, field="conversation")
    if same:
        case.input = render(templates[0], case, limit, variants[0])
        case.input_hash = sha256_json(case.input)
        return
    inputs = {}
    for v in variants:
        if v.prompt is not None:
            inputs[v.name] = render(v.prompt, case, limit, v)
        elif case.input is None:
            raise ConfigError(f"variant {v.name!r} has no prompt and the case has no input", file=case.source,
                              line=case.line, case_id=case.id, field="input")
        else:
            inputs[v.name] = case.input
    case.inputs = inputs
    case.input_hash = sha256_json(inputs)
