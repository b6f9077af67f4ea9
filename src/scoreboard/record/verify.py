"""verify: recompute from a report alone everything that can be recomputed, and name each difference.

Checked: every plan case's input hash and the plan's fixture hash; each attempt's input and
output hashes; every grade a mechanical grader gives (model graders are listed as not
recomputable offline, never as mismatches); each attempt's status; the summary (through
`stats.summarize`); the gates; the lifecycle (no duplicate, every attempt planned, canonical
order, a completed report complete); request counts within the recorded budget; conversation
chains: each turn's recorded input binds the earlier turns' recorded replies (`verify_conversation`).

Matching hashes prove internal consistency only: they do not authenticate a provider or a run.
"""

from __future__ import annotations

import asyncio
from collections import Counter, defaultdict
from typing import Any

from ..cases.case import Case
from ..graders.grade import GradeContext
from ..graders.registry import JUDGE_GRADERS
from ..graders.task import delivery_rule
from ..hashing import canonical_json, output_text_hash, sha256_json
from ..subjects.values import Output
from .chains import (
    UNFINISHED,
    cases_from_plan,
    jpath,
    measurements_of,
    mismatch,
    verify_conversation,
)
from .diff import TOLERANCE, deep_diff, is_number  # noqa: F401  (re-exported)
from .verification import NOTE, Verification, describe_value, render_text  # noqa: F401  (re-exported)

FINISHED = frozenset({"passed", "failed", "error", "unassessed", "not-graded"})
RUN_STATUSES = ("completed", "stopped", "running", "waiting")
#: schema errors listed one by one before the rest are left to the checks below
SCHEMA_ERRORS = 5

#: what each check covers (the `check` key of a mismatch)
CHECKS = ("structure", "plan", "hash", "grade", "status", "summary", "gates", "lifecycle",
          "requests", "conversation", "screenshot")


def attempt_key(record: dict) -> tuple:
    """(case_id, variant, run): one attempt's identity in a report."""
    return (record.get("case_id"), record.get("variant"), record.get("run"))


def grader_name(spec: Any) -> str | None:
    from ..errors import ScoreboardError
    from ..graders.registry import split_spec

    try:
        return split_spec(spec)[0]
    except ScoreboardError:
        return None


# --------------------------------------------------------------------------------------------
# --------------------------------------------------------------------------------------------
# the checks


