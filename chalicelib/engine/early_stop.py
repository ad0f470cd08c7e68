"""Runs that stop when the answer is known (``early_stop: true`` on a run with a baseline).

- **Start** (:func:`settings_for`): allowed only on a queued run with a baseline, one trial
  and an eval with ``max_regression`` (the test's margin); the seed is the body's
  ``early_stop_seed`` or one derived from the run id, and is kept on the run.
- **Order** (:func:`shuffled`): the fan-out freezes the items as usual, then enqueues them
  sorted by ``sha256("<seed>:<item id>")``, a permutation fixed by the seed, so every
  prefix of the run is a random sample of its items. Each work item carries the
  baseline's outcome of its item, read once from the baseline's outcome digest
  (:func:`baseline_passes`).
- **Counting**: the transaction that records a batch's results adds their paired counts
  (both passed / improved / regressed / neither) to the run row beside the other counters
  (``store.results``), so the counts match the rows and nobody scans results to test.
- **Looking** (:func:`look`): a batch's first read of the run and every re-read of its run
  watch (at most every 0.5 s while calls are to start) run the sequential test
  (``stats.sequential``) on the counts; the first look that decides writes the decision
  once (a conditional update that a cancel beats).
- **Stopping**: from then on every worker drops the run's work as a cancel does (no agent
  or scorer call), and marks each dropped work item skipped (``store.skips``) so the settle
  claim (``recorded + skipped = item count``) comes once the batches in flight recorded.
- **Settling** (:func:`settle_step`): the aggregate and verdict cover the items that ran;
  ``aggregate_scores.early_stop`` says what was decided, after how many items, what was
  skipped and the spend that saved; the regression gate's reason says the run stopped
  early and why.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable
from typing import Any

from chalicelib.domain.catalog import Eval
from chalicelib.domain.runs import EarlyStopState, RunState
from chalicelib.engine.settled_outcomes import baseline_items, baseline_outcome, item_id
from chalicelib.errors import ValidationFailed
from chalicelib.stats.regression_gate import NOT_WORSE
from chalicelib.stats.sequential import (
    METHOD,
    METHOD_REFERENCE,
    PairedCounts,
    sequential_test,
)
from chalicelib.stats.verdict import REGRESSION_ALPHA
from chalicelib.store import runs

log = logging.getLogger("pawl.engine.early_stop")

#: How the spend an early stop saved is estimated (said beside the figure).
SPEND_SAVED_BASIS = "average cost per recorded result so far x work items skipped"


def _refuse(message: str, field: str = "early_stop") -> ValidationFailed:
    return ValidationFailed(message, field=field, code="EARLY_STOP_NOT_APPLICABLE")


def derived_seed(run_id: str) -> int:
    """The seed of a run that named none: from its id, so it is fixed and reproducible."""
    return int(hashlib.sha256(run_id.encode()).hexdigest()[:12], 16)


def settings_for(
    evaluation: Eval,
    run_id: str,
    *,
    baseline_run_id: str | None,
    wait: bool,
    seed: int | None,
) -> EarlyStopState:
    """The test's settings for a new early-stop run, or a refusal (before any write)."""
    if baseline_run_id is None:
        raise _refuse("early_stop needs a baseline_run_id: the test compares each item with it")
    if wait:
        raise _refuse("early_stop applies to queued runs; start it with wait: false")
    if evaluation.trials != 1:
        raise _refuse(
            f"early_stop counts one outcome per item; this eval runs {evaluation.trials} trials"
        )
    if evaluation.max_regression is None:
        raise _refuse(
            "early_stop needs the eval's max_regression: it is the margin the sequential "
            "test decides regressed / not_worse against"
        )
    return EarlyStopState(
        seed=derived_seed(run_id) if seed is None else seed,
        margin=evaluation.max_regression,
        alpha=REGRESSION_ALPHA,
        method=METHOD,
    )


# --- order and baseline outcomes ----------------------------------------------------------------


