"""Suite files and command-line flags -> a resolved Suite (cases, variants, graders, settings).

A flag given on the command line overrides the suite file's setting of the same name.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

from ..cases import budget
from ..cases.case import Case
from ..errors import Collector, ConfigError, shorten
from ..graders.base import Grader
from ..graders.code import check_case_code
from ..graders.registry import build_grader
from ..hashing import canonical_json
from ..render.browser import check_available
from ..safefile import FileRefused, read_regular
from ..safeparse import ParseError, parse_json, parse_toml, parse_yaml
from ..stats.gates import fail_under_gates, metric_gates
from ..subjects.base import Subject
from ..subjects.registry import build_subject, parse_subject_spec
from ..validation import parse_model
from .authoring import (
    apply_defaults,
    code_base,
    cross_prompts,
    declared_names,
    render_inputs,
    unique_name,
    with_transform,
)
from .checks import (
    AS_CASES,
    NESTED,
    blame_flags,
    case_document_hint,
    check_budget_bounds,
    check_isolated_agents,
    check_subject,
    implicit_exact_warning,
    in_variant,
    jsonl_inside,
)
from .config import Limits, SuiteConfig
from .paths import Places
from .skills import load_skill, skill_name
from .suite import Suite, Variant, resolve_render
from .templates import load_template


def read_suite_file(path: str | os.PathLike) -> tuple[dict, Path]:
    """Parse a YAML/TOML/JSON suite file into a dict (not yet validated). It is read under the
    default limits (the limits a suite sets are inside it), as a regular file, bounded."""
    path = Path(path)
    shown = str(path)
    if path.is_dir():
        candidate = path / "suite.yaml"
        if candidate.exists():
            return read_suite_file(candidate)
        raise ConfigError("is a directory without suite.yaml", file=shown)
    limits = Limits()
    try:
        raw = read_regular(path, limit=limits.max_file_bytes, limit_name="limits.max_file_bytes")
    except FileRefused as exc:
        raise ConfigError(f"suite file {exc.reason}", file=shown) from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ConfigError("suite file is not valid UTF-8", file=shown) from None
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
        raise ConfigError(exc.message, file=shown, line=exc.line, field=exc.field) from None
    hint = case_document_hint(data)
    if hint and path.suffix.lower() == ".toml":  # TOML holds suites only: no --cases to suggest
        raise ConfigError(f"{hint}, not a suite; a case file is JSONL, JSON or YAML (TOML holds only suites)",
                          file=shown)
    if hint:
        raise ConfigError(f"{hint}, not a suite: {AS_CASES.format(path=shown)}", file=shown)
    if not isinstance(data, dict):
        raise ConfigError("a suite file must be a mapping of settings", file=shown)
    return data, path.parent


def _subject_name(spec: Any) -> str:
    parsed = parse_subject_spec(spec)
    for key in ("function", "model", "path"):
        if isinstance(parsed.get(key), str):
            return re.split(r"[:/]", parsed[key].rstrip("/"))[-1] or parsed["type"]
    if parsed.get("argv"):
        return Path(parsed["argv"][0]).name
    return parsed["type"]


def variant_configs(cfg: SuiteConfig, flags: dict) -> list[dict]:
    """Variants from flags (which replace the suite's) or from the suite file, crossed with the
    suite's prompt axis (`prompts:`) when it has one."""
    return cross_prompts(cfg, _variant_configs(cfg, flags))


def _variant_configs(cfg: SuiteConfig, flags: dict) -> list[dict]:
    taken: set[str] = set()
    skills = [s for s in (flags.get("skill"), flags.get("vs")) if s]
    subjects = [s for s in (flags.get("subject"), flags.get("vs_subject")) if s]
    if flags.get("vs") and not flags.get("skill"):
        raise ConfigError("--vs needs --skill (the first variant's instruction file)", field="vs")
    if flags.get("vs_subject") and not flags.get("subject"):
        raise ConfigError("--vs-subject needs --subject", field="vs_subject")
    if skills and len(subjects) > 1:
        raise ConfigError("use --skill/--vs or --subject/--vs-subject, not both pairs", field="vs_subject")
    if skills:
        subject = subjects[0] if subjects else cfg.subject
        if subject is None:
            raise ConfigError("--skill needs a subject: give --subject or 'subject:' in the suite", field="subject")
        return [{"name": unique_name(skill_name(s), taken), "subject": subject, "skill": s} for s in skills]
    if subjects:
        return [{"name": unique_name(_subject_name(s), taken), "subject": s} for s in subjects]
    if cfg.variants:
        items = cfg.variants.items() if isinstance(cfg.variants, dict) else \
            [(v.name, v) for v in cfg.variants]
        out = []
        for index, (name, v) in enumerate(items):
            subject = v.subject if v.subject is not None else cfg.subject
            if subject is None:
                raise ConfigError("variant has no subject and the suite names none",
                                  field=f"variants.{name or index}.subject")
            label = name or (skill_name(v.skill) if v.skill else _subject_name(subject))
            out.append({"name": unique_name(label, taken), "subject": subject, "skill": v.skill,
                        "params": v.params, "prompt": v.prompt})
        return out
    if cfg.subject is not None:
        return [{"name": unique_name(_subject_name(cfg.subject), taken), "subject": cfg.subject}]
    raise ConfigError("no variants: give --subject (and --vs-subject), --skill/--vs, "
                      "or 'variants:' in a suite file", field="variants")


OVERRIDABLE = ("name", "cases", "runs", "concurrency", "timeout_ms", "category", "case",
               "output_dir", "formats", "fail_under", "fail_under_metrics", "seed", "graders", "model", "split", "cache",
               "judge", "judge_runs", "grace_seconds", "pairwise",
               # visual work (issue 17)
               "render", "min_dq", "min_rubric", "max_dq_drop", "trust_unchecked_judge")
#: subject kinds whose spec takes a `price` (the suite's price table fills it in by model)
PRICED_KINDS = {"openai", "anthropic", "http"}


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


def prepare_subject_spec(spec: Any, cfg: SuiteConfig) -> Any:
    """Apply `--model` and the suite's price table to a subject spec."""
    from ..subjects.registry import subject_class

    parsed = parse_subject_spec(spec)
    cls = subject_class(parsed["type"])
    if cfg.model and getattr(cls, "has_model", False):
        parsed["model"] = cfg.model
    if parsed["type"] in PRICED_KINDS and "price" not in parsed and parsed.get("model") in cfg.prices:
        parsed["price"] = cfg.prices[parsed["model"]].model_dump(exclude_none=True)
    return parsed


def load_suite(path: str | os.PathLike | None = None, flags: dict | None = None, *,
               dry_run: bool = False, offline: bool = False) -> Suite:
    """Resolve a suite file plus flag overrides into a Suite: every error before anything runs
    (each one found, up to MAX_ERRORS, one line each). `flags["root"]` (--root) is the folder
    every path named inside a file must stay in. `offline` (validate, plan; a dry run too):
    nothing will call a model, so an unset API key is a warning in `suite.warnings`, not an error."""
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
    cfg, overrides = _merge_flags(cfg, flags, source)
    case_paths = cfg.cases if isinstance(cfg.cases, list) else ([cfg.cases] if cfg.cases else [])
    if not case_paths:
        raise ConfigError("no cases: give --cases FILE or 'cases:' in the suite", file=source, field="cases")
    errors, warnings = Collector(), []
    all_cases: list[Case] = []
    skipped: list[dict] = []
    cases: list[Case] = []
    with errors.each(), budget.suite_budget(cfg.limits):  # the suite's case data in all (cases/budget.py)
        all_cases, skipped = _load_all_cases(cfg, case_paths, places, from_flag="cases" in overrides,
                                             errors=errors)
        if not errors.errors:
            all_cases = apply_defaults(cfg, all_cases, places)  # issue 14: defaults, expand
            cases = _filter_cases(cfg, all_cases, source, overrides)
    with errors.each():
        _check_baseline(cfg, places, from_flag="baseline" in flags)
    with errors.each():
        _check_isolation(cfg, cases, source, dry_run)
    graders: dict[str, list[Grader]] = {}
    if cases:
        with code_base(places.suite_dir):
            graders = resolve_graders(cfg, cases, errors=errors, warnings=warnings,
                                      source=source if "graders" not in overrides else None)
    name = cfg.name or (Path(source).stem if source and Path(source).stem != "suite"
                        else (Path(source).parent.name if source else (Path(case_paths[0]).stem
                                                                       if isinstance(case_paths[0], str) else "dataset")))
    variants = _variants(cfg, flags, places, dry_run, errors=errors, warnings=warnings,
                         offline=offline or dry_run)
    with errors.each():
        if cases and not errors.errors:
            render_inputs(cfg, cases, variants)  # issue 14: prompt templates
    with errors.each():
        check_isolated_agents(cfg, cases, variants, source, dry_run)  # issue 16: an http agent
    names = [v.name for v in variants]
    planned = len(cases) * len(variants) * cfg.runs
    if planned > cfg.limits.max_attempts:  # before anything sized by the plan is built
        errors.add(ConfigError(f"the run would make {planned:,} attempts ({len(cases):,} cases x "
                               f"{len(variants):,} variants x {cfg.runs:,} runs), more than "
                               f"{cfg.limits.max_attempts:,} (limits.max_attempts)", file=source))
    with errors.each(), _in_file(None if "fail_under" in flags else source):  # a gate naming no variant fails now
        fail_under_gates({"variants": {}}, cfg.fail_under, names)
    with errors.each(), _in_file(None if "fail_under_metrics" in flags else source):  # and an unknown metric
        metric_gates({"variants": {}}, cfg.fail_under_metrics, names, declared_names(cfg, graders))
    judge = None
    with errors.each():
        if cfg.judge is not None:
            _check_data_file(cfg.judge, places, "judge" in flags)
        with _in_file(None if "judge" in flags else source):
            judge = build_judge(cfg, graders, base_dir if "judge" not in flags else Path.cwd(), dry_run,
                                warnings=warnings, offline=offline or dry_run)
    errors.done()
    suite = Suite(_safe_name(name), cfg, cases, variants, graders, base_dir, source, all_cases, skipped, judge)
    suite.warnings = warnings
    # --- visual work (issue 17): outputs rendered when the suite or a grader asks ---
    with _in_file(source):
        suite.render = resolve_render(cfg, graders)
        if suite.render is not None and not dry_run:
            check_available(suite.render)
    # --- end visual work ---
    return suite


def _load_all_cases(cfg: SuiteConfig, case_paths: list[str], places: Places,
                    from_flag: bool, errors: Collector | None = None) -> tuple[list[Case], list[dict]]:
    """Every case of every file or gold directory, ids unique across them. Paths named on the
    command line are relative to the working directory (the user's choice, not confined);
    those in the suite file, to its folder, inside its root."""
    from ..cases import load_cases

    case_base = Path.cwd() if from_flag else places.suite_dir
    all_cases: list[Case] = []
    seen: dict[str, str] = {}
    skipped: list[dict] = []
    for rel in case_paths:
        if isinstance(rel, dict):  # issue 15: a dataset reader
            loaded = _dataset_cases(rel, cfg, places, from_flag)
            _count_cases(loaded, places.source)
            for case in loaded:
                if case.id in seen:
                    raise ConfigError(f"duplicate case id (also in {seen[case.id]})", file=case.source,
                                      line=case.line, case_id=case.id, field="id")
                seen[case.id] = f"{case.source}:{case.line}"
                all_cases.append(case)
            continue
        places.resolve(rel, "cases", from_flag=from_flag, folder_ok=True)
        target = Path(rel) if from_flag or Path(rel).is_absolute() else case_base / rel
        if target.is_dir():
            # folders only: agent tasks or gold documents (their modules' models cost a plain
            # case file's run 12 ms to import)
            from ..cases.gold import is_gold_dir, load_gold_dir
            from ..tasks.load import is_task_folder, load_task_folders

            if is_task_folder(target):  # agent tasks (tasks/load.py)
                loaded = load_task_folders(target, cfg.limits, root=places.root if from_flag
                                           else places.root_for(places.suite_dir))
            elif not is_gold_dir(target):
                raise ConfigError("a case folder must hold documents with NAME.gold.json files beside them "
                                  "(or be a task folder holding task.yaml)", file=str(target), field="cases")
            else:
                root = places.root if from_flag else places.root_for(places.suite_dir)
                loaded, skipped_here = load_gold_dir(target, cfg.limits, root=root)
                skipped += [{**item, "source": str(target)} for item in skipped_here]
        else:
            loaded = load_cases(target, cfg.limits, root=places.root, inside=places.inside(from_flag),
                                errors=errors)
        _count_cases(loaded, str(target))
        for case in loaded:
            if case.id in seen:
                duplicate = ConfigError(f"duplicate case id (also in {seen[case.id]})", file=case.source,
                                        line=case.line, case_id=case.id, field="id")
                if errors is None:
                    raise duplicate
                errors.add(duplicate)
                continue
            seen[case.id] = f"{case.source}:{case.line}" if case.line else (case.source or "")
            all_cases.append(case)
    return all_cases, skipped


def _count_cases(loaded: list[Case], shown: str | None) -> None:
    """Cases from one file against the suite's limits.max_cases (the first one over it named)."""
    tally = budget.current()
    if tally is not None:
        room = tally.limits.max_cases - tally.cases
        over = loaded[room] if len(loaded) > room else None
        tally.added(len(loaded), shown if over is None else over.source or shown,
                    **({} if over is None else {"line": over.line, "case_id": over.id}))


def _dataset_cases(spec: dict, cfg: SuiteConfig, places: Places, from_flag: bool) -> list[Case]:
    """The cases of a `cases: {format: inspect|hf, path, ...}` entry, read inside the suite's root."""
    from ..cases.datasets import load_dataset_records
    from ..cases.loader import cases_from_records

    base = Path.cwd() if from_flag else places.suite_dir
    root = Path.cwd() if from_flag else places.root_for(places.suite_dir)
    # (line, record): an error in a case names the line its record starts on in the file
    pairs = load_dataset_records(spec, base, root, cfg.limits.max_file_bytes, places.source, with_lines=True)
    if len(pairs) > cfg.limits.max_cases:
        raise ConfigError(f"more than {cfg.limits.max_cases} records (limits.max_cases)", file=places.source,
                          field="cases")
    shown = str(base / spec["path"])
    tally = budget.current()
    if tally is not None:
        data = Path(shown)
        tally.read(data.stat().st_size if data.is_file() else 0, shown)
        for line, record in pairs:
            tally.parsed(record, shown, line=line)
    return cases_from_records(pairs, shown, base, root, cfg.limits)


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
        wanted = set(cfg.case)
        conv_ids = {c.conversation["id"] for c in all_cases if c.conversation is not None}
        missing = sorted(wanted - {c.id for c in all_cases} - conv_ids)
        if missing:
            raise ConfigError(f"--case names an unknown case id {missing[0]!r}", field="case")
        # A conversation runs whole: naming it, or any of its turns, selects every turn.
        whole = {c.conversation["id"] for c in all_cases
                 if c.conversation is not None and (c.id in wanted or c.conversation["id"] in wanted)}
        cases = [c for c in cases if c.id in wanted
                 or (c.conversation is not None and c.conversation["id"] in whole)]
    if not cases:
        raise ConfigError("the filters leave no case to run", file=source, field="category")
    return cases


def _check_baseline(cfg: SuiteConfig, places: Places, from_flag: bool) -> None:
    """The baseline report is a regular file; named in the suite file, it is relative to the
    suite's folder and inside its root. (The gate reads it when the run starts.)"""
    baseline = cfg.gates.baseline
    if not baseline:
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


def _check_isolation(cfg: SuiteConfig, cases: list[Case], source: str | None, dry_run: bool) -> None:
    """A suite that requires isolation refuses to run agent tasks where no sandbox works."""
    if not cfg.require_isolation or dry_run or not any(c.task is not None for c in cases):
        return
    from ..tasks.sandbox import INSTALL_HINT, SandboxUnavailable, sandbox_program

    try:
        found = sandbox_program()
    except SandboxUnavailable as exc:
        raise ConfigError(str(exc), file=source, field="require_isolation") from None
    if found is None:
        raise ConfigError(f"the suite requires isolation and no sandbox works here: {INSTALL_HINT}",
                          file=source, field="require_isolation")


def _check_data_file(spec: Any, places: Places, from_flag: bool) -> None:
    """A `recorded` subject's outputs file is data: confined like a case file when the suite
    names it, and a regular file either way (a FIFO would block the subject's read)."""
    parsed = parse_subject_spec(spec)
    if parsed.get("type") == "recorded" and isinstance(parsed.get("path"), str):
        places.resolve(parsed["path"], "subject.path", from_flag=from_flag)


def _variants(cfg: SuiteConfig, flags: dict, places: Places, dry_run: bool, *, errors: Collector | None = None,
              warnings: list[str] | None = None, offline: bool = False) -> list[Variant]:
    """Each variant's subject built and checked exactly as a run needs it (a dry run too, so
    it refuses what a real run refuses), then, for a dry run, swapped for the mock subject.
    Every variant is checked (each error names its variant); `offline`: an unset API key is a
    warning, since nothing will call the model."""
    local = errors is None  # a caller's collector raises with everything else it gathered
    errors = errors if errors is not None else Collector(cap=1)
    variants = []
    subject_flag = "subject" in flags
    source = None if subject_flag else places.source
    configs: list[dict] = []
    with errors.each():
        configs = variant_configs(cfg, flags)
    for vc in configs:
        with errors.each(), _in_file(source), in_variant(vc["name"]):
            base = Path.cwd() if subject_flag else places.suite_dir
            _check_data_file(vc["subject"], places, subject_flag)
            subject = build_subject(prepare_subject_spec(vc["subject"], cfg), base)
            skill_text = skill_path = skill_folder = None
            if vc.get("skill"):
                skill_flag = "skill" in flags
                skill_text, skill_path, skill_folder = load_skill(
                    vc["skill"], Path.cwd() if skill_flag else places.suite_dir, places, from_flag=skill_flag)
            own = vc.get("prompt")
            prompt = own if own is not None else cfg.prompt
            template = None
            if prompt is not None:
                field = vc.get("prompt_field") or (f"variants.{vc['name']}.prompt" if own is not None else "prompt")
                template = load_template(prompt, vc.get("prompt_name") or "prompt", places, field=field,
                                         undefined=cfg.template_undefined)
            check_subject(subject, warnings, offline, f"variant {vc['name']!r}")
            check_budget_bounds(subject, cfg, vc.get("params") or {}, flags)
            variants.append(Variant(vc["name"], subject, skill_text, skill_path, vc.get("params") or {}, template,
                                    skill_folder))
    if local:
        errors.done()
    if dry_run:
        for variant in variants:
            variant.subject = build_subject({"type": "mock"}, places.suite_dir)
    return variants


@contextmanager
def _in_file(source: str | None) -> Iterator[None]:
    """A subject's spec error names the suite file it came from (the subject cannot)."""
    try:
        yield
    except ConfigError as exc:
        if source is None or exc.file is not None or exc.flag is not None:
            raise
        raise ConfigError(exc.detail, line=exc.line, case_id=exc.case_id, field=exc.field, file=source) from None


def build_judge(cfg: SuiteConfig, graders: dict[str, list[Grader]], base_dir: Path, dry_run: bool, *,
                warnings: list[str] | None = None, offline: bool = False) -> Subject | None:
    """The judge subject; model graders or pairwise judging without one fail before running.
    A dry run builds and checks the real judge first, then swaps in the mock."""
    from ..graders.registry import JUDGE_GRADERS

    needing = sorted({g.name for gs in graders.values() for g in gs
                      if g.name in JUDGE_GRADERS or getattr(g, "needs_judge", False)})
    if cfg.pairwise:
        needing.append("pairwise")
    if cfg.judge is None:
        if needing:
            raise ConfigError(f"{needing[0]!r} needs a judge: set 'judge:' in the suite or --judge SPEC",
                              field="judge")
        return None
    spec = parse_subject_spec(cfg.judge)
    if spec["type"] in PRICED_KINDS and "price" not in spec and spec.get("model") in cfg.prices:
        spec["price"] = cfg.prices[spec["model"]].model_dump(exclude_none=True)
    judge = build_subject(spec, base_dir)
    check_subject(judge, warnings, offline or dry_run, "the judge")
    check_budget_bounds(judge, cfg, {})
    return build_subject({"type": "mock"}, base_dir) if dry_run else judge


def _safe_name(name: str) -> str:
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.")
    return cleaned or "suite"


def _spec_key(specs: list) -> tuple | str:
    """A key for a list of grader specs: the names themselves when every spec is a name (most
    case files), else their canonical JSON."""
    if all(type(s) is str for s in specs):
        return tuple(specs)
    return canonical_json(specs)


def resolve_graders(cfg: SuiteConfig, cases: list[Case], *, errors: Collector | None = None,
                    warnings: list[str] | None = None, source: str | None = None) -> dict[str, list[Grader]]:
    """Build each distinct grader spec once and check every case against its graders (with
    `errors`, every case's problem is gathered). A case's graders add to the suite defaults'
    unless it says `replace`; its transform (or the defaults') is folded into each grader's
    spec; a case with no grader and no expected value is recorded, not graded. A case whose
    `expected` is an object and that names no grader gets `exact` silently no more: `warnings`
    says so, once per file."""
    cache: dict[str, Grader] = {}
    failed: set[str] = set()  # the suite's own specs already said to be bad (not again per case)

    def build(spec: Any, case: Case | None, setting: str = "graders") -> Grader:
        key = canonical_json(spec)
        grader = cache.get(key)
        if grader is None:
            try:
                grader = build_grader(spec)
            except ConfigError as exc:
                if case is None:
                    failed.add(key)
                if case is not None:
                    raise ConfigError(exc.detail, file=case.source, line=case.line, case_id=case.id,
                                      field=exc.field or "graders") from None
                if source is not None and exc.file is None:  # the suite file's own graders
                    raise ConfigError(exc.detail, file=source, field=setting) from None
                raise
            cache[key] = grader
        return grader

    step = errors.each if errors is not None else nullcontext
    # the suite's own graders, each named by its place; with `errors`, every bad one is said,
    # and the cases' graders are still checked
    fallback = []
    for i, spec in enumerate(cfg.graders or []):
        with step():
            fallback.append(build(spec, None, f"graders[{i}]"))
    base = list(cfg.defaults.graders or [])
    for i, spec in enumerate(base):
        with step():
            build(spec, None, f"defaults.graders[{i}]")
    shared: dict[str, list[Grader]] = {}
    out: dict[str, list[Grader]] = {}
    implicit: dict[str, list[Case]] = {}
    code_checked: set = set()
    for case in cases:
        with step():
            where = {"file": case.source, "line": case.line, "case_id": case.id, "field": "graders"}
            if case.graders is not None:
                own_key = _spec_key(case.graders)
                if own_key not in code_checked:  # the same specs on 10,000 cases: checked once
                    check_case_code(case.graders, cfg.allow_case_code, where)
                    code_checked.add(own_key)
            transform = case.transform if case.transform is not None else cfg.defaults.transform
            if case.transform is not None:
                check_case_code(case.transform, cfg.allow_case_code, {**where, "field": "transform"})
            own = case.graders
            if own is None and not base and transform is None:  # as before issue 14
                if fallback:
                    graders = fallback
                elif case.has_expected:
                    graders = [build("exact", case)]
                    if isinstance(case.expected, (dict, list)) and case.turns is None:
                        implicit.setdefault(case.source or "", []).append(case)
                else:
                    graders = []  # recorded, never graded
                for grader in graders:
                    grader.check_case(case)
                out[case.id] = graders
                continue
            if own is None:
                own = list(cfg.graders or []) or (["exact"] if case.has_expected and not base else [])
            specs = list(own) if case.replace_defaults else base + list(own)
            if transform is not None:
                specs = [with_transform(s, transform) for s in specs]
            key = _spec_key(specs)
            graders = shared.get(key)
            if graders is None:
                graders = shared[key] = [build(s, case) for s in specs if not failed or canonical_json(s) not in failed]
            for grader in graders:
                grader.check_case(case)
            out[case.id] = graders
    if warnings is not None:
        warnings.extend(implicit_exact_warning(source, found) for source, found in implicit.items())
    return out
