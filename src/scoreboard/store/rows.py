"""Report pieces as history rows: a run's key, the plan's cases, each attempt and its grades,
each variant's headline figures (read from the summary the engine computed, never recomputed
here), and the report's file hash. Also where a run was made: its git commit."""

from __future__ import annotations

import math
import re
import subprocess
from collections.abc import Iterable
from typing import Any

from ..hashing import sha256_json
from ..jsonio import dumps_line, loads
from .migrations import case_key, fold

#: the report sections stored in a run's head (the plan's cases, the attempts and the summary
#: have tables of their own)
HEAD_SECTIONS = ("schema", "run", "plan", "gates", "requests", "pairwise", "reviews", "verification")
JUDGED = ("passed", "failed", "error")

#: newest first among runs started in the same second: a run id made in the same second as
#: another ends in -2, -3 ... -10, so a longer id is a later one (by text alone -9 came before -10)
NEWEST = "LENGTH(r.run_id) DESC, r.run_id DESC, r.key DESC"


def run_key(suite: str, run_id: str, started_at: str | None, uid: str | None = None) -> str:
    """A run's identity in a store: the same run recorded live and imported from its report
    gets the same key (which makes `store import` idempotent). The run id is a UTC timestamp,
    unique only within its output folder: two runs of one suite started in the same second
    elsewhere (a CI matrix writing one PostgreSQL store) are told apart by the run's random
    `uid`; a run from before the uid existed keeps the key it always had."""
    return sha256_json([suite, run_id, started_at or "", uid] if uid else [suite, run_id, started_at or ""])[:32]


def text(value: Any) -> str:
    """Compact JSON text of a value."""
    return dumps_line(value)[:-1].decode("utf-8")


def parse(value: str | None, where: str | None = None) -> Any:
    """A stored JSON column's value; a one-line error when it is not JSON (a store changed
    outside scoreboard, or damaged), never a traceback. `where` names the value's run and
    column (`run_where`), so the error says which run to store again."""
    if value is None:
        return None
    try:
        return loads(value)
    except (ValueError, TypeError) as exc:
        from ..errors import ConfigError

        raise ConfigError(f"the store holds a value that is not valid JSON{' in ' + where if where else ''} "
                          f"({str(value)[:40]!r}...: {exc}); it was changed outside scoreboard or is damaged: "
                          "`scoreboard store import --replace` of the run's report stores it again",
                          field="store") from None


def run_where(run_id: Any, suite: Any, column: str) -> str:
    """A stored run's column, in words, for `parse`'s error (names are printed as written, escaped)."""
    return f"{column} of run {str(run_id)[:200]!r} of suite {str(suite)[:200]!r}"


_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def clean(value: str | None) -> str | None:
    """Free text (an error, a grader's reason) as a column of either database can hold it: a
    NUL byte (PostgreSQL refuses it) or a lone surrogate (no UTF-8 form) becomes U+FFFD. The
    attempt's whole record, JSON text, keeps the original."""
    return value if value is None else _UNSTORABLE.sub("\ufffd", value)


def positions(plan: dict) -> tuple[dict[str, int], dict[str, int], int]:
    """(case position, variant position, runs) of a plan: an attempt's place in report order."""
    cases = {c["id"]: i for i, c in enumerate(plan.get("cases") or ())}
    variants = {v["name"]: i for i, v in enumerate(plan.get("variants") or ())}
    return cases, variants, int(plan.get("runs") or 1)


def attempt_position(record: dict, where: tuple[dict, dict, int]) -> int:
    cases, variants, runs = where
    ci = cases.get(record.get("case_id"), len(cases))
    vi = variants.get(record.get("variant"), len(variants))
    return (ci * max(len(variants), 1) + vi) * runs + int(record.get("run") or 0)


def case_row(key: str, position: int, case: dict) -> tuple:
    category = case.get("category")
    return (key, position, case["id"], case.get("input_hash"), clean(category if category is None else str(category)),
            text(case), case_key(case["id"]), fold(case["id"]))


