"""Eval runs and their frozen item sets.

Every lifecycle transition is one conditional write on the run row, so two workers (or
a worker and the reaper, or a worker and a cancel) can never both win it:

- ``mark_running``: queued -> running, once.
- ``mark_fanout_done``: item set frozen and counted, once.
- ``claim_settle``: only when every item is recorded, once (or stolen after the grace
  period if the claimant died).
- ``settle``: running/queued -> terminal (completed, failed or cancelled), once.

``active`` (the sparse ``active_runs`` index) stays on a terminal row until its lifecycle
event was handed to the sinks, so the reaper can hand over an event a crash interrupted.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pynamodb.exceptions import DoesNotExist

from chalicelib import clock
from chalicelib.domain.runs import (
    ACTIVE_STATUSES,
    CANCELLED,
    QUEUED,
    RUNNING,
    EarlyStopState,
    EvalRun,
    EvalSnapshot,
    FrozenItem,
    RunState,
    headline_of,
)
from chalicelib.errors import ConcurrentUpdate, not_found
from chalicelib.store import run_counters
from chalicelib.store.base import serialized_writes
from chalicelib.store.models import EvalModel, RunModel
from chalicelib.store.run_items import run_item_row
from chalicelib.store.transactions import TxnRefused, labelled_transaction

ACTIVE_MARK = "1"
#: How many times a run create that lost a race on its eval's row is tried.
CREATE_ATTEMPTS = 4


# --- conversion -------------------------------------------------------------------------------


def run_from_row(model: RunModel) -> EvalRun:
    return EvalRun(
        id=model.id,
        eval_id=model.eval_id,
        agent_version=int(model.agent_version),
        decider_versions=model.decider_versions,
        status=model.status,
        baseline_run_id=model.baseline_run_id,
        trigger_id=model.trigger_id,
        aggregate_scores=model.aggregate_scores,
        passed=model.passed,
        verdict_reasons=model.verdict_reasons,
        failure_reason=model.failure_reason,
        failure_code=model.failure_code,
        item_count=int(model.item_count or 0),
        completed_count=int(model.completed_count or 0),
        errored_count=int(model.errored_count or 0),
        passed_count=int(model.passed_count or 0) if model.outcomes_counted else None,
        failed_count=int(model.failed_count or 0) if model.outcomes_counted else None,
        metadata=dict(model.metadata or {}),
        early_stop=_public_early_stop(_early_stop(model)),
        started_at=model.started_at,
        finished_at=model.finished_at,
        created_at=model.created_at,
    )


def state_from_row(model: RunModel, sums: run_counters.Sums | None = None) -> RunState:
    """The run as the engine reads it; ``sums``: a sharded run's counter rows, summed."""
    if sums is not None:
        fold_into(model, sums)
    return RunState(
        run=run_from_row(model),
        snapshot=EvalSnapshot.model_validate(model.eval_snapshot),
        tool_context=dict(model.tool_context or {}),
        causation=list(model.causation or []),
        fanout_done=bool(model.fanout_done),
        settle_claimed=bool(model.settle_claimed),
        spent_usd=float(model.spent_usd or 0),
        last_activity_at=model.last_activity_at,
        created_key=model.created_key,
        outcome_counts=_outcome_counts(model),
        early_stop=_early_stop(model),
        shards=shard_count_of(model),
    )


def shard_count_of(model: RunModel) -> int:
    return max(1, int(model.shards or 1))


def needs_counter_rows(model: RunModel) -> bool:
    """Whether the run's counters are on counter rows not yet folded onto the run row."""
    return shard_count_of(model) > 1 and not model.counters_folded


def fold_into(model: RunModel, sums: run_counters.Sums) -> None:
    for name in run_counters.COUNTER_NAMES:
        value = sums[name]
        setattr(model, name, value if name == "spent_usd" else int(value))
    if sums.last_activity_at and sums.last_activity_at > (model.last_activity_at or ""):
        model.last_activity_at = sums.last_activity_at


#: The run row's paired counters, by the name the paired table gives each.
PAIR_COUNTERS = run_counters.PAIR_COUNTER_NAMED


def _early_stop(model: RunModel) -> EarlyStopState | None:
    if not model.early_stop:
        return None
    return EarlyStopState(
        **model.early_stop,
        decision=model.stop_decision,
        decided=model.stop_detail,
        pairs={name: int(getattr(model, attr) or 0) for name, attr in PAIR_COUNTERS.items()},
        skipped=int(model.skipped_count or 0),
    )


