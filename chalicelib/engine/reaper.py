"""The reaper: nothing stays non-terminal forever.

Every minute it looks at the runs in the ``active_runs`` index whose last activity (a
recorded item, a fan-out chunk, a claim) is older than the grace period:

- a run whose every item has a result is settled normally (a worker died between
  recording the last item and settling, or its settle crashed); a large run's sliced
  settle is re-driven (the slices not stored yet, or the combine);
- an early-stop run whose test decided, with work neither recorded nor skipped (its
  messages were lost): that work is marked skipped, and the run settles completed;
- any other quiet run is failed with a reason, and ``eval_run.failed`` fires;
- a terminal run still in the index had its event interrupted: the event is delivered.

Keyed on last activity, not on age: a 100,000-item run that is still making progress
is never reaped. Every action is claimed with the same conditional update a worker
uses, so the reaper and a late worker can never both settle a run.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta

from chalicelib import clock
from chalicelib.domain.runs import ACTIVE_STATUSES, COMPLETED, RUN_STALLED, RunState
from chalicelib.engine import fanout, lifecycle, settle
from chalicelib.settings import get_settings
from chalicelib.store import runs

log = logging.getLogger("pawl.engine.reaper")


@dataclass
class ReapReport:
    settled: int = 0
    failed: int = 0
    events_delivered: int = 0


def quiet_cutoff() -> str:
    return clock.iso(clock.now() - timedelta(seconds=get_settings().run_grace_s))


def failure_reason(state: RunState, grace_s: int) -> str:
    if not state.fanout_done:
        return (
            f"no progress for {grace_s}s before the run's items were all enqueued "
            f"({state.recorded_count} recorded so far)"
        )
    return (
        f"no progress for {grace_s}s with {state.recorded_count} of {state.run.item_count} "
        "items recorded; the rest never finished"
    )


def reap() -> ReapReport:
    report = ReapReport()
    cutoff = quiet_cutoff()
    for run_id in list(runs.iter_active_run_ids(quiet_before=cutoff)):
        try:
            _reap_one(run_id, cutoff, report)
        except Exception:  # one broken run must not stop the sweep
            log.exception("reaper: run %s", run_id)
    return report


def _reap_one(run_id: str, cutoff: str, report: ReapReport) -> None:
    state = runs.find_run(run_id)
    if state is None:
        return
    if state.status not in ACTIVE_STATUSES:
        lifecycle.emit(state)
        report.events_delivered += 1
    elif state.last_activity_at >= cutoff:
        return  # a sharded run records on its counter rows: those say it is not quiet
    elif state.all_recorded or settle.recount(state):
        if settle.claim(run_id, state.shards, stale_before=cutoff) and settle.settle_claimed(
            run_id
        ):
            report.settled += 1
    elif state.fanout_done and state.early_stop is not None and state.early_stop.stopped:
        # A decided early-stop run whose remaining work was lost: that work would only be
        # skipped, so mark it skipped here (no call) and let the claim settle it.
        fanout.enqueue_missing(state)
        after = runs.find_run(run_id)
        if after is not None and after.status == COMPLETED:
            report.settled += 1
    elif runs.claim_failure(run_id, stale_before=cutoff) and lifecycle.fail(
        run_id, failure_reason(state, get_settings().run_grace_s), RUN_STALLED
    ):
        report.failed += 1
