"""Two per-grade costs measured on their own: a sync python grader's call (a thread started per
call before daemon_pool.py, a reused daemon thread now) and a summary's pass@k / pass^k (exact
Fractions before, integers over a common denominator now).

    .venv/bin/python benchmarks/user_code_bench.py [--calls 5000] [--cases 3000]

Prints CPU seconds (process time) and wall seconds of each; run it on a quiet machine and with
other work beside it (`stress`-like load: the thread-per-call cost is the scheduling wait)."""

from __future__ import annotations

import argparse
import asyncio
import random
import time

from scoreboard.graders.user_call import call_user
from scoreboard.stats.case_figures import pass_at_k_figures


def grader(output: str) -> bool:
    return output.startswith("yes")


async def calls(n: int) -> None:
    for i in range(n):
        await call_user(grader, ("yes" if i % 2 else "no",), 30)


def timed(label: str, fn) -> None:
    cpu, wall = time.process_time(), time.perf_counter()
    fn()
    print(f"{label}: {time.process_time() - cpu:.3f} s CPU, {time.perf_counter() - wall:.3f} s wall")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=5000)
    ap.add_argument("--cases", type=int, default=3000)
    args = ap.parse_args()
    timed(f"{args.calls} sync grader calls", lambda: asyncio.run(calls(args.calls)))
    rng = random.Random(1)
    cases = {f"c{i}": (rng.randint(0, 3), 3) for i in range(args.cases)}
    units = {f"c{i}": ("conversation", str(i // 4)) for i in range(args.cases)}
    timed(f"pass@k/pass^k of {args.cases} cases, 3 runs", lambda: pass_at_k_figures(cases, 3))
    timed(f"the same, turns in conversations of 4", lambda: pass_at_k_figures(cases, 3, units))


if __name__ == "__main__":
    main()
