"""Deciders (``/api/v1/deciders``) and their decisions (``/api/v1/decisions``).

Every create and update writes an immutable numbered version (``/versions/{n}``); a
decision is answered under the decider's current version and names it.
"""

from __future__ import annotations

import json
from typing import Any

from chalice import Blueprint
from pydantic import Field, field_validator

from chalicelib.api.access import authorize_references, on, on_collection, on_project
from chalicelib.api.common import refuse_nulls, target_project
from chalicelib.api.routing import Call, ListQuery, ProjectListQuery, endpoint, page, route
from chalicelib.deciders.decide import decide
from chalicelib.domain.base import Page, RequestBody
from chalicelib.domain.deciders import (
    Backend,
    Decider,
    DeciderVersion,
    Decision,
    Question,
    Questions,
    check_distinct_names,
)
from chalicelib.engine import deciders as catalog
from chalicelib.errors import not_found
from chalicelib.iam.references import ReferenceField
from chalicelib.ids import ProjectId
from chalicelib.store import deciders as store

bp = Blueprint(__name__)

TAG = "deciders"
NAME = Field(min_length=1, max_length=200)
DESCRIPTION = Field(None, max_length=10_000)
MAX_METADATA_BYTES = 16 * 1024


class CreateDecider(RequestBody):
    project_id: ProjectId | None = Field(None, description="Required with the admin key")
    name: str = NAME
    description: str | None = DESCRIPTION
    questions: Questions
    backend: Backend

    @field_validator("questions")
    @classmethod
    def _distinct(cls, questions: list[Question]) -> list[Question]:
        return check_distinct_names(questions)


class UpdateDecider(RequestBody):
    """Partial update; writes the next version. ``expected_version`` guards a stale read."""

    name: str | None = Field(None, min_length=1, max_length=200)
    description: str | None = DESCRIPTION
    questions: Questions | None = None
    backend: Backend | None = None
    expected_version: int | None = Field(None, ge=1)

    @field_validator("questions")
    @classmethod
    def _distinct(cls, questions: list[Question] | None) -> list[Question] | None:
        return None if questions is None else check_distinct_names(questions)


class CreateDecision(RequestBody):
    input: Any = Field(description="What the questions are asked about: any JSON but null")
    metadata: dict[str, Any] | None = Field(None, description="Caller annotations; null means {}")

    @field_validator("input")
    @classmethod
    def _not_null(cls, value: Any) -> Any:
        if value is None:
            raise ValueError("input is required and may not be null")
        return value

    @field_validator("metadata")
    @classmethod
    def _small(cls, metadata: dict[str, Any] | None) -> dict[str, Any] | None:
        if metadata is not None and len(json.dumps(metadata)) > MAX_METADATA_BYTES:
            raise ValueError(f"metadata is larger than {MAX_METADATA_BYTES} bytes")
        return metadata


def backend_references() -> list[ReferenceField]:
    """What a decider's backend names (its tool or AI provider): the create body's table."""
    return [r for r in route("POST", "/api/v1/deciders").references() if r.path[0] == "backend"]


def authorize_backend(call: Call[Any, Any], version: DeciderVersion) -> None:
    """The version's backend, authorized as the caller at this decision (not only when the
    decider was written): a decision makes pawl call it, and a policy may have changed
    since. Denied, it answers what a missing one does (``bind_backend``'s 400)."""
    stored = {"backend": version.backend.model_dump(mode="json")}
    authorize_references(backend_references, call.caller, stored, {})


def visible_decider(call: Call[Any, Any]) -> Decider:
    decider = store.get_decider(call.path["decider_id"])
    call.caller.check_visible(decider.project_id, "decider", decider.id)
    return decider


@endpoint(
    bp,
    "/api/v1/deciders",
    "POST",
    access=on_collection("deciders:CreateDecider", "decider"),
    body=CreateDecider,
    response=Decider,
    status=201,
    tag=TAG,
    operation_id="createDecider",
)
def create_decider(call: Call[CreateDecider, Any]) -> Decider:
    """Create a decider at version 1 (name unique in the project)."""
    body = call.body
    project_id = target_project(call.caller, body.project_id)
    return catalog.create_decider(
        project_id, body.name, body.description, body.questions, body.backend
    )


