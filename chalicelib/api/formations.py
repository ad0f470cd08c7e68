"""Formations (``/api/v1/formations``): evals as code, deployed from one template.

A template's shape, its parameters and every literal id are checked before anything is
written (400). A deploy the platform refuses part-way still answers 2xx, with the
formation ``failed``, its ``error`` saying why, and what it created walked back.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from chalice import Blueprint
from pydantic import Field, create_model

from chalicelib import clock, ids
from chalicelib.api import formation_deploy as deploying
from chalicelib.api.access import on, on_collection
from chalicelib.api.auth import Caller
from chalicelib.api.common import target_project
from chalicelib.api.formation_plan import Prepared, live_records, plan, prepare, stored_template
from chalicelib.api.formation_types import acting_caller
from chalicelib.api.routing import Call, ListQuery, ProjectListQuery, endpoint, page
from chalicelib.domain.base import Page, RequestBody
from chalicelib.domain.formations import (
    Change,
    ErrorBag,
    Formation,
    FormationOperation,
    FormationResource,
    Plan,
)
from chalicelib.errors import ValidationFailed
from chalicelib.formations.template import Template, contains_expression
from chalicelib.iam.references import reads
from chalicelib.ids import ProjectId, id_pattern
from chalicelib.store import formations as store
from chalicelib.store import pagination
from chalicelib.store.evals import list_evals_for_agent

bp = Blueprint(__name__)

TAG = "formations"
NAME = Field(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")
Parameters = dict[str, str]
#: A template is stored whole on the formation's row (and resolved once more in each
#: operation's plan), which DynamoDB caps at 400 KB: refused beyond this, before any write.
MAX_TEMPLATE_BYTES = 64_000
FormationId = Annotated[str, Field(pattern=id_pattern("formation"))]


class CreateFormation(RequestBody):
    project_id: ProjectId | None = Field(None, description="Required with the admin key")
    name: str = NAME
    template: dict[str, Any]
    parameters: Parameters | None = None
    metadata: dict[str, Any] | None = Field(None, description="Static annotations")


class UpdateFormation(RequestBody):
    template: dict[str, Any]
    parameters: Parameters | None = None
    metadata: dict[str, Any] | None = None


class PlanFormation(RequestBody):
    """Plan against the formation named (by id or name); a new name plans every create."""

    project_id: ProjectId | None = Field(None, description="Required with the admin key")
    #: Planning against a formation reads it (denied: as missing, 404).
    formation_id: Annotated[FormationId, reads("formation", answer="not_found")] | None = None
    name: str | None = Field(None, min_length=1, max_length=200)
    template: dict[str, Any]
    parameters: Parameters | None = None


def _published(model: type[RequestBody]) -> Any:
    """The body as published: ``template`` with the template's own shape."""
    return lambda: create_model(
        f"{model.__name__}Published", __base__=model, template=(Template, ...)
    )


class FormationQuery(ProjectListQuery):
    name: str | None = Field(None, description="Only the formation of this name")


def _static_metadata(metadata: dict[str, Any] | None) -> dict[str, Any]:
    if metadata is not None and contains_expression(metadata):
        raise ValidationFailed(
            "metadata is a static annotation: sub/param/ref expressions belong in the "
            "template's metadata block",
            field="metadata",
            code="FORMATION_INVALID_METADATA",
        )
    return metadata or {}


def _checked_template(template: dict[str, Any]) -> dict[str, Any]:
    size = len(json.dumps(template).encode())
    if size > MAX_TEMPLATE_BYTES:
        raise ValidationFailed(
            f"template is {size} bytes; at most {MAX_TEMPLATE_BYTES} (split it into formations)",
            field="template",
            size_bytes=size,
            limit_bytes=MAX_TEMPLATE_BYTES,
        )
    return template


def visible_formation(caller: Caller, formation_id: str) -> tuple[Formation, int]:
    formation, version = store.get_formation(formation_id)
    caller.check_visible(formation.project_id, "formation", formation.id)
    return formation, version


