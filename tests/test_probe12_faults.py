"""Crash safety and budgets under faults, with the newer features switched on, from outside.

A suite that uses conversations (multi-turn cases), a prompt template with case vars, a judge
asked 3 times per judgment (judge_runs), pairwise judging, named metrics with weights and a
scoring function, reducers over --runs 3 and a record-only classify grader runs as
`scoreboard run` against a loopback fake provider that answers with seeded random faults
(500s, 429s with Retry-After, connections reset mid-body, slow bodies, answers without usage).

(1) kill -9 of the run at moments picked across the run (by polling its attempt log), then
    `--resume`, a few times: the final report holds every planned attempt exactly once,
    `verify` accepts it, nothing already written is lost, and no request is counted twice.
(2) random fault schedules with --max-requests / --max-cost / --max-tokens: the ledger never
    exceeds its budget (the requests are counted at the fake server too), a stop is recorded
    with the attempts not run marked not-run, and `verify` accepts the report.

The defaults are CI-sized; SCOREBOARD_FAULT_SCHEDULES=200 SCOREBOARD_FAULT_KILLS=30 runs more
(benchmarks/README.md gives the numbers of such a run).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli_inprocess import run_cli
from tests.servers.fake_provider import FakeProvider, default_reply

SCHEDULES = int(os.environ.get("SCOREBOARD_FAULT_SCHEDULES", "4"))
KILL_SEEDS = int(os.environ.get("SCOREBOARD_FAULT_KILLS", "2"))
VARIANTS = ("left", "right")
RUNS = 3
PRICE = {"input_per_mtok": 1.0, "output_per_mtok": 2.0}


def _digest(text: str) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)


def reply(req: dict) -> str:
    """Answers as a subject (arithmetic, echo) or as a judge (the JSON its schema asks for)."""
    name = ((req.get("response_format") or {}).get("json_schema") or {}).get("name")
    prompt = json.dumps(req.get("messages"))
    h = _digest(prompt)
    if name == "verdict":
        return json.dumps({"verdict": h % 3 != 0, "explanation": "checked"})
    if name == "winner":
        return json.dumps({"winner": ["A", "B", "tie"][h % 3], "explanation": "compared"})
    if name == "choice":
        return json.dumps({"choice": ["A", "B"][h % 2], "explanation": "classified"})
    if name == "score":
        return json.dumps({"score": 1 + h % 5, "explanation": "scored"})
    return default_reply(req)


class FaultyProvider(FakeProvider):
    """The fake provider, plus two faults: an answer without usage, and a body sent slowly."""

    async def _json_reply(self, request, payload, b, status=200):
        if b.get("no_usage"):
            payload = {k: v for k, v in payload.items() if k != "usage"}
        if b.get("slow_body_ms"):
            from aiohttp import web

            data = json.dumps(payload).encode()
            resp = web.StreamResponse(status=status, headers=self._headers(b))
            resp.content_type = "application/json"
            resp.content_length = len(data)
            await resp.prepare(request)
            step = max(1, len(data) // 4)
            for i in range(0, len(data), step):
                await resp.write(data[i:i + step])
                await asyncio.sleep(b["slow_body_ms"] / 1000)
            await resp.write_eof()
            return resp
        return await super()._json_reply(request, payload, b, status)


def fault(rng: random.Random) -> dict:
    """One seeded fault (or a plain answer)."""
    kind = rng.choice(["ok", "ok", "ok", "500", "429", "reset", "slow", "no_usage", "latency"])
    return {"ok": {}, "500": {"status": 500},
            "429": {"status": 429, "retry_after": rng.choice(["0", "0.02", "0.05"])},
            "reset": {"truncate": True}, "slow": {"slow_body_ms": rng.choice([5, 20])},
            "no_usage": {"no_usage": True}, "latency": {"latency_ms": rng.choice([10, 40])}}[kind]


def write_suite(work: Path, base_url: str, shape: str, *, n_cases: int = 3, conv_turns: int = 3) -> None:
    """A suite using judge_runs 3, pairwise, metrics, scoring, reducers, a record-only grader and
    --runs 3, with a prompt template over case vars (shape "template") or a conversation (shape
    "conversation": templates do not apply to conversations, so a suite has one or the other)."""
    rows = []
    template = shape == "template"
    for i in range(n_cases):
        a, b = 10 + i, 7 * i + 1
        given = {"vars": {"a": a, "b": b}} if template else {"input": f"Compute {a} + {b}."}
        rows.append({"id": f"sum{i}", **given, "expected": f"ANSWER: {a + b}",
                     "graders": [{"contains": "ANSWER", "metric": "form", "weight": 1},
                                 {"llm-judge": {"rubric": "the sum is right"}, "metric": "judged", "weight": 2}]})
    rows.append({"id": "noted", **({"vars": {"a": 2, "b": 2}} if template else {"input": "Say hello."}),
                 "replace": True,
                 "graders": [{"classify": {"choices": ["A", "B"], "record_only": True, "label": "tone"}}]})
    if not template:
        rows.append({"id": "chat", "conversation": {"topic": "survey", "notes": "The survey counted 47 birds."},
                     "turns": [{"id": f"t{k}", "question": f"Question {k}: what is {k} + 40?",
                                "graders": [{"contains": f"{k + 40}"}]} for k in range(1, conv_turns + 1)]})
    (work / "cases.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (work / "scoring.py").write_text(
        "def decide(named_scores, context):\n"
        "    return {'pass': context['score'] >= 0.5, 'score': context['score'], 'reason': 'scored'}\n")
    retries = {"attempts": 3, "base_delay_s": 0.01, "max_delay_s": 0.05}

    def model(name: str) -> dict:
        return {"type": "openai", "base_url": base_url + "/v1", "model": name, "api_key_required": False,
                "params": {"max_tokens": 64}, "price": PRICE, "retries": retries}

    suite = {"name": "chaos", "cases": "cases.jsonl", "output_dir": "out", "formats": ["json"],
             "runs": RUNS, "concurrency": 4,
             "timeout_ms": 20_000, "judge": model("judge"), "judge_runs": 3, "pairwise": True,
             "reducers": ["max", "mean"], "derived_metrics": {"blend": "form * judged"},
             "defaults": {"scoring": "python-file:scoring.py:decide"},
             "variants": {v: {"subject": model(f"subj-{v}")} for v in VARIANTS}}
    if template:
        suite["prompt"] = "Compute {{ a }} + {{ b }} and answer 'ANSWER: n'."
    (work / "suite.json").write_text(json.dumps(suite))


def planned(shape: str, n_cases: int = 3, conv_turns: int = 3) -> set[tuple]:
    ids = [f"sum{i}" for i in range(n_cases)] + ["noted"]
    if shape == "conversation":
        ids += [f"chat/t{k}" for k in range(1, conv_turns + 1)]
    return {(c, v, r) for c in ids for v in VARIANTS for r in range(RUNS)}


def scoreboard(work: Path, *args: str) -> subprocess.CompletedProcess:
    """`python -m scoreboard ARGS` in-process (tests/cli_inprocess.py): the runs not killed, the
    resumes and `verify` are about what is written, not the process (pytest-timeout is the hang
    detector). The runs killed or signalled are real processes (`start`)."""
    return run_cli(args, cwd=work, env={**os.environ, "SCOREBOARD_STORE": "none"})


def start(work: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "scoreboard", *args], cwd=work, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, env={**os.environ, "SCOREBOARD_STORE": "none"},
                            start_new_session=True)


def log_lines(work: Path) -> list[dict]:
    logs = list((work / "out" / "chaos").glob("*/attempts.jsonl"))
    if not logs:
        return []
    data = logs[0].read_bytes()
    return [json.loads(line) for line in data.split(b"\n")[:-1] if line.strip()]


def log_count(work: Path) -> int:
    """`len(log_lines(work))` without parsing each line: what the kill loops poll every 5 ms."""
    logs = list((work / "out" / "chaos").glob("*/attempts.jsonl"))
    if not logs:
        return 0
    return sum(1 for line in logs[0].read_bytes().split(b"\n")[:-1] if line.strip())


def attempt_keys(report: dict) -> list[tuple]:
    return [(a["case_id"], a["variant"], a["run"]) for a in report["attempts"]]


def verify(work: Path, report: Path) -> None:
    done = scoreboard(work, "verify", str(report), "--allow-code")
    assert done.returncode == 0, done.stdout + done.stderr


DONE = {"passed", "failed", "error", "unassessed", "not-graded"}


def judge_kind(req: dict) -> str:
    return ((req.get("response_format") or {}).get("json_schema") or {}).get("name") or "subject"


def kill_and_resume(work: Path, seed: int, kills: int = 3) -> dict:
    """Run the suite under seeded faults (one time in two with a budget); kill -9 it `kills` times
    at moments spread over the run (including its pairwise phase), resuming each time; finish it.
    Returns what was observed."""
    rng = random.Random(seed)
    shape = rng.choice(["template", "conversation"])
    budget = rng.choice([None, None, None, *BUDGETS])
    limit = budget and pick_limit(rng, budget)
    kept: dict[tuple, dict] = {}  # every finished attempt written before a kill
    marks: list[int] = []  # the log's length (lines) at each kill
    with FaultyProvider(reply=reply, latency_ms=rng.choice([5, 15])) as srv:
        srv.push("chat", *[fault(rng) for _ in range(rng.randint(5, 40))])
        write_suite(work, srv.base_url, shape)
        args = ["run", "suite.json", "--no-progress", "--output", "out/chaos/run.json", "--grace", "1"]
        if budget:
            args += [f"--{budget.replace('_', '-')}", str(limit)]
        total = len(planned(shape)) * 8  # log lines of a whole run, roughly (requests and attempts)
        killed = 0
        while killed < kills:
            before = len(log_lines(work))
            target = before + rng.randint(1, max(2, total // (kills + 1)))
            # one time in three, a moment of the pairwise phase (after every attempt is logged)
            pairs = rng.randint(1, 40) if rng.random() < 1 / 3 else None
            asked = sum(judge_kind(r["json"]) == "winner" for r in srv.requests)
            proc = start(work, *args)
            deadline = time.monotonic() + 120
            while proc.poll() is None and time.monotonic() < deadline:
                if pairs is None and log_count(work) >= target:
                    break
                if pairs is not None and sum(judge_kind(r["json"]) == "winner" for r in srv.requests) >= asked + pairs:
                    break
                time.sleep(0.005)
            if proc.poll() is not None:  # it ended first: the resume below finds it complete
                proc.stderr.close()
                args = ["run", "--resume", "out/chaos/run", "--no-progress"]
                break
            # mostly kill -9; one time in four a graceful SIGTERM (the grace cuts what is in flight)
            sig = signal.SIGTERM if rng.random() < 0.25 else signal.SIGKILL
            if sig == signal.SIGKILL:
                os.killpg(proc.pid, sig)
            else:
                proc.send_signal(sig)
            code = proc.wait(timeout=120)  # a hang detector: --grace is 1 s
            err = proc.stderr.read().decode(errors="replace")
            proc.stderr.close()
            assert code in ((-sig,) if sig == signal.SIGKILL else (0, 2, 3, -sig)), (sig, code, err)
            killed += 1
            marks.append(len(log_lines(work)))
            # an attempt a `stop` line names was cut short by the stop (a quota, an interrupt
            # ending its retry's wait): the log tells a resume to run it again (README, Resume)
            cut = {tuple(r["attempt"]) for r in log_lines(work) if r.get("kind") == "stop" and r.get("attempt")}
            for rec in log_lines(work):
                if rec.get("status") in DONE and "case_id" in rec:
                    key = (rec["case_id"], rec["variant"], rec["run"])
                    if key in cut:
                        kept.pop(key, None)
                        continue
                    assert key not in kept or kept[key] == rec, f"attempt {key} was logged twice"
                    kept[key] = rec
            if not (work / "out" / "chaos" / "run" / "run.json").exists():
                continue  # killed before the run wrote its plan: start again
            args = ["run", "--resume", "out/chaos/run", "--no-progress", "--grace", "1"]
        done = scoreboard(work, *args)
        assert done.returncode in (0, 2, 3), done.stderr
        seen = srv.requests
    report_path = work / "out" / "chaos" / "run.json"
    report = json.loads(report_path.read_text())
    return {"report": report, "kept": kept, "seen": seen, "killed": killed, "shape": shape, "path": report_path,
            "marks": marks, "log": log_lines(work), "budget": budget, "limit": limit}


BUDGETS = ("max_requests", "max_cost", "max_tokens")


def pick_limit(rng: random.Random, which: str):
    return {"max_requests": rng.randint(0, 120), "max_cost": round(rng.uniform(0.0, 0.03), 4),
            "max_tokens": rng.randint(0, 25_000)}[which]


def check_budget(req: dict, seen: int, which: str | None, limit) -> None:
    """The ledger never passes its budget: requests counted at the server too."""
    if which == "max_requests":
        assert seen <= limit and req["sent"] <= limit, (seen, req["sent"], limit)
    elif which == "max_cost":
        assert req["cost_spent_usd"] is not None and req["cost_spent_usd"] <= limit + 1e-12, req
    elif which == "max_tokens":
        assert req["tokens_spent"] is not None and req["tokens_spent"] <= limit, req
    if req["exhausted"]:
        assert which is not None


def check_no_work_repeated(log: list[dict], marks: list[int]) -> None:
    """No request was made for an attempt (or a pairwise comparison) that an earlier process had
    already finished and logged; no request id was used twice."""
    finished: set[tuple] = set()
    ids = set()
    bounds = [*marks, len(log)]
    start_at = 0
    for end in bounds:
        # an earlier process (trimmed by a kill at start_at at most) may have torn its last line
        for rec in log[start_at:end]:
            if rec.get("kind") == "request" and rec.get("state") == "pending":
                key = tuple(rec["attempt"])
                assert key not in finished, f"request {rec['id']} sent again for {key}, finished before a kill"
                assert rec["id"] not in ids, f"request id {rec['id']} used twice"
                ids.add(rec["id"])
        for rec in log[start_at:end]:
            if rec.get("status") in DONE and "case_id" in rec and "kind" not in rec:
                finished.add((rec["case_id"], rec["variant"], rec["run"]))
            elif rec.get("kind") == "pairwise":
                finished.add((rec["case_id"], "pairwise", rec["run"]))
        start_at = end


def check_report(work: Path, report: dict, shape: str, path: Path) -> None:
    keys = attempt_keys(report)
    assert len(keys) == len(set(keys)), "an attempt appears twice"
    assert set(keys) == planned(shape)
    status = report["run"]["status"]
    not_run = [a for a in report["attempts"] if a["status"] in ("not-run", "interrupted")]
    if status == "completed":  # only a conversation's turns after one that failed are not run
        assert all(a["status"] == "not-run" and "of this conversation failed" in a["error"] for a in not_run), not_run
    else:
        assert status == "stopped" and report["run"]["stop_reason"], report["run"]
    for a in not_run:
        assert a["measurements"]["requests"] is None or a["status"] == "interrupted", a
    verify(work, path)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(KILL_SEEDS))
def test_kill_9_then_resume_with_the_newer_features_loses_nothing_and_repeats_nothing(tmp_path, seed):
    seen = kill_and_resume(tmp_path, seed, kills=3)
    report = seen["report"]
    check_report(tmp_path, report, seen["shape"], seen["path"])
    check_budget(report["requests"], len(seen["seen"]), seen["budget"], seen["limit"])
    if seen["budget"] is None:
        assert report["run"]["status"] == "completed"
    by_key = {(a["case_id"], a["variant"], a["run"]): a for a in report["attempts"]}
    for key, record in seen["kept"].items():  # nothing already written is lost or changed
        assert by_key[key] == record, key
    check_no_work_repeated(seen["log"], seen["marks"])
    # the ledger counts every request the provider saw, and one lost in flight as possibly sent
    assert report["requests"]["sent"] >= len(seen["seen"])
    assert report["requests"]["sent"] - len(seen["seen"]) <= len(report["requests"]["possibly_billed"])
    pairs = (report.get("pairwise") or {}).get("judgments") or []
    assert len({(j["case_id"], j["run"]) for j in pairs}) == len(pairs)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(SCHEDULES))
def test_budgets_hold_under_random_fault_schedules_with_the_newer_features(tmp_path, seed):
    rng = random.Random(1000 + seed)
    shape = rng.choice(["template", "conversation"])
    which = BUDGETS[seed % 3]
    limit = pick_limit(rng, which)
    with FaultyProvider(reply=reply) as srv:
        srv.push("chat", *[fault(rng) for _ in range(rng.randint(0, 60))])
        write_suite(tmp_path, srv.base_url, shape)
        done = scoreboard(tmp_path, "run", "suite.json", "--no-progress", "--output", "r.json",
                          "--concurrency", str(rng.choice([1, 4, 12])), f"--{which.replace('_', '-')}", str(limit))
        seen = srv.requests
    assert done.returncode in (0, 2, 3), done.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    req = report["requests"]
    assert len(seen) == req["sent"], (len(seen), req["sent"])
    check_budget(req, len(seen), which, limit)
    check_report(tmp_path, report, shape, tmp_path / "r.json")
    if report["run"]["status"] == "stopped":
        assert done.returncode == 2
    if req["exhausted"]:
        assert report["run"]["status"] == "stopped"


# ---- defects found, each with its own test


def test_kill_9_during_pairwise_judging_resumes_without_asking_a_finished_comparison_again(tmp_path):
    """Pairwise judgments were held in memory until the report: a run killed while judging pairs
    asked every comparison again on --resume, so the comparisons already answered were billed
    twice (a judge with judge_runs 3 over 3 runs: 72 requests became 131)."""
    (tmp_path / "subj.py").write_text("def answer(input, skill, run, params):\n    return input + params['tail']\n")
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "input": f"q{i}", "expected": f"q{i}"})
                                                  + "\n" for i in range(3)))
    with FakeProvider(reply=reply) as judge:
        judge.push("chat", *[{}] * 4, {"hang": True})  # comparisons 1 and 2 answered, 3 in flight
        (tmp_path / "suite.json").write_text(json.dumps({
            "name": "pairs", "cases": "cases.jsonl", "output_dir": "out", "formats": ["json"],
            "graders": [{"contains": "q"}], "pairwise": True, "timeout_ms": 60_000,
            "judge": {"type": "openai", "base_url": judge.base_url + "/v1", "model": "judge",
                      "api_key_required": False},
            "variants": {v: {"subject": "python:subj:answer", "params": {"tail": v}} for v in VARIANTS}}))
        proc = start(tmp_path, "run", "suite.json", "--output", "out/pairs/run.json", "--no-progress")
        deadline = time.monotonic() + 60
        while len(judge.requests) < 5 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.01)
        assert len(judge.requests) == 5, proc.poll()
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        proc.stderr.close()
        judge.reset()
        done = scoreboard(tmp_path, "run", "--resume", "out/pairs/run", "--no-progress")
        assert done.returncode == 0, done.stderr
        again = [r["json"]["messages"][-1]["content"] for r in judge.requests]
    # only the comparison in flight (case c2, both orders) is asked again
    assert len(again) == 2, again
    assert all("q2" in prompt and "q0" not in prompt and "q1" not in prompt for prompt in again)
    report = json.loads((tmp_path / "out" / "pairs" / "run.json").read_text())
    assert [(j["case_id"], j["run"]) for j in report["pairwise"]["judgments"]] == [("c0", 0), ("c1", 0), ("c2", 0)]
    assert report["summary"]["judges"]["pairwise"][0]["cases"] == 3
    verify(tmp_path, tmp_path / "out" / "pairs" / "run.json")


@pytest.mark.parametrize("why", ["judge-500", "budget"])
def test_a_scoring_function_never_scores_an_attempt_whose_judge_could_not_decide(tmp_path, why):
    """With `defaults.scoring`, an attempt whose judge failed (500s past its retries) or whose
    judge request the budget refused was handed to the scoring function with the judge's metric
    missing and its score None: a promptfoo-style function made it `failed` (pass rate 0%, where
    the same suite without the function says unassessed), or an error counted against the pass
    rate. It is unassessed, as README's "never scored without it" says."""
    (tmp_path / "subj.py").write_text("def answer(input):\n    return 'ANSWER: 4'\n")
    (tmp_path / "cases.jsonl").write_text(json.dumps({"id": "c0", "input": "2+2", "expected": "ANSWER: 4"}) + "\n")
    (tmp_path / "scoring.py").write_text("def decide(named_scores, context):\n"
                                         "    return named_scores.get('judged', 0) >= 0.5\n")
    with FakeProvider(reply=reply) as judge:
        if why == "judge-500":
            judge.set_default("chat", {"status": 500})
        (tmp_path / "suite.json").write_text(json.dumps({
            "name": "s", "cases": "cases.jsonl", "formats": ["json"], "subject": "python:subj:answer",
            "judge": {"type": "openai", "base_url": judge.base_url + "/v1", "model": "j", "api_key_required": False,
                      "params": {"max_tokens": 64}, "retries": {"attempts": 1}},
            "graders": [{"contains": "ANSWER", "metric": "form"}, {"llm-judge": {"rubric": "right"}, "metric": "judged"}],
            "defaults": {"scoring": "python-file:scoring.py:decide"}}))
        budget = ["--max-requests", "0"] if why == "budget" else []
        done = scoreboard(tmp_path, "run", "suite.json", "--output", "r.json", "--no-progress", *budget)
    assert done.returncode == (2 if why == "budget" else 0), done.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    (attempt,) = report["attempts"]
    assert attempt["grades"][1]["passed"] is None
    assert (attempt["status"], attempt["score"]) == ("unassessed", None), attempt
    counts = report["summary"]["variants"]["answer"]
    assert (counts["unassessed"], counts["failed"], counts["errors"], counts["pass_rate"]) == (1, 0, 0, None)
    verify(tmp_path, tmp_path / "r.json")


