"""Calling a project's tool: one entry point whatever the tool's type.

``call_tool(tool, payload, tool_context=..., action=...)`` returns the tool's answer as a
JSON object, or raises :class:`ToolFailed` (or :class:`MissingContextKey` when a
``{{context:KEY}}`` token names a key the run did not supply). Callers (the ``tool``
scorer, tool-backed deciders) read their own contract out of the object.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chalicelib.domain.tools import BuiltinToolConfig, HttpToolConfig, LambdaToolConfig, Tool
from chalicelib.tools import builtin_tool, http_tool, lambda_tool
from chalicelib.tools.context import MISSING_TOOL_CONTEXT_KEY, MissingContextKey
from chalicelib.tools.errors import (
    TOOL_ANSWER_INVALID,
    TOOL_CALL_FAILED,
    TOOL_NOT_CALLABLE,
    ToolFailed,
)

__all__ = [
    "MISSING_TOOL_CONTEXT_KEY",
    "TOOL_ANSWER_INVALID",
    "TOOL_CALL_FAILED",
    "TOOL_NOT_CALLABLE",
    "MissingContextKey",
    "ToolFailed",
    "call_tool",
]


def call_tool(
    tool: Tool,
    payload: dict[str, Any],
    *,
    tool_context: Mapping[str, str] | None = None,
    action: str | None = None,
) -> dict[str, Any]:
    """Call ``tool`` with ``payload`` (merged over the tool's own preset_parameters)."""
    config = tool.parsed_config()
    context = tool_context or {}
    if isinstance(config, HttpToolConfig):
        answer = http_tool.invoke(config, payload, context, tool.project_id)
    elif isinstance(config, LambdaToolConfig):
        answer = lambda_tool.invoke(config, payload, context)
    elif isinstance(config, BuiltinToolConfig):
        answer = builtin_tool.invoke(config, action, payload)
    else:
        raise ToolFailed(
            f"tool {tool.id} is a {tool.type} tool: it pauses for a calling client and "
            "cannot be called server-side",
            TOOL_NOT_CALLABLE,
        )
    return dict(answer)
