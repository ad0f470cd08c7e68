"""Who is calling, and what they may reach.

Two kinds of credential: the deployment's admin key (``PAWL_ADMIN_KEY``) and
project-scoped API keys. A scoped key reaches only its own project; a read of another
project's resource is the same 404 as a missing id, so nothing leaks across tenants.
A scoped key may also carry IAM policies (``docs/iam.md``): then it may do, within its
project, only what they allow (:meth:`Caller.allows`).
"""

from __future__ import annotations

import hmac
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from chalicelib.domain.tenancy import ApiKey
from chalicelib.errors import (
    Forbidden,
    NotFound,
    ProjectScopeForbidden,
    Unauthorized,
    ValidationFailed,
)
from chalicelib.iam.document import PolicyDocument
from chalicelib.iam.evaluate import Decision, decide, names_project
from chalicelib.iam.srn import parse_srn
from chalicelib.settings import get_settings
from chalicelib.store import policies, tenancy

_NO_CONTEXT: Mapping[str, Any] = MappingProxyType({})

#: What a project key can look like (``pawl.<key id>.<secret>``, as ``store/tenancy.py``
#: mints it). A token of any other shape names no key and never reaches the store: an
#: empty key id (``pawl..``) is not a valid DynamoDB key and used to answer 500.
PROJECT_TOKEN = re.compile(
    rf"{re.escape(tenancy.KEY_SCHEME)}\.key_[A-Za-z0-9]{{1,64}}\.[A-Za-z0-9_-]{{1,256}}"
)


@dataclass(frozen=True)
class Caller:
    is_admin: bool
    project_id: str | None = None
    key_id: str | None = None
    #: The key's policy documents; None: it has none and reaches all of its project. The
    #: admin key has None too and is never evaluated.
    policies: tuple[PolicyDocument, ...] | None = field(default=None, compare=False)

    def decision(
        self, action: str, resource_srn: str, context: Mapping[str, Any] = _NO_CONTEXT
    ) -> Decision:
        """The caller's standing on ``action`` over ``resource_srn``.

        Admin: allowed. A scoped key: an SRN of another project is never allowed (an
        implicit deny, whatever its policies say), then its policies decide; without
        policies it may do anything within its project.
        """
        if self.is_admin:
            return Decision.ALLOW
        if parse_srn(resource_srn).project_id != self.project_id:
            return Decision.IMPLICIT_DENY
        if self.policies is None:
            return Decision.ALLOW
        return decide(self.policies, action, resource_srn, context)

    def allows(
        self, action: str, resource_srn: str, context: Mapping[str, Any] = _NO_CONTEXT
    ) -> bool:
        """Whether the caller may perform ``action`` (``module:Operation``) on the SRN."""
        return self.decision(action, resource_srn, context) is Decision.ALLOW

    def policies_name_project(self, project_id: str) -> bool:
        """Whether any of the key's Allow statements could reach ``project_id`` at all.

        Admin and a key without policies: whether the project is theirs to reach.
        """
        if self.is_admin:
            return True
        if self.project_id != project_id:
            return False
        return self.policies is None or names_project(self.policies, project_id)

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
    key = tenancy.resolve_token(token) if PROJECT_TOKEN.fullmatch(token) else None
    if key is None:
        raise Unauthorized("invalid API key")
    # The key's policies are read on every request (one BatchGetItem, only for a key that
    # has policies): a policy edit or detach holds from the next request, with no cache
    # to let a revoked permission linger.
    return _caller_of(key)


def _caller_of(key: ApiKey) -> Caller:
    documents = policies.documents_of(key.policy_ids) if key.policy_ids else None
    return Caller(is_admin=False, project_id=key.project_id, key_id=key.id, policies=documents)


def caller_of_key(key_id: str) -> Caller | None:
    """The caller a project key is now, its policies as they stand (None: it was deleted):
    what acts for a trigger that key bound, when the trigger fires without a request."""
    key = tenancy.find_api_key(key_id)
    return None if key is None else _caller_of(key)
