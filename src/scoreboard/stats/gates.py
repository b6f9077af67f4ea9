"""Quality gates: each result goes in the report; any failure makes the exit code 3."""

from __future__ import annotations

import math
from typing import Any

from ..errors import ConfigError, closest
from .fieldgate import fields_unknown, without_fields_reason
# the judge gates live in judge_gates; imported here too, where callers have always found them
from .judge_gates import JUDGE_GATES as JUDGE_GATES, dq_gates as dq_gates, refuse_unchecked as refuse_unchecked
from .judge_gates import rubric_gates as rubric_gates, unknown_variant
from .kgate import is_k as _is_k, k_note, without_k_note
from .units import reads_as_number


def parse_fail_under_metric(values: list[str] | None) -> dict[str, float] | None:
    """`--fail-under-metric pass@3=0.8` (every variant) or `careful:fields=0.9` (one variant)."""
    # any finite floor: a derived metric over totals (aggregate: sum) may exceed 1; metric_gates
    # keeps the shares (pass rate, pass@k, fields, score) within 0..1, for the suite file too
    return parse_named_floats(values, "fail-under-metric", -math.inf, math.inf, field="fail_under_metrics",
                              usage="NAME=VALUE or VARIANT:NAME=VALUE")


def fields_gate(metrics: dict[str, float] | None, values: list[str] | None) -> dict[str, float] | None:
    """`--fail-under-fields 0.9` (every variant) or `careful=0.9` (one variant), added to the
    metric gates as `fields` / `careful:fields`: the overall field accuracy's floor."""
    if not values:
        return metrics
    out = dict(metrics or {})
    for raw in values:
        name, sep, num = raw.rpartition("=")
        try:
            value = float(num)
        except ValueError:
            value = None
        if value is None or (sep and not name):
            raise ConfigError(f"--fail-under-fields takes RATE or VARIANT=RATE, got {raw!r}",
                              field="fail_under_fields")
        if not 0 <= value <= 1:
            raise ConfigError(f"--fail-under-fields rate must be between 0 and 1, got {num.strip()} "
                              "(a share: 0.9 for 90%)",
                              field="fail_under_fields")
        out[f"{name}:fields" if sep else "fields"] = value
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
            raise ConfigError(f"--fail-under rate must be between 0 and 1, got {num.strip()} (a share: 0.9 for 90%)",
                              field="fail_under")
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
            raise ConfigError(unknown_variant(unknown[0], variants), field="fail_under")
        targets = [(v, setting.get(v, setting.get("*"))) for v in variants]
    else:
        targets = [(v, setting) for v in variants]
    if not summary.get("variants"):  # the settings' check when a suite loads (verify recomputes old reports)
        for key, threshold in (setting.items() if isinstance(setting, dict) else [(None, setting)]):
            _check_rate(key, threshold)
    gates = []
    for variant, threshold in targets:
        if threshold is None:
            continue
        rate = summary["variants"].get(variant, {}).get("pass_rate")
        passed = rate is not None and reaches(rate, threshold)
        shown = "n/a" if rate is None else f"{rate:.1%}"
        gates.append({"gate": "fail-under", "variant": variant, "threshold": threshold, "value": rate,
                      "passed": passed,
                      "description": f"{variant}: pass rate {shown} {'≥' if passed else '<'} {threshold:.1%}"})
    return gates


def reaches(value: float, threshold: float) -> bool:
    """Whether a figure reaches its floor, float rounding allowed (a relative 1e-12, as the dQ and
    baseline gates allow): a mean of float scores 0.7 and 0.1 is 0.39999999999999997, which
    a floor of 0.4 names, and "40.0% < 40.0%" failed it."""
    return value >= threshold - 1e-12 * max(1.0, abs(threshold))


def _check_rate(variant: str | None, threshold: Any) -> None:
    """A pass-rate floor (a suite's `fail_under` as much as the flag's) is a number within 0..1:
    90 for 90% would be a gate no run can pass, and -0.1 one no run can fail."""
    where = "fail_under" if variant is None else f"fail_under.{variant}"
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not math.isfinite(threshold):
        raise ConfigError(f"the pass-rate floor must be a number between 0 and 1, got {threshold!r}", field=where)
    if not 0 <= threshold <= 1:
        raise ConfigError(f"the pass-rate floor is a share and must be between 0 and 1 (0.9 for 90%), got "
                          f"{threshold:g}", field=where)


