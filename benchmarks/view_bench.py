"""What the renderers' view of a report costs: `build_view` over N attempts (10% failing), fed
from a generator the way the engine reads its attempt log, so only what the view keeps stays in
memory. The generator's own cost (making each attempt dict) is measured apart and
included in the build_view column. Each row runs in a fresh child process; peak memory is tracemalloc's peak of Python
allocations during build_view (a second pass: tracing slows the timed one), and the child's
peak RSS.

    .venv/bin/python benchmarks/view_bench.py                 # 10,000 / 100,000 / 1,000,000
    .venv/bin/python benchmarks/view_bench.py 20000 50000     # other sizes
"""

from __future__ import annotations

import json
import subprocess
import sys

CHILD = r"""
import gc, json, resource, sys, time, tracemalloc
from scoreboard.record.view import ATTEMPT_CAP, build_view

n, cases = int(sys.argv[1]), 1000
runs = n // (2 * cases)

def attempt(i):
    case, rest = divmod(i, 2 * runs)
    variant, run = divmod(rest, runs)
    failed = i % 10 == 3
    fields = [{"path": "total", "passed": not failed, "expected": 100.5, "actual": 101.5 if failed else 100.5,
               "reason": "differs" if failed else ""},
              {"path": "currency", "passed": True, "expected": "EUR", "actual": "EUR", "reason": ""}]
    return {"case_id": f"case-{case:05d}", "variant": ("basic", "careful")[variant], "run": run,
            "status": "failed" if failed else "passed", "input_hash": "h" * 64,
            "output": {"text": '{"total": 100.5, "currency": "EUR"}', "json": {"total": 100.5, "currency": "EUR"},
                       "tool_calls": [], "status": None},
            "output_hash": "o" * 64, "error": None,
            "measurements": {"latency_ms": 12.5, "input_tokens": 100, "output_tokens": 20, "cost_usd": None,
                             "requests": 1},
            "grades": [{"grader": "json-fields", "passed": not failed, "score": 0.5 if failed else 1.0,
                        "reason": "1/2 fields match" if failed else "2/2 fields match", "fields": fields}]}

head = {"schema": "scoreboard.report/v2",
        "run": {"id": "bench", "suite": "bench", "status": "completed", "started_at": "2026-12-01T00:00:00Z",
                "finished_at": "2026-12-01T00:01:00Z", "argv": [], "versions": {}, "synthetic": True,
                "stop_reason": None, "executor": "local", "dry_run": False},
        "plan": {"fixture_hash": "f" * 64, "suite_hash": "s" * 64, "runs": runs,
                 "cases": [{"id": f"case-{c:05d}", "input": "x", "expected": {"total": 100.5}, "input_hash": "h"}
                           for c in range(cases)],
                 "variants": [{"name": "basic"}, {"name": "careful"}]},
        "summary": {}, "gates": []}
total = 2 * cases * runs
passes = total - sum(1 for i in range(total) if i % 10 == 3)
gc.collect()
start = time.perf_counter()
for _ in (attempt(i) for i in range(total)):
    pass
making = time.perf_counter() - start
gc.collect()
start = time.perf_counter()
view = build_view(head, (attempt(i) for i in range(total)), passes_total=passes)
seconds = time.perf_counter() - start
kept = len(view.report.attempts)
del view
gc.collect()
tracemalloc.start()
view = build_view(head, (attempt(i) for i in range(total)), passes_total=passes)
peak = tracemalloc.get_traced_memory()[1]
tracemalloc.stop()
print(json.dumps({"attempts": total, "kept": kept, "cap": ATTEMPT_CAP, "seconds": round(seconds, 3), "making": round(making, 3),
                  "peak_mb": round(peak / 1e6, 1),
                  "rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}))
"""


def main() -> None:
    sizes = [int(a) for a in sys.argv[1:]] or [10_000, 100_000, 1_000_000]
    print("| attempts | kept | build_view s | of which making the dicts s | µs per attempt, without making |"
          " peak traced MB | peak RSS MB |")
    print("|---|---|---|---|---|---|---|")
    for n in sizes:
        out = subprocess.run([sys.executable, "-c", CHILD, str(n)], capture_output=True, text=True, check=True)
        row = json.loads(out.stdout)
        per = (row["seconds"] - row["making"]) / row["attempts"] * 1e6
        print(f"| {row['attempts']:,} | {row['kept']:,} | {row['seconds']:.2f} | {row['making']:.2f} | {per:.1f} | "
              f"{row['peak_mb']} | {row['rss_mb']} |")


if __name__ == "__main__":
    main()
