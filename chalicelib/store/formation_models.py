"""The formation tables. Access patterns and keys: ``docs/dynamodb.md``."""

from __future__ import annotations

from pynamodb.attributes import JSONAttribute, NumberAttribute, UnicodeAttribute

from chalicelib.store.base import IdModel, PawlModel, register
from chalicelib.store.models import ProjectScoped


@register
class FormationModel(ProjectScoped, IdModel):
    """One formation: its last template, its managed resources and its status.

    ``version`` grows by one with every write; each write is conditioned on the version
    it read, so two deploys of one formation cannot interleave.
    """

    class Meta:
        short_name = "formations"

    name = UnicodeAttribute()
    template = JSONAttribute()
    outputs = JSONAttribute(null=True)
    status = UnicodeAttribute()
    metadata = JSONAttribute(null=True)
    resolved_metadata = JSONAttribute(null=True)
    resolved_parameters = JSONAttribute(null=True)
    error = JSONAttribute(null=True)
    resources = JSONAttribute()
    version = NumberAttribute()
    updated_at = UnicodeAttribute()


@register
class FormationOperationModel(PawlModel):
    """One deploy (create, update, delete) of a formation, keyed in creation order."""

    class Meta:
        short_name = "formation-operations"

    formation_id = UnicodeAttribute(hash_key=True)
    created_key = UnicodeAttribute(range_key=True)
    id = UnicodeAttribute()
    body = JSONAttribute()
