"""Transactions whose operations carry labels, so a cancellation names what failed.

DynamoDB reports cancellation reasons by position, and PynamoDB sends condition checks,
deletes, puts and updates in that order whatever order they were added in. Labelling
each operation maps the reasons back without guessing positions. Name claims (unique
names per project, see :mod:`chalicelib.store.names`) ride in these transactions.

A transaction cancelled because another one was touching the same item at that moment
(reason ``TransactionConflict``) lost a race, not a condition: it is answered with 409
``CONCURRENT_UPDATE``, which the client may retry, rather than an internal error. A
single-item write into an item that a transaction is writing at that moment loses the
same race (``TransactionConflictException``); :func:`conflict_on_lost_race` gives it the
same answer.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pynamodb.exceptions import DeleteError, PutError, TransactWriteError, UpdateError

from chalicelib.errors import ConcurrentUpdate
from chalicelib.store.base import transaction
from chalicelib.store.models import NameClaimModel

NAME_LABEL = "name"
"""The label of a name claim: in :attr:`TxnRefused.labels` when the name is taken."""

CONDITION_FAILED = "ConditionalCheckFailed"
TRANSACTION_CONFLICT = "TransactionConflict"
#: What DynamoDB answers a PutItem/UpdateItem/DeleteItem on an item a transaction is writing.
SINGLE_WRITE_CONFLICT = "TransactionConflictException"


def claim_key(project_id: str, kind: str, name: str) -> str:
    return f"{project_id}#{kind}#{name}"


class TxnRefused(Exception):
    """A transaction was cancelled; ``labels`` name the operations whose condition failed."""

    def __init__(self, labels: set[str]) -> None:
        super().__init__(f"transaction refused by: {sorted(labels)}")
        self.labels = labels


class LabelledTxn:
    """A TransactWrite whose operations carry labels (one label list per operation kind,
    in the order PynamoDB sends the kinds, to map cancellation reasons back to labels)."""

    def __init__(self, txn: Any) -> None:
        self.txn = txn
        self._labels: dict[str, list[str]] = {"check": [], "delete": [], "put": [], "update": []}

    def check(self, label: str, model_cls: Any, hash_key: Any, condition: Any) -> None:
        self.txn.condition_check(model_cls, hash_key, condition=condition)
        self._labels["check"].append(label)

    def delete(self, label: str, model: Any, condition: Any = None) -> None:
        self.txn.delete(model, condition=condition)
        self._labels["delete"].append(label)

    def save(self, label: str, model: Any, condition: Any = None) -> None:
        self.txn.save(model, condition=condition)
        self._labels["put"].append(label)

    def update(self, label: str, model: Any, actions: list[Any], condition: Any = None) -> None:
        self.txn.update(model, actions=actions, condition=condition)
        self._labels["update"].append(label)

    def claim_name(self, project_id: str, kind: str, name: str, resource_id: str) -> None:
        row = NameClaimModel(key=claim_key(project_id, kind, name), resource_id=resource_id)
        self.save(NAME_LABEL, row, condition=NameClaimModel.key.does_not_exist())

    def release_name(self, project_id: str, kind: str, name: str) -> None:
        self.delete("release", NameClaimModel(key=claim_key(project_id, kind, name)))

    def rename(self, project_id: str, kind: str, old: str, new: str, resource_id: str) -> None:
        """Move a name claim (nothing to do when the name is unchanged)."""
        if new != old:
            self.claim_name(project_id, kind, new, resource_id)
            self.release_name(project_id, kind, old)

    def ordered_labels(self) -> list[str]:
        return [
            label for kind in ("check", "delete", "put", "update") for label in self._labels[kind]
        ]


@contextmanager
def labelled_transaction() -> Iterator[LabelledTxn]:
    """Commit the block's operations atomically.

    Raises :class:`TxnRefused` when a condition failed, and :class:`ConcurrentUpdate`
    (409) when the transaction lost a race with another one on the same items; either
    way nothing was written.
    """
    wrapper: LabelledTxn | None = None
    try:
        with transaction() as txn:
            wrapper = LabelledTxn(txn)
            yield wrapper
    except TransactWriteError as exc:
        codes = [reason.code if reason else None for reason in exc.cancellation_reasons or []]
        labels = wrapper.ordered_labels() if wrapper else []
        failed = {
            labels[i] for i, code in enumerate(codes[: len(labels)]) if code == CONDITION_FAILED
        }
        if failed:
            raise TxnRefused(failed) from exc
        if TRANSACTION_CONFLICT in codes:
            raise transaction_conflict() from exc
        raise


@contextmanager
def conflict_on_lost_race() -> Iterator[None]:
    """Answer a single-item write of the block that lost a race with 409 ``CONCURRENT_UPDATE``.

    DynamoDB refuses a put, update or delete of an item that a transaction is writing at
    that moment (``TransactionConflictException``); nothing was written. Any other failure,
    a failed condition included, passes through unchanged.
    """
    try:
        yield
    except (PutError, UpdateError, DeleteError) as exc:
        if exc.cause_response_code == SINGLE_WRITE_CONFLICT:
            raise transaction_conflict() from exc
        raise


def transaction_conflict() -> ConcurrentUpdate:
    """409 for a transaction DynamoDB cancelled because another was writing the same items."""
    return ConcurrentUpdate(
        "another request changed the same data while this request was processed; "
        "nothing was written, retry",
        reason=TRANSACTION_CONFLICT,
    )
