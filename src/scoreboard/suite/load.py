"""Suite files and command-line flags -> a resolved Suite (cases, variants, graders, settings).

A flag given on the command line overrides the suite file's setting of the same name.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..cases import budget
from ..cases.case import Case
from ..errors import Collector, ConfigError, shorten
from ..located import json_refusal, warning_lines, with_lines
from ..graders.base import Grader
from ..render.browser import check_available
from ..safefile import FileRefused, not_utf8, read_regular
from ..safeparse import ParseError, parse_json, parse_toml, parse_yaml
from ..stats.gates import dq_gates, fail_under_gates, metric_gates, rubric_gates
from .gate_sources import gate_sources
from ..validation import parse_model
from .authoring import (
    apply_defaults,
    code_base,
    declared_names,
    graded_metrics,
    render_inputs,
)
from .checks import (
    AS_CASES,
    FLAG_NAMES,
    NESTED,
    blame_flags,
    case_document_hint,
    check_isolated_agents,
    check_isolation,
    check_sendable_inputs,
    check_storable_names,
    check_task_agents,
    check_task_modes,
    gate_entries,
    gate_has_grader,
    jsonl_inside,
    replaced_gates,
    safe_name,
)
from .case_sources import load_all_cases
from .config import Limits, SuiteConfig
from .grading import as_judge_error, build_judge, resolve_graders
from .variants import build_variants, check_data_file, in_file, variant_names
from .paths import Places, no_cases, no_suite_yaml, select_ids
from .suite import Suite, resolve_render


def read_suite_file(path: str | os.PathLike) -> tuple[dict, Path]:
    """Parse a YAML/TOML/JSON suite file into a dict (not yet validated). It is read under the
    default limits (the limits a suite sets are inside it), as a regular file, bounded."""
    path = Path(path)
    shown = str(path)
    if path.is_dir():
        if (path / "suite.yaml").exists():
            return read_suite_file(path / "suite.yaml")
        raise ConfigError(no_suite_yaml(path), file=shown)
    limits = Limits()
    try:
        raw = read_regular(path, limit=limits.max_file_bytes, limit_name="limits.max_file_bytes")
    except FileRefused as exc:
        raise ConfigError(f"suite file {exc.reason}", file=shown) from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ConfigError(f"suite file is {not_utf8(raw, exc.start)}", file=shown, line=line) from None
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        raise ConfigError(f"this is a case file (JSONL), not a suite: {AS_CASES.format(path=shown)}", file=shown)
    try:
        if suffix == ".toml":
            data = parse_toml(text, limits)
        elif suffix == ".json":
            data = parse_json(text, limits)
        else:
            data, _ = parse_yaml(text, limits)
    except ParseError as exc:
        if jsonl_inside(text):
            raise ConfigError("this holds one JSON object per line, a case file (JSONL), not a suite: "
                              + AS_CASES.format(path=shown), file=shown) from None
        message, line, field = json_refusal(exc, text) if suffix == ".json" else (exc.message, exc.line, exc.field)
        raise ConfigError(message, file=shown, line=line, field=field) from None
    hint = case_document_hint(data)
    if hint and path.suffix.lower() == ".toml":  # TOML holds suites only: no --cases to suggest
        raise ConfigError(f"{hint}, not a suite; a case file is JSONL, JSON or YAML (TOML holds only suites)",
                          file=shown)
    if hint:
        raise ConfigError(f"{hint}, not a suite: {AS_CASES.format(path=shown)}", file=shown)
    if not isinstance(data, dict):
        raise ConfigError("a suite file must be a mapping of settings", file=shown)
    return data, path.parent


OVERRIDABLE = ("name", "cases", "runs", "concurrency", "timeout_ms", "category", "case",
               "output_dir", "formats", "fail_under", "fail_under_metrics", "seed", "graders", "model", "split", "cache",
               "judge", "judge_runs", "grace_seconds", "pairwise",
               # visual work (issue 17)
               "render", "min_dq", "min_rubric", "max_dq_drop", "trust_unchecked_judge")


def _merge_flags(cfg: SuiteConfig, flags: dict, source: str | None) -> tuple[SuiteConfig, dict]:
    overrides = {k: flags[k] for k in OVERRIDABLE if k in flags}
    nested = {k: flags[k] for k in NESTED if k in flags}
    if not overrides and not nested:
        return cfg, overrides
    merged = {**cfg.model_dump(exclude_unset=True), **overrides}
    for key, value in nested.items():
        section, name = NESTED[key]
        merged[section] = {**(merged.get(section) or {}), name: value}
    try:
        return parse_model(SuiteConfig, merged, file=source, every=True), overrides
    except ConfigError as exc:
        raise blame_flags(exc, overrides, nested) from None


def select_split(cases: list[Case], split: str | None) -> list[Case]:
    """Held-out cases run only when asked for: default = every case not marked heldout;
    `heldout` or any other name = only cases marked so; `all` = everything."""
    if split == "all":
        return cases
    if split is None:
        return [c for c in cases if c.split != "heldout"]
    return [c for c in cases if c.split == split]


def load_suite(path: str | os.PathLike | None = None, flags: dict | None = None, *,
               dry_run: bool = False, offline: bool = False) -> Suite:
    """Resolve a suite file plus flag overrides into a Suite: every error before anything runs
    (each one found, up to MAX_ERRORS, one line each). `flags["root"]` (--root) is the folder
    every path named inside a file must stay in. `offline` (validate, plan; a dry run too):
    nothing will call a model, so an unset API key is a warning in `suite.warnings`, not an error.
    An error about a setting of the suite file names the line of its key (located.py)."""
    try:
        suite = _load_suite(path, flags, dry_run, offline)
    except ConfigError as exc:
        raise with_lines(exc, None if path is None else str(path)) from None
    suite.warnings = warning_lines(suite.warnings, suite.source)  # a warning about a key: its line too
    return suite


def _load_suite(path: str | os.PathLike | None, flags: dict | None, dry_run: bool, offline: bool) -> Suite:
    flags = {k: v for k, v in (flags or {}).items() if v is not None}
    data: dict = {}
    base_dir = Path.cwd()
    source = None
    if path is not None:
        data, base_dir = read_suite_file(path)
        source = str(path)
    places = Places.make(base_dir, source, flags.get("root"))
    cfg = parse_model(SuiteConfig, data, file=source, every=True)
    if "output_dir" in data and not Path(cfg.output_dir).is_absolute():
        # Paths in a suite file are relative to the suite file (an --output-dir flag, to the cwd).
        cfg.output_dir = str(base_dir / cfg.output_dir)
    replaced = replaced_gates(cfg.model_dump(exclude_unset=True), flags, source)  # said: the suite's gate is gone
    cfg, overrides = _merge_flags(cfg, flags, source)
    case_paths = cfg.cases if isinstance(cfg.cases, list) else ([cfg.cases] if cfg.cases else [])
    if not case_paths:
        if source is None and not cfg.case:  # `scoreboard run` with neither a suite nor cases
            raise ConfigError("no suite and no cases: give a suite file or --cases FILE (`scoreboard init` writes "
                              "a suite to start from)", field="cases")
        raise ConfigError(no_cases(cfg.case, "case" in overrides), file=source, field="cases")
    errors, warnings = Collector(), replaced
    all_cases: list[Case] = []
    skipped: list[dict] = []
    cases: list[Case] = []
    with errors.each(), budget.suite_budget(cfg.limits):  # the suite's case data in all (cases/budget.py)
        all_cases, skipped = load_all_cases(cfg, case_paths, places, from_flag="cases" in overrides,
                                            errors=errors)
        if not errors.errors:
            all_cases = apply_defaults(cfg, all_cases, places)  # issue 14: defaults, expand
            cases = _filter_cases(cfg, all_cases, source, overrides)
    with errors.each():
        _check_baseline(cfg, places, from_flag="baseline" in flags, flags=flags)
    with errors.each():
        check_isolation(cfg, cases, source, dry_run)
    graders: dict[str, list[Grader]] = {}
    if cases:
        with code_base(places.suite_dir):
            graders = resolve_graders(cfg, cases, errors=errors, warnings=warnings,
                                      source=source if "graders" not in overrides else None)
    name = cfg.name or (Path(source).stem if source and Path(source).stem != "suite"
                        else (Path(source).parent.name if source else (Path(case_paths[0]).stem
                                                                       if isinstance(case_paths[0], str) else "dataset")))
    variants = build_variants(cfg, flags, places, dry_run, errors=errors, warnings=warnings,
                         offline=offline or dry_run, tasks=any(c.task is not None for c in cases))
    with errors.each():
        if cases and not errors.errors:
            warnings.extend(f"{source}, {w}" if source else w for w in render_inputs(cfg, cases, variants))
    with errors.each():
        check_isolated_agents(cfg, cases, variants, source, dry_run)  # issue 16: an http agent
    with errors.each():
        check_task_agents(cases, variants, source)  # a python function or a bare model as an agent
    with errors.each():
        check_task_modes(cases, variants, source)  # a mode a task lacks: every attempt an error
    with errors.each():
        check_sendable_inputs(cases, variants)  # a chat case's tool message, for openai/anthropic
    names = variant_names(cfg, flags, places.source, variants)  # gates see every declared variant
    with errors.each():  # a name the history store cannot index: now, not part way through storing
        check_storable_names(cfg, names, None if flags.get("subject") or flags.get("skill") else source)
    planned = len(cases) * len(variants) * cfg.runs
    if planned > cfg.limits.max_attempts:  # before anything sized by the plan is built
        errors.add(ConfigError(f"the run would make {planned:,} attempts ({len(cases):,} cases x "
                               f"{len(variants):,} variants x {cfg.runs:,} runs), more than "
                               f"{cfg.limits.max_attempts:,} (limits.max_attempts)", file=source))
    declared = None
    with errors.each(), in_file(source):  # a derived metric's error is the suite file's
        declared = declared_names(cfg, graders, warnings, source)
    for setting, check in (  # a gate naming no variant, an unknown metric, a pair no run has fails now
            ("fail_under", lambda value: fail_under_gates({"variants": {}}, value, names)),
            ("fail_under_metrics", lambda value: (metric_gates({"variants": {}}, value, names, declared, runs=cfg.runs,
                                                               shares=graded_metrics(graders)),
                                                  gate_sources(value, graders, cases, names))),
            ("min_dq", lambda value: dq_gates({}, value, names)),
            ("min_rubric", lambda value: rubric_gates({}, value, names))):
        if setting == "fail_under_metrics" and declared is None:
            continue  # its names are unknown while the metrics are refused
        with errors.each(), in_file(None if setting in flags else source):
            before = len(errors.errors)
            gate_entries(setting, getattr(cfg, setting), check, errors, None if setting in flags else source)
            if setting in ("min_dq", "min_rubric") and len(errors.errors) == before:  # its entries first
                gate_has_grader(setting, getattr(cfg, setting), graders)
    judge = None
    with errors.each():
        if cfg.judge is not None:
            try:  # a judge spec's error names 'judge', not 'subject'
                check_data_file(cfg.judge, places, "judge" in flags)
            except ConfigError as exc:
                raise as_judge_error(exc) from None
        with in_file(None if "judge" in flags else source):
            judge = build_judge(cfg, graders, base_dir if "judge" not in flags else Path.cwd(), dry_run,
                                warnings=warnings, offline=offline or dry_run, flags=flags)
    errors.done()
    suite = Suite(safe_name(name), cfg, cases, variants, graders, base_dir, source, all_cases, skipped, judge)
    suite.warnings = warnings
    # --- visual work (issue 17): outputs rendered when the suite or a grader asks ---
    with in_file(source):
        suite.render = resolve_render(cfg, graders)
        suite.render_root = places.root_for(places.suite_dir)
        if suite.render is not None and not dry_run:
            check_available(suite.render)
    # --- end visual work ---
    return suite


def _filter_cases(cfg: SuiteConfig, all_cases: list[Case], source: str | None,
                  overrides: dict | None = None) -> list[Case]:
    """The split, --category and --case filters; none may leave nothing to run. The error names
    the filter that left nothing (its flag when a flag set it) and the values that exist."""
    overrides = overrides or {}

    def blame(message: str, key: str, flag: str) -> ConfigError:
        if key in overrides:
            return ConfigError(message, flag=flag)
        return ConfigError(message, file=source, field=key)

    cases = select_split(all_cases, cfg.split)
    if not cases and all_cases and cfg.split is not None:
        splits = sorted({c.split for c in all_cases if c.split})
        known = f"the cases' splits: {', '.join(splits)}" if splits else "no case names a split"
        raise blame(f"no case has split {cfg.split!r} ({known}; 'all' takes every case, and without a split "
                    "the cases not marked heldout run)", "split", "--split")
    if cfg.category:
        in_split = cases
        cases = [c for c in cases if c.category in cfg.category]
        if not cases and in_split:
            known = sorted({c.category for c in in_split if c.category})
            raise blame(f"no case has category {', '.join(map(repr, cfg.category))} (categories: "
                        f"{', '.join(known) or 'none'})", "category", "--category")
    if cfg.case:
        cases = select_ids(cases, all_cases, cfg.case, "case" in overrides, source)
    if not cases:
        raise ConfigError("the filters leave no case to run", file=source, field="category")
    return cases


def _check_baseline(cfg: SuiteConfig, places: Places, from_flag: bool, flags: dict) -> None:
    """The baseline report is a regular file; named in the suite file, it is relative to the
    suite's folder and inside its root. (The gate reads it when the run starts.) A flag that
    asks for a regression gate with no baseline is refused: it would compare nothing and pass."""
    baseline = cfg.gates.baseline
    if not baseline:
        # a flag asks for a gate now (a suite file's gates may wait for a --baseline from CI)
        key = next((k for k in ("max_regression", "require_significance") if flags.get(k) not in (None, False)), None)
        if key is not None:
            raise ConfigError("needs a baseline report to compare with (--baseline REPORT, or gates.baseline "
                              "in the suite): without one no regression gate is checked", flag=FLAG_NAMES[key])
        return
    if cfg.gates.max_regression is None:
        raise ConfigError("a baseline needs max_regression (--max-regression DELTA)",
                          file=None if from_flag else places.source,
                          field="max_regression" if from_flag else "gates.max_regression")
    target = Path(baseline) if from_flag or Path(baseline).is_absolute() else places.suite_dir / baseline
    if not target.exists() and not target.is_symlink():
        # validate, plan, a dry run and a run all stop here alike, saying where they looked
        where = "" if Path(baseline).is_absolute() else \
            f" in {os.path.abspath(target.parent)}" + ("" if from_flag else " (relative to the suite file)")
        raise ConfigError(f"baseline report {shorten(baseline, 120)!r} not found{where}; a baseline is the JSON "
                          f"report of an earlier run: save one with `scoreboard run ... --output "
                          f"{baseline if from_flag else os.path.relpath(target)}`",
                          file=None if from_flag else places.source, flag="--baseline" if from_flag else None,
                          field=None if from_flag else "gates.baseline")
    places.resolve(baseline, "gates.baseline", from_flag=from_flag)
    if not from_flag:
        cfg.gates.baseline = str(places.suite_dir / baseline)
