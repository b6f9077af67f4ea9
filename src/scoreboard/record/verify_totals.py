"""verify, run-wide: the summary (through `stats.summarize`) and the gates recomputed from the
attempts, the request counts held to the recorded budget, and conversation chains (each turn's
recorded input binds the earlier turns' recorded replies). Each difference is named in the
verification's Findings (record/verification.py); record/verify.py runs these checks.
"""

from __future__ import annotations

from collections import defaultdict

from .chains import jpath, verify_conversation
from .diff import is_number
from .verification import Findings


def check_summary(v: Findings) -> dict | None:
    """The summary recomputed from the plan and attempts (None when it cannot be)."""
    from ..stats import summary as stats
    from ..stats.methods import STATS_VERSION

    recorded = v.report.get("summary")
    if not isinstance(recorded, dict):
        v.add("summary", "an object", type(recorded).__name__, "summary malformed", "structure")
        return None
    methods = recorded.get("methods")
    version = methods.get("version", 1) if isinstance(methods, dict) else 1 if methods is None else None
    if not isinstance(version, int) or isinstance(version, bool) or not 1 <= version <= STATS_VERSION:
        # no build wrote a version above its own: one above this build's hides every interval
        # from the check (it cannot be recomputed here), so it is not taken on its word
        v.add("summary.methods.version", f"a statistics version (1..{STATS_VERSION})",
              version if not isinstance(version, int) or abs(version) < 10 ** 15 else f"{len(str(version))} digits",
              "unknown statistics version" + (f" (newer than this build's, {STATS_VERSION}: a newer scoreboard "
                                              "verifies it)" if isinstance(version, int) and version > STATS_VERSION
                                              else ""), "summary")
    try:
        summary = stats.summarize(v.report["plan"], v.report["attempts"], v.report.get("pairwise"),
                                  reviews=v.report.get("reviews"))
    except Exception as exc:  # a malformed attempt must not crash verify; name it instead
        v.add("summary", "a recomputable summary", None,
              f"cannot recompute the summary: {type(exc).__name__}: {exc}", "summary")
        return None
    if isinstance(version, int) and OLDEST_CHECKED <= version < summary["methods"]["version"]:
        while summary["methods"]["version"] > version:  # what that version computes, checked in full
            summary = _as_previous_version(summary, v.report)
    if version != summary["methods"]["version"]:
        # Computed with other interval methods than this build's: recomputing would call
        # every interval a mismatch. Say so instead; what no method changes (each variant's
        # counts and pass rate) is still checked, so a stated version hides no tampering.
        v.skipped["summary"] = {"grader": None, "gate": None, "grades": 0, "first": "summary",
                                "why": f"summary computed with statistics version {version}; this build "
                                       f"computes version {summary['methods']['version']} for it (its intervals "
                                       "and comparisons are not recomputed; "
                                       "each variant's counts and pass rate are)"}
        v.checked["summary"] += 1
        _counts(v, summary, recorded)
        return recorded
    v.checked["summary"] += 1
    v.diff(_as_recorded_notes(summary, recorded), recorded, "summary", "summary differs from the recomputed one",
           "summary")
    return summary


#: the oldest statistics version whose summaries are still checked in full: each later version
#: changed figures that can be put back as the earlier one computed them (`_as_previous_version`)
OLDEST_CHECKED = 7