def _public_early_stop(state: EarlyStopState | None) -> dict[str, Any] | None:
    """What a reader sees of an early-stop run while it runs (the settle adds the rest)."""
    if state is None:
        return None
    decided = state.decided or {}
    return {
        "decision": state.decision,
        "decided_after_items": decided.get("decided_after_items"),
        "items_skipped": state.skipped,
        "paired_counts": state.pairs,
        "method": state.method,
        "seed": state.seed,
        "margin": state.margin,
        "alpha": state.alpha,
    }


def _outcome_counts(model: RunModel) -> dict[str, int] | None:
    """Result rows per ``?outcome=`` (None: a run created before the counters)."""
    if not model.outcomes_counted:
        return None
    return {
        "passed": int(model.passed_count or 0),
        "failed": int(model.failed_count or 0),
        "errored": int(model.errored_count or 0),
    }


def _row(state: RunState) -> RunModel:
    run = state.run
    return RunModel(
        id=run.id,
        eval_id=run.eval_id,
        project_id=state.snapshot.project_id,
        status=run.status,
        agent_id=state.snapshot.agent_id,
        agent_version=run.agent_version,
        decider_versions=run.decider_versions,
        baseline_run_id=run.baseline_run_id,
        trigger_id=run.trigger_id,
        causation=state.causation or None,
        metadata=run.metadata,
        tool_context=state.tool_context or None,
        eval_snapshot=state.snapshot.model_dump(mode="json"),
        item_count=run.item_count,
        completed_count=0,
        errored_count=0,
        recorded_count=0,
        passed_count=0,
        failed_count=0,
        outcomes_counted=True,
        fanout_done=state.fanout_done,
        settle_claimed=False,
        started_at=run.started_at,
        created_at=run.created_at,
        created_key=state.created_key,
        last_activity_at=state.last_activity_at,
        active=ACTIVE_MARK,
        shards=state.shards if state.shards > 1 else None,
        **_early_stop_row(state.early_stop),
    )


def _early_stop_row(early_stop: EarlyStopState | None) -> dict[str, Any]:
    if early_stop is None:
        return {}
    counters = dict.fromkeys(PAIR_COUNTERS.values(), 0)
    settings = early_stop.model_dump(include={"seed", "margin", "alpha", "method"})
    return {"early_stop": settings, "skipped_count": 0, **counters}


# --- create and read --------------------------------------------------------------------------


def create_run(state: RunState, items: list[FrozenItem] | None = None) -> None:
    """Write a new run and count it on its eval's row, in one transaction; with ``items``
    (a sync run) its frozen set too.

    404 when the eval is gone by then (nothing is written). A transaction that lost a race
    with another write of the eval row (a run started beside it, an eval update) is tried
    again: it either applied whole or not at all.
    """
    row = _row(state)
    for attempt in range(CREATE_ATTEMPTS):
        try:
            _create_counted(row, state, items or [])
            return
        except TxnRefused as exc:
            if "eval" in exc.labels:
                raise not_found("eval", state.run.eval_id) from exc
            if _landed_on_retry(row):
                return
            raise
        except ConcurrentUpdate:
            if attempt == CREATE_ATTEMPTS - 1:
                raise
            time.sleep(random.uniform(0.005, 0.02) * 2**attempt)


def _create_counted(row: RunModel, state: RunState, items: list[FrozenItem]) -> None:
    with labelled_transaction() as txn:
        txn.save("run", row, condition=RunModel.id.does_not_exist())
        txn.update(
            "eval",
            EvalModel(id=state.run.eval_id),
            actions=[EvalModel.run_count.add(1)],
            condition=EvalModel.id.exists(),
        )
        for item in items:
            txn.save("item", run_item_row(state.id, item, state.shards))


def _landed_on_retry(row: RunModel) -> bool:
    """Whether a refused create is our own first attempt, landed before botocore retried.

    A retried TransactWriteItems (a timeout or 5xx after the write applied) meets its own
    row and fails ``does_not_exist``; the row's ``created_key`` (a stamp made per attempt)
    tells ours from another writer's run of the same id. The eval's count was added once,
    by the attempt that landed.
    """
    try:
        existing = RunModel.get(row.id, consistent_read=True)
    except DoesNotExist:
        return False
    return bool(existing.created_key == row.created_key)


def withdraw_run(run_id: str, eval_id: str) -> None:
    """Delete a queued run whose fan-out could not be sent (nothing of it ever ran), and
    take it off its eval's count in the same transaction (the run alone when the eval is
    gone)."""
    try:
        with labelled_transaction() as txn:
            txn.delete("run", RunModel(id=run_id), condition=RunModel.status == QUEUED)
            txn.update(
                "eval",
                EvalModel(id=eval_id),
                actions=[EvalModel.run_count.add(-1)],
                condition=EvalModel.id.exists(),
            )
    except TxnRefused as exc:
        if exc.labels != {"eval"}:
            raise
        with serialized_writes():
            RunModel(id=run_id).delete(condition=RunModel.status == QUEUED)


