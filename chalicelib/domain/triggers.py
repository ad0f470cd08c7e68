"""Triggers (a starter bound to an eval) and their firings, as the API shows them.

A trigger binds one starter type (``manual``, ``webhook``, ``schedule``, ``event``) to one
target; pawl builds only ``target_type: "eval"`` (``docs/triggers.md``). Every activation
is recorded as a :class:`TriggerFiring`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema

from chalicelib.domain.base import Resource

TriggerType = Literal["manual", "webhook", "schedule", "event"]
TargetType = Literal["orchestration", "agent", "tool", "eval"]
FiringStatus = Literal["pending", "running", "succeeded", "failed"]

#: The target types pawl can activate (the spec's others are refused with a 400).
SUPPORTED_TARGETS = ("eval",)

PENDING: FiringStatus = "pending"
RUNNING: FiringStatus = "running"
SUCCEEDED: FiringStatus = "succeeded"
FAILED: FiringStatus = "failed"

#: The longest causal chain (trigger firings that led to an event) an event trigger extends.
MAX_CAUSATION_DEPTH = 5


class TriggerSpec(BaseModel):
    """Every writable field of a trigger, validated (the service layer's input).

    ``type`` is fixed at creation; an update passes the trigger's own.
    """

    model_config = ConfigDict(extra="forbid")

    name: str
    description: str | None = None
    type: TriggerType
    target_type: TargetType
    target_id: str
    action: str | None = None
    input: dict[str, Any] | None = None
    cron: str | None = None
    event_pattern: str | None = None
    active: bool = True
    policy_id: str | None = None
    require_timestamp: bool = False
    #: The project API key that bound the trigger to its target (at create, or the update
    #: that changed ``target_id``): every firing re-checks its current policies. None: the
    #: admin key (or a trigger written before pawl recorded it). Never in an answer.
    bound_by_key_id: str | None = None


class Trigger(Resource):
    id: str
    project_id: str
    name: str
    description: str | None = None
    type: TriggerType
    target_type: TargetType
    target_id: str
    action: str | None = None
    input: dict[str, Any] | None = None
    cron: str | None = None
    event_pattern: str | None = None
    active: bool
    policy_id: str | None = None
    #: pawl's addition: a webhook trigger that refuses body-only signatures.
    require_timestamp: bool = False
    #: Internal (``TriggerSpec.bound_by_key_id``): in no answer and no published schema.
    bound_by_key_id: SkipJsonSchema[str | None] = Field(None, exclude=True)
    next_fire_at: str | None = None
    created_at: str
    updated_at: str

    def spec(self) -> TriggerSpec:
        fields = self.model_dump(include=set(TriggerSpec.model_fields))
        return TriggerSpec.model_validate({**fields, "bound_by_key_id": self.bound_by_key_id})


class TriggerWithSecret(Trigger):
    """A webhook trigger as create and rotate answer it: the only views with its secret."""

    secret: str | None = None


class TriggerSecret(Resource):
    trigger_id: str
    secret: str


class FiringResult(Resource):
    target_type: TargetType
    result_id: str
    status: str
    output: Any = None


class FiringError(Resource):
    code: str
    message: str
    meta: dict[str, Any] = {}


class TriggerFiring(Resource):
    id: str
    trigger_id: str
    project_id: str
    source: TriggerType
    status: FiringStatus
    input: dict[str, Any] | None = None
    result: FiringResult | None = None
    error: FiringError | None = None
    started_at: str | None = None
    completed_at: str | None = None
    created_at: str


class HookAccepted(Resource):
    """The inbound webhook endpoint's 202 body."""

    firing_id: str
    trigger_id: str
    status: FiringStatus
