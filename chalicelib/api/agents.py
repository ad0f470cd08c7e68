"""Agents under test and their immutable versions (``/api/v1/agents``).

Every answer shows secret header values masked (:mod:`chalicelib.domain.secret_headers`).
"""

from __future__ import annotations

from typing import Any, TypeVar

from chalice import Blueprint
from jsonschema.exceptions import SchemaError
from jsonschema.validators import validator_for
from pydantic import BaseModel, Field, ValidationError

from chalicelib.agents.configs import PythonAgentConfig
from chalicelib.api import plugin_schemas
from chalicelib.api.auth import Caller
from chalicelib.api.common import refuse_nulls, target_project
from chalicelib.api.envelope import validation_error_from_pydantic
from chalicelib.api.routing import Call, ListQuery, ProjectListQuery, endpoint, page
from chalicelib.domain.base import Page, RequestBody
from chalicelib.domain.catalog import Agent, AgentVersion, Eval
from chalicelib.domain.secret_headers import masked_config, restore_masked
from chalicelib.errors import NotFound, ValidationFailed
from chalicelib.ids import ProjectId
from chalicelib.plugins.manager import plugins
from chalicelib.scoring.validation import evals_needing_output_schema
from chalicelib.settings import get_settings
from chalicelib.store import agents
from chalicelib.store.evals import list_evals_for_agent, run_with_retry

bp = Blueprint(__name__)

TAG = "agents"

Shown = TypeVar("Shown", Agent, AgentVersion)


def shown(resource: Shown) -> Shown:
    """The agent (or version) as an answer shows it: secret header values masked."""
    return resource.model_copy(update={"config": masked_config(resource.config)})


class CreateAgent(RequestBody):
    project_id: ProjectId | None = Field(None, description="Required with the admin key")
    name: str = Field(min_length=1, max_length=200)
    type: str = Field(min_length=1, description="The adapter that calls the agent")
    config: dict[str, Any] = Field(default_factory=dict, description="The adapter's config")
    output_schema: dict[str, Any] | None = Field(
        None, description="JSON Schema of the agent's structured output"
    )


class UpdateAgent(RequestBody):
    name: str | None = Field(None, min_length=1, max_length=200)
    type: str | None = Field(None, min_length=1)
    config: dict[str, Any] | None = None
    output_schema: dict[str, Any] | None = Field(None, description="null removes it")


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


def validated_config(agent_type: str, config: dict[str, Any]) -> dict[str, Any]:
    """Check ``config`` with the adapter of ``agent_type``; errors name ``config.<key>``."""
    adapter = plugins().adapter(agent_type)
    try:
        parsed = adapter.config_model.model_validate(config)
    except ValidationError as exc:
        raise validation_error_from_pydantic(exc, prefix="config") from exc
    adapter.check(parsed)
    return config


def check_output_schema(schema: dict[str, Any] | None) -> None:
    if schema is None:
        return
    try:
        validator_for(schema).check_schema(schema)
    except SchemaError as exc:
        path = ".".join(str(p) for p in exc.path)
        field = f"output_schema.{path}" if path else "output_schema"
        raise ValidationFailed(
            f"output_schema is not a valid JSON Schema: {exc.message}", field=field
        ) from None


def visible_agent(caller: Caller, agent_id: str) -> Agent:
    agent = agents.get_agent(agent_id)
    caller.check_visible(agent.project_id, "agent", agent.id)
    return agent


def _refuse_dropping_schema(agent_id: str, evals: list[Eval]) -> None:
    needing = evals_needing_output_schema(evals)
    if needing:
        names = ", ".join(f"{e.name} ({e.id})" for e in needing)
        raise ValidationFailed(
            f"output_schema cannot be removed: the output_schema scorer of evals {names} "
            f"needs it (agent {agent_id})",
            field="output_schema",
            evals=[{"id": e.id, "name": e.name} for e in needing],
        )


@endpoint(
    bp,
    "/api/v1/agents",
    "POST",
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
    config = validated_config(body.type, body.config)
    check_output_schema(body.output_schema)
    return shown(agents.create_agent(project_id, body.name, body.type, config, body.output_schema))


@endpoint(
    bp,
    "/api/v1/agents",
    "GET",
    query=ProjectListQuery,
    response=Page[Agent],
    tag=TAG,
    operation_id="listAgents",
)
def list_agents(call: Call[Any, ProjectListQuery]) -> dict[str, Any]:
    """List a project's agents, oldest first."""
    project_id = call.caller.listing_project(call.query.project_id)
    found, cursor = agents.list_agents(project_id, call.query.limit, call.query.cursor)
    return page([shown(agent) for agent in found], cursor)


@endpoint(bp, "/api/v1/agents/{agent_id}", "GET", response=Agent, tag=TAG, operation_id="getAgent")
def get_agent(call: Call[Any, Any]) -> Agent:
    """Get an agent at its current version."""
    return shown(visible_agent(call.caller, call.path["agent_id"]))


@endpoint(
    bp,
    "/api/v1/agents/{agent_id}",
    "PUT",
    body=UpdateAgent,
    published_body=published_update,
    response=Agent,
    tag=TAG,
    operation_id="updateAgent",
)
def update_agent(call: Call[UpdateAgent, Any]) -> Agent:
    """Partially update an agent; every update writes a new immutable version."""
    body = call.body
    refuse_nulls(body, "name", "type", "config")
    agent_id = visible_agent(call.caller, call.path["agent_id"]).id
    given = body.model_fields_set

    def attempt() -> Agent:
        basis = agents.load_for_update(agent_id)
        current = basis.agent
        agent_type = body.type or current.type
        # A secret header sent back masked (as every read shows it) keeps its stored value.
        config = (
            current.config if body.config is None else restore_masked(body.config, current.config)
        )
        if "type" in given or "config" in given:
            config = validated_config(agent_type, config)
        schema = body.output_schema if "output_schema" in given else current.output_schema
        check_output_schema(schema)
        if schema is None:
            _refuse_dropping_schema(agent_id, basis.evals)
        return agents.update_agent(basis, body.name or current.name, agent_type, config, schema)

    result: Agent = run_with_retry(attempt)
    return shown(result)


@endpoint(
    bp, "/api/v1/agents/{agent_id}", "DELETE", status=204, tag=TAG, operation_id="deleteAgent"
)
def delete_agent(call: Call[Any, Any]) -> None:
    """Delete an agent and its versions; 409 AGENT_IN_USE while evals reference it."""
    agent = visible_agent(call.caller, call.path["agent_id"])
    evals = list_evals_for_agent(agent.id)
    if evals:
        raise agents.agent_in_use(agent.id, evals)
    agents.delete_agent(agent)


@endpoint(
    bp,
    "/api/v1/agents/{agent_id}/versions",
    "GET",
    query=ListQuery,
    response=Page[AgentVersion],
    tag=TAG,
    operation_id="listAgentVersions",
)
def list_agent_versions(call: Call[Any, ListQuery]) -> dict[str, Any]:
    """List an agent's versions, oldest (1) first."""
    agent = visible_agent(call.caller, call.path["agent_id"])
    found, cursor = agents.list_versions(agent.id, call.query.limit, call.query.cursor)
    return page([shown(version) for version in found], cursor)


@endpoint(
    bp,
    "/api/v1/agents/{agent_id}/versions/{version}",
    "GET",
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
