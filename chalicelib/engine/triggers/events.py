"""Event triggers: fire the project's matching triggers when pawl emits one of its events.

Installed on the engine's bus by the composition root. Best-effort and in-process, as the
spec's event bus is; a firing's id is derived from (trigger, event), so an event handed
over twice (the reaper re-delivers an event a crash interrupted) fires once. The loop
guard: a trigger already in the event's causal chain, or a chain already
:data:`MAX_CAUSATION_DEPTH` firings deep, records a failed firing
(``TRIGGER_CAUSATION_LIMIT``) and starts nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from chalicelib import ids
from chalicelib.domain.events import LifecycleEvent
from chalicelib.domain.triggers import MAX_CAUSATION_DEPTH, FiringError, Trigger
from chalicelib.engine.triggers import firing, patterns
from chalicelib.store import triggers as store

log = logging.getLogger("pawl.triggers.events")


def _refusal(trigger: Trigger, causation: Sequence[str]) -> FiringError | None:
    if trigger.id in causation:
        why = "the trigger is already in the event's causal chain (a loop)"
    elif len(causation) >= MAX_CAUSATION_DEPTH:
        why = f"the event's causal chain is already {len(causation)} firings deep"
    else:
        return None
    return FiringError(
        code="TRIGGER_CAUSATION_LIMIT",
        message=f"trigger {trigger.id} refused to fire: {why}",
        meta={"causation": list(causation), "max_depth": MAX_CAUSATION_DEPTH},
    )


def on_event(event: LifecycleEvent, causation: Sequence[str]) -> None:
    """Fire every active event trigger of the event's project whose pattern matches."""
    for trigger in store.event_listeners(event.project_id):
        if trigger.event_pattern is None or not patterns.matches(
            trigger.event_pattern, event.event
        ):
            continue
        firing_id = ids.derived_id("trigger_firing", trigger.id, "event", event.id)
        try:
            firing.fire(
                trigger,
                "event",
                event.envelope(),
                firing_id=firing_id,
                causation=causation,
                refusal=_refusal(trigger, causation),
            )
        except Exception:
            log.exception("event %s: trigger %s could not fire", event.id, trigger.id)
