"""SQS pollers that behave like Lambda's event source mapping with ReportBatchItemFailures.

One :class:`QueuePoller` per ``@app.on_sqs_message`` handler. Each of its worker threads
long-polls the queue, builds a Lambda-shaped SQS event and calls the handler directly
(``app.handler_map[name]``, the same object Lambda calls). The result is honoured the way
Lambda does: records listed in ``batchItemFailures`` stay on the queue and reappear after a
short visibility delay, the rest are deleted; a handler that raises, or a response naming a
record that is not in the batch, fails the whole batch. The queue's redrive policy moves a
record to its DLQ after ``maxReceiveCount`` receives, exactly as on AWS (moto emulates it).
"""

from __future__ import annotations

import base64
import logging
import math
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError, ConnectionClosedError, EndpointConnectionError
from chalice import Chalice
from chalice.app import SQSEventConfig
from chalice.local import LambdaContext

from chalicelib import aws, queues
from pawl.local.quiesce import Quiesce

log = logging.getLogger("pawl.local")

#: What a call to an endpoint that is not there raises (after botocore's own retries).
_UNREACHABLE = (EndpointConnectionError, ConnectionClosedError)
#: What a restarted stand-in answers before the runtime has recreated its resources.
_NOT_YET_CREATED = frozenset(
    {"AWS.SimpleQueueService.NonExistentQueue", "ResourceNotFoundException"}
)


def standin_gone(exc: BaseException) -> bool:
    """Whether ``exc`` is what the stand-in's death or restart looks like from here (worth a
    line, not a traceback: ``local/supervision.py`` is already bringing it back)."""
    while exc is not None:
        if isinstance(exc, _UNREACHABLE):
            return True
        if isinstance(exc, ClientError):
            return exc.response.get("Error", {}).get("Code") in _NOT_YET_CREATED
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
    return False


SQS_MAX_BATCH = 10
#: A worker Lambda's timeout, as seen through ``context.get_remaining_time_in_millis()``.
WORKER_TIMEOUT_MS = 900_000


@dataclass(frozen=True)
class SqsSource:
    """One ``@on_sqs_message`` registration: which handler reads which queue, in what batches."""

    handler_name: str
    queue: str
    batch_size: int
    #: Lambda's MaximumBatchingWindowInSeconds: how long to gather a batch of more than 10.
    batching_window_s: int = 0


def sqs_sources(app: Chalice) -> list[SqsSource]:
    sources = []
    for config in app.event_sources:
        if isinstance(config, SQSEventConfig):
            queue = config.queue or (config.queue_arn or "").rsplit(":", 1)[-1]
            sources.append(
                SqsSource(
                    config.name,
                    queue,
                    config.batch_size,
                    config.maximum_batching_window_in_seconds,
                )
            )
    return sources


# --- the Lambda side of the contract (pure) -----------------------------------------------


def _lambda_message_attributes(attributes: dict[str, Any]) -> dict[str, Any]:
    converted = {}
    for name, value in attributes.items():
        binary = value.get("BinaryValue")
        converted[name] = {
            "stringValue": value.get("StringValue"),
            "binaryValue": base64.b64encode(binary).decode("ascii") if binary else None,
            "stringListValues": value.get("StringListValues", []),
            "binaryListValues": [
                base64.b64encode(b).decode("ascii") for b in value.get("BinaryListValues", [])
            ],
            "dataType": value.get("DataType", "String"),
        }
    return converted


def build_sqs_event(messages: list[dict[str, Any]], queue_arn: str, region: str) -> dict[str, Any]:
    """A Lambda SQS event for ``messages`` as ``receive_message`` returned them."""
    return {
        "Records": [
            {
                "messageId": m["MessageId"],
                "receiptHandle": m["ReceiptHandle"],
                "body": m["Body"],
                "attributes": dict(m.get("Attributes", {})),
                "messageAttributes": _lambda_message_attributes(m.get("MessageAttributes", {})),
                "md5OfBody": m.get("MD5OfBody", ""),
                "eventSource": "aws:sqs",
                "eventSourceARN": queue_arn,
                "awsRegion": region,
            }
            for m in messages
        ]
    }


