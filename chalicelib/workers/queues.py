"""SQS handlers of the run engine: fan-out (run queue) and item work (item queue).

Decode the Lambda event, call the engine, report partial failures. The item handler
returns ``{"batchItemFailures": [...]}``: infra enables ``ReportBatchItemFailures`` on
its event source mapping, so only the failed messages are redelivered.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from chalice import Blueprint
from chalice.app import SQSEvent, SQSRecord
from pydantic import ValidationError

from chalicelib.engine import fanout, item_batch, messages, settle_slices
from chalicelib.infra.definitions import MAX_RECEIVE_COUNT
from chalicelib.settings import get_settings

log = logging.getLogger("pawl.workers.queues")

bp = Blueprint(__name__)

#: Messages per batch. Each carries up to ``messages.WORK_PER_MESSAGE`` (10) work items, so
#: a batch holds at most 90: one BatchGetItem reads the run and the batch's result keys
#: (91 of DynamoDB's 100 keys) and two TransactWriteItems of up to 45 items record them
#: (a result and its generation each, and the run's counters: 91 of 100 operations).
ITEM_BATCH_MESSAGES = 9
#: Work items in a full batch.
ITEM_BATCH_SIZE = ITEM_BATCH_MESSAGES * messages.WORK_PER_MESSAGE
#: Lambda takes batches of up to 10 messages without a batching window: a worker starts
#: on what one receive returns instead of waiting to fill the batch.
ITEM_BATCHING_WINDOW_S = 0


def _message_id(record: SQSRecord) -> str:
    return str(record.to_dict().get("messageId", ""))


def _receive_count(record: SQSRecord) -> int:
    attributes = record.to_dict().get("attributes") or {}
    return int(attributes.get("ApproximateReceiveCount") or 1)


@bp.on_sqs_message(queue=get_settings().run_queue, batch_size=1)
def fan_out_run(event: SQSEvent) -> None:
    """Freeze a queued run's items and enqueue them (one chunk per message); or settle
    one slice of a large run's settle (``engine.settle_slices``)."""
    for record in event:
        body = json.loads(record.body)
        if messages.is_settle_slice(body):
            settle_slices.settle_slice(messages.SettleSliceMessage.model_validate(body))
        else:
            fanout.fan_out(messages.FanoutMessage.model_validate(body))


def _decode(record: SQSRecord) -> list[item_batch.ReceivedWork] | None:
    try:
        work = messages.decode_work(record.body)
    except (ValueError, KeyError, TypeError, ValidationError):
        log.error("item queue: undecodable message %s", _message_id(record))
        return None
    final = _receive_count(record) >= MAX_RECEIVE_COUNT
    return [item_batch.ReceivedWork(item, final=final) for item in work]


@bp.on_sqs_message(
    queue=get_settings().item_queue,
    batch_size=ITEM_BATCH_MESSAGES,
    maximum_batching_window_in_seconds=ITEM_BATCHING_WINDOW_S,
)
def execute_items(event: SQSEvent) -> dict[str, Any]:
    """Execute a batch of work messages; report the ones to redeliver.

    A message is redelivered whole when any of its work items failed; its other items
    are recorded by then, so the redelivery acknowledges them without executing them.
    """
    failures: list[str] = []
    received: list[item_batch.ReceivedWork] = []
    owner: list[str] = []  # the message id of each received work item, by position
    for record in event:
        work = _decode(record)
        if work is None:
            failures.append(_message_id(record))
            continue
        received += work
        owner += [_message_id(record)] * len(work)
    report = item_batch.process(received)
    failures += dict.fromkeys(owner[position] for position in sorted(report.failed))
    return {"batchItemFailures": [{"itemIdentifier": message_id} for message_id in failures]}
