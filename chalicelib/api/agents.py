"""Agents under test and their immutable versions (``/api/v1/agents``).

Every answer shows secret header values masked (:mod:`chalicelib.domain.secret_headers`).
"""

from __future__ import annotations

from typing import Any, TypeVar

from chalice import Blueprint
from pydantic import BaseModel, ConfigDict, Field

from chalicelib.agents.configs import PythonAgentConfig
from chalicelib.api import plugin_schemas
from chalicelib.api.access import on, on_collection
from chalicelib.api.auth import Caller
from chalicelib.api.common import refuse_nulls, target_project
from chalicelib.api.routing import Call, ListQuery, NamedListQuery, endpoint, page
from chalicelib.api.secret_refs import check_config
from chalicelib.domain.base import Page, RequestBody
from chalicelib.domain.catalog import Agent, AgentVersion
from chalicelib.domain.secret_headers import masked_config
from chalicelib.engine import agents as catalog
from chalicelib.errors import NotFound
from chalicelib.ids import ProjectId
from chalicelib.plugins.manager import plugins
from chalicelib.settings import get_settings
from chalicelib.store import agents

bp = Blueprint(__name__)

TAG = "agents"

Shown = TypeVar("Shown", Agent, AgentVersion)


def shown(resource: Shown) -> Shown:
    """The agent (or version) as an answer shows it: secret header values masked."""
    return resource.model_copy(update={"config": masked_config(resource.config)})


#: ``version_label``: tags the version the write archives; not a field of the agent.
VersionLabel = Field(None, min_length=1, max_length=200, description="Tags the new version")


class CreateAgent(RequestBody):
    project_id: ProjectId | None = Field(None, description="Required with the admin key")
    name: str = Field(min_length=1, max_length=200)
    type: str = Field(min_length=1, description="The adapter that calls the agent")
    config: dict[str, Any] = Field(default_factory=dict, description="The adapter's config")
    output_schema: dict[str, Any] | None = Field(
        None, description="JSON Schema of the agent's structured output"
    )
    version_label: str | None = VersionLabel


class UpdateAgent(RequestBody):
    name: str | None = Field(None, min_length=1, max_length=200)
    type: str | None = Field(None, min_length=1)
    config: dict[str, Any] | None = None
    output_schema: dict[str, Any] | None = Field(None, description="null removes it")
    version_label: str | None = VersionLabel


def _adapter_configs() -> dict[str, type[BaseModel]]:
    """Each registered agent type's config model, as far as this deployment accepts it."""
    configs: dict[str, type[BaseModel]] = {}
    for agent_type in plugins().adapter_types():
        model: type[BaseModel] = plugins().adapter(agent_type).config_model
        if issubclass(model, PythonAgentConfig):
            allowed = plugin_schemas.python_agent_config(get_settings().python_agent_modules)
            if allowed is None:
                continue  # no module allow-listed: every python agent is refused
            model = allowed
        configs[agent_type] = model
    return configs


def published_create() -> Any:
    return plugin_schemas.discriminated_bodies(CreateAgent, _adapter_configs())


def published_update() -> Any:
    return plugin_schemas.update_body(UpdateAgent, _adapter_configs())


def visible_agent(caller: Caller, agent_id: str) -> Agent:
    agent = agents.get_agent(agent_id)
    caller.check_visible(agent.project_id, "agent", agent.id)
    return agent


@endpoint(
    bp,
    "/api/v1/agents",
    "POST",
    access=on_collection("agents:CreateAgent", "agent"),
    body=CreateAgent,
    published_body=published_create,
    response=Agent,
    status=201,
    tag=TAG,
    operation_id="createAgent",
)
def create_agent(call: Call[CreateAgent, Any]) -> Agent:
    """Register an agent under test (version 1)."""
    body = call.body
    project_id = target_project(call.caller, body.project_id)
    check_config(call.caller, project_id, body.config)
    created = catalog.create_agent(
        project_id, body.name, body.type, body.config, body.output_schema, body.version_label
    )
    return shown(created)


