"""The event-pattern grammar of event triggers, over pawl's own events.

``name.event`` matches that event only, ``name.*`` every event of a namespace, ``*`` every
event of the project. A pattern whose namespace is one of pawl's must match one of pawl's
registered events (a typo is refused with 400 ``INVALID_EVENT_PATTERN`` rather than
silently never matching); a name outside pawl's namespaces is accepted as written.
"""

from __future__ import annotations

import re

from chalicelib.errors import ValidationFailed

#: Every event pawl emits on its internal bus (``docs/triggers.md``).
RUN_COMPLETED = "eval_run.completed"
RUN_FAILED = "eval_run.failed"
AGENT_VERSION_CREATED = "agent.version_created"
REGISTERED_EVENTS = frozenset({RUN_COMPLETED, RUN_FAILED, AGENT_VERSION_CREATED})
NAMESPACES = frozenset(name.split(".", 1)[0] for name in REGISTERED_EVENTS)

_SEGMENT = r"[a-z0-9_]+"
_SHAPE = re.compile(rf"^(\*|{_SEGMENT}(\.{_SEGMENT})*(\.\*)?)$")
MAX_LENGTH = 200


def matches(pattern: str, event: str) -> bool:
    if pattern in {"*", event}:
        return True
    return pattern.endswith(".*") and event.startswith(pattern[:-1])


def check(pattern: str) -> str:
    """The pattern, or 400 ``INVALID_EVENT_PATTERN`` saying what is wrong with it."""
    if len(pattern) > MAX_LENGTH or not _SHAPE.match(pattern):
        raise _invalid(pattern, "use '*', 'namespace.*' or an exact event name")
    namespace = pattern.split(".", 1)[0]
    if namespace in NAMESPACES and not any(matches(pattern, e) for e in REGISTERED_EVENTS):
        known = ", ".join(sorted(REGISTERED_EVENTS))
        raise _invalid(pattern, f"it names no registered event (known: {known})")
    return pattern


def _invalid(pattern: str, why: str) -> ValidationFailed:
    return ValidationFailed(
        f"event_pattern {pattern!r} is not valid: {why}",
        field="event_pattern",
        code="INVALID_EVENT_PATTERN",
    )
