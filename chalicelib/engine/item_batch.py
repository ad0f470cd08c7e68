"""A batch of work items: the steps every executed item goes through, sync or queued.

Per run in the batch, at steady state: one BatchGetItem that reads the run and which of
the batch's results already exist, the executions (concurrently), and TransactWriteItems
that record the results with their generations and the counters as they finish
(``engine.batch_recorder``: a batch of fast items in one, a slow batch in a few, so the
run shows its progress). The counter update is guarded so that it also says whether the
run may now be fully recorded; only then (or when a redelivery met recorded items) does
the worker make the conditional update that claims the settle.

- A run that is cancelled or already terminal: its items are dropped (acknowledged).
- A run cancelled (or ended) while its batch executes: items not started yet are dropped,
  nothing is recorded for them; items in flight finish and are recorded, an item whose
  agent call finished after the cancel unscored (``engine.run_watch``, ``execute_item``).
- An item whose result exists (a redelivery): acknowledged without calling the agent.
- An item that raised for a reason of pawl's own: reported failed, so SQS redelivers
  it; on its last receive it is recorded as errored instead, so the run can settle.
- A run whose ``max_cost_usd`` is spent: items not yet started are recorded as not
  started (``engine.budget``); items in flight finish.
- An ``early_stop`` run whose sequential test decided (at the batch's read, or at a re-read
  of its watch): items not started are dropped as for a cancel, and marked skipped
  (``store.skips``) so the run settles once what was in flight is recorded.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from chalicelib.domain.runs import ACTIVE_STATUSES, ResultRecord, RunState, WorkItem
from chalicelib.engine import concurrency, early_stop, execute_item, run_watch, settle
from chalicelib.engine.batch_recorder import BatchRecorder
from chalicelib.engine.budget import Budget
from chalicelib.engine.context import RunContext, load_context
from chalicelib.store import batch_reads, results, run_items, skips

log = logging.getLogger("pawl.engine.item_batch")


@dataclass
class ReceivedWork:
    """One work item as the item queue handed it over: ``final`` on its last allowed receive."""

    work: WorkItem
    final: bool = False


@dataclass
class BatchReport:
    """What happened to a batch; ``failed`` holds positions in the received list."""

    failed: set[int] = field(default_factory=set)
    recorded: int = 0
    skipped: int = 0
    #: Not started because the run was cancelled (or ended) while the batch executed.
    dropped: int = 0
    #: Work items of an early-stopped run marked skipped by this batch (new markers).
    early_stopped: int = 0


def process(received: list[ReceivedWork]) -> BatchReport:
    """Execute and record a batch; positions of items to redeliver are in ``report.failed``."""
    report = BatchReport()
    by_run: dict[str, list[int]] = {}
    for position, receipt in enumerate(received):
        by_run.setdefault(receipt.work.run_id, []).append(position)
    for run_id, positions in by_run.items():
        try:
            _process_run(run_id, [(p, received[p]) for p in positions], report)
        except Exception:
            log.exception("run %s: batch of %d items failed", run_id, len(positions))
            report.failed.update(positions)
    return report


def _process_run(run_id: str, batch: list[tuple[int, ReceivedWork]], report: BatchReport) -> None:
    shards = max(d.work.shards for _, d in batch)
    state, existing = batch_reads.run_and_existing_results(
        run_id, [d.work.result_key for _, d in batch], shards
    )
    if state is None or state.status not in ACTIVE_STATUSES:
        report.skipped += len(batch)  # cancelled or settled: outstanding work is dropped
        return
    todo = _first_of_each(batch, existing)
    report.skipped += len(batch) - len(todo)
    stop = state.early_stop
    if stop is not None and early_stop.look(run_id, stop, state.recorded_count):
        # Decided: nothing of this batch starts, and each of its items is marked skipped.
        run_watch.note_stopped(run_id)
        report.skipped += len(todo)
        _skip(state, [receipt.work.result_key for _, receipt in todo], report)
        return
    _fill_frozen_items(state, todo)
    may_settle = False
    if todo:
        dropped: list[str] = []
        outcome = _execute_and_record(state, todo, report, dropped)
        report.recorded += len(outcome.recorded)
        report.skipped += len(outcome.duplicates)
        may_settle = outcome.may_settle_run
        if dropped:
            _skip(state, dropped, report)
            return
    if may_settle or existing:
        # A redelivery may be the only trace of a worker that recorded the last item
        # and died before claiming: try the claim whenever a batch met recorded items.
        item_count = state.run.item_count if state.fanout_done else None
        settle.maybe_settle(run_id, state.shards, item_count)


def _skip(state: RunState, result_keys: list[str], report: BatchReport) -> None:
    """Mark an early-stopped run's work skipped; the marks may complete the set: claim."""
    counter = random.randrange(state.shards) if state.shards > 1 else 0
    report.early_stopped += skips.skip(state.id, result_keys, state.shards, counter)
    settle.maybe_settle(state.id, state.shards)