#: what `--fail-under-metric NAME=VALUE` may name: a figure of each variant's summary
METRIC_HELP = ("pass_rate, pass@K, pass^K, fields (overall field accuracy), field:PATH, score, a named "
               "or derived metric, metric:NAME (a named score no spec declares), or reducer:NAME")


def metric_value(summary_variant: dict, name: str, declared: set[str] | frozenset = frozenset()
                 ) -> tuple[float | None, str]:
    """(value, what it is) of a named figure of one variant's summary; ConfigError when the name
    is not one a gate can read. `declared`: named metrics the suite declares (known before any
    attempt ran)."""
    # issue 14: named and derived metrics, the case score, reducers. A figure every run has is
    # read first: a metric a grader (or a Python grader's named score) calls `score` or
    # `pass_rate` is `metric:NAME`, and never stands in for the figure the gate names.
    if not is_builtin_figure(name):
        for block, what in (("metrics", "metric"), ("derived_metrics", "derived metric")):
            figures = summary_variant.get(block) or {}
            if name in figures:
                return (figures[name] or {}).get("value"), f"{what} {name}"
        if name in declared:
            return None, f"metric {name}"
    if name == "score":
        return (summary_variant.get("score") or {}).get("value"), "score"
    if name.startswith("metric:") and len(name) > 7:  # a named score no spec declares (a Python grader's)
        return ((summary_variant.get("metrics") or {}).get(name[7:]) or {}).get("value"), f"metric {name[7:]}"
    if name.startswith("reducer:") and len(name) > 8:
        if declared and name not in declared:  # the suite's reducers are known when it loads
            have = sorted(d[8:] for d in declared if d.startswith("reducer:"))
            raise ConfigError(f"no reducer {name[8:]!r} is declared (reducers: {', '.join(have) or 'none'}), "
                              f"so the gate could never read a value: the suite's `reducers:` adds it",
                              field="fail_under_metrics")
        return ((summary_variant.get("reducers") or {}).get(name[8:]) or {}).get("value"), f"reducer {name[8:]}"
    if name == "pass_rate":
        return summary_variant.get("pass_rate"), "pass rate"
    if name.startswith(("pass@", "pass^")) and _is_k(name[5:]):
        block = summary_variant.get("pass_at_k" if name[4] == "@" else "pass_hat_k") or {}
        return (block.get(name[5:]) or {}).get("value"), name
    if name == "fields":
        return (summary_variant.get("field_accuracy_overall") or {}).get("value"), "field accuracy"
    if name.startswith("field:") and len(name) > 6:
        return (summary_variant.get("field_accuracy") or {}).get(name[6:]), f"accuracy of {name[6:]}"
    close = closest(name, declared, 0.6)
    hint = f"did you mean {close!r}? " if close is not None else ""
    raise ConfigError(f"unknown metric {name!r} ({hint}known: {METRIC_HELP})", field="fail_under_metrics")


def is_builtin_figure(name: str) -> bool:
    """Whether a gate name is a figure every run has (or a prefixed name): a metric of that name
    could not be told apart from it."""
    return (name in ("score", "pass_rate", "fields") or name.startswith(("field:", "metric:", "reducer:"))
            or (name.startswith(("pass@", "pass^")) and _is_k(name[5:])))


def _is_metric(name: str, declared: set[str] | frozenset) -> bool:
    try:
        metric_value({}, name, declared)
    except ConfigError:
        return False
    return True


def gate_target(key: str, variants: list[str]) -> tuple[str | None, str]:
    """A metric gate's key as (variant, figure name): "VARIANT:NAME" names one variant (the longest
    that fits, as a variant's name may hold a colon), a bare NAME every variant (None)."""
    target = next((v for v in sorted(variants, key=len, reverse=True) if key.startswith(v + ":")), None)
    return target, key[len(target) + 1:] if target else key


def derived_is_number(figure: dict | None) -> bool:
    """Whether a derived metric's figure reads as a number, not a share (a percentage): one over
    totals (`aggregate: sum`), or an expression of means whose value or interval leaves 0..1
    (`quality * 2`). The report's rows (record.figures) and the gates on it say it alike."""
    if not isinstance(figure, dict):
        return False
    return reads_as_number(figure)  # its recorded unit (version 21), else by its value as before


