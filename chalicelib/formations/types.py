"""The resource types a formation may declare: where each one's REST routes are.

Pure data: :mod:`chalicelib.api.formation_types` calls the routes. The composition root
(:func:`chalicelib.wiring.build`) installs :func:`builtin_types`; another type (``trigger``)
plugs in the same way, as one more :class:`ResourceType`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from chalicelib.errors import ValidationFailed


@dataclass(frozen=True)
class ResourceType:
    """One declarable type: where its routes are and how its properties map onto them.

    ``collection`` is the create path and ``item`` the read/update/delete path; ``parent``
    is a property that is a path parameter instead of a body field (a dataset item's
    ``dataset_id``): immutable once created. ``write_only`` properties are never read
    back, so they are compared with the last-applied value. Without an update route a
    changed resource is replaced (created anew, then the old one deleted).
    """

    name: str
    id_kind: str
    collection: str
    item: str
    id_param: str
    parent: str | None = None
    updatable: bool = True
    write_only: frozenset[str] = field(default_factory=frozenset)

    def path(self, parent_id: str | None, physical_id: str | None = None) -> dict[str, str]:
        params: dict[str, str] = {}
        if self.parent is not None and parent_id is not None:
            params[self.parent] = parent_id
        if physical_id is not None:
            params[self.id_param] = physical_id
        return params


_TYPES: dict[str, ResourceType] = {}


def install(types: Mapping[str, ResourceType]) -> None:
    """Make ``types`` the declarable resource types (the composition root calls this)."""
    _TYPES.clear()
    _TYPES.update(types)


def builtin_types() -> dict[str, ResourceType]:
    """The types of the evaluations module: agent, dataset, dataset_item, eval, webhook."""
    types = [
        ResourceType("agent", "agent", "/api/v1/agents", "/api/v1/agents/{agent_id}", "agent_id"),
        ResourceType(
            "dataset", "dataset", "/api/v1/datasets", "/api/v1/datasets/{dataset_id}", "dataset_id"
        ),
        ResourceType(
            "dataset_item",
            "dataset_item",
            "/api/v1/datasets/{dataset_id}/items",
            "/api/v1/datasets/{dataset_id}/items/{item_id}",
            "item_id",
            parent="dataset_id",
        ),
        ResourceType("eval", "eval", "/api/v1/evals", "/api/v1/evals/{eval_id}", "eval_id"),
        ResourceType(
            "webhook",
            "webhook",
            "/api/v1/webhooks",
            "/api/v1/webhooks/{webhook_id}",
            "webhook_id",
            updatable=False,
            write_only=frozenset({"secret"}),
        ),
    ]
    return {t.name: t for t in types}


def resource_type(name: str, field_name: str) -> ResourceType:
    found = _TYPES.get(name)
    if found is None:
        known = ", ".join(sorted(_TYPES))
        raise ValidationFailed(
            f"unknown resource type {name!r} (declarable: {known})", field=field_name
        )
    return found
