"""Lifecycle events handed to sink plugins (webhooks are one sink)."""

from __future__ import annotations

from typing import Any

from chalicelib.domain.base import Resource


class LifecycleEvent(Resource):
    """The envelope every sink receives: ``eval_run.completed`` / ``eval_run.failed``."""

    id: str
    event: str
    project_id: str
    resource_type: str
    resource_id: str
    data: dict[str, Any]
    timestamp: str

    def envelope(self) -> dict[str, Any]:
        """The JSON body a webhook receives."""
        return {
            "event": self.event,
            "project_id": self.project_id,
            "resource_type": self.resource_type,
            "resource_id": self.resource_id,
            "data": self.data,
            "timestamp": self.timestamp,
        }
