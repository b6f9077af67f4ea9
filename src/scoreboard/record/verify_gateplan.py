"""verify: the gates a report's plan records settings for (`plan.gates`) recomputed from its
attempts' summary, each one looked for in the report's gates. check_gates compares the gates
the report holds; this names those cut from it, or added to it, by hand."""

from __future__ import annotations

from .verification import Findings

#: the gates gates_of_plan recomputes (a baseline's need its report: only their presence is checked)
_RECOMPUTED = ("fail-under", "fail-under-metric", "all-pass", "min-dq", "min-rubric")


def check_planned_gates(v: Findings, summary: dict | None) -> None:
    from ..stats.gateplan import check_settings, gate_key, gates_of_plan, same_threshold

    check_stated_statistics(v)
    plan, run = v.report.get("plan") or {}, v.report.get("run") or {}
    settings = plan.get("gates")
    if run.get("dry_run") is True or run.get("status") == "running":
        return  # a dry run (no gate), a checkpoint (no gate yet)
    if settings is None:
        _unplanned(v)
        return  # an earlier build's report, a dry run (no gate), a checkpoint (no gate yet)
    if not isinstance(settings, dict):
        v.add("plan.gates", "the gate settings as an object", type(settings).__name__, "plan.gates is not an object",
              "gates")
        return
    if summary is None:
        return
    recorded = v.report.get("gates")
    recorded = recorded if isinstance(recorded, list) else []
    variants = [p.get("name") for p in plan.get("variants") or [] if isinstance(p, dict)]
    try:
        check_settings(settings, [n for n in variants if isinstance(n, str)], summary)
        want = gates_of_plan(settings, summary, variants, v.report.get("attempts") or [], run.get("status"))
    except Exception as exc:  # noqa: BLE001 - a tampered setting is named, never a crash
        v.add("plan.gates", "gate settings a run accepts", settings, f"the plan's gate settings give no gates: {exc}",
              "gates")
        return
    have = {gate_key(g): i for i, g in enumerate(recorded)}
    for g in want:
        if gate_key(g) not in have:
            v.add("gates", g["description"], None, "a gate the plan's settings give is missing from the report",
                  "gates")
        elif not same_threshold(g["threshold"], recorded[have[gate_key(g)]].get("threshold")):
            # the gate's own figures agree with its threshold (check_gates), which is not the plan's
            v.add(f"gates[{have[gate_key(g)]}].threshold", g["threshold"], recorded[have[gate_key(g)]].get("threshold"),
                  "the gate's threshold is not the one the plan's settings give", "gates")
    planned = {gate_key(g) for g in want}
    for i, g in enumerate(recorded):
        if gate_key(g)[0] in _RECOMPUTED and gate_key(g) not in planned:
            v.add(f"gates[{i}]", None, g.get("description") if isinstance(g, dict) else g,
                  "a gate the plan's settings do not give", "gates")
    if settings.get("baseline") and run.get("status") != "waiting" and not any(
            gate_key(g)[0] == "baseline" for g in recorded):
        v.add("gates", "the baseline gates", None, "the run gated against a baseline, and the report holds no "
              "baseline gate", "gates")
    v.checked["planned gates"] += len(want)


#: the graders version first recorded, and the statistics version of the build that first recorded it
GRADERS_VERSIONED = (2, 19)


def check_stated_statistics(v: Findings) -> None:
    """The statistics version a summary states, against what the report's build recorded beside it:
    a graders version (first recorded under statistics 19) or gate settings (`plan.gates`, since 20)
    come only from a build computing that version or later. A version lowered below them by hand
    (a summary of version 6 or earlier is not recomputed: its comparisons and intervals were then
    taken on its word but for its counts) is a mismatch."""
    from ..graders.versions import RECORDED_SINCE_STATISTICS, recorded_version, stated_statistics
    from .verify_totals import OLDEST_CHECKED

    stated = stated_statistics(v.report)
    if stated is None:
        return  # no version (an early build's), or not one: check_summary names the latter
    graders, _ = recorded_version(v.report)
    recorded = "graders" in (((v.report.get("run") or {}).get("versions")) or {})
    floors = []
    if recorded and graders is not None and graders >= GRADERS_VERSIONED[0]:
        floors.append((GRADERS_VERSIONED[1], f"run.versions.graders is {graders}, first recorded by builds "
                                              f"computing statistics {GRADERS_VERSIONED[1]}"))
    if (v.report.get("plan") or {}).get("gates") is not None:
        floors.append((RECORDED_SINCE_STATISTICS, f"plan.gates is recorded, as builds computing statistics "
                                                  f"{RECORDED_SINCE_STATISTICS} or later do"))
    if floors:
        floor, why = max(floors)
        # From statistics 7 on, a summary is recomputed in full as its version computed it (an earlier
        # version stated hides nothing); below, it is taken on its word but for the counts.
        if stated < OLDEST_CHECKED:
            v.add("summary.methods.version", f"{floor} or later", stated,
                  f"statistics version older than the build that wrote the report ({why}): lowered by hand, "
                  "it leaves the summary's comparisons and intervals unchecked", "summary")


def _unplanned(v: Findings) -> None:
    """Gates with no settings: an earlier build's report, or, in one of a statistics version whose
    builds record their settings, settings taken away by hand (so no gate was checked against them)."""
    from ..graders.versions import RECORDED_SINCE_STATISTICS, stated_statistics

    stated, gates = stated_statistics(v.report), v.report.get("gates")
    if (stated or 0) >= RECORDED_SINCE_STATISTICS and isinstance(gates, list) and gates:
        v.add("plan.gates", "the gate settings the run gated by", None, f"the report holds gates but no settings for "
              f"them: every build computing statistics {RECORDED_SINCE_STATISTICS} or later records them", "gates")
