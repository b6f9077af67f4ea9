"""Offline harness benchmark: N cases x 2 python variants x R runs x 4 deterministic graders.

Runs `scoreboard run` in a child process and reports end-to-end wall time, CPU, harness time
per attempt (the subjects are trivial, so this is scoreboard's own cost: loading, dispatch,
grading, attempt log, summary, reports) and the child's own peak RSS (from wait4, so each row
is measured on its own). Several sizes show whether memory grows with the number of attempts.

    python benchmarks/offline_bench.py                        # 2,500 / 5,000 / 10,000 cases
    python benchmarks/offline_bench.py --cases 10000 --repeat 3
    python benchmarks/offline_bench.py --cases 50000 --repeat 1               # 100,000 attempts
    python benchmarks/offline_bench.py --cases 100000 --runs 5 --repeat 1     # 1,000,000 attempts
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bytecode import compiled

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
runs: {runs}
concurrency: 8
limits: {{max_cases: 1000000}}
formats: {formats}
graders:
  - json-fields: {fields: [id, label]}
  - fields: {fields: [{path: total, type: number, tolerance: 0.5}, {path: tags, type: set}]}
  - json-schema: {type: object, required: [id, label, total]}
  - not-contains: "Traceback"
variants:
  good: {subject: "python:bench_subject:good"}
  sloppy: {subject: "python:bench_subject:sloppy"}
'''


def make_suite(folder: Path, n: int, runs: int = 1, formats: str = "[json, md]") -> Path:
    (folder / "bench_subject.py").write_text(SUBJECT)
    text = SUITE.replace("{runs}", str(runs)).replace("{formats}", formats)
    (folder / "suite.yaml").write_text(text.replace("{{", "{").replace("}}", "}"))
    with open(folder / "cases.jsonl", "w") as handle:
        for i in range(n):
            expected = {"id": i, "label": "even" if i % 2 == 0 else "odd", "total": i * 3, "tags": ["a", "b"]}
            handle.write(json.dumps({"id": f"c{i:05d}", "input": f"item {i}", "expected": expected,
                                     "category": f"k{i % 5}"}) + "\n")
    return folder / "suite.yaml"


def run_once(n: int, runs: int = 1, formats: str = "[json, md]") -> dict:
    with tempfile.TemporaryDirectory(prefix="sb-bench-") as tmp:
        folder = Path(tmp)
        suite = make_suite(folder, n, runs, formats)
        start = time.perf_counter()
        with open(folder / "stderr.txt", "wb") as err:
            proc = subprocess.Popen([sys.executable, "-m", "scoreboard", "run", str(suite), "--no-progress",
                                     "--output-dir", str(folder / "out")], cwd=folder,
                                    stdout=subprocess.DEVNULL, stderr=err)
            _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        code = os.waitstatus_to_exitcode(status)
        if code not in (0, 3):
            raise SystemExit(f"run failed ({code}): {(folder / 'stderr.txt').read_text()}")
        report = next((folder / "out" / "offline-bench").glob("*.json"))
        log = next((folder / "out" / "offline-bench").glob("*/attempts.jsonl"))
        attempts = 2 * n * runs
        return {"cases": n, "runs": runs, "formats": formats, "attempts": attempts, "wall_s": wall,
                "cpu_s": usage.ru_utime + usage.ru_stime,
                "peak_rss_mb": usage.ru_maxrss / 1024, "report_mb": report.stat().st_size / 1e6,
                "log_mb": log.stat().st_size / 1e6}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, action="append", help="case counts (default 2500 5000 10000)")
    parser.add_argument("--runs", type=int, default=1, help="runs per case and variant (default 1)")
    parser.add_argument("--formats", default="json,md", help="report formats (default json,md)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    compiled()  # as installed: bytecode compiled (bytecode.py)
    rows = []
    for n in args.cases or [2500, 5000, 10000]:
        formats = "[" + ", ".join(args.formats.split(",")) + "]"
        runs = [run_once(n, args.runs, formats) for _ in range(args.repeat)]
        row = {k: (statistics.median(r[k] for r in runs) if k != "formats" else runs[0][k]) for k in runs[0]}
        row["attempts_per_s"] = row["attempts"] / row["wall_s"]
        row["us_per_attempt"] = row["wall_s"] / row["attempts"] * 1e6
        row["cpu_us_per_attempt"] = row["cpu_s"] / row["attempts"] * 1e6
        rows.append(row)
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print("| cases | runs | formats | attempts | wall s | CPU s | attempts/s | wall µs/attempt | CPU µs/attempt "
          "| peak RSS MB | report MB | log MB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['cases']} | {r['runs']} | {r['formats'].strip('[]')} | {r['attempts']} | {r['wall_s']:.2f} "
              f"| {r['cpu_s']:.2f} "
              f"| {r['attempts_per_s']:.0f} | {r['us_per_attempt']:.0f} | {r['cpu_us_per_attempt']:.0f} "
              f"| {r['peak_rss_mb']:.0f} | {r['report_mb']:.1f} | {r['log_mb']:.1f} |")


if __name__ == "__main__":
    main()