def pairwise_project(tmp_path: Path, judge: FakeProvider, timeout_ms: int = 60_000) -> None:
    (tmp_path / "subj.py").write_text("def answer(input, skill, run, params):\n    return input + params['tail']\n")
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "input": f"q{i}", "expected": f"q{i}"})
                                                  + "\n" for i in range(3)))
    (tmp_path / "suite.json").write_text(json.dumps({
        "name": "pairs", "cases": "cases.jsonl", "output_dir": "out", "formats": ["json"],
        "graders": [{"contains": "q"}], "pairwise": True, "timeout_ms": timeout_ms,
        "judge": {"type": "openai", "base_url": judge.base_url + "/v1", "model": "judge", "api_key_required": False},
        "variants": {v: {"subject": "python:subj:answer", "params": {"tail": v}} for v in VARIANTS}}))


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_an_interrupt_while_judging_pairs_waits_the_grace_not_the_judges_timeout(tmp_path, sig):
    """SIGTERM or Ctrl+C while a pairwise comparison was in flight waited for the judge's answer
    (up to the attempt timeout, 10 minutes here), not --grace: the in-flight comparison ran
    outside what the grace cancels. Now it is cancelled when the grace ends: the run ends
    stopped, keeps the comparisons already answered, counts the cut request as sent with its
    usage unknown, and a resume asks only the comparison that was cut."""
    with FakeProvider(reply=reply) as judge:
        judge.push("chat", *[{}] * 4, {"hang": True})  # comparisons 1 and 2 answered, 3 in flight
        pairwise_project(tmp_path, judge, timeout_ms=600_000)
        proc = start(tmp_path, "run", "suite.json", "--output", "out/pairs/run.json", "--no-progress", "--grace", "1")
        deadline = time.monotonic() + 60
        while len(judge.requests) < 5 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.01)
        assert len(judge.requests) == 5, proc.poll()
        proc.send_signal(sig)
        try:
            code = proc.wait(timeout=120)  # a hang detector: the grace is 1 s, the judge's timeout 600 s
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            proc.stderr.close()
        assert code == 2
        report = json.loads((tmp_path / "out" / "pairs" / "run.json").read_text())
        assert report["run"]["status"] == "stopped" and "interrupted" in report["run"]["stop_reason"]
        assert [j["case_id"] for j in report["pairwise"]["judgments"]] == ["c0", "c1"]
        # the cut request counts as sent, its usage unknown (never free)
        assert (report["requests"]["sent"], report["requests"]["unknown_usage"]) == (5, 1)
        assert report["requests"]["tokens_partial"] is True
        verify(tmp_path, tmp_path / "out" / "pairs" / "run.json")
        judge.reset()
        done = scoreboard(tmp_path, "run", "--resume", "out/pairs/run", "--no-progress")
        assert done.returncode == 0, done.stderr
        assert len(judge.requests) == 2  # c2 in both orders
    report = json.loads((tmp_path / "out" / "pairs" / "run.json").read_text())
    assert [j["case_id"] for j in report["pairwise"]["judgments"]] == ["c0", "c1", "c2"]
    verify(tmp_path, tmp_path / "out" / "pairs" / "run.json")


