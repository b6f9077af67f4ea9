"""Stages of open-ended work: `screen` (a cheap run on a stated subset, to pick candidates),
`heldout` (confirmation on the held-out cases), `check` (the judge's instrument check, see
check.py); `judge` is `scoreboard rescore REPORT --allow-judge`. `load_staged` is load_suite
with a stage."""

from __future__ import annotations

import os
import random

from ..errors import ConfigError
from .load import load_suite, read_suite_file
from .suite import Suite

STAGES = ("check", "screen", "heldout", "judge")


def load_staged(path: str | os.PathLike | None, flags: dict | None = None, *, dry_run: bool = False) -> Suite:
    """The suite of one stage (`flags["stage"]`), or the whole suite when no stage is named."""
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
    return suite


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
