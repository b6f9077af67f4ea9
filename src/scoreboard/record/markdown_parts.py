"""Sections of the Markdown report that stand on their own: model-graded figures (judges,
rubric scores, dQ, pairwise, agreement), per-field and per-document accuracy, and the cell
helpers every section uses."""

from __future__ import annotations

from collections.abc import Iterator

from .agreement_words import agreement_lines, confusion_rows
from .fieldwords import DocumentErrors, errored_words
from .figures import judge_usage_words
from .io import fields_over, fmt_rate
from .mdtext import cell
from .pairwise_words import pairwise_failures
from .requests_text import usd
from .schema import Gate
from .schema_base import MeasurementSummary
from .schema_judge import JudgeAgreement, JudgeSummary
from .schema_summary import VariantSummary
from .view import ReportView


def icon(rate: float | None) -> str:
    """✅ at or above 90%, ⚠️ at or above 70%, ❌ below."""
    if rate is None:
        return "➖"
    return "✅" if rate >= 0.9 else "⚠️" if rate >= 0.7 else "❌"


def judges_section(judges: JudgeSummary | None, agreement: JudgeAgreement | None,
                   planned: int | None = None, pairwise=None) -> list[str]:
    """The model-graded section; `planned` (the plan's cases) says how many dQ left out;
    `pairwise` (the report's block) why each pair's unjudged comparisons were not judged."""
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
            # no grade of the variant asked the judge anything (pairwise usage is the pair's): a known 0
            spent = (f"{fmt_measure(u.get('requests'))} | {fmt_measure(u.get('input_tokens'))} / "
                     f"{fmt_measure(u.get('output_tokens'))} | {fmt_measure(u.get('cost_usd'), money=True)}") if u \
                else "0 | 0 / 0 | 0"
            out.append(f"| {cell(name)} | {v.judged} | {v.judge_failures} | {v.no_majority} | {spent} | "
                       f"{'n/a' if agree is None else f'{agree:.0%}'} |")
        out.append("")
        out += _choice_counts(judges)
        out += _rubric_scores(judges)
        out += _pointwise_table(judges)
        for dq in judges.dq or ():
            ci = dq.ci
            method = f", {ci.method}" if ci is not None and ci.method else ""
            ci_s = f" (95% CI {ci.low:+.2f} to {ci.high:+.2f}{method})" if ci is not None and ci.low is not None \
                else " (no interval)"
            flags = "".join(f"; {cell(f)}" for f in dq.flags) or ("; small sample: fewer than 30 cases"
                                                            if dq.small_sample else "")
            # dQ pairs the cases where both variants have a pointwise score; the rest are left out
            on = _n_cases(dq.cases) if planned is None or dq.cases >= planned else \
                f"{dq.cases} of {_n_cases(planned)}"
            out.append(f"- **dQ {cell(dq.a)} − {cell(dq.b)}**: {dq.dq:+.2f}{ci_s} on {on} where "
                       f"both variants have a pointwise score{flags}")
        unjudged = pairwise_failures(pairwise)
        for pw in judges.pairwise or ():
            pc = pw.position_consistency
            out.append(f"- **pairwise {cell(pw.a)} vs {cell(pw.b)}**: {pw.a_wins} wins, {pw.b_wins} losses, "
                       f"{pw.ties} ties over {pw.cases} cases; position consistency "
                       f"{'n/a' if pc is None else f'{pc:.0%}'}; {pw.judge_failures} judge failures "
                       f"({cell(pw.note)})" + "".join(f"; {cell(f)}" for f in pw.flags)
                       + (f"; {cell(judge_usage_words(pw.usage))}" if pw.usage else ""))
            out += [f"  - not assessed: {cell(why)}" for why in unjudged.get((pw.a, pw.b), ())]
        out.append("")
    if agreement:
        block = agreement.model_dump(exclude_unset=True)
        out += ["### Judge agreement with human reviews", "", "| judge verdict | human pass | human fail |",
                "|---|---|---|"]
        out += [f"| {who} | {hp:,} | {hf:,} |" for who, hp, hf in confusion_rows(block)]
        out += [""] + [f"- {cell(line)}" for line in agreement_lines(block, confusion=False)] + [""]
    return out


