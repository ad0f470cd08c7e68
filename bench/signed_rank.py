"""Cost of a truly continuous scorer in the baseline comparison (chalicelib.stats).

Every item's differences are distinct (a judge scoring in 1e-6 steps), the worst case for
the per-scorer ``difference -> count`` counter the signed-rank test needs. Feeds N compared
items to a :class:`PairedScorerTally` and reads its summary (t interval + signed-rank test),
then merges two halves, as a sliced settle would.

    .venv/bin/python bench/signed_rank.py [--sizes 10000 100000]

Prints CPU seconds (steadier than wall time on a shared machine) for the adds and for the
summary, and peak Python memory of the whole pass under tracemalloc.
"""

from __future__ import annotations

import argparse
import random
import time
import tracemalloc

from chalicelib.stats.tally import PairedScorerTally


def _pairs(count: int) -> list[tuple[float, float]]:
    rng = random.Random(26)
    return [(round(rng.random(), 6), round(rng.random(), 6)) for _ in range(count)]


def _feed(pairs: list[tuple[float, float]]) -> PairedScorerTally:
    tally = PairedScorerTally()
    for here, there in pairs:
        tally.add(here, here >= 0.5, there, there >= 0.5)
    return tally


def measure(count: int) -> str:
    pairs = _pairs(count)
    start = time.process_time()
    tally = _feed(pairs)
    adds = time.process_time() - start
    start = time.process_time()
    summary = tally.summary()
    reading = time.process_time() - start
    half = count // 2
    start = time.process_time()
    merged = _feed(pairs[:half])
    merged.merge(_feed(pairs[half:]))
    merged_summary = merged.summary()
    merging = time.process_time() - start
    assert merged_summary["wilcoxon"] == summary["wilcoxon"]
    tracemalloc.start()
    _feed(pairs).summary()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    test = summary["wilcoxon"]
    return (
        f"{count:>9,} items: adds {adds:6.2f} CPU-s ({count / adds:>9,.0f}/CPU-s), "
        f"summary {reading * 1000:7.1f} CPU-ms, halves+merge+summary {merging:5.2f} CPU-s, "
        f"{len(tally.differences):,} distinct differences, peak {peak / 2**20:6.1f} MiB, "
        f"{test['method']} p {test['p_value']:.3g}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    for count in parser.parse_args().sizes:
        print(measure(count), flush=True)


if __name__ == "__main__":
    main()
