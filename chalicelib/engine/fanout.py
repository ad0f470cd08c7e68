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

An ``early_stop`` run is frozen the same way (an item a row, so a worker reads a batch's
items by id in one BatchGetItem) but nothing is sent while freezing: once the set is
frozen and counted, its work is enqueued in the order the run's seed shuffles it, each
work item with the baseline's outcome of its item (``engine.early_stop``). The same
enqueue is the recovery path; for a run whose test already decided it marks the missing
work skipped instead of sending it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

from chalicelib.domain.runs import ACTIVE_STATUSES, QUEUED, FrozenItem, RunState, result_key
from chalicelib.engine import early_stop, messages, settle
from chalicelib.settings import get_settings
from chalicelib.store import results, run_items, runs, skips
from chalicelib.store import shards as sharding

log = logging.getLogger("pawl.engine.fanout")

#: Dataset items read, frozen and enqueued at a time: one Query, eight BatchWriteItems and
#: (at one trial) two SendMessageBatch calls of ten messages of ten work items.
PAGE_ITEMS = 200
CHUNK_ITEMS = 2000
#: The run's first page is only as large as its concurrency (at least one message's
#: worth): its agent calls start once that page is frozen and sent, and a page of 200 held
#: them back by the 150 more rows written first (about 0.1 s locally).
FIRST_PAGE_MIN = 10


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
        size = page_size(after, snapshot.max_concurrency)
        page, last_key = run_items.dataset_items_page(
            snapshot.dataset_id, after, state.created_key, size
        )
        if page:
            if state.early_stop is None:
                run_items.put_run_items(state.id, page, state.shards)
                messages.send_work(
                    state.id, messages.item_work(page, snapshot.trials), state.shards
                )
            else:  # enqueued shuffled once the whole set is frozen
                run_items.put_run_items(state.id, page, state.shards, packed=False)
            counted += len(page)
            in_chunk += len(page)
            after = last_key
        if len(page) < size:
            break
        if in_chunk >= CHUNK_ITEMS:
            runs.touch(state.id)
            messages.send_fanout(
                messages.FanoutMessage(run_id=state.id, after_key=after, counted=counted)
            )
            return
    if runs.mark_fanout_done(state.id, counted * snapshot.trials):
        log.info("run %s: %d items x %d trials enqueued", state.id, counted, snapshot.trials)
    if state.early_stop is not None:
        enqueue_missing(runs.get_run(state.id))
        return
    # Every item may already be recorded (or there were none): the settle is ours to try.
    settle.maybe_settle(state.id, state.shards)


def page_size(after_key: str | None, max_concurrency: int) -> int:
    """Dataset items to read next: the first page of a run (no ``after_key``) fills its
    concurrency, every later one is a full page."""
    if after_key is None:
        return min(PAGE_ITEMS, max(FIRST_PAGE_MIN, max_concurrency))
    return PAGE_ITEMS


def missing_work(state: RunState) -> Iterator[tuple[FrozenItem, int]]:
    """(item, trial) pairs of the frozen set with no result."""
    recorded = set(results.iter_result_keys(state.id, state.shards))
    for page in run_items.iter_run_item_pages(state.id, state.shards):
        for item in page:
            for trial in range(1, state.snapshot.trials + 1):
                if result_key(item.dataset_item_id, trial) not in recorded:
                    yield item, trial


def _shuffled_missing(state: RunState) -> int:
    """An early-stop run's work with no result (nor skip mark): sent in the seed's order
    with each item's baseline outcome; marked skipped instead once the test decided."""
    assert state.early_stop is not None and state.run.baseline_run_id is not None
    shards = state.shards
    done = set(results.iter_result_keys(state.id, shards))
    done |= set(skips.iter_skipped_keys(state.id, shards))
    item_ids = [
        item.dataset_item_id
        for page in run_items.iter_run_item_pages(state.id, shards)
        for item in page
    ]
    trials = range(1, state.snapshot.trials + 1)
    if state.early_stop.stopped:
        missing = [result_key(i, t) for i in item_ids for t in trials]
        skipped = skips.skip(state.id, [key for key in missing if key not in done], shards)
        settle.maybe_settle(state.id, shards)
        return skipped
    passes = early_stop.baseline_passes(state.run.baseline_run_id, set(item_ids))
    work = (
        (item, trial, passes.get(item))
        for item in early_stop.shuffled(state.early_stop.seed, item_ids)
        for trial in trials
        if result_key(item, trial) not in done
    )
    sent = messages.send_id_work(state.id, work, shards)
    if sent:
        runs.touch(state.id)
    else:
        settle.maybe_settle(state.id, shards)
    return sent


def enqueue_missing(state: RunState) -> int:
    """Re-enqueue the work of a fanned-out run that has no result yet. Returns how many."""
    if state.early_stop is not None:
        return _shuffled_missing(state)
    sent = messages.send_work(state.id, missing_work(state), state.shards)
    if sent:
        runs.touch(state.id)
    else:
        settle.recount(state)  # every item has its row: counters that fell behind catch up
        settle.maybe_settle(state.id, state.shards)
    return sent