def _as_previous_version(summary: dict, report: dict | None = None) -> dict:
    """A summary of statistics version N as version N - 1 computed it. Version 13 only records the
    cases a score or metric comparison left out as errored (`errored_left_out`). Version 12 changed
    only the detectable difference solved on the noncentral t (its power computed more exactly), recomputed
    from the `report` under version 11's rule, as version 10 is below. Version 11 changed only the
    words of an unknown cost (recomputed as version 10 said them, as below). Version 10 changed only the
    pass rate's effective cases where the rarer outcome could all have come from one case: the summary
    is computed again from the `report`'s plan and attempts under version 9's rule (computed_as). Version 9 changed only the
    detectable difference of a score or named metric compared on pass/fail values of one attempt a
    side (exact, as the pass rate's; version 8 solved it on the noncentral t); version 8 only the
    p-values of a comparison of no common case (null; version 7 wrote 1.0)."""
    import copy

    from ..stats.methods import computed_as, detectable_difference

    version = summary["methods"]["version"]
    if version >= 10:  # 17: unassessed out of totals; 16: differs_in of rescored; 15: derived notes; 14: at_least left_out; 13: errored_left_out; 12: noncentral t power; 11: unknown cost words; 10: above
        from ..stats import summary as stats

        if report is None:
            raise ValueError(f"a version-{version} summary is put back as version {version - 1} computed it from its report")
        with computed_as(version - 1):
            out = stats.summarize(report["plan"], report["attempts"], report.get("pairwise"),
                                  reviews=report.get("reviews"))
        out["methods"]["version"] = version - 1
        return out
    out = copy.deepcopy(summary)
    out["methods"]["version"] = version - 1
    for comp in out.get("comparisons") or ():
        if version == 9:
            blocks = [comp.get("score")] + list((comp.get("metrics") or {}).values())
            for block in blocks:
                fig = (block or {}).get("detectable_difference")
                if isinstance(fig, dict) and "power_method" in fig:
                    for key in ("discordance", "power_method"):
                        fig.pop(key, None)
                    # version 8 read the spread as assumed when the differences were all equal
                    if fig["cases"] in (block.get("a_wins"), block.get("b_wins"), block.get("ties")):
                        fig["sd_from"] = "assumption"
                    with computed_as(version - 1):  # on the noncentral t as version 8 solved it
                        fig["value"] = detectable_difference(fig["difference_sd"], fig["cases"], fig["alpha"],
                                                             fig["power"])
        elif version == 8 and comp.get("cases") == 0:
            comp["sign_test_p"] = 1.0
            if isinstance(comp.get("mcnemar"), dict):
                comp["mcnemar"]["p"] = 1.0
    return out


def _as_recorded_notes(summary: dict, recorded: dict) -> dict:
    """The recomputed summary without the words on an undefined derived metric (why it has no
    value) where the report has none: reports written before those words were added verify as
    they did; the value, still null, is compared."""
    import copy

    out = summary
    for name, block in (summary.get("variants") or {}).items():
        for metric, fig in ((block or {}).get("derived_metrics") or {}).items():
            theirs = ((((recorded.get("variants") or {}).get(name) or {}).get("derived_metrics") or {}).get(metric))
            if isinstance(fig, dict) and str(fig.get("note", "")).startswith("undefined:") \
                    and isinstance(theirs, dict) and "note" not in theirs:
                if out is summary:
                    out = copy.deepcopy(summary)
                del out["variants"][name]["derived_metrics"][metric]["note"]
    return out


#: the figures of a variant's summary that every statistics version computes alike
COUNTS = ("attempts", "cases", "passed", "failed", "errors", "unassessed", "not_run", "interrupted", "pass_rate")


def _counts(v: Findings, summary: dict, recorded: dict) -> None:
    """The method-free part of a summary of another statistics version: the variants it covers,
    and each one's counts and pass rate."""
    want, found = summary.get("variants") or {}, recorded.get("variants")
    if not isinstance(found, dict):
        v.add("summary.variants", sorted(want), type(found).__name__, "summary lists no variants", "summary")
        return
    v.diff(sorted(want), sorted(found), "summary.variants", "summary covers other variants than the plan",
           "summary")
    for name, figures in want.items():
        got = found.get(name)
        if isinstance(got, dict):  # an older summary may lack a later count; these three it has
            keys = [k for k in COUNTS if k in got or k in ("attempts", "passed", "pass_rate")]
            if figures.get("errors_not_graded") and "errors_not_graded" not in got:
                # before version 7 those errors were failures of the rate and its cases
                keys = [k for k in keys if k not in ("cases", "pass_rate")]
            v.diff({k: figures.get(k) for k in keys}, {k: got.get(k) for k in keys},
                   jpath("summary.variants", name), "summary differs from the recomputed one", "summary")