def _n_cases(n: int) -> str:
    return f"{n} case{'' if n == 1 else 's'}"


def _pointwise_table(judges: JudgeSummary) -> list[str]:
    """Blind pointwise means per dimension, each with its interval (the case is the unit) and the
    cases it is over; the interval's method and a small sample are said under the table."""
    dims = {d for v in judges.variants.values() for d in (v.pointwise or {})}
    if not dims:
        return []
    names = list(judges.variants)
    out = ["Blind pointwise scores (0-3, mean over cases, each case's runs averaged first; 95% interval "
           "by case in brackets):", "", "| dimension | " + " | ".join(cell(n) for n in names) + " |",
           "|---|" + "---|" * len(names)]
    methods: set[str] = set()
    small = False
    for d in sorted(dims):
        cells = []
        for n in names:
            v = judges.variants[n]
            mean = (v.pointwise or {}).get(d)
            ci = (v.pointwise_ci or {}).get(d)
            if mean is None:
                cells.append("n/a")
                continue
            over = f", {_n_cases(ci.cases)}" if ci is not None and ci.cases is not None else ""
            if ci is None or ci.low is None:
                cells.append(f"{mean:.2f} (no interval{over})")
                continue
            methods.add(ci.method or "method not recorded")
            small = small or bool(ci.small_sample)
            cells.append(f"{mean:.2f} [{ci.low:.2f}–{ci.high:.2f}{over}]")
        out.append(f"| {cell(d)} | " + " | ".join(cells) + " |")
    out.append("")
    if methods:
        out.append("Interval method: " + ", ".join(sorted(cell(m) for m in methods)) + " (the case is the unit)"
                   + ("; small sample: fewer than 30 cases" if small else "") + ".")
        out.append("")
    return out


def rubric_text(r) -> str:
    """A mean rubric score with its interval: `3.80 (95% CI 3.41–4.19) over 30 cases`."""
    ci = r.ci
    interval = f" (95% CI {ci.low:.2f}–{ci.high:.2f})" if ci is not None and ci.low is not None else ""
    small = "; small sample: fewer than 30 cases" if r.small_sample else ""
    return f"{r.mean:.2f}{interval} over {r.cases} case{'s' if r.cases != 1 else ''}{small}"


def _rubric_scores(judges: JudgeSummary) -> list[str]:
    rows = [f"| {cell(name)} | {cell(scale)} | {rubric_text(r)} |"
            for name, v in judges.variants.items() for scale, r in (v.rubric_scores or {}).items()]
    if not rows:
        return []
    return ["Rubric scores (rubric-score grader: mean over cases, each case's runs averaged first; Student t "
            "interval by case):", "", "| variant | scale | mean score |", "|---|---|---|", *rows, ""]


def _amount(x: float | int, money: bool) -> str:
    """A count with its thousands marked, every digit kept (`:g` wrote 1,234,567 tokens as
    1.23457e+06); dollars as the Requests line writes them, without the sign."""
    if not money and float(x).is_integer():
        return f"{int(x):,}"
    return usd(x)[1:] if money else f"{x:,}"


def fmt_measure(m: MeasurementSummary | None, money: bool = False) -> str:
    if m is None:
        return "unknown"
    if m.total is None:
        if not m.known_count:
            return "unknown"
        return f"unknown ({m.known_count} known, subtotal {_amount(m.known_subtotal, money)}; {m.unknown_count} unknown)"
    return _amount(m.total, money)


def latency_cell(lat: MeasurementSummary | None, value: float | None) -> str:
    """A latency quantile, over the attempts whose latency is known: when some are unknown it says
    over how many (a median of 2 known of 40 is not the run's median)."""
    if lat is None or value is None:
        return "unknown"
    if lat.unknown_count:
        return f"{value:.1f} (of {lat.known_count} known; {lat.unknown_count} unknown)"
    return f"{value:.1f}"


