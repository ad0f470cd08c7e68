"""Project tools: the rules a tool's create and update follow beyond the body.

A config is stored as its type's model dumps it, and refused (naming ``config.<field>``)
when the model refuses it, when an http tool's URL is one the outbound client would
refuse, or when a builtin tool names an action no installed plugin provides. Changing a
tool's type needs the new type's config; a secret header sent back masked (as every read
shows it) keeps its stored value.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from chalicelib import outbound
from chalicelib.domain.secret_headers import restore_masked
from chalicelib.domain.tools import CONFIG_MODELS, HttpToolConfig, Tool
from chalicelib.errors import ValidationFailed, validation_error_from_pydantic
from chalicelib.store import tenancy
from chalicelib.store import tools as store
from chalicelib.tools.builtin_tool import available_actions


def validated_config(tool_type: str, config: dict[str, Any]) -> dict[str, Any]:
    """The config as its type's model stores it; a refusal names ``config.<field>``."""
    try:
        parsed = CONFIG_MODELS[tool_type].model_validate(config)
    except ValidationError as exc:
        raise validation_error_from_pydantic(exc, prefix="config") from None
    if isinstance(parsed, HttpToolConfig):
        try:
            outbound.check_url(str(parsed.url))
        except outbound.OutboundError as exc:
            raise ValidationFailed(
                f"config.url is not allowed: {exc}", field="config.url"
            ) from None
    actions = getattr(parsed, "actions", None)
    if tool_type == "builtin" and actions is not None:
        known = available_actions()
        for index, action in enumerate(actions):
            if action not in known:
                raise ValidationFailed(
                    f"no installed plugin provides builtin action {action!r} "
                    f"(available: {', '.join(sorted(known)) or 'none'})",
                    field=f"config.actions.{index}",
                )
    return parsed.model_dump(mode="json")


def create_tool(
    project_id: str, name: str, description: str | None, tool_type: str, config: dict[str, Any]
) -> Tool:
    """Create the tool (name unique in the project) once its config passes."""
    config = validated_config(tool_type, config)
    tenancy.get_project(project_id)
    return store.create_tool(project_id, name, description, tool_type, config)


def update_tool(tool: Tool, given: Mapping[str, Any]) -> Tool:
    """Apply ``given`` (only the fields the caller gave: ``name``, ``description``,
    ``type``, ``config``; only ``description`` may be None) to the tool."""
    changes: dict[str, Any] = {}
    if given.get("name") is not None:
        changes["name"] = given["name"]
    if "description" in given:
        changes["description"] = given["description"]
    new_type = given.get("type") or tool.type
    config = given.get("config")
    if new_type != tool.type and config is None:
        raise ValidationFailed("changing type needs the new type's config", field="config")
    if config is not None:
        changes["type"] = new_type
        changes["config"] = validated_config(new_type, restore_masked(config, tool.config))
    return store.update_tool(tool, changes)
