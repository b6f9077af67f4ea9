"""Gates on a judge's figures (visual work, issue 17): the dQ of a pair of variants, a variant's
rubric-score mean, and the refusal of judge gates whose instrument check did not pass."""

from __future__ import annotations

import math

from ..errors import ConfigError, closest, shorten


def unknown_variant(name: str, variants: list[str]) -> str:
    """A gate's variant that the suite does not have, with the one it resembles: the error names
    the suite's field or the flag that gave it (not a flag when the suite file did)."""
    close = closest(name, variants)
    hint = f"; did you mean {shorten(close, 120)!r}?" if close is not None else ""
    listed = ", ".join(shorten(v, 120) for v in variants[:20]) + (f", and {len(variants) - 20} more" if len(variants) > 20 else "")
    return f"names an unknown variant {shorten(name, 120)!r} (variants: {listed or 'none'}){hint}"


def dq_gates(summary: dict, setting: dict[str, float] | None, variants: list[str]) -> list[dict]:
    """One gate per dQ pair: dQ (first minus second, as the report states it) must reach the
    value. `A/B` names one pair in that direction (the report's B/A pair is negated)."""
    if not setting:
        return []
    pairs = ((summary.get("judges") or {}).get("dq")) or []
    gates = []
    for key, threshold in setting.items():
        if not summary and (isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or
                            not (math.isfinite(threshold) and -3 <= threshold <= 3)):  # the settings' check
            raise ConfigError(f"--min-dq takes a dQ between -3 and 3 (a difference on the 0-3 scale), got "
                              f"{threshold!r}", field="min_dq")
        if key == "*":
            # Every pair of the run, not only those with a dQ: a pair no case was scored in by
            # both (a variant whose every judgment failed) is n/a, and fails, never left ungated.
            targets = [(a, b) for i, a in enumerate(variants) for b in variants[i + 1:]]
            if not targets:  # one variant: no pair to gate, and a gate that checks nothing never passes
                raise ConfigError(f"--min-dq gates the dQ of a pair of variants, and this run has one "
                                  f"({', '.join(variants)})", field="min_dq")
        else:
            a, sep, b = key.partition("/")
            if not sep or a not in variants or b not in variants or a == b:
                raise ConfigError(f"--min-dq names a pair as A/B of two variants ({', '.join(variants)}), got {key!r}",
                                  field="min_dq")
            targets = [(a, b)]
        for a, b in targets:
            found = next((p for p in pairs if (p["a"], p["b"]) in ((a, b), (b, a))), None)
            value = ci = None
            if found is not None:
                sign = 1 if found["a"] == a else -1
                value = sign * found["dq"]
                if found.get("ci") and found["ci"].get("low") is not None:
                    bounds = sorted([sign * found["ci"]["low"], sign * found["ci"]["high"]])
                    ci = f" [95% CI {bounds[0]:+.2f} to {bounds[1]:+.2f}]"
            passed = value is not None and value >= threshold - 1e-12
            shown = "n/a (no pointwise scores on shared cases)" if value is None else f"{value:+.2f}{ci or ''}"
            gates.append({"gate": "min-dq", "variant": a, "metric": f"dq:{a}/{b}", "threshold": threshold,
                          "value": value, "passed": passed,
                          "description": f"dQ {a} - {b}: {shown} {'≥' if passed else '<'} {threshold:+.2f}"})
    return gates


def rubric_gates(summary: dict, setting: dict[str, float] | None, variants: list[str]) -> list[dict]:
    """One gate per variant whose rubric-score mean (on the rubric's own scale) must reach the value."""
    if not setting:
        return []
    unknown = sorted(set(setting) - set(variants) - {"*"})
    if unknown:
        raise ConfigError(unknown_variant(unknown[0], variants), field="min_rubric")
    per = ((summary.get("judges") or {}).get("variants")) or {}
    gates = []
    for v in variants:
        threshold = setting.get(v, setting.get("*"))
        if threshold is None:
            continue
        value = ((per.get(v) or {}).get("rubric") or {}).get("mean")
        passed = value is not None and value >= threshold - 1e-12
        shown = "n/a" if value is None else f"{value:.2f}"
        gates.append({"gate": "min-rubric", "variant": v, "metric": "rubric", "threshold": threshold,
                      "value": value, "passed": passed,
                      "description": f"{v}: rubric-score mean {shown} {'≥' if passed else '<'} {threshold:g}"})
    return gates


#: gates that read a judge's figures when the suite's graders include a judge
JUDGE_GATES = ("fail-under", "fail-under-metric", "min-dq", "min-rubric", "baseline", "baseline-dq")


def refuse_unchecked(gates: list[dict], instrument: dict | None) -> list[dict]:
    """Gates on a judge's figures refuse to pass when its instrument check failed or never ran
    (unless the run trusted it: --trust-unchecked-judge). `instrument` is the report's block."""
    if not instrument or instrument.get("status") == "passed" or instrument.get("trusted"):
        return gates
    why = (f"the judge's instrument check {'failed' if instrument.get('status') == 'failed' else 'never ran'}"
           " (run --stage check, or --trust-unchecked-judge)")
    out = []
    for g in gates:
        if g.get("gate") in JUDGE_GATES:
            g = {**g, "passed": False, "refused": why, "description": f"{g['description']}; refused: {why}"}
        out.append(g)
    return out
