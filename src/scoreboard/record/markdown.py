"""Markdown rendering of a report, from the report JSON alone (read through its typed view)."""

from __future__ import annotations

import json
from typing import Any

from .io import fields_over, fmt_rate
from .schema import Gate, Plan
from .schema_summary import (
    JudgeAgreement,
    JudgeSummary,
    MeasurementSummary,
    Summary,
    VariantSummary,
)
from .view import ReportView, as_view

FAILED = ("failed", "error", "interrupted")


def icon(rate: float | None) -> str:
    """✅ at or above 90%, ⚠️ at or above 70%, ❌ below."""
    if rate is None:
        return "➖"
    return "✅" if rate >= 0.9 else "⚠️" if rate >= 0.7 else "❌"


def cell(text: Any) -> str:
    """A value made safe for one Markdown table cell."""
    s = "" if text is None else str(text)
    return s.replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " ")


def _block(value: Any, limit: int = 2000) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=2)
    if len(text) > limit:
        text = text[:limit] + f"\n… ({len(text) - limit} more characters)"
    fence = "```"
    while fence in text:
        fence += "`"
    return f"{fence}\n{text}\n{fence}"


def _interval(s: VariantSummary) -> str:
    ci = s.pass_rate_ci
    if ci is None or ci.low is None:
        return ""
    return f" ({fmt_rate(ci.low)}–{fmt_rate(ci.high)})"


def _synthetic(plan: Plan) -> bool:
    # io.is_synthetic's rule on the typed plan: only when every case is marked synthetic.
    return bool(plan.cases) and all(c.synthetic is True for c in plan.cases)


def _batches(run, variants: list[str], vs) -> list[str]:
    """The provider batches of a batch: true run, and what still waits on them."""
    if not run.batches:
        return []
    out = ["## Batches", "", "| provider | batch | requests | state | ended as | reason |", "|---|---|---|---|---|---|"]
    for b in run.batches:
        reason = "; ".join(x for x in (b.reason, b.cancel) if x)
        out.append(f"| {b.provider} | `{cell(b.batch_id or b.submission)}` | {b.requests} | {b.state} | "
                   f"{b.status or ''} | {cell(reason)} |")
    waiting = [(name, vs[name].waiting) for name in variants if name in vs and vs[name].waiting]
    if waiting:
        out += ["", "Waiting on a batch: " + ", ".join(f"{name} {n}" for name, n in waiting) + " attempts."]
    out.append("")
    return out


def render_markdown(view: ReportView, *, failures: int = 3) -> str:
    """The whole Markdown report: summary, comparison, fields, per-case table, first failures."""
    view = as_view(view)
    report = view.report
    run, plan, summary = report.run, report.plan, report.summary
    variants = [v.name for v in plan.variants]
    vs = summary.variants
    lines = [f"# scoreboard report: {run.suite}", ""]
    lines.append(f"- **Status**: {run.status}")
    if run.status == "waiting":
        lines.append("- **Waiting**: some attempts wait on provider batches; they are not finished and not in "
                     "the pass rates. Collect them with `scoreboard run --resume` on this run's folder.")
    lines.append(f"- **Started**: {run.started_at} · **Finished**: {run.finished_at}")
    lines.append(f"- **Cases**: {view.total_cases or len(plan.cases)} · **Variants**: {', '.join(variants)} · "
                 f"**Runs**: {plan.runs}")
    if plan.split:
        lines.append(f"- **Split**: {plan.split}")
    lines.append(f"- **Fixture hash**: `{plan.fixture_hash}`")
    if run.synthetic if "synthetic" in run.model_fields_set else _synthetic(plan):
        lines.append("- **Data**: every case is synthetic; accuracy here does not measure production performance.")
    if view.omitted:
        lines.append(_omitted_line(view))
    lines.append("")
    lines += ["## Summary", "",
              "| variant | pass rate (95% CI) | passed / judged | errors | not assessed | not run | mean run "
              "| min run |",
              "|---|---|---|---|---|---|---|---|"]
    for name in variants:
        lines.append(_summary_row(name, vs.get(name)))
    lines.append("")
    lines += _pass_at_k(variants, vs)
    lines += _methods(summary)
    lines += _comparisons(summary)
    lines += _judges(summary.judges, summary.judge_agreement)
    lines += _gates(report.gates)
    lines += _measurements(variants, vs)
    if summary.not_measured:
        lines += ["## Not measured", ""]
        lines += [f"- {item.what}: {item.why}" for item in summary.not_measured]
        lines.append("")
    if plan.skipped:  # entries are source-specific: a plain mapping each
        lines += ["## Skipped inputs", ""]
        lines += [f"- {cell(item.get('document') or item.get('id') or item)}: {item.get('reason', 'skipped')}"
                  for item in plan.skipped]
        lines.append("")
    lines += _batches(run, variants, vs)
    lines += _fields(variants, vs)
    lines += _cases(view, variants)
    lines += _failures(view, failures)
    return "\n".join(lines).rstrip() + "\n"


