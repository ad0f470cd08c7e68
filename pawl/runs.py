"""A run as the API returns it: the typed view ``pawl run`` and the demo read field by field.

Apart from :mod:`pawl.transport` because it is a pydantic model: the CLI's other commands
never name it, and importing pydantic would cost them more than their start-up budget.
``pawl.transport.Run`` still names it (loaded on first use).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from chalicelib.domain.run_status import TERMINAL_STATUSES, status_from_wire

Json = dict[str, Any]


class Run(BaseModel):
    """An eval run as the API returns it (fields this client does not know are ignored)."""

    model_config = ConfigDict(extra="ignore")

    id: str
    eval_id: str
    agent_version: int
    status: str
    baseline_run_id: str | None = None
    aggregate_scores: Json | None = None
    passed: bool | None = None
    verdict_reasons: list[Json] | None = None
    failure_reason: str | None = None
    item_count: int = 0
    completed_count: int = 0
    errored_count: int = 0
    #: Result rows recorded passed / failed (null for a run recorded before the counters).
    passed_count: int | None = None
    failed_count: int | None = None
    metadata: Json = Field(default_factory=dict)
    #: A run started with ``early_stop``: its seed, and the decision once made (pawl's).
    early_stop: Json | None = None
    created_at: str | None = None
    started_at: str | None = None
    finished_at: str | None = None

    @field_validator("status", mode="before")
    @classmethod
    def _status(cls, status: Any) -> Any:
        return status_from_wire(status)

    @property
    def finished(self) -> bool:
        return self.status in TERMINAL_STATUSES

    @property
    def recorded_count(self) -> int:
        return self.completed_count + self.errored_count