def check_gates(v: Findings, summary: dict | None) -> None:
    """Each recorded gate against the one recomputed from the summary."""
    from ..stats.gates import (
        all_pass_gate,
        earlier_gate_words,
        fail_under_gates,
        failing_cases,
        recomputed_metric_gate,
    )

    gates = v.report.get("gates") or []
    if gates and (v.report.get("run") or {}).get("dry_run") is True:
        # a dry run's answers are the mock's: none of its gates is evaluated
        v.add("gates", [], f"{len(gates)} gate(s)", "a dry run (run.dry_run) evaluates no gate", "gates")
    for i, g in enumerate(gates):
        path = jpath("gates", i)
        kind = g.get("gate") if isinstance(g, dict) else None
        if summary is None or kind not in ("fail-under", "all-pass", "fail-under-metric", "min-dq", "min-rubric"):
            v.skipped.setdefault(f"gate:{kind}", {"grader": None, "gate": kind, "grades": 0, "first": path,
                                                  "why": "gate cannot be recomputed from the report"})
            continue
        if kind == "fail-under":
            want = fail_under_gates(summary, {g.get("variant"): g.get("threshold")}, [g.get("variant")])
            want = want[0] if want else None
        elif kind == "fail-under-metric":
            want = recomputed_metric_gate(summary, g)
        elif kind in ("min-dq", "min-rubric"):  # visual work (issue 17)
            want = _visual_gate(summary, g)
        else:
            want = all_pass_gate(*failing_cases(v.report["attempts"]))
        if want is not None and isinstance(g, dict) and g.get("description") in earlier_gate_words(want["description"]):
            want["description"] = g["description"]  # an earlier build's words for the same figures
        if want is not None:
            from ..stats.gates import refuse_unchecked

            want = refuse_unchecked([want], v.report.get("instrument"))[0]
        v.checked["gates"] += 1
        v.diff(want, g, path, "gate differs from the recomputed gate", "gates")


def _visual_gate(summary: dict, g: dict) -> dict | None:
    """A min-dq or min-rubric gate recomputed from the summary (None when it cannot be)."""
    from ..stats.gates import dq_gates, rubric_gates

    try:
        if g.get("gate") == "min-dq":
            pair = str(g.get("metric") or "")[3:]
            a, _, b = pair.partition("/")
            return dq_gates(summary, {pair: g.get("threshold")}, [a, b])[0]
        return rubric_gates(summary, {g.get("variant"): g.get("threshold")}, [g.get("variant")])[0]
    except Exception:  # noqa: BLE001 - a tampered gate is named as a mismatch by the diff
        return None


def check_requests(v: Findings) -> None:
    """Requests sent, ended and spent within the budget the plan recorded."""
    req = v.report.get("requests")
    if not isinstance(req, dict):
        return
    sent = req.get("sent")
    # The plan's budget is what the run promised before it spent anything: the spend is held
    # to it, and the ledger's own copy must say the same (a raised copy hides nothing).
    planned = (v.report.get("plan") or {}).get("budget")
    budget = planned if isinstance(planned, dict) else (req.get("budget") or {})
    if isinstance(planned, dict) and isinstance(req.get("budget"), dict):
        for key in ("max_requests", "max_cost_usd", "max_tokens"):
            if planned.get(key) != req["budget"].get(key):
                v.add(f"requests.budget.{key}", planned.get(key), req["budget"].get(key),
                      "the budget the requests were held to differs from plan.budget", "requests")
    limit = budget.get("max_requests") if isinstance(budget, dict) else None
    v.checked["requests"] += 1
    if is_number(sent) and is_number(limit) and sent > limit:
        v.add("requests.sent", f"<= {limit}", sent, "more requests sent than the budget allows", "requests")
    for spent_key, limit_key, what in (("tokens_spent", "max_tokens", "tokens"),
                                       ("cost_spent_usd", "max_cost_usd", "cost")):
        # Reservations keep the spend within budget unless a provider reported more usage
        # than its request allowed: the record then shows a broken budget.
        spent, cap = req.get(spent_key), budget.get(limit_key) if isinstance(budget, dict) else None
        if spent is None and spent_key == "cost_spent_usd":
            spent = req.get("cost_known_usd")  # the known part already above the cap breaks it
        if is_number(spent) and is_number(cap) and spent > cap + 1e-9:
            v.add(f"requests.{spent_key}", f"<= {cap}", spent,
                  f"more {what} spent than the budget allows (provider reported more usage than "
                  "the request allowed)", "requests")
    ended = [req.get(k) for k in ("completed", "failed")]
    if is_number(sent) and all(is_number(x) for x in ended) and sum(ended) > sent:
        v.add("requests", f"completed + failed <= sent ({sent})", sum(ended),
              "more requests ended than were sent", "requests")
    _check_never_sent(v, req, sent)
    _check_ledger(v, req, sent)
    _check_usage(v, req, sent)


