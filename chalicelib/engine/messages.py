"""The SQS messages of the engine: one fan-out message per run (chunk), one per work item."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from pydantic import BaseModel

from chalicelib import queues
from chalicelib.domain.runs import FrozenItem, WorkItem
from chalicelib.settings import get_settings

#: A frozen item rides in its message only below this size; a larger one is read from
#: the run's frozen set by the worker (SQS bills per 64 KB and caps a batch's total).
INLINE_ITEM_BYTES = 16 * 1024


class FanoutMessage(BaseModel):
    """Freeze and enqueue the next chunk of a run, after ``after_key`` (None: from the start)."""

    run_id: str
    after_key: str | None = None
    counted: int = 0


def item_message(run_id: str, item: FrozenItem, trial: int) -> dict[str, Any]:
    body = WorkItem(run_id=run_id, dataset_item_id=item.dataset_item_id, trial=trial)
    encoded = body.model_dump(mode="json", exclude={"item"})
    if len(json.dumps(item.model_dump(mode="json"))) <= INLINE_ITEM_BYTES:
        encoded["item"] = item.model_dump(mode="json")
    return encoded


def item_messages(
    run_id: str, items: Iterable[FrozenItem], trials: int
) -> Iterator[dict[str, Any]]:
    for item in items:
        for trial in range(1, trials + 1):
            yield item_message(run_id, item, trial)


def send_fanout(message: FanoutMessage) -> None:
    queues.send(get_settings().run_queue, message.model_dump(mode="json"))


def send_items(bodies: Iterable[dict[str, Any]]) -> int:
    return queues.send_many(get_settings().item_queue, bodies)