def test_a_run_the_budget_stopped_stays_stopped_when_resumed(tmp_path):
    """A run whose budget refused a judge request (the attempt unassessed: 'not judged: request
    budget of 1 used up') ended stopped, exit 2; `--resume` of it, with nothing left to run,
    rewrote it `completed`, exit 0, its stop reason and `requests.exhausted` gone: a CI step
    that resumes passed a run the budget had cut. The budget stays the same on resume, so the
    run stays stopped, with its reason."""
    (tmp_path / "subj.py").write_text("def answer(input):\n    return 'ANSWER: 4'\n")
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "input": "2+2", "expected": "ANSWER: 4"})
                                                  + "\n" for i in range(2)))
    with FakeProvider(reply=reply) as judge:
        (tmp_path / "suite.json").write_text(json.dumps({
            "name": "s", "cases": "cases.jsonl", "formats": ["json"], "subject": "python:subj:answer",
            "concurrency": 1, "graders": [{"llm-judge": {"rubric": "right"}}],
            "judge": {"type": "openai", "base_url": judge.base_url + "/v1", "model": "j", "api_key_required": False}}))
        first = scoreboard(tmp_path, "run", "suite.json", "--output", "r.json", "--no-progress", "--max-requests", "1")
        assert first.returncode == 2, first.stderr
        before = json.loads((tmp_path / "r.json").read_text())
        again = scoreboard(tmp_path, "run", "--resume", "r", "--no-progress")
        assert len(judge.requests) == 1
    assert before["run"]["status"] == "stopped" and before["attempts"][1]["status"] == "unassessed"
    after = json.loads((tmp_path / "r.json").read_text())
    assert again.returncode == 2, again.stderr
    assert (after["run"]["status"], after["run"]["stop_reason"]) == ("stopped", before["run"]["stop_reason"])
    assert after["requests"]["exhausted"] == before["requests"]["exhausted"] == "request budget of 1 used up"
    assert [a["status"] for a in after["attempts"]] == [a["status"] for a in before["attempts"]]
    verify(tmp_path, tmp_path / "r.json")


