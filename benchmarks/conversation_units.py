"""Are a conversation's turns independent evidence? A simulation with scoreboard's own interval
(stats.methods.pass_rate_interval) on reports whose cases are the turns of conversations.

Each conversation c has its own pass probability p_c ~ Beta (mean p, intra-conversation
correlation icc) and 2 to 6 turns, each passing with p_c (one run). The true pass rate is the
expected share of turns that pass. Coverage of the 95% interval is computed two ways:

- turns as the unit: every turn a case of its own (what the report did before the conversation
  became the unit);
- conversations as the unit: a conversation's turns counted together, (passes, turns), as the
  repeats of one case are.

    python benchmarks/conversation_units.py            # 4,000 reports per cell
    python benchmarks/conversation_units.py --sims 500
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from scoreboard.stats.methods import pass_rate_interval  # noqa: E402


def conversation_probabilities(rng, p: float, icc: float, n: int) -> np.ndarray:
    if icc <= 0:
        return np.full(n, p)
    strength = (1 - icc) / icc  # Beta(a, b) with a + b = strength has ICC 1 / (1 + strength)
    return rng.beta(p * strength, (1 - p) * strength, size=n)


def one_report(rng, p: float, icc: float, n: int) -> tuple[list, list, float]:
    """(per-turn counts, per-conversation counts, the true pass rate of this design)."""
    probs = conversation_probabilities(rng, p, icc, n)
    turns = rng.integers(2, 7, size=n)
    passes = [rng.random(t) < pc for t, pc in zip(turns, probs)]
    per_turn = [(int(x), 1) for conv in passes for x in conv]
    per_conv = [(int(conv.sum()), len(conv)) for conv in passes]
    return per_turn, per_conv, p


def coverage(rng, p: float, icc: float, n: int, sims: int) -> tuple[float, float]:
    hits_turn = hits_conv = 0
    for _ in range(sims):
        per_turn, per_conv, truth = one_report(rng, p, icc, n)
        a, b = pass_rate_interval(per_turn), pass_rate_interval(per_conv)
        hits_turn += a["low"] <= truth <= a["high"]
        hits_conv += b["low"] <= truth <= b["high"]
    return hits_turn / sims, hits_conv / sims


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sims", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=20261201)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    print(f"coverage of the 95% pass-rate interval, {args.sims} reports per cell; "
          "turns as the unit / conversations as the unit\n")
    print("| ICC | true p | 10 conversations | 30 conversations | 100 conversations |")
    print("|---|---|---|---|---|")
    for icc in (0.0, 0.25, 0.5):
        for p in (0.1, 0.5, 0.9):
            cells = [coverage(rng, p, icc, n, args.sims) for n in (10, 30, 100)]
            print(f"| {icc} | {p} | " + " | ".join(f"{t:.3f} / {c:.3f}" for t, c in cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
