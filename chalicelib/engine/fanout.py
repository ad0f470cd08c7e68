"""Fan-out: freeze a queued run's item set and enqueue its (item, trial) work, several per message.

The HTTP request that started the run only wrote the run and one fan-out message. A
fan-out worker pages the dataset by ``created_key`` up to the run's own creation (an item
added after the run started is not part of it), writes each page to the run's frozen set
and enqueues its work, and after :data:`CHUNK_ITEMS` items hands the rest to a
continuation message, so no single invocation nears the Lambda time limit.

Idempotent: a redelivered chunk rewrites the same frozen rows and re-sends the same
work (a worker skips what has a result); the item count is frozen once by a conditional
write. A fan-out message for a run whose fan-out already finished re-enqueues only the
work that has no result (the recovery path).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

from chalicelib.domain.runs import ACTIVE_STATUSES, QUEUED, FrozenItem, RunState, result_key
from chalicelib.engine import messages, settle
from chalicelib.settings import get_settings
from chalicelib.store import results, run_items, runs
from chalicelib.store import shards as sharding

log = logging.getLogger("pawl.engine.fanout")

#: Dataset items read, frozen and enqueued at a time: one Query, eight BatchWriteItems and
#: (at one trial) two SendMessageBatch calls of ten messages of ten work items.
PAGE_ITEMS = 200
CHUNK_ITEMS = 2000


def fan_out(message: messages.FanoutMessage) -> None:
    state = runs.find_run(message.run_id)
    if state is None or state.status not in ACTIVE_STATUSES:
        return  # cancelled (or gone) before its items were enqueued: nothing to do
    if state.fanout_done:
        enqueue_missing(state)
        return
    if state.status == QUEUED:
        shards = choose_shards(state)
        if not runs.mark_running(state.id, shards):
            return  # cancelled between the read and the transition
        state.shards = shards
    _freeze_chunk(state, message)


def choose_shards(state: RunState) -> int:
    """The run's shard count, from its work items (``store.shards``). Counted before anything
    of the run is written, and only as far as the largest count needs: a dataset of a
    million items is counted to ``PAWL_RUN_SHARD_ITEMS x PAWL_RUN_MAX_SHARDS``."""
    settings = get_settings()
    if settings.run_max_shards <= 1:
        return 1
    trials = max(1, state.snapshot.trials)
    cap = -(-settings.run_shard_items * settings.run_max_shards // trials)
    items = run_items.count_dataset_items(state.snapshot.dataset_id, state.created_key, cap)
    return sharding.shard_count(items * trials)


def _freeze_chunk(state: RunState, message: messages.FanoutMessage) -> None:
    snapshot = state.snapshot
    after, counted, in_chunk = message.after_key, message.counted, 0
    while True:
        page, last_key = run_items.dataset_items_page(
            snapshot.dataset_id, after, state.created_key, PAGE_ITEMS
        )
        if page:
            run_items.put_run_items(state.id, page, state.shards)
            messages.send_work(state.id, messages.item_work(page, snapshot.trials), state.shards)
            counted += len(page)
            in_chunk += len(page)
            after = last_key
        if len(page) < PAGE_ITEMS:
            break
        if in_chunk >= CHUNK_ITEMS:
            runs.touch(state.id)
            messages.send_fanout(
                messages.FanoutMessage(run_id=state.id, after_key=after, counted=counted)
            )
            return
    if runs.mark_fanout_done(state.id, counted * snapshot.trials):
        log.info("run %s: %d items x %d trials enqueued", state.id, counted, snapshot.trials)
    # Every item may already be recorded (or there were none): the settle is ours to try.
    settle.maybe_settle(state.id, state.shards)


def missing_work(state: RunState) -> Iterator[tuple[FrozenItem, int]]:
    """(item, trial) pairs of the frozen set with no result."""
    recorded = set(results.iter_result_keys(state.id, state.shards))
    for page in run_items.iter_run_item_pages(state.id, state.shards):
        for item in page:
            for trial in range(1, state.snapshot.trials + 1):
                if result_key(item.dataset_item_id, trial) not in recorded:
                    yield item, trial


def enqueue_missing(state: RunState) -> int:
    """Re-enqueue the work of a fanned-out run that has no result yet. Returns how many."""
    sent = messages.send_work(state.id, missing_work(state), state.shards)
    if sent:
        runs.touch(state.id)
    else:
        settle.recount(state)  # every item has its row: counters that fell behind catch up
        settle.maybe_settle(state.id, state.shards)
    return sent
