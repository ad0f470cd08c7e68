"""Projects and API keys."""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

from pynamodb.exceptions import DoesNotExist
from pynamodb.expressions.condition import Condition
from pynamodb.expressions.update import Action

from chalicelib import clock, ids, secretbox
from chalicelib.domain.tenancy import ApiKey, CreatedApiKey, Project
from chalicelib.errors import PawlError, ValidationFailed, concurrent_update, not_found
from chalicelib.store import policies, project_scoped
from chalicelib.store.models import AiProviderModel, ApiKeyModel, ProjectModel
from chalicelib.store.names import GLOBAL_SCOPE, claiming_name
from chalicelib.store.pagination import Listing, TableScan, Window, page_of
from chalicelib.store.transactions import TxnRefused, labelled_transaction

KIND = "project"
KEY_SCHEME = "pawl"
_ID_KEYS = frozenset({"id"})


def _project(model: ProjectModel) -> Project:
    return Project(
        id=model.id,
        name=model.name,
        default_ai_provider_id=model.default_ai_provider_id,
        created_at=model.created_at,
        updated_at=model.updated_at,
    )


def create_project(name: str) -> Project:
    now = clock.now_iso()
    project_id = ids.new_id("project")
    row = ProjectModel(id=project_id, name=name, created_at=now, updated_at=now)
    # Project names are unique across the deployment, not within a project.
    project_scoped.create(KIND, row, scope=GLOBAL_SCOPE)
    return _project(row)


def get_project(project_id: str) -> Project:
    return _project(project_scoped.get_or_404(ProjectModel, KIND, project_id))


def project_exists(project_id: str) -> bool:
    try:
        ProjectModel.get(project_id, attributes_to_get=["id"])
        return True
    except DoesNotExist:
        return False


def list_projects(window: Window) -> Listing[Project]:
    return page_of(TableScan(ProjectModel, _ID_KEYS), window, _project)


def set_default_ai_provider(project_id: str, provider_id: str | None) -> Project:
    model = ProjectModel(id=project_id)
    model.update(
        actions=[
            ProjectModel.default_ai_provider_id.set(provider_id)
            if provider_id
            else ProjectModel.default_ai_provider_id.remove(),
            ProjectModel.updated_at.set(clock.now_iso()),
        ],
        condition=ProjectModel.id.exists(),
    )
    return get_project(project_id)


KEEP = object()
"""``update_project(default_ai_provider_id=KEEP)``: leave the default as it is."""


def update_project(
    current: Project, name: str | None, default_ai_provider_id: Any = KEEP
) -> Project:
    """Rename and/or set (``str``) or clear (``None``) the default AI provider, atomically.

    The provider must exist in this project at the moment of the write (a condition check
    in the same transaction), so a concurrent provider delete cannot leave a dangling default.
    """
    new_name = name if name is not None else current.name
    actions: list[Action] = [
        ProjectModel.name.set(new_name),
        ProjectModel.updated_at.set(clock.now_iso()),
    ]
    if default_ai_provider_id is not KEEP:
        attr = ProjectModel.default_ai_provider_id
        actions.append(
            attr.set(default_ai_provider_id) if default_ai_provider_id else attr.remove()
        )
    try:
        with claiming_name(KIND, GLOBAL_SCOPE, current.id, new_name, previous=current.name) as txn:
            if isinstance(default_ai_provider_id, str):
                txn.check(
                    "default_ai_provider",
                    AiProviderModel,
                    default_ai_provider_id,
                    AiProviderModel.project_id == current.id,
                )
            txn.update(
                KIND, ProjectModel(id=current.id), actions, condition=ProjectModel.id.exists()
            )
    except TxnRefused as exc:
        if KIND in exc.labels:
            raise not_found(KIND, current.id) from exc
        raise ValidationFailed(
            f"ai_provider {default_ai_provider_id} not found in project {current.id}",
            field="default_ai_provider_id",
        ) from exc
    return get_project(current.id)


# --- API keys -------------------------------------------------------------------------------


def _hash(key_id: str, secret: str) -> str:
    """``hmac1.<hex>``: HMAC-SHA256 under a key derived from ``PAWL_SERVER_SECRET``.

    The key id is part of the message, so a hash is valid only on its own row.
    """
    return secretbox.keyed_hash(secretbox.API_KEY, f"{key_id}.{secret}")


def _hash_matches(model: ApiKeyModel, secret: str) -> bool:
    """Check ``secret`` against the row; a legacy unsalted SHA-256 that matches is upgraded.

    Rows written before keyed hashes (an old local state dir) hold a bare SHA-256 hex
    digest. A key presented against one is verified that way once, then the row is rewritten
    with the keyed hash (conditional on it being unchanged), so old keys keep working and no
    unkeyed hash outlives the key's next use.
    """
    stored = str(model.key_hash)
    if stored.startswith(f"{secretbox.HASH_SCHEME}."):
        return secretbox.verify_keyed_hash(secretbox.API_KEY, f"{model.id}.{secret}", stored)
    legacy = hashlib.sha256(secret.encode()).hexdigest()
    if not hmac.compare_digest(stored.encode(), legacy.encode()):
        return False
    upgraded = _hash(model.id, secret)
    ApiKeyModel(id=model.id).update_if(
        [ApiKeyModel.key_hash.set(upgraded)], ApiKeyModel.key_hash == stored
    )
    return True