@endpoint(
    bp,
    "/api/v1/deciders",
    "GET",
    access=on_collection("deciders:ListDeciders", "decider"),
    query=ProjectListQuery,
    response=Page[Decider],
    tag=TAG,
    operation_id="listDeciders",
)
def list_deciders(call: Call[Any, ProjectListQuery]) -> dict[str, Any]:
    """List a project's deciders, oldest first."""
    project_id = call.caller.listing_project(call.query.project_id)
    return page(store.list_deciders(project_id, call.query.window()))


@endpoint(
    bp,
    "/api/v1/deciders/{decider_id}",
    "GET",
    access=on("deciders:GetDecider", "decider_id"),
    response=Decider,
    tag=TAG,
    operation_id="getDecider",
)
def get_decider(call: Call[Any, Any]) -> Decider:
    """Get a decider at its current version."""
    return visible_decider(call)


@endpoint(
    bp,
    "/api/v1/deciders/{decider_id}",
    "PUT",
    access=on("deciders:UpdateDecider", "decider_id"),
    body=UpdateDecider,
    response=Decider,
    tag=TAG,
    operation_id="updateDecider",
)
def update_decider(call: Call[UpdateDecider, Any]) -> Decider:
    """Change a decider; the result is written as the next version."""
    body = call.body
    refuse_nulls(body, "name", "questions", "backend", "expected_version")
    given = {name: getattr(body, name) for name in body.model_fields_set}
    return catalog.update_decider(visible_decider(call), given)


@endpoint(
    bp,
    "/api/v1/deciders/{decider_id}",
    "DELETE",
    access=on("deciders:DeleteDecider", "decider_id"),
    status=204,
    tag=TAG,
    operation_id="deleteDecider",
)
def delete_decider(call: Call[Any, Any]) -> None:
    """Delete a decider. Its versions and decisions stay readable by id."""
    store.delete_decider(visible_decider(call))


@endpoint(
    bp,
    "/api/v1/deciders/{decider_id}/versions",
    "GET",
    access=on("deciders:ListDeciderVersions", "decider_id"),
    query=ListQuery,
    response=Page[DeciderVersion],
    tag=TAG,
    operation_id="listDeciderVersions",
)
def list_decider_versions(call: Call[Any, ListQuery]) -> dict[str, Any]:
    """List a decider's versions, oldest first."""
    decider = visible_decider(call)
    return page(store.list_versions(decider.id, call.query.window()))


@endpoint(
    bp,
    "/api/v1/deciders/{decider_id}/versions/{version}",
    "GET",
    access=on("deciders:GetDeciderVersion", "decider_id"),
    response=DeciderVersion,
    tag=TAG,
    operation_id="getDeciderVersion",
)
def get_decider_version(call: Call[Any, Any]) -> DeciderVersion:
    """Get one version: the questions and backend a decision was answered under."""
    decider = visible_decider(call)
    raw = call.path["version"]
    if not raw.isdigit():
        raise not_found("decider_version", f"{decider.id}/{raw}")
    return store.get_version(decider.id, int(raw))


@endpoint(
    bp,
    "/api/v1/deciders/{decider_id}/decisions",
    "POST",
    access=on("deciders:CreateDecision", "decider_id"),
    body=CreateDecision,
    response=Decision,
    status=201,
    tag=TAG,
    operation_id="createDecision",
)
def create_decision(call: Call[CreateDecision, Any]) -> Decision:
    """Ask the decider about ``input`` (current version). Answers 201 with the settled
    decision: ``completed`` with its answers, or ``failed`` with an error code."""
    decider = visible_decider(call)
    version = store.get_version(decider.id, decider.version)
    authorize_backend(call, version)
    return decide(decider.project_id, version, call.body.input, call.body.metadata or {})


@endpoint(
    bp,
    "/api/v1/decisions/{decision_id}",
    "GET",
    access=on_project("deciders:GetDecision", param="decision_id"),
    response=Decision,
    tag=TAG,
    operation_id="getDecision",
)
def get_decision(call: Call[Any, Any]) -> Decision:
    """Get a decision (kept after its decider is deleted)."""
    decision = store.get_decision(call.path["decision_id"])
    call.caller.check_visible(decision.project_id, "decision", decision.id)
    return decision
