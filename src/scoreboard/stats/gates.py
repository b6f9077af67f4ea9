"""Quality gates: each result goes in the report; any failure makes the exit code 3."""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError


def parse_fail_under_metric(values: list[str] | None) -> dict[str, float] | None:
    """`--fail-under-metric pass@3=0.8` (every variant) or `careful:fields=0.9` (one variant)."""
    if not values:
        return None
    out: dict[str, float] = {}
    for raw in values:
        name, sep, num = raw.rpartition("=")
        try:
            value = float(num)
        except ValueError:
            value = None
        if not sep or not name or value is None:
            raise ConfigError(f"--fail-under-metric takes NAME=VALUE or VARIANT:NAME=VALUE, got {raw!r}",
                              field="fail_under_metrics")
        if not 0 <= value <= 1:
            raise ConfigError(f"--fail-under-metric value must be between 0 and 1, got {value}",
                              field="fail_under_metrics")
        out[name] = value
    return out


def parse_fail_under(values: list[str] | None) -> float | dict[str, float] | None:
    """`--fail-under 0.9` (all variants) or `--fail-under careful=0.9` (repeatable)."""
    if not values:
        return None
    overall: float | None = None
    per: dict[str, float] = {}
    for raw in values:
        name, sep, num = raw.rpartition("=")
        try:
            value = float(num)
        except ValueError:
            raise ConfigError(f"--fail-under takes RATE or VARIANT=RATE, got {raw!r}", field="fail_under") from None
        if not 0 <= value <= 1:
            raise ConfigError(f"--fail-under rate must be between 0 and 1, got {value}", field="fail_under")
        if sep:
            per[name] = value
        else:
            overall = value
    if per:
        if overall is not None:
            per.setdefault("*", overall)
        return per
    return overall


def fail_under_gates(summary: dict, setting: Any, variants: list[str]) -> list[dict]:
    """One gate per variant whose pass rate must reach the threshold."""
    if setting is None:
        return []
    if isinstance(setting, dict):
        unknown = sorted(set(setting) - set(variants) - {"*"})
        if unknown:
            raise ConfigError(f"--fail-under names an unknown variant {unknown[0]!r} "
                              f"(variants: {', '.join(variants)})", field="fail_under")
        targets = [(v, setting.get(v, setting.get("*"))) for v in variants]
    else:
        targets = [(v, float(setting)) for v in variants]
    gates = []
    for variant, threshold in targets:
        if threshold is None:
            continue
        rate = summary["variants"].get(variant, {}).get("pass_rate")
        passed = rate is not None and rate >= threshold
        shown = "n/a" if rate is None else f"{rate:.1%}"
        gates.append({"gate": "fail-under", "variant": variant, "threshold": threshold, "value": rate,
                      "passed": passed,
                      "description": f"{variant}: pass rate {shown} {'≥' if passed else '<'} {threshold:.1%}"})
    return gates


#: what `--fail-under-metric NAME=VALUE` may name: a figure of each variant's summary
METRIC_HELP = "pass_rate, pass@K, pass^K, fields (overall field accuracy) or field:PATH"


def metric_value(summary_variant: dict, name: str) -> tuple[float | None, str]:
    """(value, what it is) of a named figure of one variant's summary; ConfigError when the name
    is not one a gate can read."""
    if name == "pass_rate":
        return summary_variant.get("pass_rate"), "pass rate"
    if name.startswith(("pass@", "pass^")) and name[5:].isdigit():
        block = summary_variant.get("pass_at_k" if name[4] == "@" else "pass_hat_k") or {}
        return (block.get(name[5:]) or {}).get("value"), name
    if name == "fields":
        return (summary_variant.get("field_accuracy_overall") or {}).get("value"), "field accuracy"
    if name.startswith("field:") and len(name) > 6:
        return (summary_variant.get("field_accuracy") or {}).get(name[6:]), f"accuracy of {name[6:]}"
    raise ConfigError(f"unknown metric {name!r} (known: {METRIC_HELP})", field="fail_under_metrics")


def metric_gates(summary: dict, setting: dict[str, float] | None, variants: list[str]) -> list[dict]:
    """One gate per (variant, metric): `setting` maps a metric name, or VARIANT:NAME for one
    variant, to the least value it may have (an unknown value fails the gate: nothing was shown)."""
    gates = []
    for key, threshold in (setting or {}).items():
        # "VARIANT:NAME" sets one variant's floor; a bare NAME every variant's.
        target = next((v for v in sorted(variants, key=len, reverse=True) if key.startswith(v + ":")), None)
        name = key[len(target) + 1:] if target else key
        for variant in [target] if target else variants:
            value, what = metric_value((summary.get("variants") or {}).get(variant) or {}, name)
            passed = value is not None and value >= threshold
            shown = "n/a" if value is None else f"{value:.1%}"
            gates.append({"gate": "fail-under-metric", "variant": variant, "metric": name,
                          "threshold": threshold, "value": value, "passed": passed,
                          "description": f"{variant}: {what} {shown} {'≥' if passed else '<'} {threshold:.1%}"})
    return gates


