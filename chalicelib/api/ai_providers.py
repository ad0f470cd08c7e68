"""AI providers (``/api/v1/ai-providers``): a project's OpenAI-compatible model endpoints.

The key is a project secret (``secret_id``; the caller must be allowed to read it), or an
``api_key_env`` the operator lists in ``PAWL_CREDENTIAL_ENV_ALLOW``; no answer holds a key.
The rules of its writes are :mod:`chalicelib.engine.ai_providers`.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from chalice import Blueprint
from pydantic import Field, WithJsonSchema, field_validator

from chalicelib.api.access import on, on_collection
from chalicelib.api.auth import Caller
from chalicelib.api.common import refuse_nulls
from chalicelib.api.routing import Call, ProjectListQuery, endpoint, page
from chalicelib.api.secret_refs import check_secret
from chalicelib.domain.ai_providers import AiProvider
from chalicelib.domain.base import Page, RequestBody
from chalicelib.domain.secrets import SecretRef
from chalicelib.engine import ai_providers as catalog
from chalicelib.ids import ProjectId
from chalicelib.store import ai_providers as store

bp = Blueprint(__name__)

TAG = "ai-providers"
ITEM = "/api/v1/ai-providers/{provider_id}"
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
MAX_URL_LENGTH = 2048
#: What the document states of ``api_key_env`` (``_env_name`` enforces it) and of URLs
#: (the outbound policy enforces more: a host, and an address it allows).
EnvName = Annotated[
    str, WithJsonSchema({"type": "string", "pattern": _ENV_NAME.pattern, "maxLength": 256})
]
HTTP_URL_SCHEMA = {
    "type": "string",
    "pattern": r"^https?://[^\x00-\x20\x7f/?#@]+(?:[/?#][^\x00-\x20\x7f]*)?$",
    "maxLength": MAX_URL_LENGTH,
}
UrlText = Annotated[str, WithJsonSchema(HTTP_URL_SCHEMA)]


def _env_name(value: str | None) -> str | None:
    if value is not None and not _ENV_NAME.match(value):
        raise ValueError("must be an environment variable name (letters, digits, _)")
    return value


class CreateAiProvider(RequestBody):
    project_id: ProjectId | None = Field(None, description="Required with the admin key")
    name: str = Field(min_length=1, max_length=200)
    base_url: UrlText = Field(min_length=1, max_length=MAX_URL_LENGTH)
    api_key_env: EnvName | None = Field(
        None, max_length=256, description="A variable PAWL_CREDENTIAL_ENV_ALLOW lists"
    )
    secret_id: SecretRef | None = Field(None, description="The project secret holding the key")
    default_model: str = Field(min_length=1, max_length=200)

    _check_env = field_validator("api_key_env")(_env_name)


class UpdateAiProvider(RequestBody):
    name: str | None = Field(None, min_length=1, max_length=200)
    base_url: UrlText | None = Field(None, min_length=1, max_length=MAX_URL_LENGTH)
    api_key_env: EnvName | None = Field(None, max_length=256, description="null: send no key")
    secret_id: SecretRef | None = Field(None, description="null: unlink the secret")
    default_model: str | None = Field(None, min_length=1, max_length=200)

    _check_env = field_validator("api_key_env")(_env_name)


def _visible(caller: Caller, provider_id: str) -> AiProvider:
    provider = store.get_provider(provider_id)
    caller.check_visible(provider.project_id, store.KIND, provider.id)
    return provider


@endpoint(
    bp,
    "/api/v1/ai-providers",
    "POST",
    access=on_collection("ai-providers:CreateAiProvider", "ai-provider"),
    body=CreateAiProvider,
    response=AiProvider,
    status=201,
    tag=TAG,
    operation_id="createAiProvider",
)
def create_ai_provider(call: Call[CreateAiProvider, Any]) -> AiProvider:
    """Create an AI provider (name unique in the project)."""
    body = call.body
    project_id = call.caller.listing_project(body.project_id)
    if body.secret_id is not None:
        check_secret(call.caller, project_id, body.secret_id, "secret_id")
    return catalog.create_provider(project_id, body.model_dump(exclude={"project_id"}))


@endpoint(
    bp,
    "/api/v1/ai-providers",
    "GET",
    access=on_collection("ai-providers:ListAiProviders", "ai-provider"),
    query=ProjectListQuery,
    response=Page[AiProvider],
    tag=TAG,
    operation_id="listAiProviders",
)
def list_ai_providers(call: Call[Any, ProjectListQuery]) -> dict[str, Any]:
    """List a project's AI providers, oldest first."""
    project_id = call.caller.listing_project(call.query.project_id)
    return page(store.list_providers(project_id, call.query.window()))


@endpoint(
    bp,
    ITEM,
    "GET",
    access=on("ai-providers:GetAiProvider", "provider_id"),
    response=AiProvider,
    tag=TAG,
    operation_id="getAiProvider",
)
def get_ai_provider(call: Call[Any, Any]) -> AiProvider:
    """Get an AI provider."""
    return _visible(call.caller, call.path["provider_id"])


@endpoint(
    bp,
    ITEM,
    "PUT",
    access=on("ai-providers:UpdateAiProvider", "provider_id"),
    body=UpdateAiProvider,
    response=AiProvider,
    tag=TAG,
    operation_id="updateAiProvider",
)
def update_ai_provider(call: Call[UpdateAiProvider, Any]) -> AiProvider:
    """Change a provider's fields; omitted fields keep their value, ``api_key_env: null`` clears."""
    body = call.body
    refuse_nulls(body, "name", "base_url", "default_model")
    current = _visible(call.caller, call.path["provider_id"])
    if body.secret_id is not None:
        check_secret(call.caller, current.project_id, body.secret_id, "secret_id")
    elif _redirects_its_secret(current, body):
        # Moving a provider that keeps its secret decides where that secret is sent: the
        # caller must be allowed to bind it, as if it had named it (an agent's PUT, which
        # restates its config's secret_id, is checked the same way).
        check_secret(call.caller, current.project_id, current.secret_id or "", "secret_id")
    return catalog.update_provider(current, body.model_dump(include=body.model_fields_set))


def _redirects_its_secret(current: AiProvider, body: UpdateAiProvider) -> bool:
    keeps_secret = current.secret_id is not None and "secret_id" not in body.model_fields_set
    return keeps_secret and "base_url" in body.model_fields_set


@endpoint(
    bp,
    ITEM,
    "DELETE",
    access=on("ai-providers:DeleteAiProvider", "provider_id"),
    status=204,
    tag=TAG,
    operation_id="deleteAiProvider",
)
def delete_ai_provider(call: Call[Any, Any]) -> None:
    """Delete a provider; refused (409) while an eval's judge pins it or it is the default."""
    catalog.delete_provider(_visible(call.caller, call.path["provider_id"]))