BATCH_SEEDS = int(os.environ.get("SCOREBOARD_FAULT_BATCH_SEEDS", "1"))


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(BATCH_SEEDS))
def test_batched_subject_and_judge_killed_and_resumed_submit_once_and_keep_the_budget(tmp_path, seed):
    """Provider batch mode: a batched subject and a batched judge (judge_runs 3, metrics,
    reducers, runs 3), kill -9 at moments across submission, polling and collection, resumed
    until it ends (one seed in two with a budget): each request submitted once, nothing
    repeated for a finished attempt, the budget held, every planned attempt once, verified."""
    from tests.servers.fake_batches import FakeBatches

    rng = random.Random(500 + seed)
    budget = rng.choice([None, *BUDGETS, None, None])
    limit = budget and pick_limit(rng, budget)
    with FakeBatches() as srv:
        srv.polls_to_end = rng.choice([1, 2, 3])
        batch = {"size": rng.choice([2, 5, 50]), "wait_s": 0.1, "poll_s": 0.05, "poll_max_s": 0.1,
                 "poll_for_s": rng.choice([0, 1]), "settle_s": 0.5}

        def model(name: str) -> dict:
            return {"type": "openai", "base_url": srv.base_url + "/v1", "model": name, "api_key_required": False,
                    "params": {"max_tokens": 64}, "price": {**PRICE, "batch_discount": 0.5}, "batch": batch}

        (tmp_path / "cases.jsonl").write_text("".join(json.dumps(
            {"id": f"c{i}", "input": f"What is {i}+1?", "expected": f"ANSWER: {i + 1}",
             "graders": [{"contains": "ANSWER", "metric": "form"},
                         {"llm-judge": {"rubric": "right"}, "metric": "judged", "weight": 2}]}) + "\n"
            for i in range(4)))
        (tmp_path / "suite.json").write_text(json.dumps({
            "name": "chaos", "cases": "cases.jsonl", "output_dir": "out", "formats": ["json"], "runs": RUNS,
            "judge": model("judge"), "judge_runs": 3, "reducers": ["max"],
            "variants": {v: {"subject": model("subj-" + v)} for v in VARIANTS}}))
        args = ["run", "suite.json", "--no-progress", "--output", "out/chaos/run.json"]
        if budget:
            args += [f"--{budget.replace('_', '-')}", str(limit)]
        marks: list[int] = []
        status = None
        for step in range(30):
            before = len(log_lines(tmp_path))
            proc = start(tmp_path, *args)
            kill = step < 3 and rng.random() < 0.8
            target = before + rng.randint(1, 60)
            deadline = time.monotonic() + 60
            while proc.poll() is None and time.monotonic() < deadline and (not kill or len(log_lines(tmp_path)) < target):
                time.sleep(0.005)
            killed = kill and proc.poll() is None
            if killed:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=60)
                marks.append(len(log_lines(tmp_path)))
            else:
                code = proc.wait(timeout=120)
                assert code in (0, 2, 3, 4), proc.stderr.read().decode(errors="replace")
            proc.stderr.close()
            if (tmp_path / "out" / "chaos" / "run" / "run.json").exists():
                args = ["run", "--resume", "out/chaos/run", "--no-progress"]
            report_path = tmp_path / "out" / "chaos" / "run.json"
            if not killed:
                status = json.loads(report_path.read_text())["run"]["status"] if report_path.exists() else None
                if status in ("completed", "stopped"):
                    break
            time.sleep(0.3)  # a batch ends on a later look; a submission cut by a kill settles (settle_s)
        submitted = [s["custom_id"] for s in srv.submitted]
    assert status in ("completed", "stopped"), status
    report = json.loads(report_path.read_text())
    assert len(submitted) == len(set(submitted)) == report["requests"]["sent"]
    keys = attempt_keys(report)
    assert len(keys) == len(set(keys)) == 4 * len(VARIANTS) * RUNS
    check_no_work_repeated(log_lines(tmp_path), marks)
    check_budget(report["requests"], len(submitted), budget, limit)
    verify(tmp_path, report_path)