class _Verifier:
    def __init__(self, report: dict):
        self.report = report
        self.mismatches: list[dict] = []
        self.schema_errors: list[dict] = []
        self.skipped: dict[str, dict] = {}
        self.checked: Counter = Counter()
        self._graders: dict[str, Any] = {}
        self.cases: dict[str, Case] = {}

    def add(self, path: str, expected: Any, found: Any, what: str, check: str) -> None:
        self.mismatches.append(mismatch(path, expected, found, what, check))

    def diff(self, expected: Any, found: Any, path: str, what: str, check: str) -> None:
        for p, e, f, kind in deep_diff(expected, found, path):
            note = {"missing": " (missing from the report)", "unexpected": " (not recomputed)",
                    "length": " (length)"}.get(kind, "")
            self.add(p, e, f, what + note, check)

    def skip(self, name: str, path: str, why: str) -> None:
        entry = self.skipped.setdefault(name, {"grader": name, "grades": 0, "first": path, "why": why})
        entry["grades"] += 1

    # ---- structure
    def schema(self) -> None:
        """The report against its typed schema (scoreboard schema): each field that does not
        fit is a structure mismatch named by its JSON path (the first few are listed)."""
        from pydantic import ValidationError

        from ..validation import error_list
        from .io import json_path
        from .schema import Report

        try:
            Report.model_validate(self.report)
        except ValidationError as exc:
            for loc, message, found in error_list(exc)[:SCHEMA_ERRORS]:
                shown = found if isinstance(found, (str, int, float, bool, type(None))) else type(found).__name__
                self.schema_errors.append(mismatch(json_path(loc) or "report", message, shown,
                                                   "does not fit the report schema", "schema"))

    def structure(self) -> bool:
        r = self.report
        plan, attempts, run = r.get("plan"), r.get("attempts"), r.get("run")
        ok = True
        if not isinstance(run, dict):
            self.add("run", "an object", type(run).__name__, "run block missing", "structure")
            ok = False
        if not isinstance(plan, dict) or not isinstance(plan.get("cases"), list) \
                or not isinstance(plan.get("variants"), list):
            self.add("plan", "an object with cases and variants", None, "plan is malformed", "structure")
            return False
        for i, c in enumerate(plan["cases"]):
            if not isinstance(c, dict) or not isinstance(c.get("id"), str):
                self.add(jpath("plan.cases", i), "an object with a string id", c, "plan case malformed", "structure")
                ok = False
        for i, v in enumerate(plan["variants"]):
            if not isinstance(v, dict) or not isinstance(v.get("name"), str):
                self.add(jpath("plan.variants", i), "an object with a name", v, "plan variant malformed", "structure")
                ok = False
        runs = plan.get("runs")
        if not isinstance(runs, int) or isinstance(runs, bool) or runs < 1:
            self.add("plan.runs", "an integer >= 1", runs, "plan runs malformed", "structure")
            ok = False
        if not isinstance(attempts, list):
            self.add("attempts", "a list", type(attempts).__name__, "attempts malformed", "structure")
            return False
        for i, a in enumerate(attempts):
            if not isinstance(a, dict) or not {"case_id", "variant", "run", "status"} <= set(a):
                self.add(jpath("attempts", i), "case_id, variant, run, status", a, "attempt malformed", "structure")
                ok = False
        return ok

    # ---- plan
    def plan(self) -> None:
        from ..suite.suite import fixture_hash
        from .io import is_synthetic

        plan = self.report["plan"]
        seen: set[str] = set()
        for i, c in enumerate(plan["cases"]):
            if c["id"] in seen:
                self.add(jpath("plan.cases", i, "id"), "a unique case id", c["id"], "duplicate case id", "plan")
            seen.add(c["id"])
            # per-variant rendered prompts (issue 14): the case's hash covers every variant's input
            want = sha256_json(c["inputs"]) if isinstance(c.get("inputs"), dict) else sha256_json(c.get("input"))
            self.checked["input_hashes"] += 1
            if c.get("input_hash") != want:
                self.add(jpath("plan.cases", i, "input_hash"), want, c.get("input_hash"),
                         "input hash does not match the case input", "hash")
        names = [v["name"] for v in plan["variants"]]
        for i, name in enumerate(names):
            if name in names[:i]:
                self.add(jpath("plan.variants", i, "name"), "a unique name", name, "duplicate variant", "plan")
        want = fixture_hash(plan["cases"])
        self.checked["fixture_hash"] += 1
        if plan.get("fixture_hash") != want:
            self.add("plan.fixture_hash", want, plan.get("fixture_hash"),
                     "fixture hash does not match the planned cases", "hash")
        run = self.report.get("run") or {}
        if "synthetic" in run and run["synthetic"] != is_synthetic(plan):
            self.add("run.synthetic", is_synthetic(plan), run["synthetic"],
                     "synthetic flag does not match the plan's cases", "plan")

    # ---- attempts: lifecycle, hashes, grades, status
    def attempts(self) -> None:
        plan, attempts = self.report["plan"], self.report["attempts"]
        status = (self.report.get("run") or {}).get("status")
        self.cases = {c.id: c for c in cases_from_plan(plan["cases"])}
        cases = {c["id"]: c for c in plan["cases"]}
        case_pos = {c["id"]: i for i, c in enumerate(plan["cases"])}
        var_pos = {v["name"]: i for i, v in enumerate(plan["variants"])}
        imported = {v["name"] for v in plan["variants"] if v.get("imported")}
        runs = plan["runs"]
        if status not in RUN_STATUSES:
            self.add("run.status", "|".join(RUN_STATUSES), status, "unknown run status", "lifecycle")
        seen: dict[tuple, int] = {}
        previous_key = None
        for i, a in enumerate(attempts):
            key = attempt_key(a)
            if key in seen:
                self.add(jpath("attempts", i), None, list(key),
                         f"duplicate attempt (also attempts[{seen[key]}])", "lifecycle")
            else:
                seen[key] = i
            planned = True
            if a["case_id"] not in cases:
                self.add(jpath("attempts", i, "case_id"), sorted(cases), a["case_id"], "case not in the plan", "lifecycle")
                planned = False
            if a["variant"] not in var_pos:
                self.add(jpath("attempts", i, "variant"), list(var_pos), a["variant"], "variant not in the plan",
                         "lifecycle")
                planned = False
            if not isinstance(a["run"], int) or isinstance(a["run"], bool) or not 0 <= a["run"] < runs:
                self.add(jpath("attempts", i, "run"), f"0..{runs - 1}", a["run"], "run index outside the plan",
                         "lifecycle")
                planned = False
            if a["status"] not in FINISHED | UNFINISHED:
                self.add(jpath("attempts", i, "status"), sorted(FINISHED | UNFINISHED), a["status"],
                         "unknown attempt status", "lifecycle")
            if not planned:
                continue
            order = (case_pos[a["case_id"]], var_pos[a["variant"]], a["run"])
            if previous_key is not None and order < previous_key:
                self.add(jpath("attempts", i), "case order of the plan, then variant, then run",
                         [a["case_id"], a["variant"], a["run"]], "attempt out of canonical order", "lifecycle")
            previous_key = order
            self.attempt(i, a, cases[a["case_id"]], status)
        waiting = sum(1 for a in attempts if a.get("status") == "waiting")
        if status == "waiting" and not waiting:
            self.add("run.status", "completed or stopped", status, "a waiting run with no attempt waiting on a batch",
                     "lifecycle")
        if status in ("completed", "stopped", "waiting"):
            present = set(seen)
            for c in plan["cases"]:
                for v in plan["variants"]:
                    if v["name"] in imported:
                        continue  # an import supplies what it has: absent attempts were never planned
                    for r in range(runs):
                        if (c["id"], v["name"], r) not in present:
                            self.add("attempts", {"case_id": c["id"], "variant": v["name"], "run": r}, None,
                                     f"planned attempt missing from a {status} report", "lifecycle")

    def attempt(self, i: int, a: dict, plan_case: dict, run_status: str | None) -> None:
        self.checked["attempts"] += 1
        p = lambda *parts: jpath("attempts", i, *parts)
        inputs = plan_case.get("inputs")
        want_input = sha256_json(inputs[a["variant"]]) if isinstance(inputs, dict) and a["variant"] in inputs \
            else plan_case.get("input_hash")
        if a.get("input_hash") != want_input:
            self.add(p("input_hash"), want_input, a.get("input_hash"),
                     "input hash differs from the input its variant was sent", "hash")
        output = a.get("output")
        want_hash = sha256_json(output) if output is not None else None
        if a.get("output_hash") != want_hash:
            self.add(p("output_hash"), want_hash, a.get("output_hash"),
                     "output hash does not match the recorded output", "hash")
        if "output_text_hash" in a and a["output_text_hash"] != output_text_hash(output):
            self.add(p("output_text_hash"), output_text_hash(output), a["output_text_hash"],
                     "output text hash does not match the recorded output's text", "hash")
        grades = a.get("grades") or []
        st = a["status"]
        if st in UNFINISHED:
            if output is not None or grades:
                self.add(p("status"), "finished (it has an output or grades)", st,
                         "attempt both completed and not run", "lifecycle")
            # A conversation's turns after a failed turn are not run, even in a completed run;
            # verify_conversation checks that an earlier turn did fail.
            if run_status == "completed" and not (st == "not-run" and plan_case.get("conversation") is not None):
                self.add(p("status"), "a finished attempt", st, f"{st} attempt in a completed report", "lifecycle")
            if st == "pending" and run_status != "running":
                self.add(p("status"), "a finished attempt", st, "pending attempt in a finished report", "lifecycle")
            if st == "waiting" and run_status not in ("waiting", "running"):
                self.add(p("status"), "a finished attempt", st, f"attempt waiting on a batch in a {run_status} report",
                         "lifecycle")
            if st == "waiting" and not ((a.get("subject_info") or {}).get("batch") or {}).get("submission"):
                self.add(p("subject_info"), "the batch it waits on", a.get("subject_info"),
                         "waiting attempt names no batch", "lifecycle")
            return
        if output is None:
            if st != "error":
                self.add(p("status"), "error", st, "finished attempt without an output must be an error", "status")
            if not a.get("error"):
                self.add(p("error"), "the recorded error", a.get("error"), "attempt without output names no error",
                         "status")
            if grades:
                self.add(p("grades"), [], grades, "grades without an output", "grade")
            return
        recomputed_error, complete = self.grades(i, a, plan_case)
        want_error = recomputed_error if complete else a.get("error")
        result = self.outcome(i, plan_case, [g for g in grades if isinstance(g, dict)], want_error)
        if result is None:
            return
        want_error = result.get("error", want_error)
        if complete and a.get("error") != want_error:
            self.add(p("error"), want_error, a.get("error"), "error differs from the recomputed grading", "status")
        want_status = result["status"]
        if st != want_status:
            self.add(p("status"), want_status, st, "status does not follow from the grades and error", "status")
        self.scored(i, a, plan_case, result)

    def outcome(self, i: int, plan_case: dict, grades: list[dict], error: str | None) -> dict | None:
        """issue 14: the attempt's outcome from its grades, threshold and scoring function (None
        when the scoring function cannot run here: listed as not recomputable)."""
        from ..errors import ScoreboardError
        from ..graders.scoring import load_scorer, score_attempt

        scorer = None
        if plan_case.get("scoring") is not None:
            try:
                scorer = load_scorer(plan_case["scoring"])
            except ScoreboardError as exc:
                self.skip("scoring", jpath("attempts", i, "status"), f"scoring function not available: {exc}")
                return None
        coro = score_attempt(grades, error, plan_case.get("threshold"), scorer)
        try:
            return _run(coro)
        except _NeedsLoop:
            pass
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(score_attempt(grades, error, plan_case.get("threshold"), scorer))
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(1) as pool:
            return pool.submit(asyncio.run, score_attempt(grades, error, plan_case.get("threshold"), scorer)).result()

    def scored(self, i: int, a: dict, plan_case: dict, result: dict) -> None:
        """The attempt's recorded score and metrics against the recomputed ones."""
        from ..graders.scoring import record_fields, scored_case

        case = self.cases[plan_case["id"]]
        grades = [g for g in a.get("grades") or [] if isinstance(g, dict)]
        want = record_fields(result, scored_case(case, grades)) if (scored_case(case, grades) or result["metrics"]) \
            else {}
        for key in ("score", "metrics", "scoring_reason"):
            if want.get(key) != a.get(key) and not (key == "score" and isinstance(want.get(key), float)
                                                     and isinstance(a.get(key), (int, float))
                                                     and abs(want[key] - a[key]) <= 1e-9):
                self.add(jpath("attempts", i, key), want.get(key), a.get(key),
                         f"{key} differs from the one recomputed from the grades", "status")

    def grades(self, i: int, a: dict, plan_case: dict) -> tuple[str | None, bool]:
        """Recompute the attempt's grades; returns (grader error, every grade recomputed)."""
        specs = plan_case.get("graders") or []
        recorded = a.get("grades") or []
        if len(recorded) != len(specs):
            self.add(jpath("attempts", i, "grades"), f"{len(specs)} grades", f"{len(recorded)} grades",
                     "one grade per planned grader", "grade")
            return None, False
        case = self.cases[plan_case["id"]]
        variant = next((v for v in self.report["plan"]["variants"] if v.get("name") == a.get("variant")), {})
        tools = (variant.get("subject") or {}).get("tools") if isinstance(variant.get("subject"), dict) else None
        task = _task_record(a, plan_case)
        ctx = GradeContext(case, Output.from_dict(a["output"]), measurements_of(a), None, a["run"], None, tools,
                           task=task, render=_recorded_page(a))
        error: str | None = None
        complete = True
        for j, spec in enumerate(specs):
            path = jpath("attempts", i, "grades", j)
            grader, why = self.grader(spec)
            if grader is None:
                self.skip(grader_name(spec) or canonical_json(spec), path, why)
                complete = False
                continue
            (grade,), err = _grade(grader, ctx)
            (grade,) = delivery_rule([grade], task)  # as the runner applies it (agent tasks)
            error = error or err
            self.checked["grades"] += 1
            self.diff(grade.to_dict(), recorded[j], path, "grade differs from the recomputed grade", "grade")
        return error, complete

    def grader(self, spec: Any) -> tuple[Any, str]:
        from ..errors import ScoreboardError
        from ..graders.registry import build_grader

        name = grader_name(spec)
        if name in JUDGE_GRADERS:
            return None, "needs a model: not recomputable offline"
        key = canonical_json(spec)
        if key not in self._graders:
            try:
                grader = build_grader(spec)
                self._graders[key] = (grader, "")
                if getattr(grader, "needs_judge", False) or getattr(grader, "remote", False):
                    self._graders[key] = (None, "needs a model: not recomputable offline")
            except ScoreboardError as exc:
                self._graders[key] = (None, f"grader not available here: {exc}")
        return self._graders[key]

    # ---- summary and gates
    def summary(self) -> dict | None:
        from ..stats import summary as stats
        from ..stats.methods import STATS_VERSION

        recorded = self.report.get("summary")
        version = ((recorded or {}).get("methods") or {}).get("version", 1) if isinstance(recorded, dict) else None
        if version != STATS_VERSION:
            # Computed with other interval methods than this build's: recomputing would call
            # every interval a mismatch. Say so instead; the rest is still checked.
            self.skipped["summary"] = {"grader": None, "gate": None, "grades": 0, "first": "summary",
                                       "why": f"summary computed with statistics version {version}; this build "
                                              f"computes version {STATS_VERSION}"}
            return recorded if isinstance(recorded, dict) else None
        try:
            summary = stats.summarize(self.report["plan"], self.report["attempts"], self.report.get("pairwise"),
                                      reviews=self.report.get("reviews"))
        except Exception as exc:  # a malformed attempt must not crash verify; name it instead
            self.add("summary", "a recomputable summary", None,
                     f"cannot recompute the summary: {type(exc).__name__}: {exc}", "summary")
            return None
        self.checked["summary"] += 1
        self.diff(summary, self.report.get("summary"), "summary", "summary differs from the recomputed one",
                  "summary")
        return summary

    def gates(self, summary: dict | None) -> None:
        from ..stats.gates import (
            all_pass_gate,
            fail_under_gates,
            failing_cases,
            metric_gates,
        )

        gates = self.report.get("gates") or []
        for i, g in enumerate(gates):
            path = jpath("gates", i)
            kind = g.get("gate") if isinstance(g, dict) else None
            if summary is None or kind not in ("fail-under", "all-pass", "fail-under-metric", "min-dq", "min-rubric"):
                self.skipped.setdefault(f"gate:{kind}", {"grader": None, "gate": kind, "grades": 0, "first": path,
                                                         "why": "gate cannot be recomputed from the report"})
                continue
            if kind == "fail-under":
                want = fail_under_gates(summary, {g.get("variant"): g.get("threshold")}, [g.get("variant")])
                want = want[0] if want else None
            elif kind == "fail-under-metric":
                try:
                    found = metric_gates(summary, {f"{g.get('variant')}:{g.get('metric')}": g.get("threshold")},
                                         [g.get("variant")])
                except Exception:  # a tampered metric name: named as a mismatch below
                    found = []
                want = found[0] if found else None
            elif kind in ("min-dq", "min-rubric"):  # visual work (issue 17)
                want = _visual_gate(summary, g)
            else:
                want = all_pass_gate(*failing_cases(self.report["attempts"]))
            if want is not None:
                from ..stats.gates import refuse_unchecked

                want = refuse_unchecked([want], self.report.get("instrument"))[0]
            self.checked["gates"] += 1
            self.diff(want, g, path, "gate differs from the recomputed gate", "gates")

    # ---- requests
    def requests(self) -> None:
        req = self.report.get("requests")
        if not isinstance(req, dict):
            return
        sent = req.get("sent")
        # The plan's budget is what the run promised before it spent anything: the spend is held
        # to it, and the ledger's own copy must say the same (a raised copy hides nothing).
        planned = (self.report.get("plan") or {}).get("budget")
        budget = planned if isinstance(planned, dict) else (req.get("budget") or {})
        if isinstance(planned, dict) and isinstance(req.get("budget"), dict):
            for key in ("max_requests", "max_cost_usd", "max_tokens"):
                if planned.get(key) != req["budget"].get(key):
                    self.add(f"requests.budget.{key}", planned.get(key), req["budget"].get(key),
                             "the budget the requests were held to differs from plan.budget", "requests")
        limit = budget.get("max_requests") if isinstance(budget, dict) else None
        self.checked["requests"] += 1
        if is_number(sent) and is_number(limit) and sent > limit:
            self.add("requests.sent", f"<= {limit}", sent, "more requests sent than the budget allows", "requests")
        for spent_key, limit_key, what in (("tokens_spent", "max_tokens", "tokens"),
                                           ("cost_spent_usd", "max_cost_usd", "cost")):
            # Reservations keep the spend within budget unless a provider reported more usage
            # than its request allowed: the record then shows a broken budget.
            spent, cap = req.get(spent_key), budget.get(limit_key) if isinstance(budget, dict) else None
            if spent is None and spent_key == "cost_spent_usd":
                spent = req.get("cost_known_usd")  # the known part already above the cap breaks it
            if is_number(spent) and is_number(cap) and spent > cap + 1e-9:
                self.add(f"requests.{spent_key}", f"<= {cap}", spent,
                         f"more {what} spent than the budget allows (provider reported more usage than "
                         "the request allowed)", "requests")
        ended = [req.get(k) for k in ("completed", "failed")]
        if is_number(sent) and all(is_number(x) for x in ended) and sum(ended) > sent:
            self.add("requests", f"completed + failed <= sent ({sent})", sum(ended),
                     "more requests ended than were sent", "requests")
        known = [((a.get("measurements") or {}).get("requests")) for a in self.report["attempts"]]
        total = sum(x for x in known if is_number(x))
        if is_number(sent) and total > sent:
            self.add("requests.sent", f">= {total} (attempts' measured requests)", sent,
                     "attempts measured more requests than the run sent", "requests")

    # ---- conversations
    def conversations(self) -> None:
        by_case: dict[str, list[tuple[int, dict]]] = defaultdict(list)
        for i, a in enumerate(self.report["attempts"]):
            by_case[a["case_id"]].append((i, a))
        turns: dict[str, list[dict]] = defaultdict(list)
        for c in self.report["plan"]["cases"]:
            if c.get("conversation") is not None and isinstance(c.get("input"), dict):
                turns[c["conversation"]].append(c)
        for conv_id, cases in turns.items():
            cases.sort(key=lambda c: c.get("turn_index", 0))
            records = [r for c in cases for r in by_case.get(c["id"], [])]
            if any("chain_input_hash" in a or "turn" in a for _, a in records):
                self.checked["conversations"] += 1
            completed = (self.report.get("run") or {}).get("status") == "completed"
            self.mismatches.extend(verify_conversation(cases, records, completed=completed))


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


