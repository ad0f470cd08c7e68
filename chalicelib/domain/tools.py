"""Tools as the API shows them, and the config model of each tool type.

A tool is a project resource that something server-side calls with a JSON input and reads
a JSON answer from: ``tool`` scorers grade items with one, ``tool``-backed deciders answer
questions with one. ``client`` tools exist as resources (an agent may declare one) but
nothing server-side can call them: they pause for a calling client.

``{{context:KEY}}`` tokens in an http tool's header values (and in string values of its
``preset_parameters``) are filled from the run's ``tool_context`` at call time;
``context_keys``, when given, is the only part of that bag the tool ever sees.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    HttpUrl,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
)

from chalicelib.domain.base import Resource
from chalicelib.domain.secret_headers import masked_config_field

ToolType = Literal["http", "lambda", "builtin", "client"]
TOOL_TYPES: tuple[str, ...] = ("http", "lambda", "builtin", "client")
#: Types the server can call. A ``client`` tool pauses for a calling client instead.
SERVER_CALLABLE: frozenset[str] = frozenset({"http", "lambda", "builtin"})

CONTEXT_TOKEN = re.compile(r"\{\{context:([^{}]*)\}\}")
_HEADER_NAME = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")
#: A header token as the document states it (``context_keys`` entries, header names); the
#: validators below enforce the same pattern with their own messages.
HeaderToken = Annotated[str, WithJsonSchema({"type": "string", "pattern": _HEADER_NAME.pattern})]
MAX_PRESET_KEYS = 50


def is_header_token(text: str) -> bool:
    """True when ``text`` may be an HTTP header name (or part of one)."""
    return bool(_HEADER_NAME.match(text))


def context_tokens(value: Any) -> set[str]:
    """Every ``{{context:KEY}}`` key named anywhere inside ``value`` (strings, lists, dicts)."""
    if isinstance(value, str):
        return set(CONTEXT_TOKEN.findall(value))
    if isinstance(value, dict):
        return {key for item in value.values() for key in context_tokens(item)}
    if isinstance(value, list):
        return {key for item in value for key in context_tokens(item)}
    return set()


class ToolConfig(BaseModel):
    """Base of every tool type's config: unknown keys are refused."""

    model_config = ConfigDict(extra="forbid")


def _check_context_keys(keys: list[str] | None) -> list[str] | None:
    if keys is None:
        return None
    for key in keys:
        if not is_header_token(key):
            raise ValueError(f"{key!r} cannot be a tool_context key (it must be a header token)")
    return list(dict.fromkeys(keys))


def _check_tokens(named: set[str], context_keys: list[str] | None) -> None:
    """Every token must name a usable key, and one that ``context_keys`` lets through."""
    for key in sorted(named):
        if not is_header_token(key):
            raise ValueError(f"{{{{context:{key}}}}} does not name a valid tool_context key")
        if context_keys is not None and key not in context_keys:
            raise ValueError(
                f"{{{{context:{key}}}}} names a key that context_keys does not let through"
            )


class HttpToolConfig(ToolConfig):
    """POST the input as JSON to ``url``; the answer is JSON (or text holding a JSON object)."""

    url: HttpUrl
    # Declared before the fields holding tokens: their validators read it.
    context_keys: list[HeaderToken] | None = Field(
        None, max_length=50, description="Only these tool_context keys reach the tool"
    )
    # additionalProperties: a name outside the token pattern is refused, so the document
    # must not admit it (patternProperties alone would).
    headers: dict[HeaderToken, str] = Field(
        default_factory=dict, max_length=50, json_schema_extra={"additionalProperties": False}
    )
    preset_parameters: dict[str, Any] = Field(default_factory=dict, max_length=MAX_PRESET_KEYS)
    timeout_s: float = Field(30.0, gt=0, le=900)

    @field_validator("context_keys")
    @classmethod
    def _context_keys(cls, keys: list[str] | None) -> list[str] | None:
        return _check_context_keys(keys)

    @field_validator("headers")
    @classmethod
    def _headers(cls, headers: dict[str, str], info: ValidationInfo) -> dict[str, str]:
        for name in headers:
            if not is_header_token(name):
                raise ValueError(f"{name!r} is not a valid header name")
        _check_tokens(context_tokens(headers), info.data.get("context_keys"))
        return headers

    @field_validator("preset_parameters")
    @classmethod
    def _presets(cls, presets: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        _check_tokens(context_tokens(presets), info.data.get("context_keys"))
        return presets


class LambdaToolConfig(ToolConfig):
    """Invoke an AWS Lambda function synchronously with the input as its event.

    A Lambda has no headers: the (narrowed) tool_context travels in the event under
    ``tool_context``, and only when ``context_keys`` names the keys to send.
    """

    function_name: str = Field(min_length=1, max_length=170)
    preset_parameters: dict[str, Any] = Field(default_factory=dict, max_length=MAX_PRESET_KEYS)
    context_keys: list[HeaderToken] = Field(default_factory=list, max_length=50)

    @field_validator("context_keys")
    @classmethod
    def _context_keys(cls, keys: list[str]) -> list[str]:
        return _check_context_keys(keys) or []


class BuiltinToolConfig(ToolConfig):
    """Actions registered by plugins (``pawl_register_builtin_tools``), run in-process."""

    actions: list[str] = Field(min_length=1, max_length=50)
    preset_parameters: dict[str, Any] = Field(default_factory=dict, max_length=MAX_PRESET_KEYS)

    @field_validator("actions")
    @classmethod
    def _unique(cls, actions: list[str]) -> list[str]:
        if len(set(actions)) != len(actions):
            raise ValueError("actions must be distinct")
        return actions


#: What a plugin registers per ``builtin`` action: called with the tool input (the tool's
#: ``preset_parameters`` merged with the caller's payload); answers a JSON object, or text
#: holding one. Anything else errors the call.
BuiltinToolAction = Callable[[dict[str, Any]], dict[str, Any] | str]


class ClientToolConfig(ToolConfig):
    """A tool a calling client executes; ``parameters`` documents its input (JSON Schema)."""

    parameters: dict[str, Any] | None = None


CONFIG_MODELS: dict[str, type[ToolConfig]] = {
    "http": HttpToolConfig,
    "lambda": LambdaToolConfig,
    "builtin": BuiltinToolConfig,
    "client": ClientToolConfig,
}


class Tool(Resource):
    id: str
    project_id: str
    name: str
    description: str | None = None
    type: ToolType
    config: dict[str, Any] = masked_config_field()
    created_at: str
    updated_at: str

    def parsed_config(self) -> ToolConfig:
        """The config as its type's model (stored configs were validated when written)."""
        return CONFIG_MODELS[self.type].model_validate(self.config)

    @property
    def server_callable(self) -> bool:
        return self.type in SERVER_CALLABLE
