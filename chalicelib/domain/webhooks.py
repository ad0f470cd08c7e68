"""Webhook and delivery types as the API shows them, and the event names one may subscribe to."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from chalicelib.domain.base import Resource

RUN_COMPLETED = "eval_run.completed"
RUN_FAILED = "eval_run.failed"
ALL_RUN_EVENTS = "eval_run.*"
#: The SOAT module page's spelling of the run namespace (``eval_runs.completed``): a
#: subscription may use it; events are always emitted and delivered as ``eval_run.*``.
SOAT_RUN_NAMESPACE = "eval_runs."
RUN_NAMESPACE = "eval_run."

#: What ``events`` may list: one of the two lifecycle events, or the wildcard for both, in
#: either spelling.
EventPattern = Literal[
    "eval_run.*",
    "eval_run.completed",
    "eval_run.failed",
    "eval_runs.*",
    "eval_runs.completed",
    "eval_runs.failed",
    "agents.release.promoted",
    "agents.release.aborted",
]


def canonical_event(name: str) -> str:
    """An event name or pattern in pawl's spelling: ``eval_runs.x`` is ``eval_run.x``."""
    if name.startswith(SOAT_RUN_NAMESPACE):
        return RUN_NAMESPACE + name.removeprefix(SOAT_RUN_NAMESPACE)
    return name


#: A delivery's status on the wire (SOAT's enum). Rows spell success ``succeeded``.
DeliveryStatus = Literal["pending", "success", "failed"]

#: Attempts per delivery, the first included.
MAX_ATTEMPTS = 3


class Webhook(Resource):
    id: str
    project_id: str
    name: str
    description: str | None = None
    url: str
    events: list[str]
    #: False: no event is delivered to it (new deliveries are not recorded, pending ones
    #: fail unsent, a redelivery is refused) until it is set active again.
    active: bool = True
    #: SOAT's policy gating of deliveries, which pawl does not build: always null.
    policy_id: None = None
    created_at: str
    updated_at: str


class CreatedWebhook(Webhook):
    """The webhook with its signing secret: what create and rotate-secret answer."""

    secret: str


class WebhookSecret(Resource):
    """What ``GET /api/v1/webhooks/{webhook_id}/secret`` answers."""

    webhook_id: str
    secret: str


class Delivery(Resource):
    id: str
    webhook_id: str
    event_type: str
    #: The envelope as sent (the stored body, decoded).
    payload: dict[str, Any]
    status: DeliveryStatus
    #: HTTP status of the last attempt's answer; null when no answer came (or no attempt).
    status_code: int | None = None
    attempts: int
    last_attempt_at: str | None = None
    next_attempt_at: str | None = None
    #: The start of the last answer's body (pawl keeps its first 2,000 characters).
    response_body: str | None = None
    #: Why the last attempt failed, or why the delivery was not sent (a pawl addition).
    last_error: str | None = None
    #: The delivery this one re-sends (``redeliver``); null for an event's own (pawl's).
    redelivery_of: str | None = None
    created_at: str
    updated_at: str


#: How much of a receiver's answer a delivery keeps (``response_body``).
MAX_RESPONSE_BODY_CHARS = 2000


@dataclass(frozen=True)
class AttemptAnswer:
    """What one HTTP attempt produced: a status code and the start of the answer's body,
    or an error when there was no answer."""

    status_code: int | None
    error: str | None
    body: str | None = None

    @property
    def ok(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


@dataclass(frozen=True)
class WebhookTarget:
    """What the sink and the delivery worker need of a webhook (secret included)."""

    id: str
    project_id: str
    url: str
    events: tuple[str, ...]
    secret: str
    active: bool = True


@dataclass(frozen=True)
class PendingDelivery:
    """A delivery row as the worker reads it: its state and the exact body to send."""

    delivery: Delivery
    project_id: str
    payload: str
    #: The event the delivery carries (a redelivery carries its original's).
    event_id: str = ""