@endpoint(
    bp,
    "/api/v1/agents",
    "GET",
    access=on_collection("agents:ListAgents", "agent"),
    query=NamedListQuery,
    response=Page[Agent],
    tag=TAG,
    operation_id="listAgents",
)
def list_agents(call: Call[Any, NamedListQuery]) -> dict[str, Any]:
    """List a project's agents, oldest first (``?name=``: the one of that name)."""
    project_id = call.caller.listing_project(call.query.project_id)
    return page(agents.list_agents(project_id, call.query.window(), call.query.name).map(shown))


@endpoint(
    bp,
    "/api/v1/agents/{agent_id}",
    "GET",
    access=on("agents:GetAgent", "agent_id"),
    response=Agent,
    tag=TAG,
    operation_id="getAgent",
)
def get_agent(call: Call[Any, Any]) -> Agent:
    """Get an agent at its current version."""
    return shown(visible_agent(call.caller, call.path["agent_id"]))


@endpoint(
    bp,
    "/api/v1/agents/{agent_id}",
    "PUT",
    access=on("agents:UpdateAgent", "agent_id"),
    body=UpdateAgent,
    published_body=published_update,
    response=Agent,
    tag=TAG,
    operation_id="updateAgent",
)
def update_agent(call: Call[UpdateAgent, Any]) -> Agent:
    """Partially update an agent; an update that changes it writes a new immutable version."""
    return _updated(call)


@endpoint(
    bp,
    "/api/v1/agents/{agent_id}",
    "PATCH",
    access=on("agents:UpdateAgent", "agent_id"),
    body=UpdateAgent,
    published_body=published_update,
    response=Agent,
    tag=TAG,
    operation_id="patchAgent",
)
def patch_agent(call: Call[UpdateAgent, Any]) -> Agent:
    """Partially update an agent: the same as PUT, and the same version history."""
    return _updated(call)


def _updated(call: Call[UpdateAgent, Any]) -> Agent:
    body = call.body
    refuse_nulls(body, "name", "type", "config", "version_label")
    agent = visible_agent(call.caller, call.path["agent_id"])
    if body.config is not None:
        check_config(call.caller, agent.project_id, body.config)
    changes = {name: getattr(body, name) for name in body.model_fields_set - {"version_label"}}
    return shown(catalog.update_agent(agent.id, changes, body.version_label))


class DeleteAgentQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")
    force: bool = Field(
        False, description="Delete even when it has generations or runs (its generations too)"
    )


@endpoint(
    bp,
    "/api/v1/agents/{agent_id}",
    "DELETE",
    access=on("agents:DeleteAgent", "agent_id"),
    query=DeleteAgentQuery,
    status=204,
    tag=TAG,
    operation_id="deleteAgent",
)
def delete_agent(call: Call[Any, DeleteAgentQuery]) -> None:
    """Delete an agent and its versions; 409 AGENT_IN_USE while evals reference it,
    409 AGENT_HAS_DEPENDENTS when it has generations or runs, unless ``force=true``
    (which deletes its generations too)."""
    agent = visible_agent(call.caller, call.path["agent_id"])
    catalog.delete_agent(agent, force=call.query.force)


@endpoint(
    bp,
    "/api/v1/agents/{agent_id}/versions",
    "GET",
    access=on("agents:ListAgentVersions", "agent_id"),
    query=ListQuery,
    response=Page[AgentVersion],
    tag=TAG,
    operation_id="listAgentVersions",
)
def list_agent_versions(call: Call[Any, ListQuery]) -> dict[str, Any]:
    """List an agent's versions, oldest (1) first."""
    agent = visible_agent(call.caller, call.path["agent_id"])
    return page(agents.list_versions(agent.id, call.query.window()).map(shown))


@endpoint(
    bp,
    "/api/v1/agents/{agent_id}/versions/{version}",
    "GET",
    access=on("agents:GetAgentVersion", "agent_id"),
    response=AgentVersion,
    tag=TAG,
    operation_id="getAgentVersion",
)
def get_agent_version(call: Call[Any, Any]) -> AgentVersion:
    """Get one immutable version of an agent."""
    agent = visible_agent(call.caller, call.path["agent_id"])
    raw = call.path["version"]
    if not raw.isdigit():
        raise NotFound(
            f"agent {agent.id} has no version {raw!r}", resource_type="agent_version", id=agent.id
        )
    return shown(agents.get_agent_version(agent.id, int(raw)))