def failed_message_ids(result: Any, batch_ids: Iterable[str]) -> set[str]:
    """The records a handler's return value reports as failed.

    Mirrors Lambda with ReportBatchItemFailures: no report (or an empty list) means every
    record succeeded; an identifier that is empty or not in the batch fails them all.
    """
    ids = set(batch_ids)
    if not isinstance(result, dict) or not result.get("batchItemFailures"):
        return set()
    failures = result["batchItemFailures"]
    if not isinstance(failures, list):
        return ids
    failed = set()
    for entry in failures:
        identifier = entry.get("itemIdentifier") if isinstance(entry, dict) else None
        if not identifier or identifier not in ids:
            log.warning("batchItemFailures names %r, not in the batch: failing it all", identifier)
            return ids
        failed.add(identifier)
    return failed


# --- the poller (I/O) ---------------------------------------------------------------------


@dataclass
class PollerStats:
    batches: int = 0
    deleted: int = 0
    retried: int = 0
    handler_errors: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, deleted: int, retried: int, raised: bool) -> None:
        with self._lock:
            self.batches += 1
            self.deleted += deleted
            self.retried += retried
            self.handler_errors += int(raised)


class QueuePoller:
    """Worker threads that feed one queue's messages to one handler."""

    def __init__(
        self,
        app: Chalice,
        source: SqsSource,
        *,
        quiesce: Quiesce,
        workers: int = 1,
        retry_delay_s: int = 2,
        wait_s: int = 1,
        region: str = "us-east-1",
    ) -> None:
        self.app = app
        self.source = source
        self.workers = workers
        self.retry_delay_s = retry_delay_s
        self.wait_s = wait_s
        self.region = region
        self.stats = PollerStats()
        self._quiesce = quiesce
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        #: Batches being handled now; a stop waits for these, not for receives in flight.
        self._dispatching = 0
        self._dispatch_done = threading.Condition()
        self._queue_url = queues.queue_url(source.queue)
        self._queue_arn = aws.client("sqs").get_queue_attributes(
            QueueUrl=self._queue_url, AttributeNames=["QueueArn"]
        )["Attributes"]["QueueArn"]

    def start(self) -> None:
        for index in range(self.workers):
            thread = threading.Thread(
                target=self._run, name=f"sqs-{self.source.queue}-{index}", daemon=True
            )
            thread.start()
            self._threads.append(thread)

    def request_stop(self) -> None:
        """Receive no more batches (the runtime tells every poller before joining any)."""
        self._stop.set()

    def stop(self, timeout_s: float = 30.0) -> None:
        """Stop receiving; a batch being handled is finished first.

        A thread still inside a long poll is not waited for (up to ``wait_s`` or more, as
        the stand-in's receivers of one queue take turns): whatever that receive returns
        is not dispatched but handed back to the queue (visible again at once).
        """
        self._stop.set()
        with self._dispatch_done:
            self._dispatch_done.wait_for(lambda: self._dispatching == 0, timeout=timeout_s)
        self._threads.clear()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.poll_once()
            except Exception as exc:
                if self._stop.is_set():
                    return  # a receive that outlived the stop lost its endpoint: expected
                if standin_gone(exc):
                    # The stand-in died and is being restarted (local/supervision.py): one
                    # line per attempt, not a traceback per poller.
                    log.warning("poller for %s: %s; retrying", self.source.queue, exc)
                    self._stop.wait(1.0)
                    continue
                log.exception("poller for %s failed; retrying", self.source.queue)
                self._stop.wait(1.0)

    def _claim_dispatch(self) -> bool:
        with self._dispatch_done:
            if self._stop.is_set():
                return False
            self._dispatching += 1
            return True

    def _release_dispatch(self) -> None:
        with self._dispatch_done:
            self._dispatching -= 1
            self._dispatch_done.notify_all()

    def poll_once(self, wait_s: int | None = None) -> int:
        """Receive one batch and hand it to the handler. Returns how many records it held."""
        sqs = aws.client("sqs")
        messages = self._receive(sqs, self.wait_s if wait_s is None else wait_s)
        if not messages:
            return 0
        messages += self._fill_batch(sqs, len(messages))
        if not self._claim_dispatch():
            self._hand_back(sqs, messages)
            return 0
        try:
            self._dispatch(sqs, messages)
        finally:
            self._release_dispatch()
        return len(messages)

    def _receive(self, sqs: Any, wait_s: int, wanted: int = SQS_MAX_BATCH) -> list[dict[str, Any]]:
        received = sqs.receive_message(
            QueueUrl=self._queue_url,
            MaxNumberOfMessages=min(self.source.batch_size, SQS_MAX_BATCH, wanted),
            WaitTimeSeconds=wait_s,
            AttributeNames=["All"],
            MessageAttributeNames=["All"],
        )
        messages: list[dict[str, Any]] = received.get("Messages", [])
        return messages

    def _fill_batch(self, sqs: Any, have: int) -> list[dict[str, Any]]:
        """More records, as Lambda gathers a batch: until it is full or the window closes.

        SQS answers at most 10 per receive; a batch of more waits for up to the source's
        batching window (a long poll while the queue is empty, as Lambda's would). Without
        a window (batches of at most 10) the first receive is the batch.
        """
        more: list[dict[str, Any]] = []
        if not self.source.batching_window_s:
            return more  # no window: Lambda hands over what one receive returned
        deadline = time.monotonic() + self.source.batching_window_s
        while have + len(more) < self.source.batch_size and not self._stop.is_set():
            wanted = self.source.batch_size - have - len(more)
            got = self._receive(sqs, wait_s=0, wanted=wanted)
            if not got:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                # Whole seconds, as SQS takes them; a long poll answers as soon as a record
                # arrives, so only an empty queue waits (at most a second past the window).
                got = self._receive(sqs, wait_s=math.ceil(remaining), wanted=wanted)
                if not got:
                    break
            more += got
        return more

    def _dispatch(self, sqs: Any, messages: list[dict[str, Any]]) -> None:
        event = build_sqs_event(messages, self._queue_arn, self.region)
        ids = [m["MessageId"] for m in messages]
        raised = False
        with self._quiesce.working():
            try:
                result = self.app.handler_map[self.source.handler_name](event, self._context())
                failed = failed_message_ids(result, ids)
            except Exception as exc:
                if standin_gone(exc):
                    log.warning("handler %s: %s: the batch fails", self.source.handler_name, exc)
                else:
                    log.exception(
                        "handler %s raised: the whole batch fails", self.source.handler_name
                    )
                raised, failed = True, set(ids)
        done = [m for m in messages if m["MessageId"] not in failed]
        retry = [m for m in messages if m["MessageId"] in failed]
        self._delete(sqs, done)
        self._delay(sqs, retry)
        self.stats.add(len(done), len(retry), raised)

    def _context(self) -> LambdaContext:
        return LambdaContext(
            function_name=self.source.handler_name,
            memory_size=1024,
            max_runtime_ms=WORKER_TIMEOUT_MS,
        )

    def _delete(self, sqs: Any, messages: list[dict[str, Any]]) -> None:
        for start in range(0, len(messages), SQS_MAX_BATCH):  # 10 entries per call
            sqs.delete_message_batch(
                QueueUrl=self._queue_url,
                Entries=[
                    {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]}
                    for i, m in enumerate(messages[start : start + SQS_MAX_BATCH])
                ],
            )

    def _hand_back(self, sqs: Any, messages: list[dict[str, Any]]) -> None:
        """Records received after a stop was asked for: visible again now, not after the
        queue's visibility timeout (minutes for webhooks), so a restart picks them up at once.
        """
        try:
            self._set_visibility(sqs, messages, 0)
        except Exception:  # the stand-in may already be gone: the timeout then returns them
            log.info("could not hand %d records back to %s", len(messages), self.source.queue)

    def _delay(self, sqs: Any, messages: list[dict[str, Any]]) -> None:
        # Lambda leaves failed records invisible for the queue's whole visibility timeout;
        # locally a short delay gives a fast retry while keeping the receive count honest.
        self._set_visibility(sqs, messages, self.retry_delay_s)

    def _set_visibility(self, sqs: Any, messages: list[dict[str, Any]], seconds: int) -> None:
        for start in range(0, len(messages), SQS_MAX_BATCH):
            sqs.change_message_visibility_batch(
                QueueUrl=self._queue_url,
                Entries=[
                    {
                        "Id": str(i),
                        "ReceiptHandle": m["ReceiptHandle"],
                        "VisibilityTimeout": seconds,
                    }
                    for i, m in enumerate(messages[start : start + SQS_MAX_BATCH])
                ],
            )
