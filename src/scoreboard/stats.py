"""Summary figures computed from attempts alone (so `verify` and `rescore` can recompute them)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from .core import MEASUREMENT_KEYS

JUDGED = ("passed", "failed", "error")


def rate(num: int, den: int) -> float | None:
    """num/den, or None when there is nothing to divide (never a fake 0)."""
    return num / den if den else None


def measurement_summary(values: list[Any]) -> dict:
    """{known_count, unknown_count, known_subtotal, total, mean, median, p95}; unknown is never 0."""
    known = sorted(v for v in values if v is not None)
    n = len(known)
    unknown = len(values) - n
    subtotal = sum(known) if n else None
    # An empty set has no total either: nothing was measured, which is not a measured zero.
    out = {"known_count": n, "unknown_count": unknown, "known_subtotal": subtotal,
           "total": subtotal if unknown == 0 and n else None}
    if n:
        out["mean"] = subtotal / n
        mid = n // 2
        out["median"] = known[mid] if n % 2 else (known[mid - 1] + known[mid]) / 2
        out["p95"] = _percentile(known, 0.95)
    else:
        out["mean"] = out["median"] = out["p95"] = None
    return out


def _percentile(sorted_values: list[float], q: float) -> float:
    # Linear interpolation between closest ranks (numpy's default), without importing numpy.
    if len(sorted_values) == 1:
        return sorted_values[0]
    pos = (len(sorted_values) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def field_key_map(attempts: list[dict]) -> dict[tuple[str, str], str]:
    """(grader, path) -> the key shown in field_accuracy: the path, or grader:path when two graders grade it."""
    graders_of: dict[str, set[str]] = defaultdict(set)
    for a in attempts:
        for g in a["grades"]:
            for f in g.get("fields") or ():
                graders_of[f["path"]].add(g["grader"])
    return {(gr, path): (path if len(grs) == 1 else f"{gr}:{path}")
            for path, grs in graders_of.items() for gr in grs}


def variant_summary(attempts: list[dict], runs: int, categories: dict[str, str | None],
                    keys: dict[tuple[str, str], str]) -> dict:
    """Counts, pass rates (overall, per run, mean, min), field accuracy, by category, measurements."""
    counts: dict[str, int] = defaultdict(int)
    per_run_pass: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    field_hits: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    by_cat: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for a in attempts:
        status = a["status"]
        counts[status] += 1
        if status in JUDGED:
            ok = status == "passed"
            slot = per_run_pass[a["run"]]
            slot[0] += ok
            slot[1] += 1
            cat = categories.get(a["case_id"]) or "uncategorised"
            c = by_cat[cat]
            c[0] += 1
            c[1] += ok
        for g in a["grades"]:
            for f in g.get("fields") or ():
                hit = field_hits[keys[(g["grader"], f["path"])]]
                hit[0] += bool(f.get("passed"))
                hit[1] += 1
    judged = counts["passed"] + counts["failed"] + counts["error"]
    per_run = [{"run": r, "attempts": per_run_pass[r][1], "passed": per_run_pass[r][0],
                "pass_rate": rate(per_run_pass[r][0], per_run_pass[r][1])} for r in range(runs)]
    run_rates = [p["pass_rate"] for p in per_run if p["pass_rate"] is not None]
    measures = {key: measurement_summary([a["measurements"].get(key) for a in attempts
                                          if a["status"] not in ("not-run",)])
                for key in MEASUREMENT_KEYS}
    return {
        "attempts": len(attempts),
        "passed": counts["passed"], "failed": counts["failed"], "errors": counts["error"],
        "unassessed": counts["unassessed"], "not_run": counts["not-run"],
        "interrupted": counts["interrupted"],
        "pass_rate": rate(counts["passed"], judged),
        "per_run": per_run,
        "mean_pass_rate": sum(run_rates) / len(run_rates) if run_rates else None,
        "min_pass_rate": min(run_rates) if run_rates else None,
        "field_accuracy": {k: v[0] / v[1] for k, v in sorted(field_hits.items())},
        "by_category": {k: {"attempts": v[0], "passed": v[1], "pass_rate": rate(v[1], v[0])}
                        for k, v in sorted(by_cat.items())},
        "measurements": measures,
    }


def summarize(plan: dict, attempts: list[dict]) -> dict:
    """The report's summary: one block per variant, computed from the plan and attempts only."""
    categories = {c["id"]: c.get("category") for c in plan["cases"]}
    keys = field_key_map(attempts)
    by_variant: dict[str, list[dict]] = defaultdict(list)
    for a in attempts:
        by_variant[a["variant"]].append(a)
    variants = {v["name"]: variant_summary(by_variant.get(v["name"], []), plan["runs"], categories, keys)
                for v in plan["variants"]}
    return {"variants": variants}