def _record_operation(
    formation: Formation, kind: str, changes: list[Change], events: Any, error: ErrorBag | None
) -> None:
    created_at, created_key = _stamp()
    operation = FormationOperation(
        id=ids.new_id("formation_operation"),
        formation_id=formation.id,
        operation_type=kind,  # type: ignore[arg-type]
        status="failed" if error else "succeeded",
        # The live state each change was compared with is not kept: it can be large.
        plan=[
            c.model_copy(update={"diff": c.diff.model_copy(update={"current": None})})
            for c in changes
        ],
        events=events,
        error=error,
        created_at=created_at,
        updated_at=created_at,
    )
    store.save_operation(operation, created_key)


def _stamp() -> tuple[str, str]:
    from chalicelib.store.project_scoped import creation_stamp

    return creation_stamp(ids.new_id("formation_operation"))


def _deploy(
    formation: Formation, version: int, prepared: Prepared, kind: str, acting: Caller
) -> Formation:
    saved = [version]

    def checkpoint(resources: list[FormationResource]) -> None:
        progress = formation.model_copy(update={"resources": resources})
        saved.append(store.save_formation(progress, saved[-1]))

    deployed, changes, deploy = deploying.run_deploy(formation, prepared, acting, checkpoint)
    store.save_formation(deployed, saved[-1])
    _record_operation(deployed, kind, changes, deploy.events, deployed.error)
    return deployed


@endpoint(
    bp,
    "/api/v1/formations",
    "POST",
    access=on_collection("formations:CreateFormation", "formation"),
    body=CreateFormation,
    published_body=_published(CreateFormation),
    response=Formation,
    status=201,
    tag=TAG,
)
def create_formation(call: Call[CreateFormation, Any]) -> Formation:
    """Create a formation and deploy its template (a failed deploy is still 201: read status)."""
    body = call.body
    project_id = target_project(call.caller, body.project_id)
    metadata = _static_metadata(body.metadata)
    acting = acting_caller(call.caller, project_id)
    prepared = prepare(_checked_template(body.template), body.parameters, acting)
    now = clock.now_iso()
    formation = Formation(
        id=ids.new_id("formation"),
        project_id=project_id,
        name=body.name,
        template=stored_template(prepared),
        status="creating",
        metadata=metadata,
        created_at=now,
        updated_at=now,
    )
    version = store.create_formation(formation)
    return _deploy(formation, version, prepared, "create", acting)


@endpoint(
    bp,
    "/api/v1/formations",
    "GET",
    access=on_collection("formations:ListFormations", "formation"),
    query=FormationQuery,
    response=Page[Formation],
    tag=TAG,
)
def list_formations(call: Call[Any, FormationQuery]) -> dict[str, Any]:
    """List a project's formations, oldest first (or the one named ``name``)."""
    project_id = call.caller.listing_project(call.query.project_id)
    if call.query.name is not None:
        found = store.find_by_name(project_id, call.query.name)
        named = [found[0]] if found else []
        scope = f"formation-by-name|{project_id}|{call.query.name}"
        return page(pagination.listing_of(named, call.query.window(), scope))
    return page(store.list_formations(project_id, call.query.window()))


@endpoint(
    bp,
    "/api/v1/formations/{formation_id}",
    "GET",
    access=on("formations:GetFormation", "formation_id"),
    response=Formation,
    tag=TAG,
)
def get_formation(call: Call[Any, Any]) -> Formation:
    """Get a formation, its resources, outputs and (when failed) why."""
    return visible_formation(call.caller, call.path["formation_id"])[0]


@endpoint(
    bp,
    "/api/v1/formations/{formation_id}",
    "PUT",
    access=on("formations:UpdateFormation", "formation_id"),
    body=UpdateFormation,
    response=Formation,
    tag=TAG,
)
def update_formation(call: Call[UpdateFormation, Any]) -> Formation:
    """Deploy a new template over the formation (a failed deploy is still 200: read status)."""
    formation, version = visible_formation(call.caller, call.path["formation_id"])
    body = call.body
    changes: dict[str, Any] = {"status": "updating", "updated_at": clock.now_iso()}
    if "metadata" in body.model_fields_set:
        changes["metadata"] = _static_metadata(body.metadata)
    acting = acting_caller(call.caller, formation.project_id)
    prepared = prepare(_checked_template(body.template), body.parameters, acting)
    updating = formation.model_copy(update=changes)
    version = store.save_formation(updating, version)
    return _deploy(updating, version, prepared, "update", acting)


