"""Webhook and delivery types as the API shows them, and the event names one may subscribe to."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

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


DeliveryStatus = Literal["pending", "succeeded", "failed"]

#: Attempts per delivery, the first included.
MAX_ATTEMPTS = 3


class Webhook(Resource):
    id: str
    project_id: str
    url: str
    events: list[str]
    created_at: str
    updated_at: str


class CreatedWebhook(Webhook):
    """The only view that carries the signing secret: returned once, at creation."""

    secret: str


class Delivery(Resource):
    id: str
    webhook_id: str
    event: str
    status: DeliveryStatus
    attempts: int
    last_status_code: int | None = None
    last_error: str | None = None
    next_attempt_at: str | None = None
    created_at: str
    updated_at: str


@dataclass(frozen=True)
class WebhookTarget:
    """What the sink and the delivery worker need of a webhook (secret included)."""

    id: str
    project_id: str
    url: str
    events: tuple[str, ...]
    secret: str


@dataclass(frozen=True)
class PendingDelivery:
    """A delivery row as the worker reads it: its state and the exact body to send."""

    delivery: Delivery
    project_id: str
    payload: str
