"""The judge-human agreement block (summary.judge_agreement) in words: one wording for the
Markdown report, the HTML page (its lines are computed here and embedded), the terminal and
`import reviews`, so each says the same figures."""

from __future__ import annotations

from typing import Any

from ..words import plural


def _pct(x: Any) -> str:
    return "n/a" if not isinstance(x, (int, float)) else f"{x * 100:.1f}%"


def corrected_words(c: dict) -> str:
    """The Rogan-Gladen corrected pass rate with its interval and method, or why it has none."""
    value, ci = c.get("value"), c.get("ci") or {}
    if value is None:
        return "n/a" + (f" ({c['why']})" if c.get("why") else "")
    if ci.get("low") is None or ci.get("high") is None:
        return f"{_pct(value)} (no interval: every resample left the correction undefined)"
    level = ci.get("level") if isinstance(ci.get("level"), (int, float)) else 0.95
    how = "bootstrap over cases" + (f", {ci['resamples']:,} resamples" if isinstance(ci.get("resamples"), int) else "")
    if ci.get("undefined_draws"):
        how += f", {ci['undefined_draws']:,} left the correction undefined"
    return f"{_pct(value)} [{level * 100:g}% CI {_pct(ci['low'])}–{_pct(ci['high'])}, {how}]"


def _rates(block: dict) -> str:
    p = block.get("judge_pass_rate") or {}
    counted = f" ({p['passed']:,}/{plural(p['judged'], p.get('unit') or 'attempt')})" \
        if isinstance(p.get("passed"), int) and isinstance(p.get("judged"), int) else ""
    return (f"judge pass rate {_pct(p.get('value'))}{counted}; corrected for the judge's errors "
            f"(Rogan-Gladen): {corrected_words(block.get('corrected_pass_rate') or {})}")


def confusion_rows(a: dict) -> list[tuple[str, int, int]]:
    """(judge verdict, outputs people passed, outputs people failed) for judge pass and fail."""
    conf = a.get("confusion") or {}
    return [(f"judge {k}", (conf.get(f"judge_{k}") or {}).get("human_pass", 0),
             (conf.get(f"judge_{k}") or {}).get("human_fail", 0)) for k in ("pass", "fail")]


def agreement_lines(a: dict, *, confusion: bool = True) -> list[str]:
    """The block as sentences: what was compared, agreement and kappa, the judge's rates, the
    confusion matrix (unless a renderer draws it as a table), the corrected pass rate with its
    interval, per variant when there are several, exclusions, the small-sample flag, the method."""
    n, cases, kappa = a.get("n"), a.get("cases"), a.get("kappa")
    lines = [f"judge vs human on {plural(n, 'reviewed output') if isinstance(n, int) else 'n/a'}"
             + (f" of {plural(cases, 'case')}" if isinstance(cases, int) else "")
             + f" (graders: {', '.join(a.get('graders') or []) or 'none'}; truth: {a.get('truth') or 'n/a'})",
             f"observed agreement {_pct(a.get('observed_agreement'))}, Cohen's kappa "
             + ("n/a" if not isinstance(kappa, (int, float)) else f"{kappa:.2f}"),
             f"judge's true positive rate {_pct(a.get('true_positive_rate'))}, false positive rate "
             f"{_pct(a.get('false_positive_rate'))}, specificity {_pct(a.get('specificity'))}"]
    if confusion:
        lines.append("confusion: " + "; ".join(f"{who} & human pass {hp}, {who} & human fail {hf}"
                                               for who, hp, hf in confusion_rows(a)))
    lines.append(_rates(a))
    by_variant = a.get("by_variant") or {}
    if len(by_variant) > 1:
        lines += [f"{name}: {_rates(block)}" for name, block in by_variant.items()]
    excluded = {k: v for k, v in (a.get("excluded") or {}).items() if v}
    if excluded:
        lines.append("left out: " + ", ".join(f"{v:,} {k.replace('_', ' ')}" for k, v in excluded.items()))
    if a.get("small_sample"):
        lines.append(f"small sample: {a.get('note') or 'fewer than 30 reviewed cases'}")
    elif a.get("note"):
        lines.append(str(a["note"]))
    lines.append(f"correction: {a.get('formula') or 'n/a'}; interval: {a.get('method') or 'n/a'}")
    return lines
