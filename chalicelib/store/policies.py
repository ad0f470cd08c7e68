"""IAM policies: global rows, unique names, and their attachment to API keys.

A policy row lists the keys it is attached to (``key_ids``) and a key row lists its
policies (``policy_ids``); both change in one transaction (:func:`attach`, :func:`detach`,
run inside the key's own write), so a policy is deleted only while no key names it.
"""

from __future__ import annotations

from typing import Any

from chalicelib import clock, ids
from chalicelib.domain.policies import Policy
from chalicelib.errors import Conflict, ValidationFailed, not_found
from chalicelib.iam.document import PolicyDocument
from chalicelib.store import project_scoped
from chalicelib.store.models import PolicyModel
from chalicelib.store.names import GLOBAL_SCOPE, claiming_name
from chalicelib.store.pagination import Listing, TableScan, Window, page_of
from chalicelib.store.transactions import LabelledTxn, TxnRefused, labelled_transaction

KIND = "policy"
_ID_KEYS = frozenset({"id"})
#: The most policies one key may carry: AWS's managed-policy quota per identity, and it
#: keeps a key's write (its row plus one update per policy) inside one transaction.
MAX_POLICIES_PER_KEY = 10
_LABEL = "policy:"

KEEP: Any = object()
"""``update_policy(description=KEEP)``: leave the description as it is."""


def _policy(model: PolicyModel) -> Policy:
    return Policy(
        id=model.id,
        name=model.name,
        description=model.description,
        document=PolicyDocument.model_validate(model.document),
        created_at=model.created_at,
        updated_at=model.updated_at,
    )


def _stored(document: PolicyDocument) -> dict[str, Any]:
    return document.model_dump(mode="json", exclude_none=True)


def create_policy(name: str, description: str | None, document: PolicyDocument) -> Policy:
    now = clock.now_iso()
    row = PolicyModel(
        id=ids.new_id(KIND),
        name=name,
        description=description,
        document=_stored(document),
        created_at=now,
        updated_at=now,
    )
    # Policies are global, as SOAT has them: names are unique across the deployment.
    project_scoped.create(KIND, row, scope=GLOBAL_SCOPE)
    return _policy(row)


def get_policy(policy_id: str) -> Policy:
    return _policy(project_scoped.get_or_404(PolicyModel, KIND, policy_id))


def list_policies(window: Window) -> Listing[Policy]:
    return page_of(TableScan(PolicyModel, _ID_KEYS), window, _policy)


def update_policy(
    current: Policy,
    name: str | None,
    description: str | None = KEEP,
    document: PolicyDocument | None = None,
) -> Policy:
    """Rename, re-describe (``None`` clears) and/or replace the document, atomically.

    A key using the policy sees the new document on its next request (keys read their
    policies on every request; nothing is cached).
    """
    new_name = name if name is not None else current.name
    attrs = PolicyModel
    actions: list[Any] = [attrs.name.set(new_name), attrs.updated_at.set(clock.now_iso())]
    if description is not KEEP:
        actions.append(
            attrs.description.set(description) if description else attrs.description.remove()
        )
    if document is not None:
        actions.append(attrs.document.set(_stored(document)))
    try:
        with claiming_name(KIND, GLOBAL_SCOPE, current.id, new_name, previous=current.name) as txn:
            txn.update(KIND, PolicyModel(id=current.id), actions, condition=attrs.id.exists())
    except TxnRefused as exc:
        raise not_found(KIND, current.id) from exc
    return get_policy(current.id)


def delete_policy(policy_id: str) -> None:
    """Delete a policy no key is attached to; 409 naming the keys otherwise (nothing written)."""
    current = get_policy(policy_id)
    try:
        with labelled_transaction() as txn:
            txn.delete(
                KIND,
                PolicyModel(id=policy_id),
                condition=PolicyModel.id.exists() & PolicyModel.key_ids.does_not_exist(),
            )
            txn.release_name(GLOBAL_SCOPE, KIND, current.name)
    except TxnRefused as exc:
        row = project_scoped.find(PolicyModel, policy_id)
        if row is None:
            raise not_found(KIND, policy_id) from exc
        keys = sorted(row.key_ids or [])
        raise Conflict(
            f"policy {policy_id} is attached to {len(keys)} API key(s): {', '.join(keys)}; "
            "detach it from them first",
            code="POLICY_IN_USE",
            key_ids=keys,
        ) from exc


def documents_of(policy_ids: list[str]) -> tuple[PolicyDocument, ...]:
    """The documents of ``policy_ids``, in that order: one strongly consistent BatchGetItem.

    A policy that is gone (which the attachment transactions prevent) leaves no document
    behind at all: the answer is ``()``, which allows nothing, so a key fails closed.
    """
    if not policy_ids:
        return ()
    found = {
        row.id: row.document
        for row in PolicyModel.batch_get(
            list(dict.fromkeys(policy_ids)),
            consistent_read=True,
            attributes_to_get=["id", "document"],
        )
    }
    if any(policy_id not in found for policy_id in policy_ids):
        return ()
    return tuple(PolicyDocument.model_validate(found[p]) for p in policy_ids)


def check_attachable(policy_ids: list[str], field: str = "policy_ids") -> None:
    """400 naming the first of ``policy_ids`` that does not exist (a read, before any write)."""
    if len(policy_ids) > MAX_POLICIES_PER_KEY:
        raise ValidationFailed(f"a key takes at most {MAX_POLICIES_PER_KEY} policies", field=field)
    if len(set(policy_ids)) != len(policy_ids):
        raise ValidationFailed(f"{field} names a policy twice", field=field)
    unique = list(dict.fromkeys(policy_ids))
    existing = (
        {
            row.id
            for row in PolicyModel.batch_get(unique, consistent_read=True, attributes_to_get=["id"])
        }
        if unique
        else set()
    )
    for policy_id in policy_ids:
        if policy_id not in existing:
            raise _missing(policy_id, field)


def attach(txn: LabelledTxn, key_id: str, policy_ids: list[str]) -> None:
    """In the key's transaction: each policy (which must exist) lists ``key_id``."""
    for policy_id in policy_ids:
        txn.update(
            f"{_LABEL}{policy_id}",
            PolicyModel(id=policy_id),
            [PolicyModel.key_ids.add({key_id})],
            condition=PolicyModel.id.exists(),
        )


def detach(txn: LabelledTxn, key_id: str, policy_ids: list[str]) -> None:
    """In the key's transaction: each policy stops listing ``key_id``.

    Conditioned on the policy existing so the update never creates a bare row; a policy a
    key names cannot be gone (deleting one is refused while it lists keys).
    """
    for policy_id in policy_ids:
        txn.update(
            f"detach:{policy_id}",
            PolicyModel(id=policy_id),
            [PolicyModel.key_ids.delete({key_id})],
            condition=PolicyModel.id.exists(),
        )


def refused_attachment(exc: TxnRefused, field: str = "policy_ids") -> ValidationFailed | None:
    """The 400 for a key write whose transaction found an attached policy gone, if it did."""
    for label in sorted(exc.labels):
        if label.startswith(_LABEL):
            return _missing(label[len(_LABEL) :], field)
    return None


def _missing(policy_id: str, field: str) -> ValidationFailed:
    return ValidationFailed(f"policy {policy_id} not found", field=field, policy_id=policy_id)