def fields_section(variants: list[str], vs: dict[str, VariantSummary],
                   unknown: dict[str, str | None] | None = None) -> list[str]:
    """Per-field accuracy, the overall figure and its denominator; a variant whose every attempt
    errored is said to be unknown (`unknown`: its words), never left out."""
    accuracy = {name: vs[name].field_accuracy if name in vs else {} for name in variants}
    paths = sorted({p for name in variants for p in accuracy[name]})
    unknown_lines = [f"- {cell(name)}: field accuracy {words}" for name, words in (unknown or {}).items() if words]
    if not paths:
        return ["## Per-field accuracy", "", *unknown_lines, ""] if unknown_lines else []
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
    out += unknown_lines
    out.append("")
    return out


def call_notes(name: str, per_attempt: dict) -> list[str]:
    """An agent-task variant's tool calls a sub-agent made and those the CLI denied (attempted,
    never executed), summed over the attempts whose trajectory said (statistics 20)."""
    out = []
    for key, words in (("denied_tool_calls", "tool call{s} denied (attempted, never executed)"),
                       ("subagent_tool_calls", "tool call{s} made by a sub-agent")):
        fig = per_attempt.get(key)
        if fig is not None and fig.known_subtotal:
            unknown = f"; {fig.unknown_count} with no trajectory to count" if fig.unknown_count else ""
            out.append(f"- {cell(name)}: {fig.known_subtotal} {words.format(s='' if fig.known_subtotal == 1 else 's')}"
                       f" over {fig.known_count} attempt{'' if fig.known_count == 1 else 's'}{unknown}")
    return out


def category_text(fig, small: bool = False) -> str:
    """A category's pass rate, its attempts, cases (units with conversations) and interval; with
    `small`, a category of fewer than 30 of them says it (JUnit, which has no table note)."""
    if fig is None:
        return "—"
    out = f"{fmt_rate(fig.pass_rate)} ({fig.passed}/{fig.attempts}"
    if fig.cases is not None:
        out += f", {fig.cases} case{'s' if fig.cases != 1 else ''}"
    if fig.units is not None:  # conversations: the units its interval counts
        out += f" in {fig.units} unit{'s' if fig.units != 1 else ''}"
    if fig.ci is not None and fig.ci.low is not None:
        out += f"; 95% CI {fmt_rate(fig.ci.low)}–{fmt_rate(fig.ci.high)}"
    count, noun = (fig.units, "units") if fig.units is not None else (fig.cases, "cases")
    if small and count is not None and count < 30:
        out += f"; small sample: fewer than 30 {noun}"
    return out + ")"


def categories_section(variants: list[str], vs: dict[str, VariantSummary]) -> list[str]:
    """Each category's pass rate per variant, with its cases and interval (statistics 20; a
    report of an earlier version has neither: its rates alone), when the run has two or more."""
    cats = sorted({c for name in variants if vs.get(name) for c in vs[name].by_category})
    if len(cats) < 2:
        return []
    text = category_text
    lines = ["## By category", "", "| category | " + " | ".join(cell(v) for v in variants) + " |",
             "|---|" + "---|" * len(variants)]
    lines += [f"| {cell(c)} | " + " | ".join(cell(text(vs[v].by_category.get(c) if vs.get(v) else None))
                                           for v in variants) + " |" for c in cats]
    figs = [f for v in variants if vs.get(v) for f in vs[v].by_category.values()]
    small = any(n is not None and n < 30 for f in figs for n in [f.cases if f.units is None else f.units])
    if any(f.units is not None for f in figs):  # with conversations the unit is the conversation
        words = ("Each interval counts units, as the variant's: a conversation once, a case outside any as one; "
                 "a category of fewer than 30 units is a small sample and its interval is wide.")
    else:
        words = ("Each interval has the case as its unit, as the variant's; a category of fewer than "
                 "30 cases is a small sample and its interval is wide.")
    return lines + ([""] + ([words] if small else []) + [""])


