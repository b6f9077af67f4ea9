"""Summary figures computed from attempts alone (so `verify` and `rescore` can recompute them).

The unit of every interval and test is the case, never the attempt: repeated runs of one case
are not independent evidence, so they are averaged (or resampled together), never counted as
extra cases. numpy is imported inside the functions that need it, so `scoreboard --help` stays fast.
"""

from __future__ import annotations

import math
from collections import defaultdict
from statistics import NormalDist
from typing import Any

from .core import MEASUREMENT_KEYS

JUDGED = ("passed", "failed", "error")
LEVEL = 0.95
RESAMPLES = 2000
# Graders whose verdicts speak to meaning rather than form; without one, semantic quality is unmeasured.
from .graders.registry import JUDGE_GRADERS  # noqa: E402  (re-exported: graders that call a model)


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


# ---------------------------------------------------------------------------------------------
# Statistical primitives (shared with comparison.py)


def wilson_interval(passed: int, n: int, level: float = LEVEL) -> tuple[float, float] | None:
    """Wilson score interval for passed/n (same as statsmodels proportion_confint method="wilson")."""
    if n <= 0:
        return None
    z = NormalDist().inv_cdf(0.5 + level / 2)
    p = passed / n
    z2n = z * z / n
    centre = (p + z2n / 2) / (1 + z2n)
    half = z / (1 + z2n) * math.sqrt(p * (1 - p) / n + z2n / (4 * n))
    # At 0 or n passes the bound is exactly 0 or 1; the formula leaves rounding dust there.
    low = 0.0 if passed == 0 else max(0.0, centre - half)
    high = 1.0 if passed == n else min(1.0, centre + half)
    return low, high


def bootstrap_interval(values: list[float], weights: list[float] | None = None, *, seed: Any,
                       resamples: int = RESAMPLES, level: float = LEVEL) -> tuple[float, float] | None:
    """Percentile interval of a case bootstrap: resample the n cases with replacement, statistic
    sum(values)/sum(weights) over the drawn cases (the plain mean of `values` when weights is None).

    Drawing n cases uniformly with replacement and summing their values depends only on how often
    each distinct (value, weight) pair is drawn, and those counts are Multinomial(n, share of
    cases holding each pair). Drawing the counts directly is the same bootstrap, exactly, at a
    cost of resamples x distinct pairs instead of resamples x n (a few hundred microseconds
    for 10,000 pass/fail cases, instead of seconds).
    """
    import numpy as np

    n = len(values)
    if n == 0:
        return None
    # (value, weight) pairs as complex numbers: np.unique sorts those lexicographically, in 1-D.
    pairs = np.asarray(values, dtype=float) + 1j * np.asarray(1.0 if weights is None else weights, dtype=float)
    uniq, counts = np.unique(pairs, return_counts=True)
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(n, counts / n, size=resamples).astype(float)
    num = draws @ uniq.real
    stat = num / n if weights is None else num / (draws @ uniq.imag)
    tail = 100 * (1 - level) / 2
    low, high = np.percentile(stat, [tail, 100 - tail])
    # Sums of non-integer per-case values may differ in the last bits between BLAS builds;
    # rounding keeps a report re-verifiable on another machine (integer sums are exact anyway).
    return round(float(low), 12), round(float(high), 12)


def binom_two_sided_p(k: int, n: int) -> float:
    """Exact two-sided binomial test of k successes in n trials at p=0.5 (scipy binomtest's value).

    With p=0.5 the distribution is symmetric, so the p-value is 2*P(X <= min(k, n-k)), capped at 1.
    Computed exactly with integers (correctly rounded) up to 20,000 trials; beyond that in log space.
    """
    if n <= 0:
        return 1.0
    m = min(k, n - k)
    if 2 * m == n:
        return 1.0
    if n <= 20000:
        term = total = 1
        for i in range(m):
            term = term * (n - i) // (i + 1)
            total += term
        return min(1.0, (2 * total) / (1 << n))
    # log pmf(m), then the lower tail as pmf(m) * (1 + r_m + r_m r_{m-1} + ...), which falls fast.
    log_pmf = math.lgamma(n + 1) - math.lgamma(m + 1) - math.lgamma(n - m + 1) - n * math.log(2)
    tail = term = 1.0
    for i in range(m, 0, -1):
        term *= i / (n - i + 1)
        tail += term
        if term < tail * 1e-17:
            break
    log_p = math.log(2) + log_pmf + math.log(tail)
    return 1.0 if log_p >= 0 else math.exp(log_p)


def bootstrap_seed(plan: dict) -> Any:
    """The seed every bootstrap of this report uses: plan["seed"], 0 when absent."""
    seed = int(plan.get("seed") or 0)
    # numpy seeds must be non-negative; keep negative seeds distinct from positive ones.
    return seed if seed >= 0 else [1, -seed]


