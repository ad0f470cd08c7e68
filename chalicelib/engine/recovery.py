"""Re-drive runs that were in flight when a runtime stopped (or whose messages were lost).

Safe to call at any time, as often as wanted: a fan-out is idempotent and a worker
skips an item that already has a result, so re-driving only ever costs duplicate
messages, never duplicate results.
"""

from __future__ import annotations

import logging

from chalicelib.domain.runs import ACTIVE_STATUSES
from chalicelib.engine import fanout, lifecycle, messages
from chalicelib.store import runs

log = logging.getLogger("pawl.engine.recovery")


def redrive_run(run_id: str) -> bool:
    """Resume one run: re-send its fan-out, or re-enqueue its items without a result.

    A terminal run still in ``active_runs`` stopped between settling and handing its
    event to the sinks: the event is handed over now (its id is the run's, so a sink
    that already has it records nothing twice).
    """
    state = runs.find_run(run_id)
    if state is None:
        return False
    if state.status not in ACTIVE_STATUSES:
        lifecycle.emit(state)
        return True
    if not state.fanout_done:
        messages.send_fanout(messages.FanoutMessage(run_id=run_id))
    else:
        fanout.enqueue_missing(state)
    return True


def redrive_active_runs() -> int:
    """Re-drive every queued or running run. Returns how many were re-driven."""
    redriven = 0
    for run_id in list(runs.iter_active_run_ids()):
        try:
            redriven += redrive_run(run_id)
        except Exception:
            log.exception("recovery: run %s", run_id)
    return redriven
