"""The event patterns of event triggers, over pawl's own events.

``name.event`` matches that event only, ``namespace.*`` every event of a namespace, ``*``
every event of the project. pawl accepts only the patterns that can match one of its
events (:data:`PATTERNS`, published as the field's enum): a typo is refused with 400
``INVALID_EVENT_PATTERN`` rather than silently never matching. (The spec also accepts
names outside its namespaces, for events orchestrations emit; nothing in pawl emits any.)
"""

from __future__ import annotations

from chalicelib.domain.webhooks import RUN_NAMESPACE, SOAT_RUN_NAMESPACE, canonical_event
from chalicelib.errors import ValidationFailed

#: Every event pawl emits on its internal bus (``docs/triggers.md``).
RUN_COMPLETED = "eval_run.completed"
RUN_FAILED = "eval_run.failed"
AGENT_VERSION_CREATED = "agent.version_created"
#: A staged rollout was set, promoted or aborted (``engine/releases.py``).
RELEASE_EVENTS = ("agents.release.set", "agents.release.promoted", "agents.release.aborted")
REGISTERED_EVENTS = frozenset({RUN_COMPLETED, RUN_FAILED, AGENT_VERSION_CREATED, *RELEASE_EVENTS})
NAMESPACES = frozenset(name.split(".", 1)[0] for name in REGISTERED_EVENTS)

#: Every pattern that matches at least one registered event (and SOAT's ``eval_runs.``
#: spelling of the run ones: :func:`chalicelib.domain.webhooks.canonical_event`).
PATTERNS = (
    "*",
    *sorted(f"{namespace}.*" for namespace in NAMESPACES),
    *sorted(REGISTERED_EVENTS),
    *sorted(
        SOAT_RUN_NAMESPACE + name.removeprefix(RUN_NAMESPACE)
        for name in ("eval_run.*", *REGISTERED_EVENTS)
        if name.startswith(RUN_NAMESPACE)
    ),
)


def matches(pattern: str, event: str) -> bool:
    pattern = canonical_event(pattern)
    if pattern in {"*", event}:
        return True
    return pattern.endswith(".*") and event.startswith(pattern[:-1])


def check(pattern: str) -> str:
    """The pattern, or 400 ``INVALID_EVENT_PATTERN`` saying what is wrong with it."""
    if pattern not in PATTERNS:
        raise _invalid(
            pattern, f"it matches none of pawl's events (use one of: {', '.join(PATTERNS)})"
        )
    return pattern


def _invalid(pattern: str, why: str) -> ValidationFailed:
    return ValidationFailed(
        f"event_pattern {pattern!r} is not valid: {why}",
        field="event_pattern",
        code="INVALID_EVENT_PATTERN",
    )
