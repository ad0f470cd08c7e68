"""pawl's statistics: pure functions and streaming accumulators, no I/O, no clock.

Turns a run's per-item outcomes into ``aggregate_scores`` (pass rate with its Wilson
interval, per-scorer figures, groups), its comparison with a baseline run (paired
deltas, exact McNemar p-values, Holm across groups) and the verdict.
"""

from chalicelib.stats.aggregate import RunAggregator
from chalicelib.stats.baseline import BaselineComparator, merge_join
from chalicelib.stats.holm import holm_adjust
from chalicelib.stats.intervals import wilson_interval
from chalicelib.stats.mcnemar import mcnemar_exact_p
from chalicelib.stats.outcomes import (
    REDUCERS,
    ItemOutcome,
    ScorerScore,
    TrialOutcome,
    group_consecutive,
    group_label,
    reduce_trials,
)
from chalicelib.stats.partial import Partial
from chalicelib.stats.tally import CompensatedSum
from chalicelib.stats.verdict import REGRESSION_ALPHA, verdict

__all__ = [
    "REDUCERS",
    "REGRESSION_ALPHA",
    "BaselineComparator",
    "CompensatedSum",
    "ItemOutcome",
    "Partial",
    "RunAggregator",
    "ScorerScore",
    "TrialOutcome",
    "group_consecutive",
    "group_label",
    "holm_adjust",
    "mcnemar_exact_p",
    "merge_join",
    "reduce_trials",
    "verdict",
    "wilson_interval",
]
