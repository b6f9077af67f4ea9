"""The history store and viewer at scale: how long a store takes to write a run of N attempts
(the cost a run pays for its history), its size on disk, and the time to first render, in
headless Chromium, of the runs page and of the big run's case list.

    .venv/bin/python benchmarks/history_bench.py                       # 1,000,000 attempts
    .venv/bin/python benchmarks/history_bench.py --cases 20000 --runs 5   # 200,000

The big run is written through the store's own seam (begin, one attempt at a time, finish), as
a live run writes it; its records are shaped like the offline benchmark's (json-fields grades).
Besides it the store holds --small runs of 30 cases, so the runs page has history to list.
Nothing is timed in tests; these numbers go to benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from scoreboard.store.history import HistoryStore
from scoreboard.viewer.app import Settings, serve

CHROMIUM = "/usr/bin/chromium"


def plan(cases: int, runs: int) -> dict:
    return {"fixture_hash": "f" * 64, "suite_hash": "s" * 64, "runs": runs, "seed": 1,
            "cases": [{"id": f"case-{i:07d}", "input": f"document {i}", "expected": {"total": i, "currency": "EUR"},
                       "category": ("invoice", "receipt")[i % 2], "input_hash": f"{i:064x}"} for i in range(cases)],
            "variants": [{"name": "basic", "subject": {"type": "python"}}, {"name": "careful",
                                                                            "subject": {"type": "python"}}]}


def record(case: dict, variant: str, run: int) -> dict:
    i = int(case["id"][5:])
    wrong = variant == "basic" and i % 7 == run % 7
    fields = [{"path": "total", "passed": not wrong, "expected": i, "actual": -1 if wrong else i, "reason": ""},
              {"path": "currency", "passed": True, "expected": "EUR", "actual": "EUR", "reason": ""}]
    return {"case_id": case["id"], "variant": variant, "run": run, "status": "failed" if wrong else "passed",
            "input_hash": case["input_hash"], "output": {"text": json.dumps({"total": i, "currency": "EUR"}),
                                                           "json": None, "tool_calls": [], "status": None},
            "output_hash": f"{i * 3 + run:064x}", "error": None,
            "measurements": {"latency_ms": 1.5, "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0, "requests": 0},
            "grades": [{"grader": "json-fields", "passed": not wrong, "score": 0.5 if wrong else 1.0,
                        "reason": "1/2 fields match" if wrong else "2/2 fields match", "fields": fields}]}


def write_run(store: HistoryStore, name: str, stamp: str, cases: int, runs: int, folder: Path) -> float:
    p = plan(cases, runs)
    started = time.perf_counter()
    store.begin({"run_id": stamp, "suite": name, "started_at": stamp, "plan": p, "cwd": None})
    counts = {"basic": [0, 0], "careful": [0, 0]}
    for case in p["cases"]:
        for variant in ("basic", "careful"):
            for r in range(runs):
                rec = record(case, variant, r)
                counts[variant][0] += rec["status"] == "passed"
                counts[variant][1] += 1
                store.attempt(rec)
    summary = {"variants": {v: {"attempts": n, "cases": cases, "passed": k, "failed": n - k, "errors": 0,
                                "pass_rate": k / n} for v, (k, n) in counts.items()}}
    report = folder / f"{name}-{stamp}.json"
    report.write_text(json.dumps({"schema": "scoreboard.report/v2", "note": "placeholder for the report hash"}))
    head = {"schema": "scoreboard.report/v2", "run": {"id": stamp, "suite": name, "status": "completed",
                                                      "started_at": stamp, "finished_at": stamp},
            "plan": p, "summary": summary}
    store.finish(head, {"json": report})
    assert not store.failed, store.failed
    return time.perf_counter() - started


def first_render(url: str, hashes: list[str]) -> list[float]:
    from playwright.sync_api import sync_playwright

    times = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=[
            "--no-sandbox", "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1"])
        page = browser.new_page()
        for h in hashes:
            page.goto("about:blank")
            start = time.perf_counter()
            page.goto(url + h)
            page.wait_for_selector("html[data-ready=true]", timeout=300_000)
            times.append(time.perf_counter() - start)
        browser.close()
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--small", type=int, default=200, help="small runs beside the big one")
    parser.add_argument("--store", help="a PostgreSQL URL instead of a SQLite file")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        spec = args.store or str(folder / "history.sqlite")
        store = HistoryStore(spec)
        small_s = sum(write_run(store, "small", f"2026-01-{1 + i // 24:02d}T{i % 24:02d}:00:00Z-{i}", 30, 3, folder)
                      for i in range(args.small))
        attempts = args.cases * 2 * args.runs
        big_s = write_run(store, "big", "2026-12-01T00:00:00Z", args.cases, args.runs, folder)
        key = store.key
        store.close()
        size = sum(f.stat().st_size for f in folder.glob("history.sqlite*")) if not args.store else None
        ready: list[str] = []
        loop = asyncio.new_event_loop()
        viewer_store = HistoryStore(spec)
        thread = threading.Thread(target=lambda: loop.run_until_complete(
            serve(viewer_store, Settings(port=0), ready.append)), daemon=True)
        thread.start()
        while not ready:
            time.sleep(0.05)
        runs_page, case_list, case_list_again = first_render(ready[0], ["#/runs", f"#/run/{key}", f"#/run/{key}"])
        print(json.dumps({"attempts": attempts, "cases": args.cases, "small_runs": args.small,
                          "write_s": round(big_s, 1), "attempts_per_s": round(attempts / big_s),
                          "small_runs_write_s": round(small_s, 1),
                          "store_mb": None if size is None else round(size / 1e6, 1),
                          "first_render_runs_page_s": round(runs_page, 2),
                          "first_render_big_case_list_s": round(case_list, 2),
                          "again_big_case_list_s": round(case_list_again, 2),
                          "python": sys.version.split()[0], "cpus": os.cpu_count()}, indent=1))


if __name__ == "__main__":
    main()
