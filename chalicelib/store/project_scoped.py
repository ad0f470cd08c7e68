"""The shapes every project-scoped repository shares (rows of :class:`ProjectScoped` models).

One ``created_key`` format, one get-or-404, one list-by-project, one create that claims the
name, and one answer to an update that lost a race. A repository keeps only what is its
own: its domain type, its extra transaction operations and its own refusals.

``created_key`` is ``<created_at with microseconds>#<id>``, so rows created within one
millisecond still list in creation order. Rows written before every repository used this
format hold ``<created_at with milliseconds>#<id>``; both sort by time as strings (see
``docs/dynamodb.md``), and a list cursor is the stored key of the row it stopped at, so a
cursor made over old rows keeps paging.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, TypeVar

from pynamodb.exceptions import DoesNotExist

from chalicelib import clock
from chalicelib.errors import PawlError, concurrent_update, not_found
from chalicelib.store.base import IdModel
from chalicelib.store.models import NameClaimModel, ProjectModel
from chalicelib.store.names import claiming_name
from chalicelib.store.pagination import Listing, Partition, Window, listing_of, page_of
from chalicelib.store.transactions import (
    LabelledTxn,
    TxnRefused,
    claim_key,
    labelled_transaction,
)

__all__ = [
    "PROJECT_INDEX_KEYS",
    "create",
    "creating",
    "creation_stamp",
    "find",
    "find_in_project",
    "get_or_404",
    "list_by_project",
    "list_named",
    "lost_race",
    "save_in_project",
]

#: The attributes of a ``by_project`` index key: what a list cursor holds.
PROJECT_INDEX_KEYS = frozenset({"id", "project_id", "created_key"})

R = TypeVar("R", bound=IdModel)
D = TypeVar("D")


def creation_stamp(resource_id: str, moment: datetime | None = None) -> tuple[str, str]:
    """``(created_at, created_key)`` for a new row: at ``moment``, else the clock's now."""
    moment = moment or clock.now()
    micro = moment.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")
    return clock.iso(moment), f"{micro}#{resource_id}"


def find(model_cls: type[R], resource_id: str) -> R | None:
    """The row (strongly consistent read), or None."""
    try:
        return model_cls.get(resource_id, consistent_read=True)
    except DoesNotExist:
        return None


def get_or_404(model_cls: type[R], kind: str, resource_id: str) -> R:
    """The row, or 404 ``RESOURCE_NOT_FOUND`` naming ``kind``."""
    row = find(model_cls, resource_id)
    if row is None:
        raise not_found(kind, resource_id)
    return row


def find_in_project(model_cls: type[R], project_id: str, resource_id: str) -> R | None:
    """The row when it exists *in this project*: another project's row reads as missing."""
    row = find(model_cls, resource_id)
    return row if row is not None and getattr(row, "project_id", None) == project_id else None


def list_by_project(
    model_cls: type[IdModel],
    project_id: str,
    window: Window,
    convert: Callable[[Any], D],
) -> Listing[D]:
    """One page of a project's rows, oldest first (the model's ``by_project`` index)."""
    index: Any = model_cls._indexes["by_project"]
    return page_of(Partition(index, project_id, PROJECT_INDEX_KEYS), window, convert)


def list_named(
    model_cls: type[IdModel],
    kind: str,
    project_id: str,
    name: str,
    window: Window,
    convert: Callable[[Any], D],
) -> Listing[D]:
    """``?name=``: a page holding the project's one row of that name, or none.

    Names are unique in a project (their claim rows, :mod:`chalicelib.store.names`), so
    the claim row names the row: two GetItems however many rows the project holds.
    """
    try:
        claim = NameClaimModel.get(claim_key(project_id, kind, name), consistent_read=True)
    except DoesNotExist:
        claim = None
    row = find_in_project(model_cls, project_id, claim.resource_id) if claim else None
    found = [convert(row)] if row is not None else []
    return listing_of(found, window, f"{kind}-by-name|{project_id}|{name}")


@contextmanager
def creating(kind: str, row: IdModel, scope: str | None = None) -> Iterator[LabelledTxn]:
    """Save the new ``row`` and claim its name in one labelled transaction.

    The block may add operations of its own (a version snapshot, reference checks).
    ``scope`` is where the name must be unique: the row's project unless given.
    409 ``NAME_CONFLICT`` when the name is taken, 409 ``CONCURRENT_UPDATE`` when the
    transaction lost a race; nothing is written either way (see :mod:`.names`).
    """
    values: Any = row
    where = values.project_id if scope is None else scope
    with claiming_name(kind, where, row.id, values.name) as txn:
        txn.save(kind, row, condition=type(row).id.does_not_exist())
        yield txn


def save_in_project(row: IdModel, project_id: str) -> None:
    """Save the new ``row`` of a project (one without a unique name), provided the project
    exists at that moment.

    404 when the project is gone, 409 ``CONCURRENT_UPDATE`` when the transaction lost a
    race (with a project update, say); nothing is written either way.
    """
    try:
        with labelled_transaction() as txn:
            txn.save("row", row, condition=type(row).id.does_not_exist())
            txn.check("project", ProjectModel, project_id, ProjectModel.id.exists())
    except TxnRefused as exc:
        if "project" in exc.labels:
            raise not_found("project", project_id) from exc
        raise


def lost_race(model_cls: type[IdModel], kind: str, resource_id: str) -> PawlError:
    """What a conditioned write of an existing row answers when its condition failed.

    404 when the row was deleted meanwhile, otherwise 409 ``CONCURRENT_UPDATE``: the row
    changed since the request read it, and the request may be retried.
    """
    try:
        model_cls.get(resource_id, consistent_read=True, attributes_to_get=["id"])
    except DoesNotExist:
        return not_found(kind, resource_id)
    return concurrent_update(kind, resource_id)


def create(kind: str, row: IdModel, scope: str | None = None) -> None:
    """:func:`creating` with nothing else in the transaction."""
    with creating(kind, row, scope):
        pass
