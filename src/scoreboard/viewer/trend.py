"""A suite's trend in the viewer: each run's own summary figures with their intervals, and the
paired test of each run against the previous run of the same variant (figures.paired), on the
cases both hold with the same input and the same grading."""

from __future__ import annotations


from ..store.db import Database
from ..store.queries import case_hashes
from ..store.suitewindow import suite_window
from ..store.rows import parse
from .figures import ALPHA, _stats_version, case_units, graded_tallies, paired, shared_units, trend_versions_note
from .trendwords import (case_set_change, case_set_words, graded_differently, graded_words, grading_keys,
                         grading_setup, metrics_of as _metrics, partial_words, setup_words)


def trend(db: Database, suite: str, limit: int = 60, before: str | None = None) -> dict:
    """A suite's runs over time: per variant, each run's pass rate with its interval, field
    accuracy, cost per case, named metrics; dQ per pair; and the paired test of each run
    against the previous run holding the same variant (a marker when p < ALPHA). A window of
    `limit` runs ending before the cursor `before` (the latest without it), with the count of the
    runs left out on either side and the cursors reaching them (`window`)."""
    runs, window = suite_window(db, suite, limit, before)
    older = runs.pop(0) if len(runs) > limit else None  # not drawn: the first point's previous run
    series: dict[str, list[dict]] = {}
    dq: dict[str, list[dict]] = {}
    previous: dict[str, str] = {f["name"]: older["key"] for f in older["figures"]} if older else {}
    cache = _RunCache(db)
    for r in [*([older] if older else []), *runs]:
        row = db.one("SELECT head FROM runs WHERE key = ?", (r["key"],))  # one head parsed at a time
        cache.setups[r["key"]] = grading_setup({"head": parse(row[0]) if row else None})
    for r in runs:
        summary = r.get("summary") or {}
        for fig in r["figures"]:
            name = fig["name"]
            block = (summary.get("variants") or {}).get(name) or {}
            point = {"key": r["key"], "run_id": r["run_id"], "started_at": r["started_at"],
                     "git_commit": r["git_commit"], "status": r["status"], "pass_rate": fig["pass_rate"],
                     "low": fig["ci_low"], "high": fig["ci_high"], "method": fig["ci_method"],
                     "field_accuracy": fig["field_accuracy"], "fa_low": fig["fa_low"], "fa_high": fig["fa_high"],
                     "cost_per_case": fig["cost_per_case"], "metrics": _metrics(block), "change": None,
                     "statistics_version": _stats_version(r), "not_run": fig.get("not_run"),
                     "partial": partial_words(r["status"], fig.get("not_run"))}
            if name in previous:
                point["change"] = run_change(cache, previous[name], r["key"], name)
            previous[name] = r["key"]
            series.setdefault(name, []).append(point)
        cache.keep(set(previous.values()))  # a run no later point compares with is let go: memory stays bounded
        for item in ((summary.get("judges") or {}).get("dq")) or ():
            ci = item.get("ci") or {}
            dq.setdefault(f"{item['a']} vs {item['b']}", []).append(
                {"key": r["key"], "run_id": r["run_id"], "started_at": r["started_at"], "dq": item.get("dq"),
                 "low": ci.get("low"), "high": ci.get("high")})
    versions = sorted({_stats_version(r) for r in runs}, key=lambda v: (v is None, v or 0))
    return {"suite": suite, "runs": len(runs), "window": window, "series": series, "dq": dq, "alpha": ALPHA,
            "statistics_versions": versions, "statistics_note": trend_versions_note(versions),
            "test": "two-sided exact sign test on per-unit outcomes against the previous run (cases matched by "
                    "id and input hash; a conversation's turns count once, as in the reports, each case outside any "
                    "as one unit); a marker where p < 0.05, each test on its own (no correction)"}


class _RunCache:
    """Per-case tallies, input hashes and conversations of the runs one trend reads, each read once."""

    def __init__(self, db: Database):
        self.db = db
        self.hashes: dict[str, dict] = {}
        self.tallies: dict[str, dict] = {}
        self.units: dict[str, dict] = {}
        self.grading: dict[str, dict] = {}
        self.setups: dict[str, tuple] = {}  # each run's graders version and judge (small, all kept)

    def keep(self, keys: set[str]) -> None:
        for table in (self.hashes, self.tallies, self.units, self.grading):
            for key in [k for k in table if k not in keys]:
                del table[key]

    def of(self, key: str) -> tuple[dict, dict]:
        if key not in self.hashes:
            self.hashes[key] = case_hashes(self.db, key)
            self.tallies[key] = graded_tallies(self.db, key)
            self.units[key] = case_units(self.db, key)
            self.grading[key] = grading_keys(self.db, key)
        return self.hashes[key], self.tallies[key]


def run_change(cache: _RunCache, key_prev: str, key: str, variant: str) -> dict:
    """The paired test of a run against the previous one, for one variant (B = this run)."""
    (ha, ta_all), (hb, tb_all) = cache.of(key_prev), cache.of(key)
    shared = {c for c in ha if c in hb and ha[c] == hb[c]}
    regraded = graded_differently(cache.db, (key_prev, key), (cache.grading[key_prev], cache.grading[key]), shared)
    shared -= regraded
    ta = {c: v for c, v in ta_all.get(variant, {}).items() if c in shared}
    tb = {c: v for c, v in tb_all.get(variant, {}).items() if c in shared}
    units = shared_units(cache.units[key_prev], shared)
    comp = paired(ta, tb, {}, {}, 0, ("previous", "this"), units)
    changed = case_set_change(ha, hb)
    if regraded:
        comp["flags"].insert(0, graded_words(len(regraded)))
    if setup_words(cache.setups.get(key_prev), cache.setups.get(key)):
        comp["flags"].insert(0, setup_words(cache.setups.get(key_prev), cache.setups.get(key)))
    if changed:
        comp["flags"].insert(0, case_set_words(changed))
    return {"previous": key_prev, "cases": comp["cases"], "unit": "conversation" if units else "case",
            "case_set_changed": changed, "graded_differently": len(regraded),
            "sign_test_p": comp["sign_test_p"],
            "mcnemar_p": comp["mcnemar"]["p"],
            "mean_difference": None if comp["mean_difference"] is None else -comp["mean_difference"],
            "significant": bool(comp["cases"]) and comp["sign_test_p"] < ALPHA,
            "direction": ("up" if comp["b_wins"] > comp["a_wins"] else "down" if comp["a_wins"] > comp["b_wins"]
                          else "none"),
            "flags": comp["flags"], "headline": comp["headline"]}

