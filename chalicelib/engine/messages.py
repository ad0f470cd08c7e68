"""The SQS messages of the engine: one fan-out message per run (chunk), and work messages
that each carry up to :data:`WORK_PER_MESSAGE` (run, item, trial) work items of one run.

A work message's body is ``{"run_id": ..., "shards"?: n, "work": [{"dataset_item_id", "trial",
"item"?}]}`` (``item`` is absent when the frozen item is too large to ride along; ``shards``,
the run's shard count, only when above one, so the worker's first read finds its keys).
Several work items per message is what keeps SQS calls per item low: one
``SendMessageBatch`` carries a fan-out page of 100 items, and one receive
hands a worker a whole batch.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator

from pydantic import BaseModel, ConfigDict, Field

from chalicelib import queues
from chalicelib.domain.runs import FrozenItem, WorkItem
from chalicelib.settings import get_settings

#: Work items per message: a worker's batch of ``ITEM_BATCH_MESSAGES`` messages then holds
#: at most 90 items, which one BatchGetItem reads and two transactions record.
WORK_PER_MESSAGE = 10
#: A message closes before its body passes this, so ten of them (one SendMessageBatch)
#: stay under SQS's 256 KB per batch call.
MESSAGE_BYTES = 24 * 1024


class FanoutMessage(BaseModel):
    """Freeze and enqueue the next chunk of a run, after ``after_key`` (None: from the start)."""

    run_id: str
    after_key: str | None = None
    counted: int = 0


class SettleSliceMessage(BaseModel):
    """Settle slice ``settle_slice`` (0-based) of the ``settle_slices`` a run's claimed
    settle was cut into (``engine.settle_slices``); rides the run queue."""

    model_config = ConfigDict(extra="forbid")

    run_id: str
    settle_slices: int = Field(ge=1)
    settle_slice: int = Field(ge=0)


def _work_entry(item: FrozenItem, trial: int) -> str:
    """One work item of a message, JSON-encoded; the item itself only when small enough."""
    carried = item.carried()
    head = json.dumps({"dataset_item_id": item.dataset_item_id, "trial": trial})
    if carried is not None:
        return f'{head[:-1]}, "item": {carried}}}'  # the item's JSON, not encoded again
    return head  # too large: the worker reads it from the run's frozen set


def _body(run_id: str, entries: list[str], shards: int = 1) -> str:
    sharded = f', "shards": {int(shards)}' if shards > 1 else ""
    return f'{{"run_id": {json.dumps(run_id)}{sharded}, "work": [{", ".join(entries)}]}}'


def work_messages(
    run_id: str, work: Iterable[tuple[FrozenItem, int]], shards: int = 1
) -> Iterator[tuple[str, int]]:
    """Encoded message bodies for ``work`` ((item, trial) pairs), each with its work count."""
    entries: list[str] = []
    size = 0
    for item, trial in work:
        entry = _work_entry(item, trial)
        if entries and (len(entries) == WORK_PER_MESSAGE or size + len(entry) > MESSAGE_BYTES):
            yield _body(run_id, entries, shards), len(entries)
            entries, size = [], 0
        entries.append(entry)
        size += len(entry) + 2
    if entries:
        yield _body(run_id, entries, shards), len(entries)


def item_work(items: Iterable[FrozenItem], trials: int) -> Iterator[tuple[FrozenItem, int]]:
    """Every (item, trial) pair of ``items``, in item order."""
    for item in items:
        for trial in range(1, trials + 1):
            yield item, trial


def decode_work(body: str) -> list[WorkItem]:
    """The work items of a message body (a single-item body of an earlier release too)."""
    raw = json.loads(body)
    if "work" not in raw:
        return [WorkItem.model_validate(raw)]
    run_id, shards = raw["run_id"], raw.get("shards", 1)
    return [
        WorkItem.model_validate({**entry, "run_id": run_id, "shards": shards})
        for entry in raw["work"]
    ]


def id_work_messages(
    run_id: str, work: Iterable[tuple[str, int, bool | None]], shards: int = 1
) -> Iterator[tuple[str, int]]:
    """Message bodies for work named by id alone (``(item id, trial, baseline passed)``):
    an early-stop run's shuffled work, whose items the worker reads by id."""
    entries: list[str] = []
    for dataset_item_id, trial, baseline_passed in work:
        entry = {"dataset_item_id": dataset_item_id, "trial": trial}
        if baseline_passed is not None:
            entry["baseline_passed"] = baseline_passed
        entries.append(json.dumps(entry))
        if len(entries) == WORK_PER_MESSAGE:
            yield _body(run_id, entries, shards), len(entries)
            entries = []
    if entries:
        yield _body(run_id, entries, shards), len(entries)


def send_id_work(run_id: str, work: Iterable[tuple[str, int, bool | None]], shards: int = 1) -> int:
    """Enqueue work named by id (see :func:`id_work_messages`). Returns how many were sent."""
    return _send_counted(id_work_messages(run_id, work, shards))


def send_fanout(message: FanoutMessage) -> None:
    queues.send(get_settings().run_queue, message.model_dump(mode="json"))


def is_settle_slice(body: dict[str, object]) -> bool:
    """Whether a run-queue message is a settle slice (else a fan-out message)."""
    return "settle_slice" in body


def send_settle_slices(run_id: str, slices: int, numbers: Iterable[int]) -> int:
    """One run-queue message per slice number, in SQS batches. Returns how many."""
    bodies = (
        SettleSliceMessage(
            run_id=run_id, settle_slices=slices, settle_slice=number
        ).model_dump_json()
        for number in numbers
    )
    return queues.send_many_encoded(get_settings().run_queue, bodies)


def send_work(run_id: str, work: Iterable[tuple[FrozenItem, int]], shards: int = 1) -> int:
    """Enqueue ``work`` in as few messages as fit. Returns how many work items were sent."""
    return _send_counted(work_messages(run_id, work, shards))


def _send_counted(messages: Iterable[tuple[str, int]]) -> int:
    """Send (body, work items in it) messages to the item queue; the work items sent."""
    counted = 0

    def bodies() -> Iterator[str]:
        nonlocal counted
        for body, count in messages:
            counted += count
            yield body

    queues.send_many_encoded(get_settings().item_queue, bodies())
    return counted
