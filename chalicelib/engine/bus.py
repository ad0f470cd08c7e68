"""pawl's internal event bus: in-process listeners of its own events (event triggers).

Lifecycle events also go to the sink plugins (:func:`chalicelib.engine.lifecycle.emit`);
the bus is what *reacts* inside pawl. Listeners are installed by the composition root
(``wiring.build``), so the engine does not import what sits above it. Delivery is
best-effort and in-process: a listener that raises is logged and the others still run.
Each event carries its causation — the trigger ids whose firings led to it — so a
listener can refuse to extend a loop.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from chalicelib import clock
from chalicelib.domain.catalog import Agent
from chalicelib.domain.events import LifecycleEvent

log = logging.getLogger("pawl.engine.bus")

Listener = Callable[[LifecycleEvent, Sequence[str]], None]

_listeners: list[Listener] = []


def install(listeners: Sequence[Listener]) -> None:
    """Replace the listeners (the composition root's job)."""
    _listeners[:] = list(listeners)


def publish(event: LifecycleEvent, causation: Sequence[str] = ()) -> None:
    """Hand ``event`` to every listener, one at a time, each with its own error handling."""
    for listener in list(_listeners):
        try:
            listener(event, tuple(causation))
        except Exception:
            log.exception("event %s (%s): a listener failed", event.id, event.event)


def agent_version_created(agent: Agent) -> None:
    """Publish ``agent.version_created`` for the version an agent create or update just saved.

    The data names the version, never its config (which may hold secret headers). The id is
    derived from (agent, version): a repeat is recognisable.
    """
    event = LifecycleEvent(
        id=f"evt_{agent.id}_v{agent.version}",
        event="agent.version_created",
        project_id=agent.project_id,
        resource_type="agent",
        resource_id=agent.id,
        data={
            "agent_id": agent.id,
            "version": agent.version,
            "name": agent.name,
            "type": agent.type,
        },
        timestamp=clock.now_iso(),
    )
    publish(event)
