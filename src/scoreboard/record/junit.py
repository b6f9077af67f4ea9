"""JUnit XML rendering of a report: one <testsuite> per variant, one <testcase> per case (read
through the typed view: counts and times from every attempt, reasons from the attempts kept)."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections import defaultdict
from typing import Any

from .constants import DRY_RUN_MARK, DRY_RUN_NOTE
from .fieldwords import absent_reason, fields_unknown
from .figures import choice_words, figure_rows, k_left_out, variant_small_words
from .io import fields_over, fmt_rate, variant_model
from .junit_pairwise import pairwise_suite
from .markdown_parts import category_text
from .mdtext import spell_unseen, visible
from .schema import Attempt
from .view import CaseTally, ReportView, as_view
from .render_facts import BLOCKED_WHERE, blocked_words, failure_words
from .visual import check_lines, judge_check_text

# Characters XML 1.0 forbids even when escaped (most C0 controls, lone surrogates, U+FFFE/FFFF).
_ILLEGAL = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
ERRORED = ("error", "interrupted")
MESSAGE_LIMIT = 1000
VALUE_LIMIT = 300


def clean(value: Any, *, keep_lines: bool = True) -> str:
    """Text safe for XML 1.0 and shown as it is, as the terminal shows it: control, direction and
    zero-width characters spelt as escapes (\\x1b, \\u202e), so a CI tab cannot show a case id
    holding U+202E reversed or lose a NUL (two ids one apart read the same); the rest XML cannot
    carry (U+FFFE, U+FFFF) spelt too. Nothing is dropped; escaping markup is ElementTree's job.
    Line ends and tabs are kept unless keep_lines is false (a name)."""
    text = spell_unseen("" if value is None else str(value), keep_lines=keep_lines)
    return _ILLEGAL.sub(lambda m: visible(m.group()), text)


def one_line(value: Any) -> str:
    """A test case, class or suite name (or a variant): one line, every hidden character spelt."""
    return clean(value, keep_lines=False)


def _short(value: Any, limit: int = VALUE_LIMIT) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[:limit] + f"… ({len(text) - limit} more characters)"


def _run_reasons(a: Attempt) -> list[str]:
    """Why one run did not pass: its error, then each grader that did not pass, with failing fields."""
    out = []
    if a.error:
        out.append(f"error: {a.error}")
    for g in a.grades:
        if g.passed is True:
            continue
        verdict = "not assessed" if g.passed is None else "failed"
        out.append(f"{g.grader}: {g.reason or verdict}")
        for f in g.fields or ():
            if not f.passed:
                absent = absent_reason(f)  # no value at all is not a null
                out.append(f"  {f.path}: expected {_short(f.expected)}, "
                           f"got {f'nothing ({absent})' if absent else _short(f.actual)}")
    if not out:
        out.append(a.status or "failed")
    return out


def _unassessed_reasons(attempts: list[Attempt]) -> list[str]:
    """Per not-assessed run the view kept: the grades that could not decide and why."""
    return [f"run {a.run}: " + "; ".join(f"{g.grader}: {g.reason or 'not assessed'}" for g in a.grades
                                         if g.passed is None)
            for a in attempts if a.status == "unassessed" and any(g.passed is None for g in a.grades)]


def _clipped(message: str) -> str:
    return message if len(message) <= MESSAGE_LIMIT else message[:MESSAGE_LIMIT] + "…"


def _testcase(parent: ET.Element, case_id: str, classname: str, tally: CaseTally | None,
              attempts: list[Attempt]) -> str:
    """Add one <testcase>; returns its outcome: passed, failure, error or skipped. Counts and time
    come from the tally of every run; the reasons from the runs the view kept."""
    tc = ET.SubElement(parent, "testcase", name=one_line(case_id), classname=one_line(classname))
    tally = tally or CaseTally()
    if tally.latency_ms_total is not None:
        tc.set("time", f"{tally.latency_ms_total / 1000:.3f}")
    runs = tally.runs
    if tally.not_passed:
        bad = [a for a in attempts if a.status in ("failed",) + ERRORED]
        kind = "error" if tally.errors or tally.interrupted else "failure"
        noun = "run" if runs == 1 else "runs"
        head = f"{tally.not_passed} of {runs} {noun} did not pass"
        details = [f"run {a.run} ({a.status}): " + "\n".join(_run_reasons(a)) for a in bad]
        first = "; ".join(f"run {a.run}: {_run_reasons(a)[0]}" for a in bad)
        if len(bad) < tally.not_passed:
            left = tally.not_passed - len(bad)
            details.append(f"{left} more {'run' if left == 1 else 'runs'} that did not pass: see the JSON report")
            first = first or "see the JSON report"
        message = f"{head}: {first}"
        if len(message) > MESSAGE_LIMIT:
            message = message[:MESSAGE_LIMIT] + "…"
        # the type names this element's kind as the runs record it: an <error> the first errored
        # run's status (`error`, `interrupted`), never a failed run's; a <failure> `failed`
        typed = next((a.status for a in bad if (a.status in ERRORED) == (kind == "error")), None)
        el = ET.SubElement(tc, kind, message=clean(message), type=clean(typed or ("error" if kind == "error" else "failed")))
        el.text = clean("\n\n".join(details))
        return kind
    if tally.waiting and tally.not_run + tally.waiting == runs:
        ET.SubElement(tc, "skipped", message=clean(f"{tally.waiting} of {runs} runs waiting on a provider batch "
                                                   "(finish with scoreboard run --resume)"))
        return "skipped"
    if not runs or tally.not_run == runs:
        reason = next((a.error for a in attempts if a.error), None) or "not run"
        ET.SubElement(tc, "skipped", message=clean(reason))
        return "skipped"
    if not tally.passed:  # not judged: a judge that could not decide, or a case with no grader
        if tally.not_graded and not tally.unassessed:
            message = "not graded: the case has no grader (recorded only)"
        elif tally.not_graded:
            message = (f"not judged: {tally.unassessed} of {runs} runs not assessed (no grader could judge it), "
                       f"{tally.not_graded} not graded")
        else:
            message = "not assessed: no grader could judge this case"
        why = _unassessed_reasons(attempts)
        if why:
            message = f"{message}: {why[0]}" if tally.not_graded else f"not assessed: {why[0]}"
        el = ET.SubElement(tc, "skipped", message=clean(_clipped(message)))
        if why:  # why each run went unjudged (a judge failure, a judge that split evenly...)
            el.text = clean("\n".join(why))
        return "skipped"
    apart = [(tally.unassessed, "not assessed (no grader could judge it)"), (tally.not_run, "not run"),
             (tally.not_graded, "not graded"), (tally.waiting, "waiting on a provider batch")]
    if tally.passed < runs and any(n for n, _ in apart):  # a pass that is not every run says so
        words = "; ".join(f"{n} {what}" for n, what in apart if n)
        ET.SubElement(tc, "system-out").text = clean(f"{tally.passed} of {runs} runs passed; {words}")
    return "passed"


def _omitted_words(omitted: dict | None) -> str | None:
    """What a capped view left out, in numbers (as the Markdown and the HTML say it)."""
    if not omitted:
        return None
    left = f"{omitted.get('passes_omitted', 0):,} passing attempts"
    if omitted.get("not_passed_omitted"):
        left += f" and {omitted['not_passed_omitted']:,} that did not pass"
    return (f"{omitted.get('kept', 0):,} of {omitted.get('attempts', 0):,} attempts kept for the failure details; "
            f"{left} left out of them (the counts cover every attempt): {omitted.get('note')}")


def _field_rows(vs) -> tuple[tuple[str, str | None], ...]:
    """Overall field accuracy's interval and its denominator in words (the attempts graded field
    by field, and the errored ones that have no fields), as the other renderings give them."""
    fields = vs.field_accuracy_overall if vs is not None else None
    if fields is None:
        return ()
    ci = fields.ci
    interval = None
    if ci is not None and ci.low is not None:
        how = f", {ci.method}" if ci.method else ""
        interval = f"{fmt_rate(fields.value)} [95% CI {fmt_rate(ci.low)}–{fmt_rate(ci.high)}{how}]"
    return (("field_accuracy_ci", interval), ("fields_over", fields_over(vs)))


def _k_rows(vs, methods) -> tuple[tuple[str, str], ...]:
    """The pass rate's interval (`pass_rate_ci`), pass@k and pass^k (runs > 1), each with its
    interval, then each interval's method in words (the report's summary.methods)."""
    if vs is None:
        return ()
    rows, used = [], {}
    ci = vs.pass_rate_ci
    if vs.pass_rate is not None and ci is not None and ci.low is not None:
        how = f", {ci.method}" if ci.method else ""
        rows.append(("pass_rate_ci", f"{fmt_rate(vs.pass_rate)} [95% CI {fmt_rate(ci.low)}–{fmt_rate(ci.high)}{how}]"))
        used[ci.method] = None
    for label, figures in (("pass@", vs.pass_at_k or {}), ("pass^", vs.pass_hat_k or {})):
        for k, fig in sorted(figures.items(), key=lambda item: int(item[0])):
            ci = fig.ci if fig is not None else None
            if fig is None or fig.value is None:
                continue
            interval = ""
            if ci is not None and ci.low is not None:
                how = f", {ci.method}" if ci.method else ""
                interval = f" [95% CI {fmt_rate(ci.low)}–{fmt_rate(ci.high)}{how}]"
                used[ci.method] = None
            gone = k_left_out(fig, vs, k)
            rows.append((f"{label}{k}", f"{fmt_rate(fig.value)}{interval}" + (f" ({gone})" if gone else "")))
    # the score's, the metrics', derived metrics' (a seeded bootstrap) and reducers' intervals too
    fields = vs.field_accuracy_overall
    for fig in (vs.score, fields, *(vs.metrics or {}).values(), *(vs.derived_metrics or {}).values(),
                *(vs.reducers or {}).values()):
        if fig is not None and fig.ci is not None and fig.ci.low is not None and fig.ci.method:
            used[fig.ci.method] = None
    words = (methods.model_extra or {}) if methods is not None else {}
    rows += [("interval_method", f"{m}: {words[m]}") for m in used if m in words]
    return tuple(rows)


def _choice_rows(judges, variant: str) -> tuple[tuple[str, str], ...]:
    """A record-only classify grader's choices in this variant (OpenAI Evals' counts/<choice>):
    they decide nothing, so no testcase shows them; the properties do."""
    jv = judges.variants.get(variant) if judges is not None else None
    return tuple((f"choices_{label}", choice_words(c)) for label, c in ((jv.choices or {}).items() if jv else ()))


def _gates_suite(root: ET.Element, name: str, classname: str, gates) -> dict[str, int]:
    """The run's gates as a <testsuite> of their own, one <testcase> per gate (`fail-under [careful]`,
    `fail-under-metric pass^3 [a]`): one that did not pass is a <failure> with its description, so
    a run that exits 3 with every case passing is not all green in a CI tab. Their classname is
    not a variant's, so no case id can take a gate's place."""
    ts = ET.SubElement(root, "testsuite", name=one_line(name))
    failures = 0
    for g in gates:
        label = " ".join(part for part in (g.gate, g.metric, f"[{g.variant}]" if g.variant else None) if part)
        tc = ET.SubElement(ts, "testcase", name=one_line(label), classname=one_line(classname))
        if not g.passed:
            failures += 1
            ET.SubElement(tc, "failure", message=clean(_clipped(g.description)), type="gate").text = clean(g.description)
    counts = dict(tests=len(gates), failures=failures, errors=0, skipped=0)
    for key, value in counts.items():
        ts.set(key, str(value))
    return counts


def render_junit(view: ReportView) -> str:
    """The report as JUnit XML: a case fails when any of its runs failed; errors are <error>."""
    view = as_view(view)
    report = view.report
    run, plan = report.run, report.plan
    suite = str(run.suite or "scoreboard")
    variants = [v.name for v in plan.variants]
    case_ids = [case_id for case_id, _ in view.cases()]
    known_variants, known_cases = set(variants), set(case_ids)
    for case_id, variant in view.tallies:  # every attempt's case and variant, in report order
        if variant not in known_variants:
            variants.append(variant)
            known_variants.add(variant)
        if case_id not in known_cases:
            case_ids.append(case_id)
            known_cases.add(case_id)
    grouped: dict[tuple[str, str], list[Attempt]] = defaultdict(list)
    for a in report.attempts:
        grouped[(a.variant, a.case_id)].append(a)
    mark = f"{DRY_RUN_MARK} " if run.dry_run else ""  # a CI tab shows a dry run for what it is
    root = ET.Element("testsuites", name=one_line(mark + suite))
    totals = dict(tests=0, failures=0, errors=0, skipped=0)
    summary = report.summary.variants
    for variant in variants:
        classname = f"{suite}.{variant}"
        ts = ET.SubElement(root, "testsuite", name=one_line(mark + classname))
        if run.started_at:
            ts.set("timestamp", clean(str(run.started_at).removesuffix("Z")))
        props = ET.SubElement(ts, "properties")
        vs = summary.get(variant)
        rate = vs.pass_rate if vs is not None else None
        unassessed = vs.unassessed if vs is not None and vs.unassessed else None
        # the gates that judged this variant (or the whole run): a CI tab shows why the exit was 3
        gates = tuple(("gate", f"{'passed' if g.passed else 'FAILED'}: {g.description or g.gate}")
                      for g in report.gates if g.variant in (None, variant))
        figures = gates + _k_rows(vs, report.summary.methods) + tuple((label.replace(" ", "_"), text) for label, text in figure_rows(vs))
        figures += _choice_rows(report.summary.judges, variant)
        # each category's pass rate, cases and interval, as the Markdown's and the page's table (two or more)
        cats = vs.by_category if vs is not None and len(vs.by_category) > 1 else {}
        figures += tuple((f"category_{one_line(cat)}", category_text(fig, small=True)) for cat, fig in sorted(cats.items()))
        # the judge's instrument check, as the other renderings say it: a CI tab shows whether
        # the verdicts behind these testcases come from a checked judge
        figures += ((("judge_check", judge_check_text(report)),) if plan.stage != "check" else
                    tuple(("instrument_check", line) for line in check_lines(report)[:1]))
        facts = (view.renders or {}).get(variant) or {}  # its pages' blocked requests and failures: never silent
        figures += tuple((key, words) for key, words in (("blocked_requests", blocked_words(facts) and
                                                          f"{blocked_words(facts)}; {BLOCKED_WHERE}"),
                                                         ("pages_not_rendered", failure_words(facts))) if words)
        planned = next((v for v in plan.variants if v.name == variant), None)
        fields = vs.field_accuracy_overall if vs is not None else None
        # JUnit carries no comparison, so no pair's flag: a variant of few cases says it beside its intervals
        small = variant_small_words(vs, plan)
        for key, value in (("variant", variant), ("model", variant_model(planned) if planned else None),
                           ("run_status", run.status), ("fixture_hash", plan.fixture_hash),
                           ("pass_rate", rate), ("small_sample", small),
                           ("field_accuracy", fields.value if fields is not None else None),
                           ("fields_correct", f"{fields.correct}/{fields.total}" if fields is not None else None),
                           *_field_rows(vs), ("fields_over", fields_unknown(vs, report)),
                           ("not_assessed", unassessed), ("stop_reason", run.stop_reason),
                           ("attempts_omitted", _omitted_words(view.omitted)),
                           ("dry_run", f"{DRY_RUN_MARK}: {DRY_RUN_NOTE}" if run.dry_run else None), *figures):
            if value is not None:
                ET.SubElement(props, "property", name=key, value=one_line(value) if key == "variant" else clean(value))
        counts = dict(tests=0, failures=0, errors=0, skipped=0)
        for case_id in case_ids:
            outcome = _testcase(ts, case_id, classname, view.tallies.get((case_id, variant)),
                                sorted(grouped.get((variant, case_id), []), key=lambda a: a.run))
            counts["tests"] += 1
            key = {"failure": "failures", "error": "errors", "skipped": "skipped"}.get(outcome)
            if key:
                counts[key] += 1
        for key, value in counts.items():
            ts.set(key, str(value))
            totals[key] += value
    if report.gates:  # a CI tab shows testcases, not properties: a failed gate (exit 3) is a failure there
        counts = _gates_suite(root, f"{mark}{suite}.gates", f"{suite}.gates", report.gates)
        for key, value in counts.items():
            totals[key] += value
    judged = report.summary.judges.pairwise if report.summary.judges is not None else None
    if judged:  # each compared pair, its wins, position consistency and unjudged comparisons
        counts = pairwise_suite(root, f"{mark}{suite}.pairwise", f"{suite}.pairwise", judged, report.pairwise,
                                one_line, clean)
        for key, value in counts.items():
            totals[key] += value
    for key, value in totals.items():  # junit-10.xsd (Jenkins' xUnit) has no `skipped` on <testsuites>:
        if key != "skipped":            # each <testsuite> carries its own
            root.set(key, str(value))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
