"""Terminal transitions of a run and the one lifecycle event each completed/failed run emits.

A transition is one conditional write (``store.runs.settle``): of a settle, a reaper
failure and a cancel racing each other, exactly one wins, and only the winner of a
completed/failed transition emits. The event is handed to the sinks *after* the write,
and the run leaves the ``active_runs`` index only once that is done, so a crash in
between leaves the run where the reaper delivers the event late rather than never.
Event ids are derived from the run, so a sink can recognise a repeat.
"""

from __future__ import annotations

import logging
from typing import Any

from chalicelib import clock
from chalicelib.domain.events import LifecycleEvent
from chalicelib.domain.runs import (
    BUDGET_EXCEEDED,
    CANCELLED,
    COMPLETED,
    EVENT_COMPLETED,
    EVENT_FAILED,
    FAILED,
    EvalRun,
    RunState,
    status_on_wire,
)
from chalicelib.engine import bus, run_watch
from chalicelib.errors import ValidationFailed
from chalicelib.plugins.manager import plugins
from chalicelib.store import runs

log = logging.getLogger("pawl.engine.lifecycle")

_EVENTS = {COMPLETED: EVENT_COMPLETED, FAILED: EVENT_FAILED}


def settle_completed(
    run_id: str,
    aggregate_scores: dict[str, Any],
    passed: bool | None,
    verdict_reasons: list[dict[str, Any]],
) -> bool:
    """Settle a fully recorded run as ``completed`` and emit ``eval_run.completed`` (once)."""
    settled = runs.settle(
        run_id,
        COMPLETED,
        aggregate_scores=aggregate_scores,
        passed=passed,
        verdict_reasons=verdict_reasons,
    )
    if settled:
        emit(runs.get_run(run_id))
    return settled


def settle_over_budget(run_id: str, aggregate_scores: dict[str, Any], reason: str) -> bool:
    """Settle a fully recorded run whose spend guard left items unstarted: ``failed`` with
    ``BUDGET_EXCEEDED``, keeping the aggregates of what ran; no verdict. Emits once."""
    settled = runs.settle(
        run_id,
        FAILED,
        aggregate_scores=aggregate_scores,
        failure_reason=reason,
        failure_code=BUDGET_EXCEEDED,
    )
    if settled:
        log.warning("run %s failed: %s", run_id, reason)
        emit(runs.get_run(run_id))
    return settled


def fail(run_id: str, reason: str, code: str | None = None) -> bool:
    """Settle a run that cannot complete as ``failed`` and emit ``eval_run.failed`` (once)."""
    settled = runs.settle(run_id, FAILED, failure_reason=reason, failure_code=code)
    if settled:
        run_watch.note_ended(run_id, FAILED)
        log.warning("run %s failed: %s", run_id, reason)
        emit(runs.get_run(run_id))
    return settled


def cancel(run_id: str) -> EvalRun:
    """Cancel a queued or running run: results kept, aggregates null, no event.

    Its batches executing in this process start no new call from now on; those in other
    processes within ``PAWL_RUN_WATCH_REFRESH_S`` (they re-read the status).
    """
    if runs.cancel(run_id):
        run_watch.note_ended(run_id, CANCELLED)
    else:
        state = runs.get_run(run_id)
        raise ValidationFailed(
            f"run {run_id} already finished ({status_on_wire(state.status)}); only a queued or "
            "running run can be cancelled",
            code="EVAL_RUN_NOT_CANCELLABLE",
            status=status_on_wire(state.status),
        )
    return runs.get_run(run_id).run


def emit(state: RunState) -> None:
    """Hand the terminal run's event to every sink, then take it out of ``active_runs``."""
    event_name = _EVENTS.get(state.status)
    if event_name is None:  # cancelled (or not terminal): nothing to announce
        if state.status == CANCELLED:
            runs.event_delivered(state.id)
        return
    event = LifecycleEvent(
        id=f"evt_{state.id.removeprefix('evrun_')}_{state.status}",
        event=event_name,
        project_id=state.project_id,
        resource_type="eval_run",
        resource_id=state.id,
        data=state.run.model_dump(mode="json"),
        timestamp=clock.now_iso(),
    )
    failed_sinks = plugins().deliver_event(event)
    if failed_sinks:
        log.error("run %s: sinks %s failed on %s", state.id, failed_sinks, event_name)
    bus.publish(event, state.causation)
    runs.event_delivered(state.id)
