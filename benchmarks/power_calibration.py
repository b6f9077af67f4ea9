"""Does a comparison detect, 80% of the time, the difference it says it could detect?

Simulated reports of two variants A and B, each case with its own pass probability p_i ~ Beta
(mean p, intra-case correlation ICC; repeats of a case share it), B better by a shift per case
(p_i + shift, clipped at 1): the model of benchmarks/calibration.py, not the one the power
figures assume. For each true difference the share of reports whose paired interval lies above
0 is the real power; the difference at which it reaches 80% (interpolated on a grid of shifts)
is what the design can really detect. Beside it, what the reports said they could detect at that
difference (the median over the reports of their own figure, from their own spread), as
scoreboard says it now (exact for pass/fail outcomes of one run a side: stats.binary_power) and
as it said before (the noncentral t on the same spread), each with the real power a difference
of that size has.

    python benchmarks/power_calibration.py              # 2,000 reports per shift and cell (about 5 min)
    python benchmarks/power_calibration.py --sims 300   # quicker, noisier
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from scoreboard.stats.comparison import difference_sd, paired_stats  # noqa: E402
from scoreboard.stats.methods import ASSUMED_DIFFERENCE_SD, detectable_difference  # noqa: E402

SHIFTS = tuple(round(0.05 * i, 2) for i in range(0, 15))
CELLS = [(runs, n, p) for runs in (1, 3) for n in (10, 30, 100) for p in (0.2, 0.5)]
ICC = 0.25


def truth(p: float, shift: float, draws: np.ndarray) -> float:
    """The true mean difference B - A of the pass rates at a shift (clipping makes it smaller)."""
    return float(np.mean(np.clip(draws + shift, 0, 1) - draws))


def shift_for(p: float, delta: float, draws: np.ndarray) -> float | None:
    """The shift whose true difference is `delta` (None past what p allows)."""
    if truth(p, 1.0, draws) < delta:
        return None
    low, high = 0.0, 1.0
    while high - low > 1e-6:
        mid = (low + high) / 2
        low, high = (mid, high) if truth(p, mid, draws) < delta else (low, mid)
    return high


def simulate(rng, runs: int, n: int, p: float, shift: float, sims: int) -> tuple[float, list, list]:
    """(real power, each report's stated figure now, each report's figure by the noncentral t)."""
    ab = 1 / ICC - 1
    found, now, before = 0, [], []
    for _ in range(sims):
        pi = rng.beta(p * ab, (1 - p) * ab, size=n)
        a = rng.binomial(runs, pi)
        b = rng.binomial(runs, np.clip(pi + shift, 0, 1))
        tb = {f"c{i}": [int(b[i]), runs] for i in range(n)}
        ta = {f"c{i}": [int(a[i]), runs] for i in range(n)}
        stats = paired_stats(tb, ta, 0)
        found += stats["mean_difference_ci"]["low"] > 0
        now.append(stats["detectable_difference"]["value"])
        sd = difference_sd(list((b - a) / runs)) or ASSUMED_DIFFERENCE_SD
        before.append(detectable_difference(sd, n))
    return found / sims, now, before


def crossing(xs: list[float], ys: list[float], level: float = 0.8) -> int | None:
    """The index of the first y at `level` or above (None if none is)."""
    return next((i for i, y in enumerate(ys) if y >= level), None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sims", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    started = time.time()
    rows = []
    ab = 1 / ICC - 1
    for runs, n, p in CELLS:
        draws = rng.beta(p * ab, (1 - p) * ab, size=400_000)
        # coarse, then in steps of 0.01 between the two shifts that bracket 80% power
        shifts = list(SHIFTS)
        runs_at = {shift: simulate(rng, runs, n, p, shift, args.sims) for shift in shifts}
        first = crossing(shifts, [runs_at[s][0] for s in shifts])
        if first:
            for shift in np.arange(shifts[first - 1] + 0.01, shifts[first] - 0.005, 0.01):
                runs_at[round(float(shift), 2)] = simulate(rng, runs, n, p, round(float(shift), 2), args.sims)
        shifts = sorted(runs_at)
        powers = [runs_at[s][0] for s in shifts]
        deltas = [truth(p, s, draws) for s in shifts]
        first = crossing(shifts, powers)
        if first is None:
            real = f"none up to {deltas[-1] * 100:.0f} points (the most this p allows: power {powers[-1]:.2f})"
            nearest = shifts[-1]
        else:
            # between the last shift under 80% and the first at it, linearly (0.01 apart)
            x0, x1, y0, y1 = deltas[first - 1], deltas[first], powers[first - 1], powers[first]
            found = x0 + (0.8 - y0) * (x1 - x0) / (y1 - y0) if first else x1
            real, nearest = f"{found * 100:.1f}", shifts[first]
        # what the reports said there, and the real power of a difference that size (simulated at it)
        _, now, before = runs_at[nearest]
        row = [f"runs {runs}, n={n}, p={p}", real]
        figures = (float(np.median(now)), float(np.median(before)))
        for figure in figures:
            shift = shift_for(p, figure, draws) if figure <= 1 else None
            if figure == figures[0] and len(row) == 3:
                row.append(row[2])  # the same figure (repeats: both the noncentral t)
            elif figure > 1:
                row.append("none within 100 points")
            elif shift is None:
                row.append(f"{figure * 100:.1f} (more than this p allows)")
            else:
                row.append(f"{figure * 100:.1f} (power {simulate(rng, runs, n, p, shift, args.sims)[0]:.2f})")
        if runs > 1:
            row[2] += " (the noncentral t)"
        rows.append(row)
    print(f"{args.sims} reports per shift, ICC {ICC}, shifts {SHIFTS[0]}..{SHIFTS[-1]} (then 0.01 apart "
          f"around 80% power); {time.time() - started:.0f} s\n")
    print("| cell | really detected 80% of the time, points | stated now (its real power) "
          "| stated before: noncentral t (its real power) |")
    print("|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
