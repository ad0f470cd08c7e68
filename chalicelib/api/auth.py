"""Who is calling, and what they may reach.

Two kinds of credential: the deployment's admin key (``PAWL_ADMIN_KEY``) and
project-scoped API keys. A scoped key reaches only its own project; a read of another
project's resource is the same 404 as a missing id, so nothing leaks across tenants.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from dataclasses import dataclass

from chalicelib.errors import (
    Forbidden,
    NotFound,
    ProjectScopeForbidden,
    Unauthorized,
    ValidationFailed,
)
from chalicelib.settings import get_settings
from chalicelib.store import tenancy


@dataclass(frozen=True)
class Caller:
    is_admin: bool
    project_id: str | None = None
    key_id: str | None = None

    def require_admin(self) -> None:
        if not self.is_admin:
            raise Forbidden("this operation needs the admin key")

    def can_see(self, project_id: str) -> bool:
        return self.is_admin or self.project_id == project_id

    def check_visible(self, project_id: str, kind: str, resource_id: str) -> None:
        """A resource in a project the caller cannot reach reads as missing (404)."""
        if not self.can_see(project_id):
            raise NotFound(f"{kind} {resource_id} not found", resource_type=kind, id=resource_id)

    def check_target_project(self, project_id: str) -> None:
        """A call naming another project: 403 ``API_KEY_PROJECT_SCOPE``, naming both."""
        if not self.can_see(project_id):
            raise ProjectScopeForbidden(
                f"this API key is scoped to project {self.project_id}, not {project_id}",
                project_id=project_id,
                key_project_id=self.project_id,
            )

    def listing_project(self, requested: str | None) -> str:
        """The project a list call reads: required for admin, defaulted for a scoped key."""
        if requested is None:
            if self.project_id is None:
                raise ValidationFailed("project_id is required", field="project_id")
            return self.project_id
        self.check_target_project(requested)
        return requested


def _bearer(headers: Mapping[str, str]) -> str:
    header = headers.get("authorization") or headers.get("Authorization")
    if not header:
        raise Unauthorized("missing Authorization header (expected: Bearer <key>)")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("Authorization must be 'Bearer <key>'")
    return token.strip()


def authenticate(headers: Mapping[str, str]) -> Caller:
    token = _bearer(headers)
    admin_key = get_settings().admin_key
    if admin_key and hmac.compare_digest(token.encode(), admin_key.encode()):
        return Caller(is_admin=True)
    key = tenancy.resolve_token(token)
    if key is None:
        raise Unauthorized("invalid API key")
    return Caller(is_admin=False, project_id=key.project_id, key_id=key.id)