def _recorded_page(a: dict):
    """The attempt's render record as page graders read it (no screenshots needed)."""
    if not isinstance(a.get("render"), dict):
        return None
    from ..render.page import RenderedPage

    return RenderedPage(a["render"])


def verify_screenshots(report: dict, base) -> tuple[list[dict], int]:
    """Every screenshot a render record lists: present beside the report under its recorded
    path, inside the report's folder, with the SHA-256 it is named by. (mismatches, checked)"""
    from pathlib import Path

    from ..render.store import read_shot, shot_path

    out, checked = [], 0
    for i, a in enumerate(report.get("attempts") or []):
        render = a.get("render") if isinstance(a, dict) else None
        if not isinstance(render, dict):
            continue
        for j, shot in enumerate(render.get("shots") or []):
            where = jpath("attempts", i, "render", "shots", j)
            if not isinstance(shot, dict):
                continue
            checked += 1
            path = shot_path(Path(base), shot.get("path"))
            digest = shot.get("sha256")
            if path is None or not isinstance(digest, str):
                out.append(mismatch(where + ".path", "<run folder>/screenshots/<sha256>.png", shot.get("path"),
                                    "screenshot path leaves the report's folder or is malformed", "screenshot"))
                continue
            if path.name != f"{digest}.png":
                out.append(mismatch(where + ".path", f"{digest}.png", path.name,
                                    "screenshot is not named by its hash", "screenshot"))
            try:
                read_shot(path, digest)
            except ValueError as exc:
                out.append(mismatch(where + ".sha256", digest, None, str(exc), "screenshot"))
    return out, checked