def _gate_is_share(summary_variant: dict, name: str, value: float | None, threshold: float,
                   earlier: bool = False) -> bool:
    """Whether a metric gate's value and floor print as percentages. A derived metric reads as the
    report shows it (derived_is_number); `earlier`: the rule of builds before it, which read a sum's
    value within 0..1 (`said_yes / __count` of 0.25) as 25.0%, where the report said 0.25."""
    share = 0 <= threshold <= 1 and (value is None or 0 <= value <= 1)
    figure = (summary_variant.get("derived_metrics") or {}).get(name)
    if not earlier and not is_builtin_figure(name) and isinstance(figure, dict) and figure.get("unit") in ("share", "number"):
        return figure["unit"] == "share"  # its definition's unit (version 21), whatever this run's value
    if earlier or not share or is_builtin_figure(name):
        return share
    return not derived_is_number((summary_variant.get("derived_metrics") or {}).get(name))


def metric_gates(summary: dict, setting: dict[str, float] | None, variants: list[str],
                 declared: set[str] | frozenset = frozenset(), runs: int | None = None,
                 shares: set[str] | frozenset = frozenset(), earlier: bool = False) -> list[dict]:
    """One gate per (variant, metric): `setting` maps a metric name, or VARIANT:NAME for one
    variant, to the least value it may have (an unknown value fails the gate: nothing was shown).
    `runs` (when the suite loads): a pass@K or pass^K gate with K above the runs per case is
    refused, since no run of it could ever show the figure. `shares`: the metrics graders declare
    (means of scores in 0..1), whose floor must lie within 0..1 too. `earlier`: the words of builds
    that printed a derived total within 0..1 as a percentage (verify accepts them)."""
    gates = []
    for key, threshold in (setting or {}).items():
        # "VARIANT:NAME" sets one variant's floor; a bare NAME every variant's.
        target, name = gate_target(key, variants)
        prefix, colon, rest = key.partition(":")
        if target is None and colon and prefix not in ("field", "metric", "reducer") and _is_metric(rest, declared):
            raise ConfigError(f"gate on {rest!r} names an unknown variant {prefix!r} (variants: {', '.join(variants)})",
                              field="fail_under_metrics")
        _check_floor(name, threshold, key, name in shares)
        if runs is not None and name.startswith(("pass@", "pass^")) and _is_k(name[5:]) and int(name[5:]) > runs:
            raise ConfigError(f"the gate on {key!r} needs at least {name[5:]} runs of each case; the suite runs "
                              f"{runs} (runs, --runs)", field="fail_under_metrics")
        if runs == 1 and name.startswith(("pass@", "pass^")) and _is_k(name[5:]):
            # pass@K, pass^K are reported when cases run more than once: on 1 run the gate read n/a
            raise ConfigError(f"the gate on {key!r} needs at least 2 runs of each case (pass@K and pass^K are "
                              f"reported when cases run more than once; with 1 run, gate pass_rate); the suite "
                              f"runs 1 (runs, --runs)", field="fail_under_metrics")
        for variant in [target] if target else variants:
            sv = (summary.get("variants") or {}).get(variant) or {}
            value, what = metric_value(sv, name, declared)
            passed = value is not None and reaches(value, threshold)
            # a share prints as a percentage; a derived metric over totals (aggregate sum) is not one
            share = _gate_is_share(sv, name, value, threshold, earlier)
            shown = (_unknown_words(sv, name) if value is None else (f"{value:.1%}" if share else f"{value:.6g}")) \
                + k_note(sv, name)
            limit = f"{threshold:.1%}" if share else f"{threshold:.6g}"
            gates.append({"gate": "fail-under-metric", "variant": variant, "metric": name,
                          "threshold": threshold, "value": value, "passed": passed,
                          "description": f"{variant}: {what} {shown} {'≥' if passed else '<'} {limit}"})
    return gates


def recomputed_metric_gate(summary: dict, gate: dict) -> dict | None:
    """A recorded fail-under-metric gate recomputed from the summary (verify), in the words its
    build wrote when only those differ: one before a derived total read as a number printed its
    value within 0..1 as a percentage. None when the gate names no figure a gate can read."""
    key = {f"{gate.get('variant')}:{gate.get('metric')}": gate.get("threshold")}
    try:
        found = metric_gates(summary, key, [gate.get("variant")])
    except Exception:  # noqa: BLE001 - a tampered metric name: named as a mismatch by the caller
        return None
    if not found:
        return None
    want = found[0]
    if gate.get("description") != want["description"]:
        earlier = metric_gates(summary, key, [gate.get("variant")], earlier=True)[0]
        if gate.get("description") == earlier["description"]:
            want["description"] = earlier["description"]
    return want


