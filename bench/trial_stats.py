"""CPU cost of the trial-aware figures at settle (chalicelib.stats.trials / sign_flip).

For each case: the compared items' per-item trial counts are drawn (seeded), fed to a
:class:`PairedTrialTally` and a :class:`TrialTally`, and their summaries computed. Prints
how much wider the paired interval is than a normal interval on the differences, then
the CPU seconds of the summaries (the tallies' ``add`` is a Counter increment per item),
whether the sign-flip p-value was exact, and the distinct keys the state holds.

    .venv/bin/python bench/trial_stats.py

CPU time (``time.process_time``), not wall: the machine is shared.
"""

from __future__ import annotations

import math
import os
import random
import time

from chalicelib.stats.trials import PairedTrialTally, TrialTally

CASES = [
    # (label, items, trials, baseline rate, candidate rate, usable-trial jitter)
    ("40 items x 5, 10-point drop", 40, 5, 0.8, 0.7, False),
    ("400 items x 5, no change", 400, 5, 0.8, 0.8, False),
    ("400 items x 5, some trials errored", 400, 5, 0.8, 0.75, True),
    ("2,000 items x 3, 5-point drop", 2_000, 3, 0.7, 0.65, False),
    ("10,000 items x 5, 2-point drop", 10_000, 5, 0.8, 0.78, False),
    ("100,000 items x 10, no change", 100_000, 10, 0.6, 0.6, True),
]


def draw(
    rng: random.Random, items: int, trials: int, before: float, after: float, jitter: bool
) -> tuple[PairedTrialTally, TrialTally]:
    paired, run = PairedTrialTally(), TrialTally()
    for _ in range(items):
        difficulty = rng.betavariate(2.0, 2.0)
        n1 = rng.randint(max(1, trials - 2), trials) if jitter else trials
        n0 = rng.randint(max(1, trials - 2), trials) if jitter else trials
        here = sum(rng.random() < min(1.0, difficulty * after / 0.5) for _ in range(n1))
        there = sum(rng.random() < min(1.0, difficulty * before / 0.5) for _ in range(n0))
        paired.add((here, n1), (there, n0))
        run.add(here, n1)
    return paired, run


WIDTH_CASES = [
    # (items, trials, rate multiplier, Beta(a, b) of the baseline item rates)
    (40, 5, 0.8, (2.0, 1.0)),
    (40, 5, 1.0, (2.0, 1.0)),
    (200, 5, 0.95, (0.7, 0.3)),
    (100, 3, 1.0, (5.0, 5.0)),
    (30, 10, 0.9, (1.0, 1.0)),
]


def widths(runs: int = 200) -> None:
    """How much wider the paired interval is than the normal one on the differences,
    ``1.96 * sd / sqrt(n)`` (median and 10th/90th percentiles over seeded comparisons)."""
    rng = random.Random(41)
    for items, trials, multiplier, (a, b) in WIDTH_CASES:
        ratios = []
        for _ in range(runs):
            tally = PairedTrialTally()
            for _ in range(items):
                p = rng.betavariate(a, b)
                there = sum(rng.random() < p for _ in range(trials))
                here = sum(rng.random() < multiplier * p for _ in range(trials))
                tally.add((here, trials), (there, trials))
            summary = tally.summary()
            interval, sd = summary["pass_rate_delta_interval"], summary["difference_sd"]
            if sd:
                normal = 1.96 * sd / math.sqrt(items)
                ratios.append((interval["high"] - interval["low"]) / 2 / normal)
        ratios.sort()
        print(
            f"{items} items x {trials}, rates x{multiplier}, Beta({a:g}, {b:g}): width / normal "
            f"median {ratios[len(ratios) // 2]:.2f} (p10 {ratios[len(ratios) // 10]:.2f}, "
            f"p90 {ratios[9 * len(ratios) // 10]:.2f})"
        )


def main() -> None:
    print(f"load average: {os.getloadavg()}")
    widths()
    rng = random.Random(26)
    for label, items, trials, before, after, jitter in CASES:
        paired, run = draw(rng, items, trials, before, after, jitter)
        start = time.process_time()
        comparison = paired.summary()
        middle = time.process_time()
        figures = run.summary(trials)
        end = time.process_time()
        how = "exact" if comparison["exact"] else f"MC ±{comparison['mc_error']:.2g}"
        print(
            f"{label:40s} delta {comparison['pass_rate_delta']:+.3f} p {comparison['p_value']:.3g}"
            f" ({how}); comparison {middle - start:.3f} s CPU, run figures {end - middle:.4f} s"
            f" CPU; state keys {len(paired.counts)} / {len(run.counts)};"
            f" flip rate {figures['noise_floor']['flip_rate']:.3f}"
        )


if __name__ == "__main__":
    main()
