"""Tools (``/api/v1/tools``): what ``tool`` scorers and tool-backed deciders call.

``type`` selects the config model (``http``, ``lambda``, ``builtin``, ``client``); a
config is validated whole on every write, so a stored tool is always callable as stored
(a ``client`` tool is stored but never called server-side).
"""

from __future__ import annotations

from typing import Any

from chalice import Blueprint
from pydantic import BaseModel, Field

from chalicelib.api import plugin_schemas
from chalicelib.api.access import on, on_collection
from chalicelib.api.common import refuse_nulls
from chalicelib.api.routing import Call, ProjectListQuery, endpoint, page
from chalicelib.api.secret_refs import check_config
from chalicelib.domain.base import Page, RequestBody
from chalicelib.domain.secret_headers import masked_config
from chalicelib.domain.tools import CONFIG_MODELS, BuiltinToolConfig, Tool, ToolType
from chalicelib.engine import tools as catalog
from chalicelib.ids import ProjectId
from chalicelib.store import tools as store
from chalicelib.tools.builtin_tool import available_actions

bp = Blueprint(__name__)

TAG = "tools"
NAME = Field(min_length=1, max_length=200)
DESCRIPTION = Field(None, max_length=10_000)


class CreateTool(RequestBody):
    project_id: ProjectId | None = Field(None, description="Required with the admin key")
    name: str = NAME
    description: str | None = DESCRIPTION
    type: ToolType
    config: dict[str, Any] = Field(default_factory=dict)


class UpdateTool(RequestBody):
    """Partial update. ``config`` replaces the whole config; a new ``type`` needs one."""

    name: str | None = Field(None, min_length=1, max_length=200)
    description: str | None = DESCRIPTION
    type: ToolType | None = None
    config: dict[str, Any] | None = None


def _type_configs() -> dict[str, type[BaseModel]]:
    """Each tool type's config model as this deployment accepts it (builtin: installed actions)."""
    configs: dict[str, type[BaseModel]] = dict(CONFIG_MODELS)
    builtin = plugin_schemas.builtin_actions_config(BuiltinToolConfig, sorted(available_actions()))
    if builtin is None:
        del configs["builtin"]  # no plugin provides an action: every builtin tool is refused
    else:
        configs["builtin"] = builtin
    return configs


def published_create() -> Any:
    return plugin_schemas.discriminated_bodies(CreateTool, _type_configs())


def published_update() -> Any:
    return plugin_schemas.update_body(UpdateTool, _type_configs())


def shown(tool: Tool) -> Tool:
    """The tool as an answer shows it: secret header values masked."""
    return tool.model_copy(update={"config": masked_config(tool.config)})


def visible_tool(call: Call[Any, Any]) -> Tool:
    tool = store.get_tool(call.path["tool_id"])
    call.caller.check_visible(tool.project_id, "tool", tool.id)
    return tool


@endpoint(
    bp,
    "/api/v1/tools",
    "POST",
    access=on_collection("tools:CreateTool", "tool"),
    body=CreateTool,
    published_body=published_create,
    response=Tool,
    status=201,
    tag=TAG,
    operation_id="createTool",
)
def create_tool(call: Call[CreateTool, Any]) -> Tool:
    """Create a tool (name unique in the project)."""
    body = call.body
    project_id = call.caller.listing_project(body.project_id)
    check_config(call.caller, project_id, body.config)
    created = catalog.create_tool(project_id, body.name, body.description, body.type, body.config)
    return shown(created)


@endpoint(
    bp,
    "/api/v1/tools",
    "GET",
    access=on_collection("tools:ListTools", "tool"),
    query=ProjectListQuery,
    response=Page[Tool],
    tag=TAG,
    operation_id="listTools",
)
def list_tools(call: Call[Any, ProjectListQuery]) -> dict[str, Any]:
    """List a project's tools, oldest first."""
    project_id = call.caller.listing_project(call.query.project_id)
    return page(store.list_tools(project_id, call.query.window()).map(shown))


@endpoint(
    bp,
    "/api/v1/tools/{tool_id}",
    "GET",
    access=on("tools:GetTool", "tool_id"),
    response=Tool,
    tag=TAG,
    operation_id="getTool",
)
def get_tool(call: Call[Any, Any]) -> Tool:
    """Get a tool."""
    return shown(visible_tool(call))


@endpoint(
    bp,
    "/api/v1/tools/{tool_id}",
    "PUT",
    access=on("tools:UpdateTool", "tool_id"),
    body=UpdateTool,
    published_body=published_update,
    response=Tool,
    tag=TAG,
    operation_id="updateTool",
)
def update_tool(call: Call[UpdateTool, Any]) -> Tool:
    """Rename a tool, change its description, or replace its config (and type)."""
    body = call.body
    refuse_nulls(body, "name", "type", "config")
    given = {name: getattr(body, name) for name in body.model_fields_set}
    tool = visible_tool(call)
    if body.config is not None:
        check_config(call.caller, tool.project_id, body.config)
    return shown(catalog.update_tool(tool, given))


@endpoint(
    bp,
    "/api/v1/tools/{tool_id}",
    "DELETE",
    access=on("tools:DeleteTool", "tool_id"),
    status=204,
    tag=TAG,
    operation_id="deleteTool",
)
def delete_tool(call: Call[Any, Any]) -> None:
    """Delete a tool. Eval scorers naming it then fail at run start (400)."""
    store.delete_tool(visible_tool(call))
