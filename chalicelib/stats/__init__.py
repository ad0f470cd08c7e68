"""pawl's statistics: pure functions and streaming accumulators, no I/O, no clock.

Turns a run's per-item outcomes into ``aggregate_scores`` (pass rate with its Wilson
interval, per-scorer figures, groups), its comparison with a baseline run (paired
deltas, exact McNemar p-values, Holm across groups) and the verdict; with repeated trials,
the trial-aware figures (per-item pass proportions: pass@k, pass^k, the noise floor, a
clustered interval and an exact sign-flip test on the paired differences).
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
from chalicelib.stats.pass_at_k import pass_at_k, pass_hat_k
from chalicelib.stats.sign_flip import SignFlipResult, sign_flip_test
from chalicelib.stats.tally import CompensatedSum
from chalicelib.stats.trials import PairedTrialTally, TrialTally
from chalicelib.stats.verdict import REGRESSION_ALPHA, verdict

__all__ = [
    "REDUCERS",
    "REGRESSION_ALPHA",
    "BaselineComparator",
    "CompensatedSum",
    "ItemOutcome",
    "PairedTrialTally",
    "Partial",
    "RunAggregator",
    "ScorerScore",
    "SignFlipResult",
    "TrialOutcome",
    "TrialTally",
    "group_consecutive",
    "group_label",
    "holm_adjust",
    "mcnemar_exact_p",
    "merge_join",
    "pass_at_k",
    "pass_hat_k",
    "reduce_trials",
    "sign_flip_test",
    "verdict",
    "wilson_interval",
]
