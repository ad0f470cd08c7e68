"""Config models of the built-in agent types (unknown keys refused, errors name the field)."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import Field, HttpUrl, WithJsonSchema, field_validator, model_validator

from chalicelib.agents.contract import AdapterConfig
from chalicelib.domain.secrets import SecretRef

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
#: ``module.path:attribute``: dotted identifiers, then one identifier not starting with ``_``
#: (no ``os:__dict__``-style reach into a module's internals).
CALLABLE_PATH = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*:[A-Za-z]\w*$", re.ASCII)
_HEADER_NAME = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")


#: The published shape of an http agent's headers: names are header tokens (the validator
#: below says which name is not one); without it a schema-valid name could be refused.
_HEADERS_SCHEMA = {
    "type": "object",
    "propertyNames": {"pattern": _HEADER_NAME.pattern},
    "additionalProperties": {"type": "string"},
}


class HttpAgentConfig(AdapterConfig):
    url: HttpUrl
    headers: Annotated[dict[str, str], WithJsonSchema(_HEADERS_SCHEMA)] = Field(
        default_factory=dict
    )
    timeout_s: float = Field(30.0, gt=0, le=900)

    @field_validator("headers")
    @classmethod
    def _header_names(cls, headers: dict[str, str]) -> dict[str, str]:
        for name in headers:
            if not _HEADER_NAME.match(name):
                raise ValueError(f"{name!r} is not a valid header name")
        return headers


class ModelAgentConfig(AdapterConfig):
    base_url: HttpUrl
    model: str = Field(min_length=1)
    instructions: str = ""
    #: The project secret whose value is the bearer key (resolved at call time).
    secret_id: SecretRef | None = None
    api_key_env: (
        Annotated[str, WithJsonSchema({"type": "string", "pattern": _ENV_NAME.pattern})] | None
    ) = Field(None, description="Only a variable the operator lists in PAWL_CREDENTIAL_ENV_ALLOW")
    timeout_s: float = Field(60.0, gt=0, le=900)

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, value: str | None) -> str | None:
        if value is not None and not _ENV_NAME.match(value):
            raise ValueError("must be an environment variable name")
        return value

    @model_validator(mode="after")
    def _one_key_source(self) -> ModelAgentConfig:
        if self.secret_id is not None and self.api_key_env is not None:
            raise ValueError("give secret_id or api_key_env, not both")
        return self


class LambdaAgentConfig(AdapterConfig):
    function_name: str = Field(min_length=1, max_length=170)


class PythonAgentConfig(AdapterConfig):
    callable: str = Field(description="module:function")

    @field_validator("callable")
    @classmethod
    def _callable_path(cls, value: str) -> str:
        if not CALLABLE_PATH.match(value):
            raise ValueError(
                "must be 'module:function' (the function a plain identifier not starting with '_')"
            )
        return value
