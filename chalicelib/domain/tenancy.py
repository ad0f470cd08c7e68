"""Projects and API keys."""

from __future__ import annotations

from pydantic import Field

from chalicelib.domain.base import Resource


class Project(Resource):
    id: str
    name: str
    default_ai_provider_id: str | None = None
    created_at: str
    updated_at: str


class ApiKey(Resource):
    id: str
    project_id: str
    name: str
    prefix: str
    policy_ids: list[str] = Field(
        default_factory=list,
        description="Policies attached to the key; none: the key reaches all of its project",
    )
    created_at: str


class CreatedApiKey(ApiKey):
    """The only view that carries the secret: returned once, at creation."""

    key: str