def _first_of_each(
    batch: list[tuple[int, ReceivedWork]], existing: set[str]
) -> list[tuple[int, ReceivedWork]]:
    """The received work items to execute: not yet recorded, and one per (item, trial) in the batch.

    SQS may put two copies of one message in the same batch; the second is acknowledged
    with the first (one transaction may not write the same row twice anyway).
    """
    seen = set(existing)
    todo = []
    for position, receipt in batch:
        if receipt.work.result_key not in seen:
            seen.add(receipt.work.result_key)
            todo.append((position, receipt))
    return todo


def _fill_frozen_items(state: RunState, todo: list[tuple[int, ReceivedWork]]) -> None:
    """Items too large for a message are read from the run's frozen set (one BatchGetItem)."""
    missing = [d.work.dataset_item_id for _, d in todo if d.work.item is None]
    if not missing:
        return
    frozen = run_items.batch_get_run_items(state.id, missing, state.shards)
    for _, receipt in todo:
        if receipt.work.item is None:
            receipt.work.item = frozen.get(receipt.work.dataset_item_id)


def _execute_and_record(
    state: RunState,
    todo: list[tuple[int, ReceivedWork]],
    report: BatchReport,
    early_stopped: list[str],
) -> results.RecordOutcome:
    """Execute the items at the run's concurrency, recording each record as it comes.

    The result keys of the items dropped because the run stopped early go to
    ``early_stopped`` (a cancelled run's dropped items leave no trace)."""
    progress = results.RunProgress(state.fanout_done, state.run.item_count)
    with (
        run_watch.watching(state.id, state.status, state.early_stop) as watch,
        BatchRecorder(state.id, progress, shards=state.shards) as recorder,
    ):
        ctx = load_context(state, should_continue=watch.active)
        budget = Budget(state.snapshot.max_cost_usd, state.spent_usd)
        outcomes = concurrency.run_all(
            state.id,
            state.snapshot.max_concurrency,
            [_task(ctx, r, budget, recorder) for _, r in todo],
            should_continue=watch.active,  # a cancelled run's calls are not retried
            agent=agent_key(state),
        )
        for (position, receipt), outcome in zip(todo, outcomes, strict=True):
            if isinstance(outcome, ResultRecord):
                continue  # recorded as it finished
            if outcome is None:
                report.dropped += 1
                if watch.stopped and watch.status in ACTIVE_STATUSES:
                    early_stopped.append(receipt.work.result_key)
                continue
            log.error("item execution failed", exc_info=outcome)
            work = receipt.work
            if receipt.final and work.item is not None:
                reason = f"The item could not be executed: {type(outcome).__name__}: {outcome}"
                recorder.add(execute_item.errored_record(ctx, work.item, work.trial, reason))
            else:
                report.failed.add(position)
        return recorder.close()


def agent_key(state: RunState) -> str:
    """Whose window a run resumes (``engine.concurrency``): its agent at its version, whatever
    the run; a new version may be a different deployment, so it learns afresh."""
    return f"{state.snapshot.agent_id}@{state.run.agent_version}"


def _task(
    ctx: RunContext, receipt: ReceivedWork, budget: Budget, recorder: BatchRecorder
) -> Callable[[], ResultRecord | None]:
    """One item: dropped (None) once the run has ended, else executed and handed to the
    recorder; an item the spend guard does not start is recorded as not started."""
    work = receipt.work

    def run() -> ResultRecord | None:
        if work.item is None:
            raise LookupError(
                f"item {work.dataset_item_id} is not in the frozen set of {work.run_id}"
            )
        if not ctx.should_continue():
            return None  # outstanding work of a cancelled run: dropped, not recorded
        if budget.exhausted():
            record = execute_item.not_started_record(ctx, work.item, work.trial, budget.refusal())
        else:
            record = execute_item.execute(ctx, work.item, work.trial)
            budget.charge(record)
        record.baseline_passed = work.baseline_passed
        recorder.add(record)
        return record

    return run