def _summary_row(name: str, s: VariantSummary | None) -> str:
    if s is None:
        return f"| {cell(name)} | n/a | 0 / 0 | 0 | 0 | 0 | n/a | n/a |"
    judged = s.passed + s.failed + s.errors
    return (f"| {cell(name)} | {fmt_rate(s.pass_rate)}{_interval(s)} | {s.passed} / {judged} | {s.errors} | "
            f"{s.unassessed} | {s.not_run} | {fmt_rate(s.mean_pass_rate)} | {fmt_rate(s.min_pass_rate)} |")


def _pass_at_k(variants: list[str], vs: dict[str, VariantSummary]) -> list[str]:
    rows = []
    for name in variants:
        s = vs.get(name)
        if s is None or not s.pass_at_k:
            continue
        for k, fig in s.pass_at_k.items():
            hat = (s.pass_hat_k or {}).get(k)
            rows.append(f"| {cell(name)} | {k} | {_k_cell(fig)} | {_k_cell(hat)} |")
    if not rows:
        return []
    return ["pass@k (at least one of k runs passes) and pass^k (all k runs pass), unbiased per case, "
            "averaged over cases, 95% CI by case:", "", "| variant | k | pass@k | pass^k |", "|---|---|---|---|",
            *rows, ""]


def _k_cell(fig) -> str:
    if fig is None:
        return "n/a"
    ci = fig.ci
    interval = f" ({fmt_rate(ci.low)}–{fmt_rate(ci.high)})" if ci is not None and ci.low is not None else ""
    return f"{fmt_rate(fig.value)}{interval}"


def _methods(summary: Summary) -> list[str]:
    methods = summary.methods
    if methods is None:
        return []
    words = [f"- {cell(name)}: {text}" for name, text in (methods.model_extra or {}).items()]
    return ["Intervals (the case is the unit):", "", *words, ""]


def _omitted_line(view: ReportView) -> str:
    o = view.omitted or {}
    left = f"{o.get('passes_omitted', 0):,} passing attempts"
    if o.get("not_passed_omitted"):
        left += f" and {o['not_passed_omitted']:,} that did not pass"
    return (f"- **Attempts shown**: {len(view.report.attempts):,} of {view.total_attempts:,} (every attempt "
            f"that did not pass, up to {o.get('cap', 0):,}, then an even sample of passes); {left} are left "
            f"out here. Counts and rates cover every attempt; the JSON report holds them all.")


def _comparisons(summary: Summary) -> list[str]:
    comps = summary.comparisons
    if not comps:
        return []
    out = ["## Paired comparison", "",
           "| A vs B | cases | A wins | B wins | ties | mean diff (95% CI) | sign test p | McNemar p "
           "| detectable (80% power) |",
           "|---|---|---|---|---|---|---|---|---|"]
    for c in comps:
        diff = c.mean_difference
        ci = c.mean_difference_ci
        diff_s = "n/a" if diff is None else f"{diff:+.3f}"
        if ci is not None and ci.low is not None:
            diff_s += f" ({ci.low:+.3f} to {ci.high:+.3f})"
        p = c.sign_test_p
        m = c.mcnemar.p if c.mcnemar is not None else None
        out.append(f"| {cell(c.a)} vs {cell(c.b)} | {c.cases} | {c.a_wins} | {c.b_wins} "
                   f"| {c.ties} | {diff_s} | {'n/a' if p is None else f'{p:.2g}'} | "
                   f"{'n/a' if m is None else f'{m:.2g}'} | {_detectable(c.detectable_difference)} |")
    out.append("")
    for c in comps:  # each flag with the pair it concerns
        for flag in c.flags:
            out.append(f"- ⚠️ {cell(c.a)} vs {cell(c.b)}: {flag}")
        for flag in c.field_flags:
            out.append(f"- {cell(c.a)} vs {cell(c.b)}, per-field figures: {flag}")
        d = c.detectable_difference
        if d is not None and d.value is not None:
            out.append(f"- {cell(c.a)} vs {cell(c.b)}: this run could detect differences of "
                       f"{d.value * 100:.0f} points or more (80% power, alpha {d.alpha:g}, paired t over "
                       f"{d.cases} cases; spread of differences from {d.sd_from})")
    out.append("")
    return out


def _detectable(d) -> str:
    return "n/a" if d is None or d.value is None else f"±{d.value * 100:.0f} points"