def find_run(run_id: str) -> RunState | None:
    """The run (a sharded one with its counter rows summed), or None."""
    try:
        model = RunModel.get(run_id, consistent_read=True)
    except DoesNotExist:
        return None
    if needs_counter_rows(model):
        return state_from_row(model, run_counters.read(run_id, shard_count_of(model)))
    return state_from_row(model)


def read_shards(run_id: str) -> int:
    """A run's shard count alone (one consistent GetItem of one attribute; 1 if none)."""
    try:
        model = RunModel.get(run_id, consistent_read=True, attributes_to_get=["id", "shards"])
    except DoesNotExist:
        return 1
    return shard_count_of(model)


def read_status(run_id: str) -> str | None:
    """The run's status alone (a consistent GetItem of one attribute); None if there is none.

    What a worker re-reads while it executes a run's items, to stop once it is cancelled.
    """
    try:
        return str(
            RunModel.get(run_id, consistent_read=True, attributes_to_get=["id", "status"]).status
        )
    except DoesNotExist:
        return None


@dataclass(frozen=True)
class WatchRead:
    """What a run watch re-reads of a run: its status, the results recorded, and (an
    early-stop run) its test's state."""

    status: str
    recorded: int
    early_stop: EarlyStopState | None


def read_watch(run_id: str) -> WatchRead | None:
    """The run's :class:`WatchRead` (one consistent GetItem of a few attributes; None if
    there is no run). A sharded run's counters (the paired counts among them) are on its
    counter rows until the settle claim folds them: one BatchGetItem more sums them."""
    attributes = ["id", "status", "early_stop", "stop_decision", "stop_detail", "skipped_count"]
    attributes += list(PAIR_COUNTERS.values())
    attributes += ["completed_count", "errored_count", "shards", "counters_folded"]
    try:
        model = RunModel.get(run_id, consistent_read=True, attributes_to_get=attributes)
    except DoesNotExist:
        return None
    if needs_counter_rows(model):
        fold_into(model, run_counters.read(run_id, shard_count_of(model)))
    recorded = int(model.completed_count or 0) + int(model.errored_count or 0)
    return WatchRead(str(model.status), recorded, _early_stop(model))


def get_run(run_id: str) -> RunState:
    state = find_run(run_id)
    if state is None:
        raise not_found("eval_run", run_id)
    return state


# --- transitions ------------------------------------------------------------------------------


def _conditional_update(run_id: str, actions: list[Any], condition: Any) -> bool:
    """Apply ``actions`` when ``condition`` holds; False (nothing written) when it does not."""
    with serialized_writes():
        return RunModel(id=run_id).update_if(actions, RunModel.id.exists() & condition)


def mark_running(run_id: str, shards: int = 1) -> bool:
    """queued -> running (fan-out started), recording the run's shard count (chosen from
    the items it counted, fixed from here on). False when the run is no longer queued."""
    now = clock.now_iso()
    actions = [
        RunModel.status.set(RUNNING),
        RunModel.started_at.set(now),
        RunModel.last_activity_at.set(now),
    ]
    if shards > 1:
        actions.append(RunModel.shards.set(shards))
    return _conditional_update(run_id, actions, RunModel.status == QUEUED)


def touch(run_id: str) -> None:
    """Record activity (fan-out progress) so the reaper does not take a busy run as abandoned."""
    _conditional_update(
        run_id,
        [RunModel.last_activity_at.set(clock.now_iso())],
        RunModel.status.is_in(*ACTIVE_STATUSES),
    )


def mark_fanout_done(run_id: str, item_count: int) -> bool:
    """Freeze the item count, once. False when another fan-out did it, or the run ended."""
    return _conditional_update(
        run_id,
        [
            RunModel.item_count.set(item_count),
            RunModel.fanout_done.set(True),
            RunModel.last_activity_at.set(clock.now_iso()),
        ],
        (RunModel.fanout_done == False) & (RunModel.status == RUNNING),  # noqa: E712
    )


def stop_early(run_id: str, decision: str, detail: dict[str, Any]) -> bool:
    """Record an early-stop run's decision, once; False when another look decided first or
    the run is no longer running (a cancel won: it stays cancelled)."""
    return _conditional_update(
        run_id,
        [
            RunModel.stop_decision.set(decision),
            RunModel.stop_detail.set(detail),
            RunModel.last_activity_at.set(clock.now_iso()),
        ],
        (RunModel.status == RUNNING) & RunModel.stop_decision.does_not_exist(),
    )