def _judge_in_ledger(plan: dict) -> bool:
    """Whether the plan's judge sends its requests through the run's ledger: a judge calling a
    remote model does; a python or command judge is a local call its usage counts as a request
    the ledger never saw."""
    from ..subjects.registry import parse_subject_spec, subject_class

    spec = plan.get("judge") if isinstance(plan, dict) else None
    if spec is None:
        return True
    try:
        return bool(subject_class(parse_subject_spec(spec)["type"]).remote)
    except Exception:  # noqa: BLE001 - a judge spec this build cannot read: its usage counts
        return True


def _usages(report: dict):
    """(where, usage) of each request-bearing record: an attempt's measurements and each of its
    judge grades' usage (a remote judge's requests go through the same ledger)."""
    judged = _judge_in_ledger(report.get("plan"))
    for i, a in enumerate(report["attempts"]):
        if isinstance(a.get("measurements"), dict):
            yield jpath("attempts", i, "measurements"), a["measurements"]
        for j, g in enumerate(a.get("grades") or [] if judged else []):
            usage = ((g.get("judge") if isinstance(g, dict) else None) or {})
            usage = usage.get("usage") if isinstance(usage, dict) else None
            if isinstance(usage, dict):
                yield jpath("attempts", i, "grades", j, "judge", "usage"), usage


def _check_usage(v: Findings, req: dict, sent) -> None:
    """The ledger holds at least what the attempts and their judges measured: their requests,
    and the tokens and cost of those that sent any (a cached or recorded answer sent none).
    A rescored or imported report's attempts were made by its source's run: the source's
    ledger (run.rescore/imported.source_requests) counts with this one's."""
    run = v.report.get("run") or {}
    origin = next((run[k] for k in ("rescore", "imported") if isinstance(run.get(k), dict)), None)
    if origin is not None:
        source = origin.get("source_requests")
        if not isinstance(source, dict):
            return  # a source whose ledger was not kept: nothing to hold its attempts to
        req = {k: _plus(req.get(k), source.get(k)) for k in ("tokens_spent", "cost_known_usd")}
        sent = _plus(sent, source.get("sent"))
    requests = tokens = cost = 0
    for _, usage in _usages(v.report):
        n = usage.get("requests")
        if not is_number(n):
            continue
        requests += n
        if n > 0:
            tokens += sum(usage[k] for k in ("input_tokens", "output_tokens") if is_number(usage.get(k)))
            cost += usage["cost_usd"] if is_number(usage.get("cost_usd")) else 0
    if is_number(sent) and requests > sent:
        v.add("requests.sent", f">= {requests} (attempts' and judges' measured requests)", sent,
              "attempts measured more requests than the run sent", "requests")
    spent = req.get("tokens_spent")
    if is_number(spent) and tokens > spent:
        v.add("requests.tokens_spent", f">= {tokens} (attempts' and judges' measured tokens)", spent,
              "the ledger spent fewer tokens than the attempts measured", "requests")
    known = req.get("cost_known_usd")
    if is_number(known) and cost > known + 1e-9 * max(1.0, cost):
        v.add("requests.cost_known_usd", f">= {round(cost, 10)} (attempts' and judges' measured cost)", known,
              "the ledger spent less than the attempts measured", "requests")


def _plus(a, b):
    """a + b when both are numbers, else None (unknown)."""
    return a + b if is_number(a) and is_number(b) else None