def _unknown_words(summary_variant: dict, name: str) -> str:
    """n/a, and why when the summary can say: a named score no attempt of the variant was
    scored on (with the closest name it has: a misspelt gate), a derived metric's own note."""
    if name == "fields" or (name.startswith("field:") and len(name) > 6):
        return f"n/a ({fields_unknown(summary_variant, name)})"
    derived = (summary_variant.get("derived_metrics") or {}).get(name)
    if isinstance(derived, dict) and derived.get("note"):
        return f"n/a ({derived['note']})"
    metrics = summary_variant.get("metrics") or {}
    metric = name[7:] if name.startswith("metric:") else name
    if metric in metrics or not (name.startswith("metric:") or name in (summary_variant.get("derived_metrics") or {})):
        return "n/a"
    close = closest(metric, metrics, 0.6)
    hint = f"; did you mean {close!r}?" if close is not None else (f"; its metrics: {', '.join(sorted(metrics))}" if metrics else "")
    return f"n/a (no attempt of this variant was scored on it{hint})"


def _check_floor(name: str, threshold: Any, key: str, graded: bool = False) -> None:
    """A floor is a finite number, and one on a share (a pass rate, pass@k or pass^k, field
    accuracy, the case score, a grader's metric (`graded`), a Python grader's named score, a
    reducer: means of scores in 0..1) lies within 0..1: 90 for 90% would be a gate no run can pass."""
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not math.isfinite(threshold):
        raise ConfigError(f"the floor of {key!r} must be a finite number, got {threshold!r}", field="fail_under_metrics")
    share = graded or name in ("pass_rate", "fields", "score") or name.startswith(("field:", "metric:", "reducer:")) \
        or (name.startswith(("pass@", "pass^")) and _is_k(name[5:]))
    if share and not 0 <= threshold <= 1:
        raise ConfigError(f"the floor of {key!r} is a share and must be between 0 and 1 (0.9 for 90%), got "
                          f"{threshold:g}", field="fail_under_metrics")


def all_pass_gate(ran: int, failing: list[str]) -> dict:
    """`score`'s rule: every case must pass (and there must be at least one). `ran` counts the
    cases with an attempt that ran; `failing` lists those with any attempt that did not pass."""
    passed = bool(ran) and not failing
    if not ran:
        text = "every case passes: no case was scored"
    elif failing:
        # "did not pass": a case may have failed, errored or not been assessed (a judge that could not decide)
        text = (f"every case passes: {len(failing)} did not pass ({', '.join(failing[:5])}"
                f"{'…' if len(failing) > 5 else ''})")
    else:
        text = f"every case passes: all {ran} passed"
    return {"gate": "all-pass", "variant": None, "threshold": 1.0, "value": None, "passed": passed,
            "description": text}


def earlier_gate_words(description: str) -> tuple[str, ...]:
    """A gate's words as earlier builds wrote them for the same figures (verify accepts them): the
    all-pass gate's ("N failed (ids)", said of cases that errored or were not assessed too), and a
    pass@K or pass^K gate's without what the figure leaves out (stats.kgate)."""
    return (description.replace(" did not pass (", " failed (", 1), without_k_note(description),
            without_fields_reason(description))


def failing_cases(attempts) -> tuple[int, list[str]]:
    """(cases with an attempt that ran, sorted ids of those with any attempt that did not pass),
    from attempt records."""
    ran: dict[str, bool] = {}
    for a in attempts:
        if a["status"] not in ("not-run", "waiting"):
            ran[a["case_id"]] = ran.get(a["case_id"], True) and a["status"] == "passed"
    return len(ran), sorted(cid for cid, ok in ran.items() if not ok)


def parse_named_floats(values: list[str] | None, flag: str, low: float, high: float, *,
                       field: str | None = None, usage: str | None = None) -> dict[str, float] | None:
    """`--min-dq 0.2` (every pair: key "*") or `--min-dq careful/basic=0.2`; likewise --min-rubric.
    With `usage`, the NAME= part is required (--fail-under-metric)."""
    if not values:
        return None
    field = field or flag.replace("-", "_")
    out: dict[str, float] = {}
    for raw in values:
        name, sep, num = raw.rpartition("=")
        try:
            value = float(num)
        except ValueError:
            value = None
        if value is None or (usage is not None and (not sep or not name)):
            raise ConfigError(f"--{flag} takes {usage or 'VALUE or NAME=VALUE'}, got {raw!r}", field=field)
        if not math.isfinite(value):
            raise ConfigError(f"--{flag} value must be a finite number, got {num!r}", field=field)
        if not low <= value <= high:
            raise ConfigError(f"--{flag} value must be between {low:g} and {high:g}, got {value:g}", field=field)
        out[name if sep else "*"] = value
    return out


# --- end visual work ---
