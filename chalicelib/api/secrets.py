"""Project secrets (``/api/v1/secrets``): credentials a tenant's resources use at call
time; no answer ever holds a value (``has_value`` says whether one is on file).

SOAT's operations and fields (``docs/secrets.md`` records where pawl differs). Values are
sealed at rest (``chalicelib.secretbox``); the rules of a delete are
:mod:`chalicelib.engine.secrets`.
"""

from __future__ import annotations

from typing import Any

from chalice import Blueprint
from pydantic import BaseModel, ConfigDict, Field

from chalicelib.api.access import on, on_collection
from chalicelib.api.auth import Caller
from chalicelib.api.common import refuse_nulls, target_project
from chalicelib.api.routing import Call, ProjectListQuery, endpoint, page
from chalicelib.domain.base import Page, RequestBody
from chalicelib.domain.secrets import Secret
from chalicelib.engine import secrets as rules
from chalicelib.ids import ProjectId
from chalicelib.store import secrets as store

bp = Blueprint(__name__)

TAG = "secrets"
ITEM = "/api/v1/secrets/{secret_id}"
#: A credential, a key file or a certificate fits; a DynamoDB item is at most 400 KB.
MAX_VALUE_CHARS = 64 * 1024


class CreateSecret(RequestBody):
    project_id: ProjectId | None = Field(None, description="Required with the admin key")
    name: str = Field(min_length=1, max_length=200)
    value: str = Field(
        min_length=1, max_length=MAX_VALUE_CHARS, description="Sealed at rest, never returned"
    )


class UpdateSecret(RequestBody):
    name: str | None = Field(None, min_length=1, max_length=200)
    value: str | None = Field(
        None, min_length=1, max_length=MAX_VALUE_CHARS, description="Replaces the value"
    )


class DeleteSecretQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")
    force: bool = Field(False, description="Also delete the AI providers that use the secret")


def _visible(caller: Caller, secret_id: str) -> Secret:
    secret = store.get_secret(secret_id)
    caller.check_visible(secret.project_id, store.KIND, secret.id)
    return secret


@endpoint(
    bp,
    "/api/v1/secrets",
    "POST",
    access=on_collection("secrets:CreateSecret", "secret"),
    body=CreateSecret,
    response=Secret,
    status=201,
    tag=TAG,
    operation_id="createSecret",
)
def create_secret(call: Call[CreateSecret, Any]) -> Secret:
    """Create a secret (name unique in the project); its value is never returned."""
    body = call.body
    project_id = target_project(call.caller, body.project_id)
    return store.create_secret(project_id, body.name, body.value)


@endpoint(
    bp,
    "/api/v1/secrets",
    "GET",
    access=on_collection("secrets:ListSecrets", "secret"),
    query=ProjectListQuery,
    response=Page[Secret],
    tag=TAG,
    operation_id="listSecrets",
)
def list_secrets(call: Call[Any, ProjectListQuery]) -> dict[str, Any]:
    """List a project's secrets, oldest first (names and ``has_value`` only)."""
    project_id = call.caller.listing_project(call.query.project_id)
    return page(store.list_secrets(project_id, call.query.window()))


@endpoint(
    bp,
    ITEM,
    "GET",
    access=on("secrets:GetSecret", "secret_id"),
    response=Secret,
    tag=TAG,
    operation_id="getSecret",
)
def get_secret(call: Call[Any, Any]) -> Secret:
    """Get a secret (its name and ``has_value``; never the value)."""
    return _visible(call.caller, call.path["secret_id"])


@endpoint(
    bp,
    ITEM,
    "PATCH",
    access=on("secrets:UpdateSecret", "secret_id"),
    body=UpdateSecret,
    response=Secret,
    tag=TAG,
    operation_id="updateSecret",
)
def update_secret(call: Call[UpdateSecret, Any]) -> Secret:
    """Rename a secret and/or replace its value (every user picks it up on its next call)."""
    body = call.body
    refuse_nulls(body, "name", "value")
    current = _visible(call.caller, call.path["secret_id"])
    return store.update_secret(current, body.name, body.value)


@endpoint(
    bp,
    ITEM,
    "DELETE",
    access=on("secrets:DeleteSecret", "secret_id"),
    query=DeleteSecretQuery,
    response=Secret,
    tag=TAG,
    operation_id="deleteSecret",
)
def delete_secret(call: Call[Any, DeleteSecretQuery]) -> Secret:
    """Delete a secret; 409 while it is referenced (``?force=true``: its AI providers too)."""
    secret = _visible(call.caller, call.path["secret_id"])
    rules.delete_secret(secret, force=call.query.force)
    return secret
