"""``builtin`` tools: actions plugins register (``pawl_register_builtin_tools``), run in-process."""

from __future__ import annotations

import logging
from typing import Any

from chalicelib.domain.tools import BuiltinToolConfig
from chalicelib.plugins.manager import plugins
from chalicelib.tools.errors import TOOL_ANSWER_INVALID, TOOL_NOT_CALLABLE, ToolFailed
from chalicelib.tools.json_object import first_json_object

log = logging.getLogger("pawl.tools")
MESSAGE_CHARS = 500


def available_actions() -> set[str]:
    """Every action some installed plugin registers."""
    return set(plugins().builtin_tools())


def invoke(config: BuiltinToolConfig, action: str | None, payload: dict[str, Any]) -> Any:
    if action is None or action not in config.actions:
        raise ToolFailed(
            f"builtin tool action {action!r} is not one of the tool's actions {config.actions}",
            TOOL_NOT_CALLABLE,
        )
    function = plugins().builtin_tools().get(action)
    if function is None:
        raise ToolFailed(
            f"no installed plugin provides builtin tool action {action!r}", TOOL_NOT_CALLABLE
        )
    try:
        raw_answer = function({**config.preset_parameters, **payload})
    except Exception as exc:  # a plugin's failure is this call's failure, never the worker's
        log.info("builtin tool action %s raised %s", action, type(exc).__name__)
        raise ToolFailed(
            f"builtin tool action {action!r} raised {type(exc).__name__}: {exc}"[:MESSAGE_CHARS]
        ) from None
    answer = first_json_object(raw_answer) if isinstance(raw_answer, str) else raw_answer
    if not isinstance(answer, dict):
        raise ToolFailed(
            f"builtin tool action {action!r} answered with no JSON object", TOOL_ANSWER_INVALID
        )
    return answer
