"""The resource types a formation may declare: where each one's REST routes are.

Pure data: :mod:`chalicelib.api.formation_types` calls the routes. The composition root
(:func:`chalicelib.wiring.build`) installs :func:`builtin_types`; another type (``trigger``)
plugs in the same way, as one more :class:`ResourceType`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from chalicelib.domain.secret_headers import MASK, is_secret_header
from chalicelib.errors import ValidationFailed


def masked_literal(value: Any) -> Any:
    """A secret given as a literal string is shown masked; an expression stays."""
    return MASK if isinstance(value, str) else value


def masked_headers(config: Any) -> Any:
    """An agent config with the literal values of its secret headers masked."""
    if not isinstance(config, Mapping) or not isinstance(config.get("headers"), Mapping):
        return config
    headers = {
        name: masked_literal(value) if is_secret_header(str(name)) else value
        for name, value in config["headers"].items()
    }
    return {**config, "headers": headers}


@dataclass(frozen=True)
class ResourceType:
    """One declarable type: where its routes are and how its properties map onto them.

    ``collection`` is the create path and ``item`` the read/update/delete path; ``parent``
    is a property that is a path parameter instead of a body field (a dataset item's
    ``dataset_id``): immutable once created. ``secret`` properties hold values the API
    never shows (a webhook's ``secret``, an agent's secret headers): each maps to the
    function that masks its literal values, for answers and the stored template; a change
    to one is found by a keyed hash of the last-applied value. Without an update route a
    changed resource is replaced (created anew, then the old one deleted).
    """

    name: str
    id_kind: str
    collection: str
    item: str
    id_param: str
    parent: str | None = None
    updatable: bool = True
    #: PUT for most; a type whose partial update is a PATCH (a trigger) says so.
    update_method: str = "PUT"
    secret: Mapping[str, Callable[[Any], Any]] = field(default_factory=dict)
    #: The query of its delete route when the formation deletes one (an agent: ``force``,
    #: so its generations go with it; ``deletion_policy: retain`` keeps them).
    delete_query: Mapping[str, str] = field(default_factory=dict)

    def shown(self, properties: Mapping[str, Any]) -> dict[str, Any]:
        """``properties`` with every secret literal masked (expressions are kept)."""
        return {k: self.secret[k](v) if k in self.secret else v for k, v in properties.items()}

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
    """The types of the evaluations module: agent, dataset, dataset_item, eval, secret,
    trigger, webhook. A secret's ``value`` is never shown nor stored in the template. A
    trigger's webhook ``secret`` is the trigger routes' own (shown on create,
    ``GET /api/v1/triggers/{id}/secret``); a formation neither sets nor shows it."""
    types = [
        ResourceType(
            "agent",
            "agent",
            "/api/v1/agents",
            "/api/v1/agents/{agent_id}",
            "agent_id",
            secret={"config": masked_headers},
            delete_query={"force": "true"},
        ),
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
            "trigger",
            "trigger",
            "/api/v1/triggers",
            "/api/v1/triggers/{trigger_id}",
            "trigger_id",
            update_method="PATCH",
        ),
        ResourceType(
            "secret",
            "secret",
            "/api/v1/secrets",
            "/api/v1/secrets/{secret_id}",
            "secret_id",
            update_method="PATCH",
            secret={"value": masked_literal},
        ),
        ResourceType(
            "webhook",
            "webhook",
            "/api/v1/webhooks",
            "/api/v1/webhooks/{webhook_id}",
            "webhook_id",
            updatable=False,
            secret={"secret": masked_literal},
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