# ---------------------------------------------------------------------------------------------
# Per variant


def field_keys(pairs) -> dict[tuple[str, str], str]:
    """(grader, path) -> the key shown in field_accuracy: the path, or grader:path when two graders grade it."""
    graders_of: dict[str, set[str]] = defaultdict(set)
    for grader, path in pairs:
        graders_of[path].add(grader)
    return {(gr, path): (path if len(grs) == 1 else f"{gr}:{path}")
            for path, grs in graders_of.items() for gr in grs}


def field_key_map(attempts: list[dict]) -> dict[tuple[str, str], str]:
    """field_keys over every graded field of these attempts."""
    return field_keys({(g["grader"], f["path"]) for a in attempts for g in a["grades"]
                       for f in g.get("fields") or ()})


class Tally:
    """One pass over a variant's attempts collecting everything its summary and comparisons need."""

    def __init__(self, attempts: list[dict], categories: dict[str, str | None]):
        self.attempts = len(attempts)
        self.counts: dict[str, int] = defaultdict(int)
        self.per_run: dict[int, list[int]] = defaultdict(lambda: [0, 0])
        self.by_cat: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        self.cases: dict[str, list[int]] = {}  # case_id -> [passed, judged]
        self.fields: dict[tuple[str, str], dict[str, list[int]]] = defaultdict(dict)  # -> case -> [hits, graded]
        self.measures: dict[str, list] = {key: [] for key in MEASUREMENT_KEYS}
        self.unknown_tokens = 0
        self.graders: set[str] = set()
        measures = [(key, self.measures[key]) for key in MEASUREMENT_KEYS]
        for a in attempts:
            status, cid = a["status"], a["case_id"]
            self.counts[status] += 1
            if status in JUDGED:
                ok = status == "passed"
                for slot in (self.per_run[a["run"]], self.by_cat[categories.get(cid) or "uncategorised"],
                             self.cases.get(cid) or self.cases.setdefault(cid, [0, 0])):
                    slot[0] += ok
                    slot[1] += 1
            if status != "not-run":  # a planned attempt that never ran measured nothing, not unknowns
                m = a["measurements"]
                for key, values in measures:
                    values.append(m.get(key))
                self.unknown_tokens += m.get("input_tokens") is None or m.get("output_tokens") is None
            for g in a["grades"]:
                self.graders.add(g["grader"])
                for f in g.get("fields") or ():
                    per = self.fields[(g["grader"], f["path"])]
                    slot = per.get(cid) or per.setdefault(cid, [0, 0])
                    slot[0] += bool(f.get("passed"))
                    slot[1] += 1

    def keyed_fields(self, keys: dict[tuple[str, str], str]) -> dict[str, dict[str, list[int]]]:
        """Field tallies under their field_accuracy keys."""
        return {keys[pair]: per for pair, per in self.fields.items()}


def pass_rate_interval(tallies: dict[str, list[int]], seed: Any) -> dict | None:
    """95% interval of the pass rate with the case as the unit: Wilson when every case was judged
    once, else a cluster bootstrap that resamples cases with all their repeats.

    When every case passed every run (or failed every run) the bootstrap has nothing to resample
    and would claim [1, 1]; each case is then one consistent outcome, so Wilson on the cases is
    the case-level interval, and it is used instead of a falsely certain one."""
    if not tallies:
        return None
    counts = list(tallies.values())
    if all(n == 1 for _, n in counts) or all(p == n for p, n in counts) or not any(p for p, _ in counts):
        low, high = wilson_interval(sum(p == n for p, n in counts), len(counts))
        method = "wilson"
    else:
        low, high = bootstrap_interval([p for p, _ in counts], [n for _, n in counts], seed=seed)
        method = "cluster-bootstrap"
    return {"low": low, "high": high, "level": LEVEL, "method": method, "unit": "case"}


