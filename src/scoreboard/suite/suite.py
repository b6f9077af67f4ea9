"""A resolved suite: cases, variants, graders and settings, and the plan they make."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..cases.case import Case
from ..graders.base import Grader
from ..hashing import sha256_json, sha256_json_items
from ..jsonio import LazyList
from ..subjects.base import Subject
from .config import SuiteConfig


@dataclass
class Variant:
    """A named subject configuration."""

    name: str
    subject: Subject
    skill: str | None = None
    skill_path: str | None = None
    params: dict = field(default_factory=dict)
    #: the prompt template its cases' vars are rendered into (suite/templates.py), or None
    prompt: Any = None
    #: the skill folder's files when the skill names a folder (suite/skills.py), or None
    skill_folder: Any = None

    def describe(self) -> dict:
        """The saved form of the variant, as the report's plan records it."""
        out = {"name": self.name, "subject": self.subject.spec, "skill_path": self.skill_path,
               "skill_hash": sha256_json(self.skill) if self.skill is not None else None,
               "params": self.params}
        if self.prompt is not None:
            out["prompt"] = self.prompt.describe()
        if self.skill_folder is not None:  # every file of it: a changed script changes the plan
            out["skill_folder"] = self.skill_folder.describe()
        return out


@dataclass
class Suite:
    """Everything a run needs, resolved and validated."""

    name: str
    config: SuiteConfig
    cases: list[Case]
    variants: list[Variant]
    graders: dict[str, list[Grader]]
    base_dir: Path
    source: str | None = None
    all_cases: list[Case] = field(default_factory=list)
    #: inputs a source listed but could not turn into cases (e.g. a document with no gold file)
    skipped: list[dict] = field(default_factory=list)
    #: the judge subject for model graders and pairwise judging (None: no judge)
    judge: Subject | None = None
    #: what loading noticed that is not an error (an unset API key when nothing calls a model,
    #: a structured `expected` graded by the default `exact`), one line each
    warnings: list[str] = field(default_factory=list)

    def secrets(self) -> set[str]:
        """Every credential the suite's subjects and judge will send (for the run's scrubber)."""
        found: set[str] = set()
        for subject in [v.subject for v in self.variants] + ([self.judge] if self.judge is not None else []):
            secrets = getattr(subject, "secrets", None)
            if secrets is not None:
                found.update(secrets())
        return found

    def identity(self) -> str:
        """A hash of what the suite runs: its cases, settings and variants (a suite loaded again
        elsewhere, by an executor's worker, must have the same)."""
        plan = self.plan()
        return sha256_json({"fixture_hash": plan["fixture_hash"], "suite_hash": plan["suite_hash"],
                            "variants": plan["variants"], "judge": plan["judge"]})
    # --- visual work (issue 17) ---
    #: how outputs are rendered (None: they are not)
    render: Any = None
    #: the folder a folder output must lie in to be rendered (the suite's root: its folder, or
    #: --root; None: base_dir)
    render_root: Path | None = None
    #: the stage this suite runs (check, screen, heldout; None: the whole suite)
    stage: str | None = None
    #: how the screen stage chose its cases
    stage_selection: dict | None = None
    #: the instrument check's settings (the check stage only)
    instrument: dict | None = None
    #: what the screen and held-out stages of one suite share, hashed (suite/stages.py)
    lineage: dict | None = None
    # --- end visual work ---

    def plan(self) -> dict:
        """The plan as recorded in the report: cases (with the graders each gets and its input
        hash), variants, runs, seed. `fixture_hash` covers exactly the planned cases as recorded,
        so it can be recomputed from the report alone."""
        from .. import __version__

        cases: Any = PlanCases(self.cases, self.grader_specs())
        if len(cases) <= EAGER_PLAN_CASES:
            cases = list(cases)  # small: made once, not again at every read
        return {"fixture_hash": fixture_hash(cases), "suite_hash": self.suite_hash(),
                "scoreboard_version": __version__,
                "cases": cases, "variants": [v.describe() for v in self.variants],
                "runs": self.config.runs, "seed": self.config.seed,
                "split": self.config.split or "default (cases marked heldout excluded)",
                "budget": self.config.budget.model_dump(), "skipped": self.skipped,
                "judge": self.judge.spec if self.judge is not None else None,
                "judge_runs": self.config.judge_runs, **self._plan_extra(), **self.visual_plan()}

    def _plan_extra(self) -> dict:
        """issue 14: the summary's derived metrics and reducers, recorded so verify recomputes them."""
        out: dict = {}
        cfg = self.config
        if cfg.derived_metrics:
            out["derived_metrics"] = {n: d if isinstance(d, str) else d.model_dump(exclude_none=True)
                                      for n, d in cfg.derived_metrics.items()}
        if cfg.reducers:
            out["reducers"] = [r if isinstance(r, str) else r.model_dump(exclude_none=True) for r in cfg.reducers]
        return out

    def visual_plan(self) -> dict:
        """The plan's keys of visual work (issue 17), present only when used."""
        out: dict[str, Any] = {}
        if self.render is not None:
            out["render"] = {**self.render.model_dump(exclude={"browser"}), "fingerprint": self.render.fingerprint()}
        if self.stage is not None:
            out["stage"] = self.stage
        if self.stage_selection is not None:
            out["stage_selection"] = self.stage_selection
        if self.instrument is not None:
            out["instrument"] = self.instrument
        if self.lineage is not None:
            out["lineage"] = self.lineage
        return out

    def grader_specs(self) -> dict[str, list]:
        """Each case's grader specs. Cases that share a list of graders share one list of specs
        (a suite's default graders are one list for every case, not a copy per case)."""
        by_list: dict[int, list] = {}
        out = {}
        for cid, graders in self.graders.items():
            specs = by_list.get(id(graders))
            if specs is None:
                specs = by_list[id(graders)] = [g.spec for g in graders]
            out[cid] = specs
        return out

    def suite_hash(self) -> str:
        """Hash of the settings that change what a run does (not where it writes)."""
        keep = self.config.model_dump(exclude={"output_dir", "formats", "concurrency",
                                               "checkpoint_every", "checkpoint_seconds", "fail_under",
                                               "gates", "cache", "cache_path", "grace_seconds"})
        keep["variants"] = [v.describe() for v in self.variants]
        keep["graders"] = self.grader_specs()
        keep["judge"] = self.judge.spec if self.judge is not None else None
        return sha256_json(keep)


