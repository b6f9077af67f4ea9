"""The aggregate over stages in words: terminal lines, Markdown and a self-contained HTML page.
The screen's figures and the held-out figures are shown in separate sections, never pooled; the
pick and its confirmation lead."""

from __future__ import annotations


from ..stats.aggregate import tests_text
from ..stats.comparison import SMALL_CASES
from .io import fmt_rate
from .mdtext import cell, code, html_text
from .schema_aggregate import Aggregate, StageSection
from .schema_base import Interval
from .terminal import printable


def _ci(ci: Interval | None, *, points: bool = False) -> str:
    if ci is None or ci.low is None:
        return "no interval"
    if points:
        return f"95% CI {ci.low * 100:+.1f} to {ci.high * 100:+.1f} points, {ci.method or 'interval'}"
    return f"95% CI {ci.low:+.2f} to {ci.high:+.2f}, {ci.method or 'interval'}"


def method_words(agg: Aggregate) -> str:
    """Each interval's method in words, once ("wilson-effective-n: Wilson score interval ..."):
    the pass rates', the differences' and the dQ's, as every rendering names them."""
    from ..stats.methods import METHODS

    cis = [agg.pick.ci, agg.confirmation.ci]
    for section in (agg.screen, agg.heldout):
        cis += [v.pass_rate_ci for v in section.variants.values()]
        cis += [dq.ci for dq in section.dq] + [c.mean_difference_ci for c in section.comparisons]
    used = dict.fromkeys(ci.method for ci in cis if ci is not None and ci.low is not None and ci.method)
    return "; ".join(f"{m}: {METHODS.get(m, m)}" for m in used)


def headline(agg: Aggregate) -> list[str]:
    """The lines every rendering leads with: pick, confirmation, disjointness, judge check."""
    words = agg.confirmation.words
    if agg.confirmation.small_sample and agg.confirmation.verdict in ("reversed", "not-independent") \
            and "fewer than" not in words:  # its words (recomputed by verify) leave the sample size out
        words += f" (small sample: fewer than {SMALL_CASES} held-out cases)"
    out = [agg.pick.words[0].upper() + agg.pick.words[1:], words]
    tests = agg.confirmation.tests
    if tests is not None:
        out.append(f"held-out tests: {tests_text(tests.model_dump())}")
    d = agg.disjointness
    if d.disjoint:
        out.append(f"held-out cases disjoint from the screened ones by input hash ({d.heldout_cases} held out, "
                   f"{d.screen_cases} screened)")
    else:
        named = ", ".join(o.heldout if o.heldout == o.screen else f"{o.heldout} (= screened {o.screen})"
                          for o in d.overlap[:10])
        more = f" and {len(d.overlap) - 10} more" if len(d.overlap) > 10 else ""
        out.append(f"OVERLAP: {len(d.overlap)} of {d.heldout_cases} held-out cases were screened (same input "
                   f"hash): {named}{more}")
    if agg.judge_check is not None:
        out.append(agg.judge_check.words)
    return out


def _section_lines(section: StageSection, pointwise: bool) -> list[str]:
    out = []
    for name, v in section.variants.items():
        ci = v.pass_rate_ci
        interval = f" [95% CI {fmt_rate(ci.low)}–{fmt_rate(ci.high)}]" if ci is not None and ci.low is not None else ""
        quality = ""
        if pointwise and v.quality:
            quality = "; quality " + ", ".join(f"{d} {m:.2f}" for d, m in v.quality.items())
        out.append(f"{name}: pass rate {fmt_rate(v.pass_rate)}{interval} ({v.passed}/{v.attempts}){quality}")
    for dq in section.dq:
        flags = "".join(f"; {f}" for f in dq.flags)
        out.append(f"dQ {dq.a} - {dq.b}: {dq.dq:+.2f} ({_ci(dq.ci)}) on {dq.cases} cases{flags}")
    for c in section.comparisons:
        out.append(c.headline)
    return out


