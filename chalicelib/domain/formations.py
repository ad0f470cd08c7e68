"""Formations, the resources they manage and their deploy operations, as the API shows them."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from chalicelib.domain.base import Resource

FormationStatus = Literal[
    "creating", "active", "updating", "failed", "deleting", "deleted", "delete_failed"
]
ResourceStatus = Literal["pending", "created", "updated", "deleted", "failed"]
Action = Literal["create", "update", "delete", "unchanged"]


class ErrorBag(Resource):
    """Why a deploy failed: the shape of an error response's ``error``."""

    code: str
    message: str
    meta: dict[str, Any] = Field(default_factory=dict)


class FormationResource(Resource):
    id: str
    logical_id: str
    resource_type: str
    physical_resource_id: str | None = None
    status: ResourceStatus
    #: The dataset a ``dataset_item`` belongs to (immutable; its routes are nested in it).
    parent_id: str | None = None
    deletion_policy: Literal["delete", "retain"] = "delete"
    #: Keyed hashes of the write-only properties last applied (a webhook's ``secret``).
    write_only: dict[str, str] = Field(default_factory=dict, exclude=True)


class Formation(Resource):
    id: str
    project_id: str
    name: str
    template: dict[str, Any]
    outputs: dict[str, Any] = Field(default_factory=dict)
    status: FormationStatus
    metadata: dict[str, Any] = Field(default_factory=dict)
    resolved_metadata: dict[str, Any] | None = None
    resolved_parameters: dict[str, str] | None = None
    error: ErrorBag | None = None
    resources: list[FormationResource] = Field(default_factory=list)
    created_at: str
    updated_at: str


class Diff(Resource):
    desired: dict[str, Any]
    current: dict[str, Any] | None = None


class Change(Resource):
    logical_id: str
    resource_type: str
    action: Action
    physical_resource_id: str | None = None
    #: The properties whose value changes (an update), for a reader of the plan.
    changed: list[str] = Field(default_factory=list)
    diff: Diff


class Plan(Resource):
    formation_id: str | None
    name: str | None = None
    changes: list[Change]


class OperationEvent(Resource):
    at: str
    logical_id: str
    resource_type: str
    action: str
    status: Literal["succeeded", "failed"]
    physical_resource_id: str | None = None
    error: ErrorBag | None = None


class FormationOperation(Resource):
    id: str
    formation_id: str
    operation_type: Literal["create", "update", "delete"]
    status: Literal["pending", "running", "succeeded", "failed"]
    plan: list[Change] = Field(default_factory=list)
    events: list[OperationEvent] = Field(default_factory=list)
    error: ErrorBag | None = None
    created_at: str
    updated_at: str