def _judges(judges: JudgeSummary | None, agreement: JudgeAgreement | None) -> list[str]:
    if not judges and not agreement:
        return []
    out = ["## Model-graded evaluation", ""]
    if judges:
        out += ["Judge usage is counted apart from the subjects'. A judge failure, or a judge whose runs "
                "split evenly, is *not assessed*, never a pass or a fail.",
                "", "| variant | judged | judge failures | no majority | judge requests | judge tokens (in/out) "
                "| judge cost USD | self-agreement |",
                "|---|---|---|---|---|---|---|---|"]
        for name, v in judges.variants.items():
            u = v.usage
            agree = v.self_agreement
            out.append(f"| {cell(name)} | {v.judged} | {v.judge_failures} | {v.no_majority} | "
                       f"{_fmt_measure(u.get('requests'))} | {_fmt_measure(u.get('input_tokens'))} / "
                       f"{_fmt_measure(u.get('output_tokens'))} | {_fmt_measure(u.get('cost_usd'))} | "
                       f"{'n/a' if agree is None else f'{agree:.0%}'} |")
        out.append("")
        dims = {d for v in judges.variants.values() for d in (v.pointwise or {})}
        if dims:
            names = list(judges.variants)
            out += ["Blind pointwise scores (0-3, mean over cases, each case's runs averaged first):", "", "| dimension | " + " | ".join(cell(n) for n in names) + " |",
                    "|---|" + "---|" * len(names)]
            for d in sorted(dims):
                vals = [(judges.variants[n].pointwise or {}).get(d) for n in names]
                out.append(f"| {cell(d)} | " + " | ".join("n/a" if x is None else f"{x:.2f}" for x in vals) + " |")
            out.append("")
        for dq in judges.dq or ():
            ci = dq.ci
            ci_s = f" (95% CI {ci.low:+.2f} to {ci.high:+.2f})" if ci is not None and ci.low is not None else ""
            flags = "".join(f"; {f}" for f in dq.flags) or ("; small sample: fewer than 30 cases"
                                                            if dq.small_sample else "")
            out.append(f"- **dQ {cell(dq.a)} − {cell(dq.b)}**: {dq.dq:+.2f}{ci_s} on {dq.cases} cases{flags}")
        for pw in judges.pairwise or ():
            pc = pw.position_consistency
            out.append(f"- **pairwise {cell(pw.a)} vs {cell(pw.b)}**: {pw.a_wins} wins, {pw.b_wins} losses, "
                       f"{pw.ties} ties over {pw.cases} cases; position consistency "
                       f"{'n/a' if pc is None else f'{pc:.0%}'}; {pw.judge_failures} judge failures "
                       f"({pw.note})" + "".join(f"; {f}" for f in pw.flags))
        out.append("")
    if agreement:
        out += ["### Judge agreement with human reviews", ""]
        # Every figure of the block, in the order the statistics wrote them.
        for key, value in agreement.model_dump(exclude_unset=True).items():
            if isinstance(value, (dict, list)):
                value = json.dumps(value, ensure_ascii=False)
            out.append(f"- {cell(key)}: {cell(value)}")
        out.append("")
    return out


def _gates(gates: list[Gate]) -> list[str]:
    if not gates:
        return []
    out = ["## Gates", ""]
    for g in gates:
        mark = "✅ passed" if g.passed else "❌ failed"
        out.append(f"- {mark}: {g.description or g.gate}")
    out.append("")
    return out


def _fmt_measure(m: MeasurementSummary | None) -> str:
    if m is None:
        return "unknown"
    if m.total is None:
        if not m.known_count:
            return "unknown"
        return f"unknown ({m.known_count} known, subtotal {m.known_subtotal:g}; {m.unknown_count} unknown)"
    return f"{m.total:g}"


def _measurements(variants: list[str], vs: dict[str, VariantSummary]) -> list[str]:
    out = ["## Measurements", "", "| variant | latency p50 ms | latency p95 ms | input tokens | output tokens | cost USD | requests |",
           "|---|---|---|---|---|---|---|"]
    for name in variants:
        s = vs.get(name)
        m = s.measurements if s is not None else {}
        lat = m.get("latency_ms")
        p50 = "unknown" if lat is None or lat.median is None else f"{lat.median:.1f}"
        p95 = "unknown" if lat is None or lat.p95 is None else f"{lat.p95:.1f}"
        out.append(f"| {cell(name)} | {p50} | {p95} | {_fmt_measure(m.get('input_tokens'))} | "
                   f"{_fmt_measure(m.get('output_tokens'))} | {_fmt_measure(m.get('cost_usd'))} | "
                   f"{_fmt_measure(m.get('requests'))} |")
    out.append("")
    return out