def all_pass_gate(ran: int, failing: list[str]) -> dict:
    """`score`'s rule: every case must pass (and there must be at least one). `ran` counts the
    cases with an attempt that ran; `failing` lists those with any attempt that did not pass."""
    passed = bool(ran) and not failing
    if not ran:
        text = "every case passes: no case was scored"
    elif failing:
        text = f"every case passes: {len(failing)} failed ({', '.join(failing[:5])}{'…' if len(failing) > 5 else ''})"
    else:
        text = f"every case passes: all {ran} passed"
    return {"gate": "all-pass", "variant": None, "threshold": 1.0, "value": None, "passed": passed,
            "description": text}


def failing_cases(attempts) -> tuple[int, list[str]]:
    """(cases with an attempt that ran, sorted ids of those with any attempt that did not pass),
    from attempt records."""
    ran: dict[str, bool] = {}
    for a in attempts:
        if a["status"] not in ("not-run", "waiting"):
            ran[a["case_id"]] = ran.get(a["case_id"], True) and a["status"] == "passed"
    return len(ran), sorted(cid for cid, ok in ran.items() if not ok)


def case_outcomes(attempts) -> dict[str, dict[str, list[int]]]:
    """variant -> case_id -> [passed, judged] over judged runs (passed, failed, error)."""
    out: dict[str, dict[str, list[int]]] = {}
    for a in attempts:
        if a["status"] in ("passed", "failed", "error"):
            slot = out.setdefault(a["variant"], {}).setdefault(a["case_id"], [0, 0])
            slot[0] += a["status"] == "passed"
            slot[1] += 1
    return out


def shared_case_outcomes(base_plan: dict, base: dict[str, list[int]], plan: dict, current: dict[str, list[int]]
                         ) -> tuple[dict[str, tuple[float, float]], list[str]]:
    """Per shared case (same id and input hash): (baseline mean pass, current mean pass) over
    judged runs; and the ids whose inputs differ (left out, never silently compared).
    `base` and `current` map case ids to [passed, judged] for one variant each."""
    base_hash = {c["id"]: c.get("input_hash") for c in base_plan.get("cases", [])}
    cur_hash = {c["id"]: c.get("input_hash") for c in plan.get("cases", [])}
    differ = sorted(cid for cid in cur_hash if cid in base_hash and base_hash[cid] != cur_hash[cid])
    shared = {cid for cid in cur_hash if cid in base_hash and base_hash[cid] == cur_hash[cid]}

    def means(counts: dict[str, list[int]]) -> dict[str, float]:
        return {cid: p / n for cid, (p, n) in counts.items() if cid in shared and n}

    b, c = means(base), means(current)
    return {cid: (b[cid], c[cid]) for cid in sorted(set(b) & set(c))}, differ


def baseline_gates(baseline: dict, plan: dict, outcomes: dict[str, dict[str, list[int]]], cfg) -> list[dict]:
    """Fail a variant whose pass rate on the shared cases dropped by more than max_regression
    (and, with require_significance, only when the paired sign test is significant too).
    `baseline` is {"plan", "run_id", "outcomes"} (see `case_outcomes`); `outcomes` the current
    run's variant -> case_id -> [passed, judged]."""
    base_names = [v["name"] for v in baseline["plan"]["variants"]]
    gates = []
    for v in plan["variants"]:
        name = v["name"]
        base_name = name if name in base_names else (base_names[0] if len(base_names) == 1 else None)
        if base_name is None:
            gates.append({"gate": "baseline", "variant": name, "passed": False, "value": None,
                          "threshold": cfg.max_regression,
                          "description": f"{name}: no variant of that name in the baseline "
                                         f"({', '.join(base_names)})"})
            continue
        pairs, differ = shared_case_outcomes(baseline["plan"], baseline["outcomes"].get(base_name, {}),
                                             plan, outcomes.get(name, {}))
        if not pairs:
            gates.append({"gate": "baseline", "variant": name, "passed": False, "value": None,
                          "threshold": cfg.max_regression,
                          "description": f"{name}: no shared case with the baseline to compare"})
            continue
        base_rate = sum(b for b, _ in pairs.values()) / len(pairs)
        cur_rate = sum(c for _, c in pairs.values()) / len(pairs)
        delta = cur_rate - base_rate
        worse = sum(1 for b, c in pairs.values() if c < b)
        better = sum(1 for b, c in pairs.values() if c > b)
        p_value = None
        if worse + better:
            from scipy.stats import binomtest

            p_value = float(binomtest(worse, worse + better, 0.5).pvalue)
        regressed = -delta > cfg.max_regression + 1e-12
        significant = p_value is not None and p_value < cfg.alpha
        failed = regressed and (significant if cfg.require_significance else True)
        p_text = "n/a" if p_value is None else f"{p_value:.3g}"
        desc = (f"{name} vs baseline {base_name}: {cur_rate:.1%} vs {base_rate:.1%} on {len(pairs)} shared cases "
                f"(change {delta:+.1%}, allowed drop {cfg.max_regression:.1%}; sign test p={p_text}"
                f"{', significance required at ' + format(cfg.alpha, 'g') if cfg.require_significance else ''})")
        if differ:
            desc += f"; {len(differ)} case(s) with changed inputs left out"
        gates.append({"gate": "baseline", "variant": name, "baseline_variant": base_name,
                      "baseline_run": baseline.get("run_id"), "threshold": cfg.max_regression,
                      "value": delta, "baseline_rate": base_rate, "current_rate": cur_rate,
                      "shared_cases": len(pairs), "inputs_differ": differ, "worse": worse, "better": better,
                      "sign_test_p": p_value, "significant": significant, "passed": not failed,
                      "description": desc})
    return gates
