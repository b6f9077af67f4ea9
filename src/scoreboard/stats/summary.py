"""Summary figures computed from attempts alone (so `verify` and `rescore` can recompute them).

The unit of every interval and test is the case, never the attempt: repeated runs of one case
are not independent evidence, so they are averaged (or resampled together), never counted as
extra cases. numpy is imported inside the functions that need it, so `scoreboard --help` stays fast.
"""

from __future__ import annotations

from typing import Any

# Graders whose verdicts speak to meaning rather than form; without one, semantic quality is unmeasured.
from ..record.constants import JUDGE_GRADER_NAMES as JUDGE_GRADERS
from .agreement import ReviewAccumulator, apply_reviews, bound_reviews
from .comparison import compare_variants
from .counts import CaseCounts, CaseIndex, by_unit, unit_of_cases
from .intervals import bootstrap_seed, rate
from .judges import JudgeAccumulator
from .case_figures import category_figures, pass_at_k_figures, unit_named  # noqa: F401  (unit_named re-exported)
from .methods import METHODS, STATS_VERSION, UNIT_WORDS, computing_version
from .methods import pass_rate_interval as rate_interval
from .tally import Tally, field_keys, grades_fields, without
from .tasks import TaskAccumulator, is_task_case


# ---------------------------------------------------------------------------------------------
# Per variant


def pass_rate_interval(tallies, seed: Any = None) -> dict | None:
    """95% interval of the pass rate with the case as the unit (stats.methods: Wilson on the
    effective number of cases, the same method for every variant)."""
    return rate_interval([(p, n) for p, n in tallies.values()])


def score_figures(tally: Tally, counts: dict, extra: dict, seed: Any, units: dict | None = None) -> dict:
    """issue 14: not-graded count, the case score, named and derived metrics, reducers (each key
    only when it says something, so reports without them stay as they were)."""
    from .metrics import mean_figure, reducer_figure, reducer_name

    out: dict = {}
    if counts["not-graded"]:
        out["not_graded"] = counts["not-graded"]
    if tally.score_sums:
        out["score"] = _unit_mean(mean_figure(by_unit(tally.score_sums, units)), units)
    names = sorted(set(tally.metric_sums) | set(extra.get("declared") or ()))
    if names:
        out["metrics"] = {n: _unit_mean(mean_figure(by_unit(tally.metric_sums.get(n, {}), units)), units)
                          or {"value": None, "cases": 0, "attempts": 0, "ci": None} for n in names}
    if extra.get("derived_metrics"):
        out["derived_metrics"] = derived_figures(tally, extra["derived_metrics"], seed, extra.get("declared"))
    if extra.get("reducers"):
        out["reducers"] = {reducer_name(r): reducer_figure(tally.run_values or {}, r) for r in extra["reducers"]}
    return out


def _unit_mean(figure: dict | None, units: dict | None) -> dict | None:
    if figure is not None:
        unit_named(figure.get("ci"), units)
    return figure


def derived_figures(tally: Tally, specs: dict, seed: Any, declared: Any = ()) -> dict:
    """Each derived metric in the order the suite gives them (a later one may name an earlier one
    of the same aggregate): over the metrics' means, or over their totals (`aggregate: sum`)."""
    from .metrics import derived_figure, derived_spec, inline_derived
    from .units import derived_unit

    means = {n: {c: tuple(v) for c, v in per.items()} for n, per in tally.metric_sums.items()}
    totals = {n: {c: tuple(v) for c, v in per.items()} for n, per in tally.metric_totals.items()}
    counts = {cid: tally.ran[cid][1] for cid in tally.ran}
    left = sum(tally.unassessed_ran.values()) if computing_version() >= 17 else 0
    if left:
        # an unassessed attempt's scores are unknown: a total over it (and __count with it) read them as 0
        totals = without(totals, tally.unassessed_totals)
        counts = {cid: n - tally.unassessed_ran.get(cid, 0) for cid, n in counts.items()}
        counts = {cid: n for cid, n in counts.items() if n}
    earlier: dict[str, dict[str, str]] = {"mean": {}, "sum": {}}
    out = {}
    for name, spec in specs.items():
        expression, aggregate = derived_spec(spec)
        inlined = inline_derived(expression, earlier[aggregate])
        earlier[aggregate][name] = inlined
        if aggregate == "sum":
            own_totals, own_counts, undecided = _known_for(tally, inlined, totals, counts)
            fig = derived_figure(inlined, own_totals, seed, "sum", own_counts, declared)
            if left:
                fig["unassessed_left_out"] = left
            if undecided:
                fig["undecided_left_out"] = undecided
        else:
            fig = derived_figure(inlined, means, seed, declared=declared)
        fig["expression"] = expression
        if computing_version() >= 21:  # by its definition, the same in every run (20: by its value)
            fig["unit"] = derived_unit(spec, inlined)
        out[name] = fig
    return out


