"""Which part of a run's ``tool_context`` reaches a tool, and filling ``{{context:KEY}}``.

Pure functions. A token naming a key the (narrowed) bag does not hold is an error, never
an empty string: a tool sent ``Authorization: Bearer `` would grade a configuration other
than production's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chalicelib.domain.tools import CONTEXT_TOKEN

MISSING_TOOL_CONTEXT_KEY = "MISSING_TOOL_CONTEXT_KEY"


class MissingContextKey(Exception):
    """A ``{{context:KEY}}`` token named a key the tool's context does not hold."""

    def __init__(self, key: str, where: str) -> None:
        super().__init__(
            f"{where} needs tool_context key {key!r}, which the run did not supply "
            "(pass it in the run's tool_context)"
        )
        self.key = key


def narrowed(tool_context: Mapping[str, str], context_keys: list[str] | None) -> dict[str, str]:
    """The keys that reach the tool: all of them, or only those ``context_keys`` names."""
    if context_keys is None:
        return dict(tool_context)
    return {key: tool_context[key] for key in context_keys if key in tool_context}


def fill_text(text: str, context: Mapping[str, str], where: str) -> str:
    """``text`` with each ``{{context:KEY}}`` replaced in one pass (values never re-expanded)."""

    def replace(match: Any) -> str:
        key = match.group(1)
        if key not in context:
            raise MissingContextKey(key, where)
        return context[key]

    return CONTEXT_TOKEN.sub(replace, text)


def fill_value(value: Any, context: Mapping[str, str], where: str) -> Any:
    """``value`` with tokens filled in every string it holds, at any depth."""
    if isinstance(value, str):
        return fill_text(value, context, where)
    if isinstance(value, dict):
        return {k: fill_value(v, context, f"{where}.{k}") for k, v in value.items()}
    if isinstance(value, list):
        return [fill_value(v, context, f"{where}.{i}") for i, v in enumerate(value)]
    return value
