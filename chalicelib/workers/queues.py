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

from chalicelib.domain.runs import WorkItem
from chalicelib.engine import fanout, item_batch, messages
from chalicelib.infra.definitions import MAX_RECEIVE_COUNT
from chalicelib.settings import get_settings

log = logging.getLogger("pawl.workers.queues")

bp = Blueprint(__name__)

#: Work items per batch. A batch starts with one BatchGetItem (the run and the batch's
#: result keys: 99 of DynamoDB's 100 keys) and records in TransactWriteItems of up to 49
#: items (a result and its generation each, and the run's counters: 99 of 100 operations),
#: so 98 is the largest batch that costs one read and two transactions.
ITEM_BATCH_SIZE = 98
#: Lambda takes a batch larger than 10 only with a batching window of at least 1 s: it
#: waits up to that long for a full batch (the local pollers do the same).
ITEM_BATCHING_WINDOW_S = 1


def _message_id(record: SQSRecord) -> str:
    return str(record.to_dict().get("messageId", ""))


def _receive_count(record: SQSRecord) -> int:
    attributes = record.to_dict().get("attributes") or {}
    return int(attributes.get("ApproximateReceiveCount") or 1)


@bp.on_sqs_message(queue=get_settings().run_queue, batch_size=1)
def fan_out_run(event: SQSEvent) -> None:
    """Freeze a queued run's items and enqueue them (one chunk per message)."""
    for record in event:
        fanout.fan_out(messages.FanoutMessage.model_validate_json(record.body))


def _decode(record: SQSRecord) -> item_batch.ReceivedWork | None:
    try:
        item = WorkItem.model_validate(json.loads(record.body))
    except (ValueError, ValidationError):
        log.error("item queue: undecodable message %s", _message_id(record))
        return None
    return item_batch.ReceivedWork(item, final=_receive_count(record) >= MAX_RECEIVE_COUNT)


@bp.on_sqs_message(
    queue=get_settings().item_queue,
    batch_size=ITEM_BATCH_SIZE,
    maximum_batching_window_in_seconds=ITEM_BATCHING_WINDOW_S,
)
def execute_items(event: SQSEvent) -> dict[str, Any]:
    """Execute a batch of (run, item, trial) messages; report the ones to redeliver."""
    records = list(event)
    decoded = [(record, _decode(record)) for record in records]
    failures = [_message_id(r) for r, d in decoded if d is None]
    valid = [(r, d) for r, d in decoded if d is not None]
    report = item_batch.process([d for _, d in valid])
    failures += [_message_id(valid[position][0]) for position in sorted(report.failed)]
    return {"batchItemFailures": [{"itemIdentifier": message_id} for message_id in failures]}
