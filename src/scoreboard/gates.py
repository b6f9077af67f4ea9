"""Quality gates: each result goes in the report; any failure makes the exit code 3."""

from __future__ import annotations

from typing import Any

from .errors import ConfigError


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