def _fields(variants: list[str], vs: dict[str, VariantSummary]) -> list[str]:
    accuracy = {name: vs[name].field_accuracy if name in vs else {} for name in variants}
    paths = sorted({p for name in variants for p in accuracy[name]})
    if not paths:
        return []
    out = ["## Per-field accuracy", "", "| field | " + " | ".join(cell(v) for v in variants) + " |",
           "|---|" + "---|" * len(variants)]
    for path in paths:
        cells = []
        for name in variants:
            r = accuracy[name].get(path)
            cells.append("n/a" if r is None else f"{icon(r)} {fmt_rate(r)}")
        out.append(f"| {cell(path)} | " + " | ".join(cells) + " |")
    overall = {name: vs[name] for name in variants if name in vs and vs[name].field_accuracy_overall is not None}
    if overall:
        cells = []
        for name in variants:
            fo = overall[name].field_accuracy_overall if name in overall else None
            ci = fo.ci if fo is not None else None
            interval = f" [{fmt_rate(ci.low)}–{fmt_rate(ci.high)}]" if ci is not None and ci.low is not None else ""
            cells.append("n/a" if fo is None else f"{icon(fo.value)} {fmt_rate(fo.value)}{interval}")
        out.append("| **all fields** | " + " | ".join(cells) + " |")
        out.append("")
        for name, s in overall.items():
            out.append(f"- {cell(name)}: {fields_over(s)}")
    out.append("")
    return out


def _cases(view: ReportView, variants: list[str]) -> list[str]:
    # Counted from every attempt (view.tallies), so right even when attempts were left out.
    out = ["## Cases", "", "| case | category | " + " | ".join(cell(v) for v in variants) + " |",
           "|---|---|" + "---|" * len(variants)]
    for case_id, category in view.cases():
        cells = []
        for name in variants:
            t = view.tallies.get((case_id, name))
            passed, judged, errors = (t.passed, t.judged, t.errors) if t is not None else (0, 0, 0)
            mark = "➖" if not judged else "✅" if passed == judged else "❌" if passed == 0 else "⚠️"
            extra = f" ({errors} error{'s' if errors != 1 else ''})" if errors else ""
            if t is not None and t.unassessed:
                extra += f" ({t.unassessed} not assessed)"
            cells.append(f"{mark} {passed}/{judged}{extra}")
        out.append(f"| {cell(case_id)} | {cell(category or '')} | " + " | ".join(cells) + " |")
    out.append("")
    return out


def _first_of_distinct_cases(attempts: list, limit: int) -> list:
    """Up to `limit` attempts, one per case first (three runs of one case say less than three cases)."""
    seen: set[str] = set()
    first = [a for a in attempts if not (a.case_id in seen or seen.add(a.case_id))]
    rest = [a for a in attempts if a not in first]
    return (first + rest)[:limit]


def _failures(view: ReportView, limit: int) -> list[str]:
    total = view.failures_total()
    unassessed = [a for a in view.report.attempts if a.status == "unassessed"]
    not_assessed_total = sum(getattr(t, "unassessed", 0) for t in view.tallies.values())
    out = _failure_list(view, [a for a in view.report.attempts if a.status in FAILED], total, limit,
                        "Failures", "failures")
    if not_assessed_total:
        out += _failure_list(view, unassessed, not_assessed_total, limit, "Not assessed", "not-assessed attempts")
    return out


def _failure_list(view: ReportView, attempts: list, total: int, limit: int, title: str, noun: str) -> list[str]:
    if not total:
        return [f"## {title}", "", "None.", ""]
    report = view.report
    shown = _first_of_distinct_cases(attempts, limit)
    expected = {c.id: c.expected for c in report.plan.cases}
    out = [f"## {title} ({total}; first {len(shown)} expanded)", ""]
    for a in shown:
        out.append(f"### {a.case_id} · {a.variant} · run {a.run} · {a.status}")
        out.append("")
        if a.error:
            out.append(f"- **Error**: {a.error}")
        for g in a.grades:
            if g.passed is not True:
                out.append(f"- **{g.grader}**: {g.reason or 'failed'}")
                for f in g.fields or ():
                    if not f.passed:
                        out.append(f"  - `{f.path}`: expected `{json.dumps(f.expected, ensure_ascii=False)}`, "
                                   f"got `{json.dumps(f.actual, ensure_ascii=False)}`")
        out.append("")
        if expected.get(a.case_id) is not None:
            out += ["Expected:", "", _block(expected[a.case_id]), ""]
        if a.output is not None and a.output.text is not None:
            out += ["Output:", "", _block(a.output.text), ""]
    if total > len(shown):
        out.append(f"{total - len(shown)} more {noun} are in the JSON report.")
        out.append("")
    return out