def rank(seed: int, dataset_item_id: str) -> str:
    """The item's place in the run's order: sorting by it is a seeded random permutation."""
    return hashlib.sha256(f"{seed}:{dataset_item_id}".encode()).hexdigest()


def shuffled(seed: int, item_ids: Iterable[str]) -> list[str]:
    return sorted(item_ids, key=lambda item: rank(seed, item))


def baseline_passes(baseline_run_id: str, wanted: set[str]) -> dict[str, bool]:
    """The baseline's pass/fail of each wanted item it scored (errored or unscored: absent),
    from its outcome digest (its rows when it has none), under its own reducer."""
    reducer = runs.get_run(baseline_run_id).snapshot.trial_reducer
    passes: dict[str, bool] = {}
    for item in baseline_items(baseline_run_id, reducer):
        if item_id(item) not in wanted:
            continue
        outcome = baseline_outcome(item, reducer, None)
        if not outcome.errored and outcome.passed is not None:
            passes[outcome.dataset_item_id] = outcome.passed
    return passes


# --- looking ------------------------------------------------------------------------------------


def look(run_id: str, early_stop: EarlyStopState, recorded: int) -> bool:
    """Whether the run is stopped: decided before, or decided by this look (written once)."""
    if early_stop.stopped:
        return True
    counts = PairedCounts.from_dict(early_stop.pairs)
    result = sequential_test(counts, early_stop.margin, early_stop.alpha)
    if result.decision is None:
        return False
    detail = {
        "decided_after_items": recorded,
        "paired_counts": counts.as_dict(),
        **result.as_dict(),
    }
    if runs.stop_early(run_id, result.decision, detail):
        log.info("run %s stopped early: %s after %d items", run_id, result.decision, recorded)
    # Lost the write: another look decided first (the same test on no fewer counts), or
    # the run was cancelled. Either way its outstanding work is dropped.
    return True


# --- settling -----------------------------------------------------------------------------------


def summary(state: RunState, aggregate: dict[str, Any]) -> dict[str, Any] | None:
    """``aggregate_scores.early_stop`` of a settling run (None: not an early-stop run)."""
    early_stop = state.early_stop
    if early_stop is None:
        return None
    decided = early_stop.decided or {}
    ran = state.recorded_count
    spent = float(aggregate.get("usage", {}).get("total", {}).get("cost_usd") or 0.0)
    per_item = spent / ran if ran else 0.0
    return {
        "decision": early_stop.decision,
        "decided_after_items": decided.get("decided_after_items"),
        "items_run": ran,
        "items_skipped": early_stop.skipped,
        "spend_saved_usd": round(per_item * early_stop.skipped, 6),
        "spend_saved_basis": SPEND_SAVED_BASIS,
        "paired_counts_at_decision": decided.get("paired_counts"),
        "paired_counts": early_stop.pairs,
        "e_value_regressed": decided.get("e_value_regressed"),
        "e_value_not_worse": decided.get("e_value_not_worse"),
        "threshold": decided.get("threshold", round(1.0 / early_stop.alpha, 9)),
        "margin": early_stop.margin,
        "alpha": early_stop.alpha,
        "method": early_stop.method,
        "method_reference": METHOD_REFERENCE,
        "seed": early_stop.seed,
    }


def stopped_reason(reason: dict[str, Any], block: dict[str, Any], item_count: int) -> None:
    """Make the regression gate's reason the sequential decision's, figures kept."""
    decision = block["decision"]
    evidence = block["e_value_regressed" if decision != NOT_WORSE else "e_value_not_worse"]
    reason["conclusion"] = decision
    reason["passed"] = decision == NOT_WORSE
    reason["stopped_early"] = True
    reason["explanation"] = (
        f"stopped early: after {block['decided_after_items']} of {item_count} items the "
        f"sequential test decided {decision.replace('_', ' ')} (e-value {evidence:.4g} >= "
        f"1/alpha = {block['threshold']:g}, margin -{block['margin']:g}; valid at any look); "
        f"{block['items_skipped']} items were skipped. Over the items that ran: "
        f"{reason['explanation']}"
    )
