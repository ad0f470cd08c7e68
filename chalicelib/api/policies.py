"""IAM policies (``/api/v1/policies``): global documents the admin manages and attaches to keys.

Every route needs the admin key (``admin_only``: any other key is 403 before its body is
read): a project key may neither read nor change the policies that bound it. Shapes and
operation ids follow SOAT's Policies module (``docs/iam.md``).
"""

from __future__ import annotations

from typing import Any

from chalice import Blueprint
from pydantic import Field

from chalicelib.api.access import admin_only
from chalicelib.api.common import refuse_nulls
from chalicelib.api.routing import Call, ListQuery, endpoint, page
from chalicelib.domain.base import Page, RequestBody
from chalicelib.domain.policies import Policy
from chalicelib.iam.document import PolicyDocument
from chalicelib.store import policies

bp = Blueprint(__name__)

NAME = Field(min_length=1, max_length=200)
DESCRIPTION = Field(None, max_length=2000)


class CreatePolicy(RequestBody):
    name: str = NAME
    description: str | None = DESCRIPTION
    document: PolicyDocument


class UpdatePolicy(RequestBody):
    name: str | None = Field(None, min_length=1, max_length=200)
    description: str | None = Field(None, max_length=2000, description="null clears it")
    document: PolicyDocument | None = Field(None, description="replaces the whole document")


@endpoint(
    bp,
    "/api/v1/policies",
    "GET",
    access=admin_only("policies:ListPolicies", "policy"),
    query=ListQuery,
    response=Page[Policy],
    tag="policies",
    operation_id="listPolicies",
)
def list_policies(call: Call[Any, ListQuery]) -> dict[str, Any]:
    """List the deployment's policies (admin)."""
    return page(policies.list_policies(call.query.window()))


@endpoint(
    bp,
    "/api/v1/policies",
    "POST",
    access=admin_only("policies:CreatePolicy", "policy"),
    body=CreatePolicy,
    response=Policy,
    status=201,
    tag="policies",
    operation_id="createPolicy",
)
def create_policy(call: Call[CreatePolicy, Any]) -> Policy:
    """Create a policy (admin); attach it to API keys with their ``policy_ids``."""
    body = call.body
    return policies.create_policy(body.name, body.description, body.document)


@endpoint(
    bp,
    "/api/v1/policies/{policy_id}",
    "GET",
    access=admin_only("policies:GetPolicy", "policy"),
    response=Policy,
    tag="policies",
    operation_id="getPolicy",
)
def get_policy(call: Call[Any, Any]) -> Policy:
    """Get a policy (admin)."""
    return policies.get_policy(call.path["policy_id"])


@endpoint(
    bp,
    "/api/v1/policies/{policy_id}",
    "PUT",
    access=admin_only("policies:UpdatePolicy", "policy"),
    body=UpdatePolicy,
    response=Policy,
    tag="policies",
    operation_id="updatePolicy",
)
def update_policy(call: Call[UpdatePolicy, Any]) -> Policy:
    """Rename, describe or replace the document of a policy (admin); keys see it at once."""
    refuse_nulls(call.body, "name", "document")
    current = policies.get_policy(call.path["policy_id"])
    description = (
        call.body.description if "description" in call.body.model_fields_set else policies.KEEP
    )
    return policies.update_policy(current, call.body.name, description, call.body.document)


@endpoint(
    bp,
    "/api/v1/policies/{policy_id}",
    "DELETE",
    access=admin_only("policies:DeletePolicy", "policy"),
    status=204,
    tag="policies",
    operation_id="deletePolicy",
)
def delete_policy(call: Call[Any, Any]) -> None:
    """Delete a policy no API key uses (admin); 409 ``POLICY_IN_USE`` names the keys."""
    policies.delete_policy(call.path["policy_id"])