def variant_summary(tally: Tally, runs: int, keys: dict[tuple[str, str], str], seed: Any = 0) -> dict:
    """Counts, pass rates (overall with a case-level CI, per run, mean, min), case stability,
    field accuracy (over attempts), by category, measurements."""
    counts, cases = tally.counts, tally.cases
    judged = counts["passed"] + counts["failed"] + counts["error"]
    per_run = [{"run": r, "attempts": tally.per_run[r][1], "passed": tally.per_run[r][0],
                "pass_rate": rate(tally.per_run[r][0], tally.per_run[r][1])} for r in range(runs)]
    run_rates = [p["pass_rate"] for p in per_run if p["pass_rate"] is not None]
    stability = {cid: p / n for cid, (p, n) in cases.items()}
    field_hits = {key: (sum(h for h, _ in per.values()), sum(n for _, n in per.values()))
                  for key, per in tally.keyed_fields(keys).items()}
    return {
        "attempts": tally.attempts,
        "cases": len(cases),
        "passed": counts["passed"], "failed": counts["failed"], "errors": counts["error"],
        "unassessed": counts["unassessed"], "not_run": counts["not-run"],
        "interrupted": counts["interrupted"],
        "pass_rate": rate(counts["passed"], judged),
        "pass_rate_ci": pass_rate_interval(cases, seed),
        "per_run": per_run,
        "mean_pass_rate": sum(run_rates) / len(run_rates) if run_rates else None,
        "min_pass_rate": min(run_rates) if run_rates else None,
        "case_stability": stability,
        "flaky_cases": sorted(cid for cid, s in stability.items() if 0 < s < 1),
        "field_accuracy": {k: v[0] / v[1] for k, v in sorted(field_hits.items())},
        "by_category": {k: {"attempts": v[1], "passed": v[0], "pass_rate": rate(v[0], v[1])}
                        for k, v in sorted(tally.by_cat.items())},
        "measurements": {key: measurement_summary(values) for key, values in tally.measures.items()},
    }


# ---------------------------------------------------------------------------------------------
# What the numbers do not cover


def _counted(items: list[tuple[str, int, int]]) -> str:
    return ", ".join(f"{name} ({u} of {t} attempts)" for name, u, t in items)


def not_measured(plan: dict, tallies: dict[str, Tally], comparisons: list[dict]) -> list[dict]:
    """[{what, why}] naming what this report cannot speak to, in a fixed order."""
    out: list[dict] = []
    graders = {str(g) for t in tallies.values() for g in t.graders}
    if not any(g in JUDGE_GRADERS or g.split(":")[0] in JUDGE_GRADERS for g in graders) and not plan.get("reviews"):
        out.append({"what": "semantic quality",
                    "why": "no judge or human review ran; graders are mechanical"})
    for comp in comparisons:
        parts = comp["differs_in"]
        if len(parts) > 1:
            shown = " and ".join(parts) if len(parts) == 2 else f"{parts[0]}, {parts[1]} and {parts[2]}"
            out.append({"what": "model comparison",
                        "why": f"{comp['a']} vs {comp['b']}: variants differ in more than one respect "
                               f"({shown}), so a difference cannot be credited to any one of them"})
    cost, tokens = [], []
    for name, t in tallies.items():
        measured = len(t.measures["cost_usd"])
        unknown_cost = sum(v is None for v in t.measures["cost_usd"])
        if unknown_cost:
            cost.append((name, unknown_cost, measured))
        if t.unknown_tokens:
            tokens.append((name, t.unknown_tokens, measured))
    if cost:
        out.append({"what": "cost", "why": f"no price known for {_counted(cost)}; unknown cost is not zero"})
    if tokens:
        out.append({"what": "token usage", "why": f"token counts not reported for {_counted(tokens)}"})
    return out


def summarize(plan: dict, attempts: list[dict], pairwise: dict | None = None, reviews: dict | None = None) -> dict:
    """The report's summary: one block per variant, paired comparisons of every pair of variants,
    and what was not measured; computed from the plan and attempts only (plus the pairwise
    judgments when they ran), deterministic given plan["seed"]."""
    from .comparison import compare_variants

    categories = {c["id"]: c.get("category") for c in plan["cases"]}
    seed = bootstrap_seed(plan)
    by_variant: dict[str, list[dict]] = defaultdict(list)
    for a in attempts:
        by_variant[a["variant"]].append(a)
    tallies = {v["name"]: Tally(by_variant.get(v["name"], []), categories) for v in plan["variants"]}
    # Keys over every variant, so one path reads the same in every block.
    keys = field_keys({pair for t in tallies.values() for pair in t.fields})
    order = {c["id"]: i for i, c in enumerate(plan["cases"])}
    for t in tallies.values():
        # Plan order, so case_stability reads like the case list (cases outside the plan last).
        t.cases = dict(sorted(t.cases.items(), key=lambda kv: order.get(kv[0], len(order))))
    variants = {name: variant_summary(t, plan["runs"], keys, seed) for name, t in tallies.items()}
    comparisons = compare_variants(plan["variants"], {n: t.cases for n, t in tallies.items()},
                                   {n: t.keyed_fields(keys) for n, t in tallies.items()}, seed)
    summary = {"variants": variants, "comparisons": comparisons,
               "not_measured": not_measured(plan, tallies, comparisons)}
    from .judge_stats import judge_summary

    judges = judge_summary(plan, attempts, pairwise)
    if judges is not None:
        summary["judges"] = judges
    from .reviews import apply_reviews

    apply_reviews(summary, plan, attempts, reviews)
    return summary