def _check_ledger(v: Findings, req: dict, sent) -> None:
    """The ledger's own totals agree: requests by role add up to those sent; in a completed run
    every request sent ended (completed, failed) or is pending (possibly billed, or in a batch);
    each pending request is listed as possibly billed; the cost spent is the known cost unless
    some is unknown."""
    if not is_number(sent):
        return
    roles = req.get("by_role")
    if isinstance(roles, dict) and all(is_number(n) for n in roles.values()) and sum(roles.values()) != sent:
        v.add("requests.by_role", f"requests adding up to sent ({sent})", sum(roles.values()),
              "requests by role do not add up to the requests sent", "requests")
    parts = [req.get(k) for k in ("completed", "failed")] + [req.get(k, 0) for k in ("pending_unresolved",
                                                                                   "batch_pending")]
    if (v.report.get("run") or {}).get("status") == "completed" and all(is_number(x) for x in parts) \
            and sum(parts) != sent:
        v.add("requests.completed", f"completed + failed + pending_unresolved = sent ({sent})", sum(parts),
              "a request of a completed run neither ended nor is listed as possibly billed", "requests")
    billed, unresolved = req.get("possibly_billed"), req.get("pending_unresolved")
    if isinstance(billed, list) and is_number(unresolved) and len(billed) < unresolved:
        # (a cancelled batch's requests are listed too: they may still be billed)
        v.add("requests.possibly_billed", f">= {unresolved} requests (pending_unresolved)", len(billed),
              "a request left pending is not listed as possibly billed", "requests")
    spent, known, unknown = req.get("cost_spent_usd"), req.get("cost_known_usd"), req.get("cost_unknown_requests")
    if is_number(spent) and is_number(known) and abs(spent - known) > 1e-9 * max(1.0, abs(known)):
        v.add("requests.cost_spent_usd", known, spent, "cost spent differs from the known cost with none unknown",
              "requests")
    if is_number(spent) and is_number(unknown) and unknown > 0:
        v.add("requests.cost_spent_usd", None, spent, "a cost is given while some requests' cost is unknown",
              "requests")
    if spent is None and "cost_spent_usd" in req and unknown == 0 and not req.get("batch_pending"):
        v.add("requests.cost_spent_usd", known, None, "cost unknown while every request's cost is known",
              "requests")


def check_conversations(v: Findings) -> None:
    """Every conversation's chain of turns (record/chains.py)."""
    by_case: dict[str, list[tuple[int, dict]]] = defaultdict(list)
    for i, a in enumerate(v.report["attempts"]):
        by_case[a["case_id"]].append((i, a))
    turns: dict[str, list[dict]] = defaultdict(list)
    for c in v.report["plan"]["cases"]:
        if c.get("conversation") is not None and isinstance(c.get("input"), dict):
            turns[c["conversation"]].append(c)
    for conv_id, cases in turns.items():
        cases.sort(key=lambda c: c.get("turn_index", 0))
        records = [r for c in cases for r in by_case.get(c["id"], [])]
        if any("chain_input_hash" in a or "turn" in a for _, a in records):
            v.checked["conversations"] += 1
        completed = (v.report.get("run") or {}).get("status") == "completed"
        v.mismatches.extend(verify_conversation(cases, records, completed=completed))


def _check_never_sent(v: Findings, req: dict, sent) -> None:
    """Tries that never left (failed before a byte was written) are apart from `sent`: they add
    up, and no usage is claimed for them (no more requests with usage than were sent; with none
    sent, nothing spent)."""
    never, tries, reasons = req.get("never_sent"), req.get("tries"), req.get("never_sent_reasons")
    if not is_number(sent):
        return
    if is_number(never) and is_number(tries) and tries != sent + never:
        v.add("requests.tries", f"sent + never_sent ({sent + never})", tries,
              "tries are not the requests sent plus those never sent", "requests")
    if is_number(never) and isinstance(reasons, dict) and all(is_number(n) for n in reasons.values()) \
            and sum(reasons.values()) != never:
        v.add("requests.never_sent_reasons", never, sum(reasons.values()),
              "the reasons do not add up to the tries never sent", "requests")
    for key in ("unknown_usage", "tokens_missing_requests", "cost_unknown_requests"):
        if is_number(req.get(key)) and req[key] > sent:
            v.add(f"requests.{key}", f"<= {sent} (requests sent)", req[key],
                  "more requests with usage than were sent (a try that never left spent nothing)", "requests")
    if sent == 0:
        for key in ("tokens_spent", "cost_known_usd"):
            if is_number(req.get(key)) and req[key] != 0:
                v.add(f"requests.{key}", 0, req[key],
                      "usage spent with no request sent (a try that never left spent nothing)", "requests")
