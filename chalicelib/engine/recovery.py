"""Re-drive runs that were in flight when a runtime stopped (or whose messages were lost).

Safe to call at any time, as often as wanted: a fan-out is idempotent and a worker
skips an item that already has a result, so re-driving only ever costs duplicate
messages, never duplicate results.
"""

from __future__ import annotations

import logging

from chalicelib import clock
from chalicelib.domain.runs import ACTIVE_STATUSES
from chalicelib.engine import fanout, lifecycle, messages, settle
from chalicelib.store import runs

log = logging.getLogger("pawl.engine.recovery")


def redrive_run(run_id: str, after_restart: bool = False) -> bool:
    """Resume one run: re-send its fan-out, or re-enqueue its items without a result.

    A terminal run still in ``active_runs`` stopped between settling and handing its
    event to the sinks: the event is handed over now (its id is the run's, so a sink
    that already has it records nothing twice). ``after_restart``: no worker of the
    previous process is alive, so a settle claimed by one is taken over at once instead
    of after the reaper's grace period.
    """
    state = runs.find_run(run_id)
    if state is None:
        return False
    if state.status not in ACTIVE_STATUSES:
        lifecycle.emit(state)
        return True
    if not state.fanout_done:
        messages.send_fanout(messages.FanoutMessage(run_id=run_id))
        return True
    if after_restart and settle.recount(state, complete_only=False):
        # Rows its workers wrote but did not live to count (no worker of it is left).
        state = runs.get_run(run_id)
    if after_restart and state.all_recorded:
        if settle.claim(run_id, state.shards, stale_before=clock.now_iso()):
            settle.settle_claimed(run_id)
    else:
        fanout.enqueue_missing(state)
    return True


def redrive_active_runs(after_restart: bool = False) -> int:
    """Re-drive every queued or running run. Returns how many were re-driven."""
    redriven = 0
    for run_id in list(runs.iter_active_run_ids()):
        try:
            redriven += redrive_run(run_id, after_restart)
        except Exception:
            log.exception("recovery: run %s", run_id)
    return redriven