def _number(value: Any) -> float | None:
    """A finite number, else None (unknown: never 0, and never a NaN or infinity no JSON holds)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def attempt_row(key: str, position: int, record: dict) -> tuple:
    m = record.get("measurements") or {}
    error = record.get("error")
    return (key, position, record["case_id"], record["variant"], int(record.get("run") or 0), record["status"],
            record.get("input_hash"), record.get("output_hash"), None if error is None else clean(str(error)[:2000]),
            _number(m.get("latency_ms")), _number(m.get("cost_usd")), _int(m.get("input_tokens")),
            _int(m.get("output_tokens")), text(record), case_key(record["case_id"]))


def _int(value: Any) -> int | None:
    """A whole number a BIGINT column holds, else None (unknown)."""
    if not isinstance(value, int) or isinstance(value, bool) or not -(2**63) <= value < 2**63:
        return None
    return value


def grade_rows(key: str, record: dict) -> list[tuple]:
    out = []
    for i, g in enumerate(record.get("grades") or ()):
        passed = g.get("passed")
        out.append((key, record["case_id"], record["variant"], int(record.get("run") or 0), i,
                    clean(str(g.get("grader"))), None if passed is None else int(bool(passed)), _number(g.get("score")),
                    None if g.get("reason") is None else clean(str(g.get("reason"))[:2000]), case_key(record["case_id"])))
    return out


def variant_rows(key: str, plan: dict, summary: dict | None) -> list[tuple]:
    """Each variant's spec and headline figures as the summary states them (null when absent)."""
    rows = []
    blocks = (summary or {}).get("variants") or {}
    for i, v in enumerate(plan.get("variants") or ()):
        s = blocks.get(v["name"]) or {}
        ci = s.get("pass_rate_ci") or {}
        fa = s.get("field_accuracy_overall") or {}
        fa_ci = fa.get("ci") or {}
        method = ci.get("method")
        rows.append((key, i, v["name"], text(v), *(_int(s.get(k)) for k in ("attempts", "passed", "failed", "errors",
                                                                           "unassessed", "not_run")),
                     _number(s.get("pass_rate")), _number(ci.get("low")), _number(ci.get("high")),
                     clean(method) if isinstance(method, str) else None, _number(fa.get("value")),
                     _number(fa_ci.get("low")), _number(fa_ci.get("high")), cost_per_case(s),
                     _int(s.get("errors_not_graded")), _int(s.get("units"))))
    return rows


def cost_per_case(block: dict) -> float | None:
    """A variant's cost per case when every attempt's cost is known; None (unknown) otherwise."""
    cost = ((block.get("measurements") or {}).get("cost_usd")) or {}
    total, cases = _number(cost.get("total") if isinstance(cost, dict) else None), _int(block.get("cases"))
    if total is None or not cases or cases < 0:
        return None
    return total / cases


def head_of(report_head: dict) -> dict:
    """The sections a run's head keeps: the plan without its cases."""
    head = {k: report_head[k] for k in HEAD_SECTIONS if k in report_head}
    if "plan" in head:
        head["plan"] = {k: v for k, v in head["plan"].items() if k != "cases"}
    return head


def git_info(folder: str | None) -> tuple[str | None, str | None, bool | None]:
    """(commit, branch, dirty) of the repository holding `folder`; Nones outside one."""
    if not folder:
        return None, None, None

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", "-C", folder, *args], check=False, capture_output=True, text=True, timeout=10,
                                  stdin=subprocess.DEVNULL)
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    if not commit:
        return None, None, None
    branch = git("rev-parse", "--abbrev-ref", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no")
    return commit, branch if branch != "HEAD" else None, None if status is None else bool(status)


def planned_attempts(plan: dict) -> int:
    """Cases x variants x runs of a plan."""
    return len(plan.get("cases") or ()) * len(plan.get("variants") or ()) * int(plan.get("runs") or 1)


def total_attempts(summary: dict | None) -> int:
    return sum(int(v.get("attempts") or 0) for v in ((summary or {}).get("variants") or {}).values())


def review_row(entry: dict, run_key_: str | None, created_at: str) -> tuple:
    verdict = entry.get("verdict")
    return (entry["case_id"], entry["output_hash"], entry["reviewer_id"], entry["rubric_version"],
            entry["input_hash"], entry["reviewer_kind"], text(entry.get("ratings") or {}),
            None if verdict is None else int(bool(verdict)), clean(entry["notes"]), run_key_, created_at,
            case_key(entry["case_id"]))


def review_entry(row: Iterable) -> dict:
    """A stored review as the entry `import reviews` reads (the same record)."""
    case_id, output_hash, reviewer_id, rubric, input_hash, kind, ratings, verdict, notes = list(row)[:9]
    return {"case_id": case_id, "input_hash": input_hash, "output_hash": output_hash, "reviewer_id": reviewer_id,
            "reviewer_kind": kind, "rubric_version": rubric, "ratings": loads(ratings),
            "verdict": None if verdict is None else bool(verdict), "notes": notes}
