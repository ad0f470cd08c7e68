"""Throughput and peak memory of the pure settle pipeline (chalicelib.stats).

Streams synthetic trials -> group_consecutive -> reduce_trials -> RunAggregator, and the
reduced items merge-joined with a baseline run -> BaselineComparator, then computes the
verdict. Nothing touches AWS: this is the statistics' own cost, the floor under a real
settle (which also pages result rows out of DynamoDB).

    .venv/bin/python bench/settle_stats.py [--sizes 10000 100000] [--trials 1]

Prints items/s from an untraced pass (per wall second, and per CPU second, which is
steadier on a shared machine), then peak Python memory from a second pass under
tracemalloc (which slows allocation several-fold, so its time is not reported).
"""

from __future__ import annotations

import argparse
import time
import tracemalloc
from collections.abc import Iterator

from chalicelib.stats import (
    BaselineComparator,
    ItemOutcome,
    RunAggregator,
    ScorerScore,
    TrialOutcome,
    group_consecutive,
    merge_join,
    reduce_trials,
    verdict,
)

KINDS = ("lookup", "refusal", "multi_step", "smalltalk")


def _scores(value: int) -> tuple[ScorerScore, ...]:
    return (
        ScorerScore("judge", value / 1000, value >= 300),
        ScorerScore("contains", float(value % 2), value % 2 == 1),
    )


def current_trials(count: int, trials: int) -> Iterator[TrialOutcome]:
    """Trials sorted by item id; about 2% errored."""
    for n in range(count):
        item_id = f"dsit_{n:08d}"
        for trial in range(trials):
            value = (n * 7919 + trial * 31) % 1000
            if value < 20:
                yield TrialOutcome(dataset_item_id=item_id, trial=trial, errored=True)
            else:
                yield TrialOutcome(
                    dataset_item_id=item_id, trial=trial, errored=False, scores=_scores(value)
                )


def baseline_items(count: int, trials: int = 1) -> Iterator[ItemOutcome]:
    """A baseline run over the same ids (minus every 50th, to exercise added/removed), with
    per-item trial counts when ``trials > 1`` (the trial-aware comparison pairs them)."""
    for n in range(count):
        if n % 50 == 0:
            continue
        value = (n * 104729) % 1000
        scores = {score.key: score for score in _scores(value)}
        yield ItemOutcome(
            dataset_item_id=f"dsit_{n:08d}",
            errored=value < 20,
            passed=None if value < 20 else all(score.passed for score in scores.values()),
            scores={} if value < 20 else scores,
            group=KINDS[n % 4] if n % 7 else None,
            trial_count=trials,
            passed_trials=None if value < 20 else value % (trials + 1),
            scored_trials=None if value < 20 else trials,
        )


def settle(count: int, trials: int) -> tuple[dict[str, object], dict[str, object]]:
    aggregator = RunAggregator("kind", trials)
    comparator = BaselineComparator("evrun_baseline", "kind", trials)

    def reduced() -> Iterator[ItemOutcome]:
        for n, item_trials in enumerate(group_consecutive(current_trials(count, trials))):
            item = reduce_trials(item_trials, "majority", group=KINDS[n % 4] if n % 7 else None)
            aggregator.add(item)
            yield item

    for here, there in merge_join(reduced(), baseline_items(count, trials)):
        comparator.add(here, there)
    aggregate, comparison = aggregator.result(), comparator.result()
    verdict(aggregate, 0.6, 0.05, comparison)
    return aggregate, comparison


def measure(count: int, trials: int) -> None:
    started, cpu_started = time.perf_counter(), time.process_time()
    aggregate, comparison = settle(count, trials)
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    tracemalloc.start()
    try:
        settle(count, trials)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    print(
        f"{count:>9,} items x {trials} trial(s): {count / elapsed:>8,.0f} items/s "
        f"({elapsed:6.2f} s wall, {count / cpu:>8,.0f} items/CPU-s)  peak {peak / 1024:6.1f} KiB  "
        f"pass_rate {aggregate['pass_rate']:.4f}  "
        f"compared {comparison['compared_item_count']:,}  p {comparison['p_value']:.3g}"
        + _trial_figures(comparison)
    )


def _trial_figures(comparison: dict[str, object]) -> str:
    trials = comparison.get("trials")
    if not isinstance(trials, dict):
        return ""
    exact = "exact" if trials["exact"] else "Monte Carlo"
    return f"  trial delta {trials['pass_rate_delta']:+.4f} p {trials['p_value']:.3g} ({exact})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--trials", type=int, default=1)
    arguments = parser.parse_args()
    for count in arguments.sizes:
        measure(count, arguments.trials)


if __name__ == "__main__":
    main()