def _run(coro):
    """Finish a grading coroutine. Mechanical graders are sync, so it completes on its first
    step with no event loop; one that really awaits (an async grader) runs on its own loop, in a
    worker thread when the caller is itself inside a running loop."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    coro.close()  # it awaited something: start it again where a loop can drive it
    raise _NeedsLoop


class _NeedsLoop(Exception):
    pass


def _task_record(attempt: dict, plan_case: dict) -> dict | None:
    """An agent task attempt's observations (what its graders read), None for other cases."""
    meta = plan_case.get("metadata") if isinstance(plan_case.get("metadata"), dict) else {}
    if not isinstance(meta.get("task"), dict) or meta["task"].get("kind") != "task":
        return None
    task = (attempt.get("subject_info") or {}).get("task")
    return task if isinstance(task, dict) else None


def _grade(grader, ctx):
    """(grades, error) of one grader, as the runner's grade_attempt gives them."""
    from ..graders.grade import grade_attempt

    try:
        return _run(grade_attempt([grader], ctx))
    except _NeedsLoop:
        pass
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(grade_attempt([grader], ctx))
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, grade_attempt([grader], ctx)).result()


def verify_report(report: dict, base_dir=None) -> Verification:
    """Recompute everything the report alone allows and name every difference. With
    `base_dir` (the report's folder) the screenshots it lists are checked against their hashes."""
    v = _Verifier(report)
    v.schema()
    if v.structure():
        v.plan()
        v.attempts()
        summary = v.summary()
        v.gates(summary)
        v.requests()
        v.conversations()
        if base_dir is not None:
            found, checked = verify_screenshots(report, base_dir)
            v.mismatches.extend(found)
            if checked:
                v.checked["screenshots"] += checked
    status = (report.get("run") or {}).get("status") if isinstance(report.get("run"), dict) else None
    return Verification(ok=not v.mismatches and not v.schema_errors, status=status, mismatches=v.mismatches,
                        not_recomputable=list(v.skipped.values()), checked=dict(v.checked),
                        schema_errors=v.schema_errors)