def claim_settle(
    run_id: str, stale_before: str | None = None, sums: run_counters.Sums | None = None
) -> bool:
    """Claim the right to settle a fully recorded run; exactly one caller gets True.

    With ``stale_before`` (the reaper), a claim whose holder went quiet before that
    moment may be taken over: the holder died between claiming and settling.
    ``sums``: a sharded run's counter rows as the caller summed them (consistently, after
    its own counting); the claim holds when they reach the item count, and writes them
    onto the run row (``counters_folded``): nothing adds to them after the last item.
    """
    unclaimed = RunModel.settle_claimed == False  # noqa: E712
    if stale_before is not None:
        unclaimed = unclaimed | (RunModel.last_activity_at < stale_before)
    actions: list[Any] = [
        RunModel.settle_claimed.set(True),
        RunModel.last_activity_at.set(clock.now_iso()),
    ]
    # At least, not equal: an early-stop run's work item both recorded (in flight) and
    # marked skipped (its redelivery after the decision) counts twice, and a recount racing
    # a late worker may count a row twice (settle.recount); neither may keep a fully
    # recorded run from settling. Any other run never passes the item count.
    if sums is None:
        complete = RunModel.recorded_count >= RunModel.item_count
    else:
        complete = RunModel.item_count <= int(sums["recorded_count"])
        actions += [
            getattr(RunModel, name).set(sums[name] if name == "spent_usd" else int(sums[name]))
            for name in run_counters.COUNTER_NAMES
        ]
        actions.append(RunModel.counters_folded.set(True))
    return _conditional_update(
        run_id,
        actions,
        (RunModel.status == RUNNING)
        & (RunModel.fanout_done == True)  # noqa: E712
        & complete
        & unclaimed,
    )


def release_settle_claim(run_id: str) -> None:
    """Undo a claim whose settle failed before settling the run."""
    _conditional_update(
        run_id, [RunModel.settle_claimed.set(False)], RunModel.status.is_in(*ACTIVE_STATUSES)
    )


def claim_failure(run_id: str, stale_before: str) -> bool:
    """The reaper's claim on a quiet run it is about to fail (same flag as the settle claim)."""
    return _conditional_update(
        run_id,
        [RunModel.settle_claimed.set(True), RunModel.last_activity_at.set(clock.now_iso())],
        RunModel.status.is_in(*ACTIVE_STATUSES) & (RunModel.last_activity_at < stale_before),
    )


def settle(
    run_id: str,
    status: str,
    *,
    aggregate_scores: dict[str, Any] | None = None,
    passed: bool | None = None,
    verdict_reasons: list[dict[str, Any]] | None = None,
    failure_reason: str | None = None,
    failure_code: str | None = None,
    event_pending: bool = True,
) -> bool:
    """Move an active run to a terminal ``status``, once; the tool_context secret goes with it.

    With ``event_pending`` the run stays in the ``active_runs`` index until
    :func:`event_delivered`, so a crash before the event leaves work the reaper can see.
    """
    now = clock.now_iso()
    actions: list[Any] = [
        RunModel.status.set(status),
        RunModel.finished_at.set(now),
        RunModel.last_activity_at.set(now),
        RunModel.tool_context.remove(),
        RunModel.aggregate_scores.set(aggregate_scores)
        if aggregate_scores is not None
        else RunModel.aggregate_scores.remove(),
        RunModel.headline.set(headline_of(aggregate_scores)),
        RunModel.passed.set(passed) if passed is not None else RunModel.passed.remove(),
        RunModel.verdict_reasons.set(verdict_reasons)
        if verdict_reasons is not None
        else RunModel.verdict_reasons.remove(),
    ]
    if failure_reason is not None:
        actions.append(RunModel.failure_reason.set(failure_reason))
    if failure_code is not None:
        actions.append(RunModel.failure_code.set(failure_code))
    if not event_pending:
        actions.append(RunModel.active.remove())
    return _conditional_update(run_id, actions, RunModel.status.is_in(*ACTIVE_STATUSES))


def cancel(run_id: str) -> bool:
    """queued/running -> cancelled. False when the run already reached a terminal state."""
    return settle(run_id, CANCELLED, event_pending=False)


def event_delivered(run_id: str) -> None:
    """The run's lifecycle event went to the sinks: it leaves the ``active_runs`` index."""
    _conditional_update(
        run_id, [RunModel.active.remove()], ~RunModel.status.is_in(*ACTIVE_STATUSES)
    )


def iter_active_run_ids(quiet_before: str | None = None) -> Iterator[str]:
    """Ids of runs still in the ``active_runs`` index, optionally only the quiet ones."""
    condition = None if quiet_before is None else RunModel.last_activity_at < quiet_before
    for model in RunModel.active_runs.query(ACTIVE_MARK, range_key_condition=condition):
        yield model.id