#: a plan of up to this many cases is made once and held; a larger one is made when read
#: (held, its dicts would double what the cases take; made at every read, they cost CPU)
EAGER_PLAN_CASES = 20_000


class PlanCases(LazyList):
    """The plan's cases as the report records them (each with its graders and input hash),
    made from the suite's cases when read: a run of many cases does not hold them twice."""

    def __init__(self, cases: list[Case], specs: dict[str, list]):
        self.cases, self.specs = cases, specs

    def __len__(self) -> int:
        return len(self.cases)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self._entry(c) for c in self.cases[index]]
        return self._entry(self.cases[index])

    def __iter__(self):
        return map(self._entry, self.cases)

    def _entry(self, case: Case) -> dict:
        entry = case.to_dict()
        entry["graders"] = self.specs[case.id]
        entry["input_hash"] = case.input_hash
        return entry


def fixture_hash(plan_cases: list[dict]) -> str:
    """SHA-256 of the planned cases as recorded (each entry without its own input_hash), hashed
    one case at a time rather than as one string of the whole list."""
    return sha256_json_items({k: v for k, v in c.items() if k != "input_hash"} for c in plan_cases)


def resolve_render(config: SuiteConfig, graders: dict[str, list[Grader]]):
    """The render settings of a suite: its `render:` block, or the defaults when a grader or
    pairwise judging needs rendered pages; None when nothing renders."""
    from ..render.settings import RenderSettings

    value = config.render
    if value is False:
        needing = sorted({g.name for gs in graders.values() for g in gs if getattr(g, "needs_render", False)})
        if needing:
            from ..errors import ConfigError

            raise ConfigError(f"grader {needing[0]!r} needs rendered pages, and the suite says render: false",
                              field="render")
        return None
    if isinstance(value, RenderSettings):
        return value
    pairwise = config.pairwise
    wanted = value is True or any(getattr(g, "needs_render", False) for gs in graders.values() for g in gs) \
        or bool(getattr(pairwise, "images", False))
    return RenderSettings() if wanted else None
