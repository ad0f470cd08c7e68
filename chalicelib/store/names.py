"""Name uniqueness within a project, enforced by a conditional write (never read-then-write).

A resource create puts a claim row ``<project>#<kind>#<name>`` with "must not exist"
in the same transaction as the resource itself; a rename swaps claims in one
transaction; a delete releases the claim with the resource.
"""

from __future__ import annotations

from typing import Any

from pynamodb.exceptions import TransactWriteError

from chalicelib.errors import NameConflict
from chalicelib.store.base import transaction
from chalicelib.store.models import NameClaimModel


def claim_key(project_id: str, kind: str, name: str) -> str:
    return f"{project_id}#{kind}#{name}"


def claim(txn: Any, project_id: str, kind: str, name: str, resource_id: str) -> None:
    row = NameClaimModel(key=claim_key(project_id, kind, name), resource_id=resource_id)
    txn.save(row, condition=NameClaimModel.key.does_not_exist())


def release(txn: Any, project_id: str, kind: str, name: str) -> None:
    txn.delete(NameClaimModel(key=claim_key(project_id, kind, name)))


def is_conflict(exc: TransactWriteError, claim_index: int = 0) -> bool:
    """True when the transaction failed because the name claim at ``claim_index`` exists."""
    reasons = getattr(exc, "cancellation_reasons", None) or []
    if claim_index < len(reasons):
        reason = reasons[claim_index]
        return reason is not None and reason.code == "ConditionalCheckFailed"
    return False


def write_with_claim(
    kind: str, project_id: str, name: str, resource_id: str, rows: list[Any]
) -> None:
    """Save ``rows`` and claim the name atomically; 409 ``NAME_CONFLICT`` when it is taken."""
    try:
        with transaction() as txn:
            claim(txn, project_id, kind, name, resource_id)
            for row in rows:
                txn.save(row)
    except TransactWriteError as exc:
        if is_conflict(exc):
            raise _conflict(kind, name) from exc
        raise


def rename_with_claim(
    kind: str, project_id: str, old: str, new: str, resource_id: str, rows: list[Any]
) -> None:
    """Move the claim from ``old`` to ``new`` and save ``rows`` in one transaction."""
    if old == new:
        with transaction() as txn:
            for row in rows:
                txn.save(row)
        return
    try:
        with transaction() as txn:
            claim(txn, project_id, kind, new, resource_id)
            release(txn, project_id, kind, old)
            for row in rows:
                txn.save(row)
    except TransactWriteError as exc:
        # PynamoDB sends condition checks, then deletes, then puts: the released claim is
        # operation 0 and the new claim (the first put) operation 1.
        if is_conflict(exc, claim_index=1):
            raise _conflict(kind, new) from exc
        raise


def _conflict(kind: str, name: str) -> NameConflict:
    return NameConflict(
        f"a {kind} named {name!r} already exists in this project", field="name", name=name
    )