def _known_for(tally: Tally, expression: str, totals: dict, counts: dict) -> tuple[dict, dict, int]:
    """The totals and `__count` an expression over totals reads, without the judged attempts on
    which a metric it names is unknown (a grade naming it could not decide): such an attempt is
    left out whole, as an unassessed one is, so `judged / __count` is never 7/8 where one of the
    8 is unknown (statistics version 21). Returns (totals, counts, attempts left out)."""
    from .metrics import expression_names

    names = expression_names(expression)
    gone = [(cid, known) for cid, unknown, known in tally.undecided if unknown & names]
    if not gone:
        return totals, counts, 0
    part: dict[str, dict[str, list]] = {}
    counts = dict(counts)
    for cid, known in gone:
        counts[cid] -= 1
        for name, total in known.items():
            slot = part.setdefault(name, {}).setdefault(cid, [0.0, 0])
            slot[0] += total
            slot[1] += 1
    return without(totals, part), {c: n for c, n in counts.items() if n}, len(gone)


def declared_metrics(plan_cases) -> set[str]:
    """Metric names the plan's grader specs declare (`metric` beside a grader)."""
    names: set[str] = set()
    seen: set[int] = set()
    for c in plan_cases:
        specs = c.get("graders") or []
        if id(specs) in seen:
            continue
        seen.add(id(specs))
        for spec in specs:
            if isinstance(spec, dict) and isinstance(spec.get("metric"), str):
                names.add(spec["metric"])
    return names


def not_graded_case(case: dict) -> bool:
    """Whether no grader of a planned case decides its outcome (none at all, or only record-only
    ones: classify with record_only: true), so its attempts are never passed or failed."""
    specs = case.get("graders")
    return isinstance(specs, list) and all(
        isinstance(s, dict) and len(s) == 1 and isinstance(s.get("classify"), dict)
        and s["classify"].get("record_only") is True for s in specs)


def variant_summary(tally: Tally, runs: int, keys: dict[tuple[str, str], str], seed: Any = 0,
                    plan_extra: dict | None = None, units: dict | None = None) -> dict:
    """Counts, pass rates (overall with a case-level CI, per run, mean, min), case stability,
    field accuracy (over attempts), by category, measurements. With `units` (case id -> its
    conversation) a conversation's turns are one unit of every interval."""
    counts, cases = tally.counts, tally.cases
    # an error of a case no grader decides is counted, but outside the rate (Tally.add)
    judged = counts["passed"] + counts["failed"] + counts["error"] - tally.ungraded_errors
    per_run = [{"run": r, "attempts": tally.per_run[r][1], "passed": tally.per_run[r][0],
                "pass_rate": rate(tally.per_run[r][0], tally.per_run[r][1])} for r in range(runs)]
    run_rates = [p["pass_rate"] for p in per_run if p["pass_rate"] is not None]
    stability = {cid: p / n for cid, (p, n) in cases.items()}
    field_hits = {key: per.totals() for key, per in tally.keyed_fields(keys).items()}
    at_k, hat_k = pass_at_k_figures(cases, runs, units)
    out = {
        "attempts": tally.attempts,
        "cases": len(cases),
        "passed": counts["passed"], "failed": counts["failed"], "errors": counts["error"],
        "unassessed": counts["unassessed"], "not_run": counts["not-run"],
        "interrupted": counts["interrupted"],
        **({"errors_not_graded": tally.ungraded_errors} if tally.ungraded_errors else {}),
        # attempts waiting on a provider batch are not finished: counted here, nowhere else
        **({"waiting": counts["waiting"]} if counts["waiting"] else {}),
        "pass_rate": rate(counts["passed"], judged),
        "pass_rate_ci": unit_named(pass_rate_interval(by_unit(cases, units)), units),
        "per_run": per_run,
        "mean_pass_rate": sum(run_rates) / len(run_rates) if run_rates else None,
        "min_pass_rate": min(run_rates) if run_rates else None,
        "case_stability": stability,
        "flaky_cases": sorted(cid for cid, s in stability.items() if 0 < s < 1),
        "field_accuracy": {k: v[0] / v[1] for k, v in sorted(field_hits.items())},
        "by_category": category_figures(tally, cases, units),
        "measurements": {key: acc.summary() for key, acc in tally.measures.items()},
        **({"usage_over_bound": tally.over_bound} if tally.over_bound else {}),
    }
    if runs > 1:
        out["pass_at_k"], out["pass_hat_k"] = at_k, hat_k
    # Field accuracy is over the attempts whose output was graded field by field; an attempt
    # that errored has no output, so it is counted beside the figure, never silently left out.
    out["field_accuracy_over"] = {"graded_attempts": tally.field_attempts, "errored_attempts": tally.field_errors
                                  if computing_version() >= 18 else counts["error"]}
    out.update(score_figures(tally, counts, plan_extra or {}, seed, units))
    correct, total = tally.fields_all.totals()
    if total:
        # Every field of every case, the case as the unit of the interval (fields of one
        # document are not independent evidence either).
        fields_ci = rate_interval(list(by_unit(tally.fields_all, units).values()))
        out["field_accuracy_overall"] = {"value": correct / total, "correct": correct, "total": total,
                                         "ci": unit_named(fields_ci, units)}
    if units:
        out["conversations"] = len({units[cid] for cid in cases if cid in units})
        out["units"] = len({units.get(cid, cid) for cid in cases})  # what the intervals count
    return out


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
        unknown_cost = t.measures["cost_usd"].unknown
        if unknown_cost:
            cost.append((name, unknown_cost, measured))
        if t.unknown_tokens:
            tokens.append((name, t.unknown_tokens, measured))
    if cost:
        out.append({"what": "cost", "why": f"no price known for {_counted(cost)}; unknown cost is not zero"
                    if computing_version() < 11 else f"cost unknown for {_counted(cost)}: no price known for the "
                    "model, or no usage reported to price; unknown cost is not zero"})
    if tokens:
        out.append({"what": "token usage", "why": f"token counts not reported for {_counted(tokens)}"})
    return out


