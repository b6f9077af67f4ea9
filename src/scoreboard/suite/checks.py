"""The checks and hints a suite's loading adds to its errors: which flag caused an error, a
case file given where a suite was expected, a model subject that a budget cannot bound, an
API key that only a real run needs, the default grader applied to a structured `expected`."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..cases.case import Case
from ..errors import Collector, ConfigError, ConfigErrors, shorten
from ..safeparse import ParseError
from .. import words
from ..subjects.base import Subject
from .config import SuiteConfig

#: what to type instead when a case file is given where a suite file is expected
AS_CASES = "give it with --cases and name a subject: scoreboard run --cases {path} --subject SPEC"


def jsonl_inside(text: str) -> bool:
    """The first line is a whole JSON object with an id: JSONL given as a suite file."""
    from ..safeparse import parse_json as parse

    first = next((line for line in text.split("\n") if line.strip()), "")
    try:
        value = parse(first)
    except ParseError:
        return False
    return isinstance(value, dict) and "id" in value


def case_document_hint(data: Any) -> str | None:
    """Case objects where suite settings were expected: one case, a list of cases, or a case
    document {"cases": [{...}]} with no setting only a suite has (a suite's `cases:` names
    files, or holds cases written inline beside its settings)."""
    from ..cases.formats import one_case_hint
    from .config import SuiteConfig

    if isinstance(data, dict) and set(data) & (set(SuiteConfig.model_fields) - {"cases", "name", "description"}):
        return None  # a setting only a suite has (subject, graders...): its case objects are written inline
    if isinstance(data, dict) and isinstance(data.get("cases"), list) and data["cases"] \
            and all(isinstance(c, dict) and "format" not in c for c in data["cases"]):  # format: a dataset reader
        return "this is a case document (its cases are objects; a suite's 'cases:' names case files)"
    hint = one_case_hint(data)
    return hint.split(";")[0] if hint else None


#: flags that set a setting inside a section of the suite file
NESTED = {"max_requests": ("budget", "max_requests"), "max_cost_usd": ("budget", "max_cost_usd"),
          "max_tokens": ("budget", "max_tokens"), "baseline": ("gates", "baseline"),
          "max_regression": ("gates", "max_regression"),
          "require_significance": ("gates", "require_significance"), "alpha": ("gates", "alpha")}
#: the command-line flag of each suite setting a flag can give (errors name the flag, not the file)
FLAG_NAMES = {"name": "--name", "cases": "--cases", "runs": "--runs", "concurrency": "--concurrency",
              "timeout_ms": "--timeout", "category": "--category", "case": "--case",
              "output_dir": "--output-dir", "formats": "--format", "fail_under": "--fail-under",
              "fail_under_metrics": "--fail-under-metric", "seed": "--seed", "graders": "--grader",
              "model": "--model", "split": "--split", "cache": "--cache", "judge": "--judge",
              "judge_runs": "--judge-runs", "grace_seconds": "--grace", "pairwise": "--pairwise",
              "max_requests": "--max-requests", "max_cost_usd": "--max-cost", "max_tokens": "--max-tokens",
              "baseline": "--baseline", "max_regression": "--max-regression",
              "require_significance": "--require-significance", "alpha": "--alpha",
              "render": "--render", "min_dq": "--min-dq", "min_rubric": "--min-rubric",
              "trust_unchecked_judge": "--trust-unchecked-judge"}


def blame_flags(exc: ConfigError, overrides: dict, nested: dict) -> ConfigError:
    """An error in a setting a flag gave names the flag (`--runs 0` is not the suite file's)."""
    by_path = {(k,): FLAG_NAMES[k] for k in overrides if k in FLAG_NAMES}
    by_path.update({NESTED[k]: FLAG_NAMES[k] for k in nested})
    out = []
    for one in getattr(exc, "errors", None) or [exc]:
        parts = tuple((one.field or "").split("."))
        flag = next((name for path, name in by_path.items() if parts[:len(path)] == path), None)
        if flag is None:
            out.append(one)
            continue
        rest = ".".join(parts[len(next(p for p, n in by_path.items() if n == flag)):])
        out.append(ConfigError(one.detail, flag=flag, field=rest or None))
    return out[0] if len(out) == 1 else ConfigErrors(out)



def check_subject(subject: Subject, warnings: list[str] | None, offline: bool, who: str) -> None:
    """subject.check(); when nothing will call the model (`offline`), a missing credential is a
    warning (validate and plan need no API key), not an error."""
    if not offline or not hasattr(subject, "check_credentials"):
        subject.check()
    else:
        subject.check_setup()
        try:
            subject.check_credentials()
        except ConfigError as exc:
            _warn_once(warnings, f"{exc.detail}; a real run needs it", who)
            return
    keyless = getattr(subject, "keyless_warning", None)
    text = keyless() if keyless is not None else None
    if text:  # a key variable the suite names, unset, for a server that takes requests without one
        _warn_once(warnings, text, who)


def _warn_once(warnings: list[str] | None, text: str, who: str) -> None:
    """One line per missing variable, naming every variant (or the judge) that needs it."""
    if warnings is None:
        return
    head = f"{text} (used by "
    for i, line in enumerate(warnings):
        if line.startswith(head):
            warnings[i] = f"{line[:-1]}, {who})"
            return
    warnings.append(f"{head}{who})")


def check_budget_bounds(subject: Subject, cfg: SuiteConfig, params: dict, flags: dict | None = None) -> None:
    """A cost or token budget reserves each request's most before sending it; a subject whose
    requests have no such bound (no price for its model, no max_tokens) could never send one,
    so it fails now, saying what to add."""
    gaps = getattr(subject, "budget_gaps", None)
    budget = cfg.budget
    if gaps is None or (budget.max_cost_usd is None and budget.max_tokens is None):
        return
    tokens, cost = gaps(params)
    for key, gap, what in (("max_tokens", tokens, "token"), ("max_cost_usd", cost, "cost")):
        if getattr(budget, key) is not None and gap:
            flag = FLAG_NAMES[key] if key in (flags or {}) else None
            raise ConfigError(f"a {what} budget needs the most each request can spend before it is sent, "
                              f"but {gap}", flag=flag, field=None if flag else f"budget.{key}")


@contextmanager
def in_variant(name: str, subject_field: str | None = None, sharing: list[str] | None = None) -> Iterator[None]:
    """A subject or skill error names the variant it belongs to; with `subject_field` (where the
    variant's subject is in the suite file: `variants.NAME.subject`), a field in the subject spec
    is named at that place (the subject knows only `subject.FIELD`). `sharing`: the variants
    whose subject is the suite's own `subject:` (an error of it names them all)."""
    try:
        yield
    except ConfigError as exc:
        if exc.detail.startswith("variant "):
            raise
        field = exc.field
        in_subject = exc.flag is None and field and (field == "subject" or field.startswith("subject."))
        if subject_field and in_subject:
            field = subject_field + field[len("subject"):]
        who = f"variant {name!r}"
        if sharing and in_subject:
            who = f"variants {', '.join(map(repr, sharing))} (the suite's subject)"
        raise ConfigError(f"{who}: {exc.detail}", file=exc.file, line=exc.line,
                          case_id=exc.case_id, field=field, flag=exc.flag) from None



GOLD_SUFFIX = ".gold.json"


def implicit_exact_source(source: str) -> str:
    """Where the implicit-`exact` warning points: a case file, or a gold directory as a whole (its
    documents share one warning)."""
    return f"{os.path.dirname(source) or '.'}{os.sep}" if source.endswith(GOLD_SUFFIX) else source


def implicit_exact_warning(source: str, cases: list[Case]) -> str:
    """The warning for cases graded by the default `exact` although `expected` is structured."""
    first = cases[0]
    gold = source.endswith(os.sep)  # a gold directory: a gold file holds only its fields
    where = f"{source}:{first.line}" if first.line and not gold else source
    many = f"{len(cases)} cases (the first: {first.id!r}) name no grader and expect" if len(cases) > 1 \
        else f"case {first.id!r} names no grader and expects"
    hint = " in the suite, e.g. graders: [json-fields] (a gold file holds only its fields)" if gold else \
        ', e.g. "grader": "json-fields" in the case or graders: [json-fields] in the suite'
    return (f"{where}: {many} a JSON object or list: graded by 'exact', so the "
            f"output must equal it as a whole; name a grader for field-by-field scores{hint}")


def check_isolated_agents(cfg: SuiteConfig, cases: list[Case], variants: list, source: str | None,
                          dry_run: bool) -> None:
    """A suite that requires isolation refuses a variant whose subject runs its agent outside
    this machine's sandbox (an `http` agent endpoint), before anything runs."""
    if not cfg.require_isolation or dry_run or not any(c.task is not None for c in cases):
        return
    for variant in variants:
        subject = variant.subject
        if subject.kind not in ("mock", "recorded") and not getattr(subject, "agent_workspace", False):
            raise ConfigError(f"variant {variant.name!r}: the suite requires isolation and the {subject.kind} "
                              "subject runs its agent outside this machine's sandbox", file=source,
                              field=f"variants.{variant.name}.subject")


#: subjects that act in a task's workspace without running in it: an `http` agent endpoint is
#: handed the workspace's path; `mock` and `recorded` replay what an agent did
_REMOTE_AGENTS = ("http", "mock", "recorded")


def check_task_agents(cases: list[Case], variants: list, source: str | None) -> None:
    """A task's agent must be able to act in the attempt's workspace: a `python` function (run
    in scoreboard's own folder, never told the workspace) or a model with no tools would have
    every attempt scored as the agent's failure (and a python function's files written in the
    user's folder). Refused before anything runs, naming the variant."""
    if not any(c.task is not None for c in cases):
        return
    for variant in variants:
        subject = variant.subject
        if getattr(subject, "agent_workspace", False) or subject.kind in _REMOTE_AGENTS:
            continue
        how = ("a python function runs in scoreboard's process and is never given the workspace; run it "
               "as a command agent, e.g. {type: command, argv: [python3, agent.py]}") if subject.kind == "python" \
            else "a model without tools cannot act in it; use claude-cli, codex-cli, command or http"
        raise ConfigError(f"variant {variant.name!r}: a {subject.kind} subject cannot run an agent task "
                          f"(it needs the attempt's workspace): {how}", file=source,
                          field=f"variants.{variant.name}.subject")


def check_task_modes(cases: list[Case], variants: list, source: str | None) -> None:
    """A variant's task mode (its `mode` parameter, ordinary by default) that a task of the suite
    does not offer, or that is not text, would make every attempt of that task an error (or run
    it in the ordinary mode): refused before anything runs, one line per variant."""
    tasks = {c.task.spec.id: c.task.spec for c in cases if c.task is not None}
    problems = []
    for variant in variants if tasks else []:
        mode, field = variant.params.get("mode", "ordinary"), f"variants.{variant.name}.params.mode"
        if not isinstance(mode, str):
            problems.append(ConfigError(f"variant {variant.name!r}: a task's mode is text, one of the task's modes "
                                        f"(got {mode!r})", file=source, field=field))
            continue
        spec = next((t for t in tasks.values() if mode not in t.modes), None)
        if spec is not None:
            problems.append(ConfigError(f"variant {variant.name!r} runs mode {mode!r}, which task {spec.id!r} does "
                                        f"not have (its modes: {', '.join(spec.modes)})", file=source, field=field))
    if problems:
        raise problems[0] if len(problems) == 1 else ConfigErrors(problems)


def check_sendable_inputs(cases: list[Case], variants: list) -> None:
    """A chat-message input a variant's API cannot take as written (a `tool` message for the
    openai or anthropic subject, which has no call id to answer) is refused before anything
    runs, naming the case and the message; python, command and http subjects take it."""
    for variant in variants:
        problem_of = getattr(variant.subject, "input_problem", None)
        if problem_of is None:
            continue
        for case in cases:
            problem = problem_of(case.input_for(variant.name))
            if problem is not None:
                field, reason = problem
                raise ConfigError(f"variant {variant.name!r} ({variant.subject.kind}): {reason}", file=case.source,
                                  line=case.line, case_id=case.id, field=field)


_GATE_GRADER = {"min_dq": "pointwise", "min_rubric": "rubric-score"}


def gate_entries(setting: str, value, check, errors: Collector, source: str | None) -> None:
    """A suite file's gate checked entry by entry, so an error names the entry (`fail_under.v9`,
    and so its line) and every bad entry is said; a flag's (`source` None) is checked whole, its
    error naming the flag."""
    if source is None or not isinstance(value, dict):
        check(value)
        return
    for key, one in value.items():
        with errors.each():
            try:
                check({key: one})
            except ConfigError as exc:
                if exc.file is not None or exc.flag is not None:
                    raise
                field = f"{setting}.{key}" if exc.field == setting else exc.field  # or `fail_under.v2` already
                raise ConfigError(exc.detail, file=source, case_id=exc.case_id, field=field) from None


def gate_has_grader(setting: str, value, graders: dict) -> None:
    """A dQ or rubric gate no grader of the suite can feed would fail on n/a after the whole run
    was spent: refused before anything runs."""
    if not value:
        return
    wanted = _GATE_GRADER[setting]

    def names(spec) -> set[str]:  # every grader a spec names, inside group/not too (lenient)
        if isinstance(spec, str):
            return {spec}
        if isinstance(spec, dict):
            return set(spec) | {n for v in spec.values() for n in names(v)}
        if isinstance(spec, list):
            return {n for v in spec for n in names(v)}
        return set()

    if not any(wanted in names(getattr(g, "spec", None)) or getattr(g, "name", None) == wanted
               for gs in graders.values() for g in gs):
        raise ConfigError(f"no grader of this suite gives what the gate reads (a {wanted} grader): it could only "
                          "fail, after every request was spent", field=setting)


def check_isolation(cfg: SuiteConfig, cases: list[Case], source: str | None, dry_run: bool) -> None:
    """A suite that requires isolation refuses to run agent tasks where no sandbox works; a
    SCOREBOARD_SANDBOX naming no sandbox is an error before any task runs."""
    if dry_run or not any(c.task is not None for c in cases):
        return
    from ..tasks.sandbox import INSTALL_HINT, SandboxUnavailable, sandbox_choice, sandbox_program

    try:
        sandbox_choice()
    except SandboxUnavailable as exc:
        raise ConfigError(str(exc), file=source, field="require_isolation" if cfg.require_isolation else None) \
            from None
    if not cfg.require_isolation:
        return
    try:
        found = sandbox_program()
    except SandboxUnavailable as exc:
        raise ConfigError(str(exc), file=source, field="require_isolation") from None
    if found is None:
        raise ConfigError(f"the suite requires isolation and no sandbox works here: {INSTALL_HINT}",
                          file=source, field="require_isolation")


def safe_name(name: str) -> str:
    return words.safe_name(name, "suite")



def check_storable_names(cfg: SuiteConfig, names: list[str], source: str | None) -> None:
    """A variant name the history store could not index (over KEY_BYTES bytes of UTF-8: PostgreSQL
    refused it part way through storing the run) is refused before the run starts."""
    for name in names:
        size = len(name.encode("utf-8", "surrogatepass"))
        if size > words.KEY_BYTES:
            declared = cfg.variants if isinstance(cfg.variants, list) else []
            at = next((i for i, v in enumerate(declared) if v.name == name), None)
            field = f"variants[{at}].name" if at is not None else "variants"
            raise ConfigError(f"variant {shorten(name, 40)!r} is a name of {size:,} bytes of UTF-8, over the "
                              f"{words.KEY_BYTES:,} the history store indexes: give it a shorter name",
                              file=source, field=field)


#: the suite's gate settings a flag of the same name replaces whole (README: a flag overrides)
GATE_SETTINGS = ("fail_under", "fail_under_metrics", "min_dq", "min_rubric", "max_dq_drop")


def replaced_gates(suite_set: dict, flags: dict, source: str | None) -> list[str]:
    """A warning for each gate setting of the suite file that a flag replaced with something
    else: a CI line's `--fail-under careful=0.5` left the suite's `fail_under: {basic: 0.9}` with no
    gate on basic, and nothing said so."""
    out = []
    for key in GATE_SETTINGS:
        before, after = suite_set.get(key), flags.get(key)
        if key not in flags or before is None or before == after:
            continue
        if isinstance(before, dict) and isinstance(after, dict):
            gone = [k for k in before if k not in after]
            what = (f"its gate{'s' if len(gone) > 1 else ''} on {', '.join(map(repr, gone[:5]))} "
                    f"{'are' if len(gone) > 1 else 'is'} not applied in this run" if gone
                    else "the flag's thresholds are applied in its place")
        else:
            what = "the flag's gate is applied in its place"
        out.append(f"{source + ', ' if source else ''}field {key!r}: flag {FLAG_NAMES.get(key, key)} replaces the "
                   f"suite's {key} ({shorten(json.dumps(before, default=str), 80)}): {what}")
    return out