def documents_section(view: ReportView, variants: list[str]) -> Iterator[str]:
    """Per document (case): fields correct / fields graded / accuracy, over every graded run,
    and the runs that errored (no fields to grade) beside them, a document that only errored
    included; only when some output was graded field by field. Made one row at a time."""
    errored = DocumentErrors(view)
    started = False
    for case_id, _ in view.cases():
        counts = [view.field_counts(case_id, name) for name in variants]
        errors = [errored(case_id, name) for name in variants]
        if not any(counts) and not any(errors):
            continue
        cells = []
        for c, e in zip(counts, errors):
            if c is None:
                cells += [errored_words(e) if e else "n/a", "n/a"]
            else:
                cells += [f"{c[0]}/{c[1]}" + (f"; {errored_words(e)}" if e else ""), f"{c[0] / c[1]:.0%}"]
        if not started:
            started = True
            if len(variants) == 1:
                head = "| document | correct / total | accuracy |"
            else:
                head = "| document | " + " | ".join(f"{cell(v)} correct / total | {cell(v)} accuracy"
                                                   for v in variants) + " |"
            yield from ["## Per-document results", "",
                        "Fields graded correct over fields graded, every graded run of the document counted; "
                        "a run that errored has no fields and is counted beside them.",
                        "", head, "|---|" + "---|---|" * len(variants)]
        yield f"| {cell(case_id)} | " + " | ".join(cells) + " |"
    if started:
        yield ""


def gates_section(gates: list[Gate]) -> list[str]:
    if not gates:
        return []
    out = ["## Gates", ""]
    for g in gates:
        mark = "✅ passed" if g.passed else "❌ failed"
        out.append(f"- {mark}: {cell(g.description or g.gate)}")
    out.append("")
    return out


def measurements_section(variants: list[str], vs: dict[str, VariantSummary]) -> list[str]:
    out = ["## Measurements", "", "| variant | latency p50 ms | latency p95 ms | input tokens | output tokens | cost USD | requests |",
           "|---|---|---|---|---|---|---|"]
    for name in variants:
        s = vs.get(name)
        m = s.measurements if s is not None else {}
        lat = m.get("latency_ms")
        p50, p95 = (latency_cell(lat, lat.median if lat else None), latency_cell(lat, lat.p95 if lat else None))
        out.append(f"| {cell(name)} | {p50} | {p95} | {fmt_measure(m.get('input_tokens'))} | "
                   f"{fmt_measure(m.get('output_tokens'))} | {fmt_measure(m.get('cost_usd'), money=True)} | "
                   f"{fmt_measure(m.get('requests'))} |")
    out.append("")
    return out


def cases_section(view: ReportView, variants: list[str]) -> Iterator[str]:
    # Counted from every attempt (view.tallies), so right even when attempts were left out.
    yield from ["## Cases", "", "| case | category | " + " | ".join(cell(v) for v in variants) + " |",
                "|---|---|" + "---|" * len(variants)]
    for case_id, category in view.cases():
        cells = []
        for name in variants:
            passed, judged, errors, unassessed, not_run = view.verdicts(case_id, name)
            mark = "➖" if not judged else "✅" if passed == judged else "❌" if passed == 0 else "⚠️"
            extra = f" ({errors} error{'s' if errors != 1 else ''})" if errors else ""
            if unassessed:
                extra += f" ({unassessed} not assessed)"
            if not_run:  # a stopped run: the runs it never made are said, not a bare 1/1
                extra += f" ({not_run} not run)"
            cells.append(f"{mark} {passed}/{judged}{extra}")
        yield f"| {cell(case_id)} | {cell(category or '')} | " + " | ".join(cells) + " |"
    yield ""


def _choice_counts(judges) -> list[str]:
    """Record-only classify graders: how often the judge picked each choice, per variant."""
    from .figures import choice_words

    rows = [f"- **{cell(name)}**, {cell(label)}: {cell(choice_words(c))}"
            for name, v in judges.variants.items() for label, c in (v.choices or {}).items()]
    return (["Judge's choices, recorded only (OpenAI Evals' counts/<choice>):", "", *rows, ""]) if rows else []