class Summarizer:
    """The report's summary, built as attempts finish (in any order): one Tally per variant plus
    the judge and review accumulators. Memory grows with cases, not with attempts."""

    def __init__(self, plan: dict, reviews: dict | None = None):
        self.plan, self.reviews = plan, reviews
        categories: dict[str, str | None] = {}
        declared: set[str] = set()
        seen_specs: set[int] = set()
        task_cases: set[str] = set()
        ungraded: set[str] = set()
        fielded: set[str] = set()
        #: case id -> its conversation, for the turns of one (each conversation is one unit)
        self.units: dict[str, tuple[str, str]] = {}
        for c in plan["cases"]:  # one pass: the plan's cases may be made as they are read
            categories[c["id"]] = c.get("category")
            if c.get("conversation"):
                self.units.update(unit_of_cases([c]))
            specs = c.get("graders") or []
            if id(specs) not in seen_specs:
                seen_specs.add(id(specs))
                declared |= declared_metrics([c])
            if is_task_case(c):
                task_cases.add(c["id"])
            elif not_graded_case(c):
                ungraded.add(c["id"])
            if not isinstance(c.get("graders"), list) or any(grades_fields(g) for g in specs):
                fielded.add(c["id"])  # a case whose graders the plan did not keep may grade fields
        index = CaseIndex(list(categories))
        self.tallies = {v["name"]: Tally(index, categories, frozenset(ungraded), frozenset(fielded)) for v in plan["variants"]}
        self.tasks = TaskAccumulator(plan, task_cases)
        self.extra = {"declared": declared, "derived_metrics": plan.get("derived_metrics"),
                      "reducers": plan.get("reducers")}
        if plan.get("reducers"):
            for t in self.tallies.values():
                t.run_values = {}
        self.judges = JudgeAccumulator(plan)
        self.review_acc = ReviewAccumulator(plan) if reviews else None
        # visual work (issue 17): the judge's instrument check, in the check stage
        self.instrument = None
        if plan.get("instrument"):
            from .instrument import InstrumentAccumulator

            self.instrument = InstrumentAccumulator(plan)
        self._bound = reviews

    def add(self, attempt: dict) -> None:
        """Count one attempt (attempts of variants outside the plan are left out)."""
        tally = self.tallies.get(attempt["variant"])
        if tally is None:
            return
        tally.add(attempt)
        self.tasks.add(attempt)
        self.judges.add(attempt)
        if self.review_acc is not None:
            self.review_acc.add(attempt)
        if self.instrument is not None:
            self.instrument.add(attempt)

    def case_outcomes(self) -> dict[str, CaseCounts]:
        """variant -> case_id -> (passed, judged) (what the baseline gate compares)."""
        return {name: t.cases for name, t in self.tallies.items()}

    def field_outcomes(self) -> dict[str, CaseCounts]:
        """variant -> case_id -> (fields correct, fields graded) (what the field baseline gate compares)."""
        return {name: t.fields_all for name, t in self.tallies.items()}

    def failing_cases(self) -> tuple[int, list[str]]:
        """(cases that ran, sorted ids of those with any attempt that did not pass)."""
        ran: dict[str, bool] = {}
        for t in self.tallies.values():
            for cid, (passed, tried) in t.ran.items():
                ran[cid] = ran.get(cid, True) and passed == tried
        return len(ran), sorted(cid for cid, ok in ran.items() if not ok)

    def summary(self, pairwise: dict | None = None) -> dict:
        """The summary of everything added so far; deterministic given plan["seed"], whatever
        order the attempts were added in."""
        plan = self.plan
        seed = bootstrap_seed(plan)
        tallies = self.tallies
        # Keys over every variant, so one path reads the same in every block.
        keys = field_keys({pair for t in tallies.values() for pair in t.fields})
        units = self.units or None
        variants = {name: variant_summary(t, plan["runs"], keys, seed, self.extra, units)
                    for name, t in tallies.items()}
        comparisons = compare_variants(plan["variants"], {n: by_unit(t.cases, units) for n, t in tallies.items()},
                                       {n: {k: by_unit(per, units) for k, per in t.keyed_fields(keys).items()}
                                        for n, t in tallies.items()}, seed, "unit" if units else "case")
        compare_metrics(comparisons, tallies, units)
        if units:
            for comp in comparisons:
                for pair in (comp, *comp["fields"].values()):  # the scores' and metrics': compare_scores
                    unit_named(pair.get("mean_difference_ci"), units)
        summary = {"variants": variants, "comparisons": comparisons,
                   "not_measured": not_measured(plan, tallies, comparisons),
                   "methods": methods_block(units)}
        if plan.get("derived_metrics"):
            from .metrics import BOOTSTRAP_METHOD, BOOTSTRAP_WORDS

            # version 20 names the seed (19: "seeded by the plan", which no rendering but the JSON's plan told)
            summary["methods"][BOOTSTRAP_METHOD] = BOOTSTRAP_WORDS if computing_version() < 20 else \
                BOOTSTRAP_WORDS.replace("seeded by the plan", f"seed {int(plan.get('seed') or 0)} (the run's --seed)")
        tasks = self.tasks.summary()
        if tasks is not None:  # agent tasks: utility and attack success (stats/tasks.py)
            summary["tasks"] = tasks
        judges = self.judges.summary(pairwise)
        if judges is not None:
            summary["judges"] = judges
        if self.review_acc is not None:
            # Reviews bound to no output of these attempts (a store's reviews of other outputs of
            # the same cases) are left out of the figures and of the report.
            self._bound = bound_reviews(self.reviews, self.review_acc.attempts())
            apply_reviews(summary, plan, self.review_acc, self._bound)
        if self.instrument is not None:
            summary["instrument"] = self.instrument.summary(pairwise)
        return summary

    def bound_reviews(self) -> dict | None:
        """The reviews the last summary counted (those bound to an output of its attempts)."""
        return self._bound


def methods_block(units: dict | None) -> dict:
    """The statistics version and each method in words; with conversations, the unit too."""
    if not units:
        return {"version": STATS_VERSION, **METHODS}
    return {"version": STATS_VERSION, **METHODS, "unit": UNIT_WORDS}


def compare_metrics(comparisons: list[dict], tallies: dict[str, Tally], units: dict | None = None) -> None:
    """issue 14: each pair's named metrics (and case score) compared case by case, like a pass rate."""
    from .metrics import compare_scores

    for comp in comparisons:
        ta, tb = tallies.get(comp["a"]), tallies.get(comp["b"])
        if ta is not None and tb is not None:
            comp.update(compare_scores((ta.metric_sums, ta.score_sums), (tb.metric_sums, tb.score_sums), units,
                                       (ta.errored, tb.errored) if computing_version() >= 13 else None))


def summarize(plan: dict, attempts, pairwise: dict | None = None, reviews: dict | None = None) -> dict:
    """The report's summary from a plan and its attempts: one block per variant, paired
    comparisons of every pair of variants, what was not measured, judge and review figures."""
    summarizer = Summarizer(plan, reviews)
    for attempt in attempts:
        summarizer.add(attempt)
    return summarizer.summary(pairwise)
