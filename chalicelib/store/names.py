"""Name uniqueness within a project, enforced by a conditional write (never read-then-write).

A resource create puts a claim row ``<project>#<kind>#<name>`` with "must not exist"
in the same labelled transaction as the resource itself (:func:`claiming_name`, through
:func:`chalicelib.store.project_scoped.creating`); a
rename moves the claim in the transaction that rewrites the resource; a delete releases
the claim with the resource (``txn.release_name``). A taken name is recognised by the
label of the claim operation (:data:`chalicelib.store.transactions.NAME_LABEL`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from chalicelib.errors import NameConflict
from chalicelib.store.transactions import (
    NAME_LABEL,
    LabelledTxn,
    TxnRefused,
    labelled_transaction,
)

__all__ = ["GLOBAL_SCOPE", "claiming_name", "name_taken"]

GLOBAL_SCOPE = "_global"
"""The scope of names unique across the deployment rather than a project (project names)."""


def name_taken(kind: str, scope: str, name: str) -> NameConflict:
    """409 ``NAME_CONFLICT`` for ``name`` among the ``kind`` resources of ``scope``."""
    where = "" if scope == GLOBAL_SCOPE else " in this project"
    return NameConflict(f"a {kind} named {name!r} already exists{where}", field="name", name=name)


@contextmanager
def claiming_name(
    kind: str, scope: str, resource_id: str, name: str, previous: str | None = None
) -> Iterator[LabelledTxn]:
    """A labelled transaction that also claims ``name`` for the resource.

    ``previous`` is the resource's name until now (None: a new resource); its claim is
    released in the same transaction, and nothing is claimed when the name is unchanged.
    Raises :class:`NameConflict` when ``name`` is taken (nothing is written), and
    :class:`TxnRefused` when another operation of the block failed its condition.
    """
    try:
        with labelled_transaction() as txn:
            if previous is None:
                txn.claim_name(scope, kind, name, resource_id)
            else:
                txn.rename(scope, kind, previous, name, resource_id)
            yield txn
    except TxnRefused as exc:
        if NAME_LABEL in exc.labels:
            raise name_taken(kind, scope, name) from exc
        raise
