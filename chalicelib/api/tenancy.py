"""Projects and API keys (admin only to create)."""

from __future__ import annotations

from typing import Annotated, Any

from chalice import Blueprint
from pydantic import Field

from chalicelib.api.access import admin_only, on, on_collection
from chalicelib.api.common import refuse_nulls
from chalicelib.api.routing import Call, ListQuery, ProjectListQuery, endpoint, page
from chalicelib.domain.base import Page, RequestBody
from chalicelib.domain.tenancy import ApiKey, CreatedApiKey, Project
from chalicelib.engine import ai_providers
from chalicelib.iam.references import reads
from chalicelib.ids import AiProviderId, PolicyId, ProjectId
from chalicelib.store import pagination, policies, tenancy

bp = Blueprint(__name__)

NAME = Field(min_length=1, max_length=200)


class CreateProject(RequestBody):
    name: str = NAME


class UpdateProject(RequestBody):
    name: str | None = Field(None, min_length=1, max_length=200)
    #: Every llm_judge without a provider of its own calls it: setting it needs read on it.
    default_ai_provider_id: (
        Annotated[
            AiProviderId,
            reads("ai-provider", message="ai_provider {id} not found in project {project}"),
        ]
        | None
    ) = Field(None, description="null clears it")


class CreateApiKey(RequestBody):
    project_id: ProjectId
    name: str = NAME
    policy_ids: list[PolicyId] = Field(
        default_factory=list,
        max_length=policies.MAX_POLICIES_PER_KEY,
        description="IAM policies bounding the key within its project (docs/iam.md); "
        "none: the key reaches all of its project",
    )


class UpdateApiKey(RequestBody):
    name: str | None = Field(None, min_length=1, max_length=200)
    policy_ids: list[PolicyId] | None = Field(
        None,
        max_length=policies.MAX_POLICIES_PER_KEY,
        description="replaces the key's policies; [] detaches them all (full project access)",
    )


@endpoint(
    bp,
    "/api/v1/projects",
    "POST",
    access=admin_only("projects:CreateProject", "project"),
    body=CreateProject,
    response=Project,
    status=201,
    tag="projects",
    operation_id="createProject",
)
def create_project(call: Call[CreateProject, Any]) -> Project:
    """Create a project (admin)."""
    call.caller.require_admin()
    return tenancy.create_project(call.body.name)


@endpoint(
    bp,
    "/api/v1/projects",
    "GET",
    access=on_collection("projects:ListProjects", "project"),
    query=ListQuery,
    response=Page[Project],
    tag="projects",
    operation_id="listProjects",
)
def list_projects(call: Call[Any, ListQuery]) -> dict[str, Any]:
    """List the projects the caller can reach (admin: all; scoped key: its own)."""
    if not call.caller.is_admin:
        assert call.caller.project_id is not None
        own = [tenancy.get_project(call.caller.project_id)]
        scope = f"own-project|{call.caller.project_id}"
        return page(pagination.listing_of(own, call.query.window(), scope))
    return page(tenancy.list_projects(call.query.window()))


@endpoint(
    bp,
    "/api/v1/projects/{project_id}",
    "GET",
    access=on("projects:GetProject", "project_id"),
    response=Project,
    tag="projects",
    operation_id="getProject",
)
def get_project(call: Call[Any, Any]) -> Project:
    """Get a project."""
    project_id = call.path["project_id"]
    call.caller.check_visible(project_id, "project", project_id)
    return tenancy.get_project(project_id)


@endpoint(
    bp,
    "/api/v1/projects/{project_id}",
    "PUT",
    access=on("projects:UpdateProject", "project_id"),
    body=UpdateProject,
    response=Project,
    tag="projects",
    operation_id="updateProject",
)
def update_project(call: Call[UpdateProject, Any]) -> Project:
    """Rename a project and/or set or clear (null) its default AI provider."""
    project_id = call.path["project_id"]
    call.caller.check_visible(project_id, "project", project_id)
    refuse_nulls(call.body, "name")
    current = tenancy.get_project(project_id)
    default: Any = tenancy.KEEP
    if "default_ai_provider_id" in call.body.model_fields_set:
        default = call.body.default_ai_provider_id
        ai_providers.check_default_change(project_id, default)
    return tenancy.update_project(current, call.body.name, default)


@endpoint(
    bp,
    "/api/v1/api-keys",
    "POST",
    access=admin_only("api-keys:CreateApiKey", "api-key"),
    body=CreateApiKey,
    response=CreatedApiKey,
    status=201,
    tag="api-keys",
    operation_id="createApiKey",
)
def create_api_key(call: Call[CreateApiKey, Any]) -> CreatedApiKey:
    """Create a project-scoped API key (admin), optionally bounded by policies.

    The secret ``key`` is shown only here.
    """
    call.caller.require_admin()
    tenancy.get_project(call.body.project_id)
    policies.check_attachable(call.body.policy_ids)
    return tenancy.create_api_key(call.body.project_id, call.body.name, call.body.policy_ids)


@endpoint(
    bp,
    "/api/v1/api-keys",
    "GET",
    access=on_collection("api-keys:ListApiKeys", "api-key"),
    query=ProjectListQuery,
    response=Page[ApiKey],
    tag="api-keys",
    operation_id="listApiKeys",
)
def list_api_keys(call: Call[Any, ProjectListQuery]) -> dict[str, Any]:
    """List a project's API keys (never their secrets)."""
    project_id = call.caller.listing_project(call.query.project_id)
    return page(tenancy.list_api_keys(project_id, call.query.window()))


def _visible_key(call: Call[Any, Any]) -> ApiKey:
    key = tenancy.get_api_key(call.path["key_id"])
    call.caller.check_visible(key.project_id, "api_key", key.id)
    return key


@endpoint(
    bp,
    "/api/v1/api-keys/{key_id}",
    "GET",
    access=on("api-keys:GetApiKey", "key_id"),
    response=ApiKey,
    tag="api-keys",
    operation_id="getApiKey",
)
def get_api_key(call: Call[Any, Any]) -> ApiKey:
    """Get an API key (never its secret)."""
    return _visible_key(call)


@endpoint(
    bp,
    "/api/v1/api-keys/{key_id}",
    "PUT",
    access=admin_only("api-keys:UpdateApiKey", "api-key"),
    body=UpdateApiKey,
    response=ApiKey,
    tag="api-keys",
    operation_id="updateApiKey",
)
def update_api_key(call: Call[UpdateApiKey, Any]) -> ApiKey:
    """Rename an API key and/or replace its policies (admin)."""
    refuse_nulls(call.body, "name", "policy_ids")
    current = tenancy.get_api_key(call.path["key_id"])
    if call.body.policy_ids is not None:
        policies.check_attachable(call.body.policy_ids)
    return tenancy.update_api_key(current, call.body.name, call.body.policy_ids)


@endpoint(
    bp,
    "/api/v1/api-keys/{key_id}",
    "DELETE",
    access=on("api-keys:DeleteApiKey", "key_id"),
    status=204,
    tag="api-keys",
    operation_id="deleteApiKey",
)
def delete_api_key(call: Call[Any, Any]) -> None:
    """Revoke an API key."""
    key = _visible_key(call)
    tenancy.delete_api_key(key)