def render_text(agg: Aggregate, paths: dict) -> str:
    """The terminal lines: the lead, each stage apart, the gates, the files."""
    named = "; ".join(f"{'held out' if r.stage == 'heldout' else r.stage}: {r.path}" for r in agg.stages)
    lines = [f"{agg.suite}: aggregate of {len(agg.stages)} stage reports ({named})"]
    lines += [f"  {x}" for x in headline(agg)]
    pointwise = agg.primary == "dq"
    for title, section in (("screen", agg.screen), ("held out", agg.heldout)):
        lines.append(f"  {title}: {len(section.cases)} cases (run {section.run_id})")
        lines += [f"    {x}" for x in _section_lines(section, pointwise)]
    for g in agg.gates:
        lines.append(f"  gate {'passed' if g.passed else 'FAILED'}: {g.description}")
    if method_words(agg):
        lines.append(f"  95% intervals: {method_words(agg)}")
    for fmt, path in paths.items():
        lines.append(f"  {fmt}: {path}")
    return "\n".join(printable(line) for line in lines) + "\n"


def _md_section(title: str, what: str, section: StageSection, pointwise: bool) -> list[str]:
    out = [f"## {title}", "", what, "", (f"- **Run**: {cell(section.run_id)} · **Cases**: {len(section.cases)} "
           f"({', '.join(cell(c) for c in section.cases[:20])}{'…' if len(section.cases) > 20 else ''})")]
    if section.selection:
        sel = section.selection
        chosen = (f"{sel.get('method')} (k={sel.get('k')}" + (f", seed {sel['seed']}" if sel.get("seed") is not None
                                                              else "") + f"), {sel.get('units')} of {sel.get('of')}")
        out.append(f"- **Chosen by**: {cell(chosen)}")
    if section.instrument is not None:
        out.append(f"- **Judge check when it ran**: {cell(section.instrument.status)}")
    out += ["", "| variant | pass rate | 95% CI | passed | quality (0-3) |", "|---|---|---|---|---|"]
    for name, v in section.variants.items():
        ci = v.pass_rate_ci
        interval = f"{fmt_rate(ci.low)}–{fmt_rate(ci.high)}" if ci is not None and ci.low is not None else "n/a"
        quality = ", ".join(f"{d} {m:.2f}" for d, m in (v.quality or {}).items()) if pointwise else ""
        out.append(f"| {cell(name)} | {fmt_rate(v.pass_rate)} | {interval} | {v.passed}/{v.attempts} | "
                   f"{cell(quality or 'n/a')} |")
    out.append("")
    for dq in section.dq:
        out.append(f"- dQ {cell(dq.a)} - {cell(dq.b)}: **{dq.dq:+.2f}** ({_ci(dq.ci)}) on {dq.cases} cases"
                   + "".join(f"; {cell(f)}" for f in dq.flags))
    for c in section.comparisons:
        out.append(f"- {cell(c.headline)}" + "".join(f"; {cell(f)}" for f in c.flags))
    return out + [""]


def render_markdown(agg: Aggregate) -> str:
    """The aggregate as Markdown: the lead, then the screen and the held-out stage apart."""
    lines = [f"# scoreboard aggregate: {cell(agg.suite)}", ""]
    lines += [f"- {cell(x)}" for x in headline(agg)]
    lines += ["", "| stage | report | run | SHA-256 |", "|---|---|---|---|"]
    lines += [f"| {cell(r.stage)} | {cell(r.path)} | {cell(r.run_id)} | {code(r.sha256[:16])}… |" for r in agg.stages]
    lines.append("")
    pointwise = agg.primary == "dq"
    lines += _md_section("Screen (picks)", "The cheap run the pick was made on. Its figures are not pooled with "
                         "the held-out ones.", agg.screen, pointwise)
    lines += _md_section("Held out (confirms)", "The cases the screen did not see: the pick is confirmed here or "
                         "not at all.", agg.heldout, pointwise)
    if agg.gates:
        lines += ["## Gates (held-out figures)", ""]
        lines += [f"- {'✅ passed' if g.passed else '❌ FAILED'}: {cell(g.description)}" for g in agg.gates]
        lines.append("")
    if method_words(agg):
        lines += [f"95% intervals: {cell(method_words(agg))}", ""]
    lines.append(f"_Primary figure: {'dQ (blind pointwise quality)' if pointwise else 'pass rate'}; "
                 f"`scoreboard verify` recomputes this aggregate from the stage reports it names._")
    return "\n".join(lines) + "\n"


