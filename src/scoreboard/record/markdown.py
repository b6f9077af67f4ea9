"""Markdown rendering of a report, from the report JSON alone."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from .io import fmt_rate, is_synthetic

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


def _interval(summary: dict) -> str:
    ci = summary.get("pass_rate_ci")
    if not ci or ci.get("low") is None:
        return ""
    return f" ({fmt_rate(ci['low'])}–{fmt_rate(ci['high'])})"


def render_markdown(report: dict, *, failures: int = 3) -> str:
    """The whole Markdown report: summary, comparison, fields, per-case table, first failures."""
    run, plan, summary = report["run"], report["plan"], report["summary"]
    variants = [v["name"] for v in plan["variants"]]
    vs = summary.get("variants", {})
    lines = [f"# scoreboard report: {run.get('suite')}", ""]
    lines.append(f"- **Status**: {run.get('status')}")
    lines.append(f"- **Started**: {run.get('started_at')} · **Finished**: {run.get('finished_at')}")
    lines.append(f"- **Cases**: {len(plan['cases'])} · **Variants**: {', '.join(variants)} · "
                 f"**Runs**: {plan.get('runs')}")
    if plan.get("split"):
        lines.append(f"- **Split**: {plan['split']}")
    lines.append(f"- **Fixture hash**: `{plan.get('fixture_hash')}`")
    if is_synthetic(plan):
        lines.append("- **Data**: every case is synthetic; accuracy here does not measure production performance.")
    lines.append("")
    lines += ["## Summary", "",
              "| variant | pass rate (95% CI) | passed / judged | errors | not run | mean run | min run |",
              "|---|---|---|---|---|---|---|"]
    for name in variants:
        s = vs.get(name, {})
        judged = s.get("passed", 0) + s.get("failed", 0) + s.get("errors", 0)
        lines.append(f"| {cell(name)} | {fmt_rate(s.get('pass_rate'))}{_interval(s)} | {s.get('passed', 0)} / "
                     f"{judged} | {s.get('errors', 0)} | {s.get('not_run', 0)} | "
                     f"{fmt_rate(s.get('mean_pass_rate'))} | {fmt_rate(s.get('min_pass_rate'))} |")
    lines.append("")
    lines += _comparisons(summary)
    lines += _judges(summary.get("judges"), summary.get("judge_agreement"))
    lines += _gates(report.get("gates") or [])
    lines += _measurements(variants, vs)
    if summary.get("not_measured"):
        lines += ["## Not measured", ""]
        lines += [f"- {item.get('what')}: {item.get('why')}" for item in summary["not_measured"]]
        lines.append("")
    if plan.get("skipped"):
        lines += ["## Skipped inputs", ""]
        lines += [f"- {cell(item.get('document') or item.get('id') or item)}: {item.get('reason', 'skipped')}"
                  for item in plan["skipped"]]
        lines.append("")
    lines += _fields(variants, vs)
    lines += _cases(report, variants)
    lines += _failures(report, failures)
    return "\n".join(lines).rstrip() + "\n"


def _comparisons(summary: dict) -> list[str]:
    comps = summary.get("comparisons") or []
    if not comps:
        return []
    out = ["## Paired comparison", "",
           "| A vs B | cases | A wins | B wins | ties | mean diff (95% CI) | sign test p | McNemar p |",
           "|---|---|---|---|---|---|---|---|"]
    for c in comps:
        diff = c.get("mean_difference")
        ci = c.get("mean_difference_ci") or {}
        diff_s = "n/a" if diff is None else f"{diff:+.3f}"
        if ci.get("low") is not None:
            diff_s += f" ({ci['low']:+.3f} to {ci['high']:+.3f})"
        p = c.get("sign_test_p")
        m = (c.get("mcnemar") or {}).get("p")
        out.append(f"| {cell(c['a'])} vs {cell(c['b'])} | {c.get('cases')} | {c.get('a_wins')} | {c.get('b_wins')} "
                   f"| {c.get('ties')} | {diff_s} | {'n/a' if p is None else f'{p:.4g}'} | "
                   f"{'n/a' if m is None else f'{m:.4g}'} |")
    out.append("")
    for flag in sorted({f for c in comps for f in c.get("flags", [])}):
        out.append(f"- ⚠️ {flag}")
    out.append("")
    return out


def _judges(judges: dict | None, agreement: dict | None) -> list[str]:
    if not judges and not agreement:
        return []
    out = ["## Model-graded evaluation", ""]
    if judges:
        out += ["Judge usage is counted apart from the subjects'. A judge failure is *not assessed*, never a pass or a fail.",
                "", "| variant | judged | judge failures | judge requests | judge tokens (in/out) | judge cost USD | self-agreement |",
                "|---|---|---|---|---|---|---|"]
        for name, v in judges.get("variants", {}).items():
            u = v.get("usage", {})
            agree = v.get("self_agreement")
            out.append(f"| {cell(name)} | {v.get('judged', 0)} | {v.get('judge_failures', 0)} | "
                       f"{_fmt_measure(u.get('requests'))} | {_fmt_measure(u.get('input_tokens'))} / "
                       f"{_fmt_measure(u.get('output_tokens'))} | {_fmt_measure(u.get('cost_usd'))} | "
                       f"{'n/a' if agree is None else f'{agree:.0%}'} |")
        out.append("")
        dims = {d for v in judges.get("variants", {}).values() for d in (v.get("pointwise") or {})}
        if dims:
            names = list(judges["variants"])
            out += ["Blind pointwise scores (0-3, mean):", "", "| dimension | " + " | ".join(cell(n) for n in names) + " |",
                    "|---|" + "---|" * len(names)]
            for d in sorted(dims):
                vals = [judges["variants"][n].get("pointwise", {}).get(d) for n in names]
                out.append(f"| {cell(d)} | " + " | ".join("n/a" if x is None else f"{x:.2f}" for x in vals) + " |")
            out.append("")
        for dq in judges.get("dq", []):
            ci = dq.get("ci") or {}
            ci_s = f" (95% CI {ci['low']:+.2f} to {ci['high']:+.2f})" if ci.get("low") is not None else ""
            small = "; small sample: fewer than 30 cases" if dq.get("small_sample") else ""
            out.append(f"- **dQ {cell(dq['a'])} − {cell(dq['b'])}**: {dq['dq']:+.2f}{ci_s} on {dq['cases']} cases{small}")
        for pw in judges.get("pairwise", []):
            pc = pw.get("position_consistency")
            out.append(f"- **pairwise {cell(pw['a'])} vs {cell(pw['b'])}**: {pw['a_wins']} wins, {pw['b_wins']} losses, "
                       f"{pw['ties']} ties over {pw['cases']} cases; position consistency "
                       f"{'n/a' if pc is None else f'{pc:.0%}'}; {pw.get('judge_failures', 0)} judge failures "
                       f"({pw.get('note', '')})")
        out.append("")
    if agreement:
        out += ["### Judge agreement with human reviews", ""]
        for key, value in agreement.items():
            if isinstance(value, (dict, list)):
                value = json.dumps(value, ensure_ascii=False)
            out.append(f"- {cell(key)}: {cell(value)}")
        out.append("")
    return out


def _gates(gates: list[dict]) -> list[str]:
    if not gates:
        return []
    out = ["## Gates", ""]
    for g in gates:
        mark = "✅ passed" if g.get("passed") else "❌ failed"
        out.append(f"- {mark}: {g.get('description') or g.get('gate')}")
    out.append("")
    return out


def _fmt_measure(m: dict | None) -> str:
    if not m:
        return "unknown"
    total = m.get("total")
    if total is None:
        if not m.get("known_count"):
            return "unknown"
        return f"unknown ({m['known_count']} known, subtotal {m['known_subtotal']:g}; {m['unknown_count']} unknown)"
    return f"{total:g}"


def _measurements(variants: list[str], vs: dict) -> list[str]:
    out = ["## Measurements", "", "| variant | latency p50 ms | latency p95 ms | input tokens | output tokens | cost USD | requests |",
           "|---|---|---|---|---|---|---|"]
    for name in variants:
        m = vs.get(name, {}).get("measurements", {})
        lat = m.get("latency_ms") or {}
        p50 = "unknown" if lat.get("median") is None else f"{lat['median']:.1f}"
        p95 = "unknown" if lat.get("p95") is None else f"{lat['p95']:.1f}"
        out.append(f"| {cell(name)} | {p50} | {p95} | {_fmt_measure(m.get('input_tokens'))} | "
                   f"{_fmt_measure(m.get('output_tokens'))} | {_fmt_measure(m.get('cost_usd'))} | "
                   f"{_fmt_measure(m.get('requests'))} |")
    out.append("")
    return out


def _fields(variants: list[str], vs: dict) -> list[str]:
    paths = sorted({p for name in variants for p in vs.get(name, {}).get("field_accuracy", {})})
    if not paths:
        return []
    out = ["## Per-field accuracy", "", "| field | " + " | ".join(cell(v) for v in variants) + " |",
           "|---|" + "---|" * len(variants)]
    for path in paths:
        cells = []
        for name in variants:
            r = vs.get(name, {}).get("field_accuracy", {}).get(path)
            cells.append("n/a" if r is None else f"{icon(r)} {fmt_rate(r)}")
        out.append(f"| {cell(path)} | " + " | ".join(cells) + " |")
    out.append("")
    return out


def _cases(report: dict, variants: list[str]) -> list[str]:
    tally: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0])
    for a in report["attempts"]:
        t = tally[(a["case_id"], a["variant"])]
        t[0] += a["status"] == "passed"
        t[1] += a["status"] in ("passed", "failed", "error")
        t[2] += a["status"] == "error"
    out = ["## Cases", "", "| case | category | " + " | ".join(cell(v) for v in variants) + " |",
           "|---|---|" + "---|" * len(variants)]
    for c in report["plan"]["cases"]:
        cells = []
        for name in variants:
            passed, judged, errors = tally.get((c["id"], name), (0, 0, 0))
            mark = "➖" if not judged else "✅" if passed == judged else "❌" if passed == 0 else "⚠️"
            extra = f" ({errors} error{'s' if errors != 1 else ''})" if errors else ""
            cells.append(f"{mark} {passed}/{judged}{extra}")
        out.append(f"| {cell(c['id'])} | {cell(c.get('category') or '')} | " + " | ".join(cells) + " |")
    out.append("")
    return out


def _failures(report: dict, limit: int) -> list[str]:
    failed = [a for a in report["attempts"] if a["status"] in FAILED]
    if not failed:
        return ["## Failures", "", "None.", ""]
    expected = {c["id"]: c.get("expected") for c in report["plan"]["cases"]}
    out = [f"## Failures ({len(failed)}; first {min(limit, len(failed))} expanded)", ""]
    for a in failed[:limit]:
        out.append(f"### {a['case_id']} · {a['variant']} · run {a['run']} · {a['status']}")
        out.append("")
        if a.get("error"):
            out.append(f"- **Error**: {a['error']}")
        for g in a.get("grades", []):
            if g.get("passed") is not True:
                out.append(f"- **{g['grader']}**: {g.get('reason') or 'failed'}")
                for f in g.get("fields") or []:
                    if not f.get("passed"):
                        out.append(f"  - `{f['path']}`: expected `{json.dumps(f.get('expected'), ensure_ascii=False)}`, "
                                   f"got `{json.dumps(f.get('actual'), ensure_ascii=False)}`")
        out.append("")
        if a["case_id"] in expected and expected[a["case_id"]] is not None:
            out += ["Expected:", "", _block(expected[a["case_id"]]), ""]
        output = a.get("output") or {}
        if output.get("text") is not None:
            out += ["Output:", "", _block(output["text"]), ""]
    if len(failed) > limit:
        out.append(f"{len(failed) - limit} more failures are in the JSON report.")
        out.append("")
    return out
