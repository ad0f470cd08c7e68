"""Event triggers: fire the project's matching triggers when pawl emits one of its events.

Installed on the engine's bus by the composition root. Best-effort and in-process, as the
spec's event bus is; a firing's id is derived from (trigger, event), so an event handed
over twice (the reaper re-delivers an event a crash interrupted) fires once. The loop
guard (:func:`chalicelib.engine.triggers.firing.causation_refusal`) records a failed
firing (``TRIGGER_CAUSATION_LIMIT``) instead of starting a run.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from chalicelib import ids
from chalicelib.domain.events import LifecycleEvent
from chalicelib.engine.triggers import firing, patterns
from chalicelib.store import triggers as store

log = logging.getLogger("pawl.triggers.events")


def on_event(event: LifecycleEvent, causation: Sequence[str]) -> None:
    """Fire every active event trigger of the event's project whose pattern matches."""
    for trigger in store.event_listeners(event.project_id):
        pattern = trigger.event_pattern
        if pattern is None or not patterns.matches(pattern, event.event):
            continue
        firing_id = ids.derived_id("trigger_firing", trigger.id, "event", event.id)
        try:
            firing.fire(
                trigger, "event", event.envelope(), firing_id=firing_id, causation=causation
            )
        except Exception:
            log.exception("event %s: trigger %s could not fire", event.id, trigger.id)
