"""Stages of open-ended work: `screen` (a cheap run on a stated subset, to pick candidates),
`heldout` (confirmation on the held-out cases), `check` (the judge's instrument check, see
check.py); `judge` is `scoreboard rescore REPORT --allow-judge`. `load_staged` is load_suite
with a stage."""

from __future__ import annotations

import os
import random

from ..errors import ConfigError
from ..located import with_lines
from ..hashing import sha256_json, sha256_json_items
from .load import load_suite, read_suite_file
from .suite import Suite

STAGES = ("check", "screen", "heldout", "judge")


def load_staged(path: str | os.PathLike | None, flags: dict | None = None, *, dry_run: bool = False) -> Suite:
    """The suite of one stage (`flags["stage"]`), or the whole suite when no stage is named (an
    error about a setting of the suite file names its line, as load_suite's do)."""
    try:
        return _load_staged(path, flags, dry_run)
    except ConfigError as exc:
        raise with_lines(exc, None if path is None else str(path)) from None


def _load_staged(path: str | os.PathLike | None, flags: dict | None, dry_run: bool) -> Suite:
    flags = dict(flags or {})
    stage = flags.pop("stage", None)
    if stage is None:
        return load_suite(path, flags, dry_run=dry_run)
    if stage not in STAGES:
        raise ConfigError(f"unknown stage {stage!r} (known: {', '.join(STAGES)})", field="stage")
    if stage == "judge":
        raise ConfigError("the judge stage judges saved outputs: scoreboard rescore REPORT.json --allow-judge "
                          "[--graders FILE]", field="stage")
    if stage == "heldout":
        if flags.get("split"):
            raise ConfigError("--stage heldout chooses the split: leave out --split", field="split")
        flags["split"] = _stages_setting(path).get("heldout") or "heldout"
        suite = load_suite(path, flags, dry_run=dry_run)
        suite.stage = "heldout"
        suite.lineage = stage_lineage(suite)
        return suite
    suite = load_suite(path, flags, dry_run=dry_run)
    if stage == "check":
        from .check import check_suite

        return check_suite(suite, flags.get("root"))
    screen = suite.config.stages.screen if suite.config.stages else None
    if screen is None:
        raise ConfigError("--stage screen needs 'stages: {screen: {first: K} | {sample: K, seed: S} | "
                          "{per_category: K, seed: S}}' in the suite", file=suite.source, field="stages.screen")
    chosen, how = screen_cases(suite.cases, screen.first, screen.sample, screen.per_category, screen.seed)
    suite.cases = chosen
    suite.graders = {c.id: suite.graders[c.id] for c in chosen}
    suite.stage = "screen"
    suite.stage_selection = how
    suite.lineage = stage_lineage(suite)
    return suite


#: settings that say where, how much or which subset a stage runs, not what the suite is: two
#: stages of one suite may differ in them (a cheap screen with --runs 1, a held-out split)
NOT_LINEAGE = {"output_dir", "formats", "concurrency", "checkpoint_every", "checkpoint_seconds", "fail_under",
               "fail_under_metrics", "gates", "cache", "cache_path", "grace_seconds", "split", "stages",
               "category", "case", "runs", "seed", "timeout_ms", "budget", "min_dq", "min_rubric",
               "max_dq_drop", "trust_unchecked_judge", "require_live"}


def stage_lineage(suite: Suite) -> dict:
    """What the stages of one suite share, hashed (recorded as `plan.lineage`): every case of the
    suite whatever its split, the variants, and the settings that decide what a run does. The
    aggregate of a screen and a held-out report refuses two reports whose lineages differ."""
    cases = [c.to_dict() for c in suite.all_cases or suite.cases]
    settings = suite.config.model_dump(exclude=NOT_LINEAGE)
    settings["judge"] = suite.judge.spec if suite.judge is not None else None
    return {"cases": sha256_json_items(cases), "case_count": len(cases),
            "variants": sha256_json([v.describe() for v in suite.variants]), "settings": sha256_json(settings)}


def _stages_setting(path) -> dict:
    if path is None:
        return {}
    data, _ = read_suite_file(path)
    stages = data.get("stages")
    return stages if isinstance(stages, dict) else {}


def screen_cases(cases: list, first: int | None, sample: int | None, per_category: int | None,
                 seed: int) -> tuple[list, dict]:
    """The screen subset, in the cases' own order, and how it was chosen (recorded in the plan).
    A conversation's turns go together (the unit is the conversation)."""
    units: dict[str, list] = {}
    for case in cases:
        key = case.conversation["id"] if case.conversation is not None else case.id
        units.setdefault(key, []).append(case)
    keys = list(units)
    rng = random.Random(seed)
    if first is not None:
        picked, how = keys[:first], {"method": "first", "k": first}
    elif sample is not None:
        picked, how = rng.sample(keys, min(sample, len(keys))), {"method": "sample", "k": sample, "seed": seed}
    else:
        strata: dict[str | None, list[str]] = {}
        for key in keys:
            strata.setdefault(units[key][0].category, []).append(key)
        picked = [k for members in strata.values() for k in rng.sample(members, min(per_category, len(members)))]
        how = {"method": "per_category", "k": per_category, "seed": seed,
               "categories": {str(c): min(per_category, len(m)) for c, m in strata.items()}}
    keep = set(picked)
    chosen = [c for key in keys if key in keep for c in units[key]]
    how.update({"units": len(keep), "of": len(keys), "cases": [k for k in keys if k in keep]})
    return chosen, how