def _html_section(title: str, section: StageSection, pointwise: bool, testid: str) -> str:
    rows = []
    for name, v in section.variants.items():
        ci = v.pass_rate_ci
        interval = f"{fmt_rate(ci.low)}–{fmt_rate(ci.high)}" if ci is not None and ci.low is not None else "n/a"
        quality = ", ".join(f"{d} {m:.2f}" for d, m in (v.quality or {}).items()) if pointwise else ""
        rows.append("<tr>" + "".join(f"<td>{html_text(str(x))}</td>" for x in (
            name, fmt_rate(v.pass_rate), interval, f"{v.passed}/{v.attempts}", quality or "n/a")) + "</tr>")
    notes = [f"dQ {dq.a} - {dq.b}: {dq.dq:+.2f} ({_ci(dq.ci)}) on {dq.cases} cases" + "".join(f"; {f}" for f in dq.flags)
             for dq in section.dq] + [c.headline + "".join(f"; {f}" for f in c.flags) for c in section.comparisons]
    return (f'<section data-testid="{testid}"><h2>{html_text(title)}</h2><p>Run {html_text(section.run_id)} · '
            f'{len(section.cases)} cases: {html_text(", ".join(section.cases))}</p>'
            '<table><tr><th>variant</th><th>pass rate</th><th>95% CI</th><th>passed</th><th>quality (0-3)</th></tr>'
            + "".join(rows) + "</table><ul>" + "".join(f"<li>{html_text(n)}</li>" for n in notes) + "</ul></section>")


def render_html(agg: Aggregate) -> str:
    """A small self-contained page (no network resource); every value is escaped, its control and
    direction characters spelt (\\x1b, \\u202e)."""
    pointwise = agg.primary == "dq"
    lead = "".join(f"<li>{html_text(x)}</li>" for x in headline(agg))
    verdict = html_text(agg.confirmation.verdict)
    stages = "".join(f"<tr><td>{html_text(r.stage)}</td><td>{html_text(r.path)}</td><td>{html_text(r.run_id)}</td>"
                     f"<td><code>{html_text(r.sha256[:16])}…</code></td></tr>" for r in agg.stages)
    gates = "".join(f"<li>{'passed' if g.passed else 'FAILED'}: {html_text(g.description)}</li>" for g in agg.gates)
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>scoreboard aggregate: {html_text(agg.suite)}</title>
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<style>body{{font:14px system-ui,sans-serif;margin:2rem;color:#222;max-width:70rem}}table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:4px 8px;text-align:left}}th{{background:#f4f4f4}}
section{{border:1px solid #ddd;border-radius:6px;padding:0 1rem 1rem;margin:1rem 0}}
.confirmed{{color:#176b2c}}.not-confirmed,.not-comparable,.no-pick,.not-independent,.reversed{{color:#9a2a0a}}</style></head>
<body><h1>Aggregate: {html_text(agg.suite)}</h1>
<ul data-testid="lead" class="{verdict}">{lead}</ul>
<table><tr><th>stage</th><th>report</th><th>run</th><th>SHA-256</th></tr>{stages}</table>
{_html_section("Screen (picks)", agg.screen, pointwise, "screen")}
{_html_section("Held out (confirms)", agg.heldout, pointwise, "heldout")}
{'<h2>Gates (held-out figures)</h2><ul data-testid="gates">' + gates + '</ul>' if gates else ''}
<p data-testid="methods">95% intervals: {html_text(method_words(agg)) or 'none'}</p>
<p><em>Screen and held-out figures are never pooled. <code>scoreboard verify</code> recomputes this aggregate
from the stage reports it names.</em></p></body></html>
"""
