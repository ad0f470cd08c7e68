"""The ``slack`` event sink: decide whether to post, then post through pawl's client.

Configuration is read from the environment on every call (not at import), so a change
of ``PAWL_SLACK_WEBHOOK_URL`` / ``PAWL_SLACK_EVENTS`` takes effect without rebuilding the
plugin host.
"""

from __future__ import annotations

import os

from chalicelib import outbound
from pawl.plugins import LifecycleEvent, event_sink
from pawl_slack_sink.message import format_message

WEBHOOK_URL_ENV = "PAWL_SLACK_WEBHOOK_URL"
EVENTS_ENV = "PAWL_SLACK_EVENTS"
DEFAULT_EVENTS = frozenset({"eval_run.completed", "eval_run.failed"})
#: Sinks run inside the worker that settles the run: bound how long Slack can hold it.
POST_TIMEOUT_S = 5.0
POST_MAX_ATTEMPTS = 2


class SlackDeliveryFailed(RuntimeError):
    """Slack answered with something other than 2xx (the plugin host logs it)."""


def selected_events(raw: str | None) -> frozenset[str]:
    """The event names to post, from a comma list; unset or blank means both terminal events."""
    names = frozenset(part.strip() for part in (raw or "").split(",") if part.strip())
    return names or DEFAULT_EVENTS


@event_sink
def slack(event: LifecycleEvent) -> None:
    """Post ``event`` to the Slack webhook, when one is configured and the event is selected."""
    url = os.environ.get(WEBHOOK_URL_ENV, "").strip()
    if not url or event.event not in selected_events(os.environ.get(EVENTS_ENV)):
        return
    response = outbound.post_json(
        url, format_message(event), timeout_s=POST_TIMEOUT_S, max_attempts=POST_MAX_ATTEMPTS
    )
    if not response.ok:
        # The body is Slack's short error code (e.g. "invalid_payload"), never a secret.
        raise SlackDeliveryFailed(
            f"Slack webhook answered {response.status} for {event.id}: {response.text[:200]}"
        )
