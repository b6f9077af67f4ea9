"""Offline harness benchmark: N cases x 2 python variants x 4 deterministic graders.

Runs `scoreboard run` in a child process and reports end-to-end wall time, CPU, harness time
per attempt (the subjects are trivial, so this is scoreboard's own cost: loading, dispatch,
grading, attempt log, summary, reports) and peak RSS. Several sizes show whether memory grows
with the number of attempts beyond the report itself.

    python benchmarks/offline_bench.py                 # 2,500 / 5,000 / 10,000 cases
    python benchmarks/offline_bench.py --cases 10000 --repeat 3
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SUBJECT = '''
import json

def good(text):
    n = int(text.split()[1])
    return {"id": n, "label": "even" if n % 2 == 0 else "odd", "total": n * 3, "tags": ["a", "b"]}

def sloppy(text):
    n = int(text.split()[1])
    return {"id": n, "label": "even" if n % 3 else "odd", "total": n * 3 + (n % 7 == 0), "tags": ["b", "a"]}
'''

SUITE = '''
name: offline-bench
cases: cases.jsonl
runs: 1
concurrency: 8
formats: [json, md]
graders:
  - json-fields: {fields: [id, label]}
  - fields: {fields: [{path: total, type: number, tolerance: 0.5}, {path: tags, type: set}]}
  - json-schema: {type: object, required: [id, label, total]}
  - not-contains: "Traceback"
variants:
  good: {subject: "python:bench_subject:good"}
  sloppy: {subject: "python:bench_subject:sloppy"}
'''


def make_suite(folder: Path, n: int) -> Path:
    (folder / "bench_subject.py").write_text(SUBJECT)
    (folder / "suite.yaml").write_text(SUITE)
    with open(folder / "cases.jsonl", "w") as handle:
        for i in range(n):
            expected = {"id": i, "label": "even" if i % 2 == 0 else "odd", "total": i * 3, "tags": ["a", "b"]}
            handle.write(json.dumps({"id": f"c{i:05d}", "input": f"item {i}", "expected": expected,
                                     "category": f"k{i % 5}"}) + "\n")
    return folder / "suite.yaml"


def run_once(n: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="sb-bench-") as tmp:
        folder = Path(tmp)
        suite = make_suite(folder, n)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "scoreboard", "run", str(suite), "--no-progress",
                               "--output-dir", str(folder / "out")], cwd=folder, capture_output=True, text=True)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if proc.returncode not in (0, 3):
            raise SystemExit(f"run failed ({proc.returncode}): {proc.stderr}")
        report = next((folder / "out" / "offline-bench").glob("*.json"))
        attempts = 2 * n
        return {"cases": n, "attempts": attempts, "wall_s": wall,
                "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
                "peak_rss_mb": after.ru_maxrss / 1024, "report_mb": report.stat().st_size / 1e6}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, action="append", help="case counts (default 2500 5000 10000)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = []
    for n in args.cases or [2500, 5000, 10000]:
        runs = [run_once(n) for _ in range(args.repeat)]
        # ru_maxrss of RUSAGE_CHILDREN is the largest child so far, so measure peak per size in order.
        row = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        row["attempts_per_s"] = row["attempts"] / row["wall_s"]
        row["us_per_attempt"] = row["wall_s"] / row["attempts"] * 1e6
        row["cpu_us_per_attempt"] = row["cpu_s"] / row["attempts"] * 1e6
        rows.append(row)
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print("| cases | attempts | wall s | CPU s | attempts/s | wall µs/attempt | CPU µs/attempt | peak RSS MB | report MB |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['cases']} | {r['attempts']} | {r['wall_s']:.2f} | {r['cpu_s']:.2f} | {r['attempts_per_s']:.0f} | "
              f"{r['us_per_attempt']:.0f} | {r['cpu_us_per_attempt']:.0f} | {r['peak_rss_mb']:.0f} | {r['report_mb']:.1f} |")


if __name__ == "__main__":
    main()
