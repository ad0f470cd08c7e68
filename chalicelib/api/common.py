"""Checks every resource module's routes share."""

from __future__ import annotations

from chalicelib.api.auth import Caller
from chalicelib.domain.base import RequestBody
from chalicelib.errors import ValidationFailed
from chalicelib.store import tenancy


def refuse_nulls(body: RequestBody, *fields: str) -> None:
    """A partial update may omit these fields but not set them to null."""
    for name in fields:
        if name in body.model_fields_set and getattr(body, name) is None:
            raise ValidationFailed(f"{name} may be omitted but not null", field=name)


def target_project(caller: Caller, requested: str | None) -> str:
    """The project a create writes into: checked against the key's scope, and existing."""
    project_id = caller.listing_project(requested)
    tenancy.get_project(project_id)
    return project_id
