"""JavaScript grades: one `node` process per grade (how the javascript grader ran before) against
the long-lived worker pool (graders/node_pool.py) it uses now.

    PYTHONPATH=src python benchmarks/js_grader_bench.py [--grades 10000] [--concurrency 8]

Both sides grade the same inline assertion (`output.includes('Paris')`) through the same runner
(graders/js_assert.js): "per process" starts it once per grade in its one-shot mode, as the
grader did; "pool" sends each job to a worker through the grader itself. Prints grades/s and the
number of node processes started.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

from scoreboard.cases.case import Case
from scoreboard.graders import node_pool
from scoreboard.graders.grade import GradeContext
from scoreboard.graders.javascript import node_path
from scoreboard.graders.registry import build_grader
from scoreboard.subjects.values import Measurements, Output

CODE = "output.includes('Paris')"


async def per_process(n: int, concurrency: int) -> float:
    node = node_path()
    gate = asyncio.Semaphore(concurrency)
    job = json.dumps({"code": CODE, "output": "Paris", "context": {"vars": {}}, "inverse": False}).encode()

    async def one():
        async with gate:
            proc = await asyncio.create_subprocess_exec(node, str(node_pool.RUNNER), stdin=asyncio.subprocess.PIPE,
                                                        stdout=asyncio.subprocess.PIPE)
            out, _ = await proc.communicate(job)
            assert json.loads(out)["pass"] is True

    start = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(n)))
    return time.perf_counter() - start


async def pool(n: int, concurrency: int) -> float:
    grader = build_grader({"javascript": CODE})
    gate = asyncio.Semaphore(concurrency)
    ctx = GradeContext(Case(id="c", input="q"), Output(text="Paris"), Measurements())

    async def one():
        async with gate:
            assert (await grader.grade(ctx)).passed is True

    start = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(n)))
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--grades", type=int, default=10_000)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--per-process-grades", type=int, default=1000,
                    help="grades for the per-process side (it is slow; the rate is per grade)")
    args = ap.parse_args()
    if node_path() is None:
        raise SystemExit("node is not on PATH")
    n_old = min(args.grades, args.per_process_grades)
    old = asyncio.run(per_process(n_old, args.concurrency))
    started = node_pool.workers_started()
    new = asyncio.run(pool(args.grades, args.concurrency))
    print(f"per process: {n_old} grades in {old:.2f} s = {n_old / old:,.0f} grades/s ({n_old} node processes)")
    print(f"pool:        {args.grades} grades in {new:.2f} s = {args.grades / new:,.0f} grades/s "
          f"({node_pool.workers_started() - started} node processes)")
    print(f"speed-up: {(args.grades / new) / (n_old / old):.1f}x")


if __name__ == "__main__":
    main()