def agent_users_blocker(formation: Formation) -> deploying.Blocker:
    """An agent that evals this teardown does not delete still bind: its delete would be
    ``409 AGENT_IN_USE``. (Its generations and runs block nothing: the formation deletes
    it with ``force``, or keeps it standing when it is retained.)"""
    deleted = [r for r in live_records(formation).values() if r.deletion_policy != "retain"]
    leaving = {r.physical_resource_id for r in deleted if r.resource_type == "eval"}
    # Deleting a dataset deletes every eval bound to it (as DELETE /datasets/{id} does).
    emptied = {r.physical_resource_id for r in deleted if r.resource_type == "dataset"}

    def blocker(record: FormationResource) -> str | None:
        agent_id = record.physical_resource_id
        if agent_id is None:
            return None
        evals = list_evals_for_agent(agent_id)
        users = [e for e in evals if e.id not in leaving and e.dataset_id not in emptied]
        if not users:
            return None
        names = ", ".join(f"{e.name} ({e.id})" for e in users)
        return (
            f"agent {agent_id} is used by evals this teardown does not "
            f"delete: {names}; delete them or bind them to another agent (or declare the "
            "agent deletion_policy: retain), then delete the formation again"
        )

    return blocker


@endpoint(
    bp,
    "/api/v1/formations/{formation_id}",
    "DELETE",
    access=on("formations:DeleteFormation", "formation_id"),
    status=204,
    tag=TAG,
)
def delete_formation(call: Call[Any, Any]) -> None:
    """Delete the formation and every resource it manages, except retained ones.

    409 ``FORMATION_DELETE_FAILED`` naming each blocking resource: an agent that evals
    outside the teardown still use blocks before anything is deleted. An agent with
    generations or runs is deleted with its generations (``deletion_policy: delete``).
    """
    formation, version = visible_formation(call.caller, call.path["formation_id"])
    deploying.preflight_teardown(formation, {"agent": agent_users_blocker(formation)})
    deleting = formation.model_copy(update={"status": "deleting", "updated_at": clock.now_iso()})
    version = store.save_formation(deleting, version)
    records, failures = deploying.teardown(
        deleting, acting_caller(call.caller, formation.project_id)
    )
    if failures:
        error = ErrorBag(
            code="FORMATION_DELETE_FAILED",
            message="teardown stopped part-way; resources deleted before the failure stay deleted",
            meta={"failures": failures},
        )
        failed = deleting.model_copy(
            update={"status": "delete_failed", "resources": records, "error": error}
        )
        store.save_formation(failed, version)
        _record_operation(failed, "delete", [], [], error)
        raise deploying.teardown_failure(error.message, failures)
    store.delete_formation(deleting, version)


@endpoint(
    bp,
    "/api/v1/formations/plan",
    "POST",
    access=on_collection("formations:PlanFormation", "formation"),
    body=PlanFormation,
    published_body=_published(PlanFormation),
    response=Plan,
    tag=TAG,
)
def plan_formation(call: Call[PlanFormation, Any]) -> Plan:
    """The changes a template would make to a formation (every change a create when the
    named formation does not exist yet). Writes nothing."""
    body = call.body
    if body.formation_id is not None:
        formation: Formation | None = visible_formation(call.caller, body.formation_id)[0]
        project_id = formation.project_id if formation else ""
    else:
        project_id = target_project(call.caller, body.project_id)
        if body.name is None:
            raise ValidationFailed("name or formation_id is required", field="name")
        found = store.find_by_name(project_id, body.name)
        formation = found[0] if found else None
    acting = acting_caller(call.caller, project_id)
    prepared = prepare(_checked_template(body.template), body.parameters, acting)
    changes = plan(prepared, formation, acting)
    return Plan(
        formation_id=formation.id if formation else None,
        name=formation.name if formation else body.name,
        changes=changes,
    )


@endpoint(
    bp,
    "/api/v1/formations/{formation_id}/events",
    "GET",
    access=on("formations:ListFormationEvents", "formation_id"),
    query=ListQuery,
    response=Page[FormationOperation],
    tag=TAG,
)
def list_formation_events(call: Call[Any, ListQuery]) -> dict[str, Any]:
    """The formation's deploys (create, update, failed delete), oldest first, with events."""
    formation, _ = visible_formation(call.caller, call.path["formation_id"])
    return page(store.list_operations(formation.id, call.query.window()))
