"""Name uniqueness within a project, enforced by a conditional write (never read-then-write).

A resource create puts a claim row ``<project>#<kind>#<name>`` with "must not exist"
in the same transaction as the resource itself; a rename swaps claims in one
transaction; a delete releases the claim with the resource.
"""

from __future__ import annotations

from typing import Any

from chalicelib.errors import NameConflict
from chalicelib.store.models import NameClaimModel
from chalicelib.store.transactions import TxnRefused, claim_key, labelled_transaction

__all__ = ["claim", "claim_key", "release", "rename_with_claim", "write_with_claim"]


def claim(txn: Any, project_id: str, kind: str, name: str, resource_id: str) -> None:
    row = NameClaimModel(key=claim_key(project_id, kind, name), resource_id=resource_id)
    txn.save(row, condition=NameClaimModel.key.does_not_exist())


def release(txn: Any, project_id: str, kind: str, name: str) -> None:
    txn.delete(NameClaimModel(key=claim_key(project_id, kind, name)))


def write_with_claim(
    kind: str, project_id: str, name: str, resource_id: str, rows: list[Any]
) -> None:
    """Save ``rows`` and claim the name atomically; 409 ``NAME_CONFLICT`` when it is taken."""
    rename_with_claim(kind, project_id, None, name, resource_id, rows)


def rename_with_claim(
    kind: str, project_id: str, old: str | None, new: str, resource_id: str, rows: list[Any]
) -> None:
    """Move the claim from ``old`` (None: a new resource) to ``new`` and save ``rows``,
    in one transaction; 409 ``NAME_CONFLICT`` when ``new`` is taken."""
    try:
        with labelled_transaction() as txn:
            if old is None:
                txn.claim_name(project_id, kind, new, resource_id)
            else:
                txn.rename(project_id, kind, old, new, resource_id)
            for row in rows:
                txn.save("row", row)
    except TxnRefused as exc:
        if "name" in exc.labels:
            raise _conflict(kind, new) from exc
        raise


def _conflict(kind: str, name: str) -> NameConflict:
    return NameConflict(
        f"a {kind} named {name!r} already exists in this project", field="name", name=name
    )
