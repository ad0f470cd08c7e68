"""Create rows that must not exist yet, many per call, outside any transaction.

A transaction bills every row it writes twice; a result row needs only its own condition
("not there yet") to be written exactly once. ``BatchWriteItem`` takes no condition, and a
``PutItem`` per row is a call per row. PartiQL's ``INSERT`` is a conditional create (an
existing key is refused with ``DuplicateItem``), and ``BatchExecuteStatement`` runs up to
25 of them in one call, each on its own and billed as a plain write. Each statement's
answer says whether its row was created or was already there; a statement refused for a
passing reason (throttling, an internal error) is sent again with backoff.

The local stand-in and the test suite answer these statements as DynamoDB does
(``pawl/local/moto_patches.py``).
"""

from __future__ import annotations

import random
import time
from functools import partial
from typing import Any

from botocore.exceptions import ClientError

from chalicelib.store import side_by_side
from chalicelib.store.base import bind, connection, serialized_writes

#: DynamoDB's limit of statements in one BatchExecuteStatement.
STATEMENTS_PER_CALL = 25
#: How many times a statement refused for a passing reason is sent again.
_RETRIES = 8
DUPLICATE = "DuplicateItem"
#: Refusals that say nothing about the row: try the statement again.
_PASSING = frozenset(
    {
        "ThrottlingError",
        "ProvisionedThroughputExceeded",
        "RequestLimitExceeded",
        "InternalServerError",
        "TransactionConflict",
    }
)


class InsertFailed(Exception):
    """A statement was refused for a reason other than a duplicate (or kept being throttled).

    ``created``: positions (in the items given) that were created before the failure."""

    def __init__(self, message: str, created: list[int]) -> None:
        super().__init__(message)
        self.created = created


def statement(table: str, item: dict[str, Any]) -> dict[str, Any]:
    """The INSERT of one item (DynamoDB JSON), its values passed as parameters."""
    names = list(item)
    value = ", ".join(f"'{name}': ?" for name in names)
    return {
        "Statement": f'INSERT INTO "{table}" VALUE {{{value}}}',
        "Parameters": [item[name] for name in names],
    }


def insert_many(table: str, items: list[dict[str, Any]]) -> list[bool]:
    """Create each item unless its key exists: per item, True when created, False when it
    was already there. Raises :class:`InsertFailed` (with what was created) otherwise.

    The calls of 25 go side by side (``store.side_by_side``): each statement is its own
    condition, so their order says nothing."""
    bind()
    created: list[bool | None] = [None] * len(items)
    chunks = [
        list(range(start, min(start + STATEMENTS_PER_CALL, len(items))))
        for start in range(0, len(items), STATEMENTS_PER_CALL)
    ]
    try:
        side_by_side.run_all(
            [partial(_insert_chunk, table, items, positions, created) for positions in chunks]
        )
    except InsertFailed as exc:
        exc.created = [i for i, c in enumerate(created) if c]
        raise
    return [bool(c) for c in created]


def _insert_chunk(
    table: str, items: list[dict[str, Any]], positions: list[int], created: list[bool | None]
) -> None:
    client = connection().client
    for attempt in range(_RETRIES):
        try:
            with serialized_writes():
                answer = client.batch_execute_statement(
                    Statements=[statement(table, items[i]) for i in positions]
                )
        except ClientError as exc:
            # The whole call refused (botocore already retried what it retries): the
            # caller still counts what earlier calls created.
            raise InsertFailed(f"BatchExecuteStatement refused: {exc}", []) from exc
        again: list[int] = []
        for position, response in zip(positions, answer["Responses"], strict=True):
            error = response.get("Error")
            if error is None:
                created[position] = True
            elif error.get("Code") == DUPLICATE:
                created[position] = False
            elif error.get("Code") in _PASSING:
                again.append(position)
            else:
                raise InsertFailed(f"{error.get('Code')}: {error.get('Message')}", [])
        if not again:
            return
        positions = again
        time.sleep(min(0.05 * 2**attempt, 1.0) * random.random())
    raise InsertFailed("statements kept being throttled", [])