def _api_key(model: ApiKeyModel) -> ApiKey:
    return ApiKey(
        id=model.id,
        project_id=model.project_id,
        name=model.name,
        prefix=model.prefix,
        policy_ids=list(model.policy_ids or []),
        created_at=model.created_at,
    )


def create_api_key(
    project_id: str, name: str, policy_ids: list[str] | None = None
) -> CreatedApiKey:
    """Create a key; the secret exists only in the return value (stored as a keyed hash).

    The row, the project check and each attached policy's ``key_ids`` are one transaction:
    a policy deleted meanwhile is a 400 naming it, the project gone a 404, nothing written.
    """
    key_id = ids.new_id("api_key")
    secret = ids.random_token(32)
    token = f"{KEY_SCHEME}.{key_id}.{secret}"
    now, created_key = project_scoped.creation_stamp(key_id)
    row = ApiKeyModel(
        id=key_id,
        project_id=project_id,
        name=name,
        key_hash=_hash(key_id, secret),
        prefix=token[: len(KEY_SCHEME) + 1 + len(key_id)],
        policy_ids=list(policy_ids or []) or None,
        created_at=now,
        created_key=created_key,
    )
    try:
        with labelled_transaction() as txn:
            txn.save("row", row, condition=ApiKeyModel.id.does_not_exist())
            txn.check("project", ProjectModel, project_id, ProjectModel.id.exists())
            policies.attach(txn, key_id, list(policy_ids or []))
    except TxnRefused as exc:
        raise _key_write_refused(exc, "project", project_id) from exc
    return CreatedApiKey(key=token, **_api_key(row).model_dump())


def update_api_key(current: ApiKey, name: str | None, policy_ids: list[str] | None) -> ApiKey:
    """Rename the key and/or replace its policies (``[]`` detaches them all), atomically.

    Conditioned on the policy list it read, so two concurrent updates cannot leave a
    policy's ``key_ids`` disagreeing with the key: the loser gets 409 ``CONCURRENT_UPDATE``.
    """
    attrs = ApiKeyModel
    actions: list[Action] = []
    if name is not None:
        actions.append(attrs.name.set(name))
    added: list[str] = []
    removed: list[str] = []
    if policy_ids is not None:
        added = [p for p in policy_ids if p not in current.policy_ids]
        removed = [p for p in current.policy_ids if p not in policy_ids]
        actions.append(
            attrs.policy_ids.set(policy_ids) if policy_ids else attrs.policy_ids.remove()
        )
    if not actions:
        return current
    unchanged = _policies_as_read(current)
    try:
        with labelled_transaction() as txn:
            txn.update(
                "api_key",
                ApiKeyModel(id=current.id),
                actions,
                condition=attrs.id.exists() & unchanged,
            )
            policies.attach(txn, current.id, added)
            policies.detach(txn, current.id, removed)
    except TxnRefused as exc:
        if "api_key" in exc.labels:
            raise project_scoped.lost_race(ApiKeyModel, "api_key", current.id) from exc
        raise _key_write_refused(exc, "api_key", current.id) from exc
    return get_api_key(current.id)


def _policies_as_read(key: ApiKey) -> Condition:
    """The key still has the policy list it was read with (none: no attribute at all)."""
    if key.policy_ids:
        return ApiKeyModel.policy_ids == key.policy_ids
    return ApiKeyModel.policy_ids.does_not_exist()


def _key_write_refused(exc: TxnRefused, kind: str, resource_id: str) -> PawlError:
    refused = policies.refused_attachment(exc)
    if refused is not None:
        return refused
    if kind in exc.labels:
        return not_found(kind, resource_id)
    return concurrent_update("api_key", resource_id)


def find_api_key(key_id: str) -> ApiKey | None:
    """The key (None: deleted, or never existed)."""
    row = project_scoped.find(ApiKeyModel, key_id)
    return None if row is None else _api_key(row)


def get_api_key(key_id: str) -> ApiKey:
    return _api_key(project_scoped.get_or_404(ApiKeyModel, "api_key", key_id))


def list_api_keys(project_id: str, window: Window) -> Listing[ApiKey]:
    return project_scoped.list_by_project(ApiKeyModel, project_id, window, _api_key)


def delete_api_key(key: ApiKey) -> None:
    """Revoke a key and take it off its policies' ``key_ids`` in the same transaction."""
    unchanged = _policies_as_read(key)
    try:
        with labelled_transaction() as txn:
            txn.delete(
                "api_key", ApiKeyModel(id=key.id), condition=ApiKeyModel.id.exists() & unchanged
            )
            policies.detach(txn, key.id, key.policy_ids)
    except TxnRefused as exc:
        raise project_scoped.lost_race(ApiKeyModel, "api_key", key.id) from exc


def resolve_token(token: str) -> ApiKey | None:
    """The key a bearer token names, or None when it is unknown or the secret is wrong."""
    parts = token.split(".")
    if len(parts) != 3 or parts[0] != KEY_SCHEME:
        return None
    try:
        model = ApiKeyModel.get(parts[1])
    except DoesNotExist:
        return None
    if not _hash_matches(model, parts[2]):
        return None
    return _api_key(model)
