"""A run's statuses and how ``/api/v1`` spells them: names only, so a client (``pawl run``,
the SDK's ``Run``) can read a run's status without loading the engine's models and the
settings behind them (``chalicelib.domain.runs`` re-exports every name here)."""

from __future__ import annotations

from typing import Any

QUEUED = "queued"
RUNNING = "running"
COMPLETED = "completed"
FAILED = "failed"
CANCELLED = "cancelled"
#: How ``/api/v1`` spells CANCELLED: SOAT's enum says ``canceled``. Rows, the engine and
#: ``/v2`` (OpenWOP) keep ``cancelled``; only a run's JSON says ``canceled``.
WIRE_CANCELED = "canceled"

ACTIVE_STATUSES = frozenset({QUEUED, RUNNING})
TERMINAL_STATUSES = frozenset({COMPLETED, FAILED, CANCELLED})
#: A run that may serve as a baseline: it reached an end with its results kept. A
#: cancelled run is refused too — it stopped part-way, so its item set is arbitrary.
BASELINE_STATUSES = frozenset({COMPLETED, FAILED})


def status_on_wire(status: str) -> str:
    """A run status as ``/api/v1`` spells it (``cancelled`` is SOAT's ``canceled``)."""
    return WIRE_CANCELED if status == CANCELLED else status


def status_from_wire(status: Any) -> Any:
    """A run status as the engine names it (``canceled`` on the wire is ``cancelled``)."""
    return CANCELLED if status == WIRE_CANCELED else status
