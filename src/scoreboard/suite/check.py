"""The `check` stage: a suite whose cases are the instrument's calibration controls and whose
variants are their conditions (the good output first, then each degraded copy), judged by the
suite's own judge grader `repeats` times. It runs through the one pipeline; the instrument
figures are computed from its attempts (stats/instrument.py), so `verify` recomputes them."""

from __future__ import annotations

from pathlib import Path

from ..cases.controls import Control, load_controls
from ..errors import ConfigError
from ..graders.registry import JUDGE_GRADERS
from ..hashing import sha256_json
from ..render.degrade import UNCHANGED, degrade, unchanged
from ..render.detect import page_source
from ..subjects.control import ControlSubject
from .config import PairwiseConfig
from .paths import Places
from .suite import Suite, Variant

GOOD = "good"


def judge_grader_spec(suite: Suite):
    """The judge grader the check calibrates: the suite's first pointwise, rubric-score or
    llm-judge grader (None when the suite judges pairwise only)."""
    for specs in suite.grader_specs().values():
        for spec in specs:
            name = spec if isinstance(spec, str) else next(iter(spec))
            if name in JUDGE_GRADERS and name != "pairwise":
                return spec
    return None


def judge_hash(judge_spec, grader_spec, pairwise, render_fingerprint: str | None) -> str:
    """What identifies an instrument: the judge, the grader (rubric, dimensions, images) it
    answers through, the pairwise setting and how pages are rendered."""
    return sha256_json({"judge": judge_spec, "grader": grader_spec, "pairwise": pairwise,
                        "render": render_fingerprint})


def check_suite(suite: Suite, root: str | None = None) -> Suite:
    """The check stage of `suite`: controls x conditions x repeats, judged by its judge."""
    cfg = suite.config
    inst = cfg.instrument
    source = suite.source
    if inst is None:
        raise ConfigError("--stage check needs an 'instrument:' block naming the controls", file=source,
                          field="instrument")
    if suite.judge is None:
        raise ConfigError("--stage check needs a judge ('judge:' in the suite or --judge)", file=source, field="judge")
    grader = judge_grader_spec(suite)
    pairwise = cfg.pairwise if inst.pairwise is None else (cfg.pairwise or PairwiseConfig()) if inst.pairwise else None
    if grader is None and not pairwise:
        raise ConfigError("the instrument check needs a judge grader (pointwise, rubric-score or llm-judge) "
                          "or pairwise judging", file=source, field="instrument")
    places = Places.make(suite.base_dir, source, root)
    controls = _controls(inst.controls, cfg, places)
    conditions = _conditions(controls, inst.degrade, source)
    outputs = {name: {} for name in conditions}
    for control in controls:
        outputs[GOOD][control.case.id] = control.good
        page, why = page_source(control.good, ["html", "svg", "markdown"])
        if page is None:
            raise ConfigError(f"a good control must be HTML, SVG or Markdown text: {why}", file=control.case.source,
                              line=control.case.line, case_id=control.case.id, field="output")
        seed = int(sha256_json([cfg.seed, control.case.id])[:8], 16)
        for how in inst.degrade:
            worse = degrade(page.html, how, seed)
            if how in UNCHANGED and unchanged(page.html, worse):
                # the "degraded" copy would be the good page: a judge that scores both alike (rightly)
                # would fail the check for it
                raise ConfigError(f"degradation {how!r} leaves this control's page as it was: {UNCHANGED[how]}; "
                                  "drop it from instrument.degrade or give the control its own \"degraded\" outputs",
                                  file=control.case.source, line=control.case.line, case_id=control.case.id,
                                  field="instrument.degrade")
            outputs[how][control.case.id] = worse
        for name, text in control.supplied.items():
            outputs[f"supplied:{name}"][control.case.id] = text
    variants = [Variant(name, ControlSubject(name, outs)) for name, outs in outputs.items()]
    check_cfg = cfg.model_copy(update={
        "runs": inst.repeats, "judge_runs": 1, "pairwise": pairwise, "fail_under": None,
        "fail_under_metrics": None, "min_dq": None, "min_rubric": None, "gates": cfg.gates.model_copy(
            update={"baseline": None}), "max_dq_drop": None, "graders": [grader] if grader else [],
        "split": "all", "category": None, "case": None})
    if grader is None:
        check_cfg.graders = []
    cases = [c.case for c in controls]
    from ..graders.registry import build_grader

    graders = [build_grader(grader)] if grader is not None else []
    check = Suite(suite.name, check_cfg, cases, variants, {c.id: graders for c in cases}, suite.base_dir,
                  source, cases, [], suite.judge)
    check.stage = "check"
    check.render, check.render_root = suite.render, suite.render_root
    check.instrument = {
        "judge_hash": judge_hash(suite.judge.spec, grader, _pairwise_spec(pairwise), _fingerprint(suite)),
        "grader": grader, "repeats": inst.repeats, "min_accuracy": inst.min_accuracy,
        "min_self_agreement": inst.min_self_agreement, "position_alpha": inst.position_alpha,
        "pairwise": bool(pairwise), "degraded": list(inst.degrade),
        "supplied": sorted(k for k in outputs if k.startswith("supplied:"))}
    return check


def _pairwise_spec(pairwise):
    if not pairwise:
        return None
    return pairwise.model_dump() if hasattr(pairwise, "model_dump") else True


def _fingerprint(suite: Suite) -> str | None:
    return suite.render.fingerprint() if suite.render is not None else None


def instrument_id(suite: Suite) -> str | None:
    """The judge hash of a suite's instrument (None when the suite uses no judge)."""
    if suite.judge is None:
        return None
    grader = judge_grader_spec(suite)
    cfg = suite.config
    if grader is None and not cfg.pairwise:
        return None
    return judge_hash(suite.judge.spec, grader, _pairwise_spec(cfg.pairwise), _fingerprint(suite))


def _controls(paths, cfg, places: Places) -> list[Control]:
    paths = [paths] if isinstance(paths, str) else list(paths)
    out: list[Control] = []
    seen: set[str] = set()
    for rel in paths:
        places.resolve(rel, "instrument.controls", from_flag=False)
        target = places.suite_dir / rel if not Path(rel).is_absolute() else Path(rel)
        for control in load_controls(target, cfg.limits, root=places.root_for(places.suite_dir),
                                     inside=places.inside(False), reserved=tuple(cfg.instrument.degrade)):
            if control.case.id in seen:
                raise ConfigError("duplicate control id", file=control.case.source, line=control.case.line,
                                  case_id=control.case.id, field="id")
            seen.add(control.case.id)
            out.append(control)
    return out


def _conditions(controls: list[Control], degrade_names: list[str], source) -> list[str]:
    """good, the degradations, then the supplied ones (every control must supply the same)."""
    supplied = sorted(controls[0].supplied)
    for c in controls[1:]:
        if sorted(c.supplied) != supplied:
            missing = min(set(supplied) ^ set(c.supplied))
            raise ConfigError(f"every control supplies the same degraded outputs: {missing!r} is not supplied by "
                              "every control", file=c.case.source, line=c.case.line, case_id=c.case.id,
                              field="degraded")
    if not degrade_names and not supplied:
        raise ConfigError("the instrument check needs degraded controls: list some in instrument.degrade or "
                          "supply them", file=source, field="instrument.degrade")
    return [GOOD, *degrade_names, *(f"supplied:{s}" for s in supplied)]
